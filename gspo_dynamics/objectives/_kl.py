"""KL(pi || pi_ref) penalties: the k3 estimator on sampled tokens, and the exact categorical KL."""

from __future__ import annotations

import torch


def kl_k3(logp: torch.Tensor, logp_ref: torch.Tensor) -> torch.Tensor:
    """Schulman's k3 estimator of KL(pi || pi_ref), per token (as in GRPO, Shao et al. 2024, arXiv 2402.03300).

        k3 = pi_ref / pi - 1 - log(pi_ref / pi) = e^d - 1 - d,   d = logp_ref - logp

    Symbols: logp = log pi(y_t), logp_ref = log pi_ref(y_t), any matching shapes. k3 >= 0, and
    E_{y ~ pi}[k3] = KL(pi || pi_ref) exactly. Computed as expm1(d) - d, accurate for small d.
    Differentiating k3 at samples from pi gives E_pi[(1 - pi_ref/pi) grad log pi]: the gradient
    trainers use, which omits the score-function term k3 * grad log pi of d E_pi[k3].
    """
    d = logp_ref - logp
    return torch.expm1(d) - d


def kl_exact_categorical(logits: torch.Tensor, ref_logits: torch.Tensor) -> torch.Tensor:
    """KL(pi || pi_ref) = sum_a pi(a) (log pi(a) - log pi_ref(a)) of two softmax policies.

    Shapes: logits, ref_logits (..., K) -> (...). Actions with pi(a) = 0 contribute 0.
    """
    logp = torch.log_softmax(logits, dim=-1)
    logq = torch.log_softmax(ref_logits, dim=-1)
    p = logp.exp()
    terms = torch.where(p > 0, p * (logp - logq), torch.zeros_like(p))
    return terms.sum(-1)
