"""Calibration of diagnose's confidences: what 0.9 means is measured, not assumed.

Each check maps its evidence to a raw confidence c with a logistic of the excess over its threshold
(`_verdict.confidence`); those scales were set by hand, so c is a ranking, not a probability. The
reported confidence is Platt's (1999) recalibration of it,

    q = sigma(a logit(c) + b),       sigma(x) = 1 / (1 + e^-x),   logit(c) = log(c / (1 - c)),

with (a, b) fitted by maximum likelihood to whether the primary verdict was right on labelled logs
(`fit_platt`), constrained to 0 < a <= 1, b <= 0: it can pull confidences towards 1/2 and shift them
down, never push them towards certainty. It is monotone for a > 0, so the ranking of the verdicts, and with it the primary,
is unchanged; only what the numbers claim changes. CALIBRATION holds the fit on all four labelled
families (`python paper_repro/diagnose_generalisation.py` prints it); the leave-one-family-out
claim refits it without the left-out family each time.
"""

from __future__ import annotations

import math

import numpy as np

# (a, b) fitted on all four labelled families (the 590000 / 160 / 790000 run of
# paper_repro/diagnose_generalisation.py, with the TRL family): raw 0.99 -> 0.988, 0.9 -> 0.89, 0.7 -> 0.69
CALIBRATION = (0.96, 0.0)
CLIP = 1e-6  # raw confidences are clipped to [CLIP, 1 - CLIP] before the logit (1.0 is common)
A_GRID = np.linspace(0.02, 1.0, 50)  # slope of the map: steps of 0.02
B_GRID = np.linspace(-5.0, 0.0, 101)  # offset: steps of 0.05


def _logit(c) -> np.ndarray:
    c = np.clip(np.asarray(c, dtype=float), CLIP, 1.0 - CLIP)
    return np.log(c) - np.log1p(-c)


def calibrate(c: float, ab: tuple[float, float] | None = None) -> float:
    """q = sigma(a logit(c) + b) for one raw confidence c (CALIBRATION unless `ab` is given)."""
    a, b = CALIBRATION if ab is None else ab
    x = a * float(_logit(c)) + b
    return 1.0 / (1.0 + math.exp(-x)) if x > -700 else 0.0


def fit_platt(raw, right) -> tuple[float, float]:
    """Maximum-likelihood (a, b) of P(right) = sigma(a logit(c) + b), over A_GRID x B_GRID:

        max  sum_i y_i log q_i + (1 - y_i) log(1 - q_i),   0 < a <= 1,  b <= 0.

    The constraint lets the map only shrink confidences towards 1/2 or shift them down, never towards
    certainty: labelled families on which every verdict happened to be right are no reason to claim more than the
    evidence's own scale (an unconstrained fit then runs to a -> infinity, every confidence to 1)."""
    x = _logit(raw)[:, None]  # (n, 1)
    y = np.asarray(right, dtype=float)[:, None]
    loglik = np.empty((A_GRID.size, B_GRID.size))
    for i, a in enumerate(A_GRID):  # one (n, B) slab at a time: memory O(n B)
        z = a * x + B_GRID[None, :]
        # log sigma(z) = -log(1 + e^-z), log(1 - sigma(z)) = -log(1 + e^z), computed stably
        loglik[i] = -(y * np.logaddexp(0.0, -z) + (1.0 - y) * np.logaddexp(0.0, z)).sum(axis=0)
    i, j = np.unravel_index(int(np.argmax(loglik)), loglik.shape)
    return float(A_GRID[i]), float(B_GRID[j])
