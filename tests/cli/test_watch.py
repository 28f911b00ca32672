"""`gspo-dynamics watch`: a log another process appends to, read as it grows; verdict changes reported once each;
--fail-on ends the watch with its own exit status; bad input is one line and exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from gspo_dynamics.cli._watch import EXIT_FAILURE
from gspo_dynamics.cli.main import main

# A verl-style file logger's lines ({"step", "data"}): a reward that rises, then collapses with the entropy from step
# 81 on; the writer pauses mid-line once (line 70), as a process killed or slow between writes leaves it.
WRITER = textwrap.dedent("""
    import json, math, random, sys, time
    random.seed(0)
    path = sys.argv[1]
    def line(i):
        r = 0.8 * (1 - math.exp(-i / 20)) + 0.03 * random.gauss(0, 1)
        h = 1.0
        if i > 80:
            r, h = max(0.0, 0.8 - 0.05 * (i - 80)) + 0.02 * random.gauss(0, 1), 0.2
        return json.dumps({"step": i, "data": {"critic/score/mean": r, "actor/entropy": h}}) + "\\n"
    with open(path, "a", buffering=1) as out:
        for i in range(1, 121):
            text = line(i)
            if i == 70:
                out.write(text[:20]); out.flush(); time.sleep(0.4)
                out.write(text[20:])
            else:
                out.write(text)
            out.flush()
            if i % 20 == 0:
                time.sleep(0.25)
""")


def start_writer(path):
    return subprocess.Popen([sys.executable, "-c", WRITER, str(path)])


def test_watch_follows_a_log_another_process_writes(tmp_path, capsys):
    path = tmp_path / "grpo.jsonl"
    writer = start_writer(path)
    try:
        status = main(["watch", str(path), "--interval", "0.1", "--exit-when-idle", "1.5", "--json"])
    finally:
        writer.wait(timeout=30)
    assert status == 0
    out = capsys.readouterr().out
    reports = [json.loads(x) for x in out.splitlines()]
    verdicts = [r["verdict"] for r in reports]
    assert reports[-1]["step"] == 120 and verdicts[-1] == "dynamical_instability"
    assert "still_rising" in verdicts or "healthy_saturation" in verdicts  # the rise, before the collapse
    keys = [(r["verdict"], r["confidence"] >= 0.5, r["confidence"] >= 0.9, r["findings"]) for r in reports]
    assert all(a != b for a, b in zip(keys, keys[1:]))  # a line only where the verdict, its band or a finding changed
    steps = [r["step"] for r in reports]
    assert steps == sorted(steps)


def test_fail_on_stops_the_watch_with_its_own_status(tmp_path, capsys):
    path = tmp_path / "grpo.jsonl"
    writer = start_writer(path)
    try:
        status = main(["watch", str(path), "--interval", "0.1", "--exit-when-idle", "5", "--fail-on",
                       "dynamical_instability", "--min-confidence", "0.9"])
    finally:
        writer.kill()
        writer.wait(timeout=30)
    captured = capsys.readouterr()
    assert status == EXIT_FAILURE and "dynamical_instability" in captured.err
    assert captured.out.splitlines()[-1].startswith("step ") and "dynamical instability" in captured.out


def test_once_reads_what_is_there(tmp_path, capsys):
    path = tmp_path / "grpo.jsonl"
    subprocess.run([sys.executable, "-c", WRITER.replace("time.sleep", "(lambda s: None)"), str(path)], check=True)
    assert main(["watch", str(path), "--once"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("step 120: dynamical instability") and " - do " in out


@pytest.mark.parametrize("args, needle", [
    (["--fail-on", "collapse"], "not a failure mode or finding"),
    (["--interval", "0"], "--interval must be > 0"),
])
def test_bad_watch_options_are_one_line_and_exit_2(tmp_path, capsys, args, needle):
    assert main(["watch", str(tmp_path / "x.jsonl"), "--once", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err


def test_a_missing_folder_is_one_line_and_exit_2(tmp_path, capsys):
    assert main(["watch", str(tmp_path / "no" / "run.jsonl"), "--once"]) == 2
    assert "does not exist" in capsys.readouterr().err
