"""A reward or loss that ends in NaN / inf: the reader's `trailing_non_finite` on rows whose answer is known, and
diagnose's verdict on such a log (a run that diverged numerically is not "still rising")."""

from __future__ import annotations

import json
import math

import pytest

from gspo_dynamics.diagnose import diagnose
from gspo_dynamics.logs import read_log
from gspo_dynamics.logs._runlog import trailing_non_finite

NAN, INF = math.nan, math.inf


def rows(rewards, losses=None):
    losses = losses if losses is not None else [0.5] * len(rewards)
    return [(i + 1, {k: v for k, v in (("reward", r), ("loss", l)) if v is not None})
            for i, (r, l) in enumerate(zip(rewards, losses))]


@pytest.mark.parametrize("rewards, expected", [
    ([0.1, 0.2, NAN, NAN], (3, 2)),
    ([0.1, 0.2, INF, -INF, NAN], (3, 3)),
    ([0.1, NAN, None, NAN], (2, 2)),  # a row without the value is skipped, not counted
    ([0.1, 0.2, NAN, 0.3], None),  # finite again at the end: a bad batch, not a divergence
    ([NAN, NAN], None),  # never finite: nothing diverged (the reader reports no reward to read)
    ([0.1, 0.2], None),
    (["0.1", "nan", "inf"], (2, 2)),  # numeric strings as the reader reads them
])
def test_trailing_non_finite_finds_the_run_that_ends_the_series(rewards, expected):
    found = trailing_non_finite(rows(rewards), lambda key: key)
    assert found.get("reward") == expected
    assert "loss" not in found


def test_a_log_whose_reward_turns_nan_is_diagnosed_as_diverged(tmp_path):
    """40 rising rewards, then 20 rows of NaN reward and loss: primary dynamical instability at confidence 1 with
    the step it diverged at; the trend ("still rising" on the first 40) is kept below it; the reader says so."""
    path = tmp_path / "log.jsonl"
    lines = [{"step": s, "reward": 0.2 + 0.01 * s if s <= 40 else NAN, "loss": 0.1 if s <= 40 else NAN}
             for s in range(1, 61)]
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))  # json writes NaN as NaN, as torch logs do
    log = read_log(str(path))
    assert dict(log.diverged) == {"reward": (41, 20), "loss": (41, 20)}
    d = diagnose(log)
    assert d.primary == "dynamical_instability"
    top = d.verdicts[0]
    assert top.confidence == pytest.approx(1.0, abs=1e-3) and "diverged numerically at step 41" in top.advice[0]
    assert [e["steps"] for e in top.evidence[:2]] == [[41, 60], [41, 60]]
    trend = next(v for v in d.verdicts if v.mode == "still_rising")
    assert trend.confidence < 0.5 and trend.evidence[-1]["value"] == 41
    assert any("NaN or infinite in its last 20 logged value(s), from step 41 on" in n for n in d.notes)


def test_one_nan_at_the_end_is_no_divergence(tmp_path):
    """One NaN reward at the last step: the reader records and says it, diagnose calls no divergence."""
    path = tmp_path / "log.jsonl"
    lines = [{"step": s, "reward": 0.2 + 0.01 * s if s < 40 else NAN} for s in range(1, 41)]
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    log = read_log(str(path))
    assert dict(log.diverged) == {"reward": (40, 1)}
    assert any("reward is NaN or infinite in its last 1 logged value(s), from step 40 on" in w for w in log.warnings)
    d = diagnose(log)
    assert d.primary != "dynamical_instability" and d.verdict("dynamical_instability") is None


def test_a_loss_that_turns_nan_while_the_reward_is_still_logged(tmp_path):
    """The loss NaN from step 31, the reward logged to step 60: diverged at 31 (the advice), and the trend keeps
    reading the reward as logged (no "stops before" evidence, no claim of it in the reader's warning)."""
    path = tmp_path / "log.jsonl"
    lines = [{"step": s, "reward": 0.2 + 0.005 * s, "loss": 0.1 if s <= 30 else NAN} for s in range(1, 61)]
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    log = read_log(str(path))
    assert dict(log.diverged) == {"loss": (31, 30)}
    assert not any("reads the reward before it" in w for w in log.warnings)
    d = diagnose(log)
    assert d.primary == "dynamical_instability" and "diverged numerically at step 31" in d.verdicts[0].advice[0]
    trend = d.verdicts[1]
    assert not any("stops before" in e["signal"] for e in trend.evidence)


def test_a_reward_nan_on_every_row_is_said_as_such_not_too_short(tmp_path):
    """100 rows whose reward is NaN: the verdict says no reward is a number (not "0 reward points, too short"), and
    the finding below it names the rows."""
    path = tmp_path / "log.csv"
    path.write_text("step,reward,entropy\n" + "".join(f"{s},nan,0.5\n" for s in range(1, 101)))
    head = diagnose(read_log(str(path))).headline()
    assert head[0] == "verdict    no reward to analyse: the reward is NaN or infinite on every row (below)"
    assert head[1].startswith("invalid    reward is NaN or infinite from step 1 (100 rows)")
    short = tmp_path / "short.csv"
    short.write_text("step,reward\n1,0.1\n2,0.2\n")
    assert diagnose(read_log(str(short))).headline()[0].startswith("verdict    too short to analyse: 2 reward points")
