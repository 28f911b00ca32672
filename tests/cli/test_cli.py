"""The `gspo-dynamics` command: the issue's exact invocation, and one-line errors with exit 2."""

import json
import os
import subprocess
import sys

import pytest

from gspo_dynamics.cli.main import main

ISSUE_COMMAND = ("predict --testbed bandit --kl 0.5 --ref-logit -1.0 --advantage mean --optimizer sgd "
                 "--momentum 0.9 --lr 2.0 --refresh-interval 4 --correction none --json").split()
KEYS = {"fixed_point_reward", "stiffness", "stiffness_stale", "stiffness_fresh", "critical_refresh_interval",
        "critical_refresh_interval_from_start", "critical_refresh_interval_continuous", "spectral_radius",
        "damping_ratio", "regime"}


def run_cli(args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run([sys.executable, "-m", "gspo_dynamics.cli.main", *args], capture_output=True, text=True, env=env, timeout=300)


def test_issue_command_prints_one_json_object():
    proc = run_cli(ISSUE_COMMAND)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert KEYS <= report.keys()
    assert report["regime"] in ("overdamped", "oscillatory", "unstable")
    assert report["critical_refresh_interval"] == 3


@pytest.mark.parametrize("args, needle", [
    (["predict", "--lr", "-1"], "learning rate"),
    (["predict", "--lr", "abc"], "--lr"),
    (["predict", "--momentum", "1.5"], "momentum"),
    (["predict", "--refresh-interval", "0"], "refresh interval"),
    (["predict", "--correction", "tokenwise"], "correction"),
    (["predict", "--optimizer", "adam"], "group size"),
    (["simulate", "--group-size", "1"], "group size"),
    (["nonsense"], "invalid choice"),
    ([], "required"),
])
def test_bad_input_is_one_line_and_exit_2(args, needle, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("gspo-dynamics: error:") and needle in err


def test_simulate_text_and_json(capsys):
    args = ["simulate", "--lr", "1.0", "--momentum", "0.5", "-T", "2", "-G", "8", "--steps", "120", "--seeds", "8", "--no-progress"]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "predicted" in text and "simulated" in text
    assert main(args + ["--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["expected"]["max_abs_gap_to_theory_trajectory"] < 1e-10  # same map, float64
    assert report["stochastic"]["seeds"] == 8
