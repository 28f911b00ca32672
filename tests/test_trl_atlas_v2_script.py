"""The TRL atlas's second protocol (paper_repro/trl_atlas_v2.py): its outcome rule on synthetic reward curves and its
scoring, no training."""

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("trl")
sys.path.insert(0, str(Path(__file__).parents[1] / "paper_repro"))
import trl_atlas_v2 as v2  # noqa: E402

STEPS = np.arange(1, 401)


def test_a_crash_on_the_first_updates_fell_where_the_first_protocol_saw_no_rise():
    """From the warmed 0.25 to 0 at step 2 and pinned there: the first protocol's r0 (its first 2.5%) already held
    the crash and read 'never rose'; r0 = the first point reads the fall."""
    import trl_atlas as v1

    r = np.where(STEPS == 1, 0.25, 0.0)
    assert v1.outcome(STEPS, r)[0] == "never rose"
    out, stats = v2.outcome(STEPS, r)
    assert out == "fell" and stats["r0"] == 0.25 and stats["end"] == 0.0


def test_rise_hold_and_rise_fall_and_flat():
    rise = 0.95 - 0.7 * np.exp(-(STEPS - 1) / 40.0)
    assert v2.outcome(STEPS, rise)[0] == "held"
    assert v2.outcome(STEPS, np.where(STEPS < 200, rise, 0.05))[0] == "fell"
    assert v2.outcome(STEPS, np.full(400, 0.3))[0] == "never rose"
    assert v2.outcome(STEPS, rise, crashed=True)[0] == "fell"


def test_cells_count_t1_once_and_every_other_t_twice():
    cells = v2.cells()
    assert cells.count((1, "on")) == 1 and (1, "off") not in cells
    assert len(cells) == 1 + 2 * (len(v2.REFRESH) - 1)


def test_decided_reads_at_risk_as_a_hedge():
    assert v2.decided("safe", "held") and v2.decided("unsafe", "fell")
    assert v2.decided("safe", "fell") is False and v2.decided("unsafe", "held") is False
    assert v2.decided("at risk", "fell") is None and v2.decided("safe", "never rose") is None


def test_score_on_synthetic_rows():
    """Rows of a two-lr atlas: the held-out accuracy, the kind split and the boundary per cell follow the rule."""
    rise = list(0.95 - 0.7 * np.exp(-(STEPS - 1) / 40.0))
    crash = [0.25] + [0.0] * 399
    rows = []
    for seed in v2.SEEDS:
        for T, clip in v2.cells():
            for lr in v2.LRS:
                fell = lr >= 3e-3
                rows.append({"lr": lr, "T": T, "clip": clip, "seed": seed, "crashed": False, "steps": list(STEPS),
                             "reward": crash if fell else rise, "verdict": "unsafe" if fell else "safe",
                             "max_safe_lr": 2.2e-3})
    s = v2.score(rows)
    a, n = s["acc"]["predict"]
    assert a == n == len(v2.HELD_OUT) * len(v2.cells()) * len(v2.LRS)
    assert s["measurable"] == len(v2.cells()) and s["within"] == len(v2.cells())
    bound = s["cells"][(1, "on")][0]
    assert bound == pytest.approx((1.7e-3 * 3e-3) ** 0.5)
