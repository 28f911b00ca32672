"""`gspo-dynamics watch`: a log another process appends to (pausing mid-line once) is read as it grows; a line is
printed per change of verdict, confidence band or findings; --fail-on ends the watch with its own status; bad input
is one line and exit 2."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap

import pytest

from gspo_dynamics.cli._watch import EXIT_FAILED_ON, Seen, changes, parse_fail_on
from gspo_dynamics.cli.main import main

# A run that rises to a plateau (rows 1-40), then swings between two values on alternate rows (a limit cycle of two
# rows: dynamical instability), with a NaN gradient norm at row 45 (the non_finite finding). The writer starts after
# a pause (the watch waits for the file), writes row 30 in two parts with a pause between them (a writer mid-line),
# and writes verl's file-logger JSONL or verl's console lines.
WRITER = textwrap.dedent("""
    import json, math, random, sys, time
    random.seed(0)
    path, kind, rows = sys.argv[1], sys.argv[2], int(sys.argv[3])
    def line(i):
        r = 0.6 * (1 - math.exp(-i / 8)) + 0.02 * random.gauss(0, 1)
        if i > 40:
            r = 0.6 + 0.25 * (1 if i % 2 else -1) + 0.02 * random.gauss(0, 1)
        row = {"critic/score/mean": r, "actor/entropy": 1.0, "actor/grad_norm": float("nan") if i == 45 else 1.0}
        if kind == "jsonl":
            return json.dumps({"step": i, "data": row}) + "\\n"
        return f"step:{i} - " + " - ".join(f"{k}:{v}" for k, v in row.items()) + "\\n"
    time.sleep(0.3)
    with open(path, "w") as out:
        out.write("Creating file logger, please wait\\n" if kind == "console" else "")
        for i in range(1, rows + 1):
            text = line(i)
            if i == 30:
                out.write(text[:25]); out.flush(); time.sleep(0.6); text = text[25:]
            out.write(text); out.flush()
            time.sleep(0.03)
""")
ROWS = 64


def start_writer(path, kind: str, rows: int = ROWS) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", WRITER, str(path), kind, str(rows)])


def test_watch_reports_each_change_of_a_log_another_process_writes(tmp_path, capsys):
    path = tmp_path / "grpo.jsonl"
    writer = start_writer(path, "jsonl")
    try:
        status = main(["watch", str(path), "--interval", "0.2", "--exit-when-idle", "1.5", "--json"])
    finally:
        writer.wait(timeout=30)
    captured = capsys.readouterr()
    assert status == 0
    assert captured.err.count("does not exist yet") == 1  # the file was waited for, and that said once
    reports = [json.loads(line) for line in captured.out.splitlines()]
    verdicts = [r["verdict"] for r in reports if r["verdict"] != "too_short"]
    assert verdicts[0] in ("still_rising", "healthy_saturation") and verdicts[-1] == "dynamical_instability"
    assert reports[-1]["step"] <= ROWS and reports[-1]["confidence"] >= 0.9
    assert all(r["new"] or r["changed"] or r["cleared"] for r in reports)  # a line only for a change
    nan_reports = [r for r in reports if "non_finite" in r["new"]]
    assert len(nan_reports) == 1 and nan_reports[0]["step"] >= 45
    assert [f["name"] for f in reports[-1]["findings"]] == ["non_finite"]
    steps = [r["step"] for r in reports]
    assert steps == sorted(steps) and all(r["schema"] == 1 and r["fail_on"] == [] for r in reports)


def test_fail_on_ends_the_watch_with_its_own_status(tmp_path, capsys):
    path = tmp_path / "train.log"  # verl's console lines after a banner, as `main_ppo ... > train.log` writes them
    writer = start_writer(path, "console")
    try:
        status = main(["watch", str(path), "--interval", "0.2", "--exit-when-idle", "5",
                       "--fail-on", "dynamical_instability,advantage_degeneracy"])
    finally:
        writer.kill()
        writer.wait(timeout=30)
    out = capsys.readouterr().out.splitlines()
    assert status == EXIT_FAILED_ON
    # the first diagnosis with the instability at >= 0.9 (how many rows it read depends on the timing)
    assert re.fullmatch(rf"  fail-on  dynamical_instability \(confidence (0\.9\d|1\.00)\): exit {EXIT_FAILED_ON}", out[-1])
    heads = [line for line in out if line.startswith("step ")]
    assert "dynamical instability (confidence" in heads[-1] and " — do " in heads[-1]


def test_once_reads_what_is_there_and_reports_it(tmp_path, capsys):
    path = tmp_path / "grpo.jsonl"
    subprocess.run([sys.executable, "-c", WRITER.replace("time.sleep", "float"), str(path), "jsonl", "40"], check=True)
    assert main(["watch", str(path), "--once"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and out[0].startswith("step 40: healthy saturation (confidence ")


def test_changes_name_what_appeared_moved_band_and_went():
    before = Seen("healthy_saturation", 2, frozenset({"kl_spike"}))
    assert changes(None, before) == {"new": ["healthy_saturation", "kl_spike"], "changed": [], "cleared": []}
    assert changes(before, Seen("healthy_saturation", 3, frozenset())) == {
        "new": [], "changed": ["healthy_saturation"], "cleared": ["kl_spike"]}
    assert changes(before, Seen("stalled", 1, frozenset({"kl_spike", "non_finite"}))) == {
        "new": ["stalled", "non_finite"], "changed": [], "cleared": ["healthy_saturation"]}
    assert parse_fail_on(["non_finite, stalled", "kl_spike"]) == ("non_finite", "stalled", "kl_spike")


@pytest.mark.parametrize("args, needle", [
    (["--fail-on", "entropy_collapse"], "--fail-on entropy_collapse: not a failure mode or finding; expected some of"),
    (["--fail-on", "healthy_saturation"], "--fail-on healthy_saturation: not a failure mode"),
    (["--fail-on", "nonfinite"], "--fail-on nonfinite: not a failure mode or finding (did you mean non_finite?)"),
    (["--interval", "0"], "--interval must be > 0 seconds"),
    (["--min-confidence", "2"], "--min-confidence must be in [0, 1]"),
    (["--exit-when-idle", "0.2"], "does not exist yet"),  # the watch ended and never read a log
])
def test_bad_options_are_one_line_and_exit_2(tmp_path, capsys, args, needle):
    assert main(["watch", str(tmp_path / "run.jsonl"), "--interval", "0.1", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert needle in err[-1] and err[-1].startswith("gspo-dynamics: error: ")


@pytest.mark.parametrize("setup, args, needle", [
    (None, [], "its folder"),  # the path's folder does not exist
    ("folder", [], "holds no trainer_state.json, metrics file or TensorBoard event file"),
    ("text", [], "could not recognise the log format"),
    ("console", ["--map", "step=iter"], "--map step=iter: the steps of a verl_console log are part of its format"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, setup, args, needle):
    path = tmp_path / "missing" / "run.log"
    if setup == "folder":
        path = tmp_path
    elif setup is not None:
        path = tmp_path / "run.log"
        path.write_text("hello\n" if setup == "text" else "step:1 - critic/score/mean:0.5\n")
    assert main(["watch", str(path), "--once", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) <= 2 and needle in err[-1] and err[-1].startswith("gspo-dynamics: error: ")


def test_the_configs_unknown_keys_and_assumed_defaults_open_the_report(tmp_path, capsys):
    """--config with --allow-unknown: the keys read past and the defaults taken are part of the answer (stdout,
    before the first report; the first --json line's `config`), not stderr notes."""
    path, config = tmp_path / "grpo.jsonl", tmp_path / "grpo.json"
    subprocess.run([sys.executable, "-c", WRITER.replace("time.sleep", "float"), str(path), "jsonl", "40"], check=True)
    config.write_text(json.dumps({"learnig_rate": 1e-3, "num_generations": 8}))
    assert main(["watch", str(path), "--once", "--config", str(config), "--allow-unknown"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "config: unknown keys (not read, --allow-unknown): learnig_rate (did you mean learning_rate?)"
    assert out[1].startswith("config: assumed, not in the config (TRL's defaults): learning_rate 1e-06")
    assert out[2].startswith("step 40: ")
    assert main(["watch", str(path), "--once", "--config", str(config), "--allow-unknown", "--json"]) == 0
    first = json.loads(capsys.readouterr().out.splitlines()[0])
    assert first["config"][0].startswith("unknown keys (not read, --allow-unknown): learnig_rate")


def test_once_on_an_empty_log_says_it_once(tmp_path, capsys):
    path = tmp_path / "run.jsonl"
    path.write_text("")
    assert main(["watch", str(path), "--once"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gspo-dynamics: error: ") and "empty" in err[0]


def test_an_unsure_answer_is_reported_as_unsure_with_what_would_tell():
    from gspo_dynamics.cli._watch import report_json, report_text, seen
    from gspo_dynamics.diagnose import Verdict
    from gspo_dynamics.diagnose._verdict import Diagnosis

    verdict = Verdict("healthy_saturation", 0.5, [], ["train longer and diagnose again"],
                      unsure=("still_rising", "healthy_saturation"))
    d = Diagnosis(primary="healthy_saturation", verdicts=[verdict], fit=None, implications=None,
                  log_summary={}, not_checked=[], notes=[])
    text = report_text(40, d, {"new": [], "changed": [], "cleared": []}, [])
    assert text.startswith("step 40: unsure: still rising or healthy saturation") and "; do train longer" in text
    assert seen(d).verdict == "unsure: still_rising or healthy_saturation"
    assert '"unsure": ["still_rising", "healthy_saturation"]' in report_json(40, d, {}, [])
