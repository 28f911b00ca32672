"""Scoring a pilot forecast against the measured grid (the protocol of paper_repro/pilot_forecast.py):
what each cell measured (regime, final reward, time to plateau), what the pilot's fitted curve forecasts
for a cell's final reward and time to plateau, and the targets each combination meets or misses."""

from __future__ import annotations

import collections
import math

import numpy as np

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.fit import COLLAPSE_SHARE, HELD_STEPS, fit_trajectory
from gspo_dynamics.predict import held_reward

STEPS = 96  # steps of a grid run
PILOT_T = 2  # the pilot's refresh interval (its stale steps measure the drift)
BLOCK = 8  # steps per mean of the seed-mean curve that times the plateau: 4 seeds x 8 steps x 32 responses
SEED_BLOCK = 16  # steps per mean of one seed's curve: 16 x 32 responses, noise <= 0.022, a fall of DRAWDOWN_MARGIN > 4 sigma
DRAWDOWN_MARGIN = 0.1  # as trainer_at_scale: a reward drop that counts as losing what the run had
WINDOW_GAIN_MIN = 0.02  # `window_progress` reads a ratio of gains only where the low-lr window gained more: about
# 2 standard errors of a difference of two 4-seed x 32-step means of 32 responses each at p = 1/2, 2 x 0.5 sqrt(2 / 4096)
PLATEAU_STEPS = 16  # the final reward: the seed mean of a run's last PLATEAU_STEPS steps
ACCURACY_MIN, SAFE_BUT_UNSTABLE_MAX, PLATEAU_TOL = 0.85, 1, 0.05  # the targets per combination
FORECASTERS = ("ours", "version 4", "continuous", "always stable")  # the targets compare ours with the last two
OWN_PILOT_T_MAX = 4  # a cell's first 24 steps hold a curve only where its sampler changes often in them (>= 6 samplers at T = 4)


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


def flat_forecast(fc) -> float:
    """The naive final-reward forecast: the pilot's last HELD_STEPS rewards' mean, held at every cell (nan where
    the pilot's log had no reward series)."""
    return held_reward(fc.pilot[1]) if fc.pilot is not None else math.nan  # 256 responses at N G = 32


def log_time(step) -> np.ndarray:
    """The fit's time of a log's 0-based step: 1-based, as the pilot's log is fitted (`predict.pilot_forecast`)."""
    return np.asarray(step, dtype=float) + 1.0


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
