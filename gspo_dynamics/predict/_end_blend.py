"""The reward at a run's end as a weighted reading of the pilot: the held level, moved toward the fitted curve, the
published laws and the curve ensemble only as far as finished real runs, the horizon and the pilot's own information
say it should.

The readings, each the mean over the run's end window (`predict._end_reward` (1)) clipped to the reward's reach:

    H   the held level, the mean of the pilot's last HELD_STEPS rewards (the naive reading)
    C   the closed-form fit's curve (`fit.fit_trajectory`); H where its plateau is extrapolated
        (`plateau_extrapolation` > fit.EXTRAPOLATION_LIMIT: the pilot does not identify it)
    S   ScaleRL's sigmoid (Khatri et al. 2025, arXiv 2510.13786; `fit.fit_sigmoid_scalerl`); H where it falls back
    E   the entropy law R = -a exp(H) + b (Cui et al. 2025, arXiv 2505.22617; `fit.fit_entropy_law`) where the pilot
        logs entropy; H elsewhere or where it falls back
    D   the parametric curve ensemble (after Domhan et al. 2015; `predict._curve_ensemble` (3))

The pilot's information: its trend in units of its noise, shrunk by a normal prior of scale Z0 (the posterior mean's
factor of a normal mean under a N(0, Z0^2) prior, James & Stein 1961):

    sigma = std(r_{i+1} - r_i) / sqrt(2),  at least NOISE_FLOOR of the reach's width                        (1)
    z = |mean(last k) - mean(first k)| / (sigma sqrt(2 / k)),  k = HELD_STEPS
    g = z^2 / (z^2 + Z0^2),   g = 0 for a pilot of fewer than 2 k points (no trend apart from the held window)   (2)

The forecast, per horizon bin b (h = the run's length / the pilot's, "near" for h <= NEAR_HORIZON, else "far"), with
each reading's weight a line in the pilot's information g (so how far the blend leaves the held level depends on how
much the pilot identifies, and is learned, not assumed):

    R = H + sum_{k in C,S,E,D} (a_{b,k} + g c_{b,k}) (F_k - H),   a, c >= 0,  sum_k (a_{b,k} + c_{b,k}) <= 1     (3)

so for every g in [0, 1] the weights are >= 0 and sum to at most 1: R lies between the held level and the readings.
The weights (a_b, c_b) minimise the scaled absolute error over finished real runs i (both pilot shares),

    (a_b, c_b) = argmin sum_i |y_i - R_i| / sigma_i,                                                         (4)

a linear program in the features x_i = [(F_i - H_i), g_i (F_i - H_i)] / sigma_i (`learn_weights`); zero weights (the
held level) are feasible, so on the runs learned from the error is at most the held level's. The sum is led by the
few runs missed by many noise units; aimed at the typical run instead, a bounded loss, the capped absolute error of
the scaled error (`learn_weights_capped`; protocol 3 of paper_repro/real_run_end_reward.py): (4) within the cap, a
fixed cost beyond it,

    (a_b, c_b) = argmin sum_i min(|e_i|, cap),   e_i = (y_i - R_i) / sigma_i,  same constraints as (3),
    cap = HAMPEL_REJECTION * MAD_NORMAL * median_i |y_i - H_i| / sigma_i                                      (4')

the cap three times the scale of the held level's errors (the residuals at zero weights); not convex, so minimised
globally: a 1/GRID_STEPS grid of the simplex (zero weights among its points), then concentration steps from its
STARTS best points.

A bin's learned weights are kept only where finished real runs say they help on repositories left out (protocol 4 of
paper_repro/real_run_end_reward.py): over the calibration's runs i of bin b, R_i^(-r_i) the forecast (3) of run i with
weights learned without run i's repository r_i,

    G_b = 1  if  median_i |y_i - R_i^(-r_i)| / sigma_i  <  median_i |y_i - H_i| / sigma_i,  else 0,
    R = H + G_b sum_k (a_{b,k} + g c_{b,k}) (F_k - H)                                                       (4g)

(`gate`; BLEND_GATE): where G_b = 0 the forecast is the held level, and (5)'s scores are the held level's. Scored by
protocol 4 (rows real-run-end-reward-4: medians 0.92 / 0.76 at 10% / 25% pilots against (4)'s 1.02 / 0.67) and, by
its rule, not shipped: every G_b is 1.

The interval: split conformal across runs (Vovk et al. 2005; Lei et al. 2018), Mondrian by horizon bin and by the
pilot's information ("flat" for g < INFO_SPLIT, else "trend"), with the scale u = sigma + max_k |F_k - H| (the noise,
plus how far the readings disagree):

    s_i = |y_i - R_i| / u_i,   q = the ceil((m + 1) 0.9)-th smallest of the group's m scores,
    band = [R - q u, R + q u] within the reach;  none where it spans NEAR_WHOLE of the reach or more        (5)

a group of fewer than BAND_MIN_GROUP scores takes its horizon bin's scores, both information groups pooled
(`mondrian_quantile`): at 0.9, m = 9 is the least that gives a finite q at all, and m < 20 puts q at one of the
group's two largest scores.

scored by the interval score of Gneiting & Raftery 2007 (JASA 102, eq. 43), a proper scoring rule:

    IS_alpha(lo, hi; y) = (hi - lo) + (2 / alpha) ((lo - y)_+ + (y - hi)_+).                                 (6)

BLEND_WEIGHTS and BAND_QUANTILES were learned on the finished real runs of CALIBRATION (the scores of (5) each from
weights learned without its own repository) by

    python paper_repro/real_run_end_reward.py --ship

whose docstring fixes the protocol and whose leave-one-repository-out scores are paper_repro/RESULTS.md's
real-run-end-reward-2 rows: the weights of (4). Protocol 3's weights of (4') scored no better (rows
real-run-end-reward-3: medians 1.05 / 0.65 at 10% / 25% pilots against (4)'s 1.02 / 0.67, the same bands' coverage
and interval score) and are not shipped. A band is given up to BAND_MAX_HORIZON, the longest horizon calibrated.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.optimize import linprog

from gspo_dynamics.fit import (
    EXTRAPOLATION_LIMIT, HELD_STEPS, TrajectoryFit, fit_entropy_law, fit_sigmoid_scalerl, row_scatter,
)
from gspo_dynamics.predict._curve_ensemble import curve_ensemble

READINGS = ("curve", "sigmoid", "entropy", "ensemble")  # C, S, E, D of (3), the order of a and of c in a weight vector
Z0 = 2.0  # (2): a trend of 2 noise units gets g = 1/2 (a two-sigma trend is half signal)
NEAR_HORIZON = 6.0  # (3): h <= 6 is "near" (a 25% pilot sees a run 4 times its length), else "far"
INFO_SPLIT = 0.5  # (5): g below this (a trend under Z0 noise units) is a "flat" pilot, else "trend"
BAND_MIN_GROUP = 20  # (5): a Mondrian group with fewer scores than this pools with its horizon bin
NOISE_FLOOR = 0.01  # (1): a pilot that never moves has a noise of at least 1% of the reach's width
BAND_LEVEL = 0.9  # the band's nominal coverage 1 - alpha
NEAR_WHOLE = 0.9  # (5): a band spanning this share of the reward's reach or more narrows nothing a run can use: none
HAMPEL_REJECTION = 3.0  # (4'): the three-sigma rejection point of the Hampel identifier (Davies & Gather 1993)
MAD_NORMAL = 1.4826  # 1 / Phi^-1(3/4): a median absolute value as the scale of normal errors
GRID_STEPS = 8  # (4')'s global search: every point of the weights' simplex with coordinates multiples of 1/8
STARTS = 4  # (4')'s global search: the grid points with the least loss that concentration steps start from
MAX_STEPS = 50  # concentration steps per start (each lowers the loss; the inside set repeats within a few)
# learned by paper_repro/real_run_end_reward.py --ship (module docstring)
BLEND_WEIGHTS = {"near": (0.001, 0.283, 0.214, 0.492, 0.009, 0.000, 0.000, 0.000),  # (a_C, a_S, a_E, a_D,
                 "far": (0.000, 0.000, 0.170, 0.381, 0.000, 0.000, 0.069, 0.000)}  # c_C, c_S, c_E, c_D) of (3) per bin
BLEND_GATE = {"near": 1, "far": 1}  # G_b of (4g): protocol 2's weights, ungated (protocol 4 did not ship)
BAND_QUANTILES = {"near": {"flat": 1.459, "trend": 1.580}, "far": {"flat": 3.959, "trend": 3.795}}  # q of (5)
BAND_MAX_HORIZON = 10.7  # the longest horizon h among the calibration's pilots
CALIBRATION = "70 finished real runs from 52 public repositories"


@dataclass(frozen=True)
class Readings:
    """A pilot's readings of the run's end (module docstring)."""

    held: float  # H
    laws: tuple[float, float, float, float]  # (C, S, E, D), each H where it does not apply
    info: float  # g of (2), in [0, 1]
    noise: float  # sigma of (1)
    horizon: float  # h, the run's length over the pilot's

    @property
    def increments(self) -> np.ndarray:
        """F_k - H, k in READINGS."""
        return np.asarray(self.laws, dtype=float) - self.held

    @property
    def features(self) -> np.ndarray:
        """[F_k - H, g (F_k - H)], the unscaled features of (4): R = H + features . (a, c)."""
        return np.concatenate([self.increments, self.info * self.increments])

    @property
    def scale(self) -> float:
        """u of (5)."""
        return float(self.noise + np.max(np.abs(self.increments)))

    @property
    def where(self) -> str:
        return horizon_bin(self.horizon)

    @property
    def group(self) -> str:
        """The band's information group of (5): "flat" or "trend"."""
        return info_group(self.info)


def reading_weights(weights, info: float) -> np.ndarray:
    """The weight a_k + g c_k of (3) of each reading k at information g = `info`."""
    w = np.asarray(weights, dtype=float)
    k = len(READINGS)
    return w[:k] + info * w[k:]


def info_group(info: float) -> str:
    """The group of (5): "flat" for g < INFO_SPLIT, else "trend"."""
    return "flat" if info < INFO_SPLIT else "trend"


def horizon_bin(horizon: float) -> str:
    """The bin of (3): "near" for h <= NEAR_HORIZON, else "far"."""
    return "near" if horizon <= NEAR_HORIZON else "far"


def pilot_noise(reward, reach: tuple[float, float]) -> float:
    """sigma of (1)."""
    return max(row_scatter(reward), NOISE_FLOOR * (reach[1] - reach[0]), 1e-12)


def information(reward, noise: float, k: int = HELD_STEPS) -> float:
    """g of (2)."""
    r = np.asarray(reward, dtype=float)
    if r.size < 2 * k:
        return 0.0
    z = abs(float(np.mean(r[-k:]) - np.mean(r[:k]))) / (noise * math.sqrt(2 / k))
    return z * z / (z * z + Z0 * Z0)


def law_readings(fit: TrajectoryFit | None, steps, reward, window, reach, held: float,
                 entropy=None) -> tuple[float, float, float, float]:
    """(C, S, E, D) at the end window `window` (steps), clipped to `reach` (C = H without a fit); `entropy` = (steps,
    values) of the pilot's logged entropy, or None."""
    unidentified = fit is None or fit.plateau_extrapolation > EXTRAPOLATION_LIMIT
    curve = held if unidentified else float(np.mean(np.clip(fit.predict(window), *reach)))
    sig = fit_sigmoid_scalerl(steps, reward)
    sigmoid = held if sig.fallback else float(np.mean(sig.predict(window, reach)))
    ent = held
    if entropy is not None:
        rows = np.isin(np.asarray(steps, dtype=float), entropy[0])
        law = fit_entropy_law(entropy[1], np.asarray(reward, dtype=float)[rows], entropy[0])
        ent = held if law.fallback else float(np.mean(law.predict(window, reach)))
    return (curve, sigmoid, ent, curve_ensemble(steps, reward, window, reach, fit, sig).value)


def blend(readings: Readings, weights=None) -> float:
    """R of (4g), with the shipped weights (a, c) and gate of the readings' bin, or R of (3) with `weights` (a, c)."""
    if weights is None:
        weights = np.multiply(BLEND_GATE[readings.where], BLEND_WEIGHTS[readings.where])
    return float(readings.held + np.dot(np.asarray(weights, dtype=float), readings.features))


def gate(errors, held_errors) -> int:
    """G_b of (4g): 1 where the median of `errors`, the scaled errors |y_i - R_i| / sigma_i of the blend's forecasts
    of runs left out of its weights, is below the median of `held_errors`, the held level's |y_i - H_i| / sigma_i on
    the same runs; else 0 (ties and no runs included: the held level)."""
    errors, held_errors = np.asarray(errors, dtype=float), np.asarray(held_errors, dtype=float)
    if errors.shape != held_errors.shape:
        raise ValueError(f"the gate compares errors on the same runs, got {errors.size} and {held_errors.size}")
    return int(errors.size > 0 and float(np.median(errors)) < float(np.median(held_errors)))


def learn_weights(x, t) -> np.ndarray:
    """w = (a, c) of (4) in scaled units: argmin_{w >= 0, sum w <= 1} sum_i |t_i - x_i . w|, x_i the features of (4)
    over sigma_i (m, K), t_i = (y_i - H_i) / sigma_i (m,). The linear program: minimise sum_i e_i over (w, e) subject to
    x_i . w - e_i <= t_i, -x_i . w - e_i <= -t_i, sum w <= 1, w >= 0, e >= 0."""
    x, t = np.asarray(x, dtype=float), np.asarray(t, dtype=float)
    m, k = x.shape
    if m == 0:
        return np.zeros(k)
    eye = np.eye(m)
    a_ub = np.vstack([np.hstack([x, -eye]), np.hstack([-x, -eye]), np.hstack([np.ones((1, k)), np.zeros((1, m))])])
    b_ub = np.concatenate([t, -t, [1.0]])
    cost = np.concatenate([np.zeros(k), np.ones(m)])
    out = linprog(cost, A_ub=a_ub, b_ub=b_ub, bounds=[(0, None)] * (k + m), method="highs")
    if not out.success:
        return np.zeros(k)
    return np.clip(out.x[:k], 0.0, 1.0)


def loss_cap(t) -> float:
    """cap of (4'): HAMPEL_REJECTION times the normal-consistent median absolute value of t, the held level's scaled
    errors (the residuals at zero weights, the preliminary fit)."""
    return max(HAMPEL_REJECTION * MAD_NORMAL * float(np.median(np.abs(np.asarray(t, dtype=float)))), 1e-9)


def capped_loss(x, t, w, cap: float) -> np.ndarray:
    """The objective of (4'), sum_i min(|t_i - x_i . w|, cap), at w (K,) or at each row of w (N, K)."""
    w = np.asarray(w, dtype=float)
    e = np.asarray(t, dtype=float)[:, None] - np.asarray(x, dtype=float) @ np.atleast_2d(w).T  # (m, N)
    loss = np.minimum(np.abs(e), cap).sum(axis=0)
    return loss if w.ndim == 2 else loss[0]


@lru_cache(maxsize=4)
def simplex_grid(dim: int, steps: int = GRID_STEPS) -> np.ndarray:
    """Every w >= 0 with sum w <= 1 and coordinates multiples of 1/steps, (C(steps + dim, dim), dim): stars and
    bars, the parts before each of the dim bars among steps + dim slots (the rest is the slack)."""
    points = np.array([np.diff(np.concatenate([[-1], bars])) - 1 for bars in
                       itertools.combinations(range(steps + dim), dim)], dtype=float)
    return points / steps


def learn_weights_capped(x, t, cap: float | None = None) -> np.ndarray:
    """w = (a, c) of (4') in scaled units: argmin_{w >= 0, sum w <= 1} sum_i min(|t_i - x_i . w|, cap), x (m, K) and
    t (m,) as in `learn_weights`, cap = `loss_cap(t)` unless given. Not convex: from each of the STARTS least-loss
    points of `simplex_grid` (w = 0 among them), concentration steps (Rousseeuw & Van Driessen 2006): (4)'s linear
    program on the runs within the cap at the current point, kept while the capped loss falls. The loss at w' so found
    is at most sum_{inside} |e_i(w')| + cap #outside <= the loss at w, so it never rises; the answer's loss is at
    most the grid's least, so at most the held level's (w = 0)."""
    x, t = np.asarray(x, dtype=float), np.asarray(t, dtype=float)
    m, dim = x.shape
    if m == 0:
        return np.zeros(dim)
    cap = loss_cap(t) if cap is None else cap
    grid = simplex_grid(dim)
    losses = capped_loss(x, t, grid, cap)
    best, best_loss = np.zeros(dim), math.inf
    for i in np.argsort(losses, kind="stable")[:STARTS]:
        w, loss = grid[i], float(losses[i])
        for _ in range(MAX_STEPS):
            inside = np.abs(t - x @ w) < cap
            step = learn_weights(x[inside], t[inside])
            step_loss = capped_loss(x, t, step, cap)
            if step_loss >= loss - 1e-12:
                break
            w, loss = step, step_loss
        if loss < best_loss:
            best, best_loss = w, loss
    return best


def scaled_loss(x, t, w) -> float:
    """The objective of (4) at w."""
    return float(np.sum(np.abs(np.asarray(t, dtype=float) - np.asarray(x, dtype=float) @ np.asarray(w, dtype=float))))


def band_quantile(scores, level: float = BAND_LEVEL) -> float:
    """q of (5), the ceil((m + 1) level)-th smallest of the m scores; inf when that rank exceeds m (too few scores).
    Also `predict._end_reward.conformal_quantile`'s, after its checks."""
    s = np.sort(np.asarray(scores, dtype=float))
    rank = math.ceil((s.size + 1) * level - 1e-12)  # (m + 1) level an integer up to rounding is that integer
    return float(s[rank - 1]) if 0 < rank <= s.size else math.inf


def band(value: float, scale: float, q: float, reach: tuple[float, float]) -> tuple[float, float] | None:
    """The band of (5) within the reach, or None where it spans NEAR_WHOLE of the reach or more (the pilot narrows
    nothing: [0.0127, 1] of a [0, 1] reward is no answer)."""
    if not math.isfinite(q):
        return None
    low, high = max(value - q * scale, reach[0]), min(value + q * scale, reach[1])
    if high - low >= NEAR_WHOLE * (reach[1] - reach[0]):
        return None
    return low, high


def mondrian_quantile(scores, where: str, group: str, level: float = BAND_LEVEL) -> float:
    """q of (5) for the group (`where`, `group`) from `scores`, an iterable of (horizon bin, information group,
    score): the group's own, or its horizon bin's pooled where the group has fewer than BAND_MIN_GROUP scores."""
    scores = list(scores)
    own = [s for b, g, s in scores if (b, g) == (where, group)]
    return band_quantile(own if len(own) >= BAND_MIN_GROUP else [s for b, _, s in scores if b == where], level)


def interval_score(low: float, high: float, y: float, alpha: float = 1 - BAND_LEVEL) -> float:
    """IS_alpha of (6)."""
    return (high - low) + (2 / alpha) * (max(low - y, 0.0) + max(y - high, 0.0))
