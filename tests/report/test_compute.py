"""Compute accounting (report._compute): the zero-std share is exactly the groups with zero advantage, the shares
and hours against a row-by-row loop, the Frechet bounds of the overlap, and the stop step read from diagnose."""

import numpy as np
import pytest
import torch

from gspo_dynamics.diagnose import diagnose
from gspo_dynamics.logs import RunLog, read_log
from gspo_dynamics.objectives import group_advantages
from gspo_dynamics.report import account, stop_step
from gspo_dynamics.report._compute import row_steps


def make_log(steps, **series) -> RunLog:
    n = len(steps)
    return RunLog(steps=np.asarray(steps, np.int64), format="jsonl", source="<test>",
                  series={k: np.asarray(v, float) for k, v in {"reward": np.linspace(0, 1, n), **series}.items()})


class Flat:
    """A diagnosis that reads no plateau or stall."""
    primary, unsure, implications, log = "still_rising", (), None, None


def test_zero_std_groups_are_exactly_the_groups_without_advantage():
    rng = np.random.default_rng(0)
    rewards = torch.tensor(rng.binomial(1, 0.8, size=(64, 8)), dtype=torch.float64)  # (groups, G)
    zero_std = float((rewards.std(dim=1) == 0).double().mean())
    for scale in ("group", "none"):
        adv = group_advantages(rewards, scale=scale)
        assert float((adv.abs().amax(dim=1) == 0).double().mean()) == zero_std  # no advantage <=> zero std
    log = make_log([1, 2, 3], frac_zero_std=[zero_std] * 3)
    assert account(log, Flat()).wastes[0].share == pytest.approx(zero_std)


def test_shares_and_hours_against_a_row_loop():
    steps, tau = [10, 20, 30, 50], [1.0, 2.0, np.nan, 4.0]  # seconds per step; a row without one takes the median
    z, t = [0.5, 0.1, 0.2, 0.9], [0.1, 0.5, np.nan, 0.3]
    acc = account(make_log(steps, step_time=tau, frac_zero_std=z, truncation_rate=t), Flat(), gpus=8, rate=2.5,
                  masked=True)
    d = [10, 10, 10, 20]  # the first row covers the median gap
    seconds = [d[i] * (tau[i] if tau[i] == tau[i] else 2.0) for i in range(4)]
    total = sum(seconds)
    assert acc.hours == pytest.approx(total / 3600) and acc.gpu_hours == pytest.approx(8 * total / 3600)
    assert acc.wastes[0].share == pytest.approx(sum(s * zi for s, zi in zip(seconds, z)) / total)
    tt = [0.1, 0.5, 0.0, 0.3]  # missing counts 0
    lo = sum(s * max(a, b) for s, a, b in zip(seconds, z, tt)) / total
    hi = sum(s * min(1.0, a + b) for s, a, b in zip(seconds, z, tt)) / total
    assert acc.total == pytest.approx((lo, hi))
    assert acc.basis == "time" and acc.time_key == "step_time" and any("median" in n for n in acc.notes)
    assert "$" in acc.lines()[0] and f"{8 * total / 3600:.3g} GPU-hours" in acc.lines()[1]
    # unmasked (TRL's default) or unknown, truncated completions are trained on: shown, not counted without signal
    for masked, said in ((False, "the config trains on them"), (None, "--config tells")):
        plain = account(make_log(steps, step_time=tau, frac_zero_std=z, truncation_rate=t), Flat(), masked=masked)
        zero = sum(s * zi for s, zi in zip(seconds, z)) / total
        assert plain.total == pytest.approx((zero, zero)) and plain.wastes[1].share == acc.wastes[1].share
        assert said in plain.wastes[1].why and "not counted as without signal" in plain.wastes[1].why


def test_without_step_times_the_shares_are_of_steps():
    acc = account(make_log([1, 2, 3, 5], frac_zero_std=[0.0, 0.0, 0.0, 1.0]), Flat(), gpus=4)
    assert acc.basis == "steps" and acc.hours is None and acc.gpu_hours is None
    assert acc.wastes[0].share == pytest.approx(2 / 5)  # the last row covers 2 of the 5 steps
    assert acc.wastes[1].share is None and "not logged" in acc.lines()[3]
    np.testing.assert_array_equal(row_steps(np.array([5, 6, 7, 9])), [1, 1, 1, 2])  # the first: the median gap


def test_a_given_step_time_stands_in_only_for_a_log_without_one():
    log = make_log([1, 2, 3, 5], frac_zero_std=[0.0, 0.0, 0.0, 1.0])
    acc = account(log, Flat(), gpus=2, seconds_per_step=3.0)
    assert acc.time_key == "--seconds-per-step" and acc.hours == pytest.approx(5 * 3.0 / 3600)
    assert acc.gpu_hours == pytest.approx(2 * 5 * 3.0 / 3600) and acc.wastes[0].share == pytest.approx(2 / 5)
    logged = account(make_log([1, 2], step_time=[1.0, 1.0]), Flat(), seconds_per_step=3.0)
    assert logged.time_key == "step_time" and logged.hours == pytest.approx(2 / 3600)


def test_the_stop_step_is_diagnoses_plateau(run_file):
    log = read_log(run_file(n=300, tau=15.0))
    d = diagnose(log, reward_range=(0, 1))
    assert d.primary == "healthy_saturation" and not d.unsure
    step, why = stop_step(d)
    assert step == pytest.approx(d.implications.time_to_plateau.value) and "plateau" in why
    acc = account(log, d, masked=True)
    assert acc.wastes[2].share == pytest.approx(np.mean(log.steps > step))  # equal step times: a share of rows
    after = log.steps > step  # every row: 1 step of 2 s, so a share of rows
    lo = np.where(after, 1.0, np.maximum(log["frac_zero_std"], log["truncation_rate"]))
    hi = np.where(after, 1.0, np.minimum(1.0, log["frac_zero_std"] + log["truncation_rate"]))
    assert acc.total == pytest.approx((lo.mean(), hi.mean()))


def test_no_stop_step_where_diagnose_reads_none():
    step, why = stop_step(Flat())
    assert step is None and "still rising" in why


def test_the_stop_step_of_a_fall_not_climbed_back_is_where_it_broke():
    """A rise to 0.6 by step 20, then a fall to 0.05 it does not climb back from (audit s37: a collapsed verl run whose
    report said 0% of the compute came after learning stopped): the steps past the last at the peak are counted,
    and the length-collapse marker stands at the late window's start, not the log's first step."""
    from gspo_dynamics.report._model import finding_steps

    rng = np.random.default_rng(0)
    t = np.arange(1, 101)
    reward = np.where(t <= 20, 0.6 * t / 20, np.maximum(0.05, 0.6 - 0.02 * (t - 20))) + 0.01 * rng.standard_normal(100)
    length = np.linspace(350, 20, 100) + rng.standard_normal(100)
    d = diagnose(make_log(t, reward=reward, mean_length=length))
    step, why = stop_step(d)
    assert d.primary == "dynamical_instability" and step is not None and 15 <= step <= 35  # the peak at step 20
    assert why.startswith(f"past step {step:.0f}, the last still at the reward's peak")
    assert account(d.log, d).wastes[-1].share > 0.6
    marks = dict((name, at) for at, name in finding_steps(d))
    assert marks.get("length collapse", 0) > 50


def test_truncated_completions_count_as_without_signal_only_where_the_config_masks_them():
    """TRL trains on truncated completions unless mask_truncated_completions is set (audit s38 D6: a report called 100%
    of a run signal-free from truncation alone, under TRL's default); other frameworks' configs, or none: unknown."""
    from gspo_dynamics.predict import read_run_config
    from gspo_dynamics.report._build import truncation_masked

    trl = {"learning_rate": 1e-6, "num_generations": 8, "per_device_train_batch_size": 8}
    assert truncation_masked(read_run_config(trl)) is False
    assert truncation_masked(read_run_config({**trl, "mask_truncated_completions": True})) is True
    assert truncation_masked(read_run_config({"lr": 0.1, "refresh_interval": 2, "group_size": 8})) is None
    assert truncation_masked(None) is None
