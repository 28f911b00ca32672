"""TrainConfig: validation (ConfigError naming the value), derived values, JSON/TOML files with overrides."""

import dataclasses
import json

import pytest

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.sim.sequence import OBJECTIVE_CLIPS
from gspo_dynamics.theory.ratios import GRPO_CLIP
from gspo_dynamics.train.config import FIELDS, TrainConfig, load_config, saved_config

BASE = {"task": "pattern", "model": "100k", "objective": "gspo"}


def test_refresh_interval_is_minibatches_times_iterations():
    """TRL: T = steps_per_generation x num_iterations optimizer steps per rollout."""
    config = TrainConfig(**BASE, steps_per_generation=3, num_iterations=2, prompts_per_step=4)
    assert config.refresh_interval == 6
    assert config.prompts_per_generation == 12


@pytest.mark.parametrize("objective", ["pg", "grpo", "dr_grpo", "dapo", "cispo", "gspo", "gspo_token"])
def test_clip_defaults_are_the_objectives_and_overrides_win(objective):
    config = TrainConfig(**{**BASE, "objective": objective})
    assert (config.eps_low, config.eps_high) == tuple(map(float, OBJECTIVE_CLIPS.get(objective, GRPO_CLIP)))
    assert TrainConfig(**{**BASE, "objective": objective}, clip_low=0.1).eps_low == 0.1
    assert config.scale == ("none" if objective == "dr_grpo" else "group")


@pytest.mark.parametrize("field, value, needle", [
    ("objective", "ppo", "unknown loss"),
    ("steps", 0, "steps"),
    ("steps", 2.5, "steps"),
    ("group_size", 1, "group_size"),
    ("prompts_per_step", True, "prompts_per_step"),
    ("steps_per_generation", 0, "steps_per_generation"),
    ("num_iterations", -1, "num_iterations"),
    ("rollout_chunks", 3, "rollout_chunks"),  # must divide prompts_per_step (4)
    ("clip_low", 0.0, "clip_low"),
    ("advantage_scale", "max", "advantage_scale"),
    ("kl_coef", -0.1, "kl_coef"),
    ("kl_coef", float("nan"), "kl_coef"),
    ("optimizer", "adam", "optimizer"),
    ("lr", 0, "lr"),
    ("lr_schedule", "cosine", "lr_schedule"),
    ("momentum", 1.5, "momentum"),
    ("max_grad_norm", -1.0, "max_grad_norm"),
    ("temperature", 0.0, "temperature"),
    ("top_p", 1.5, "top_p"),
    ("max_new_tokens", 0, "max_new_tokens"),
    ("routing_replay", "full", "routing_replay"),
    ("warmup_steps", -1, "warmup_steps"),
    ("device", "tpu", "device"),
    ("precision", "fp16", "precision"),
    ("compile", "yes", "compile"),
    ("checkpoint_every", -2, "checkpoint_every"),
    ("task_options", [1], "task_options"),
    ("task", "", "task"),
])
def test_bad_values_raise_one_config_error_naming_the_field(field, value, needle):
    with pytest.raises(ConfigError, match=needle):
        TrainConfig(**{**BASE, "prompts_per_step": 4, field: value})


def test_frozen_and_keyword_only():
    config = TrainConfig(**BASE)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.lr = 1.0
    with pytest.raises(TypeError):
        TrainConfig("pattern", "100k", "gspo")
    assert dataclasses.replace(config, lr=0.5).lr == 0.5


def test_json_file_then_overrides(tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps({**BASE, "lr": 0.01, "group_size": 16}))
    config = load_config(path, {"lr": 0.02, "seed": None})
    assert (config.lr, config.group_size, config.seed) == (0.02, 16, 0)  # None = not given


def test_toml_file(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text('task = "addition"\nmodel = "1m"\nobjective = "grpo"\nsteps = 7\n[task_options]\nn_digits = 2\n')
    config = load_config(path)
    assert (config.task, config.steps, config.task_options) == ("addition", 7, {"n_digits": 2})


def test_base_then_file_then_overrides(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({**BASE, "steps": 5, "lr": 0.1}))
    base = saved_config(tmp_path)
    file = tmp_path / "more.json"
    file.write_text(json.dumps({"steps": 9}))
    config = load_config(file, {"lr": 0.3}, base=base)
    assert (config.steps, config.lr, config.objective) == (9, 0.3, "gspo")


@pytest.mark.parametrize("text, suffix, needle", [
    ("{not json", ".json", "not valid JSON"),
    ("task = ", ".toml", "not valid TOML"),
    ("[1, 2]", ".json", "one mapping"),
    (json.dumps({**BASE, "learning_rate": 1}), ".json", r"unknown setting learning_rate \(did you mean lr\?\)"),
    (json.dumps({**BASE, "group_sise": 4, "lerning_rate": 1}), ".json",
     r"unknown settings group_sise \(did you mean group_size\?\), lerning_rate \(did you mean lr\?\); valid "),
    (json.dumps({"learning_rate": 1e-3, "num_generations": 8, "max_steps": 10}), ".json",
     r"learning_rate \(did you mean lr\?\), max_steps \(did you mean steps\?\), num_generations \(did you mean "
     r"group_size\?\) \(TRL's names: train takes its own settings; grpo_config.json is the run written for TRL"),
    (json.dumps({"task": "pattern", "model": "100k"}), ".json", "'objective' is required"),
])
def test_bad_files(tmp_path, text, suffix, needle):
    path = tmp_path / f"run{suffix}"
    path.write_text(text)
    with pytest.raises(ConfigError, match=needle):
        load_config(path)


def test_missing_file_and_missing_saved_config(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "nope.json")
    with pytest.raises(ConfigError, match="cannot resume"):
        saved_config(tmp_path)


def test_round_trip_through_a_dict():
    config = TrainConfig(**BASE, task_options={"length": 3}, lr=0.2)
    assert set(config.to_dict()) == set(FIELDS)
    assert load_config(overrides=config.to_dict()) == config
