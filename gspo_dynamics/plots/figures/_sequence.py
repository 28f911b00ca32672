"""Sequence testbed figures: GRPO vs GSPO importance ratios against length, and MoE routing churn.

Ratios. A `TabularPolicy` is trained on `PatternMatch(length=L, partial_credit=True)` with GRPO
(token ratio w_t, clip 0.2/0.28) and GSPO (sequence ratio s = exp(mean_t log w_t), clip 3e-4/4e-4)
by `run_sequence_rl`; at the stale steps (window position j >= 1) the loop records the token
log-ratio variance sigma^2 = Var[log w_t], the sequence log-ratio variance Var[log s] and the clip
fraction. Theory (`theory.ratios`, via `simulate.predicted_ratio_metrics`) at the measured sigma^2:
Var[log s] = sigma^2 / L (independent positions), and the lognormal clip fractions of
log w ~ N(-sigma^2/2, sigma^2) and log s ~ N(-sigma^2/2, sigma^2/L) on the advantage sign the
PPO min acts on.

Routing churn. A `TinyMoETransformer` (E = 4, top-2) trained with GRPO without routing replay;
`routing/churn` is the share of routing decisions whose expert set differs between the sampler
and the current router, by window position j (the staleness) for each refresh interval T.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from gspo_dynamics.plots import style
from gspo_dynamics.sim.sequence import MoETransformerConfig, PatternMatch, TabularPolicy, TinyMoETransformer, run_sequence_rl
from gspo_dynamics.simulate import predicted_ratio_metrics

OBJECTIVES = ("grpo", "gspo")  # token ratio, sequence ratio
LABELS = {"grpo": "GRPO (token ratio)", "gspo": "GSPO (sequence ratio)"}


@dataclass(frozen=True)
class RatioData:
    lengths: np.ndarray  # (n,) response lengths L
    token_var: dict  # objective -> (n,) measured Var[log w_t], stale steps
    seq_var: dict  # objective -> (n,) measured Var[log s], stale steps
    seq_var_theory: dict  # objective -> (n,) sigma^2 / L at the measured sigma^2
    clip: dict  # objective -> (n,) measured clip fraction, stale steps
    clip_se: dict  # objective -> (n,) its standard error over stale steps
    clip_theory: dict  # objective -> (n,) lognormal prediction at the measured sigma^2
    refresh_interval: int
    lr: float


def ratio_data(lengths: Sequence[int], *, steps: int, refresh_interval: int, lr: float, seed: int = 0) -> RatioData:
    """Train each objective at each length from the uniform tabular policy; average the stale steps."""
    out = {k: {o: [] for o in OBJECTIVES} for k in ("token_var", "seq_var", "seq_var_theory", "clip", "clip_se", "clip_theory")}
    for L in lengths:
        task = PatternMatch(length=int(L), partial_credit=True)
        for objective in OBJECTIVES:
            policy = TabularPolicy(int(L), task.vocab_size)  # uniform start, the same for both objectives
            run = run_sequence_rl(task, policy, objective=objective, refresh_interval=refresh_interval, lr=lr,
                                  steps=steps, seed=seed)
            stale = run.window_position >= 1
            m = run.metrics
            pred = predicted_ratio_metrics(m, objective, run.config.eps_low, run.config.eps_high)
            clip = m["losses/clip_frac"][stale]
            for key, value in (("token_var", m["ratios/token_log_var"][stale]), ("seq_var", m["ratios/seq_log_var"][stale]),
                               ("seq_var_theory", pred["seq_log_var"][stale]), ("clip", clip),
                               ("clip_theory", pred["clip_frac"][stale])):
                out[key][objective].append(float(np.nanmean(value)))
            out["clip_se"][objective].append(float(np.nanstd(clip, ddof=1) / np.sqrt(np.isfinite(clip).sum())))
    arrays = {k: {o: np.array(v) for o, v in d.items()} for k, d in out.items()}
    return RatioData(lengths=np.asarray(lengths), refresh_interval=refresh_interval, lr=lr, **arrays)


def draw_ratio_variance(ax, d: RatioData) -> None:
    L = d.lengths.astype(float)
    for objective, color in zip(OBJECTIVES, (style.FIT, style.ALT)):
        ax.plot(L, d.token_var[objective], "s", color=color, ms=5, mfc="white", mew=1.3,
                label=f"{objective.upper()} run: token Var[log $w_t$]")
        ax.plot(L, d.seq_var[objective], "o", color=color, ms=5, label=f"{objective.upper()} run: sequence Var[log s]")
        ax.plot(L, d.seq_var_theory[objective], color=color, ls="--", lw=1.0)
    ax.plot([], [], color=style.DATA, ls="--", lw=1.0, label="theory: $\\sigma^2 / L$ at the measured $\\sigma^2$")
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
        ax.plot(L, d.clip_theory[objective], color=color, ls="--", label=f"{LABELS[objective]}: lognormal theory")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("response length L (tokens)")
    ax.set_ylabel("clip fraction (stale steps)")
    ax.set_ylim(bottom=-0.02)
    ax.set_title(f"clip fraction, T = {d.refresh_interval} (Adam lr {d.lr:g})")


@dataclass(frozen=True)
class ChurnData:
    intervals: tuple[int, ...]  # refresh intervals T
    by_position: dict  # T -> (T,) mean churn at window position j = 0..T-1 (over seeds and windows)
    by_position_se: dict  # T -> (T,) standard error over seeds
    window_mean: np.ndarray  # (len(intervals),) mean churn over the window
    window_mean_se: np.ndarray  # (len(intervals),) standard error over seeds
    seeds: int
    steps: int


def churn_data(intervals: Sequence[int], *, steps: int, seeds: int, length: int = 8, lr: float = 3e-3) -> ChurnData:
    """GRPO without replay on a tiny MoE, every T and seed (setup of paper_repro/moe_routing.py)."""
    task = PatternMatch(length=length, partial_credit=True)
    config = MoETransformerConfig(vocab_size=task.vocab_size, max_len=task.prompt_len + task.response_len)
    per_seed = {T: [] for T in intervals}  # T -> list of (T,) churn by j
    for T in intervals:
        for s in range(seeds):
            policy = TinyMoETransformer(config, generator=torch.Generator().manual_seed(s))
            run = run_sequence_rl(task, policy, objective="grpo", routing_replay="none", refresh_interval=T, lr=lr,
                                  steps=steps, seed=1000 + s)
            churn = run.metrics["routing/churn"]
            per_seed[T].append(np.array([np.nanmean(churn[run.window_position == j]) for j in range(T)]))
    by_position = {T: np.mean(v, axis=0) for T, v in per_seed.items()}
    se = {T: (np.std(v, axis=0, ddof=1) / np.sqrt(seeds) if seeds > 1 else np.zeros(T)) for T, v in per_seed.items()}
    window = np.array([[x.mean() for x in per_seed[T]] for T in intervals])  # (n_T, seeds)
    window_se = window.std(axis=1, ddof=1) / np.sqrt(seeds) if seeds > 1 else np.zeros(len(intervals))
    return ChurnData(tuple(intervals), by_position, se, window.mean(axis=1), window_se, seeds, steps)


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
