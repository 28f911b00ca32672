"""Group-relative advantages (GRPO, Shao et al. 2024, arXiv 2402.03300, Sec. 4.1.2) and DAPO's
dynamic-sampling filter (Yu et al. 2025, arXiv 2503.14476)."""

from __future__ import annotations

import torch

from gspo_dynamics._errors import ConfigError

ADVANTAGE_SCALES: tuple[str, ...] = ("group", "none", "batch")
STD_ESTIMATORS: tuple[str, ...] = ("unbiased", "biased")


def _check_rewards(rewards: torch.Tensor) -> None:
    if rewards.ndim != 2:
        raise ValueError(f"rewards must have shape (B, G), got {tuple(rewards.shape)}")


def _flat_groups(rewards: torch.Tensor) -> torch.Tensor:
    """(B, G) -> (B, 1) bool: all rewards of the group exactly equal (a group of one is flat)."""
    return (rewards == rewards[:, :1]).all(dim=1, keepdim=True)


def group_advantages(
    rewards: torch.Tensor,
    scale: str = "group",
    std_estimator: str = "unbiased",
    eps: float = 1e-4,
) -> torch.Tensor:
    """Advantages of G responses per prompt relative to their own group.

        A_ij = (r_ij - mean_j r_ij) / s_i

    with s_i = std_j(r_ij) + eps for scale "group" (GRPO), s_i = 1 for "none" (Dr. GRPO, Liu et
    al. 2025, arXiv 2503.20783: mean baseline only, no eps) and s_i = std(r) + eps over all B*G
    rewards for "batch". The std estimator is a choice, default "unbiased":

        "unbiased"  std = sqrt(sum (r - mean)^2 / (n - 1))   Bessel-corrected, torch.std (TRL, verl)
        "biased"    std = sqrt(sum (r - mean)^2 / n)         the maximum-likelihood std, numpy's default

    with n = G for "group" and n = B*G for "batch". A group whose rewards are all equal (zero
    variance) gets exactly zero advantage, for every scale: it carries no learning signal, and
    rounding in r - mean(r) must not invent one. To drop such groups instead of zeroing them
    (DAPO's dynamic sampling), see `filter_informative_groups`.

    Args:
        rewards: (B, G) rewards r_ij, B groups (prompts) of G responses.
        scale: "group" | "none" | "batch".
        std_estimator: "unbiased" | "biased".
        eps: added to the std for "group" and "batch" (TRL's value 1e-4); "none" has no std.

    Returns:
        (B, G) advantages, same dtype and device as `rewards`.
    """
    if scale not in ADVANTAGE_SCALES:
        raise ConfigError(f"advantage scale must be one of {', '.join(ADVANTAGE_SCALES)}; got {scale!r}")
    if std_estimator not in STD_ESTIMATORS:
        raise ConfigError(f"std estimator must be one of {', '.join(STD_ESTIMATORS)}; got {std_estimator!r}")
    _check_rewards(rewards)
    if scale != "none" and eps < 0:
        raise ConfigError(f"std eps must be >= 0, got {eps}")

    if rewards.shape[1] < 2:  # a group of one is always flat; avoid the std's 0/0 warning
        return torch.zeros_like(rewards)
    flat = _flat_groups(rewards)  # (B, 1) zero-variance groups
    centred = rewards - rewards.mean(dim=1, keepdim=True)  # (B, G)
    correction = 1 if std_estimator == "unbiased" else 0
    if scale == "group":
        spread = rewards.std(dim=1, keepdim=True, correction=correction) + eps  # (B, 1)
        # flat groups divide by 1, not by eps (or by 0 when eps = 0), then are zeroed below
        centred = centred / torch.where(flat, torch.ones_like(spread), spread)
    elif scale == "batch":  # an all-flat batch (std 0) is zeroed below whatever it divides by
        centred = centred / (rewards.std(correction=correction) + eps)
    return torch.where(flat, torch.zeros_like(centred), centred)


def filter_informative_groups(rewards: torch.Tensor) -> torch.Tensor:
    """DAPO's dynamic-sampling filter: which groups carry a learning signal (Yu et al. 2025, arXiv 2503.14476).

        keep_i = not (r_i1 = r_i2 = ... = r_iG)

    DAPO over-samples prompts and keeps only groups with 0 < accuracy < 1; for any reward this
    is "not all rewards equal", the groups whose advantages are not all zero. Equality is exact,
    as in `group_advantages` (verifiable rewards are discrete); a group of one is never kept.
    Filtering matters beyond the zero advantages a flat group already gets: the dropped groups
    no longer count in a loss's normaliser (B, or the token count of `dapo` and `cispo`) nor in
    the effective batch size. Refilling the batch (DAPO samples until it is full) is the caller's
    job; an all-False mask means nothing is left to learn from.

    Args:
        rewards: (B, G) rewards r_ij.

    Returns:
        (B,) bool, True for the groups to keep: `rewards[keep]`, and the matching responses.
    """
    _check_rewards(rewards)
    return ~_flat_groups(rewards)[:, 0]
