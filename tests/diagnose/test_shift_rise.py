"""The level-shift test (`_change_tests.shift_rise_test`): a rise done in the first rows and then held is a rise, not
noise (audit s39 D2: a TRL run that rose 2.8 -> 4.5 in its first 20 rows and held 280 more was "noise dominated
(0.66)"); its null (`sup_t_sf`) against a simulation of the same search on white noise, and a flat or slowly
swinging reward no rise."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gspo_dynamics.diagnose import diagnose
from gspo_dynamics.diagnose._change_tests import P_TREND, sup_t_sf, shift_rise_test
from gspo_dynamics.logs import RunLog


def _sup_t(x: np.ndarray, lo: int) -> np.ndarray:
    """The largest |two-sample t| over splits lo..n-lo of each row of x, by a loop over the splits (the test's
    cumulative sums not used)."""
    n = x.shape[1]
    best = np.zeros(x.shape[0])
    for k in range(lo, n - lo + 1):
        a, b = x[:, :k], x[:, k:]
        pooled = np.sqrt((((a - a.mean(1, keepdims=True)) ** 2).sum(1) + ((b - b.mean(1, keepdims=True)) ** 2).sum(1))
                         / (n - 2))
        best = np.maximum(best, np.abs(b.mean(1) - a.mean(1)) / (pooled * math.sqrt(1 / k + 1 / (n - k))))
    return best


@pytest.fixture(scope="module")
def null_sims() -> np.ndarray:
    return _sup_t(np.random.default_rng(0).normal(size=(3000, 300)), 15)


@pytest.mark.parametrize("c", [3.0, 3.3])
def test_the_null_of_the_searched_t_matches_a_simulation(c, null_sims):
    """Miller & Siegmund's tail against 3000 white-noise series of 300 rows searched over [15, 285]: within the
    simulation's error plus the discrete search's shortfall (the bound is for the continuous bridge: conservative)."""
    sims = null_sims
    simulated = float(np.mean(sims >= c))
    predicted = sup_t_sf(c, 15 / 300, 285 / 300)
    se = math.sqrt(predicted * (1 - predicted) / sims.size)
    assert simulated <= predicted + 3 * se
    assert simulated >= 0.6 * predicted  # the discrete search reaches most of the continuous tail


def test_the_null_matches_andrews_critical_values():
    """Andrews (1993, Table 1, p = 1): sup-F 13.01 at 1% for trim 0.05, 8.68 at 5% for trim 0.15; the tail form is
    on the conservative side there (0.0124, 0.054), and a probability everywhere (review s39: negative below c 0.6)."""
    assert 0.01 <= sup_t_sf(math.sqrt(13.01), 0.05, 0.95) <= 0.013
    assert 0.05 <= sup_t_sf(math.sqrt(8.68), 0.15, 0.85) <= 0.056
    assert all(0.0 <= sup_t_sf(c, 0.05, 0.95) <= 1.0 for c in np.linspace(0.0, 6.0, 121))


def early_rise(seed: int = 0, n: int = 300, rise_rows: int = 20) -> np.ndarray:
    """The shape of the audited run: 2.8 for `rise_rows` rows, 4.5 after, row noise of sd 1.4."""
    rng = np.random.default_rng(seed)
    level = np.where(np.arange(n) < rise_rows, 2.8, 4.5)
    return level + rng.normal(0, 1.4, n)


def test_a_rise_in_the_first_rows_then_held_is_a_rise_not_noise():
    reward = early_rise()
    found = shift_rise_test(np.arange(reward.size), reward)
    assert found is not None and found[0] >= 3.0 and found[2]["p"] <= P_TREND
    assert found[2]["before"] < 3.5 < found[2]["after"]
    log = RunLog(steps=np.arange(1, reward.size + 1, dtype=np.int64), series={"reward": reward}, format="jsonl",
                 source="<synthetic>", trainer="trl")
    d = diagnose(log)
    assert d.verdicts[0].mode != "noise_dominated"
    assert "noise_dominated" not in (d.verdicts[0].unsure or ())


@pytest.mark.parametrize("seed", range(5))
def test_a_flat_or_slowly_swinging_reward_is_no_shift(seed):
    """White noise, and an AR(1) swing (rho 0.8: a slow wander a plain t would take for a shift), give no rise."""
    rng = np.random.default_rng(100 + seed)
    n = 300
    assert shift_rise_test(np.arange(n), rng.normal(0, 1, n)) is None
    swing = np.zeros(n)
    for i in range(1, n):
        swing[i] = 0.8 * swing[i - 1] + rng.normal(0, 0.6)
    assert shift_rise_test(np.arange(n), swing) is None


def test_a_shift_below_a_meaningful_change_is_no_rise():
    """A precise log's small step (0.05 per-sample stds of a known spread) is significant, not meaningful."""
    rng = np.random.default_rng(3)
    reward = np.where(np.arange(400) < 60, 0.50, 0.51) + rng.normal(0, 0.002, 400)
    assert shift_rise_test(np.arange(400), reward) is not None
    assert shift_rise_test(np.arange(400), reward, spread=0.2) is None


def test_a_smooth_flat_wave_is_no_shift():
    """A noise-free slow wave: tiny pooled scatter, a small t after the AR(1) widening; was a "rise at z 37" where the
    tail form went negative (review s39)."""
    t = np.arange(120)
    assert shift_rise_test(t, 0.5 + 0.01 * np.sin(t / 40.0)) is None
