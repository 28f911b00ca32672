"""Version 12's final reward (paper_repro/pilot_forecast.py's docstring): the task's prior of earlier rounds leaning
toward the cells of combinations with the cell's objective and step, `predict._prior` (4), read exactly as `predict
--prior` reads finished runs beside their configs:

    m_0 = mean F_0,   m_k = (sum F_k + kappa m_{k-1}) / (|F_k| + kappa),   k = 1, 2,   kappa = VERSION_12_KAPPA

F_0 the final rewards of the stable cells at the cell's T in the task's combinations of earlier rounds, F_1 those
of them whose config names the cell's loss (our trainer's objective, `predict.RunSetup.loss`), F_2 those of F_1
with the cell's optimizer (by name) and lr. Each earlier stable cell stands for one finished run
(`predict._prior.PriorRun`) and goes through `predict._prior.matched_levels` and `shrunk_level`, the tool's own functions;
kappa is the one version 12 froze, whatever predict._prior.SHRINKAGE becomes.

Stays beside pilot_forecast.py with `_task_prior` (its rounds and the protocol's SHRUNK_ROLES, VERSION_12_KAPPA; it
reads predict._prior's private PriorRun, matched_levels, shrunk_level, interval_about).
"""

from __future__ import annotations

import dataclasses
import math

from _pilot_protocol import SHRUNK_ROLES, VERSION_12_KAPPA
from _task_prior import ROUNDS, _stable_finals, earlier_combinations, plateau_error, reach

from gspo_dynamics.experiments import PLATEAU_TOL, forecast_final_reward
from gspo_dynamics.predict._prior import LEVEL, PriorRun, interval_about, matched_levels, shrunk_level


def shrunk_rows(results: dict, roles: dict, name: str) -> list[tuple]:
    """(T, version 12's forecast, ours (the pilot's curve), version 10's prior, measured final, (lo, hi) of predict._prior
    (3)'s half-width about version 12's forecast or None) per stable cell; a prior nan where no earlier stable cell
    has the cell's T (and the interval None under two)."""
    fc = results[name]["forecast"]
    setup = fc.config.setup
    runs_at = {}  # T -> the earlier stable cells as finished runs
    for other in earlier_combinations(results, roles, name):
        hp = results[other]["forecast"].config.setup
        for lr, T, final in _stable_finals(results[other]):
            runs_at.setdefault(T, []).append(
                PriorRun(source=other, points=0, end=final, lost=False, key=(hp.loss, hp.hparams.optimizer.name, lr)))
    rows = []
    for lr, T, final in _stable_finals(results[name]):
        runs = runs_at.get(T, [])
        at_lr = dataclasses.replace(setup, hparams=dataclasses.replace(setup.hparams, lr=lr))
        level = shrunk_level(matched_levels(runs, at_lr), VERSION_12_KAPPA) if runs else None
        v10 = sum(r.end for r in runs) / len(runs) if runs else math.nan
        interval = None if level is None else interval_about([r.end for r in runs], level)
        rows.append((T, math.nan if level is None else level, forecast_final_reward(fc, lr / setup.hparams.lr, T), v10,
                     final, interval))
    return rows


def shrunk_plateau_error(results: dict, roles: dict, name: str) -> tuple[float, int] | None:
    """Version 12's final-reward error of `name` and how many of its stable cells fell back to ours
    (`_task_prior.plateau_error`); None without an earlier combination of its task."""
    if not earlier_combinations(results, roles, name):
        return None
    return plateau_error([(level, ours, final) for _, level, ours, _, final, _ in shrunk_rows(results, roles, name)])


def shrunk_reach(results: dict, roles: dict, first: str = "confirm-5") -> str:
    """From round `first` on, the combinations whose every stable cell version 12's forecast puts within PLATEAU_TOL,
    against version 10's prior on the same cells: before SHRUNK_ROLES (in sample: kappa and the levels were chosen
    there) and on them (held out); "" without such a combination."""
    parts = []
    for label, keep in (("in sample", lambda role: ROUNDS.index(first) <= ROUNDS.index(role) < ROUNDS.index(SHRUNK_ROLES[0])),
                        ("held out", lambda role: role in SHRUNK_ROLES)):
        table = {name: rows for name in results if keep(roles[name])
                 for rows in [shrunk_rows(results, roles, name)] if rows and all(math.isfinite(r[1]) for r in rows)}
        if table:
            v12, v10 = reach(table, 1, lambda T: True), reach(table, 3, lambda T: True)
            held = [lo <= row[4] <= hi for rows in table.values() for row in rows if row[5] for lo, hi in [row[5]]]
            parts.append(f"{label} ({', '.join(sorted({roles[n] for n in table}, key=ROUNDS.index))}): {v12[0]} of "
                         f"{v12[1]} combinations ({v12[2]:.0%} of their stable cells), version 10's prior {v10[0]} "
                         f"({v10[2]:.0%}); (3)'s {LEVEL:.0%} half-width about it held {sum(held)} of {len(held)} cells")
    return (f"Version 12's final reward (the task's prior of earlier rounds shrunk toward the cells with the cell's "
            f"objective and then its optimizer and lr, predict._prior (4), kappa {VERSION_12_KAPPA:g}), every stable cell "
            f"within {PLATEAU_TOL}: " + "; ".join(parts) + " (`shrunk_reach`)." if parts else "")
