"""Sequence testbed figures: GRPO vs GSPO importance ratios against length, and MoE routing churn.

Ratios. A `TabularPolicy` starting uniform (pi_s = 1/V at every position) is trained on
`PatternMatch(length=L, partial_credit=True)` by `run_sequence_rl` with plain SGD for one refresh
window (steps = T, one rollout from pi_s, a fresh minibatch of N = 64 responses per step), once with
GRPO (token ratio w_t, clip 0.2/0.28) and once with GSPO (sequence ratio s = exp(mean_t log w_t),
clip 3e-4/4e-4), over seeds. The token-mean loss gives each position lr / L of the step, so the lr
is lr_per_token * L: the token spread reaches GRPO's clip range within the window at every L. At the
stale steps (window position j >= 1) the loop records sigma^2 = Var[log w_t], Var[log s] and the
clip fraction (losses/clip_frac, sign-aware as the loss counts it).
Theory, two routes.
  * Clip-aware walk (`theory.ratio_drift`, the prediction the claims check; GRPO update only): each
    token's log-ratio is a random walk whose step law follows from lr, N, L, pi_s and the advantage's
    signed moments given the token (Monte Carlo of the group-std advantages, `signed_advantage`);
    a sample past the clip bound on its advantage's side drops out of the step (soft walls). Token
    and sequence variances and the tails P(w < 1 - eps_low), P(w > 1 + eps_high) of its law at
    j = 1..T-1, predicted from the hyperparameters alone; the GRPO clip fraction is
    q- P(below) + q+ P(above) with the advantage-sign shares q+-. It does not model GSPO's update
    (the clip on the sequence ratio stops the whole response's gradient).
  * At the measured spreads (`predict.predicted_ratio_metrics`), a reference: Var[log s] =
    sigma^2 / L; GRPO's clip fraction from log w ~ N(-sigma^2/2, sigma^2), signs independent of the
    ratio (memoryless lognormal); GSPO's from the reward-aligned law of `theory.ratio_alignment`:
    log s leans towards the sign of A by the importance-sampling identity L Cov(log s, r) = Delta R_j,
    with the exact gain Delta R_j = E[r](j) - E[r](0) of the tabular policy and the measured
    E[log s], Var[log s], reward std and advantage-sign shares.

Routing churn. A `TinyMoETransformer` (E = 4, top-2) trained with GRPO without routing replay;
`routing/churn` is the share of routing decisions whose expert set differs between the sampler
and the current router, by window position j (the staleness) for each refresh interval T.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from gspo_dynamics.experiments._ratio_tabular import signed_advantage
from gspo_dynamics.predict import predicted_ratio_metrics
from gspo_dynamics.sim.sequence import MoETransformerConfig, PatternMatch, TabularPolicy, TinyMoETransformer, run_sequence_rl


OBJECTIVES = ("grpo", "gspo")  # token ratio, sequence ratio


PROMPTS_PER_STEP = 8  # groups per minibatch: N = 64 responses per SGD step (paper_repro/ratio_statistics.py's)


MC_DRAWS = 20_000  # Monte Carlo groups for the advantage's signed moments given a match / no match


@dataclass(frozen=True)
class RatioData:
    lengths: np.ndarray  # (n,) response lengths L
    token_var: dict  # objective -> (n,) measured Var[log w_t], stale steps and seeds
    seq_var: dict  # objective -> (n,) measured Var[log s], stale steps and seeds
    seq_var_theory: dict  # objective -> (n,) lognormal: sigma^2 / L at the measured sigma^2
    clip: dict  # objective -> (n,) measured clip fraction, stale steps and seeds
    clip_se: dict  # objective -> (n,) its standard error over seeds
    clip_theory: dict  # objective -> (n,) at the measured spreads: lognormal (GRPO), reward-aligned (GSPO)
    walk_token_var: np.ndarray  # (n,) clip-aware walk (GRPO update), from the hyperparameters
    walk_seq_var: np.ndarray  # (n,) the walk's Var[log s] of the GRPO-trained policy
    walk_clip: np.ndarray  # (n,) the walk's GRPO clip fraction q- P(below) + q+ P(above)
    refresh_interval: int
    lr_per_token: float
    seeds: int


def walk_prediction(length: int, vocab_size: int, *, lr: float, refresh_interval: int, group_size: int,
                    rng: np.random.Generator) -> tuple[float, float, float]:
    """The clip-aware walk for GRPO's update from the uniform policy: (token Var[log w], Var[log s],
    clip fraction q- P(w < 1 - eps_low) + q+ P(w > 1 + eps_high)), each the mean over j = 1..T-1."""
    from gspo_dynamics.theory.ratio_drift import clipped_log_ratio_law
    from gspo_dynamics.theory.ratios import GRPO_CLIP, GSPO_CLIP

    probs = np.full((length, vocab_size), 1.0 / vocab_size)
    advantage, pos, neg = signed_advantage(probs, np.array(PatternMatch(length=length).target), rng,
                                           group_size=group_size, draws=MC_DRAWS)
    pos, neg = ((probs * w).sum(-1).mean() for w in (pos, neg))  # q+-: the advantage-sign shares
    law = clipped_log_ratio_law(probs, advantage, lr=lr, batch_size=PROMPTS_PER_STEP * group_size,
                                window=tuple(range(1, refresh_interval)), clip_low=GRPO_CLIP[0], clip_high=GRPO_CLIP[1])
    tok = law.token(*GRPO_CLIP)
    seq = law.sequence(*GSPO_CLIP)  # the variance does not depend on the clip range passed here
    clip = neg * tok["below"] + pos * tok["above"]
    return float(tok["var"].mean()), float(seq["var"].mean()), float(clip.mean())


def ratio_data(lengths: Sequence[int], *, seeds: int, refresh_interval: int, lr_per_token: float,
               seed: int = 0) -> RatioData:
    """One refresh window of SGD from the uniform tabular policy, each objective, length and seed;
    the stale steps averaged, and the clip-aware walk's prediction for GRPO (module docstring)."""
    keys = ("token_var", "seq_var", "seq_var_theory", "clip", "clip_se", "clip_theory")
    out = {k: {o: [] for o in OBJECTIVES} for k in keys}
    walk = []
    rng = np.random.default_rng(seed)
    for L in lengths:
        task = PatternMatch(length=int(L), partial_credit=True)
        lr = lr_per_token * int(L)
        for objective in OBJECTIVES:
            per_seed = {k: [] for k in keys if k != "clip_se"}
            for s in range(seeds):
                policy = TabularPolicy(int(L), task.vocab_size)  # uniform start: pi_s known in closed form
                run = run_sequence_rl(task, policy, objective=objective, optimizer="sgd", lr=lr,
                                      refresh_interval=refresh_interval, steps=refresh_interval,
                                      prompts_per_step=PROMPTS_PER_STEP, seed=seed + 1000 * s)
                stale, m = run.window_position >= 1, run.metrics
                pred = predicted_ratio_metrics(m, objective, run.config.eps_low, run.config.eps_high, config=run.config,
                                               expected_reward=run.expected_reward)
                for key, value in (("token_var", m["ratios/token_log_var"]), ("seq_var", m["ratios/seq_log_var"]),
                                   ("seq_var_theory", pred["seq_log_var"]), ("clip", m["losses/clip_frac"]),
                                   ("clip_theory", pred["clip_frac"])):
                    per_seed[key].append(float(np.nanmean(value[stale])))
            for key, values in per_seed.items():
                out[key][objective].append(float(np.mean(values)))
            clip = np.array(per_seed["clip"])
            out["clip_se"][objective].append(float(clip.std(ddof=1) / np.sqrt(seeds)) if seeds > 1 else 0.0)
        walk.append(walk_prediction(int(L), task.vocab_size, lr=lr, refresh_interval=refresh_interval,
                                    group_size=run.config.group_size, rng=rng))
    arrays = {k: {o: np.array(v) for o, v in d.items()} for k, d in out.items()}
    w = np.array(walk)  # (n, 3)
    return RatioData(lengths=np.asarray(lengths), walk_token_var=w[:, 0], walk_seq_var=w[:, 1], walk_clip=w[:, 2],
                     refresh_interval=refresh_interval, lr_per_token=lr_per_token, seeds=seeds, **arrays)


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
