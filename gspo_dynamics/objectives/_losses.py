"""Policy losses of the GRPO family behind one registry: `get_loss(name)`.

Every entry has the same signature

    loss(logp, logp_old, advantages, mask, *, clip_low, clip_high, weights=None)
        -> (loss, metrics)

    logp        (B, L)  log pi_theta(y_t | x, y_<t) of the sampled tokens, differentiable
    logp_old    (B, L)  log pi_old(y_t | ...) under the sampling policy (treated as constant)
    advantages  (B,)    A_i, one per sequence (see `group_advantages`)
    mask        (B, L)  1 for real tokens, 0 for padding (bool or float)
    clip_low    eps_low, float or (B,) tensor: ratios below 1 - eps_low stop pushing down
    clip_high   eps_high, float or (B,) tensor: ratios above 1 + eps_high stop pushing up
    weights     (B,) optional per-sequence weights omega_i >= 0 (default 1)

and reduces per-sequence losses l_i with the weighted batch mean  loss = (1/B) sum_i omega_i l_i.
The weights multiply, they do not renormalise: with w = 1 this is the plain mean, and importance
weights stay unbiased (the bandit simulator evaluates expectations as weighted action sets).

`metrics` holds detached scalar tensors (no .item(), so no device sync), averaged over
sequences with the same weights (normalised to sum 1):
    losses/clip_frac_low   fraction clipped from below (ratio < 1 - eps_low and A < 0)
    losses/clip_frac_high  fraction clipped from above (ratio > 1 + eps_high and A > 0)
    losses/clip_frac       their sum: the fraction whose gradient the clip switched off
    losses/ratio_mean, losses/ratio_std   of the ratio the loss clips (token or sequence)
    losses/approx_kl       token-level k3 estimate of KL(pi_old || pi): (w - 1) - log w
Token-level fractions are masked token means per sequence, then the weighted sequence mean.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Callable, Mapping

import torch

from gspo_dynamics._errors import ConfigError

Metrics = dict[str, torch.Tensor]
LossFn = Callable[..., tuple[torch.Tensor, Metrics]]
ClipBound = float | torch.Tensor

_REGISTRY: dict[str, LossFn] = {}
LOSSES: Mapping[str, LossFn] = MappingProxyType(_REGISTRY)  # name -> loss, read-only view


def _register(name: str) -> Callable[[LossFn], LossFn]:
    def add(fn: LossFn) -> LossFn:
        _REGISTRY[name] = fn
        return fn

    return add


def get_loss(name: str) -> LossFn:
    """The loss registered under `name`; ConfigError listing the valid names otherwise."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ConfigError(f"unknown loss {name!r}; valid names are {', '.join(_REGISTRY)}") from None


# ---- shared machinery: checks, reductions, diagnostics ---------------------------------------


def _check_shapes(logp, logp_old, advantages, mask, weights) -> None:
    if logp.ndim != 2:
        raise ValueError(f"logp must have shape (B, L), got {tuple(logp.shape)}")
    B = logp.shape[0]
    for name, value, shape in (
        ("logp_old", logp_old, logp.shape),
        ("mask", mask, logp.shape),
        ("advantages", advantages, (B,)),
        ("weights", weights, (B,)),
    ):
        if value is not None and tuple(value.shape) != tuple(shape):
            raise ValueError(f"{name} must have shape {tuple(shape)}, got {tuple(value.shape)}")


class _Reduction:
    """Masked token means per sequence and weighted means over the batch, with the token counts
    and total weight computed once per call."""

    def __init__(self, mask: torch.Tensor, weights: torch.Tensor | None) -> None:
        self.mask = mask  # (B, L) float, 1 = real token
        self.counts = mask.sum(-1).clamp_min(1.0)  # (B,) an empty sequence averages to 0
        self.weights = weights  # (B,) or None
        if weights is not None:
            self.total = weights.sum().clamp_min(torch.finfo(weights.dtype).tiny)

    def sequence_mean(self, x: torch.Tensor) -> torch.Tensor:
        """(B, L) -> (B,): mean over each sequence's real tokens."""
        return (x * self.mask).sum(-1) / self.counts

    def batch_mean(self, per_sequence: torch.Tensor) -> torch.Tensor:
        """(1/B) sum_i omega_i l_i: the loss reduction."""
        return per_sequence.mean() if self.weights is None else (self.weights * per_sequence).mean()

    def average(self, per_sequence: torch.Tensor) -> torch.Tensor:
        """sum_i omega_i x_i / sum_i omega_i: the metrics reduction."""
        return per_sequence.mean() if self.weights is None else (self.weights * per_sequence).sum() / self.total


def _bounds(clip_low: ClipBound, clip_high: ClipBound, like: torch.Tensor):
    """(1 - eps_low, 1 + eps_high) as (B, 1) tensors broadcastable against (B, L)."""
    B = like.shape[0]
    lo = torch.as_tensor(1.0 - clip_low, dtype=like.dtype, device=like.device).expand(B)
    hi = torch.as_tensor(1.0 + clip_high, dtype=like.dtype, device=like.device).expand(B)
    return lo[:, None], hi[:, None]


def _clipped_surrogate(ratio, adv, lo, hi) -> torch.Tensor:
    """-min(w A, clip(w, 1 - eps_low, 1 + eps_high) A), elementwise (PPO)."""
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, lo, hi) * adv
    return -torch.minimum(unclipped, clipped)


@torch.no_grad()
def _metrics(reduce: _Reduction, ratio, adv, lo, hi, log_ratio, *, sequence_level: bool = False) -> Metrics:
    """Diagnostics (module docstring). `ratio`: the clipped ratio, (B, L) per token or (B, 1) per
    sequence (sequence_level); `lo`, `hi`: its clip bounds; `log_ratio`: (B, L) for approx_kl."""
    per_sequence = (lambda x: x[:, 0]) if sequence_level else reduce.sequence_mean
    low = ((ratio < lo) & (adv < 0)).to(ratio.dtype)
    high = ((ratio > hi) & (adv > 0)).to(ratio.dtype)
    frac_low = reduce.average(per_sequence(low))
    frac_high = reduce.average(per_sequence(high))
    mean = reduce.average(per_sequence(ratio))
    var = reduce.average(per_sequence((ratio - mean) ** 2))
    k3 = torch.expm1(log_ratio) - log_ratio
    return {
        "losses/clip_frac_low": frac_low,
        "losses/clip_frac_high": frac_high,
        "losses/clip_frac": frac_low + frac_high,
        "losses/ratio_mean": mean,
        "losses/ratio_std": var.sqrt(),
        "losses/approx_kl": reduce.average(reduce.sequence_mean(k3)),
    }


def _prepare(logp, logp_old, advantages, mask, weights):
    """Checked inputs with padding replaced by exact zeros (select, not multiply: 0 * inf is nan)."""
    _check_shapes(logp, logp_old, advantages, mask, weights)
    real = mask.bool()
    zeros = torch.zeros_like(logp)
    logp = torch.where(real, logp, zeros)
    log_ratio = torch.where(real, logp - logp_old.detach(), zeros)  # (B, L)
    reduce = _Reduction(real.to(logp.dtype), weights)
    return reduce, logp, log_ratio, advantages.detach()[:, None]  # adv (B, 1)


# ---- the registry entries ----------------------------------------------------------------------


@_register("pg")
def pg_loss(logp, logp_old, advantages, mask, *, clip_low: ClipBound, clip_high: ClipBound, weights=None):
    """Plain policy gradient at the sampling policy, no importance ratio (REINFORCE, group baseline).

        l_i = -(1/|y_i|) sum_t A_i log pi(y_it),        loss = (1/B) sum_i omega_i l_i

    Symbols: pi(y_it) = exp(logp[i, t]), A_i = advantages[i], |y_i| = mask[i].sum(), omega_i = weights[i].
    Its gradient is the on-policy GRPO gradient (Shao et al. 2024, arXiv 2402.03300, with
    pi_old = pi), which is what a stale rollout delivers when no off-policy correction is made
    ("none"): evaluate `logp` at the sampling policy and the stale gradient is applied as is.
    There is no ratio to clip, so clip_low/clip_high do not enter and the clip fractions are 0;
    logp_old enters only the ratio diagnostics.
    """
    reduce, logp, log_ratio, adv = _prepare(logp, logp_old, advantages, mask, weights)
    per_sequence = reduce.sequence_mean(-adv * logp)  # (B,)
    log_ratio = log_ratio.detach()
    never = (-torch.inf, torch.inf)  # no clip region
    return reduce.batch_mean(per_sequence), _metrics(reduce, log_ratio.exp(), adv, *never, log_ratio)


@_register("grpo")
def grpo_loss(logp, logp_old, advantages, mask, *, clip_low: ClipBound, clip_high: ClipBound, weights=None):
    """GRPO: token-level importance ratios with the PPO clip (Shao et al. 2024, arXiv 2402.03300).

        w_it = pi(y_it) / pi_old(y_it) = exp(logp[i, t] - logp_old[i, t])
        l_i  = -(1/|y_i|) sum_t min(w_it A_i, clip(w_it, 1 - eps_low, 1 + eps_high) A_i)
        loss = (1/B) sum_i omega_i l_i

    Symbols: A_i = advantages[i], eps_low = clip_low, eps_high = clip_high (DAPO's decoupled
    clip), |y_i| = mask[i].sum(), omega_i = weights[i]. The KL penalty is a separate term (`kl_k3`).
    """
    reduce, _, log_ratio, adv = _prepare(logp, logp_old, advantages, mask, weights)
    lo, hi = _bounds(clip_low, clip_high, logp)
    ratio = torch.exp(log_ratio)  # (B, L)
    per_sequence = reduce.sequence_mean(_clipped_surrogate(ratio, adv, lo, hi))  # (B,)
    metrics = _metrics(reduce, ratio.detach(), adv, lo, hi, log_ratio.detach())
    return reduce.batch_mean(per_sequence), metrics


@_register("gspo")
def gspo_loss(logp, logp_old, advantages, mask, *, clip_low: ClipBound, clip_high: ClipBound, weights=None):
    """GSPO: one length-normalised importance ratio per sequence, clipped per sequence
    (Zheng et al. 2025, arXiv 2507.18071).

        s_i  = (pi(y_i) / pi_old(y_i))^(1/|y_i|) = exp((1/|y_i|) sum_t (logp[i, t] - logp_old[i, t]))
        l_i  = -min(s_i A_i, clip(s_i, 1 - eps_low, 1 + eps_high) A_i)
        loss = (1/B) sum_i omega_i l_i

    Symbols as in `grpo_loss`. For |y_i| = 1, s_i = w_i1 (GRPO's token ratio) and GSPO equals GRPO; on-policy
    (s_i = 1) the two gradients coincide for every length.
    """
    reduce, _, log_ratio, adv = _prepare(logp, logp_old, advantages, mask, weights)
    lo, hi = _bounds(clip_low, clip_high, logp)
    ratio = torch.exp(reduce.sequence_mean(log_ratio))[:, None]  # (B, 1) sequence ratio s_i
    per_sequence = _clipped_surrogate(ratio, adv, lo, hi)[:, 0]  # (B,)
    metrics = _metrics(reduce, ratio.detach(), adv, lo, hi, log_ratio.detach(), sequence_level=True)
    return reduce.batch_mean(per_sequence), metrics
