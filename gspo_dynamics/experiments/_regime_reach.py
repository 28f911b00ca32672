"""How far the regime targets of paper_repro/pilot_forecast.py are from reach by the measurement alone: a cell's
regime is read from a few seeds, so even a forecaster that knew each cell's true per-seed instability rate
would miss some cells. A reading of the measured cells (an empirical-Bayes model of their seed counts), not a
forecaster.

The model. A seed of a cell is unstable with probability q, independently of the cell's other seeds; q varies
between cells as Beta(alpha, beta) (one prior for all the cells read together, whatever their lr and T). A cell
of n seeds (the code's `seeds`) with k unstable then has the beta-binomial likelihood

    P(k | alpha, beta) = C(n, k) B(alpha + k, beta + n - k) / B(alpha, beta),                          (1)

and q | k ~ Beta(a, b), a = alpha + k, b = beta + n - k. The cell reads unstable when any seed is, with chance
1 - (1 - q)^n, so the forecaster that knows q and says "unstable" where that chance passes 1/2 says it where

    q > q* = 1 - 2^(-1/n).                                                                             (2)

Scored on the measurement the cells have (k): a cell read unstable (k >= 1) is its safe-but-unstable miss when
q <= c, a cell read stable its false alarm when q > c, for the forecaster that cuts at c:

    P(miss | k >= 1) = I_c(a, b),      P(false alarm | k = 0) = 1 - I_c(a, b)                          (3)

(I the regularised incomplete beta function). The cut c = q* maximises the expected accuracy over the model's
own draws (the derivative of the expected accuracy in c is f(c) ((1 - c)^n - 1/2), f the prior's density); it
does not maximise the chance of at most SAFE_BUT_UNSTABLE_MAX misses: a lower cut turns misses into false alarms,
so the best single cut for the cells read together is reported beside it (`best_cut`, chosen on them: an upper
bound for one cut). With (alpha, beta) fixed at their fit (their own uncertainty left out), the cells' q are
independent given the counts, so a combination's misses and false alarms are sums of independent indicators:
their joint distribution is the convolution of the cells' (`error_distribution`), and the chance the combination
meets both regime targets is its mass at errors <= floor(cells (1 - ACCURACY_MIN)) and misses <=
SAFE_BUT_UNSTABLE_MAX.

The model is checked twice. Its fit: the counts (1) expects against those seen, Pearson's chi-squared on n + 1
- 1 - 2 degrees of freedom (`goodness_of_fit`). And by halves: fitted on the counts of each cell's first m
seeds, (1) and the posterior give the chance the next m hold an unstable seed,

    P(any of m more | k of m) = 1 - E[(1 - q)^m | k] = 1 - B(a, b + m) / B(a, b),                      (4)

to be compared with how often they do (`split_half_check`). Where either fails, the forecaster's scores are an
estimate under a model the counts reject, not a bound; a prior per task (`per_task_reach`) says how much the
one prior's misfit moves them."""

from __future__ import annotations

import collections
import math

import numpy as np
from scipy.optimize import minimize
from scipy.special import betainc, betaln, gammaln
from scipy.stats import chi2

from gspo_dynamics.experiments._forecast_scores import ACCURACY_MIN, SAFE_BUT_UNSTABLE_MAX, initial_rewards, seed_falls

LOG_BOUND = 8.0  # the prior's log alpha and log beta stay within +-LOG_BOUND (sharper or flatter says nothing more)
CUTS = np.linspace(0.005, 0.995, 199)  # the cuts `best_cut` tries: every half percent of the rate


def log_pmf(seeds: int, alpha: float, beta: float) -> np.ndarray:
    """log P(k | alpha, beta) of (1) for k = 0..seeds."""
    k = np.arange(seeds + 1)
    log_binomial = gammaln(seeds + 1) - gammaln(k + 1) - gammaln(seeds - k + 1)
    return log_binomial + betaln(alpha + k, beta + seeds - k) - betaln(alpha, beta)


def seed_prior(counts, seeds: int) -> tuple[float, float]:
    """The maximum-likelihood (alpha, beta) of (1) for cells with `counts` unstable seeds of `seeds` each."""
    counts = np.asarray(counts)
    if counts.size == 0 or counts.min() < 0 or counts.max() > seeds:
        raise ValueError(f"counts must be 0..{seeds}, got {counts.tolist()}")
    tally = np.bincount(counts, minlength=seeds + 1)

    def loss(x):
        return -np.sum(tally * log_pmf(seeds, *np.exp(x)))

    bounds = [(-LOG_BOUND, LOG_BOUND)] * 2
    best = minimize(loss, np.zeros(2), method="L-BFGS-B", bounds=bounds)
    # A few cells (a quick run's) put the maximum on a bound, at the end of a flat ridge, where the gradient's line
    # search stalls or stops short while reporting success: the bounded simplex, from both starts, finds it there.
    for x0 in (np.zeros(2), np.clip(best.x, -LOG_BOUND, LOG_BOUND)):
        simplex = minimize(loss, x0, method="Nelder-Mead", bounds=bounds)
        if simplex.success and (not best.success or simplex.fun < best.fun - 1e-9):
            best = simplex
    if not best.success:
        raise ValueError(f"the beta-binomial fit of {tally.tolist()} did not converge: {best.message}")
    return float(np.exp(best.x[0])), float(np.exp(best.x[1]))


def expected_counts(cells: int, seeds: int, prior: tuple[float, float]) -> np.ndarray:
    """How many of `cells` cells (1) expects with 0..seeds unstable seeds."""
    return cells * np.exp(log_pmf(seeds, *prior))


def goodness_of_fit(counts, seeds: int, prior: tuple[float, float]) -> tuple[np.ndarray, float]:
    """(the counts (1) expects, Pearson's chi-squared p-value against those seen on seeds - 2 degrees of freedom:
    seeds + 1 bins, less one for the total and two for the fitted alpha, beta; nan with fewer than 3 seeds, where
    none are left)."""
    seen = np.bincount(np.asarray(counts), minlength=seeds + 1)
    expected = expected_counts(int(seen.sum()), seeds, prior)
    if seeds < 3:
        return expected, math.nan
    statistic = float(np.sum((seen - expected) ** 2 / expected))
    return expected, float(chi2.sf(statistic, seeds - 2))


def threshold(seeds: int) -> float:
    """q* of (2): the per-seed rate at which a cell of `seeds` seeds reads unstable with chance 1/2."""
    return 1.0 - 2.0 ** (-1.0 / seeds)


def oracle_errors(counts, seeds: int, prior: tuple[float, float],
                  cut: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per cell, (3): the chance the forecaster that knows q, saying unstable where q > cut (default q* of (2)),
    misses it (safe but unstable) and the chance it raises a false alarm on it, on the measurement that
    counted `counts` unstable seeds."""
    cut = threshold(seeds) if cut is None else cut
    if not 0 < cut < 1:
        raise ValueError(f"the cut is a rate in (0, 1), got {cut!r}")
    counts = np.asarray(counts)
    alpha, beta = prior
    below = betainc(alpha + counts, beta + seeds - counts, cut)  # P(q <= cut | k)
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
    errors = math.floor(cells * (1.0 - ACCURACY_MIN) + 1e-9)  # 1e-9: 20 x 0.15 is 3.0000000000000004 in floating point
    return float(dist[:errors + 1, :SAFE_BUT_UNSTABLE_MAX + 1].sum())


def expected_meets(grids: list, seeds: int, prior: tuple[float, float], cut: float | None = None) -> np.ndarray:
    """Per grid (its cells' unstable-seed counts), the chance the forecaster cutting at `cut` meets both regime
    targets on it (`oracle_errors`, `error_distribution`, `meets_targets`)."""
    return np.array([meets_targets(error_distribution(*oracle_errors(k, seeds, prior, cut)), len(k)) for k in grids])


def best_cut(grids: list, seeds: int, prior: tuple[float, float]) -> tuple[float, np.ndarray]:
    """The cut of CUTS that maximises the expected number of `grids` on which the forecaster knowing q meets both
    regime targets, and its `expected_meets`."""
    meets = [expected_meets(grids, seeds, prior, cut) for cut in CUTS]
    best = int(np.argmax([m.sum() for m in meets]))
    return float(CUTS[best]), meets[best]


def per_task_reach(results: dict, names: list, seeds: int) -> tuple[float, float, str]:
    """The forecaster at q* with a prior per task (`seed_prior` on each task's cells, results[name]["task"]): its
    expected accuracy over all the cells, its expected count of `names` meeting both regime targets, and each
    task's chi-squared p-value as "task p" ("" with fewer than 3 seeds a cell). A sensitivity check of the one prior: cells of one task are more
    alike than cells of all."""
    by_task = collections.defaultdict(list)
    for name in names:
        by_task[results[name]["task"]].append(np.array([m[4] for m in results[name]["measured"].values()]))
    hits, cells, meets, fits = 0.0, 0, 0.0, []
    for task, grids in sorted(by_task.items()):
        counts = np.concatenate(grids)
        prior = seed_prior(counts, seeds)
        miss, alarm = oracle_errors(counts, seeds, prior)
        hits += float(np.sum(1.0 - miss - alarm))
        cells += len(counts)
        meets += float(expected_meets(grids, seeds, prior).sum())
        p_fit = goodness_of_fit(counts, seeds, prior)[1]
        if math.isfinite(p_fit):
            fits.append(f"{task} {p_fit:.2g}")
    return hits / cells, meets, ", ".join(fits)


def seed_losses(result: dict) -> dict:
    """(lr, T) -> per-seed unstable flags of one combination's grid, as `measured_cells` reads them."""
    lrs = sorted({lr for lr, _ in result["measured"]})
    Ts = sorted({T for _, T in result["measured"]})
    r0 = initial_rewards(result["curves"], lrs, Ts)
    return {cell: seed_falls(result["curves"][cell]["reward"], r0)[0] for cell in result["measured"]}


def split_half_check(results: dict, seeds: int) -> list[tuple[int, int, float, float]]:
    """Per count k of the first m = seeds // 2 seeds of each cell with `seeds` seeds: (k, cells, predicted,
    observed) share of cells whose next m seeds hold an unstable one, (4) with the prior fitted on the first
    halves' counts (an odd last seed is left out); [] with fewer than 4 seeds a cell (a beta-binomial of one
    seed fixes only the prior's mean)."""
    m = seeds // 2
    if m < 2:
        return []
    halves = [(int(lost[:m].sum()), bool(lost[m:2 * m].any())) for result in results.values()
              for lost in seed_losses(result).values() if len(lost) == seeds]
    alpha, beta = seed_prior([first for first, _ in halves], m)
    out = []
    for k in range(m + 1):
        later = [second for first, second in halves if first == k]
        if later:
            a, b = alpha + k, beta + m - k
            out.append((k, len(later), 1.0 - math.exp(betaln(a, b + m) - betaln(a, b)), float(np.mean(later))))
    return out


def regime_reach(results: dict, roles: dict) -> str:
    """The text for RESULTS.md: the prior, its checks, and per round (role, in the results' order) the expected
    accuracy and the expected number of combinations meeting both regime targets of the forecaster that knows
    q (at q* and at the `best_cut`), next to ours' measured ones; "" without cells. Only the combinations whose
    cells all have the most common number of seeds are read (prior and scores alike)."""
    seed_counts = collections.Counter(result["curves"][cell]["reward"].shape[0]
                                      for result in results.values() for cell in result["measured"])
    if not seed_counts:
        return ""
    seeds = seed_counts.most_common(1)[0][0]
    names = [name for name, result in results.items()
             if all(result["curves"][cell]["reward"].shape[0] == seeds for cell in result["measured"])]
    grids = [np.array([m[4] for m in results[name]["measured"].values()]) for name in names]
    counts = np.concatenate(grids)
    prior = seed_prior(counts, seeds)
    expected, p_fit = goodness_of_fit(counts, seeds, prior)
    accuracy = []
    for k in grids:
        miss, alarm = oracle_errors(k, seeds, prior)
        accuracy.append(float(np.mean(1.0 - miss - alarm)))
    meets = expected_meets(grids, seeds, prior)
    cut, meets_at_cut = best_cut(grids, seeds, prior)
    task_accuracy, task_meets, task_fits = per_task_reach(results, names, seeds)
    ours = [results[name]["ours"] for name in names]
    met = [o["accuracy"] >= ACCURACY_MIN and o["safe_but_unstable"] <= SAFE_BUT_UNSTABLE_MAX for o in ours]

    def summary(picked: list) -> str:
        theirs, our = np.mean([accuracy[i] for i in picked]), np.mean([ours[i]["accuracy"] for i in picked])
        return (f"accuracy {theirs:.1%} / ours {our:.1%}; "
                f"meeting both {sum(meets[i] for i in picked):.1f} at q* / {sum(meets_at_cut[i] for i in picked):.1f} "
                f"at the cut / ours {sum(met[i] for i in picked)}; all of them {np.prod(meets[picked]):.2g} at q* / "
                f"{np.prod(meets_at_cut[picked]):.2g} at the cut")

    checked = split_half_check({name: results[name] for name in names}, seeds)
    halves = "; ".join(f"k = {k}: {predicted:.2f} predicted, {observed:.2f} seen on {n}"
                       for k, n, predicted, observed in checked)
    fit = f" (chi-squared p = {p_fit:.2g})" if math.isfinite(p_fit) else ""
    by_halves = (f"by halves (the prior fitted on each cell's first {seeds // 2} seeds, the chance its next "
                 f"{seeds // 2} hold an unstable one): {halves}" if halves
                 else "not checked by halves (fewer than 4 seeds a cell)")
    rounds = {role: [i for i, name in enumerate(names) if roles[name] == role]
              for role in dict.fromkeys(roles[name] for name in names)}
    per_round = "; ".join(f"{role} ({len(picked)}): {summary(picked)}" for role, picked in rounds.items())
    return (f"The regime targets and the measurement's own noise (`_regime_reach`): a cell's regime is read from "
            f"{seeds} seeds, so even a forecaster that knew each cell's per-seed instability rate q, saying unstable "
            f"where q > q* = {threshold(seeds):.3f} (a cell then reads unstable more often than not), would miss "
            f"cells. Fitted to the {len(counts)} cells' unstable-seed counts, q ~ "
            f"Beta({prior[0]:.3f}, {prior[1]:.3f}); "
            f"the counts of 0..{seeds} seen {np.bincount(counts, minlength=seeds + 1).tolist()}, expected "
            f"{np.round(expected).astype(int).tolist()}{fit}; {by_halves}. Per round, on these measurements: that "
            f"forecaster's expected accuracy and ours'; the combinations expected to meet both regime targets "
            f"(accuracy >= {ACCURACY_MIN:.0%}, <= {SAFE_BUT_UNSTABLE_MAX} safe but unstable) by it at q*, by it at the "
            f"single cut that meets them most often on all the combinations (q > {cut:.3f}, chosen on them), and "
            f"those ours meets; the chance it meets both on every combination of the round, at q* and at that cut: "
            f"{per_round}; all {len(names)}: {summary(list(range(len(names))))}. With a prior per task instead"
            + (f" (chi-squared p: {task_fits})" if task_fits else "") + f", that forecaster at q*: "
            f"{task_accuracy:.1%}, meeting both on {task_meets:.1f} of {len(names)}.")
