"""Version 12's final reward (paper_repro/pilot_forecast.py's docstring): the task's prior of earlier rounds leaning
toward the cells of combinations with the cell's objective and step, `fit._prior` (4), read exactly as `predict
--prior` reads finished runs beside their configs:

    m_0 = mean F_0,   m_k = (sum F_k + kappa m_{k-1}) / (|F_k| + kappa),   k = 1, 2,   kappa = fit._prior.SHRINKAGE

F_0 the final rewards of the stable cells at the cell's T in the task's combinations of earlier rounds, F_1 those
of them whose config names the cell's loss (our trainer's objective, `predict.RunSetup.loss`), F_2 those of F_1
with the cell's optimizer and lr. Each earlier stable cell stands for one finished run (`fit._prior.PriorRun`) and
goes through `fit._prior.matched_levels` and `shrunk_level`, the tool's own functions.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from _pilot_scores import PLATEAU_TOL, forecast_final_reward
from _task_prior import ROUNDS, _stable_finals, task_prior

from gspo_dynamics.fit._prior import PriorRun, matched_levels, shrunk_level


def _earlier(results: dict, roles: dict, name: str) -> list[str]:
    """The combinations of `name`'s task from rounds before its own."""
    task, rank = results[name]["task"], ROUNDS.index(roles[name])
    return [n for n, r in results.items() if r["task"] == task and ROUNDS.index(roles[n]) < rank]


def shrunk_rows(results: dict, roles: dict, name: str) -> list[tuple[int, float, float, float]]:
    """(T, version 12's forecast or nan where no earlier stable cell has its T, ours (the pilot's curve), measured
    final) per stable cell."""
    earlier = _earlier(results, roles, name)
    fc = results[name]["forecast"]
    setup = fc.config.setup
    rows = []
    for lr, T, final in _stable_finals(results[name]):
        runs = []
        for other in earlier:
            hp = results[other]["forecast"].config.setup
            runs += [PriorRun(source=other, points=0, end=f, lost=False, key=(hp.loss, hp.hparams.optimizer.name, lr2))
                     for lr2, T2, f in _stable_finals(results[other]) if T2 == T]
        level = shrunk_level(matched_levels(runs, _at_lr(setup, lr))) if runs else None
        rows.append((T, math.nan if level is None else level, forecast_final_reward(fc, lr / setup.hparams.lr, T), final))
    return rows


def _at_lr(setup, lr: float):
    """`setup` at the cell's lr (its loss and optimizer the pilot's)."""
    return dataclasses.replace(setup, hparams=dataclasses.replace(setup.hparams, lr=lr))


def shrunk_plateau_error(results: dict, roles: dict, name: str) -> tuple[float, int] | None:
    """(the largest |forecast - final| over the stable cells, how many fell back to ours) as
    `_task_prior.prior_plateau_error` gives version 10's; None without an earlier combination of the task."""
    if not _earlier(results, roles, name):
        return None
    rows = shrunk_rows(results, roles, name)
    errors = [abs((level if math.isfinite(level) else ours) - final) for _, level, ours, final in rows]
    return (float(max(errors)) if errors else math.nan), sum(not math.isfinite(row[1]) for row in rows)


def shrunk_reach(results: dict, roles: dict, first: str = "confirm-5") -> str:
    """Rolling origin from round `first` on: the combinations whose every stable cell version 12's forecast puts within
    PLATEAU_TOL, against version 10's prior on the same cells; "" without such a combination."""
    met = {"12": 0, "10": 0}
    n = 0
    hits = {"12": [], "10": []}
    for name in results:
        if ROUNDS.index(roles[name]) < ROUNDS.index(first):
            continue
        rows = shrunk_rows(results, roles, name)
        flat = task_prior(results, roles, names=(name,)).get(name, [])
        if not rows or not all(math.isfinite(r[1]) for r in rows) or not all(math.isfinite(r[1]) for r in flat):
            continue
        n += 1
        for label, errors in (("12", [abs(r[1] - r[3]) for r in rows]), ("10", [abs(r[1] - r[4]) for r in flat])):
            met[label] += max(errors) <= PLATEAU_TOL
            hits[label] += [e <= PLATEAU_TOL for e in errors]
    if not n:
        return ""
    return (f"Version 12's final reward (the task's prior of earlier rounds shrunk toward the cells with the cell's "
            f"objective and then its optimizer and lr, fit._prior (4), kappa 2), rolling origin from {first}: every stable "
            f"cell within {PLATEAU_TOL} on {met['12']} of {n} combinations ({np.mean(hits['12']):.0%} of their stable "
            f"cells), version 10's prior on {met['10']} ({np.mean(hits['10']):.0%}); in sample before confirm-14, where "
            "kappa and the levels were chosen (`shrunk_reach`).")
