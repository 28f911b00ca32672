"""What a pilot cannot see of the final reward, and what the task's other runs can (paper_repro/pilot_forecast.py's
versions 10 and 12), read on a grid of (lr, T) cells per combination of task and setup.

A stable cell's final reward (the seed mean of its last PLATEAU_STEPS steps) is forecast here by the task's
prior: the mean final reward of the stable cells at the same refresh interval T in the *other* combinations of the
same task (leave one combination out),

    F(c, lr, T) = mean { final(c', lr', T) : c' != c, task(c') = task(c), (lr', T) stable in c' },

and, prospectively, from the combinations of earlier protocol rounds only (a prior that existed before the
combination was run: the order of `rounds`, each combination's round in `roles`; the first round has none).
Scored as `final_reward_reach` scores ours: a combination meets the final-reward target when every stable cell
lies within PLATEAU_TOL, with and without the cells of the largest T of all the grids (every shipped grid has the
same T values). A reading of the measured cells, not a forecaster of the protocol: it uses other combinations'
measured grids, which a pilot-only forecast does not have.

Version 12's final reward (`shrunk_rows`): the task's prior of earlier rounds leaning toward the cells of
combinations with the cell's objective and step, `predict._prior` (4), read exactly as `predict --prior` reads
finished runs beside their configs:

    m_0 = mean F_0,   m_k = (sum F_k + kappa m_{k-1}) / (|F_k| + kappa),   k = 1, 2

F_0 the final rewards of the stable cells at the cell's T in the task's combinations of earlier rounds, F_1 those
of them whose config names the cell's loss (our trainer's objective, `predict.RunSetup.loss`), F_2 those of F_1
with the cell's optimizer (by name) and lr. Each earlier stable cell stands for one finished run
(`predict.PriorRun`) and goes through `predict.matched_levels` and `shrunk_level`, the tool's own functions;
kappa is passed in (the protocol's frozen one, whatever predict's SHRINKAGE becomes).
"""

from __future__ import annotations

import collections
import dataclasses
import math

import numpy as np

from gspo_dynamics.experiments._forecast_scores import PLATEAU_TOL, flat_forecast, forecast_final_reward
from gspo_dynamics.predict import PRIOR_LEVEL, PriorRun, interval_about, matched_levels, prior_interval, shrunk_level


def _stable_finals(result: dict) -> list[tuple[float, int, float]]:
    """(lr, T, final reward) of a combination's stable cells."""
    return [(lr, T, m[2]) for (lr, T), m in result["measured"].items() if not m[0]]


def task_prior_rows(results: dict, roles: dict | None = None, names=None, *, rounds=()) -> dict:
    """name -> [(T, prior forecast or nan, ours, flat, measured final, the prior's prediction interval (lo, hi) or
    None)] per stable cell, the interval `predict.prior_interval` (predict._prior (3)) of the other combinations' finals as
    `predict --prior` gives it from finished runs. `roles` (name -> round, `rounds` their order): the prior from earlier rounds'
    combinations only; None: from every other combination of the task. `names`: the combinations to forecast
    (default: every one; each still reads the others)."""
    by_task_T = collections.defaultdict(list)  # (task, T) -> [(name, final)]
    for name, result in results.items():
        for _, T, final in _stable_finals(result):
            by_task_T[result["task"], T].append((name, final))
    out = {}
    for name in results if names is None else names:
        result = results[name]
        fc = result["forecast"]
        lr_pilot, flat = fc.config.setup.hparams.lr, flat_forecast(fc)
        rows = []
        for lr, T, final in _stable_finals(result):
            others = [f for other, f in by_task_T[result["task"], T] if other != name
                      and (roles is None or rounds.index(roles[other]) < rounds.index(roles[name]))]
            prior = float(np.mean(others)) if others else math.nan
            interval = prior_interval(others)
            rows.append((T, prior, forecast_final_reward(fc, lr / lr_pilot, T), flat, final,
                         None if interval is None else interval[1:]))
        if rows:
            out[name] = rows
    return out


def earlier_combinations(results: dict, roles: dict, name: str, *, rounds) -> list[str]:
    """The combinations in `results` of `name`'s task from rounds before its own (`roles`: name -> round, `rounds`
    their order)."""
    task, rank = results[name]["task"], rounds.index(roles[name])
    return [n for n, r in results.items() if r["task"] == task and rounds.index(roles[n]) < rank]


def plateau_error(rows) -> tuple[float, int]:
    """(the largest |forecast - measured final| over (forecast or nan, ours, final) rows, each forecast falling back
    to ours where nan; how many fell back); nan without a row."""
    errors = [abs((forecast if math.isfinite(forecast) else ours) - final) for forecast, ours, final in rows]
    return (float(max(errors)) if errors else math.nan), sum(not math.isfinite(row[0]) for row in rows)


def prior_plateau_error(results: dict, roles: dict, name: str, *, rounds) -> tuple[float, int] | None:
    """Version 10's final-reward ("plateau") error of combination `name` (pilot_forecast.py's docstring) and how
    many of its stable cells fell back to ours (`plateau_error`): each forecast the task's prior from the
    combinations of earlier rounds in `results` at the cell's T (`task_prior_rows`), ours (the pilot's curve) at a T
    where none of them has a stable cell; None when no earlier combination of its task is in `results`."""
    if not earlier_combinations(results, roles, name, rounds=rounds):
        return None
    rows = task_prior_rows(results, roles, names=(name,), rounds=rounds).get(name, [])
    return plateau_error([(prior, ours, final) for _, prior, ours, _, final, _ in rows])


def reach(table: dict, who: int, keep) -> tuple[int, int, float]:
    """(combinations with every kept stable cell within PLATEAU_TOL, combinations with a kept cell, share of kept
    cells within) for column `who` of `task_prior_rows`'s rows (1 prior, 2 ours, 3 flat)."""
    met = n = 0
    hits = []
    for rows in table.values():
        errors = [abs(row[who] - row[4]) for row in rows if keep(row[0])]
        if errors:
            n += 1
            met += max(errors) <= PLATEAU_TOL
            hits += [e <= PLATEAU_TOL for e in errors]
    return met, n, float(np.mean(hits)) if hits else math.nan


def task_prior_reach(results: dict, roles: dict, *, rounds) -> str:
    """The final-reward target met by the task's prior, leave one combination out and from earlier rounds, next to
    ours and the naive forecast on the same cells; the stable cells' final reward by task and T (`levels`). ""
    without a stable cell, or where no task has two combinations."""
    def having_prior(table: dict) -> dict:  # the combinations whose every stable cell has a prior
        return {name: rows for name, rows in table.items() if all(math.isfinite(row[1]) for row in rows)}

    table = task_prior_rows(results)
    loo = having_prior(table)
    if not loo:
        return ""
    largest = max(T for rows in loo.values() for T, *_ in rows)
    parts = []
    for label, keep in (("all", lambda T: True), (f"T < {largest}", lambda T: T < largest)):
        prior, ours, flat = (reach(loo, who, keep) for who in (1, 2, 3))
        if not prior[1]:  # no combination has a stable cell below the largest T
            continue
        parts.append(f"{label}: the prior {prior[0]}, ours {ours[0]}, the naive forecast {flat[0]} of {prior[1]} "
                     f"combinations ({prior[2]:.0%} / {ours[2]:.0%} / {flat[2]:.0%} of their stable cells)")
    cover = coverage(loo)
    earlier = having_prior(task_prior_rows(results, roles, rounds=rounds))
    ahead = [f"from earlier rounds only ({len(earlier)} combinations with a prior): the prior {reach(earlier, 1, lambda T: True)[0]}, "
             f"ours {reach(earlier, 2, lambda T: True)[0]}"] if earlier else []
    return ("What the pilot cannot see (`task_prior_reach`): a stable cell's final reward forecast as the mean final "
            "reward of the stable cells at its T in the task's other combinations (leave one combination out; a "
            "reading of other grids, not a pilot forecast) meets the final-reward target on " + "; ".join(parts + ahead)
            + (f". {cover}" if cover else "")
            + f". The stable cells' final reward by task and T, mean (sd) over the cells, and the mean signed error of "
            f"ours / the naive forecast there: {levels(results, table)}: set by the task and T more than by the hyperparameters."
            + regime_lookup(results, roles, rounds=rounds))


def regime_lookup(results: dict, roles: dict, *, rounds) -> str:
    """The regime the same way: each cell forecast unstable when most of the task's combinations of earlier rounds
    were unstable at its lr factor and T (a lookup of earlier grids, no theory), against ours on the same cells;
    "" where no cell has an earlier one."""
    seen = collections.defaultdict(list)  # (task, lr factor, T) -> [(round, unstable)]
    for name, result in results.items():
        lr_pilot = result["forecast"].config.setup.hparams.lr
        for (lr, T), m in result["measured"].items():
            seen[result["task"], round(lr / lr_pilot, 6), T].append((rounds.index(roles[name]), bool(m[0])))
    right = collections.Counter()
    for name, result in results.items():
        lr_pilot, rank = result["forecast"].config.setup.hparams.lr, rounds.index(roles[name])
        for (lr, T), m in result["measured"].items():
            earlier = [u for r, u in seen[result["task"], round(lr / lr_pilot, 6), T] if r < rank]
            if earlier:
                lookup, ours, unstable = bool(np.mean(earlier) > 0.5), bool(result["predicted"][(lr, T)]), bool(m[0])
                right.update({"cells": 1, "lookup": int(lookup == unstable), "ours": int(ours == unstable),
                              "lookup missed": int(unstable and not lookup), "ours missed": int(unstable and not ours)})
    if not right["cells"]:
        return ""
    n = right["cells"]
    return (f" The regime read the same way, a lookup of the task's earlier rounds (a cell unstable when most earlier "
            f"combinations were unstable at its lr factor and T; no theory): {right['lookup'] / n:.1%} of {n} cells right, "
            f"{right['lookup missed']} safe but unstable, against ours' {right['ours'] / n:.1%} and {right['ours missed']} "
            "on the same cells (`regime_lookup`).")


def coverage(table: dict) -> str:
    """How often the prior's prediction interval (predict._prior (3), `predict --prior`) held a stable cell's measured
    final reward, overall and by T, with its median half-width; "" without an interval."""
    by_T = collections.defaultdict(list)  # T -> [(covered, half-width)]
    for rows in table.values():
        for T, _, _, _, final, interval in rows:
            if interval is not None:
                by_T[T].append((interval[0] <= final <= interval[1], (interval[1] - interval[0]) / 2))
    if not by_T:
        return ""
    every = [c for v in by_T.values() for c, _ in v]
    parts = ", ".join(f"T = {T} {np.mean([c for c, _ in v]):.0%} (half-width {np.median([h for _, h in v]):.3f})"
                      for T, v in sorted(by_T.items()))
    return (f"The prior's {PRIOR_LEVEL:.0%} prediction interval (`predict --prior`, predict._prior (3), from the same other "
            f"combinations' finals) held {np.mean(every):.1%} of {len(every)} stable cells' final reward: {parts}")


def levels(results: dict, table: dict) -> str:
    """Per task and T: the stable cells' final reward, mean (sd), and ours' and the naive forecast's mean signed
    error on them (`table`: `task_prior_rows`'s rows of `results`)."""
    cells = collections.defaultdict(list)  # (task, T) -> [(ours - final, flat - final, final)]
    for name, rows in table.items():
        for T, _, ours, flat, final, _ in rows:
            cells[results[name]["task"], T].append((ours - final, flat - final, final))
    by_task = collections.defaultdict(list)
    for (task, T), v in sorted(cells.items()):
        a = np.array(v)
        by_task[task].append(f"T = {T} {a[:, 2].mean():.2f} ({a[:, 2].std():.2f}; {a[:, 0].mean():+.2f} / "
                             f"{a[:, 1].mean():+.2f}, {len(a)} cell{'s' * (len(a) != 1)})")
    return "; ".join(f"{task}: " + ", ".join(parts) for task, parts in sorted(by_task.items()))


def shrunk_rows(results: dict, roles: dict, name: str, *, rounds, kappa: float) -> list[tuple]:
    """(T, version 12's forecast, ours (the pilot's curve), version 10's prior, measured final, (lo, hi) of predict._prior
    (3)'s half-width about version 12's forecast or None) per stable cell; a prior nan where no earlier stable cell
    has the cell's T (and the interval None under two)."""
    fc = results[name]["forecast"]
    setup = fc.config.setup
    runs_at = {}  # T -> the earlier stable cells as finished runs
    for other in earlier_combinations(results, roles, name, rounds=rounds):
        hp = results[other]["forecast"].config.setup
        for lr, T, final in _stable_finals(results[other]):
            runs_at.setdefault(T, []).append(
                PriorRun(source=other, points=0, end=final, lost=False, key=(hp.loss, hp.hparams.optimizer.name, lr)))
    rows = []
    for lr, T, final in _stable_finals(results[name]):
        runs = runs_at.get(T, [])
        at_lr = dataclasses.replace(setup, hparams=dataclasses.replace(setup.hparams, lr=lr))
        level = shrunk_level(matched_levels(runs, at_lr), kappa) if runs else None
        v10 = sum(r.end for r in runs) / len(runs) if runs else math.nan
        interval = None if level is None else interval_about([r.end for r in runs], level)
        rows.append((T, math.nan if level is None else level, forecast_final_reward(fc, lr / setup.hparams.lr, T), v10,
                     final, interval))
    return rows


def shrunk_plateau_error(results: dict, roles: dict, name: str, *, rounds, kappa: float) -> tuple[float, int] | None:
    """Version 12's final-reward error of `name` and how many of its stable cells fell back to ours
    (`plateau_error`); None without an earlier combination of its task."""
    if not earlier_combinations(results, roles, name, rounds=rounds):
        return None
    rows = shrunk_rows(results, roles, name, rounds=rounds, kappa=kappa)
    return plateau_error([(level, ours, final) for _, level, ours, _, final, _ in rows])


def shrunk_reach(results: dict, roles: dict, *, rounds, held_out, kappa: float, first: str = "confirm-5") -> str:
    """From round `first` on, the combinations whose every stable cell version 12's forecast puts within PLATEAU_TOL,
    against version 10's prior on the same cells: before the rounds `held_out` (in sample: kappa and the levels were
    chosen there) and on them; "" without such a combination."""
    parts = []
    for label, keep in (("in sample", lambda role: rounds.index(first) <= rounds.index(role) < rounds.index(held_out[0])),
                        ("held out", lambda role: role in held_out)):
        table = {name: rows for name in results if keep(roles[name])
                 for rows in [shrunk_rows(results, roles, name, rounds=rounds, kappa=kappa)] if rows and all(math.isfinite(r[1]) for r in rows)}
        if table:
            v12, v10 = reach(table, 1, lambda T: True), reach(table, 3, lambda T: True)
            held = [lo <= row[4] <= hi for rows in table.values() for row in rows if row[5] for lo, hi in [row[5]]]
            parts.append(f"{label} ({', '.join(sorted({roles[n] for n in table}, key=rounds.index))}): {v12[0]} of "
                         f"{v12[1]} combinations ({v12[2]:.0%} of their stable cells), version 10's prior {v10[0]} "
                         f"({v10[2]:.0%}); (3)'s {PRIOR_LEVEL:.0%} half-width about it held {sum(held)} of {len(held)} cells")
    return (f"Version 12's final reward (the task's prior of earlier rounds shrunk toward the cells with the cell's "
            f"objective and then its optimizer and lr, predict._prior (4), kappa {kappa:g}), every stable cell "
            f"within {PLATEAU_TOL}: " + "; ".join(parts) + " (`shrunk_reach`)." if parts else "")
