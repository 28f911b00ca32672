"""A launch script that runs TRL's GRPO trainer read as its config (`_trl_launch`): accelerate's / python's /
torchrun's / `trl grpo`'s command line over the YAML its --config names, accelerate's --num_processes as the count."""

from __future__ import annotations

import pytest

from gspo_dynamics import ConfigError
from gspo_dynamics._config_file import load_config_file
from gspo_dynamics.predict import read_run_config

RECIPE = "learning_rate: 1.0e-06\nnum_generations: 8\nper_device_train_batch_size: 16\ngradient_accumulation_steps: 4\n"
SCRIPT = """#!/bin/bash
python scripts/prepare_data.py --out data/
ACCELERATE_LOG_LEVEL=info accelerate launch \\
    --config_file recipes/accelerate_configs/zero3.yaml \\
    --num_processes=4 src/open_r1/grpo.py \\
    --config recipes/grpo/config_demo.yaml \\
    --learning_rate 2e-6 --beta 0.0 2>&1 | tee train.log
"""


def _repo(tmp_path, script: str = SCRIPT):
    (tmp_path / "recipes" / "grpo").mkdir(parents=True)
    (tmp_path / "recipes" / "grpo" / "config_demo.yaml").write_text(RECIPE)
    (tmp_path / "scripts").mkdir()
    path = tmp_path / "scripts" / "train.sh"
    path.write_text(script)
    return path


def test_the_command_line_over_the_recipe_with_accelerates_process_count(tmp_path):
    cfg = load_config_file(_repo(tmp_path))
    assert cfg == {"learning_rate": 2e-6, "num_generations": 8, "per_device_train_batch_size": 16,
                   "gradient_accumulation_steps": 4, "beta": 0.0, "num_processes": 4}
    setup = read_run_config(_repo(tmp_path / "b"))
    assert setup.framework == "TRL GRPOConfig" and setup.hparams.lr == 2e-6
    assert setup.hparams.num_groups == 16 * 4 * 4 // 8  # per_device x processes x accumulation / G


def test_trl_grpo_and_a_missing_recipe(tmp_path):
    path = _repo(tmp_path, "trl grpo --config recipes/grpo/config_demo.yaml --num_generations 4\n")
    assert load_config_file(path)["num_generations"] == 4
    path.write_text("accelerate launch train.py --config recipes/none.yaml --num_generations 4\n")
    with pytest.raises(ConfigError, match="--config recipes/none.yaml, which is not beside it or up to 3 folders"):
        load_config_file(path)


def test_a_script_without_a_trl_command_is_refused_naming_the_three(tmp_path):
    path = tmp_path / "run.sh"
    path.write_text("python eval.py --split test\n")
    with pytest.raises(ConfigError, match="runs no verl trainer .* nor TRL's"):
        load_config_file(path)


def test_an_evaluation_with_a_config_beside_the_training_command_is_not_a_second_run(tmp_path):
    path = _repo(tmp_path, SCRIPT + "python scripts/evaluate.py --config recipes/grpo/config_demo.yaml\n")
    assert load_config_file(path)["learning_rate"] == 2e-6
