"""A flat reward's stall against a change the noise hides, a rise's stop read over its tail, and zero-std groups read
from rows whose reward_std is 0 (issue 48: judged right where the evidence decides, unsure only where it does not).

Each formula against an independent route: the stall probability against the posterior of two normal likelihoods
(scipy), the tail fraction against a sampled exponential's climb, the tail's slope noise against simulated slopes.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from gspo_dynamics.diagnose import _settled, diagnose
from gspo_dynamics.diagnose._trend_stats import (
    STILL_RISING_FRACTION,
    TAIL_FRACTION,
    ar1_inflation,
    late_slope,
    stall_probability,
)
from gspo_dynamics.logs import RunLog
from gspo_dynamics.theory.trajectory import single_exponential


def make_log(series: dict) -> RunLog:
    n = len(next(iter(series.values())))
    return RunLog(steps=np.arange(1, n + 1, dtype=np.int64), series={k: np.asarray(v, float) for k, v in series.items()},
                  format="jsonl", source="<synthetic>")


@pytest.mark.parametrize("diff", [-0.3, -0.05, 0.0, 0.02, 0.07, 0.1, 0.4])
@pytest.mark.parametrize("se", [0.01, 0.05, 0.2])
def test_the_stall_probability_is_the_posterior_of_no_change_against_a_meaningful_one(diff, se):
    meaningful = 0.08
    h0 = norm.pdf(diff, loc=0.0, scale=se)
    h1 = norm.pdf(diff, loc=math.copysign(meaningful, diff), scale=se)  # the alternative on the side of the estimate
    assert stall_probability(diff, se, meaningful) == pytest.approx(h0 / (h0 + h1), abs=1e-12)


def test_the_stall_probability_is_a_coin_toss_halfway_and_where_the_data_are_blind():
    assert stall_probability(0.04, 0.01, 0.08) == pytest.approx(0.5)  # |d| halfway to the meaningful change
    assert stall_probability(0.0, 1e3, 0.08) == pytest.approx(0.5, abs=1e-6)  # se >> the change: nothing told
    assert stall_probability(0.0, 0.001, 0.08) == pytest.approx(1.0)
    assert math.isnan(stall_probability(0.0, 0.0, 0.08)) and math.isnan(stall_probability(0.1, 0.1, 0.0))


def test_the_tail_climbs_the_remaining_rise_at_the_still_rising_boundary():
    # r = 1 - exp(-t / tau) logged to T with exp(-T / tau) = STILL_RISING_FRACTION: the climb over the last
    # TAIL_FRACTION of the log, sampled, equals what remains to rise
    tau = 50.0
    T = tau * math.log(1.0 / STILL_RISING_FRACTION)
    t = np.linspace(0.0, T, 200001)
    r = single_exponential(t, 1.0, 0.0, tau)
    start = np.searchsorted(t, (1.0 - TAIL_FRACTION) * T)
    climb, remaining = r[-1] - r[start], 1.0 - r[-1]
    assert climb == pytest.approx(remaining, rel=1e-4)
    half = r[-1] - r[np.searchsorted(t, 0.5 * T)]
    assert half > 2.0 * remaining  # a late half's climb overstates what remains


def test_the_tail_noise_is_the_z_a_steady_climb_shows_over_the_tail():
    # the same linear climb under the same noise: z over the last TAIL_FRACTION / z over the last half, averaged over
    # draws, is (TAIL_FRACTION / 0.5)^(3/2) (a slope's standard error grows as n^(-3/2))
    rng = np.random.default_rng(0)
    n, slope, noise = 2000, 2e-5, 0.1
    t = np.arange(1.0, n + 1)
    ratios = []
    for _ in range(200):
        r = slope * t + rng.normal(0, noise, n)
        _, z_half, _ = late_slope(t, r)
        _, z_tail, _ = late_slope(t, r, TAIL_FRACTION)
        ratios.append((z_tail, z_half))
    z_tail, z_half = np.mean(ratios, axis=0)
    assert z_tail / z_half == pytest.approx(_settled.TAIL_NOISE / _settled.SLOPE_NOISE, rel=0.1)


def _rise(tail: np.ndarray, seed: int) -> RunLog:
    """A success rate rising 0.3 -> 0.7 by step 150, then `tail` for the rest, under the noise of 8 groups of 8."""
    rng = np.random.default_rng(seed)
    t = np.arange(150.0)
    p = np.concatenate([0.3 + 0.4 * (1 - np.exp(-t / 40.0)) / (1 - np.exp(-149 / 40.0)), tail])
    x = (rng.random((p.size, 8, 8)) < p[:, None, None]).astype(float)
    return make_log({"reward": x.mean(axis=(1, 2)), "reward_std": x.std(axis=2, ddof=1).mean(axis=1)})


@pytest.mark.parametrize("seed", range(3))
def test_a_rise_that_stopped_is_saturated_and_one_that_creeps_on_is_not(seed):
    stopped = diagnose(_rise(np.full(150, 0.7), seed))
    assert stopped.primary == "healthy_saturation" and not stopped.unsure
    creeping = diagnose(_rise(0.7 + 0.12 * np.arange(1, 151) / 150, seed))  # still +0.12 over the second half
    assert creeping.primary == "still_rising" or set(creeping.unsure) == {"still_rising", "healthy_saturation"}


def test_rows_whose_reward_std_is_0_bound_the_zero_std_share_and_show_degeneracy():
    # no zero-std fraction logged: one group of 4 per step, every response scored alike on 70% of the late rows
    rng = np.random.default_rng(4)
    n = 80
    std = np.where(rng.random(n) < np.linspace(0.2, 0.7, n), 0.0, 0.3)
    reward = np.where(std == 0.0, 0.64, 0.64 + rng.normal(0, 0.05, n))
    d = diagnose(make_log({"reward": reward, "reward_std": std}))
    deg = d.verdict("advantage_degeneracy")
    assert deg is not None and d.primary == "advantage_degeneracy"
    bound = next(e for e in deg.evidence if e["signal"].startswith("share of rows with reward_std = 0"))
    assert bound["value"] >= 0.5
    few = np.where(rng.random(n) < 0.2, 0.0, 0.3)  # 20% of the rows: the bound decides nothing
    d = diagnose(make_log({"reward": 0.64 + rng.normal(0, 0.05, n), "reward_std": few}))
    assert d.verdict("advantage_degeneracy") is None


def test_the_ar1_inflation_is_the_spread_of_a_correlated_series_mean():
    # independent route: the standard deviation of the mean over many simulated AR(1) series against the iid one
    rng = np.random.default_rng(5)
    n, rho, draws = 400, 0.6, 4000
    e = rng.normal(0, 1, (draws, n))
    x = np.empty_like(e)
    x[:, 0] = e[:, 0] / math.sqrt(1 - rho**2)
    for t in range(1, n):
        x[:, t] = rho * x[:, t - 1] + e[:, t]
    measured = x.mean(axis=1).std() / (x.std(axis=1).mean() / math.sqrt(n))
    estimated = np.mean([ar1_inflation(row) for row in x[:200]])
    assert estimated == pytest.approx(measured, rel=0.1)
    assert ar1_inflation(rng.normal(0, 1, 400)) == pytest.approx(1.0, abs=0.1)
    assert ar1_inflation(np.array([1.0, 2.0])) == 1.0
