"""Calibration of diagnose's confidences: what 0.9 means is measured, not assumed.

Each check maps its evidence to a raw confidence c with a logistic of the excess over its threshold
(`_verdict.confidence`); those scales were set by hand, so c is a ranking, not a probability. The
reported confidence is Platt's (1999) recalibration of it,

    q = sigma(a logit(c) + b),       sigma(x) = 1 / (1 + e^-x),   logit(c) = log(c / (1 - c)),

with (a, b) fitted by maximum likelihood to whether the primary verdict was right on labelled logs
(`fit_platt`). It is monotone for a > 0, so the ranking of the verdicts, and with it the primary,
is unchanged; only what the numbers claim changes. CALIBRATION holds the fit on all three generator
families (`python paper_repro/diagnose_generalisation.py` prints it); the leave-one-family-out
claim refits it without the left-out family each time.
"""

from __future__ import annotations

import math

import numpy as np

CALIBRATION = (1.0, 0.0)  # (a, b): identity until fitted; see the module docstring
CLIP = 1e-6  # raw confidences are clipped to [CLIP, 1 - CLIP] before the logit (1.0 is common)


def _logit(c) -> np.ndarray:
    c = np.clip(np.asarray(c, dtype=float), CLIP, 1.0 - CLIP)
    return np.log(c) - np.log1p(-c)


def calibrate(c: float, ab: tuple[float, float] | None = None) -> float:
    """q = sigma(a logit(c) + b) for one raw confidence c (CALIBRATION unless `ab` is given)."""
    a, b = CALIBRATION if ab is None else ab
    x = a * float(_logit(c)) + b
    return 1.0 / (1.0 + math.exp(-x)) if x > -700 else 0.0


def fit_platt(raw, right, *, iterations: int = 100) -> tuple[float, float]:
    """Maximum-likelihood (a, b) of P(right) = sigma(a logit(c) + b), by Newton's method on the
    log-likelihood sum_i y_i log q_i + (1 - y_i) log(1 - q_i), with a tiny ridge (1e-6) so that
    separable data (every verdict right) gives a finite answer."""
    x = _logit(raw)
    y = np.asarray(right, dtype=float)
    X = np.column_stack([x, np.ones_like(x)])  # (n, 2)
    w = np.array([1.0, 0.0])
    for _ in range(iterations):
        q = 1.0 / (1.0 + np.exp(-np.clip(X @ w, -700, 700)))
        grad = X.T @ (y - q) - 1e-6 * w
        hess = -(X.T * (q * (1 - q))) @ X - 1e-6 * np.eye(2)
        step = np.linalg.solve(hess, grad)
        w = w - step
        if np.max(np.abs(step)) < 1e-10:
            break
    return float(w[0]), float(w[1])
