"""Checkpoints: atomic writes, RNG states, resume == uninterrupted (in process), and clear errors
that overwrite nothing for corrupt, truncated or mismatched checkpoints."""

import dataclasses
import json
import os
import random

import numpy as np
import pytest
import torch
from _train_helpers import TINY_MODEL, final_parameters, read_rows, tiny_config

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.train import _checkpoint as C
from gspo_dynamics.train.trainer import train


def test_atomic_write_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "f.bin"
    C.atomic_write_bytes(path, b"old")
    C.atomic_write_bytes(path, b"new contents")
    assert path.read_bytes() == b"new contents"
    assert os.listdir(tmp_path) == ["f.bin"]
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~umask  # an ordinary file's mode, not mkstemp's 0600


def test_rng_state_round_trip_through_a_checkpoint(tmp_path):
    """Saving, drawing, restoring, drawing again gives the same draws (torch, python, numpy)."""
    torch.manual_seed(1), random.seed(2), np.random.seed(3)
    C.save_checkpoint(tmp_path, {"config": {}, "model_config": {}, "step": 0, "model": {}, "optimizer": {},
                                 "rng": C.rng_state(), "metrics_rows": 0, "num_tokens": 0})
    first = (torch.rand(3), random.random(), np.random.rand(2))
    C.set_rng_state(C.load_checkpoint(tmp_path)["rng"])
    second = (torch.rand(3), random.random(), np.random.rand(2))
    assert torch.equal(first[0], second[0]) and first[1] == second[1] and np.array_equal(first[2], second[2])


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """A 4-step run (T = 2, checkpoints at steps 2 and 4), and its files' bytes."""
    directory = tmp_path_factory.mktemp("run")
    torch.set_num_threads(1)
    config = tiny_config(directory, steps=4, steps_per_generation=2, checkpoint_every=2, kl_coef=0.1)
    result = train(config, directory / "out")
    return config, directory / "out", result


def _snapshot(out):
    return {name: (out / name).read_bytes() for name in sorted(os.listdir(out))}


def test_resume_in_process_equals_the_uninterrupted_run(tmp_path, finished_run):
    """2 steps, then resume to 4: the same parameters and metric rows (up to `epoch`, which is
    step / steps and so differs while steps differs) as the 4-step run, bit for bit."""
    config, out, result = finished_run
    part = dataclasses.replace(config, steps=2)
    train(part, tmp_path / "out")
    assert C.load_checkpoint(tmp_path / "out")["step"] == 2
    resumed = train(config, tmp_path / "out", resume=True)
    for name, value in result.model.state_dict().items():
        assert torch.equal(value, resumed.model.state_dict()[name]), name
    strip = lambda rows: [{k: v for k, v in r.items() if k != "epoch"} for r in rows]  # noqa: E731
    assert strip(read_rows(tmp_path / "out")) == strip(read_rows(out))
    assert len(read_rows(tmp_path / "out")) == 4


def test_a_finished_run_cannot_be_resumed_without_more_steps(finished_run):
    config, out, _ = finished_run
    before = _snapshot(out)
    with pytest.raises(ConfigError, match="already at step 4 of 4"):
        train(config, out, resume=True)
    assert _snapshot(out) == before


def test_fresh_run_into_an_occupied_directory_is_refused(finished_run):
    config, out, _ = finished_run
    before = _snapshot(out)
    with pytest.raises(ConfigError, match="already holds a run"):
        train(config, out)
    assert _snapshot(out) == before


@pytest.mark.parametrize("change, needle", [
    ({"objective": "gspo"}, "objective was 'grpo', now 'gspo'"),
    ({"lr": 0.5}, "lr was"),
    ({"group_size": 8}, "group_size"),
    ({"init_seed": 5}, "init_seed"),  # another starting model
])
def test_mismatched_config_is_refused_and_nothing_is_overwritten(finished_run, change, needle):
    config, out, _ = finished_run
    before = _snapshot(out)
    with pytest.raises(ConfigError, match=needle):
        train(dataclasses.replace(config, steps=6, **change), out, resume=True)
    assert _snapshot(out) == before


def test_a_checkpoint_written_before_init_seed_resumes_as_seed(finished_run, tmp_path):
    """A checkpoint whose config has no init_seed (written before the field existed) ran at its default, None
    (the model drawn from `seed`): a run with init_seed None resumes it to the same state as the original."""
    config, out, _ = finished_run
    copy = tmp_path / "copy"
    copy.mkdir()
    for name, data in _snapshot(out).items():
        (copy / name).write_bytes(data)
    state = C.load_checkpoint(copy)
    del state["config"]["init_seed"]
    C.save_checkpoint(copy, state)
    resumed = train(dataclasses.replace(config, steps=6), copy, resume=True)
    assert resumed.rows[-1]["step"] == 6 and resumed.config.init_seed is None


def test_mismatched_model_config_is_refused(finished_run, tmp_path):
    config, out, _ = finished_run
    before = _snapshot(out)
    other = tmp_path / "wider.json"
    other.write_text(json.dumps({**TINY_MODEL, "d_model": 64}))
    with pytest.raises(ConfigError, match="model"):
        train(dataclasses.replace(config, steps=6, model=str(other)), out, resume=True)
    assert _snapshot(out) == before


@pytest.mark.parametrize("damage", ["truncate", "garbage", "foreign", "delete"])
def test_corrupt_checkpoint_gives_one_clear_error_and_overwrites_nothing(finished_run, tmp_path, damage):
    config, out, _ = finished_run
    copy = tmp_path / "copy"
    copy.mkdir()
    for name, data in _snapshot(out).items():
        (copy / name).write_bytes(data)
    ckpt = copy / C.CHECKPOINT_NAME
    if damage == "truncate":
        ckpt.write_bytes(ckpt.read_bytes()[: ckpt.stat().st_size // 2])
    elif damage == "garbage":
        ckpt.write_bytes(b"\x00not a checkpoint" * 10)
    elif damage == "foreign":
        torch.save({"weights": torch.zeros(2)}, ckpt)
    else:
        ckpt.unlink()
    before = _snapshot(copy)
    with pytest.raises(ConfigError, match="corrupt or truncated|not a gspo-dynamics|no checkpoint") as info:
        train(dataclasses.replace(config, steps=6), copy, resume=True)
    assert "\n" not in str(info.value)
    assert _snapshot(copy) == before


def test_damaged_metrics_log_is_refused(finished_run, tmp_path):
    config, out, _ = finished_run
    copy = tmp_path / "copy"
    copy.mkdir()
    for name, data in _snapshot(out).items():
        (copy / name).write_bytes(data)
    (copy / "metrics.jsonl").write_text('{"step": 1}\n')  # fewer rows than the checkpoint's 4
    before = _snapshot(copy)
    with pytest.raises(ConfigError, match="complete rows"):
        train(dataclasses.replace(config, steps=6), copy, resume=True)
    assert _snapshot(copy) == before


def test_checkpoint_holds_the_complete_state(finished_run):
    _, out, result = finished_run
    state = C.load_checkpoint(out)
    assert state["step"] == 4 and state["metrics_rows"] == 4
    assert state["reference"] is not None  # kl_coef > 0
    assert state["optimizer"]["state"]  # AdamW moments
    assert state["num_tokens"] == read_rows(out)[-1]["num_tokens"]
    for name, value in result.model.state_dict().items():
        assert torch.equal(final_parameters(out)[name], value)


def test_resume_restores_the_global_rng_that_dropout_draws_from(tmp_path):
    """With dropout the update draws from torch's global RNG: only its saved state makes the resumed
    run equal the uninterrupted one (and the runs differ from a dropout-free run, so it is used)."""
    model = tmp_path / "dropout.json"
    model.write_text(json.dumps({**TINY_MODEL, "dropout": 0.2}))
    config = tiny_config(tmp_path, model=str(model), steps=4, checkpoint_every=2, warmup_steps=5)
    whole = train(config, tmp_path / "whole")
    train(dataclasses.replace(config, steps=2), tmp_path / "split")
    torch.manual_seed(12345)  # scramble the global RNG between the two halves
    resumed = train(config, tmp_path / "split", resume=True)
    for name, value in whole.model.state_dict().items():
        assert torch.equal(value, resumed.model.state_dict()[name]), name
    assert [r["losses/loss"] for r in read_rows(tmp_path / "split")] == [r["losses/loss"] for r in whole.rows]
