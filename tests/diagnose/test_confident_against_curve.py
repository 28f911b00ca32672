"""Confident verdicts the curve contradicts, each on a log made here with the shape of the real log that showed it
(the real logs stay outside the repository): a reward function that merely did not rise is no exploit; a dip of a
few rows after a rise is a fall, not "still rising" (`_dip`); groups turned from all-correct to all-wrong by a fall
within the first rows rank below it (`_solved_groups.solved_to_failed`)."""

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


def rows_of(p: np.ndarray, every: int, seed: int = 0, samples: int = 64, **series) -> RunLog:
    """Rows of `samples` binary rewards at success p, logged every `every` steps."""
    rng = np.random.default_rng(seed)
    reward = rng.binomial(samples, np.clip(p, 0, 1)) / samples
    data = {"reward": reward, **{k: np.asarray(v, float) for k, v in series.items()}}
    return RunLog(steps=every * np.arange(1, p.size + 1), series=data, format="jsonl", source="<synthetic>",
                  trainer="trl", reward_std_kind="unknown")


def drop_item(d) -> dict | None:
    inst = d.verdict("dynamical_instability")
    return next((e for e in inst.evidence if e["signal"].startswith("sustained drop")), None) if inst else None


def test_a_dip_of_three_rows_after_a_rise_is_reported_not_read_as_still_rising():
    """The shape of haxiaww/LLaMA-OSS llama_med_grpo v4 (31 rows, every 10 steps): 0.10 -> 0.66 by step 50, three rows
    at 0.22 from step 80, back to 0.4 and to 0.6 from step 220; the quarter windows (8 rows) average the dip away."""
    p = np.concatenate([[0.25, 0.1, 0.13, 0.41], np.full(4, 0.66), np.full(3, 0.22), np.full(11, 0.42),
                        np.full(9, 0.58)])
    for seed in range(3):
        d = diagnose(rows_of(p, 10, seed))
        item = drop_item(d)
        assert d.primary == "dynamical_instability" and item is not None, (seed, d.primary)
        assert "then a recovery" in item["signal"] and 70 <= item["broke_at_step"] <= 80
        rising = d.verdict("still_rising")
        assert rising is None or rising.confidence < d.verdicts[0].confidence


@pytest.mark.parametrize("rows", [31, 60, 150])
def test_no_dip_is_found_in_a_saturation_or_a_flat_noisy_run(rows):
    t = np.arange(rows)
    for p in (0.3 + 0.6 * (1 - np.exp(-t / (rows / 6))), np.full(rows, 0.4)):
        for seed in range(10):
            assert drop_item(diagnose(rows_of(p, 10, seed))) is None, (rows, seed)


def test_three_rows_of_one_success_in_64_then_none_are_no_fall():
    """The shape of paper_repro/data/trl_family advantage_degeneracy-1 (100 rows of 64 samples at a success rate near
    0): a success rate's rows are binomial, so their noise at 1/64 is larger than the first differences' average
    (mostly exactly 0) says, and three rows of one success against three of none are no fall."""
    reward = np.zeros(100)
    reward[[21, 26, 29, 30, 31, 35]] = 1 / 64
    log = RunLog(steps=np.arange(1, 101), series={"reward": reward}, format="jsonl", source="<synthetic>",
                 trainer="trl", reward_std_kind="unknown")
    assert drop_item(diagnose(log)) is None


def test_groups_that_turned_all_correct_to_all_wrong_in_a_fall_within_the_first_rows_rank_below_it():
    """The shape of Sunshine535/nips-grpo-dynamics exp1a rho0.30 seed 42 (40 rows, every 5 steps): 0.90/0.75/0.95 at
    steps 5-15, 0.17 at 20, then 0.00-0.05 to the end, every group of two zero-std (all-correct, then all-wrong). The
    quarter window straddles the fall (its mean 0.28 < 1/2), so the all-correct start was read as all-wrong."""
    from gspo_dynamics.diagnose._solved_groups import solved_to_failed

    p = np.concatenate([[0.9, 0.75, 0.95, 0.17], np.full(36, 0.01)])
    zero_std = np.concatenate([p[:4] ** 2 + (1 - p[:4]) ** 2, np.ones(36)])  # p^G + (1-p)^G at G = 2
    log = rows_of(p, 5, 0, frac_zero_std=zero_std)
    flip = solved_to_failed(log)
    assert flip is not None and flip[0] > 0.5 > flip[1]
    d = diagnose(log)
    item = drop_item(d)
    assert d.primary == "dynamical_instability" and item is not None and "not climbed back" in item["signal"]
    deg = d.verdict("advantage_degeneracy")
    assert deg is not None and deg.confidence < d.verdicts[0].confidence
    assert any(e["signal"].startswith("zero-std groups turned from all-correct to all-wrong") for e in deg.evidence)


@pytest.mark.parametrize("n", [31, 120])
def test_the_dips_false_alarm_rate_on_white_noise_is_within_its_bonferroni_level(n):
    """The module rule's p < ALPHA, Bonferroni over every (peak, trough) pair of every width, bounds the chance that
    pure noise shows a dip: simulated, the share of white-noise logs with one stays at ALPHA's level (an independent
    route to the bound the docstring states; binomial slack of 3 standard errors over 400 logs)."""
    from gspo_dynamics.diagnose._changepoint import ALPHA
    from gspo_dynamics.diagnose._dip import short_dip

    rng = np.random.default_rng(n)
    steps = np.arange(1, n + 1)
    found = 0
    for _ in range(400):
        r = 5.0 + rng.normal(0, 1, n)  # off [0, 1]: the noise is the first differences' alone
        found += short_dip(steps, r, change(steps, r)) is not None
    assert found / 400 <= ALPHA + 3 * np.sqrt(ALPHA * (1 - ALPHA) / 400), found


def test_a_rise_too_short_for_a_late_slope_is_unsure_and_prints_no_nan():
    """Ten noisy rows that step up (the shape of an own-loop epoch log: 5.8 early, 7.1 late): the late half is too short
    for its own slope (z NaN) and the fit is noisy, so neither reads the rise's course: unsure between still rising and
    saturated, never a sure "still rising", and no advice prints "slope z nan"."""
    for seed in range(10):
        rng = np.random.default_rng(seed)
        d = diagnose(make_log(np.r_[np.full(4, 5.8), np.full(6, 7.1)] + rng.normal(0, 0.5, 10)))
        assert "nan" not in d.action().lower(), (seed, d.action())
        if seed == 1:
            assert d.unsure == ("still_rising", "healthy_saturation"), d.action()
            assert "the last half too short for a slope of its own" in d.action()
