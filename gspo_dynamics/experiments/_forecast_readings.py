"""Readings of a pilot-forecast grid (paper_repro/pilot_forecast.py's RESULTS.md section), each a measurement of
the cells rather than a forecaster, returned as the sentence the section prints ("" where it has nothing to say):
how far the final-reward target is from reach (`final_reward_reach`: ours, the naive forecast, the best single
number), how a stale window's progress follows the lr (`window_progress`), where the pilot's lr stands
(`pilot_plateau_gap`), what an exact forecast of the seed mean could reach (`exact_forecast_reach`:
P = erf(PLATEAU_TOL / (se sqrt 2)) per stable cell) and what a pilot of the cell itself would (`own_pilot_reach`).
"""

from __future__ import annotations

import collections
import math

import numpy as np

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.experiments._forecast_scores import (
    PLATEAU_STEPS,
    PLATEAU_TOL,
    STEPS,
    first_window_gains,
    flat_forecast,
    forecast_final_reward,
    grid_cell,
    log_time,
    sampler_updates,
)
from gspo_dynamics.fit import HELD_STEPS, fit_trajectory

WINDOW_GAIN_MIN = 0.02  # `window_progress` reads a ratio of gains only where the low-lr window gained more: about
# 2 standard errors of a difference of two 4-seed x 32-step means of 32 responses each at p = 1/2, 2 x 0.5 sqrt(2 / 4096)
OWN_PILOT_T_MAX = 4  # a cell's first 24 steps hold a curve only where its sampler changes often in them (>= 6 samplers at T = 4)


def final_reward_reach(results: dict) -> str:
    """How far the final-reward target is from reach on these combinations (a reading of the measured cells,
    not a model): on how many combinations with a stable cell ours' final reward is within PLATEAU_TOL of
    every stable cell, and on how many the best single number could be (the midpoint of the stable cells'
    final rewards, which knows them: within PLATEAU_TOL of all when half their range is), each also without
    the cells of the largest T; and on how many the naive forecast is (`flat_forecast`)."""
    counts = collections.Counter()
    for result in results.values():
        Ts = sorted({T for _, T in result["measured"]})
        lr_pilot = result["forecast"].config.setup.hparams.lr
        flat = flat_forecast(result["forecast"])
        for label, keep in (("all", lambda T: True), ("short", lambda T: T != Ts[-1])):
            stable = [(cell, m[2]) for cell, m in result["measured"].items() if not m[0] and keep(cell[1])]
            if not stable:
                continue
            counts[label, "n"] += 1
            finals = [final for _, final in stable]
            counts[label, "oracle"] += (max(finals) - min(finals)) / 2 <= PLATEAU_TOL
            errors = [abs(forecast_final_reward(result["forecast"], lr / lr_pilot, T) - final) for (lr, T), final in stable]
            counts[label, "ours"] += max(errors) <= PLATEAU_TOL
            counts[label, "flat"] += max(abs(flat - final) for final in finals) <= PLATEAU_TOL
    if not counts["all", "n"]:
        return "No combination has a stable cell: the final-reward target is not scored."
    largest = sorted({max(T for _, T in result["measured"]) for result in results.values()})
    T_max = f"T = {largest[0]}" if len(largest) == 1 else "largest-T"  # each grid's own largest T is left out
    return (f"The final-reward target (within {PLATEAU_TOL} of every stable cell) is met by ours on {counts['all', 'ours']} "
            f"and by the naive forecast (the pilot's last {HELD_STEPS} rewards held) on {counts['all', 'flat']} of the "
            f"{counts['all', 'n']} combinations with a stable cell; the best single number per combination, chosen "
            f"knowing the measured cells, would meet it on {counts['all', 'oracle']}: the final reward differs between "
            f"stable cells of one combination by more than a forecast of one plateau can follow. Without the {T_max} "
            f"cells (a stale window ends lower): ours {counts['short', 'ours']}, the naive forecast {counts['short', 'flat']} "
            f"and the best single number {counts['short', 'oracle']} of {counts['short', 'n']} (`final_reward_reach`).")


def signed(x: float) -> str:
    """x to two decimals with its sign, "+0.00" for a value that rounds to zero (never "-0.00")."""
    return f"{round(x, 2) + 0.0:+.2f}"


def window_progress(results: dict, T: int = 32, factors: tuple[float, float] = (1 / 3, 3.0)) -> str:
    """How a stale window's progress depends on the lr (a reading of the measured cells, not a model): per task,
    over the combinations whose cells at T and both lr factors are stable and whose low-lr window gained more than
    WINDOW_GAIN_MIN (the others counted as skipped), the ratio of the first window's gain at the high lr to that at
    the low (`first_window_gains`). The forecast reads a window of T updates at lr as lr T updates of the pilot's
    curve (`pilot_time`): a ratio of factors[1] / factors[0]. Beside it, ours' mean signed final-reward error on
    the stable cells at T. "" when no combination has such cells."""
    ratios, errors, skipped = collections.defaultdict(list), collections.defaultdict(list), 0
    for result in results.values():
        gains = first_window_gains(result, T, factors)
        if gains is not None and gains[0] > WINDOW_GAIN_MIN:
            ratios[result["task"]].append(gains[1] / gains[0])
        skipped += gains is not None and not gains[0] > WINDOW_GAIN_MIN
        lr_pilot = result["forecast"].config.setup.hparams.lr
        errors[result["task"]] += [forecast_final_reward(result["forecast"], lr / lr_pilot, t) - m[2]
                                   for (lr, t), m in result["measured"].items() if t == T and not m[0]]
    if not ratios:
        return ""
    parts = "; ".join(f"{task} {np.median(r):.2f} (quartiles {np.percentile(r, 25):.2f}-{np.percentile(r, 75):.2f}, "
                      f"{len(r)} combinations)" if len(r) > 1 else f"{task} {r[0]:.2f} (one combination)"
                      for task, r in sorted(ratios.items()))
    bias = ", ".join(f"{task} {np.mean(e):+.3f} on {len(e)}" for task, e in sorted(errors.items()) if e)
    return (f"A stale window's progress hardly follows the lr: the first T = {T} window's reward gain at "
            f"{factors[1]:g} x the base lr over that at {factors[0]:.2g} x, median per task: {parts}; {skipped} "
            f"skipped (their low-lr window gaining {WINDOW_GAIN_MIN} or less). The forecast, reading a window as lr T "
            f"updates of the pilot's curve, assumes {factors[1] / factors[0]:g}. Ours' mean signed final-reward "
            f"error on the stable T = {T} cells (their final reward from the sampler after "
            f"{int(sampler_updates(STEPS - PLATEAU_STEPS, T))} updates on): {bias} (`window_progress`).")


def pilot_plateau_gap(results: dict) -> str:
    """Where the pilot stands (a reading of the measured cells, not a model): per task, on how many combinations
    the on-policy cell at the pilot's own lr (T = 1, factor 1) is unstable, and the median of the lowest lr's
    on-policy final reward minus the pilot fit's plateau R_inf, apart for the combinations whose base-lr cell
    falls and those whose holds, over those whose lowest on-policy cell lies below the pilot's lr and is stable
    (the pilot itself runs 24 steps at T = 2, not the T = 1 cell's 96). "" when no grid has the base-lr cell."""
    edge, n = collections.Counter(), collections.Counter()
    gaps = collections.defaultdict(list)  # (task, base-lr cell unstable) -> gaps
    for result in results.values():
        lr_pilot = result["forecast"].config.setup.hparams.lr
        on_policy = sorted((lr, m) for (lr, T), m in result["measured"].items() if T == 1)
        cell = grid_cell(result, 1.0, 1)
        if cell is None:
            continue
        own = result["measured"][cell]
        task = result["task"]
        n[task] += 1
        edge[task] += own[0]
        lowest_lr, lowest = on_policy[0]
        if lowest_lr < lr_pilot * (1 - 1e-6) and not lowest[0]:
            gaps[task, own[0]].append(lowest[2] - result["forecast"].fit.params["r_inf"])

    def gap(task, falls):
        g = gaps[task, falls]
        return f"{signed(float(np.median(g)))} over {len(g)}" if g else "not measured"

    parts = "; ".join(f"{task}: the base-lr cell unstable on {edge[task]} of {n[task]}; the gap {gap(task, True)} where "
                      f"it falls, {gap(task, False)} where it holds" for task in sorted(n))
    return (f"Where the pilot's lr stands: per task, the on-policy cell at the base lr (T = 1) and the lowest lr's "
            f"on-policy final reward minus the pilot fit's plateau (median): {parts} (`pilot_plateau_gap`)."
            if n else "")


def exact_forecast_chance(result: dict) -> float | None:
    """The chance that a forecast of each stable cell's expected final reward, exact, meets the final-reward
    target on one combination (a reading of the seed curves, not a model); None without a stable cell. A
    cell's measured final reward is the mean of its k seeds', so it lies within PLATEAU_TOL of the
    expectation with probability

        P = 2 Phi(PLATEAU_TOL / se) - 1 = erf(PLATEAU_TOL / (se sqrt 2)),   se = sd / sqrt(k)

    (normal; sd the seeds' own final rewards' standard deviation, ddof 1, over the seeds with a finite one; P = 1
    where they agree), and every stable cell does with at least the product of their P (Sidak's inequality:
    the cells share their seeds, so their errors may correlate, which only raises the chance). A stable cell
    with fewer than two finite seeds cannot say: None, as without a stable cell."""
    stable = [cell for cell, m in result["measured"].items() if not m[0]]
    if not stable:
        return None
    p = 1.0
    for cell in stable:
        finals = result["curves"][cell]["reward"][:, -PLATEAU_STEPS:].mean(axis=1)
        finals = finals[np.isfinite(finals)]
        if len(finals) < 2:
            return None
        se = float(np.std(finals, ddof=1)) / math.sqrt(len(finals))
        p *= math.erf(PLATEAU_TOL / (se * math.sqrt(2))) if se > 0 else 1.0
    return p


def exact_forecast_reach(results: dict) -> str:
    """The combinations an exact forecast of every stable cell's expected final reward meets the final-reward
    target on, in expectation (the sum of `exact_forecast_chance`, so at least that), of those it can say for;
    "" when it can say for none."""
    chances = [p for p in map(exact_forecast_chance, results.values()) if p is not None]
    if not chances:
        return ""
    return (f"A forecast of each stable cell's expected final reward, exact, would meet the final-reward target on "
            f"at least {sum(chances):.1f} of those {len(chances)} combinations in expectation: the seed mean's own noise "
            f"costs the rest (`exact_forecast_reach`).")


def own_pilot_errors(result: dict, pilot_steps: int) -> list[tuple[float, float, float]]:
    """(own, ours, flat) final-reward errors on one combination's stable cells with T <= OWN_PILOT_T_MAX, each
    against the final reward of the cell's seeds other than the first (the seed mean of their last PLATEAU_STEPS
    steps). Own: the cell's own pilot, its first seed's first `pilot_steps` steps at the cell's lr and T, fitted
    with `fit.fit_trajectory` and read at the final reward's steps on the same time axis (`log_time`; no lr
    scaling or sampler lag enters), clipped to [0, 1]; its starting model is the other seeds' under a shared
    start (`TrainConfig.init_seed`, protocol version 6) and its own otherwise. Ours: `forecast_final_reward` from
    the combination's base pilot. Flat: the naive forecast from the base pilot (`flat_forecast`). A cell whose own
    curve cannot be fitted (ConfigError) is left out of all three."""
    lr_pilot = result["forecast"].config.setup.hparams.lr
    flat = flat_forecast(result["forecast"])
    final_steps = np.arange(STEPS - PLATEAU_STEPS, STEPS)
    out = []
    for (lr, T), m in sorted(result["measured"].items()):
        if m[0] or T > OWN_PILOT_T_MAX:
            continue
        reward = result["curves"][(lr, T)]["reward"]
        target = float(reward[1:, -PLATEAU_STEPS:].mean())
        try:
            fit = fit_trajectory(log_time(np.arange(pilot_steps)), reward[0, :pilot_steps])
        except ConfigError:
            continue
        own = float(np.clip(fit.predict(log_time(final_steps)), 0.0, 1.0).mean())
        out.append((own - target, forecast_final_reward(result["forecast"], lr / lr_pilot, T) - target, flat - target))
    return out


def _shares(errors: np.ndarray) -> str:
    """The share of rows within PLATEAU_TOL, per column (forecaster), as "a / b / c"."""
    return " / ".join(f"{x:.0%}" for x in np.mean(np.abs(errors) <= PLATEAU_TOL, axis=0))


def own_pilot_reach(results: dict, pilot_steps: int) -> str:
    """How well a pilot of the cell itself would do and how well the naive forecast does (`own_pilot_errors`),
    next to ours on the same cells: the share of cells within PLATEAU_TOL (overall and by task) and the
    combinations with every such cell within it. It separates what extrapolating a one-seed `pilot_steps`-step
    curve to the run's end costs from what carrying it across (lr, T) costs."""
    per = {name: own_pilot_errors(result, pilot_steps) for name, result in results.items()}
    errors = np.array([e for cells in per.values() for e in cells]).reshape(-1, 3)
    if not len(errors):
        return f"No stable cell with T <= {OWN_PILOT_T_MAX}: the cells' own pilots are not scored."
    every = np.sum([np.all(np.abs(np.array(cells)) <= PLATEAU_TOL, axis=0) for cells in per.values() if cells], axis=0)
    by_task = collections.defaultdict(list)
    for name, cells in per.items():
        by_task[results[name]["task"]].extend(cells)
    tasks = "; ".join(f"{task} {_shares(np.array(c))} of {len(c)}" for task, c in sorted(by_task.items()) if c)
    median = " / ".join(f"{x:.3f}" for x in np.median(np.abs(errors), axis=0))
    return (f"On the {len(errors)} stable cells with T <= {OWN_PILOT_T_MAX}, the final reward of the cell's other seeds "
            f"within {PLATEAU_TOL}, own pilot / ours / flat: {_shares(errors)} (by task: {tasks}); every such cell of a "
            f"combination: {' / '.join(str(int(x)) for x in every)} of {sum(1 for c in per.values() if c)} combinations; "
            f"median |error| {median}. Own: a pilot of the cell itself, its first seed's first {pilot_steps} steps "
            f"at the cell's lr and T, fitted the same way; ours: carried from the base pilot; flat: the base pilot's "
            f"last {HELD_STEPS} rewards held (`own_pilot_reach`).")
