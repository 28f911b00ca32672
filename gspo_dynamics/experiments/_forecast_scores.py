"""Scoring a pilot forecast against a measured (lr, T) grid (the protocol of paper_repro/pilot_forecast.py).

What each cell measured: per seed, its curve r_0, then means of SEED_BLOCK steps; the seed is unstable when a
block falls below the running best M by more than DRAWDOWN_MARGIN, or by more than COLLAPSE_SHARE M where
M >= DRAWDOWN_MARGIN / 2 (`seed_falls`); the cell is unstable when any seed is, its final reward the seed mean of
the last PLATEAU_STEPS steps, its time to plateau the first step of the first BLOCK-step mean within 5% of its rise
of the final reward (`measured_cells`, `time_to_plateau`). What the pilot's fitted curve R(t) forecasts for a cell at
lr = rho lr_pilot and refresh interval T: the reward of step s is that of its sampler, after
u(s) = T floor(s / T) updates (`sampler_updates`), read at the pilot's time t = 1 + (PILOT_T - 1) / 2 + rho u
(`pilot_time`), so the final reward is mean_s clip(R(t(u(s))), 0, 1) over the last PLATEAU_STEPS steps
(`forecast_final_reward`). And the targets each combination meets or misses (`score`, `misses`).
"""

from __future__ import annotations

import math

import numpy as np

from gspo_dynamics.fit import COLLAPSE_SHARE
from gspo_dynamics.predict import held_reward

STEPS = 96  # steps of a grid run
PILOT_T = 2  # the pilot's refresh interval (its stale steps measure the drift)
BLOCK = 8  # steps per mean of the seed-mean curve that times the plateau: 4 seeds x 8 steps x 32 responses
SEED_BLOCK = 16  # steps per mean of one seed's curve: 16 x 32 responses, noise <= 0.022, a fall of DRAWDOWN_MARGIN > 4 sigma
DRAWDOWN_MARGIN = 0.1  # as trainer_at_scale: a reward drop that counts as losing what the run had
PLATEAU_STEPS = 16  # the final reward: the seed mean of a run's last PLATEAU_STEPS steps
ACCURACY_MIN, SAFE_BUT_UNSTABLE_MAX, PLATEAU_TOL = 0.85, 1, 0.05  # the targets per combination
FORECASTERS = ("ours", "version 4", "continuous", "always stable")  # the targets compare ours with the last two


def initial_rewards(curves: dict, lrs, Ts) -> np.ndarray:
    """Per seed, the initial policy's reward: the mean of the first max(Ts) steps of the grid's T = max(Ts)
    cells, all drawn by the initial policy (the first rollout's sampler; the same samples at every lr),
    max(Ts) x N G responses, where a single first step has N G (pilot_forecast.md, version 4)."""
    T = max(Ts)
    return np.mean([curves[(lr, T)]["reward"][:, :T].mean(axis=1) for lr in lrs], axis=0)


def measured_cells(curves: dict, lrs, Ts) -> dict:
    """(lr, T) -> (unstable, fall, final reward, time to plateau, unstable seeds) from the seed curves
    (pilot_forecast.py's protocol, version 4): each seed's curve is its initial reward (`initial_rewards`) followed by means of
    SEED_BLOCK steps; a seed is unstable when it falls more than DRAWDOWN_MARGIN below its running maximum M,
    or (version 8) by more than COLLAPSE_SHARE M where M >= DRAWDOWN_MARGIN / 2: a run that starts at 0.1 and
    falls to 0 lost all it had, which a fall of 0.1 cannot pass (a block mean at most 0.2 M lies 4 (M = 0.05)
    to 6 (M = 0.1) standard errors of a binary reward's 512-response block below M); the cell is unstable
    when any seed is. The fall is the largest seed's; the final reward and the time to plateau are the seed
    mean's."""
    r0 = initial_rewards(curves, lrs, Ts)
    out = {}
    for lr in lrs:
        for T in Ts:
            reward = curves[(lr, T)]["reward"]
            steps = reward.shape[1]
            lost, falls = seed_falls(reward, r0)
            mean = reward.mean(axis=0)
            final = float(mean[-PLATEAU_STEPS:].mean())
            timing = np.concatenate([[r0.mean()], mean[1: 1 + (steps - 1) // BLOCK * BLOCK].reshape(-1, BLOCK).mean(axis=1)])
            out[(lr, T)] = (bool(lost.any()), float(falls.max()), final, time_to_plateau(timing, final), int(lost.sum()))
    return out


def seed_falls(reward: np.ndarray, r0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per seed of one cell (reward (seeds, steps), r0 (seeds,) its initial rewards): whether it is unstable
    (`measured_cells`: a fall past DRAWDOWN_MARGIN, or past COLLAPSE_SHARE of a running best >= DRAWDOWN_MARGIN / 2,
    on its curve of r0 then SEED_BLOCK-step means) and its largest fall below its running best."""
    seeds, steps = reward.shape
    blocks = reward[:, :steps // SEED_BLOCK * SEED_BLOCK].reshape(seeds, -1, SEED_BLOCK).mean(axis=2)  # (seeds, blocks)
    series = np.concatenate([r0[:, None], blocks], axis=1)
    best = np.maximum.accumulate(series, axis=1)
    drop = best - series
    lost = np.any((drop > DRAWDOWN_MARGIN) | ((drop > COLLAPSE_SHARE * best) & (best >= DRAWDOWN_MARGIN / 2)), axis=1)
    return lost, drop.max(axis=1)


def time_to_plateau(series: np.ndarray, final: float) -> float:
    """The step from which the curve (the initial reward, then BLOCK-step means) stays within 5% of its rise
    of the final reward (as `fit.implications`'s time to plateau): the first step of the first block that
    does, so at most one block after the curve itself; nan when it rose by less than DRAWDOWN_MARGIN."""
    rise = final - series[0]
    if abs(rise) < DRAWDOWN_MARGIN:
        return math.nan
    outside = np.flatnonzero(np.abs(series - final) > 0.05 * abs(rise))
    first = outside[-1] + 1 if len(outside) else 0  # series[k], k >= 1, is the block of steps (k - 1) BLOCK + 1 .. k BLOCK
    return float(0 if first == 0 else (first - 1) * BLOCK + 1)


def max_stable_T(unstable: dict, lr, Ts) -> int:
    """The largest T of the grid below the first unstable one at this lr (Ts[-1] when none is)."""
    previous = Ts[0]
    for T in Ts:
        if unstable[(lr, T)]:
            return previous if T != Ts[0] else 0
        previous = T
    return Ts[-1]


def score(fc, measured: dict, forecasts: dict, lrs, Ts) -> dict:
    """Per forecaster: accuracy, safe-but-unstable cells, max stable T per lr, plateau error (stable cells)."""
    truth = {c: m[0] for c, m in measured.items()}
    rows = {}
    for who in FORECASTERS:
        pred = {c: f[who] for c, f in forecasts.items()}
        hits = sum(pred[c] == truth[c] for c in truth)
        grid_step = [abs(Ts.index(max(max_stable_T(pred, lr, Ts), Ts[0])) - Ts.index(max(max_stable_T(truth, lr, Ts), Ts[0])))
                     for lr in lrs]
        rows[who] = dict(accuracy=hits / len(truth), safe_but_unstable=sum(truth[c] and not pred[c] for c in truth),
                         max_t=[(max_stable_T(pred, lr, Ts), max_stable_T(truth, lr, Ts)) for lr in lrs],
                         max_t_ok=all(g <= 1 for g in grid_step))
    lr_pilot = fc.config.setup.hparams.lr
    stable = [(cell, m) for cell, m in measured.items() if not m[0]]
    errors = [abs(forecast_final_reward(fc, lr / lr_pilot, T) - m[2]) for (lr, T), m in stable]
    rows["plateau_error"] = float(max(errors)) if errors else math.nan
    times = [abs(forecast_time_to_plateau(fc, lr / lr_pilot, T) - m[3]) for (lr, T), m in stable]
    times = [t for t in times if math.isfinite(t)]
    rows["time_error"] = (float(np.median(times)), len(times)) if times else None
    return rows


def sampler_updates(step, T: int) -> np.ndarray:
    """The updates behind the policy that drew the rollout of 0-based step `step` at refresh interval T:
    the sampler is refreshed every T steps, so T floor(step / T); the logged reward is that policy's."""
    return T * (np.asarray(step) // T)


def pilot_time(updates, lr_ratio: float) -> np.ndarray:
    """The pilot log's step (1-based, the fit's time) whose reward is that of a policy `updates` updates at
    lr = lr_ratio x the pilot's into a run: time runs lr_ratio times faster (Adam's and SGD's steps scale with
    lr), and the pilot's own sampler lags its step by (PILOT_T - 1) / 2 updates on average. (Version 4 also
    tried the clip's cap on a window's displacement, `theory.collapse` (4), as the window's progress: worse
    on the development cells, final-reward error 0.52-0.60 against 0.14-0.28 on pattern/grpo and pattern/gspo.)"""
    return 1 + (PILOT_T - 1) / 2 + lr_ratio * np.asarray(updates, dtype=float)


def forecast_time_to_plateau(fc, lr_ratio: float, T: int) -> float:
    """The pilot fit's time to plateau (`fit.implications`) as a cell's step (1-based): the updates it takes
    at the cell's lr (`pilot_time` inverted), logged from the sampler refresh that follows them; nan when the
    fit gives none (a curve that never settles: time to plateau infinite)."""
    updates = max(0.0, (fc.implications.time_to_plateau.value - pilot_time(0, lr_ratio)) / lr_ratio)
    return float(T * math.ceil(updates / T) + 1) if math.isfinite(updates) else math.nan


def forecast_final_reward(fc, lr_ratio: float, T: int) -> float:
    """The pilot's fitted curve over the last PLATEAU_STEPS steps of a full run at lr = lr_ratio x the
    pilot's and refresh interval T, each step's reward its sampler's (`sampler_updates`, `pilot_time`),
    clipped to the reward's range [0, 1]."""
    updates = sampler_updates(np.arange(STEPS - PLATEAU_STEPS, STEPS), T)
    return float(np.clip(fc.fit.predict(pilot_time(updates, lr_ratio)), 0.0, 1.0).mean())


def misses(result: dict) -> list[str]:
    """The targets (pilot_forecast.py's docstring) ours missed on one combination, each named; none: it passed."""
    ours = result["ours"]
    out = []
    if ours["accuracy"] < ACCURACY_MIN:
        out.append(f"accuracy under {ACCURACY_MIN:.0%}")
    if ours["safe_but_unstable"] > SAFE_BUT_UNSTABLE_MAX:
        out.append(f"more than {SAFE_BUT_UNSTABLE_MAX} safe-but-unstable")
    if not ours["max_t_ok"]:
        out.append("max safe T off by more than one grid step")
    if result["plateau_error"] > PLATEAU_TOL:  # nan (no stable cell) misses nothing
        out.append(f"plateau error over {PLATEAU_TOL}")
    beaten = [b for b in ("continuous", "always stable") if not ours["accuracy"] > result[b]["accuracy"]]
    if beaten:
        out.append("not ahead of " + " and ".join(beaten))
    return out


def passed(result: dict) -> bool:
    return not misses(result)


def grid_cell(result: dict, factor: float, T: int) -> tuple[float, int] | None:
    """The measured cell at factor x the pilot's lr and refresh interval T (the lr matched to a relative 1e-6: a
    grid's lr is written as the trainer's product), or None when the grid has none."""
    lr_pilot = result["forecast"].config.setup.hparams.lr
    return next(((lr, t) for lr, t in result["measured"] if t == T and math.isclose(lr, factor * lr_pilot, rel_tol=1e-6)),
                None)


def first_window_gains(result: dict, T: int, factors: tuple[float, float]) -> tuple[float, float] | None:
    """The reward gain of the first refresh window at T, at the lr factors (low, high) x the pilot's lr: the seed
    mean of steps T .. 2T - 1 (the sampler after T updates) minus that of steps 0 .. T - 1 (the initial
    sampler's); None unless both cells are in the grid, stable and at least 2T steps long."""
    gains = []
    for factor in factors:
        cell = grid_cell(result, factor, T)
        if cell is None or result["measured"][cell][0] or result["curves"][cell]["reward"].shape[1] < 2 * T:
            return None
        reward = result["curves"][cell]["reward"]  # a diverged run logs reward 0, never nan (`Runs`), as `measured_cells` reads it
        gains.append(float(reward[:, T:2 * T].mean() - reward[:, :T].mean()))
    return gains[0], gains[1]


def flat_forecast(fc) -> float:
    """The naive final-reward forecast: the pilot's last HELD_STEPS rewards' mean, held at every cell (nan where
    the pilot's log had no reward series)."""
    return held_reward(fc.pilot[1]) if fc.pilot is not None else math.nan  # 256 responses at N G = 32


def log_time(step) -> np.ndarray:
    """The fit's time of a log's 0-based step: 1-based, as the pilot's log is fitted (`predict.pilot_forecast`)."""
    return np.asarray(step, dtype=float) + 1.0


