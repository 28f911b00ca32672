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
    (["predict", "--testbed", "bandit", "--lr", "-1"], "learning rate"),
    (["predict", "--testbed", "bandit", "--lr", "-1e-6"], "learning rate must be positive"),  # argparse: "expected one argument"
    (["simulate", "--testbed", "sequence", "--objective", "gspo", "--lr", "-1e-6"], "learning rate"),
    (["predict", "--lr", "abc"], "--lr"),
    (["predict", "--testbed", "bandit", "--momentum", "1.5"], "momentum"),
    (["predict", "--testbed", "bandit", "--refresh-interval", "0"], "refresh interval"),
    (["predict", "--lr", "1e-6"], "give it as --config"),
    (["predict", "--correction", "tokenwise"], "correction"),
    (["predict", "--testbed", "bandit", "--optimizer", "adam"], "group size"),
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


SEQUENCE_COMMAND = "simulate --testbed sequence --task pattern --length 4 --policy tabular --objective gspo --steps 20 --json".split()


def test_sequence_command_prints_one_json_object(capsys):
    assert main(SEQUENCE_COMMAND) == 0
    out = capsys.readouterr().out
    assert len(out.strip().splitlines()) == 1
    report = json.loads(out)
    assert report["testbed"] == "sequence" and report["steps"] == 20 and report["ratio_level"] == "sequence"
    assert report["task"] == {"name": "PatternMatch", "length": 4, "min_matches": 2, "target": [0, 1, 2, 3],
                              "partial_credit": False}
    assert report["config"]["clip_low"] == 3e-4 and report["config"]["refresh_interval"] == 1
    assert report["clip_fraction"]["measured"] == 0.0  # T = 1: on-policy, every ratio is 1
    assert 0.0 <= report["expected_reward"]["initial"] <= report["expected_reward"]["peak"] <= 1.0


def test_sequence_text_report_compares_with_the_theory(capsys):
    args = "simulate --testbed sequence --policy moe --objective grpo -T 2 --steps 8 --no-progress".split()
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "predicted" in text and "measured" in text and "routing churn" in text


@pytest.mark.parametrize("args, needle", [
    ("--testbed sequence", "needs --objective"),
    ("--testbed sequence --objective ppo", "unknown loss"),
    ("--objective gspo", "--objective applies to --testbed sequence only"),
    ("--testbed sequence --objective gspo --seeds 4", "--seeds applies to --testbed bandit only"),
    ("--testbed sequence --objective gspo --correction token", "--correction applies to --testbed bandit only"),
    ("--testbed sequence --objective gspo --task pattern --digits 2", "no digits"),
    ("--testbed sequence --objective gspo --task nonsense", "sequence task"),
    ("--testbed sequence --objective gspo --policy rnn", "sequence policy"),
    ("--testbed sequence --objective gspo --momentum 0.9", "--momentum applies to --optimizer sgd only"),
    ("--testbed sequence --objective gspo --routing-replay full", "MoE"),
    ("--testbed sequence --objective gspo --length 0", "length"),
    ("--testbed sequence --objective gspo --group-size 1", "group size"),
    ("--testbed nonsense", "invalid choice"),
])
def test_bad_sequence_flags_are_one_line_and_exit_2(args, needle, capsys):
    assert main(["simulate", *args.split()]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("gspo-dynamics: error:") and needle in err


def test_predict_still_has_only_the_bandit_testbed(capsys):
    assert main(["predict", "--testbed", "sequence"]) == 2
    assert "invalid choice" in capsys.readouterr().err


def test_simulate_help_lists_the_sequence_defaults_from_its_config(capsys):
    from gspo_dynamics.sim.compare import sequence_defaults

    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    defaults = sequence_defaults()
    assert f"lr {defaults['lr']}" in text and f"group_size {defaults['group_size']}" in text


def test_the_cli_reads_no_private_argparse_attribute():
    import re
    from pathlib import Path

    import gspo_dynamics.cli

    private = re.compile(r"\._(actions|option_string_actions|optionals|positionals|subparsers|defaults|registries)\b")
    for path in Path(gspo_dynamics.cli.__file__).parent.glob("*.py"):
        assert not private.search(path.read_text()), f"{path.name} reads a private argparse attribute"
