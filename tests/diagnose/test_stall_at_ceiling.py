"""A flat [0, 1] score is a stall only as far as it stopped below its ceiling (`_solved_groups.stall_at_ceiling`): a flat
0.97 of 1 was "stalled, raise the learning rate (2-10x)". The bound b = L((1 - late - CEILING_GAP) / CEILING_GAP) is
recomputed here by hand, and each of its three readings checked on a flat log at a level chosen on its side."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gspo_dynamics.diagnose import diagnose
from gspo_dynamics.diagnose._context import CEILING_GAP
from gspo_dynamics.diagnose._calibration import calibrate
from gspo_dynamics.diagnose._signals import success_rate
from gspo_dynamics.diagnose._trend import FLAT_SURE
from gspo_dynamics.diagnose._verdict import REPORT_CONFIDENCE
from gspo_dynamics.logs import RunLog


def _flat(level: float, n: int = 60, noise: float = 0.01, seed: int = 0) -> RunLog:
    r = np.clip(level + noise * np.random.default_rng(seed).standard_normal(n), 0.0, 1.0)
    return RunLog(steps=np.arange(1, n + 1, dtype=np.int64), series={"reward": r}, format="jsonl", source="<flat>")


def _bound(log: RunLog) -> float:
    r = log["reward"]
    late = float(np.mean(r[-len(r) // 4:]))  # the trend's late window: the last quarter of the rows
    return 1.0 / (1.0 + math.exp(-(1.0 - late - CEILING_GAP) / CEILING_GAP))


def test_a_flat_score_at_its_ceiling_is_a_solved_task_not_a_stall():
    log = _flat(0.975)
    assert _bound(log) < REPORT_CONFIDENCE
    d = diagnose(log)
    assert d.primary == "healthy_saturation" and not d.verdicts[0].unsure
    assert "a solved task" in d.action() and "raise the learning rate" not in d.action()


def test_a_flat_score_just_below_its_ceiling_is_unsure_between_a_stall_and_saturation():
    log = _flat(0.945, noise=0.005)
    assert REPORT_CONFIDENCE <= _bound(log) < FLAT_SURE
    v = diagnose(log).verdicts[0]
    assert v.mode == "stalled" and set(v.unsure) == {"stalled", "healthy_saturation"}
    assert "whether the task can score above" in v.advice[0]


def test_a_flat_score_well_below_its_ceiling_stays_a_stall_at_most_as_sure_as_the_gap():
    far, near = diagnose(_flat(0.6)), diagnose(_flat(0.915, noise=0.005))
    assert far.primary == "stalled" and "raise the learning rate" in far.action()
    assert near.primary == "stalled" and not near.verdicts[0].unsure
    assert _bound(_flat(0.915, noise=0.005)) >= FLAT_SURE
    assert near.verdicts[0].confidence <= calibrate(_bound(_flat(0.915, noise=0.005))) + 1e-12
    assert near.verdicts[0].confidence < far.verdicts[0].confidence


def test_a_reward_outside_zero_one_has_no_ceiling_to_stop_at():
    log = _flat(0.97)
    wide = RunLog(steps=log.steps, series={"reward": 4.0 * log["reward"]}, format="jsonl", source="<flat>")
    d = diagnose(wide)
    assert d.primary != "healthy_saturation" and "solved" not in d.action()


def test_a_summed_reward_within_zero_one_so_far_is_no_success_rate():
    """nano-aha-moment's reward = format + equation, each in [0, 1]: its values lie in [0, 1] so far, but the sum
    reaches 2, so p^G + (1 - p)^G and sqrt(p (1 - p)) do not apply and a flat 0.97 of it is no solved task."""
    n = 60
    fmt = np.clip(0.97 + 0.01 * np.random.default_rng(1).standard_normal(n), 0, 1)
    log = RunLog(steps=np.arange(1, n + 1, dtype=np.int64), format="jsonl", source="<sum>",
                 series={"reward": fmt, "reward/format_reward": fmt, "reward/equation_reward": np.zeros(n)})
    assert success_rate(log) is None
    assert success_rate(RunLog(steps=log.steps, series={"reward": fmt}, format="jsonl", source="<one>")) is not None
    assert diagnose(log).primary != "healthy_saturation"
