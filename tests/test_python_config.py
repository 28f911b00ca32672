"""A TRL program read as its config (`_python_config`): its one GRPOConfig(...) call's literal arguments, checked
against an independent route, the program itself run with a GRPOConfig that records what it is given."""

from __future__ import annotations

import pytest

from gspo_dynamics import ConfigError
from gspo_dynamics._config_file import load_config_file
from gspo_dynamics._python_config import COMPUTED, python_config
from gspo_dynamics.predict import read_run_config

PROGRAM = '''
import trl
LR = 5e-6
COMMON = {"per_device_train_batch_size": 4, "gradient_accumulation_steps": 2 * 2}
def build():
    args = trl.GRPOConfig(output_dir="out", learning_rate=LR, num_generations=8, epsilon=-(-0.2), beta=0.0,
                          max_steps=10 * 50, lr_scheduler_type="constant", **COMMON)
    args.max_steps = 400
    return args
'''


def _run(program: str) -> dict:
    """The arguments the program's GRPOConfig receives when it runs, with every attribute set on it after."""
    class Recorder(dict):
        def __init__(self, **kwargs):
            super().__init__(kwargs)

        def __setattr__(self, name, value):
            self[name] = value

    namespace = {"trl": type("trl", (), {"GRPOConfig": Recorder})}
    exec(program.replace("import trl\n", ""), namespace)
    return dict(namespace["build"]())


def test_the_literal_arguments_are_what_the_program_passes_when_run():
    assert python_config(PROGRAM, "p") == _run(PROGRAM)
    assert python_config(PROGRAM, "p")["max_steps"] == 400 and python_config(PROGRAM, "p")["learning_rate"] == 5e-6


def test_a_program_config_reads_as_its_json_would(tmp_path):
    program, as_json = tmp_path / "train.py", tmp_path / "config.json"
    program.write_text(PROGRAM)
    import json

    as_json.write_text(json.dumps(_run(PROGRAM)))
    a, b = read_run_config(program, devices=1), read_run_config(as_json, devices=1)
    assert a.hparams == b.hparams and a.schedule == b.schedule and a.run_steps == b.run_steps == 400


def test_a_value_the_program_computes_is_named_where_read_and_set_gives_it(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(PROGRAM.replace("beta=0.0", "beta=cli.beta").replace('output_dir="out"', 'output_dir=f"runs/{LR}"'))
    cfg = load_config_file(path)
    assert cfg["beta"] == "cli.beta" + COMPUTED and cfg["output_dir"] == "f'runs/{LR}'" + COMPUTED
    with pytest.raises(ConfigError, match=r"the program computes beta \(cli\.beta\), which the answer reads .*: give --set beta=VALUE"):
        read_run_config(path, devices=1)
    assert read_run_config(path, devices=1, overrides=["beta=0.04"]).hparams.kl_coef == 0.04  # output_dir: no step


@pytest.mark.parametrize("program, said", [
    ("x = GRPOConfig(learning_rate=1e-6)\ny = GRPOConfig(learning_rate=2e-6)\n", r"calls GRPOConfig\(...\) 2 times \(lines 1, 2\)"),
    ("def f(:\n", r"is not valid Python \(line 1"),
    ("args = GRPOConfig(**load())\n", r"builds its GRPOConfig from \*\*load\(\), which Python computes"),
])
def test_a_program_it_cannot_read_is_one_error(program, said):
    with pytest.raises(ConfigError, match=said):
        python_config(program, "the program")


def test_a_name_assigned_twice_is_not_taken_for_either_value():
    program = "LR = 1e-6\nif big:\n    LR = 1e-5\nargs = GRPOConfig(learning_rate=LR)\n"
    assert python_config(program, "p")["learning_rate"] == "LR" + COMPUTED


def test_every_computed_key_the_answer_reads_is_named_at_once_with_its_set(tmp_path):
    """Audit s43py D1-D3: a TrlParser-style program (every value `training_args.X`) took one run per key, then a
    wrong error for a string key, then a traceback for warmup_steps; now one error lists every key read."""
    path = tmp_path / "train.py"
    path.write_text("args = GRPOConfig(learning_rate=a.lr, num_generations=a.g, lr_scheduler_type=a.sched, "
                    "warmup_steps=a.warm, importance_sampling_level=a.lvl, output_dir=a.out, max_steps=100)\n")
    with pytest.raises(ConfigError) as err:
        read_run_config(path, devices=1)
    said = str(err.value)
    for key, text in [("learning_rate", "a.lr"), ("num_generations", "a.g"), ("lr_scheduler_type", "a.sched"),
                      ("warmup_steps", "a.warm"), ("importance_sampling_level", "a.lvl")]:
        assert f"{key} ({text})" in said and f"--set {key}=VALUE" in said
    assert "output_dir" not in said and "max_steps" not in said  # not read by the answer / a literal
    sets = ["learning_rate=1e-6", "num_generations=8", "lr_scheduler_type=cosine", "warmup_steps=10",
            "importance_sampling_level=sequence"]
    setup = read_run_config(path, devices=1, overrides=sets)
    assert setup.schedule.warmup == 10 and setup.hparams.lr == 1e-6


@pytest.mark.parametrize("program, lr", [
    ("from trl import GRPOConfig as Cfg\nargs = Cfg(learning_rate=3e-6)\n", 3e-6),  # D4: an alias
    ("C = {'learning_rate': 1e-6}\nC.update({'learning_rate': 5e-5})\nargs = GRPOConfig(**C)\n", None),  # D7
    ("args = GRPOConfig(learning_rate=1e-6)\nsetattr(args, 'learning_rate', 5e-5)\n", 5e-5),  # D7: setattr
])
def test_aliases_and_the_programs_own_changes_are_read_or_refused_never_stale(program, lr):
    if lr is None:
        with pytest.raises(ConfigError, match=r"builds its GRPOConfig from \*\*C, which Python computes"):
            python_config(program, "p")
    else:
        assert python_config(program, "p")["learning_rate"] == lr
    assert python_config("args = GRPOConfig(max_steps=100)\nargs.max_steps += 400\n", "p")["max_steps"] == (
        "args.max_steps += 400" + COMPUTED)


def test_a_parsers_config_points_to_the_recipe_and_lora_outside_the_config_is_said(tmp_path):
    with pytest.raises(ConfigError, match=r"from its command line or a recipe \(TrlParser, HfArgumentParser\): give the recipe"):
        python_config("parser = TrlParser((ScriptArguments, GRPOConfig, ModelConfig))\n", "p")
    path = tmp_path / "train.py"
    path.write_text("from peft import LoraConfig\nargs = GRPOConfig(learning_rate=1e-5, num_generations=4, "
                    "per_device_train_batch_size=4)\ntrainer = GRPOTrainer(model=m, args=args, peft_config=LoraConfig(r=8))\n")
    setup = read_run_config(path, devices=1)
    assert any(line.startswith("the program trains LoRA adapters (LoraConfig, line 3)") for line in setup.brief_lines())
    path.write_text("args = GRPOConfig(learning_rate=1e-5, num_generations=4, per_device_train_batch_size=4)\n")
    assert not any("LoRA" in line for line in read_run_config(path, devices=1).brief_lines())


def test_the_process_count_probe_never_answers_with_a_refusal_at_a_count_the_user_did_not_give():
    """Audit s43py D5: a saved generation_batch_size of 1 at per_device_train_batch_size 1, G 4, with no process count:
    the refusal said "divisible by per_device_train_batch_size x devices (2)", a count probed, not the user's."""
    cfg = {"learning_rate": 1e-6, "num_generations": 4, "per_device_train_batch_size": 1, "generation_batch_size": 1}
    try:
        said = " ".join(read_run_config(cfg).brief_lines())
    except ConfigError as exc:
        said = str(exc)
    assert "x devices (2)" not in said and "num_generations 4" in said
