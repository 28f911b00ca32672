"""Sequence testbed figures: GRPO vs GSPO importance ratios against length, and MoE routing churn.

Drawing only, into given axes: the runs and the theory behind each panel are computed by
`gspo_dynamics.experiments` (`ratio_data`, `churn_data`; their module docstring says what they are).
"""

from __future__ import annotations

import numpy as np

from gspo_dynamics.experiments import OBJECTIVES, ChurnData, RatioData
from gspo_dynamics.plots import style

LABELS = {"grpo": "GRPO (token ratio)", "gspo": "GSPO (sequence ratio)"}


WALK_STYLE = dict(color=style.FIT, lw=1.8, alpha=0.55)  # thick, light: the clip-aware walk (GRPO)
LOGNORMAL_STYLE = dict(ls=":", lw=0.9)  # thin: the memoryless lognormal reference


def draw_ratio_variance(ax, d: RatioData) -> None:
    L = d.lengths.astype(float)
    for objective, color in zip(OBJECTIVES, (style.FIT, style.ALT)):
        ax.plot(L, d.token_var[objective], "s", color=color, ms=5, mfc="white", mew=1.3,
                label=f"{objective.upper()} run: token Var[log $w_t$]")
        ax.plot(L, d.seq_var[objective], "o", color=color, ms=5, label=f"{objective.upper()} run: sequence Var[log s]")
        ax.plot(L, d.seq_var_theory[objective], color=color, **LOGNORMAL_STYLE)
    ax.plot(L, d.walk_token_var, **WALK_STYLE, label="clip-aware walk (GRPO update): token, sequence")
    ax.plot(L, d.walk_seq_var, **WALK_STYLE)
    ax.plot([], [], color=style.DATA, **LOGNORMAL_STYLE, label="lognormal: $\\sigma^2 / L$ at the measured $\\sigma^2$")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("response length L (tokens)")
    ax.set_ylabel("log-ratio variance (stale steps)")
    ax.set_title("sequence log-ratio variance = token variance / L")


def draw_clip_fraction(ax, d: RatioData) -> None:
    L = d.lengths.astype(float)
    for objective, color in zip(OBJECTIVES, (style.FIT, style.ALT)):
        ax.errorbar(L, d.clip[objective], yerr=2 * d.clip_se[objective], fmt="o", color=color, ms=5, capsize=2,
                    label=f"{LABELS[objective]}: measured")
        law = "lognormal" if objective == "grpo" else "reward-aligned law"
        ax.plot(L, d.clip_theory[objective], color=color, **LOGNORMAL_STYLE,
                label=f"{LABELS[objective]}: {law} at measured spreads")
    ax.plot(L, d.walk_clip, **WALK_STYLE, label="GRPO: clip-aware walk (from the hyperparameters)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("response length L (tokens)")
    ax.set_ylabel("clip fraction (stale steps)")
    ax.set_ylim(bottom=-0.02)
    ax.set_title(f"clip fraction, T = {d.refresh_interval} (SGD lr {d.lr_per_token:g} L, {d.seeds} seeds)")


def draw_churn_by_position(ax, d: ChurnData) -> None:
    for i, T in enumerate(d.intervals):
        j = np.arange(T)
        ax.errorbar(j, d.by_position[T], yerr=2 * d.by_position_se[T], marker="o", ms=4, capsize=2,
                    color=style.CYCLE[i % len(style.CYCLE)], label=f"T = {T}")
    ax.set_xlabel("window position j (optimizer steps since the refresh)")
    ax.set_ylabel("routing churn (share of changed expert sets)")
    ax.set_title("churn grows with staleness")


def draw_churn_by_interval(ax, d: ChurnData) -> None:
    ax.errorbar(d.intervals, d.window_mean, yerr=2 * d.window_mean_se, fmt="o-", color=style.DATA, ms=5, capsize=2)
    ax.set_xscale("log", base=2)
    ax.set_xticks(d.intervals, [str(T) for T in d.intervals])
    ax.set_xlabel("refresh interval T (steps)")
    ax.set_ylabel("window-mean routing churn")
    ax.set_title(f"per refresh interval ({d.seeds} seeds, {d.steps} steps)")
