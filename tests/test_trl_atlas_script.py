"""The TRL atlas's outcome rule (paper_repro/trl_atlas.py) on synthetic reward curves: no training."""

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("trl")
sys.path.insert(0, str(Path(__file__).parents[1] / "paper_repro"))
import trl_atlas as ta  # noqa: E402

STEPS_T1 = np.arange(1, ta.MAX_STEPS + 1)  # T = 1: a reward point per step
STEPS_T8 = np.arange(1, ta.MAX_STEPS + 1, 8)  # T = 8: one per rollout


def _rise(steps, start=0.3, top=0.95, tau=40.0):
    return top - (top - start) * np.exp(-(steps - 1) / tau)


@pytest.mark.parametrize("steps", [STEPS_T1, STEPS_T8], ids=["T1", "T8"])
def test_rise_that_holds_is_held(steps):
    assert ta.outcome(steps, _rise(steps))[0] == "held"


@pytest.mark.parametrize("steps", [STEPS_T1, STEPS_T8], ids=["T1", "T8"])
def test_rise_then_collapse_fell(steps):
    r = np.where(steps < 150, _rise(steps), 0.0)
    out, stats = ta.outcome(steps, r)
    assert out == "fell" and stats["peak"] > 0.9 and stats["end"] == 0.0


def test_loss_of_half_the_gain_falls_and_less_holds():
    r = _rise(STEPS_T1, start=0.2, top=1.0)
    gain = 1.0 - 0.2
    late = STEPS_T1 > 250
    assert ta.outcome(STEPS_T1, np.where(late, 1.0 - 0.6 * gain, r))[0] == "fell"
    assert ta.outcome(STEPS_T1, np.where(late, 1.0 - 0.3 * gain, r))[0] == "held"


def test_flat_curve_never_rose_and_an_early_crash_fell():
    flat = np.full(len(STEPS_T1), 0.3)
    assert ta.outcome(STEPS_T1, flat)[0] == "never rose"
    crash = np.where(STEPS_T1 < 20, 0.3, 0.0)  # no rise at all, but it lost what it started with
    assert ta.outcome(STEPS_T1, crash)[0] == "fell"


def test_non_finite_reward_or_crash_fell():
    r = _rise(STEPS_T1)
    r[200] = np.nan
    assert ta.outcome(STEPS_T1, r)[0] == "fell"
    assert ta.outcome(STEPS_T1, _rise(STEPS_T1), crashed=True)[0] == "fell"


def test_outcome_invariant_to_reward_offset_within_bounds():
    r = _rise(STEPS_T1, start=0.1, top=0.6)
    assert ta.outcome(STEPS_T1, r)[0] == ta.outcome(STEPS_T1, r + 0.3)[0] == "held"


def test_scoring_marks():
    assert ta.right("at risk", "fell") and ta.right("unsafe", "fell") and not ta.right("safe", "fell")
    assert ta.right("safe", "held") and not ta.right("at risk", "held")
    assert ta.right("safe", "never rose") is None


def test_pilot_is_a_fifth_of_the_steps():
    assert ta.pilot_points(len(STEPS_T1), STEPS_T1) == 80
    assert ta.pilot_points(len(STEPS_T8), STEPS_T8) == 10
