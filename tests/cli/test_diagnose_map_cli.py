"""`gspo-dynamics diagnose --map NAME=COLUMN`: logs of hand-written loops, on files written here."""

import json

import numpy as np
import pytest

from gspo_dynamics.cli.main import main

N = 40
PLATEAU = 0.8
STEPS = 5 * np.arange(1, N + 1)
REWARD = PLATEAU - 0.6 * np.exp(-STEPS / 40) + 0.01 * np.random.default_rng(0).standard_normal(N)  # (N,)


def write_csv(path, reward_column, step_column="step"):
    rows = [f"{step_column},{reward_column},my_kl"]
    rows += [f"{s},{r:.6f},{0.001 * s}" for s, r in zip(STEPS, REWARD)]
    path.write_text("\n".join(rows) + "\n")
    return str(path)


def write_jsonl(path, reward_column, step_column="step"):
    rows = [{step_column: int(s), reward_column: float(r), "my_kl": 0.001 * float(s)} for s, r in zip(STEPS, REWARD)]
    path.write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    return str(path)


def run_json(capsys, *args):
    assert main(["diagnose", *args, "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def error_line(capsys, *args):
    assert main(["diagnose", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gspo-dynamics: error:") and err.count("\n") == 1, err
    return err


@pytest.mark.parametrize("write", [write_csv, write_jsonl])
def test_a_reward_mean_column_needs_no_map(capsys, tmp_path, write):
    report = run_json(capsys, write(tmp_path / "log", "reward_mean"))
    assert report["log"]["reward_points"] == N
    assert report["fit"]["params"]["r_inf"] == pytest.approx(PLATEAU, abs=0.05)


@pytest.mark.parametrize("write", [write_csv, write_jsonl])
def test_an_unusual_column_is_refused_with_the_cli_hint_then_read_with_map(capsys, tmp_path, write):
    path = write(tmp_path / "log", "goodness")
    err = error_line(capsys, path)
    assert "--map reward=COLUMN" in err and "column_map" not in err and "'goodness'" in err
    report = run_json(capsys, path, "--map", "reward=goodness")
    assert report["log"]["reward_points"] == N
    assert report["fit"]["params"]["r_inf"] == pytest.approx(PLATEAU, abs=0.05)


@pytest.mark.parametrize("maps", [["--map", "reward=goodness,step=iteration"],
                                  ["--map", "reward=goodness", "--map", "step=iteration"]])
def test_map_is_repeatable_or_comma_separated_and_maps_the_step(capsys, tmp_path, maps):
    path = write_jsonl(tmp_path / "log.jsonl", "goodness", step_column="iteration")
    report = run_json(capsys, path, *maps, "--map", "kl_ref=my_kl")
    assert report["log"]["reward_points"] == N and report["log"]["logging_interval"] == 5


@pytest.mark.parametrize(("maps", "needle"), [
    (["--map", "reward"], "--map 'reward' is not NAME=COLUMN"),
    (["--map", "=x"], "--map '=x' is not NAME=COLUMN"),
    (["--map", "nonsense=x"], "--map nonsense=x: 'nonsense' is not a name that can be mapped; expected one of step, reward"),
    (["--map", "goodness=reward"], "did you mean --map reward=goodness?"),
    (["--map", "reward=missing_col"], "--map reward=missing_col: the log has no column 'missing_col'; its columns are"),
    (["--map", "reward=goodness", "--map", "step=iter"], "--map step=iter: the CSV has no column 'iter'"),
    (["--map", "reward=goodness", "--map", "reward=my_kl"], "gives 'reward' twice"),
    (["--map", "reward=goodness,kl_ref=goodness"], "column 'goodness' is mapped to both"),
])
def test_bad_maps_are_one_line_and_exit_2(capsys, tmp_path, maps, needle):
    err = error_line(capsys, write_csv(tmp_path / "log.csv", "goodness"), *maps)
    assert needle in err and "column_map" not in err
