"""How far the regime targets of paper_repro/pilot_forecast.py are from reach by the measurement alone: a cell's
regime is read from a few seeds, so even a forecaster that knew each cell's true per-seed instability rate
would miss some cells. A reading of the measured cells (an empirical-Bayes model of their seed counts), not a
forecaster.

The model. A seed of a cell is unstable with probability q, independently of the cell's other seeds; q varies
between cells as Beta(alpha, beta) (one prior for all the cells read together). A cell of n seeds with k unstable
then has the beta-binomial likelihood

    P(k | alpha, beta) = C(n, k) B(alpha + k, beta + n - k) / B(alpha, beta),                          (1)

and q | k ~ Beta(a, b), a = alpha + k, b = beta + n - k. The cell reads unstable when any seed is, with chance
1 - (1 - q)^n, so the forecaster that knows q and says "unstable" where that chance passes 1/2 says it where

    q > q* = 1 - 2^(-1/n).                                                                             (2)

Scored on the measurement the cells have (k): a cell read unstable (k >= 1) is its safe-but-unstable miss when
q <= q*, a cell read stable its false alarm when q > q*:

    P(miss | k >= 1) = I_{q*}(a, b),      P(false alarm | k = 0) = 1 - I_{q*}(a, b)                  (3)

(I the regularised incomplete beta function). Given the counts, the cells' q are independent, so a
combination's misses and false alarms are sums of independent indicators: their joint distribution is the
convolution of the cells' (`error_distribution`), and the chance the combination meets both regime targets is
its mass at errors <= floor(cells (1 - ACCURACY_MIN)) and misses <= SAFE_BUT_UNSTABLE_MAX.

The prior is checked by splitting each cell's seeds in halves: fitted on the first half's counts, (1) and the
posterior give the chance the second half holds an unstable seed,

    P(any of m more | k of n) = 1 - E[(1 - q)^m | k] = 1 - B(a, b + m) / B(a, b),                      (4)

to be compared with how often it does (`split_half_check`)."""

from __future__ import annotations

import collections
import math

import numpy as np
from scipy.optimize import minimize
from scipy.special import betainc, betaln, gammaln

from _pilot_scores import ACCURACY_MIN, SAFE_BUT_UNSTABLE_MAX, initial_rewards, seed_falls

LOG_BOUND = 8.0  # the prior's log alpha and log beta stay within +-LOG_BOUND (a prior this sharp or flat says nothing more)


def seed_prior(counts, seeds: int) -> tuple[float, float]:
    """The maximum-likelihood (alpha, beta) of (1) for cells with `counts` unstable seeds of `seeds` each."""
    counts = np.asarray(counts)
    if counts.size == 0 or counts.min() < 0 or counts.max() > seeds:
        raise ValueError(f"counts must be 0..{seeds}, got {counts.tolist()}")
    tally = np.bincount(counts, minlength=seeds + 1)
    k = np.arange(seeds + 1)
    log_binomial = gammaln(seeds + 1) - gammaln(k + 1) - gammaln(seeds - k + 1)

    def loss(x):
        alpha, beta = np.exp(x)
        return -np.sum(tally * (log_binomial + betaln(alpha + k, beta + seeds - k) - betaln(alpha, beta)))

    bounds = [(-LOG_BOUND, LOG_BOUND)] * 2
    best = minimize(loss, np.zeros(2), method="L-BFGS-B", bounds=bounds)
    return float(np.exp(best.x[0])), float(np.exp(best.x[1]))


def threshold(seeds: int) -> float:
    """q* of (2): the per-seed rate at which a cell of `seeds` seeds reads unstable with chance 1/2."""
    return 1.0 - 2.0 ** (-1.0 / seeds)


def oracle_errors(counts, seeds: int, prior: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """Per cell, (3): the chance the forecaster that knows q misses it (safe but unstable) and the chance it
    raises a false alarm on it, on the measurement that counted `counts` unstable seeds."""
    counts = np.asarray(counts)
    alpha, beta = prior
    below = betainc(alpha + counts, beta + seeds - counts, threshold(seeds))  # P(q <= q* | k)
    unstable = counts > 0
    return np.where(unstable, below, 0.0), np.where(unstable, 0.0, 1.0 - below)


def error_distribution(miss, false_alarm) -> np.ndarray:
    """P[e, m]: the chance of e errors of which m are misses, the cells independent with these per-cell chances
    of a miss and of a false alarm (a two-dimensional Poisson binomial, by convolution)."""
    dist = np.ones((1, 1))
    for p_miss, p_alarm in zip(miss, false_alarm):
        grown = np.zeros((dist.shape[0] + 1, dist.shape[1] + 1))
        grown[:-1, :-1] += dist * (1.0 - p_miss - p_alarm)
        grown[1:, 1:] += dist * p_miss
        grown[1:, :-1] += dist * p_alarm
        dist = grown
    return dist


def meets_targets(dist: np.ndarray, cells: int) -> float:
    """The mass of `error_distribution` where accuracy >= ACCURACY_MIN and misses <= SAFE_BUT_UNSTABLE_MAX."""
    errors = math.floor(cells * (1.0 - ACCURACY_MIN) + 1e-9)
    return float(dist[:errors + 1, :SAFE_BUT_UNSTABLE_MAX + 1].sum())


def seed_losses(result: dict) -> dict:
    """(lr, T) -> per-seed unstable flags of one combination's grid, as `measured_cells` reads them."""
    lrs = sorted({lr for lr, _ in result["measured"]})
    Ts = sorted({T for _, T in result["measured"]})
    r0 = initial_rewards(result["curves"], lrs, Ts)
    return {cell: seed_falls(result["curves"][cell]["reward"], r0)[0] for cell in result["measured"]}


def split_half_check(results: dict) -> list[tuple[int, int, float, float]]:
    """Per count k of the first half of each cell's seeds: (k, cells, predicted, observed) share of cells whose
    second half holds an unstable seed, (4) with the prior fitted on the first halves' counts; [] with fewer
    than 4 seeds a cell."""
    halves = [(int(lost[:len(lost) // 2].sum()), bool(lost[len(lost) // 2:].any()), len(lost))
              for result in results.values() for lost in seed_losses(result).values()]
    n = min(s for _, _, s in halves) // 2
    if n < 2:  # a beta-binomial of one seed fixes only the prior's mean
        return []
    halves = [(k, later) for k, later, s in halves if s // 2 == n and s - s // 2 == n]  # equal halves only
    alpha, beta = seed_prior([k for k, _ in halves], n)
    out = []
    for k in range(n + 1):
        later = [x for kk, x in halves if kk == k]
        if later:
            a, b = alpha + k, beta + n - k
            out.append((k, len(later), 1.0 - math.exp(betaln(a, b + n) - betaln(a, b)), float(np.mean(later))))
    return out


def regime_reach(results: dict, roles: dict) -> str:
    """The text for RESULTS.md: the prior, its split-half check, and per round (role, in the results' order) the
    expected accuracy and the expected number of combinations meeting both regime targets of the forecaster
    that knows q, next to ours' measured ones; "" without cells."""
    cells = [(name, m[4], result["curves"][cell]["reward"].shape[0])
             for name, result in results.items() for cell, m in result["measured"].items()]
    if not cells:
        return ""
    seeds = collections.Counter(s for _, _, s in cells).most_common(1)[0][0]
    counts = np.array([k for _, k, s in cells if s == seeds])
    prior = seed_prior(counts, seeds)
    rows = []  # per combination: role, that forecaster's expected accuracy, ours', its chance to meet both targets, ours met
    for name, result in results.items():
        if any(result["curves"][cell]["reward"].shape[0] != seeds for cell in result["measured"]):
            continue
        k = np.array([m[4] for m in result["measured"].values()])
        miss, alarm = oracle_errors(k, seeds, prior)
        ours = result["ours"]
        rows.append((roles[name], float(np.mean(1.0 - miss - alarm)), ours["accuracy"],
                     meets_targets(error_distribution(miss, alarm), len(k)),
                     ours["accuracy"] >= ACCURACY_MIN and ours["safe_but_unstable"] <= SAFE_BUT_UNSTABLE_MAX))
    rounds = {role: [row[1:] for row in rows if row[0] == role] for role in dict.fromkeys(row[0] for row in rows)}

    def summary(group: list) -> str:
        oracle, ours, meets, met = np.array(group, dtype=float).T
        return (f"{oracle.mean():.1%} / {ours.mean():.1%}, {meets.sum():.1f} / {int(met.sum())} "
                f"(all: {np.prod(meets):.2g})")

    check = "; ".join(f"k = {k}: {predicted:.2f} predicted, {observed:.2f} seen on {n}" for k, n, predicted, observed
                      in split_half_check(results)) or "not checked, fewer than 4 seeds a cell"
    per_round = "; ".join(f"{role} ({len(group)}): {summary(group)}" for role, group in rounds.items())
    return (f"The regime targets and the measurement's own noise (`_regime_reach`): a cell's regime is read from "
            f"{seeds} seeds, so even a forecaster that knew each cell's per-seed instability rate q, saying unstable "
            f"where q > {threshold(seeds):.3f} (a cell then reads unstable more often than not), would miss cells. "
            f"Fitted to the {len(counts)} cells' unstable-seed counts (histogram "
            f"{np.bincount(counts, minlength=seeds + 1).tolist()}), q ~ Beta({prior[0]:.3f}, {prior[1]:.3f}); checked "
            f"by halves (the prior fitted on each cell's first {seeds // 2} seeds, the chance its other "
            f"{seeds - seeds // 2} hold an unstable one): {check}. On these measurements that forecaster's expected "
            f"accuracy / ours' accuracy, and the combinations expected to meet both regime targets (accuracy >= "
            f"{ACCURACY_MIN:.0%}, <= {SAFE_BUT_UNSTABLE_MAX} safe but unstable) / those ours meets, per round: "
            f"{per_round}; all {len(rows)}: {summary([row[1:] for row in rows])}. All: the chance that forecaster meets "
            f"both on every combination of the round.")
