"""`gspo-dynamics repro` on a folder of fake claim scripts (fast; the real scripts run in test_paper_repro)."""

import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gspo_dynamics import repro
from gspo_dynamics._errors import ConfigError
from gspo_dynamics.cli.main import main

REAL_RESULTS_MODULE = Path(__file__).parents[1] / "paper_repro" / "_results.py"
GOOD = '''
import time
from _results import Claim, parse_mode, record
args = parse_mode("fake claims")
started = time.perf_counter()
cmd = "python paper_repro/good.py" + (" --quick" if args.quick else "")
record(Claim("good-pass", "a | claim with a pipe"), predicted="1", measured="1", passed=True, quick=args.quick, started=started, command=cmd)
record(Claim("moe-churn-vs-T", "a literature claim"), predicted="2", measured="3", passed=False, quick=args.quick, started=started, command=cmd)
'''
CRASH = '''
import time
from _results import Claim, parse_mode, record
args = parse_mode("crashes after one row")
record(Claim("crash-first", "recorded before the crash"), predicted="1", measured="1", passed=True, quick=args.quick,
       started=time.perf_counter(), command="python paper_repro/crash.py")
raise ValueError("the fake claim broke")
'''
SLOW = '''
import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # a worker holding the pipes
time.sleep(60)
'''
SILENT = '''
print("nothing recorded")
'''


@pytest.fixture
def scripts(tmp_path):
    """A paper_repro-like folder: the real _results.py and _claims.py and four fake claim scripts."""
    folder = tmp_path / "paper_repro"
    folder.mkdir()
    shutil.copy(REAL_RESULTS_MODULE, folder / "_results.py")
    shutil.copy(REAL_RESULTS_MODULE.with_name("_claims.py"), folder / "_claims.py")
    for name, body in {"good": GOOD, "crash": CRASH, "slow": SLOW, "silent": SILENT}.items():
        (folder / f"{name}.py").write_text(textwrap.dedent(body))
    return folder


def test_discover_skips_private_modules(scripts):
    assert list(repro.discover(scripts)) == ["crash", "good", "silent", "slow"]


def test_every_script_gets_rows_and_failures_are_reported(scripts, tmp_path):
    out = tmp_path / "out" / "RESULTS.md"
    report = repro.reproduce(quick=True, results=out, scripts_dir=scripts, timeout=3)
    rows = {row["id"]: row for row in report.rows}
    assert set(rows) == {"good-pass", "moe-churn-vs-T", "crash-first", "crash-script", "slow-script", "silent-script"}
    assert rows["good-pass"]["verdict"] == "PASS" and rows["good-pass"]["mode"] == "quick"
    assert rows["good-pass"]["claim"] == "a | claim with a pipe"  # the data keeps the text; the tables escape it
    assert rows["moe-churn-vs-T"]["source"] == "arXiv 2507.18071"  # literature source filled in by record()
    assert rows["good-pass"]["source"] == "ours"
    assert "ValueError: the fake claim broke" in rows["crash-script"]["measured"]
    assert rows["crash-first"]["verdict"] == "PASS"  # rows written before the crash are kept
    assert "no result within 3 s" in rows["slow-script"]["measured"]
    assert "without recording a claim" in rows["silent-script"]["measured"]
    assert (report.passed, report.failed) == (2, 4)
    assert {r.script: r.status for r in report.runs} == {"crash": "crashed", "good": "ok", "silent": "no rows", "slow": "timed out"}
    # the data holds exactly these rows; the tables are rendered from it, the pipe escaped
    results = repro._results_module(scripts)
    assert set(results.load(out.parent / "data" / "claims.jsonl")[0]) == set(rows)
    assert out.read_text().startswith("# Claims: predicted vs measured")
    assert "a \\| claim with a pipe" in out.read_text()
    assert "### crash-script" in (out.parent / "RESULTS_APPENDIX.md").read_text()
    assert "2 pass, 4 fail" in "\n".join(repro.summary_lines(report))
    assert not (scripts / "RESULTS.md").exists()  # the default table is untouched


def test_only_keeps_the_other_scripts_rows(scripts, tmp_path):
    out = tmp_path / "RESULTS.md"
    repro.reproduce(quick=True, only=["good", "crash"], results=out, scripts_dir=scripts)
    results = repro._results_module(scripts)
    data = out.parent / "data" / "claims.jsonl"
    kept, _ = results.load(data)
    results.save(kept, {"## Benchmarks": "## Benchmarks\n\n| x | y |\n|---|---|"}, out)  # a section with its own table
    (scripts / "crash.py").write_text("print('fixed')\n")  # crash.py no longer crashes (but records nothing)
    report = repro.reproduce(quick=False, only=["good"], results=out, scripts_dir=scripts)
    rows = {row["id"]: row for row in report.rows}
    assert rows["good-pass"]["mode"] == "full"  # replaced
    assert rows["crash-script"]["mode"] == "quick"  # kept from the earlier run
    assert (report.passed, report.failed) == (1, 1)  # counts cover this run's rows only
    assert (out.parent / "RESULTS_APPENDIX.md").read_text().endswith("## Benchmarks\n\n| x | y |\n|---|---|\n")  # kept
    assert set(results.load(data)[0]) == set(rows)


def test_unknown_script_is_a_config_error(scripts):
    with pytest.raises(ConfigError, match="unknown claim script 'nope'; expected one of crash, good"):
        repro.reproduce(only=["nope"], scripts_dir=scripts)


def test_sources_name_claims_the_scripts_record(monkeypatch):
    # every id given a source is written by some claim script (as a literal), so a renamed claim
    # cannot silently lose its source
    texts = "".join(p.read_text() for p in repro.discover(REAL_RESULTS_MODULE.parent).values())
    spec = importlib.util.spec_from_file_location("real_results", REAL_RESULTS_MODULE)
    results = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "real_results", results)  # dataclasses look their module up there
    spec.loader.exec_module(results)
    for claim_id, source in results.SOURCES.items():
        assert f'"{claim_id}"' in texts, claim_id
        assert "arXiv 2606.30789" in source or "arXiv 2507.18071" in source


def test_cli_summary_and_strict_exit(scripts, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(repro, "SCRIPTS_DIR", scripts)
    out = tmp_path / "R.md"
    assert main(["repro", "--quick", "--only", "good", "--results", str(out)]) == 0
    assert "1 pass, 1 fail" in capsys.readouterr().out
    assert main(["repro", "--quick", "--only", "good", "--results", str(out), "--strict"]) == 1
    assert main(["repro", "--timeout", "-1"]) == 2
    assert "gspo-dynamics: error:" in capsys.readouterr().err


def test_scripts_recording_side_by_side_lose_no_rows(tmp_path):
    """`record` is a locked read-modify-write of the data with atomic replaces: 8 processes x 5 rows, all kept."""
    out = tmp_path / "RESULTS.md"
    writer = textwrap.dedent('''
        import sys, time
        sys.path.insert(0, sys.argv[1])
        from _results import Claim, record
        for k in range(5):
            record(Claim(f"p{sys.argv[2]}-{k}", "x"), predicted="1", measured="1", passed=True, quick=True,
                   started=time.perf_counter(), command="c")
    ''')
    env = {**os.environ, "GSPO_DYNAMICS_RESULTS": str(out)}
    procs = [subprocess.Popen([sys.executable, "-c", writer, str(REAL_RESULTS_MODULE.parent), str(p)], env=env,
                              stdout=subprocess.DEVNULL) for p in range(8)]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    ids = set(repro._results_module(REAL_RESULTS_MODULE.parent).load(tmp_path / "data" / "claims.jsonl")[0])
    assert ids == {f"p{p}-{k}" for p in range(8) for k in range(5)}
    assert not list(tmp_path.rglob("*.tmp*"))
