"""gspo_dynamics/experiments/_regime_reach.py: the beta-binomial reading of the measured cells' seed counts, each piece against
an independent route (a grid search, Monte Carlo, enumeration)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from gspo_dynamics.experiments import _regime_reach as reach


def test_the_prior_is_the_likelihoods_maximum_on_a_grid():
    """(1)'s maximum from the optimiser against a log-spaced grid scored with scipy's beta-binomial; on
    20,000 cells drawn from Beta(0.4, 0.6) it recovers the parameters within 10% (their standard error at this
    size, from the Fisher information, is ~1.7% in log alpha and log beta: about 6 sigma)."""
    rng = np.random.default_rng(0)
    counts = rng.binomial(4, rng.beta(0.4, 0.6, size=20_000))
    alpha, beta = reach.seed_prior(counts, 4)
    grid = np.exp(np.linspace(-3, 2, 201))
    A, B = np.meshgrid(grid, grid, indexing="ij")
    tally = np.bincount(counts, minlength=5)
    loglik = sum(n * stats.betabinom.logpmf(k, 4, A, B) for k, n in enumerate(tally))
    i, j = np.unravel_index(np.argmax(loglik), loglik.shape)
    # the grid's step is 2.5%
    assert alpha == pytest.approx(grid[i], rel=0.03) and beta == pytest.approx(grid[j], rel=0.03)
    assert alpha == pytest.approx(0.4, rel=0.1) and beta == pytest.approx(0.6, rel=0.1)


def test_a_maximum_on_the_bounds_is_found_from_a_few_cells():
    """A quick run's few cells of 2 seeds put (1)'s maximum on the bounds of log alpha and log beta (all cells
    stable: q -> 0; a mix of 1 and 2 unstable seeds: a sharp prior near their rate), where the gradient's line
    search stalls or stops short: the fit is at least the best of a grid over the bounded box (to 1e-4 nats; the
    likelihood is flat along the bound, so the value, not the point, is compared)."""
    grid = np.linspace(-reach.LOG_BOUND, reach.LOG_BOUND, 161)
    cases = [([1, 1, 2, 2], 2), ([0, 0, 0], 2), ([2, 2, 2], 2), ([0, 2, 2, 0], 2), ([0, 1, 2], 2),
             ([1, 1, 1, 1, 2], 2), ([2] * 5, 4), ([0, 0, 0, 0, 0, 4], 4)]  # the last three: L-BFGS-B stopped short
    for counts, seeds in cases:
        tally = np.bincount(counts, minlength=seeds + 1)

        def loglik(log_alpha, log_beta):
            return float(np.sum(tally * reach.log_pmf(seeds, math.exp(log_alpha), math.exp(log_beta))))

        alpha, beta = reach.seed_prior(counts, seeds)
        a, b = np.meshgrid(np.exp(grid), np.exp(grid), indexing="ij")  # (161, 161): loglik at every grid point at once
        best = float(np.max(np.sum(tally * reach.log_pmf(seeds, a[..., None], b[..., None]), axis=-1)))
        assert loglik(math.log(alpha), math.log(beta)) >= best - 1e-4, counts


def test_bad_counts_are_refused():
    with pytest.raises(ValueError, match="counts must be 0..4"):
        reach.seed_prior([0, 5], 4)
    with pytest.raises(ValueError):
        reach.seed_prior([], 4)


def test_the_threshold_is_where_a_cell_reads_unstable_half_the_time():
    for n in (1, 2, 4, 8):
        assert 1 - (1 - reach.threshold(n)) ** n == pytest.approx(0.5, abs=1e-12)


def test_the_oracles_errors_match_a_simulation_of_cells():
    """(3) against Monte Carlo: q from the prior, a cell's k from q; among the cells with each k, the share the
    forecaster that knows q gets wrong. 400,000 cells: the rarest k (1-3 of 4 under this prior) holds ~44,000,
    so a share's standard error is <= 0.0025; tolerance 0.01."""
    rng = np.random.default_rng(1)
    prior, n = (0.3, 0.4), 4
    q = rng.beta(*prior, size=400_000)
    k = rng.binomial(n, q)
    says_unstable = q > reach.threshold(n)
    miss, alarm = reach.oracle_errors(np.arange(n + 1), n, prior)
    for count in range(n + 1):
        wrong = np.mean(says_unstable[k == count] != (count > 0))
        assert (miss[count] + alarm[count]) == pytest.approx(wrong, abs=0.01)
        assert (miss[count] > 0) <= (count > 0) and (alarm[count] > 0) <= (count == 0)


def test_the_error_distribution_is_the_enumeration_of_every_outcome():
    rng = np.random.default_rng(2)
    miss, alarm = rng.random(5) * 0.4, rng.random(5) * 0.4
    dist = reach.error_distribution(miss, alarm)
    expected = np.zeros((6, 6))
    for outcome in itertools.product(range(3), repeat=5):  # 0 right, 1 miss, 2 false alarm
        p = math.prod((1 - m - a, m, a)[o] for o, m, a in zip(outcome, miss, alarm))
        expected[sum(o > 0 for o in outcome), sum(o == 1 for o in outcome)] += p
    np.testing.assert_allclose(dist, expected, atol=1e-12)
    assert dist.sum() == pytest.approx(1.0)


def test_meeting_the_targets_is_at_most_three_errors_and_one_miss_of_twenty():
    dist = np.zeros((21, 21))
    dist[3, 1] = 0.5  # 85%, one miss: met
    dist[4, 0] = 0.2  # 80%: missed
    dist[2, 2] = 0.3  # two misses: missed
    assert reach.meets_targets(dist, 20) == pytest.approx(0.5)


def test_a_prior_per_task_is_the_pooled_one_for_a_single_task_and_fits_each_of_two():
    """One task: `per_task_reach` is the pooled forecaster (same prior, same sums). Two tasks drawn from
    different priors: each task's prior is fitted on its own cells (its expected accuracy against one computed
    here from `seed_prior` on that task alone)."""
    rng = np.random.default_rng(8)
    results = {f"a{c}": grid_of(rng.random((20, 4)) < rng.beta(0.2, 0.8, size=20)[:, None]) | {"task": "a"}
               for c in range(8)}
    names = list(results)
    grids = [np.array([m[4] for m in results[n]["measured"].values()]) for n in names]
    prior = reach.seed_prior(np.concatenate(grids), 4)
    accuracy, meets, fits = reach.per_task_reach(results, names, 4)
    assert accuracy == pytest.approx(np.mean(1 - np.add(*reach.oracle_errors(np.concatenate(grids), 4, prior))))
    assert meets == pytest.approx(reach.expected_meets(grids, 4, prior).sum()) and fits.startswith("a ")
    results |= {f"b{c}": grid_of(rng.random((20, 4)) < rng.beta(0.8, 0.2, size=20)[:, None]) | {"task": "b"}
                for c in range(8)}
    accuracy, _, fits = reach.per_task_reach(results, list(results), 4)
    per_task = []
    for task in "ab":
        counts = np.concatenate([[m[4] for m in r["measured"].values()] for n, r in results.items() if n[0] == task])
        per_task.append(1 - np.add(*reach.oracle_errors(counts, 4, reach.seed_prior(counts, 4))))
    assert accuracy == pytest.approx(np.mean(np.concatenate(per_task))) and "a " in fits and "b " in fits


def grid_of(lost: np.ndarray) -> dict:
    """One combination's result: cells (lr, T) whose seed s falls from 0.5 to 0 after step 48 where lost[cell, s]."""
    lrs, Ts = (1e-3, 2e-3), tuple(range(1, len(lost) // 2 + 1))
    cells = [(lr, T) for lr in lrs for T in Ts]
    steps = np.arange(96)
    curves = {cell: {"reward": np.where(lost[i][:, None] & (steps >= 48), 0.0, 0.5)} for i, cell in enumerate(cells)}
    return {"curves": curves, "measured": {cell: (bool(lost[i].any()), 0.0, 0.0, 0.0, int(lost[i].sum()))
                                           for i, cell in enumerate(cells)},
            "ours": {"accuracy": 0.9, "safe_but_unstable": 0}, "task": "count"}


def test_the_split_half_check_predicts_the_second_halves_of_simulated_cells():
    """Cells drawn from a beta prior, read through their seed curves (`seed_losses`): (4)'s prediction for each
    first-half count against the share of second halves with an unstable seed. 50 combinations x 20 cells; the
    smallest group (k = 1) holds ~200 cells, standard error <= 0.035; tolerance 0.12 (3.5 sigma)."""
    rng = np.random.default_rng(3)
    results = {}
    for c in range(50):
        q = rng.beta(0.3, 0.4, size=20)
        results[f"c{c}"] = grid_of(rng.random((20, 4)) < q[:, None])
    rows = reach.split_half_check(results, 4)
    assert [k for k, *_ in rows] == [0, 1, 2] and sum(n for _, n, *_ in rows) == 1000
    for k, n, predicted, observed in rows:
        assert predicted == pytest.approx(observed, abs=0.12), (k, n)


def test_regime_reach_reports_the_prior_and_each_round():
    rng = np.random.default_rng(4)
    results = {f"c{c}": grid_of(rng.random((20, 4)) < rng.beta(0.3, 0.4, size=20)[:, None]) for c in range(6)}
    roles = {name: ("develop" if i < 3 else "confirm") for i, name in enumerate(results)}
    text = reach.regime_reach(results, roles)
    counts = np.bincount([m[4] for r in results.values() for m in r["measured"].values()], minlength=5)
    assert f"seen {counts.tolist()}, expected" in text and "develop (3): " in text and "confirm (3): " in text
    assert "all 6: " in text and "ours 90.0%" in text and "q* = 0.159" in text and "chi-squared p = " in text
    assert "With a prior per task instead (chi-squared p: count " in text
    assert reach.regime_reach({}, {}) == ""
    two_seeds = {"c0": grid_of(rng.random((20, 2)) < 0.3)}
    assert reach.split_half_check(two_seeds, 2) == []
    text = reach.regime_reach(two_seeds, {"c0": "develop"})
    assert "not checked by halves (fewer than 4 seeds a cell)" in text and "chi-squared" not in text


def test_the_chance_to_meet_the_targets_matches_a_simulation_of_the_rates():
    """`expected_meets` against Monte Carlo: each cell's q drawn from its posterior Beta(alpha + k, beta + n - k)
    (this checks (3) and the convolution given the posterior, not the posterior, which the test of the oracle's
    errors checks), the forecaster cutting at c right where (q > c) == (k > 0); the share of 100,000 draws with at
    most 3 errors and 1 miss of 20 (standard error <= 0.0016; tolerance 0.006), at q* and at a lower cut."""
    rng = np.random.default_rng(5)
    prior, n = (0.2, 0.25), 4
    grid = np.array([0] * 8 + [1] * 3 + [2] * 2 + [4] * 7)
    for cut in (None, 0.08):
        c = reach.threshold(n) if cut is None else cut
        q = rng.beta(prior[0] + grid, prior[1] + n - grid, size=(100_000, len(grid)))
        wrong = (q > c) != (grid > 0)
        misses = (q <= c) & (grid > 0)
        simulated = np.mean((wrong.sum(axis=1) <= 3) & (misses.sum(axis=1) <= 1))
        assert reach.expected_meets([grid], n, prior, cut)[0] == pytest.approx(simulated, abs=0.006)


def test_the_best_cut_meets_the_targets_at_least_as_often_as_any_other():
    """Many cells read unstable on one seed: cutting below q* turns their misses into false alarms, and the best
    cut's expected count is the largest over the cuts tried by hand."""
    prior, n = (0.14, 0.16), 4
    grids = [np.array([0] * 14 + [1] * 3 + [4] * 3), np.array([0] * 10 + [1] * 2 + [3] * 8)]
    cut, meets = reach.best_cut(grids, n, prior)
    assert cut < reach.threshold(n)
    for other in (0.01, 0.05, 0.1, reach.threshold(n), 0.3, 0.6):
        assert meets.sum() >= reach.expected_meets(grids, n, prior, other).sum() - 1e-12


def test_the_chance_of_more_unstable_seeds_is_the_posterior_integral():
    """(4) against numerical integration of 1 - (1 - q)^m under Beta(a, b) (quad, error < 1e-8)."""
    from scipy import integrate

    for a, b, m in ((0.14, 2.2, 2), (1.1, 0.16, 2), (0.5, 0.5, 3)):
        integral, _ = integrate.quad(lambda q: (1 - (1 - q) ** m) * stats.beta.pdf(q, a, b), 0, 1, limit=200)
        assert 1 - math.exp(math.lgamma(a + b) - math.lgamma(b) + math.lgamma(b + m) - math.lgamma(a + b + m)) == \
            pytest.approx(integral, abs=1e-6)


def test_the_fit_is_judged_by_the_counts_it_expects():
    """`goodness_of_fit` against scipy's beta-binomial pmf and a chi-squared computed here; counts drawn from
    the model pass (p > 0.01), counts with no cell at 1-3 of 4 but many at 0 and 4 in a 1:1 mix fit worse."""
    prior = (0.3, 0.4)
    expected, _ = reach.goodness_of_fit([0, 1, 2, 3, 4] * 10, 4, prior)
    np.testing.assert_allclose(expected, 50 * stats.betabinom.pmf(np.arange(5), 4, *prior), rtol=1e-10)
    seen = np.array([10] * 5)
    statistic = np.sum((seen - expected) ** 2 / expected)
    assert reach.goodness_of_fit([0, 1, 2, 3, 4] * 10, 4, prior)[1] == pytest.approx(stats.chi2.sf(statistic, 2))
    rng = np.random.default_rng(6)
    drawn = rng.binomial(4, rng.beta(*prior, size=2000))
    assert reach.goodness_of_fit(drawn, 4, reach.seed_prior(drawn, 4))[1] > 0.01
    lumpy = [0] * 600 + [1] * 20 + [2] * 300 + [3] * 20 + [4] * 600
    assert reach.goodness_of_fit(lumpy, 4, reach.seed_prior(lumpy, 4))[1] < 1e-6


def test_odd_and_mixed_seed_counts_are_read_by_the_most_common():
    """Five seeds a cell: the halves are seeds 0-1 and 2-3 (the fifth left out); a combination of two seeds
    among ones of five leaves the prior and the scores, not the check."""
    rng = np.random.default_rng(7)
    results = {f"c{c}": grid_of(rng.random((20, 5)) < rng.beta(0.3, 0.4, size=20)[:, None]) for c in range(20)}
    rows = reach.split_half_check(results, 5)
    assert [k for k, *_ in rows] == [0, 1, 2] and sum(n for _, n, *_ in rows) == 400
    results["two"] = grid_of(rng.random((20, 2)) < 0.5)
    text = reach.regime_reach(results, {name: "develop" for name in results})
    assert "read from 5 seeds" in text and "the 400 cells'" in text and "develop (20): " in text
    assert "first 2 seeds" in text


def test_a_cut_outside_the_rates_is_refused():
    for cut in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError, match="the cut is a rate in"):
            reach.oracle_errors([0, 1], 4, (0.3, 0.4), cut)
