"""Group-relative advantages (GRPO, Shao et al. 2024, arXiv 2402.03300, Sec. 4.1.2)."""

from __future__ import annotations

import torch

from gspo_dynamics._errors import ConfigError

ADVANTAGE_SCALES: tuple[str, ...] = ("group", "none", "batch")
STD_ESTIMATORS: tuple[str, ...] = ("unbiased", "biased")


def group_advantages(
    rewards: torch.Tensor,
    scale: str = "group",
    std_estimator: str = "unbiased",
    eps: float = 1e-4,
) -> torch.Tensor:
    """Advantages of G responses per prompt relative to their own group.

        A_ij = (r_ij - mean_j r_ij) / s_i

    with s_i = std_j(r_ij) + eps for scale "group" (GRPO), s_i = 1 for "none" (Dr. GRPO: mean
    baseline only, no eps) and s_i = std(r) + eps over all B*G rewards for "batch". The std uses
    Bessel's correction for "unbiased" (torch.std, TRL) and divides by the count for "biased".
    A group whose rewards are all equal (zero variance) gets exactly zero advantage, for every
    scale: it carries no learning signal, and rounding in r - mean(r) must not invent one.

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
    if rewards.ndim != 2:
        raise ValueError(f"rewards must have shape (B, G), got {tuple(rewards.shape)}")
    if scale != "none" and eps < 0:
        raise ConfigError(f"std eps must be >= 0, got {eps}")

    if rewards.shape[1] < 2:  # a group of one is always flat; avoid the std's 0/0 warning
        return torch.zeros_like(rewards)
    flat = (rewards == rewards[:, :1]).all(dim=1, keepdim=True)  # (B, 1) zero-variance groups
    centred = rewards - rewards.mean(dim=1, keepdim=True)  # (B, G)
    correction = 1 if std_estimator == "unbiased" else 0
    if scale == "group":
        spread = rewards.std(dim=1, keepdim=True, correction=correction) + eps  # (B, 1)
        # flat groups divide by 1, not by eps (or by 0 when eps = 0), then are zeroed below
        centred = centred / torch.where(flat, torch.ones_like(spread), spread)
    elif scale == "batch":  # an all-flat batch (std 0) is zeroed below whatever it divides by
        centred = centred / (rewards.std(correction=correction) + eps)
    return torch.where(flat, torch.zeros_like(centred), centred)
