"""`gspo-dynamics watch`: a log another process appends to (pausing mid-line once) is read as it grows; a line is
printed per change of the reported verdict and per new alert, each once; a summary ends the watch (also on --fail-on,
Ctrl-C, and once when the log stops growing); --fail-on ends it with its own status; --alerts posts to webhooks; bad
input is one line and exit 2."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _trl_logs import kl_log_without_beta

from gspo_dynamics.cli._watch import EXIT_FAILED_ON, parse_fail_on, report_text, verdict_line
from gspo_dynamics.cli.main import main
from gspo_dynamics.integrations import HOLD_ROWS, TREND_ROWS
from gspo_dynamics.logs._follow import Follower

# A run that rises to a plateau (rows 1-40), then swings between two values on alternate rows (a limit cycle of two
# rows: dynamical instability), with a NaN gradient norm at row 45 (the non_finite finding). The writer starts once
# the watch said it waits for the file (`start_writer`: no race with a slow start on a loaded machine), writes row 30
# in two parts with a pause between them (a writer mid-line), and writes verl's file-logger JSONL or console lines.
WRITER = textwrap.dedent("""
    import json, math, os, random, sys, time
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
    go, deadline = sys.argv[4] if len(sys.argv) > 4 else None, time.monotonic() + 60
    while go and not os.path.exists(go) and time.monotonic() < deadline:
        time.sleep(0.01)
    with open(path, "w") as out:
        out.write("Creating file logger, please wait\\n" if kind == "console" else "")
        for i in range(1, rows + 1):
            text = line(i)
            if i == 30:
                out.write(text[:25]); out.flush(); time.sleep(0.6); text = text[25:]
            out.write(text); out.flush()
            time.sleep(0.03)
""")
ROWS = 96  # the swing from row 41 holds from about row 50: reported HOLD_ROWS later


def start_writer(path, kind: str, monkeypatch, rows: int = ROWS) -> subprocess.Popen:
    """The writer; it writes once the watch has said it waits for `path` (`Follower._wait` then touches its go file)."""
    go, wait = f"{path}.go", Follower._wait

    def go_when_waiting(self, *args, **kwargs):
        Path(go).touch()
        return wait(self, *args, **kwargs)

    monkeypatch.setattr(Follower, "_wait", go_when_waiting)
    return subprocess.Popen([sys.executable, "-c", WRITER, str(path), kind, str(rows), go])


def test_watch_reports_each_change_of_a_log_another_process_writes(tmp_path, capsys, monkeypatch):
    path = tmp_path / "grpo.jsonl"
    writer = start_writer(path, "jsonl", monkeypatch)
    try:
        status = main(["watch", str(path), "--interval", "0.2", "--exit-when-idle", "1.5", "--json"])
    finally:
        writer.wait(timeout=30)
    captured = capsys.readouterr()
    assert status == 0
    assert captured.err.count("does not exist yet") == 1  # the file was waited for, and that said once
    reports = [json.loads(line) for line in captured.out.splitlines()]
    *checks, summary = reports
    assert summary["event"] == "summary" and summary["verdict"] == "dynamical_instability" and summary["rows"] == ROWS
    assert all(r["event"] == "check" and (r["changed"] or r["alerts"]) for r in checks)  # a line only for news
    changed = [r for r in checks if r["changed"]]
    assert changed and changed[0]["rows"] >= TREND_ROWS + HOLD_ROWS  # no trend verdict before the rows support it
    assert changed[-1]["verdict"] == "dynamical_instability" and changed[-1]["confidence"] >= 0.9
    nan = [a for r in checks for a in r["alerts"] if a["name"] == "non_finite"]
    assert len(nan) == 1 and [r["step"] for r in checks if r["alerts"] and r["alerts"][0]["name"] == "non_finite"][0] >= 45
    assert [f["name"] for f in summary["findings"]] == ["non_finite"]
    steps = [r["step"] for r in reports]
    assert steps == sorted(steps) and all(r["schema"] == 2 and r["fail_on"] == [] for r in checks)


def test_fail_on_ends_the_watch_with_its_own_status_and_a_summary(tmp_path, capsys, monkeypatch):
    path = tmp_path / "train.log"  # verl's console lines after a banner, as `main_ppo ... > train.log` writes them
    writer = start_writer(path, "console", monkeypatch)
    try:
        status = main(["watch", str(path), "--interval", "0.2", "--exit-when-idle", "5",
                       "--fail-on", "dynamical_instability,advantage_degeneracy"])
    finally:
        writer.kill()
        writer.wait(timeout=30)
    out = capsys.readouterr().out.splitlines()
    assert status == EXIT_FAILED_ON
    # the first check where the instability held at >= 0.9 (how many rows it read depends on the timing)
    assert re.fullmatch(rf"  fail-on  dynamical_instability \(confidence (0\.9\d|1\.00)\): exit {EXIT_FAILED_ON}", out[-2])
    assert out[-1].startswith("step ") and "; summary: " in out[-1] and ", alerts: " in out[-1]
    heads = [line for line in out if line.startswith("step ")]
    assert "dynamical instability (confidence" in heads[-1] and " — do " in heads[-1]
    # diagnose's own `do` for the whole log: the NaN invalidates the rows the verdict read, so it comes first (audit
    # s44live: watch advised the verdict's remedy where diagnose said to fix the finding first)
    assert "— do first fix what invalidates the run: restart from a checkpoint" in heads[-1]
    assert "then diagnose again" in heads[-1] and "dynamical_instability at step" in heads[-1]


def test_once_reads_what_is_there_and_answers_first(tmp_path, capsys):
    path = tmp_path / "grpo.jsonl"
    subprocess.run([sys.executable, "-c", WRITER.replace("time.sleep", "float"), str(path), "jsonl", "40"], check=True)
    assert main(["watch", str(path), "--once"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and out[0].startswith("step 40: healthy saturation (confidence ") and out[0].endswith("; summary: 40 rows, no alerts")


def test_once_past_the_view_answers_as_diagnose_on_the_rows(tmp_path, capsys):
    """Past the guard's view of 512 rows the summary reads the rows the follower kept, not block means: its verdict
    and confidence are `diagnose`'s on the file (audit s37: the two differed on a decayed lr at its threshold)."""
    from gspo_dynamics.diagnose import diagnose
    from gspo_dynamics.logs import read_log

    path = tmp_path / "grpo.jsonl"
    subprocess.run([sys.executable, "-c", WRITER.replace("time.sleep", "float"), str(path), "jsonl", "700"], check=True)
    assert main(["watch", str(path), "--once", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out.splitlines()[-1])
    batch = diagnose(read_log(path))
    assert summary["view_block"] > 1 and summary["rows"] == 700
    assert summary["confidence"] == pytest.approx(batch.verdicts[0].confidence)


def test_a_log_read_whole_that_already_failed_ends_with_the_fail_on_status(tmp_path, capsys):
    """A `--once` gate (or a watch started after the fall) reads the log in one poll: the hysteresis never sees the
    mode hold over polls, so the final diagnosis decides: a --fail-on mode it names at --min-confidence exits 3; a
    log it does not name exits 0 (new-user audit: it printed "dynamical instability (confidence 1.00)" and exited 0)."""
    path = tmp_path / "grpo.jsonl"
    subprocess.run([sys.executable, "-c", WRITER.replace("time.sleep", "float"), str(path), "jsonl", str(ROWS)], check=True)
    assert main(["watch", str(path), "--once", "--fail-on", "dynamical_instability"]) == EXIT_FAILED_ON
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"step {ROWS}: dynamical instability (confidence ")
    assert re.fullmatch(rf"  fail-on  dynamical_instability \(confidence (0\.9\d|1\.00)\): exit {EXIT_FAILED_ON}", out[-1])
    assert main(["watch", str(path), "--once", "--fail-on", "advantage_degeneracy"]) == 0
    # the one reading's failure mode is among the summary's alerts: no streak over polls to wait out (audit s44live:
    # "dynamical instability (confidence 1.00)" beside "no alerts" on every one of 423 prefixes)
    assert main(["watch", str(path), "--once"]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert head.startswith(f"step {ROWS}: dynamical instability (confidence ") and "dynamical_instability at step" in head
    healthy = tmp_path / "healthy.jsonl"
    subprocess.run([sys.executable, "-c", WRITER.replace("time.sleep", "float"), str(healthy), "jsonl", "40"], check=True)
    assert main(["watch", str(healthy), "--once", "--fail-on", "dynamical_instability"]) == 0


def test_ctrl_c_and_an_idle_log_print_the_summary(tmp_path, capsys, monkeypatch):
    path = tmp_path / "grpo.jsonl"
    subprocess.run([sys.executable, "-c", WRITER.replace("time.sleep", "float"), str(path), "jsonl", "50"], check=True)
    assert main(["watch", str(path), "--interval", "0.1", "--idle-summary", "0.3", "--exit-when-idle", "1"]) == 0
    captured = capsys.readouterr()
    assert captured.err.count("has not grown for") == 1  # once until the log grows again
    assert [line for line in captured.out.splitlines() if "; summary: " in line][-1].startswith("step 50: ")

    def interrupt(seconds):
        raise KeyboardInterrupt

    monkeypatch.setattr("gspo_dynamics.cli._watch.time.sleep", interrupt)
    assert main(["watch", str(path)]) == 130
    captured = capsys.readouterr()
    assert captured.out.splitlines()[-1].startswith("step 50: ") and "; summary: 50 rows" in captured.out.splitlines()[-1]
    assert captured.err.splitlines()[-1] == "gspo-dynamics: interrupted"


def test_alerts_and_the_summary_are_posted_to_the_alert_files_webhook(tmp_path, capsys):
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parents[1] / "integrations"))
    from _http_server import Server

    path = tmp_path / "grpo.jsonl"
    subprocess.run([sys.executable, "-c", WRITER.replace("time.sleep", "float"), str(path), "jsonl", "50"], check=True)
    with Server() as server:
        alerts = tmp_path / "alerts.yaml"
        alerts.write_text(f"webhook:\n  - url: {server.url}/hook\n    format: json\n")
        assert main(["watch", str(path), "--once", "--alerts", str(alerts)]) == 0
    events = [(body["event"], body["verdict"]) for _, body in server.posts]
    assert events == [("alert", "non_finite"), ("summary", "dynamical_instability")]
    assert server.posts[0][1]["run"] == "grpo.jsonl" and server.posts[0][1]["schema"] == 1


def test_the_printed_action_is_the_verdicts_own():
    from gspo_dynamics.diagnose import Diagnosis, Verdict
    from gspo_dynamics.diagnose._finding import Finding
    from gspo_dynamics.integrations import Alert, Check

    finding = Finding("truncation", "invalidates", "53% of completions are cut", [], ["raise the cap to 22 tokens"])
    verdict = Verdict("noise_dominated", 0.97, [], ["raise G (num_generations) to 16"])
    d = Diagnosis(primary="noise_dominated", verdicts=[verdict], fit=None, implications=None, log_summary={},
                  findings=[finding])
    assert d.action() == "raise the cap to 22 tokens"  # diagnose's one thing to do: the finding first
    alert = Alert(50, "truncation", "finding", 1.0, "step 50: 53% of completions are cut (truncation) — do raise the "
                  "cap to 22 tokens", "raise the cap to 22 tokens", finding)
    check = Check(50, 50, "noise_dominated", 0.97, "raise G (num_generations) to 16", True, "pending", (alert,),
                  (alert,), d, True)
    assert report_text(check, []).splitlines() == [
        "step 50: noise dominated (confidence 0.97) — do raise G (num_generations) to 16",
        "  finding  53% of completions are cut (truncation) — do raise the cap to 22 tokens"]
    assert parse_fail_on(["non_finite, stalled", "kl_spike"]) == ("non_finite", "stalled", "kl_spike")


@pytest.mark.parametrize("args, needle", [
    (["--fail-on", "entropy_collapse"], "--fail-on entropy_collapse: not a failure mode or finding (did you mean "
                                        "policy_concentration?); expected some of"),
    (["--fail-on", "healthy_saturation"], "--fail-on healthy_saturation: not a failure mode"),
    (["--fail-on", "nonfinite"], "--fail-on nonfinite: not a failure mode or finding (did you mean non_finite?)"),
    (["--interval", "0"], "--interval must be > 0 seconds"),
    (["--idle-summary", "0"], "--idle-summary must be > 0 seconds"),
    (["--min-confidence", "2"], "--min-confidence must be in [0, 1]"),
    (["--alerts", "missing.toml"], "cannot read the config file 'missing.toml'"),
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
    from gspo_dynamics.diagnose import Diagnosis, Verdict

    verdict = Verdict("healthy_saturation", 0.5, [], ["train longer and diagnose again"],
                      unsure=("still_rising", "healthy_saturation"))
    d = Diagnosis(primary="healthy_saturation", verdicts=[verdict], fit=None, implications=None,
                  log_summary={}, not_checked=[], notes=[])
    text = verdict_line(40, "unsure: still_rising or healthy_saturation", 0.5, "train longer and diagnose again", d)
    assert text.startswith("step 40: unsure: still rising or healthy saturation") and "; do train longer" in text


def test_watch_reads_the_configs_beta_as_the_log_dates_it(tmp_path, capsys):
    """A TRL config without beta beside a TRL log dated before 0.18 that logs a KL: the watch reads beta 0.04, as
    diagnose and predict do (`predict.beta_from_logged_kl`), its config lines saying so before the summary."""
    log, config = kl_log_without_beta(tmp_path)
    assert main(["watch", str(log), "--config", str(config), "--devices", "2", "--once"]) == 0
    lines = capsys.readouterr().out.splitlines()
    dated = next(i for i, line in enumerate(lines) if "beta 0.04 (the log holds a KL, and its keys date it before TRL"
                 " 0.18" in line)  # said once rows arrive, after the config lines said at the start
    assert lines[0].startswith("config: ") and lines[dated].endswith("(read with the log's first rows)")
    assert "processes 1" not in lines[dated] and lines[dated + 1].startswith("step 100")
    assert main(["watch", str(log), "--config", str(config), "--once", "--json"]) == 0
    first = json.loads(capsys.readouterr().out.splitlines()[0])
    assert any("beta 0.04" in line for line in first["config"])
