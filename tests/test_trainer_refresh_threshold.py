"""paper_repro/trainer_at_scale.py, row trainer-refresh-threshold: the measured-T_c criterion and the
predicted-vs-measured agreement rule, checked against brute-force restatements of their definitions.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest


@pytest.fixture(scope="module")
def script(load_script):
    return load_script("paper_repro", "trainer_at_scale")


def _agree_by_interval(script, predicted, measured):
    """Definition: the true threshold lies in the sweep's interval (previous grid point, measured]
    (or above the last grid point when nothing was lost); a prediction agrees when some T in that
    interval is within a factor TC_FACTOR of it (T / TC_FACTOR <= predicted <= T TC_FACTOR)."""
    grid, f = script.T_SWEEP, script.TC_FACTOR
    if measured is None:
        interval = np.arange(grid[-1] + 1, 100 * grid[-1])
    else:
        i = grid.index(measured)
        interval = np.arange((grid[i - 1] if i else 1) + 1, measured + 1)
    if predicted is None:
        return measured is None
    return bool(np.any((interval / f <= predicted) & (predicted <= interval * f)))


def test_tc_agree_is_the_interval_rule(script):
    """tc_agree == the definition above for every prediction 1..200 (and None) against every outcome."""
    for predicted, measured in itertools.product([None, *range(1, 201)], [None, *script.T_SWEEP]):
        assert script.tc_agree(predicted, measured) == _agree_by_interval(script, predicted, measured), (predicted, measured)


def test_tc_agree_examples(script):
    assert script.tc_agree(None, None) and not script.tc_agree(None, 16)  # no threshold predicted, one found
    assert not script.tc_agree(3, None)  # the earlier reading (T_c = 3) against a monotone sweep
    assert script.tc_agree(12, 16) and script.tc_agree(32, 16) and not script.tc_agree(33, 16)


def test_lost_saturation_counts_drawdowns_not_slow_rises(script):
    """A crash after the rise is lost; a slower monotone rise (a deficit without a drawdown) is not."""
    steps, T = 96, 16
    t = np.arange(steps)
    on = np.tile(1 - 0.6 * np.exp(-t / 3.0), (4, 1))  # (seeds, steps), monotone
    slow = np.tile(np.repeat(1 - 0.6 * np.exp(-t[::T] / 80.0), T), (4, 1))  # per-rollout constant, monotone
    lost, excess, deficit = script.lost_saturation(slow, T, on)
    assert not lost and excess == pytest.approx(0.0, abs=1e-12) and deficit > script.DRAWDOWN_MARGIN
    crash = on.copy()
    crash[1, 4 * T :] = 0.0  # one seed of four falls to 0 for its last two rollouts: mean drawdown ~ 1/4
    per_rollout = crash.reshape(4, -1, T).mean(-1)
    expected = np.mean([np.max(np.maximum.accumulate(r) - r) for r in per_rollout])
    lost, excess, _ = script.lost_saturation(crash, T, on)
    assert lost and excess == pytest.approx(expected - 0.0, abs=1e-12)
