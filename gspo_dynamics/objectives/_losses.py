"""The contract of the policy losses, their registry `get_loss(name)`, and the shared machinery.

The entries live in `_token_losses` (token-level ratios: pg, grpo, dr_grpo, dapo, cispo) and
`_sequence_losses` (the sequence ratio: gspo, gspo_token). Every entry has the same signature

    loss(logp, logp_old, advantages, mask, *, clip_low, clip_high, weights=None)
        -> (loss, metrics)

    logp        (B, L)  log pi_theta(y_t | x, y_<t) of the sampled tokens, differentiable
    logp_old    (B, L)  log pi_old(y_t | ...) under the sampling policy (treated as constant)
    advantages  (B,)    A_i, one per sequence (see `group_advantages`); entries built on token
                        terms also take (B, L) per-token advantages A_it (gspo does not)
    mask        (B, L)  1 for real tokens, 0 for padding (bool or float)
    clip_low    eps_low, float or (B,) tensor: ratios below 1 - eps_low stop pushing down
    clip_high   eps_high, float or (B,) tensor: ratios above 1 + eps_high stop pushing up
    weights     (B,) optional per-sequence weights omega_i >= 0 (default 1)

and only `dr_grpo` adds a keyword (`max_tokens`, its constant normaliser). The weights multiply
each sequence's terms and never renormalise: normalisers (B, token counts, L_max) are counted
unweighted, so omega = 1 is the paper's loss, doubling omega doubles the loss, and importance
weights stay unbiased (the bandit simulator evaluates expectations as weighted action sets).

`metrics` holds detached scalar tensors (no .item(), so no device sync):
    losses/clip_frac_low   fraction clipped from below (ratio < 1 - eps_low and A < 0)
    losses/clip_frac_high  fraction clipped from above (ratio > 1 + eps_high and A > 0)
    losses/clip_frac       the clip-region fraction (low or high; disjoint, so their sum)
    losses/ratio_mean, losses/ratio_std   of the ratio the loss clips (token or sequence)
    losses/approx_kl       k3 estimate of KL(pi_old || pi) from the samples: (w - 1) - log w
                           per token, w = pi / pi_old
    losses/entry_clip_low, losses/entry_clip_high   the two sign-aware conditions above (CISPO's
                           too) over the entries of the ratio the loss clips, each entry counted
                           once (times omega_i): every real token of a token ratio (B, L), every
                           sequence of a sequence ratio (B, 1) (`SEQUENCE_LEVEL`: gspo). TRL 1.16
                           counts so (trl/trainer/grpo_trainer.py `_compute_loss`,
                           `global_masked_mean`): its clip_ratio/low_mean and /high_mean, and
                           CISPO's cispo_clip_ratio (entry_clip_high: TRL's cap epsilon_high is
                           our 1 + eps_high)
The losses/clip_frac* fractions count what the loss weighs, with its weight in the loss normalised
to sum 1; an entry's docstring names its counting:
    "sequences"           one count per sequence (gspo; approx_kl is its per-sequence token mean)
    "tokens in sequence"  masked token mean per sequence, then the sequence mean (pg, grpo,
                          gspo_token): every sequence weighs the same whatever its length
    "tokens"              every real token in the batch weighs the same (dr_grpo, dapo, cispo)
CISPO clips a weight rather than a surrogate, so its fractions ignore the sign of A (its docstring).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Callable, Literal, Mapping

import torch

from gspo_dynamics._errors import ConfigError

Metrics = dict[str, torch.Tensor]
LossFn = Callable[..., tuple[torch.Tensor, Metrics]]
ClipBound = float | torch.Tensor
Count = Literal["sequences", "tokens in sequence", "tokens"]

_REGISTRY: dict[str, LossFn] = {}
LOSSES: Mapping[str, LossFn] = MappingProxyType(_REGISTRY)  # name -> loss, read-only view


def register(name: str) -> Callable[[LossFn], LossFn]:
    """Decorator adding a loss to the registry under `name`."""

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


# ---- checks and reductions ---------------------------------------------------------------------


def _check_shapes(logp, logp_old, advantages, mask, weights, per_token_advantages: bool) -> None:
    if logp.ndim != 2:
        raise ValueError(f"logp must have shape (B, L), got {tuple(logp.shape)}")
    B = logp.shape[0]
    if advantages.ndim == 2 and per_token_advantages:
        adv_shape = tuple(logp.shape)
    elif advantages.ndim == 2:
        raise ValueError(f"advantages must have shape ({B},) for a sequence-level loss, got {tuple(advantages.shape)}")
    else:
        adv_shape = (B,)
    for name, value, shape in (
        ("logp_old", logp_old, logp.shape),
        ("mask", mask, logp.shape),
        ("advantages", advantages, adv_shape),
        ("weights", weights, (B,)),
    ):
        if value is not None and tuple(value.shape) != tuple(shape):
            raise ValueError(f"{name} must have shape {tuple(shape)}, got {tuple(value.shape)}")


class Reduction:
    """Masked sums and means over tokens and sequences, with counts and total weight computed once."""

    def __init__(self, mask: torch.Tensor, weights: torch.Tensor | None) -> None:
        self.mask = mask  # (B, L) float, 1 = real token
        self.lengths = mask.sum(-1)  # (B,) |y_i|
        self.counts = self.lengths.clamp_min(1.0)  # (B,) an empty sequence averages to 0
        self.n_tokens = self.lengths.sum().clamp_min(1.0)  # () an empty batch sums to 0
        self.weights = weights  # (B,) or None
        tiny = torch.finfo(mask.dtype).tiny
        if weights is None:
            self.total = torch.tensor(float(mask.shape[0]), dtype=mask.dtype, device=mask.device)
            self.token_total = self.n_tokens
        else:
            self.total = weights.sum().clamp_min(tiny)
            self.token_total = (weights * self.lengths).sum().clamp_min(tiny)

    def token_sum(self, x: torch.Tensor) -> torch.Tensor:
        """(B, L) -> (B,): sum over each sequence's real tokens."""
        return (x * self.mask).sum(-1)

    def sequence_mean(self, x: torch.Tensor) -> torch.Tensor:
        """(B, L) -> (B,): mean over each sequence's real tokens."""
        return self.token_sum(x) / self.counts

    def weighted_sum(self, per_sequence: torch.Tensor) -> torch.Tensor:
        """sum_i omega_i x_i: the loss numerator."""
        return per_sequence.sum() if self.weights is None else (self.weights * per_sequence).sum()

    def batch_mean(self, per_sequence: torch.Tensor) -> torch.Tensor:
        """(1/B) sum_i omega_i l_i: the per-sequence loss reduction."""
        return per_sequence.mean() if self.weights is None else (self.weights * per_sequence).mean()

    def average(self, x: torch.Tensor, count: Count) -> torch.Tensor:
        """Metrics reduction: weighted average of (B, 1) per-sequence values ("sequences") or of
        (B, L) token values, each sequence or each token counting (module docstring)."""
        if count == "sequences":
            return self.weighted_sum(x[:, 0]) / self.total
        if count == "tokens in sequence":
            return self.weighted_sum(self.sequence_mean(x)) / self.total
        return self.weighted_sum(self.token_sum(x)) / self.token_total


def prepare(logp, logp_old, advantages, mask, weights, *, per_token_advantages: bool = True):
    """Checked inputs with padding replaced by exact zeros (select, not multiply: 0 * inf is nan).

    Returns (reduce, logp, log_ratio, adv): logp and log_ratio = logp - logp_old (B, L), zero
    under padding; adv detached, (B, 1) for per-sequence advantages or (B, L) per token.
    """
    _check_shapes(logp, logp_old, advantages, mask, weights, per_token_advantages)
    real = mask.bool()
    zeros = torch.zeros_like(logp)
    logp = torch.where(real, logp, zeros)
    log_ratio = torch.where(real, logp - logp_old.detach(), zeros)  # (B, L)
    adv = advantages.detach()
    adv = torch.where(real, adv, zeros) if adv.ndim == 2 else adv[:, None]  # (B, L) or (B, 1)
    reduce = Reduction(real.to(logp.dtype), weights)
    return reduce, logp, log_ratio, adv


def bounds(clip_low: ClipBound, clip_high: ClipBound, like: torch.Tensor):
    """(1 - eps_low, 1 + eps_high) as (B, 1) tensors broadcastable against (B, L)."""
    B = like.shape[0]
    lo = torch.as_tensor(1.0 - clip_low, dtype=like.dtype, device=like.device).expand(B)
    hi = torch.as_tensor(1.0 + clip_high, dtype=like.dtype, device=like.device).expand(B)
    return lo[:, None], hi[:, None]


NO_CLIP = (-torch.inf, torch.inf)  # bounds of a loss without a clip region: fractions are 0


def clipped_surrogate(ratio, adv, lo, hi) -> torch.Tensor:
    """-min(w A, clip(w, 1 - eps_low, 1 + eps_high) A), elementwise (PPO)."""
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, lo, hi) * adv
    return -torch.minimum(unclipped, clipped)


@torch.no_grad()
def metrics(reduce: Reduction, ratio, adv, lo, hi, log_ratio, *, count: Count, sign_aware: bool = True) -> Metrics:
    """Diagnostics (module docstring). `ratio`: the clipped ratio, (B, 1) per sequence (count
    "sequences") or (B, L) per token; `lo`, `hi`: its clip bounds; `log_ratio`: (B, L) token
    log-ratios for approx_kl. sign_aware: a side of clip_frac_* counts only where A has the sign for
    which the PPO min selects the clipped term; otherwise (CISPO) wherever the ratio is outside
    [lo, hi]. entry_clip_* are sign-aware always."""
    ratio, adv, log_ratio = ratio.detach(), adv.detach(), log_ratio.detach()
    below, above = ratio < lo, ratio > hi
    if sign_aware:
        below, above = below & (adv < 0), above & (adv > 0)
    # shares of disjoint sets: each and their sum lie in [0, 1] exactly; the two weighted sums and the
    # total are rounded separately (a sum over all entries can come out 1 + 2e-16), so clamp to the range
    frac_low = reduce.average(below.to(ratio.dtype), count).clamp(0.0, 1.0)
    frac_high = reduce.average(above.to(ratio.dtype), count).clamp(0.0, 1.0 - frac_low)
    mean = reduce.average(ratio, count)
    var = reduce.average((ratio - mean) ** 2, count)
    k3 = torch.expm1(log_ratio) - log_ratio  # (B, L), 0 under padding
    entries = "sequences" if ratio.shape[1] == 1 else "tokens"  # each entry of the ratio once (module docstring)
    signed_below, signed_above = (below, above) if sign_aware else (below & (adv < 0), above & (adv > 0))
    entry_low = reduce.average(signed_below.to(ratio.dtype), entries).clamp(0.0, 1.0)
    entry_high = reduce.average(signed_above.to(ratio.dtype), entries).clamp(0.0, 1.0 - entry_low)
    return {
        "losses/clip_frac_low": frac_low,
        "losses/clip_frac_high": frac_high,
        "losses/clip_frac": frac_low + frac_high,
        "losses/ratio_mean": mean,
        "losses/ratio_std": var.sqrt(),
        "losses/approx_kl": reduce.average(k3, "tokens" if count == "tokens" else "tokens in sequence"),
        "losses/entry_clip_low": entry_low,
        "losses/entry_clip_high": entry_high,
    }
