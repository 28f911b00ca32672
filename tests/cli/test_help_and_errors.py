"""Help that leads with the user's path, and errors that point at the fix (issue 47, items 4 and 5)."""

from __future__ import annotations

import json

import pytest

from gspo_dynamics.cli.main import main

COMMANDS = ("predict", "simulate", "repro", "figures", "train", "diagnose", "watch")


def _help(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as done:
        main([*argv, "--help"])
    assert done.value.code == 0
    return capsys.readouterr().out


def _error(capsys, *argv: str) -> str:
    assert main(list(argv)) == 2
    err = capsys.readouterr().err
    assert err.startswith("gspo-dynamics: error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("command", COMMANDS)
def test_help_opens_with_one_sentence_of_what_the_command_answers(capsys, command):
    text = _help(capsys, command)
    opening, usage = text.split("\n\n", 1)
    assert not opening.startswith("usage:") and usage.startswith("usage: gspo-dynamics " + command)
    sentence = " ".join(opening.split())
    assert sentence.endswith(".") and sentence.count(". ") == 0, sentence


def test_predict_lists_the_config_and_pilot_before_the_bandit_flags(capsys):
    text = _help(capsys, "predict")
    options = text[text.index("\n\n", text.index("usage:")):]  # after the usage lines, which show the common forms
    where = [options.index(f"\n  {flag} ") for flag in ("--config", "--pilot", "--lr", "--kl")]
    assert where == sorted(where) and options.index("the bandit's hyperparameters") < where[2]


def test_diagnose_help_names_every_verdict_and_finding(capsys):
    from gspo_dynamics.diagnose import FINDINGS, MODES

    text = " ".join(_help(capsys, "diagnose").split())
    assert all(name in text for name in MODES + FINDINGS)


def test_watch_fail_on_help_names_every_name_it_takes(capsys):
    from gspo_dynamics.cli._watch import failure_names

    text = " ".join(_help(capsys, "watch").split())
    fail_on = text[text.index("--fail-on NAME"):text.index("--min-confidence")]
    assert all(name in fail_on for name in failure_names())


def test_train_help_lists_every_task_and_loss_and_a_cold_start_that_is_not_an_lr_warmup(capsys):
    from gspo_dynamics.objectives import LOSSES
    from gspo_dynamics.train import TASKS

    text = _help(capsys, "train")
    flat = " ".join(text.split())
    assert f"the synthetic task: {' | '.join(TASKS)}" in flat
    assert all(name in flat for name in LOSSES)
    assert "--sft-warmup-steps" in text and "--warmup-steps " not in text and "Not TRL's warmup_steps" in flat


@pytest.mark.parametrize("argv, says", [
    (["--task", "nope"], "--task nope: one of pattern, count, addition"),
    (["--task", "pattern", "--objective", "ppo"], "--objective ppo: one of pg, grpo, dr_grpo"),
    (["--task", "pattern", "--lr-schedule", "cosine"], "--lr-schedule cosine: one of constant, linear"),
    (["--task", "pattern", "--precision", "fp16"], "--precision fp16: one of auto, fp32, bf16"),
])
def test_train_names_the_bad_value_and_the_names_it_takes_before_any_other_check(capsys, tmp_path, argv, says):
    assert says in _error(capsys, "train", "--out", str(tmp_path / "out"), *argv)


TAB_YAML = "learning_rate: 1.0e-6\nnum_generations: 8\n\tbeta: 0.0\n"


@pytest.mark.parametrize("command", [["predict", "--config"], ["diagnose", "LOG", "--config"], ["train", "--out", "OUT", "--config"]])
def test_a_tab_in_a_yaml_config_is_named_with_its_line_in_every_command(capsys, tmp_path, command):
    config = tmp_path / "grpo.yaml"
    config.write_text(TAB_YAML)
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps({"step": i, "reward": 0.1 * i}) + "\n" for i in range(1, 9)))
    argv = [str(log) if a == "LOG" else str(tmp_path / "out") if a == "OUT" else a for a in command]
    err = _error(capsys, *argv, str(config))
    assert "not valid YAML: line 3, column 1: a tab; YAML indents with spaces" in err


def test_yaml_and_json_errors_name_the_line_and_column(tmp_path):
    from gspo_dynamics._config_file import load_config_file
    from gspo_dynamics._errors import ConfigError

    (tmp_path / "a.yaml").write_text("lr: 1\nbeta: [0.9, 0.99\nsteps: 3\n")
    (tmp_path / "b.json").write_text('{"lr": 1,\n "beta": }\n')
    with pytest.raises(ConfigError, match=r"not valid YAML: line 3, column \d+: "):
        load_config_file(tmp_path / "a.yaml")
    with pytest.raises(ConfigError, match=r"not valid JSON: line 2, column 10: Expecting value"):
        load_config_file(tmp_path / "b.json")
    (tmp_path / "c.yaml").write_bytes(b"lr: \xa9\x00")
    with pytest.raises(ConfigError, match=r"is not UTF-8 text \(byte 0xa9 at position 4\); a config is JSON, YAML"):
        load_config_file(tmp_path / "c.yaml")


def test_train_reads_a_yaml_config_as_predict_does(tmp_path):
    from gspo_dynamics.train.config import load_config

    path = tmp_path / "run.yaml"
    path.write_text("task: addition\nmodel: 100k\nobjective: gspo\nlr: 3e-4\ntask_options:\n  n_digits: 2\n")
    config = load_config(path, {"steps": 7})
    assert (config.task, config.lr, config.steps, config.task_options) == ("addition", 3e-4, 7, {"n_digits": 2})


def test_a_refusal_lists_every_column_of_the_log(capsys, tmp_path):
    columns = [f"metric_{i:02d}" for i in range(30)]
    log = tmp_path / "metrics.csv"
    log.write_text(",".join(["step", *columns]) + "\n" + ",".join(["1"] + ["0.5"] * 30) + "\n")
    err = _error(capsys, "diagnose", str(log))
    assert "map one with --map reward=COLUMN" in err and "..." not in err and "…" not in err
    assert all(repr(c) in err for c in columns) and "(30 in all)" in err


def test_a_truncated_trainer_state_exits_2_saying_where_it_ends(capsys, tmp_path):
    state = {"global_step": 20, "logging_steps": 1,
             "log_history": [{"step": i, "reward": 0.1 + 0.01 * i, "kl": 1e-3} for i in range(1, 21)]}
    text = json.dumps(state, indent=2)
    path = tmp_path / "trainer_state.json"
    path.write_text(text[: len(text) // 2])
    err = _error(capsys, "diagnose", str(path))
    line = text[: len(text) // 2].count("\n") + 1
    assert f"trainer_state.json is cut short: it ends at line {line}, column" in err


def test_a_jsonl_log_whose_last_line_is_cut_short_is_read_up_to_it_and_said(capsys, tmp_path):
    rows = "".join(json.dumps({"step": i, "reward": 0.3 + 0.02 * i}) + "\n" for i in range(1, 31))
    path = tmp_path / "metrics.jsonl"
    path.write_text(rows + '{"step": 31, "rew')  # a writer mid-line (a run still going, or killed)
    assert main(["watch", str(path), "--once"]) == 0
    out = capsys.readouterr()
    assert out.out.startswith("step 30:") and "a line still being written, were not read" in out.err
    assert main(["diagnose", str(path), "--explain"]) == 0
    assert "line 31, the last, is cut short" in capsys.readouterr().out


def test_a_refusal_under_json_is_also_json_on_stdout(tmp_path, capsys):
    """A program reading --json's stdout gets the refusal as an object; the one line on stderr and the status stay."""
    import json

    from gspo_dynamics.cli.main import main

    path = tmp_path / "empty.json"
    path.write_text('{\n "summary": {"train/loss": 0.1},\n "rows": []\n}\n')
    assert main(["diagnose", str(path), "--json"]) == 2
    out, err = capsys.readouterr()
    got = json.loads(out)
    assert got["exit_status"] == 2 and "'rows' list is empty" in got["error"]
    assert err.startswith("gspo-dynamics: error: ") and err.count("\n") == 1
    assert main(["diagnose", str(path)]) == 2 and capsys.readouterr().out == ""  # without --json: stderr only
