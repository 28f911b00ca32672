"""The cases `diagnose --config` was first checked with (TRL GRPOConfig keys, our own names, clear
errors), now read through the one mapping, `integrations.configs.read_run_config`."""

import json

import pytest

from gspo_dynamics import ConfigError
from gspo_dynamics.predict import read_run_config
from gspo_dynamics.theory.hyperparams import SGD, Adam


def hyperparams_from_config(config):
    setup = read_run_config(config)
    return setup.hparams, list(setup.notes)


def test_trl_config_maps_every_key():
    hp, notes = hyperparams_from_config({
        "learning_rate": 5e-6, "num_generations": 6, "steps_per_generation": 4, "num_iterations": 2, "beta": 0.04,
        "epsilon": 0.2, "epsilon_high": 0.28, "importance_sampling_level": "sequence", "scale_rewards": "none",
        "adam_beta1": 0.9, "adam_beta2": 0.99, "output_dir": "out", "per_device_train_batch_size": 8,
    })
    assert hp.lr == 5e-6 and hp.group_size == 6 and hp.refresh_interval == 8 and hp.kl_coef == 0.04
    assert (hp.clip_low, hp.clip_high) == (0.2, 0.28) and hp.correction == "sequence" and hp.advantage == "mean"
    assert isinstance(hp.optimizer, Adam) and hp.optimizer.beta2 == 0.99
    assert any(n.startswith("1 keys change no training step") for n in notes)  # output_dir; the batch is read
    assert hp.num_groups == 1  # 8 completions per optimizer step (one device assumed) = 1.33 groups of 6, rounded


def test_trl_defaults_are_said():
    hp, notes = hyperparams_from_config({"learning_rate": 1e-6})
    assert hp.group_size == 8 and hp.refresh_interval == 1 and hp.clip_high == hp.clip_low == 0.2
    assert any("num_generations" in n for n in notes)
    assert any("gradient_accumulation_steps" in n for n in notes)


def test_own_names_and_a_file(tmp_path):
    path = tmp_path / "hp.json"
    path.write_text(json.dumps({"lr": 0.5, "optimizer": "sgd", "momentum": 0.9, "refresh_interval": 3, "group_size": 16}))
    hp, _ = hyperparams_from_config(path)
    assert isinstance(hp.optimizer, SGD) and hp.momentum == 0.9 and hp.refresh_interval == 3


def test_label_json_with_an_hparams_block():
    label = {"mode": "stalled", "hparams": {"lr": 0.1, "optimizer": {"name": "adam", "beta1": 0.8, "beta2": 0.99, "eps": 1e-8},
                                             "group_size": 8}}
    hp, _ = hyperparams_from_config(label)
    assert isinstance(hp.optimizer, Adam) and hp.optimizer.beta1 == 0.8


@pytest.mark.parametrize("content, match", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "one mapping"),
    (json.dumps({"learning_rate": 1e-6, "lr": 1.0}), "mixes"),
    (json.dumps({"foo": 1}), "no hyperparameter"),
    (json.dumps({"learning_rate": -1}), "learning_rate"),
    (json.dumps({"learning_rate": 1e-6, "num_generations": 2.5}), "num_generations"),
    (json.dumps({"learning_rate": 1e-6, "importance_sampling_level": "tok"}), "importance_sampling_level"),
    (json.dumps({"group_size": 8}), "lr"),
])
def test_bad_configs_are_one_clear_error(tmp_path, content, match):
    path = tmp_path / "c.json"
    path.write_text(content)
    with pytest.raises(ConfigError, match=match):
        hyperparams_from_config(path)


def test_missing_file():
    with pytest.raises(ConfigError, match="cannot read"):
        hyperparams_from_config("/nonexistent/config.json")
