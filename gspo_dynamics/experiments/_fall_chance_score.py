"""The chance one run falls (`predict.fall_chance`) judged as a forecast of held-out rounds of runs.

A cell is a tuple (round index, task, lr factor, T, margin m, falls k, seeds n). Each round from the second on is
forecast with (a, b) of `predict.fall_chance` fitted on the earlier rounds' cells only (rolling origin,
`rolling_origin`), and scored by the per-run Brier score

    B = sum_cells [k (1 - P)^2 + (n - k) P^2] / sum_cells n                                       (1)

(`brier_score`, P the forecast chance), against two forecasts without the model (`fall_chance_baselines`): the
earlier rounds' fall rate, and a lookup of the task's earlier cells at the cell's lr factor and T, (k + rate) /
(n + 1) (one pseudo-run toward the rate; the rate where none ran). Reliability: the forecast chance against the
share of seeds that fell, in tenths of the chance (`reliability`). paper_repro/pilot_forecast.py judges its
protocol's rounds with these (paper_repro/_fall_chance_report.py).
"""

from __future__ import annotations

import collections

import numpy as np

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.predict import fall_chance, fit_fall_chance


def brier_score(p, k, n) -> float:
    """(1) for chances p of cells with k of n seeds fallen."""
    p, k, n = (np.asarray(v, dtype=float) for v in (p, k, n))
    return float(np.sum(k * (1 - p) ** 2 + (n - k) * p**2) / n.sum())


def rolling_origin(cells: list[tuple]) -> dict[str, np.ndarray] | None:
    """Per forecast cell of rounds 1.. (those with an earlier round): its chance by `fall_chance` fitted on the
    earlier rounds ("model"), the earlier rounds' rate ("rate"), the lookup ("lookup"), its falls k and seeds n
    and its round; None with fewer than two rounds; a round whose earlier cells admit no fit (a small --only
    subset: `fit_fall_chance`'s ConfigError) goes unscored."""
    rounds = sorted({c[0] for c in cells})
    if len(rounds) < 2:
        return None
    rows = collections.defaultdict(list)
    for r in rounds[1:]:
        train, test = [c for c in cells if c[0] < r], [c for c in cells if c[0] == r]
        try:
            coefficients = fit_fall_chance([c[4] for c in train], [c[5] for c in train], [c[6] for c in train])
        except ConfigError:  # too few earlier cells to fit (a --only subset): this round goes unscored
            continue
        rows["model"] += [float(fall_chance(c[4], coefficients)) for c in test]
        for key, v in zip(("rate", "lookup"), fall_chance_baselines(train, test)):
            rows[key] += v
        rows["k"] += [c[5] for c in test]
        rows["n"] += [c[6] for c in test]
        rows["round"] += [r] * len(test)
    return {key: np.asarray(v, dtype=float) for key, v in rows.items()}


def fall_chance_baselines(train: list[tuple], test: list[tuple]) -> tuple[list[float], list[float]]:
    """Per cell of `test`, the two forecasts without the model from the cells of `train` (module docstring): the
    fall rate of all their seeds, and the lookup (k + rate) / (n + 1) of the task's seeds at the cell's lr factor
    and T (k of n fell there; the rate where none ran)."""
    rate = sum(c[5] for c in train) / sum(c[6] for c in train)
    seen = collections.defaultdict(lambda: [0, 0])
    for c in train:
        seen[c[1:4]][0] += c[5]
        seen[c[1:4]][1] += c[6]
    lookup = [(seen[c[1:4]][0] + rate) / (seen[c[1:4]][1] + 1) if c[1:4] in seen else rate for c in test]
    return [rate] * len(test), lookup


def reliability(p: np.ndarray, k: np.ndarray, n: np.ndarray) -> list[tuple[float, float, float, int]]:
    """(bin's lower edge, mean chance, share fallen, seeds) per tenth of the chance that holds a cell, seed-weighted."""
    out = []
    which = np.minimum((p * 10).astype(int), 9)
    for b in range(10):
        s = which == b
        if s.any():
            out.append((b / 10, float(np.average(p[s], weights=n[s])), float(k[s].sum() / n[s].sum()), int(n[s].sum())))
    return out
