"""`gspo-dynamics train`: the issue's invocation, config files with flag overrides, resume, and
bad options as one line on stderr with exit status 2."""

import json

import pytest
from _train_helpers import run_cli, tiny_config, tiny_model_file

from gspo_dynamics.cli.main import main
from gspo_dynamics.logs import read_log


def test_issue_invocation_in_a_real_process(tmp_path):
    model = tiny_model_file(tmp_path)
    out = tmp_path / "run"
    proc = run_cli(["train", "--task", "pattern", "--model", model, "--objective", "gspo", "--out", str(out),
                    "--steps", "3", "--group-size", "4", "--sft-warmup-steps", "2", "--device", "cpu", "--json",
                    "--task-options", '{"length": 3}'])
    assert proc.returncode == 0, proc.stderr
    last = json.loads(proc.stdout)
    assert last["step"] == 3 and "reward" in last
    assert {p.name for p in out.iterdir()} == {"config.json", "grpo_config.json", "metrics.jsonl", "trainer_state.json",
                                               "checkpoint.pt"}
    assert read_log(out).trainer == "trl"
    trl = json.loads((out / "grpo_config.json").read_text())  # the same run in TRL's keys (tests/train/test_trl_config.py)
    assert (trl["importance_sampling_level"], trl["num_generations"], trl["max_steps"]) == ("sequence", 4, 3)
    assert json.loads((out / "config.json").read_text())["task_options"] == {"length": 3}


def test_config_file_flags_override_and_resume(tmp_path, capsys):
    config = tiny_config(tmp_path, steps=2)
    path = tmp_path / "run.toml"
    options = "\n".join(f"{k} = {json.dumps(v)}" for k, v in config.to_dict().items()
                        if v is not None and not isinstance(v, dict))
    path.write_text(options + '\n[task_options]\nlength = 3\npartial_credit = true\n')
    out = tmp_path / "out"
    assert main(["train", "--config", str(path), "--out", str(out), "--steps", "1", "--no-progress"]) == 0
    assert "trained 1 steps" in capsys.readouterr().out
    assert json.loads((out / "config.json").read_text())["steps"] == 1
    assert main(["train", "--out", str(out), "--resume", "--steps", "2", "--no-progress"]) == 0
    assert [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()] == [1, 2]


@pytest.mark.parametrize("args, needle", [
    (["--task", "pattern", "--model", "100k", "--objective", "ppo"], "--objective ppo: one of pg, grpo,"),
    (["--task", "sudoku", "--model", "TINY", "--objective", "grpo"], "--task sudoku: one of pattern, count, addition"),
    (["--task", "nope"], "--task nope: one of pattern, count, addition"),  # the bad name before a missing setting
    (["--task", "pattern", "--model", "huge", "--objective", "grpo"], "neither a preset"),
    (["--task", "pattern", "--model", "100k", "--objective", "grpo", "--lr", "-1"], "lr must be"),
    (["--task", "pattern", "--model", "100k", "--objective", "grpo", "--steps", "abc"], "--steps"),
    (["--task", "pattern", "--model", "100k", "--objective", "grpo", "--optimizer", "lion"], "--optimizer lion: one of adamw, sgd"),
    (["--task", "pattern", "--model", "100k"], "'objective' is required"),
    (["--task", "pattern", "--model", "100k", "--objective", "grpo", "--config", "/nonexistent.json"], "cannot read"),
    (["--resume"], "cannot resume"),
    (["--task", "pattern", "--model", "TINY", "--objective", "grpo", "--task-options", "[1]"], "JSON object"),
    (["--task", "pattern", "--model", "TINY", "--objective", "grpo", "--task-options", '{"digits": 2}'], "digits"),
])
def test_bad_options_are_one_line_and_exit_2(tmp_path, capsys, args, needle):
    args = [a.replace("TINY", tiny_model_file(tmp_path)) for a in args]
    code = main(["train", "--out", str(tmp_path / "out"), "--no-progress", *args])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("gspo-dynamics: error:") and err.count("\n") == 1 and needle in err, err
    assert "Traceback" not in err


def test_missing_out_is_a_usage_error(capsys):
    assert main(["train", "--task", "pattern"]) == 2
    assert "--out" in capsys.readouterr().err


def test_corrupt_checkpoint_at_the_cli(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["train", "--config", _json_config(tmp_path), "--out", str(out), "--no-progress"]) == 0
    (out / "checkpoint.pt").write_bytes(b"junk")
    capsys.readouterr()
    assert main(["train", "--out", str(out), "--resume", "--steps", "4", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "corrupt or truncated" in err and err.count("\n") == 1


def _json_config(tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(tiny_config(tmp_path, steps=1, warmup_steps=2).to_dict()))
    return str(path)


def test_a_diverged_run_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    from gspo_dynamics._errors import TrainingDiverged
    from gspo_dynamics.train import trainer

    def diverging(*args, **kwargs):
        raise TrainingDiverged("the gradient norm is nan: the run diverged (lower the learning rate)")

    monkeypatch.setattr(trainer, "update", diverging)
    code = main(["train", "--config", _json_config(tmp_path), "--out", str(tmp_path / "out"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("gspo-dynamics: error: step 1 of") and "the run diverged" in err
    assert "no step completed (rerun with a new --out)" in err
