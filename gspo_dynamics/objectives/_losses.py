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
    weights     (B,) optional per-sequence weights w_i >= 0 (default 1)

and reduces per-sequence losses l_i with the weighted batch mean  loss = (1/B) sum_i w_i l_i.
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


def _sequence_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(B, L) -> (B,): mean over each sequence's real tokens (an empty sequence gives 0)."""
    return (x * mask).sum(-1) / mask.sum(-1).clamp_min(1.0)


def _batch_mean(per_sequence: torch.Tensor, weights: torch.Tensor | None) -> torch.Tensor:
    """(1/B) sum_i w_i l_i."""
    return per_sequence.mean() if weights is None else (weights * per_sequence).mean()


def _weighted_average(per_sequence: torch.Tensor, weights: torch.Tensor | None) -> torch.Tensor:
    if weights is None:
        return per_sequence.mean()
    return (weights * per_sequence).sum() / weights.sum().clamp_min(torch.finfo(weights.dtype).tiny)


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
def _metrics(ratio, adv, lo, hi, seq_mask, log_ratio_tokens, mask, weights) -> Metrics:
    """Diagnostics (module docstring). `ratio`, `adv`, `seq_mask`: the clipped level, (B, L') with
    L' = L (token ratios) or 1 (sequence ratio); `log_ratio_tokens`, `mask`: (B, L) for approx_kl."""
    low = ((ratio < lo) & (adv < 0)).to(ratio.dtype)
    high = ((ratio > hi) & (adv > 0)).to(ratio.dtype)
    frac_low = _weighted_average(_sequence_mean(low, seq_mask), weights)
    frac_high = _weighted_average(_sequence_mean(high, seq_mask), weights)
    mean = _weighted_average(_sequence_mean(ratio, seq_mask), weights)
    var = _weighted_average(_sequence_mean((ratio - mean) ** 2, seq_mask), weights)
    k3 = torch.expm1(log_ratio_tokens) - log_ratio_tokens
    return {
        "losses/clip_frac_low": frac_low,
        "losses/clip_frac_high": frac_high,
        "losses/clip_frac": frac_low + frac_high,
        "losses/ratio_mean": mean,
        "losses/ratio_std": var.sqrt(),
        "losses/approx_kl": _weighted_average(_sequence_mean(k3, mask), weights),
    }


def _prepare(logp, logp_old, advantages, mask, weights):
    """Checked inputs with padding replaced by exact zeros (select, not multiply: 0 * inf is nan)."""
    _check_shapes(logp, logp_old, advantages, mask, weights)
    real = mask.bool()
    logp = torch.where(real, logp, torch.zeros_like(logp))
    log_ratio = torch.where(real, logp - logp_old.detach(), torch.zeros_like(logp))  # (B, L)
    return real.to(logp.dtype), logp, log_ratio, advantages.detach()[:, None]  # adv (B, 1)


# ---- the registry entries ----------------------------------------------------------------------


@_register("pg")
def pg_loss(logp, logp_old, advantages, mask, *, clip_low: ClipBound, clip_high: ClipBound, weights=None):
    """Plain policy gradient at the sampling policy, no importance ratio (REINFORCE, group baseline).

        l_i = -(1/|y_i|) sum_t A_i log pi(y_it),        loss = (1/B) sum_i w_i l_i

    Symbols: pi(y_it) = exp(logp[i, t]), A_i = advantages[i], |y_i| = mask[i].sum(), w_i = weights[i].
    Its gradient is the on-policy GRPO gradient (Shao et al. 2024, arXiv 2402.03300, Eq. 3 with
    pi_old = pi), which is what a stale rollout delivers when no off-policy correction is made
    ("none"): evaluate `logp` at the sampling policy and the stale gradient is applied as is.
    There is no ratio to clip, so clip_low/clip_high do not enter and the clip fractions are 0;
    logp_old enters only the ratio diagnostics.
    """
    mask, logp, log_ratio, adv = _prepare(logp, logp_old, advantages, mask, weights)
    per_sequence = _sequence_mean(-adv * logp, mask)  # (B,)
    ratio = torch.exp(log_ratio.detach())
    never = torch.full_like(ratio, -torch.inf), torch.full_like(ratio, torch.inf)  # no clip region
    return _batch_mean(per_sequence, weights), _metrics(ratio, adv, *never, mask, log_ratio.detach(), mask, weights)


@_register("grpo")
def grpo_loss(logp, logp_old, advantages, mask, *, clip_low: ClipBound, clip_high: ClipBound, weights=None):
    """GRPO: token-level importance ratios with the PPO clip (Shao et al. 2024, arXiv 2402.03300, Eq. 3).

        w_it = pi(y_it) / pi_old(y_it) = exp(logp[i, t] - logp_old[i, t])
        l_i  = -(1/|y_i|) sum_t min(w_it A_i, clip(w_it, 1 - eps_low, 1 + eps_high) A_i)
        loss = (1/B) sum_i w_i l_i

    Symbols: A_i = advantages[i], eps_low = clip_low, eps_high = clip_high (DAPO's decoupled
    clip), |y_i| = mask[i].sum(), w_i = weights[i]. The KL penalty is a separate term (`kl_k3`).
    """
    mask, _, log_ratio, adv = _prepare(logp, logp_old, advantages, mask, weights)
    lo, hi = _bounds(clip_low, clip_high, logp)
    ratio = torch.exp(log_ratio)  # (B, L)
    per_sequence = _sequence_mean(_clipped_surrogate(ratio, adv, lo, hi), mask)  # (B,)
    metrics = _metrics(ratio.detach(), adv, lo, hi, mask, log_ratio.detach(), mask, weights)
    return _batch_mean(per_sequence, weights), metrics


@_register("gspo")
def gspo_loss(logp, logp_old, advantages, mask, *, clip_low: ClipBound, clip_high: ClipBound, weights=None):
    """GSPO: one length-normalised importance ratio per sequence, clipped per sequence
    (Zheng et al. 2025, arXiv 2507.18071, Eqs. 5-7).

        s_i  = (pi(y_i) / pi_old(y_i))^(1/|y_i|) = exp((1/|y_i|) sum_t (logp[i, t] - logp_old[i, t]))
        l_i  = -min(s_i A_i, clip(s_i, 1 - eps_low, 1 + eps_high) A_i)
        loss = (1/B) sum_i w_i l_i

    Symbols as in `grpo_loss`. For |y_i| = 1, s_i = w_i1 and GSPO equals GRPO; on-policy
    (s_i = 1) the two gradients coincide for every length.
    """
    mask, _, log_ratio, adv = _prepare(logp, logp_old, advantages, mask, weights)
    lo, hi = _bounds(clip_low, clip_high, logp)
    ratio = torch.exp(_sequence_mean(log_ratio, mask))[:, None]  # (B, 1) sequence ratio s_i
    per_sequence = _clipped_surrogate(ratio, adv, lo, hi)[:, 0]  # (B,)
    ones = torch.ones_like(ratio)
    metrics = _metrics(ratio.detach(), adv, lo, hi, ones, log_ratio.detach(), mask, weights)
    return _batch_mean(per_sequence, weights), metrics
