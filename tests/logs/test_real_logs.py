"""Every real log in ../shared/data/real_logs (written by other people's trainers, never shipped
here) is read with the right format, or refused for the right reason."""

from __future__ import annotations

import numpy as np
import pytest
from _real_logs import ALEX_JSON, ALEX_TB, DPO, IMJONEZZ, SRINATH, VERL_SMOKE
from _real_logs import SUNSHINE as CONSOLE

from gspo_dynamics import ConfigError
from gspo_dynamics.logs import read_log
from gspo_dynamics.real_logs import real_log_files

# file -> (format, trainer, logging interval, reward points, series that must be present)
READABLE = {
    IMJONEZZ: (
        "trl_state", "trl", 1, 250,
        {"reward", "reward_std", "kl_ref", "mean_length", "grad_norm", "learning_rate",
         "loss", "reward/correctness_reward_func", "reward/xmlcount_reward_func"},
    ),
    SRINATH: (
        "trl_state", "trl", 10, 50,
        {"reward", "reward_std", "frac_zero_std", "entropy", "clip_frac", "mean_length",
         "truncation_rate", "reward/gameplay_scores", "reward/valid_json_reward"},
    ),
    ALEX_JSON: (
        "trl_state", "trl", 1, 160,
        {"reward", "reward_std", "frac_zero_std", "entropy", "kl_ref", "clip_frac",
         "mean_length", "truncation_rate", "reward/wordle_reward_func", "eval/reward",
         "eval/kl_ref"},
    ),
    ALEX_TB: (
        "tensorboard", "trl", 1, 160,
        {"reward", "reward_std", "frac_zero_std", "entropy", "kl_ref", "clip_frac",
         "mean_length", "truncation_rate", "reward/wordle_reward_func", "eval/reward"},
    ),
    CONSOLE: (
        "hf_console", "trl", 1, 200,
        {"reward", "reward_std", "kl_ref", "mean_length", "grad_norm", "learning_rate",
         "reward/reward_fn"},
    ),
    VERL_SMOKE: (
        "jsonl", "verl", 1, 3,
        {"reward", "entropy", "clip_frac", "kl_old_new", "kl_ref", "critic/rewards/mean",
         "mean_length", "truncation_rate"},
    ),
}


def test_every_real_log_is_covered(real_logs):
    on_disk = {p.name for p in real_log_files(real_logs)}
    assert on_disk == set(READABLE) | {DPO}


@pytest.mark.parametrize("name", sorted(READABLE))
def test_real_log_is_read(real_logs, name):
    fmt, trainer, interval, n_reward, required = READABLE[name]
    log = read_log(real_logs / name)
    assert (log.format, log.trainer, log.logging_interval) == (fmt, trainer, interval)
    assert log.n_points("reward") == n_reward
    assert required <= set(log.names), required - set(log.names)
    assert np.all(np.diff(log.steps) > 0)
    for values in log.series.values():
        assert values.shape == log.steps.shape and values.dtype == np.float64


def test_trl_summary_row_is_skipped_and_eval_rows_are_prefixed(real_logs):
    log = read_log(real_logs / ALEX_JSON)
    assert "train_runtime" not in log.names and "runtime" not in log.names
    eval_steps = log.steps[np.isfinite(log["eval/reward"])]
    assert list(eval_steps) == [20, 40, 60, 80, 100, 120, 140, 160]  # eval_steps = 20


def test_trl_version_guess_and_reward_std_kind(real_logs):
    old = read_log(real_logs / IMJONEZZ)
    assert old.version == "<0.16" and old.reward_std_kind == "group_mean_std"
    new = read_log(real_logs / ALEX_JSON)
    assert new.version == ">=0.20" and new.reward_std_kind == "unknown"  # 0.20..0.26 or >= 0.27


def test_console_values_printed_as_strings_are_numbers(real_logs):
    log = read_log(real_logs / CONSOLE)
    assert log.steps[0] == 1 and log.steps[-1] == 200
    assert log["reward"][0] == 0.125 and log["loss"][2] == pytest.approx(9.825e-06)
    assert not log.warnings


def test_dpo_log_is_refused_naming_the_algorithm(real_logs):
    with pytest.raises(ConfigError, match="DPO"):
        read_log(real_logs / DPO)


def test_verl_smoke_run_is_read_and_flagged_too_short(real_logs):
    log = read_log(real_logs / VERL_SMOKE)
    assert log.is_too_short() and log.too_short
    assert not log.is_too_short(min_points=3)
    assert any("too short" in w for w in log.warnings)
    assert list(log.steps) == [1, 2, 3]


def test_json_and_tensorboard_copies_of_one_run_agree(real_logs):
    from_json = read_log(real_logs / ALEX_JSON)
    from_tb = read_log(real_logs / ALEX_TB)
    np.testing.assert_array_equal(from_json.steps, from_tb.steps)
    common = set(from_json.names) & set(from_tb.names)
    assert {"reward", "reward_std", "kl_ref", "entropy", "frac_zero_std", "eval/reward"} <= common
    for name in common:
        # TensorBoard stores float32: compare at float32 precision.
        np.testing.assert_array_equal(
            from_json[name].astype(np.float32), from_tb[name].astype(np.float32), err_msg=name
        )


def test_run_directory_resolves_to_its_log(real_logs, tmp_path):
    (tmp_path / "trainer_state.json").write_bytes((real_logs / ALEX_JSON).read_bytes())
    assert read_log(tmp_path).n_points() == 160
