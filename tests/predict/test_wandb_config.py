"""W&B's record of a run's config (`wandb/run-*/files/config.yaml`: every key as {value: v}, `desc` beside it in older
releases, W&B's own `_wandb` / `wandb_version` entries) read as the config it records: the same reading as the plain
config, the keys W&B stores beside the framework's (the model's config) named once and not refused, an override the
user types still checked."""

from __future__ import annotations

import json

import pytest

from gspo_dynamics._config_file import load_config_file, load_config_parts, wandb_values
from gspo_dynamics._errors import ConfigError
from gspo_dynamics.predict import read_run_config

yaml = pytest.importorskip("yaml")

TRL = {"learning_rate": 1e-6, "num_generations": 8, "per_device_train_batch_size": 16, "gradient_accumulation_steps": 4,
       "steps_per_generation": 8, "num_iterations": 1, "beta": 0.0, "epsilon": 0.2, "max_steps": 500,
       "lr_scheduler_type": "constant"}
MODEL = {"architectures": ["Qwen2ForCausalLM"], "hidden_size": 896, "model_type": "qwen2",
         "model/num_parameters": 494032768}
VERL = {"algorithm": {"adv_estimator": "grpo"}, "data": {"train_batch_size": 128},
        "actor_rollout_ref": {"actor": {"optim": {"lr": 1e-6}, "ppo_mini_batch_size": 32, "clip_ratio": 0.2},
                              "rollout": {"n": 8}},
        "trainer": {"total_training_steps": 300}}


def _record(cfg: dict, old: bool) -> str:
    """`cfg` as W&B writes a run's config.yaml: `wandb_version: 1` and `desc: null` in older releases."""
    entries = {k: ({"desc": None, "value": v} if old else {"value": v}) for k, v in cfg.items()}
    entries["_wandb"] = ({"desc": None, "value": {"cli_version": "0.16.6"}} if old
                         else {"value": {"cli_version": "0.19.8", "m": [], "t": {"1": [1, 11]}}})
    return ("wandb_version: 1\n\n" if old else "") + yaml.safe_dump(entries, sort_keys=False)


@pytest.mark.parametrize("old", [True, False])
def test_a_record_is_the_config_it_records(tmp_path, old):
    for cfg in (TRL, VERL):
        path = tmp_path / "config.yaml"
        path.write_text(_record(cfg, old))
        parts = load_config_parts(path)
        assert parts.data == cfg and parts.wandb and load_config_file(path) == cfg


def test_the_shape_alone_is_not_a_record():
    plain = {"optimizer": {"value": 1}, "scheduler": {"value": 2}}  # a user's own tables, W&B's mark absent
    assert wandb_values(plain) is None
    assert wandb_values({"_wandb": {"value": {}}, "lr": 1e-6}) is None  # one plain entry: not W&B's writing
    assert wandb_values({"lr": {"desc": None, "value": 1e-6}}) == {"lr": 1e-6}  # older W&B: desc on every entry
    assert wandb_values(TRL) is None


def test_a_record_of_no_key_of_the_run_is_one_error(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("wandb_version: 1\n\n_wandb:\n  desc: null\n  value:\n    cli_version: 0.16.6\n")
    with pytest.raises(ConfigError, match="W&B's record of a run's config, and it records no key"):
        load_config_parts(path)


def test_a_trl_record_reads_as_its_config_with_the_models_keys_named_not_refused(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text(_record(MODEL | TRL, old=True))
    plain = read_run_config(dict(TRL))
    setup = read_run_config(path)
    assert setup.hparams == plain.hparams and setup.run_steps == plain.run_steps == 500
    assert setup.recorded == tuple(sorted(MODEL)) and not setup.unknown
    line = next(l for l in setup.brief_lines() if l.startswith("recorded by W&B"))
    assert "not in TRL's GRPOConfig, not read" in line and "architectures, hidden_size, model/num_parameters" in line
    assert setup.brief_json()["recorded_keys"] == sorted(MODEL)
    json.dumps(setup.brief_json())
    with pytest.raises(ConfigError, match="learnig_rate"):  # an override is typed: a misspelling is still refused
        read_run_config(path, overrides=["learnig_rate=1e-5"])
    with pytest.raises(ConfigError, match="architectures"):  # a plain config's foreign keys still are refused
        read_run_config(dict(MODEL | TRL))


def test_a_verl_record_reads_as_its_config(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text(_record(VERL, old=False))
    plain, setup = read_run_config(json.loads(json.dumps(VERL))), read_run_config(path)
    assert setup.hparams == plain.hparams and setup.run_steps == plain.run_steps and not setup.recorded


def test_predict_answers_a_record_first_in_its_keys(tmp_path, capsys):
    from gspo_dynamics.cli.main import main

    path = tmp_path / "config.yaml"
    path.write_text(_record(MODEL | TRL, old=False))
    assert main(["predict", "--config", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("verdict:") and any(l.startswith("recorded by W&B") for l in out[:4])


def test_a_records_script_argument_named_as_one_of_ours_is_recorded_not_a_mix(tmp_path):
    """A training script's own `group_size` argument, recorded by W&B beside TRL's keys (audit s37: Fair-RLVR's run):
    read as the TRL config, the argument among the keys W&B recorded, not refused as a mix of vocabularies; typed in a
    plain config the mix is still one error."""
    path = tmp_path / "config.yaml"
    path.write_text(_record({**TRL, "group_size": 4}, old=False))
    setup = read_run_config(path)
    assert setup.framework == "TRL GRPOConfig" and setup.hparams.group_size == 8 and "group_size" in setup.recorded
    with pytest.raises(ConfigError, match="no field of TRL.s GRPOConfig, beside TRL keys"):
        read_run_config({**TRL, "group_size": 4})


def test_a_record_of_another_trainers_run_is_refused_and_a_hand_written_config_is_not(tmp_path):
    """An SFT run's W&B record holds TrainingArguments' keys and none of GRPOConfig's own (audit s38c C2: it got a
    verdict on G = 8 taken as TRL's default); the same keys written by hand are read on TRL's defaults, said."""
    sft = {"learning_rate": 1e-5, "per_device_train_batch_size": 1, "gradient_accumulation_steps": 4,
           "num_train_epochs": 1, "output_dir": "./models/sft", "lr_scheduler_type": "cosine"}
    path = tmp_path / "config.yaml"
    path.write_text(_record(sft, False))
    with pytest.raises(ConfigError, match="a run's record with none of GRPOConfig's own fields"):
        read_run_config(path)
    assert read_run_config(sft).framework == "TRL GRPOConfig"
    assert read_run_config({**sft, "num_generations": 8}).hparams.group_size == 8


def test_grpo_own_fields_are_grpoconfigs_and_not_training_arguments():
    import dataclasses

    trl = pytest.importorskip("trl")
    from transformers import TrainingArguments

    from gspo_dynamics.predict._trl_fields import GRPO_OWN

    grpo = {f.name for f in dataclasses.fields(trl.GRPOConfig)}
    assert GRPO_OWN - {"max_prompt_length"} <= grpo and not GRPO_OWN & {f.name for f in dataclasses.fields(TrainingArguments)}
