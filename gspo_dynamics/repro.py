"""Run every `paper_repro/` claim script and regenerate the claims (`paper_repro/RESULTS.md`).

Each script checks one or more claims and records one row per run through `paper_repro/_results.py`
into the data file `paper_repro/data/claims.jsonl`, from which RESULTS.md (one row per claim,
`paper_repro/_claims.py`) and RESULTS_APPENDIX.md (every row) are rendered. `reproduce` runs every
script (or the `only` ones) as a subprocess with this interpreter, `--quick` passed through and a
per-script timeout; each script records into a private temporary folder (the `GSPO_DYNAMICS_RESULTS`
environment variable that `_results.py` honours), and its rows and sections are then merged into the
results' data, and both tables rendered again:

    * a script that exits non-zero, times out, or writes no row gets a FAIL row
      `<script>-script` with the reason (its last error line), next to any rows it did write:
      a failure is reported, never hidden;
    * without `only`, the rows are this run's alone (rows of scripts that no longer exist
      disappear); with `only`, the other scripts' rows are kept as they were;
    * the `source` column says whose claim a row checks: ours, or the literature's (`paper_repro/_results.py` `SOURCES`, applied by `record`).

Exit policy (the CLI): status 0 with a summary line "N pass, M fail" whatever the verdicts, so
that the table is always regenerated and read; `--strict` makes any FAIL exit 1. Verdicts other
than PASS/FAIL (a script may write PENDING for a claim that needs a GPU) are counted apart. The
`## ...` sections of the appendix are kept, those a script writes replaced.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from gspo_dynamics._errors import ConfigError

SCRIPTS_DIR = Path(__file__).resolve().parents[1] / "paper_repro"
RESULTS_ENV = "GSPO_DYNAMICS_RESULTS"  # read by paper_repro/_results.py
# Per-script wall-clock limits (seconds). The slowest full-mode script takes ~150 s on 2 CPU
# cores and ~10x less in quick mode; the limits leave 4x headroom for a busy machine.
TIMEOUT_QUICK = 600.0
TIMEOUT_FULL = 1800.0


@dataclass(frozen=True)
class ScriptRun:
    """One claim script's run: its rows (`_results.FIELDS` -> text) and how it ended."""

    script: str  # the script's stem, e.g. "one_over_g"
    rows: tuple[dict[str, str], ...]
    sections: dict[str, str]  # the `## ...` sections it wrote, by heading
    status: str  # "ok" | "crashed" | "timed out" | "no rows"
    reason: str  # empty when ok
    wall: float  # seconds


@dataclass(frozen=True)
class ReproReport:
    runs: tuple[ScriptRun, ...]
    rows: tuple[dict[str, str], ...]  # every row now in the results' data
    results: Path
    quick: bool
    passed: int = field(init=False)  # this run's rows with verdict PASS
    failed: int = field(init=False)  # ... FAIL (crashed, timed-out and silent scripts included)
    other: int = field(init=False)  # ... any other verdict a script writes (e.g. PENDING: needs a GPU)

    def __post_init__(self) -> None:
        ran = {r["id"] for run in self.runs for r in run.rows}
        verdicts = [r["verdict"] for r in self.rows if r["id"] in ran]
        object.__setattr__(self, "passed", sum(v == "PASS" for v in verdicts))
        object.__setattr__(self, "failed", sum(v == "FAIL" for v in verdicts))
        object.__setattr__(self, "other", len(verdicts) - self.passed - self.failed)


def _results_module(scripts_dir: Path):
    """`scripts_dir/_results.py`, loaded by path (paper_repro is a folder of scripts, not a package)."""
    path = scripts_dir / "_results.py"
    if not path.is_file():
        raise ConfigError(f"{scripts_dir} has no _results.py; expected a paper_repro folder of claim scripts")
    name = f"_paper_repro_results_{abs(hash(str(path.resolve())))}"  # one module per folder
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up while the file executes
        sys.path.insert(0, str(scripts_dir))  # it imports its folder's _claims
        try:
            spec.loader.exec_module(module)
        finally:
            sys.path.remove(str(scripts_dir))
    return sys.modules[name]


def discover(scripts_dir: str | Path | None = None) -> dict[str, Path]:
    """Claim scripts of `scripts_dir` (default SCRIPTS_DIR) by stem: every `*.py` not starting with an underscore."""
    scripts_dir = Path(SCRIPTS_DIR if scripts_dir is None else scripts_dir)
    if not scripts_dir.is_dir():
        raise ConfigError(f"paper_repro folder {scripts_dir} not found (repro needs a source checkout)")
    return {p.stem: p for p in sorted(scripts_dir.glob("*.py")) if not p.name.startswith("_")}


def _last_error(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "no error output"


def failure_row(script: str, status: str, reason: str, *, quick: bool, wall: float, device: str, command: str) -> dict[str, str]:
    """The FAIL row standing for a script that did not run to completion."""
    return {
        "id": f"{script}-script", "claim": f"paper_repro/{script}.py runs to completion and records its claims",
        "source": "-", "predicted": "exit status 0, at least one claim row", "measured": f"{status}: {reason}",
        "verdict": "FAIL", "mode": "quick" if quick else "full", "device": device, "wall": f"{wall:.1f} s",
        "command": f"`{command}`",
    }


def run_script(path: Path, *, quick: bool, timeout: float, results_module, python: str = sys.executable) -> ScriptRun:
    """Run one claim script; its rows and sections come back through a private results folder."""
    command = f"python paper_repro/{path.name}" + (" --quick" if quick else "")
    with tempfile.TemporaryDirectory(prefix="gspo-repro-") as tmp:
        private = Path(tmp) / "RESULTS.md"
        env = {**os.environ, RESULTS_ENV: str(private)}
        started = time.perf_counter()
        # its own session, so that a timeout also ends the worker processes a script may start
        proc = subprocess.Popen([python, str(path)] + (["--quick"] if quick else []), cwd=path.parent, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            _, stderr = proc.communicate(timeout=timeout)
            status, reason = ("ok", "") if proc.returncode == 0 else ("crashed", f"exit status {proc.returncode}: {_last_error(stderr)}")
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            status, reason = "timed out", f"no result within {timeout:g} s"
        except KeyboardInterrupt:  # the new session does not get the terminal's Ctrl-C: pass it on
            os.killpg(proc.pid, signal.SIGKILL)
            raise
        wall = time.perf_counter() - started
        rows, sections = results_module.load(results_module.paths(private)[0])
        rows = list(rows.values())
    if status == "ok" and not rows:
        status, reason = "no rows", "the script exited 0 without recording a claim"
    if status != "ok":
        rows.append(failure_row(path.stem, status, reason, quick=quick, wall=wall,
                                device=results_module.device_name(), command=command))
    return ScriptRun(path.stem, tuple(rows), sections, status, reason, wall)


def _script_of(row: dict[str, str]) -> str | None:
    """The stem of the script a row's command runs (`python paper_repro/<stem>.py ...`)."""
    for word in row["command"].strip("`").split():
        if word.startswith("paper_repro/") and word.endswith(".py"):
            return Path(word).stem
    return None


def reproduce(
    *,
    quick: bool = False,
    only: Sequence[str] | None = None,
    results: str | Path | None = None,
    scripts_dir: str | Path | None = None,
    timeout: float | None = None,
    progress: Callable[[str], None] | None = None,
) -> ReproReport:
    """Run the claim scripts and rewrite the results table; returns what ran and the rows written.

    only: script stems (e.g. "one_over_g"); unknown names raise ConfigError listing the valid ones.
    results: the claims table to write (default `scripts_dir/RESULTS.md`; its data and appendix beside it).
    scripts_dir: the folder of claim scripts (default SCRIPTS_DIR, this checkout's paper_repro/).
    timeout: per-script limit in seconds (default TIMEOUT_QUICK or TIMEOUT_FULL).
    progress: called with one line before each script and after it.
    """
    scripts_dir = Path(SCRIPTS_DIR if scripts_dir is None else scripts_dir)
    scripts = discover(scripts_dir)
    if not scripts:
        raise ConfigError(f"no claim scripts (*.py) in {scripts_dir}")
    if only:
        unknown = sorted(set(only) - set(scripts))
        if unknown:
            raise ConfigError(f"unknown claim script {unknown[0]!r}; expected one of {', '.join(scripts)}")
        scripts = {k: v for k, v in scripts.items() if k in set(only)}
    timeout = (TIMEOUT_QUICK if quick else TIMEOUT_FULL) if timeout is None else float(timeout)
    if not timeout > 0:
        raise ConfigError(f"timeout must be positive, got {timeout}")
    module = _results_module(scripts_dir)
    results = Path(results) if results is not None else scripts_dir / "RESULTS.md"
    kept, sections = module.load(module.paths(results)[0])
    kept = list(kept.values()) if only else []
    runs = []
    for i, (name, path) in enumerate(scripts.items(), 1):
        if progress:
            progress(f"[{i}/{len(scripts)}] {name} ...")
        run = run_script(path, quick=quick, timeout=timeout, results_module=module)
        runs.append(run)
        if progress:
            verdicts = ", ".join(f"{r['id']} {r['verdict']}" for r in run.rows)
            progress(f"[{i}/{len(scripts)}] {name}: {run.status} in {run.wall:.1f} s ({verdicts})")
    ran = {run.script for run in runs}
    rows = {r["id"]: r for r in kept if _script_of(r) not in ran and r["id"] not in {f"{s}-script" for s in ran}}
    rows.update({r["id"]: r for run in runs for r in run.rows})
    for run in runs:
        sections.update(run.sections)
    module.save(rows, sections, results)
    return ReproReport(tuple(runs), tuple(sorted(rows.values(), key=lambda r: r["id"])), results, quick)


def summary_lines(report: ReproReport) -> list[str]:
    """A table of this run's verdicts and the line 'N pass, M fail'."""
    ran = {r["id"] for run in report.runs for r in run.rows}
    lines = [f"{'claim':32s} {'verdict':7s} {'mode':5s} {'wall':>8s}"]
    for row in report.rows:
        if row["id"] in ran:
            lines.append(f"{row['id']:32s} {row['verdict']:7s} {row['mode']:5s} {row['wall']:>8s}")
    broken = [f"{run.script} ({run.status})" for run in report.runs if run.status != "ok"]
    counts = f"{report.passed} pass, {report.failed} fail" + (f", {report.other} other (e.g. pending)" if report.other else "")
    lines.append(counts + (f"; scripts not completed: {', '.join(broken)}" if broken else ""))
    lines.append(f"wrote {report.results}")
    return lines
