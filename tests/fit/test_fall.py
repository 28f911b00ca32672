"""fit._fall: the fall below the running best against a loop over blocks, its noise floor by simulation,
and a collapsing pilot read by `pilot_forecast`."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gspo_dynamics.predict import pilot_forecast, read_run_config
from gspo_dynamics.fit._fall import BLOCK, COLLAPSE_SHARE, FALL_SHARE, Z_FALL, reward_fall

FLAT_FALSE_ALARMS = 0.012  # the docstring's 0.4% for a flat curve of 6 blocks, with room for 2000 draws' error (s.e. 0.14%)


def loop_fall(reward) -> tuple[float, float, float]:
    """(fall, best, after) by a loop over block means: the largest best-so-far minus the current mean."""
    best, out = -np.inf, (0.0, None, None)
    for k in range(len(reward) // BLOCK):
        m = float(np.mean(reward[k * BLOCK:(k + 1) * BLOCK]))
        best = max(best, m)
        if best - m > out[0] or out[1] is None:
            out = (best - m, best, m)
    return out


@pytest.mark.parametrize("seed", range(5))
def test_fall_matches_a_loop_over_blocks(seed):
    reward = np.random.default_rng(seed).random(26)  # a ragged tail of 2 points joins no block
    f = reward_fall(np.arange(1, 27), reward)
    assert (f.fall, f.best, f.after) == pytest.approx(loop_fall(reward))


def test_a_rising_curve_has_no_fall_and_a_collapse_is_a_loss():
    steps = np.arange(1, 25)
    rising = 0.9 - 0.6 * np.exp(-steps / 6)
    assert reward_fall(steps, rising).fall == 0.0 and not reward_fall(steps, rising).lost
    noise = np.random.default_rng(0).normal(0, 0.03, 24)
    collapse = np.clip(np.where(steps <= 4, 0.45, 0.02) + noise, 0, 1)
    f = reward_fall(steps, collapse, (0.0, 1.0))
    assert f.lost and f.best_steps == (1, 4) and f.fall > 0.35 and f.z > Z_FALL


def test_a_significant_fall_smaller_than_a_tenth_of_the_range_is_not_a_loss():
    steps = np.arange(1, 25)
    small = np.where(steps <= 12, 0.5, 0.5 - FALL_SHARE / 2) + np.random.default_rng(1).normal(0, 1e-3, 24)
    f = reward_fall(steps, small, (0.0, 1.0))
    assert f.z > Z_FALL and not f.lost
    assert reward_fall(steps, small).lost  # the range unknown: significance alone


def test_losing_most_of_a_low_best_is_a_loss():
    """The second clause of (2), the range [0, 1]: curves at 0.12 and at 0.09 that fall to 0 (the second by
    less than a tenth of the range) lost what they had: a loss; one at 0.09 that falls to 0.03
    (67% of it) and one at 0.04 that falls to 0 (a best under FALL_SHARE / 2 of the range) are not."""
    steps = np.arange(1, 25)
    noise = np.random.default_rng(2).normal(0, 1e-3, 24)

    def falls(level, to):
        return reward_fall(steps, np.where(steps <= 12, level, to) + noise, (0.0, 1.0))

    assert falls(0.12, 0.0).lost and falls(0.09, 0.0).lost and falls(0.09, 0.0).fall < FALL_SHARE
    assert not falls(0.09, 0.03).lost and falls(0.09, 0.03).z > Z_FALL
    assert not falls(0.04, 0.0).lost and falls(0.04, 0.0).z > Z_FALL
    assert COLLAPSE_SHARE * 0.09 < 0.09 and 0.06 < COLLAPSE_SHARE * 0.09  # the cases straddle the share


def test_a_flat_noisy_curve_rarely_reads_as_a_loss():
    """2000 flat curves of 24 normal points: the share read as a loss stays near the docstring's 0.4%."""
    rng = np.random.default_rng(7)
    steps = np.arange(1, 25)
    alarms = np.mean([reward_fall(steps, rng.normal(0.5, 0.05, 24)).lost for _ in range(2000)])
    assert alarms < FLAT_FALSE_ALARMS


def test_pilot_forecast_says_a_collapsed_pilot_lost_what_it_had(tmp_path):
    steps = np.arange(1, 25)
    reward = np.clip(np.where(steps <= 4, 0.45, 0.01) + np.random.default_rng(2).normal(0, 0.02, 24), 0, 1)
    path = tmp_path / "pilot.jsonl"
    path.write_text("".join(json.dumps({"step": int(s), "reward": float(r)}) + "\n" for s, r in zip(steps, reward)))
    setup = read_run_config({"lr": 3e-3, "refresh_interval": 2, "group_size": 8})
    f = pilot_forecast(setup, str(path), reward_range=(0.0, 1.0))
    assert f.fall.lost and f.to_json()["pilot_fall"]["lost"] is True
    assert any(line.startswith("  the pilot lost reward it had") for line in f.summary_lines())


def test_a_reward_stuck_on_one_value_gets_its_scatter_from_the_differences_spread():
    """Mostly exactly 1.0 (a solved count task) with two dips: the median deviation is 0, the fallback
    spread is not, so z is finite; the dips are under a tenth of [0, 1], so no loss."""
    reward = np.ones(24)
    reward[[9, 17]] = 0.97
    f = reward_fall(np.arange(1, 25), reward, (0.0, 1.0))
    assert np.isfinite(f.z) and f.fall == pytest.approx(0.03 / BLOCK) and not f.lost


@pytest.mark.real_logs
def test_on_real_runs_a_dip_to_zero_is_a_loss_and_noisy_starts_are_not(real_logs):
    """The first 40 logged steps of three runs nobody here wrote (../shared/data/real_logs): the Qwen3.5-9B
    GRPO run of Sunshine535 drops from 0.53 (steps 13-16) to 0.03 (steps 25-28) before it recovers to ~0.4
    (steps 41-200): a loss; the Llama-3.1-8B start of IMJONEZZ and the Wordle run of alexchilton move within
    their noise (z ~2): none."""
    from _real_logs import ALEX_JSON, IMJONEZZ, SUNSHINE
    from gspo_dynamics.logs import read_log

    def first_40(name):
        steps, reward = read_log(str(real_logs / name)).valid("reward")
        return steps[:40], reward[:40], reward

    steps, reward, whole = first_40(SUNSHINE)
    f = reward_fall(steps, reward, (0.0, 1.0))
    assert f.lost and f.best_steps == (13, 16) and f.after_steps == (25, 28) and f.z > Z_FALL
    assert whole[40:].mean() > 0.3  # the run came back: a dip, which a pilot cannot tell from a collapse
    for name in (IMJONEZZ, ALEX_JSON):
        steps, reward, _ = first_40(name)
        assert not reward_fall(steps, reward).lost
