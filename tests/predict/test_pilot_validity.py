"""A pilot that is no evidence about its config (`predict._pilot_validity`): its updates not finite (a NaN gradient
norm on most rows, audit H9a), or most of its steps without any signal (audit H6: reward_std 0 on 34 of 50). Either
answers 'unsure' with the reason, never 'the pilot kept its reward'; one skipped step or half the steps do not."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from gspo_dynamics.cli.main import main

N = 40


def _pilot(tmp_path, **per_row) -> str:
    rng = np.random.default_rng(0)
    rows = []
    for i in range(N):
        row = {"step": i + 1, "reward": 0.3 + 0.3 * (1 - math.exp(-i / 10)) + 0.02 * rng.standard_normal(),
               "reward_std": 0.3, "grad_norm": 0.5, "loss": 0.01, "learning_rate": 1e-6, "epoch": i / N}
        row.update({k: f(i) for k, f in per_row.items()})
        rows.append(row)
    path = tmp_path / "pilot.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def _verdict(tmp_path, capsys, pilot: str) -> dict:
    config = tmp_path / "trl.json"
    config.write_text(json.dumps({"learning_rate": 1e-6, "num_generations": 8, "per_device_train_batch_size": 8,
                                  "max_steps": 400}))
    code = main(["predict", "--config", str(config), "--pilot", pilot, "--json"])
    out = capsys.readouterr().out
    assert code == 0
    return json.loads(out)


def test_a_pilot_whose_gradient_norm_is_nan_on_most_rows_is_no_evidence(tmp_path, capsys):
    got = _verdict(tmp_path, capsys, _pilot(tmp_path, grad_norm=lambda i: math.nan))
    assert got["verdict"] == "unsure"
    assert "grad_norm is NaN or infinite on 40 of its 40 rows" in got["reason"]
    one = _verdict(tmp_path, capsys, _pilot(tmp_path, grad_norm=lambda i: math.nan if i == 3 else 0.5))
    assert "no evidence" not in one["reason"]  # one step the loss scaler skipped


@pytest.mark.parametrize("dead, flagged", [(24, True), (20, False)])
def test_a_pilot_most_of_whose_steps_carry_no_signal_is_no_evidence(tmp_path, capsys, dead, flagged):
    """reward_std 0 on 24 of 40 rows (most) flags it, naming the group-size key; on 20 (half) it does not."""
    got = _verdict(tmp_path, capsys, _pilot(tmp_path, reward_std=lambda i: 0.0 if i < dead else 0.3))
    assert ("no evidence" in got["reason"]) is flagged
    if flagged:
        assert got["verdict"] == "unsure" and f"on {dead} of its 40 steps no group carried" in got["reason"]
        assert "raise num_generations" in got["reason"]


@pytest.mark.parametrize("cut, flagged", [(1.0, True), (0.4, False)])
def test_a_pilot_whose_answers_are_cut_at_the_cap_is_no_evidence_and_names_the_cap(tmp_path, capsys, cut, flagged):
    """Every completion cut at 512 tokens (audit s38 D5: called safe, change none, where diagnose calls the run
    invalid): unsure, with the cap raised to twice the late mean length in the config's key; 40% cut is no reason."""
    got = _verdict(tmp_path, capsys, _pilot(tmp_path, **{"completions/clipped_ratio": lambda i: cut,
                                                         "completions/mean_length": lambda i: 500.0,
                                                         "completions/max_length": lambda i: 512.0}))
    assert ("are cut at the length cap" in got["reason"]) is flagged
    if flagged:
        assert got["verdict"] == "unsure" and got["reason"].startswith("the pilot is no evidence about this config: 100%")
        assert got["changes"] == [{"key": "max_completion_length", "value": 1000, "setting": "max_completion_length: 1000",
                                  "buys": "twice the pilot's mean completion length: answers end, not cut"}]


def test_a_cut_pilot_under_a_config_that_masks_truncation_is_not_told_to_mask_it(tmp_path, capsys):
    """Review s38: the reason advised mask_truncated_completions: true to a config that sets it."""
    pilot = _pilot(tmp_path, **{"completions/clipped_ratio": lambda i: 1.0, "completions/mean_length": lambda i: 500.0})
    config = tmp_path / "trl.json"
    config.write_text(json.dumps({"learning_rate": 1e-6, "num_generations": 8, "per_device_train_batch_size": 8,
                                  "max_steps": 400, "mask_truncated_completions": True}))
    assert main(["predict", "--config", str(config), "--pilot", pilot, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert "are cut at the length cap" in got["reason"] and "mask_truncated_completions" not in got["reason"]


def test_a_truncation_share_that_rose_over_the_pilot_is_its_course_not_its_premise(tmp_path, capsys):
    """No completion cut over the pilot's first quarter, all over its last (a collapse whose answers ran to the cap,
    public-collapse's Sunshine535 rho 0.3, read 'unsafe' from its fall before this rule): not 'no evidence'."""
    got = _verdict(tmp_path, capsys, _pilot(tmp_path, **{"completions/clipped_ratio": lambda i: 0.0 if i < 20 else 1.0,
                                                         "completions/mean_length": lambda i: 500.0}))
    assert "are cut at the length cap" not in got["reason"]
    assert not any(c["key"] == "max_completion_length" for c in got["changes"])
