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
    with pytest.raises(ConfigError, match=r"config key 'beta' is cli\.beta, which the program computes .* --set beta=VALUE"):
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
