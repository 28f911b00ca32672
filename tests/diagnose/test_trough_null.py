"""The trough's search (`_fall._trough`: the deepest drawdown over every pair of windows) on white noise: past Z_TREND
it fires on about 4% of flat logs, so its confidence is 0.5 only at TROUGH_Z, the search's own 1% bar (audit s39 D1: a
flat notebook run with a dip of z 3.3 that half recovered was "dynamical instability (0.57)", roll back and lower
the lr)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gspo_dynamics.diagnose import diagnose
from gspo_dynamics.diagnose._fall import TROUGH_Z, _trough, _trough_reading
from gspo_dynamics.diagnose._trend_stats import Z_TREND, change
from gspo_dynamics.logs import RunLog

REPS = 400


@pytest.fixture(scope="module")
def null_z() -> np.ndarray:
    """The trough's z on REPS white-noise logs of 192 rows (0 where it finds none)."""
    rng = np.random.default_rng(7)
    z = np.zeros(REPS)
    steps = np.arange(192, dtype=float)
    for i in range(REPS):
        r = rng.normal(0, 1, 192)
        found = _trough(steps, r, change(steps, r))
        z[i] = found["z"] if found is not None and found["drop"] > 0.3 else 0.0
    return z


def test_the_trough_bar_holds_the_searchs_false_alarms_near_1_percent(null_z):
    tolerance = 3 * math.sqrt(0.01 * 0.99 / REPS)
    assert np.mean(null_z >= TROUGH_Z) <= 0.01 + tolerance
    assert np.mean(null_z >= Z_TREND) > 0.02  # the plain bar: the search's false alarms, why TROUGH_Z exists


def test_a_flat_run_with_a_shallow_dip_that_half_recovers_is_no_confident_instability():
    """The audited shape: 192 rows at 2.35 (row sd 0.35), 0.23 lower over rows 58-105, 0.12 lower after."""
    rng = np.random.default_rng(33)  # a draw whose dip the search finds at z 3.6, as the audited log's 3.3
    level = np.full(192, 2.40)
    level[57:105] = 2.20
    level[105:] = 2.32
    reward = level + rng.normal(0, 0.35, 192)
    found = _trough(np.arange(192, dtype=float), reward, change(np.arange(192), reward))
    assert found is not None and Z_TREND <= found["z"] < TROUGH_Z  # the search sees it, short of its own bar
    assert _trough_reading(np.arange(192, dtype=float), reward, found)[1] < 0.5  # was 0.65 read at Z_TREND
    log = RunLog(steps=np.arange(1, 193, dtype=np.int64), series={"reward": reward}, format="jsonl",
                 source="<synthetic>", trainer="trl")
    top = diagnose(log).verdicts[0]
    assert top.mode != "dynamical_instability" or top.confidence < 0.5
