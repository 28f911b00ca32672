"""Confident verdicts the curve contradicts, each on a log made here with the shape of the real log that showed it
(the real logs stay outside the repository): a reward function that merely did not rise is no exploit."""

from __future__ import annotations

import numpy as np
import pytest

from gspo_dynamics.diagnose import diagnose
from gspo_dynamics.diagnose._findings import Z_RISE
from gspo_dynamics.diagnose._trend_stats import change
from gspo_dynamics.diagnose._verdict import REPORT_CONFIDENCE
from gspo_dynamics.logs import RunLog


def make_log(reward, **series) -> RunLog:
    n = len(reward)
    data = {"reward": np.asarray(reward, float), **{k: np.asarray(v, float) for k, v in series.items()}}
    return RunLog(steps=np.arange(1, n + 1, dtype=np.int64), series=data, format="jsonl", source="<synthetic>",
                  trainer="trl")


def two_functions(drop: float, seed: int = 0, n: int = 400) -> tuple[np.ndarray, np.ndarray]:
    """An unlearning-style pair (the shape of Nithin2311/grpo-machine-unlearning's run 4): one reward function climbs
    from -0.7 to 0.1 under row noise of sd 0.6 (Welch z about 6), the other drifts down by `drop` from 0.2 under noise of sd 0.35."""
    rng = np.random.default_rng(seed)
    t = np.arange(n, dtype=float)
    up = -0.7 + 0.8 * t / n + rng.normal(0, 0.6, n)
    lag = 0.2 - drop * t / n + rng.normal(0, 0.35, n)
    return up, lag


@pytest.mark.parametrize("drop", [0.0, 0.09])  # flat; a drift down short of a significant fall (z about -2)
def test_a_reward_function_that_did_not_rise_is_no_confident_exploit(drop):
    up, lag = two_functions(drop)
    z_lag = change(np.arange(lag.size), lag)["z"]
    assert -Z_RISE < z_lag < 1.0  # "did not rise", not "fell"
    d = diagnose(make_log(up + lag, **{"reward/plausible": up, "reward/format": lag}))
    assert any(f.name == "reward_function_divergence" for f in d.findings)  # the finding still says it
    hack = d.verdict("reward_hacking")
    assert hack is None or hack.confidence < REPORT_CONFIDENCE
    assert d.primary != "reward_hacking"


def test_a_reward_function_that_fell_while_another_carried_the_gain_is_reward_hacking():
    up, lag = two_functions(0.4)
    assert change(np.arange(lag.size), lag)["z"] < -2 * Z_RISE  # a fall well past its noise
    d = diagnose(make_log(up + lag, **{"reward/plausible": up, "reward/format": lag}))
    assert d.primary == "reward_hacking" and d.verdicts[0].confidence >= 0.9
