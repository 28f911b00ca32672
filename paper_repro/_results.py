"""Shared plumbing of the paper_repro scripts: the recorded rows, and the two tables rendered from them.

Each script checks its claims, prints predicted vs measured, and calls `record`, which replaces the row
(keyed by its id) in the data file `data/claims.jsonl` and keeps every other row; a failing row is
recorded as failing, never dropped. The data also holds the `## ...` sections some scripts write
(`replace_section`). After each change both tables are rendered from the data (`render`):

    RESULTS.md           one row per claim (`_claims.CLAIMS`: a family of rows pooled into one claim);
    RESULTS_APPENDIX.md  every recorded row, grouped by claim, and the sections.

`python paper_repro/_results.py` renders them again; `--check` exits 1 where the committed files differ.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import math
import os
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from _claims import claim_rows

# GSPO_DYNAMICS_RESULTS moves RESULTS.md, and with it the appendix beside it and the data under its
# data/ folder (`gspo-dynamics repro` and tests use it).
RESULTS = Path(os.environ.get("GSPO_DYNAMICS_RESULTS") or Path(__file__).with_name("RESULTS.md"))


def paths(results: Path) -> tuple[Path, Path]:
    """(the data file, the appendix) that go with a RESULTS.md."""
    return results.parent / "data" / "claims.jsonl", results.with_name("RESULTS_APPENDIX.md")


DATA, APPENDIX = paths(RESULTS)
FIELDS = ("id", "claim", "source", "predicted", "measured", "verdict", "mode", "device", "wall", "command")

PREDICTABLE_GRPO = "arXiv 2606.30789"  # the reduced-order (damped-oscillator) model of GRPO training dynamics
GSPO = "arXiv 2507.18071"  # Zheng et al., Group Sequence Policy Optimization
# Whose claim each row checks, by claim id (a claim not listed is ours unless its Claim names a
# source). The oscillator model's predictions (closed-form fit, refresh-interval threshold and
# continuous rule, overdamped-to-oscillatory transition, 1/G fluctuation, group-size invariance,
# the failure modes `diagnose` separates) are arXiv 2606.30789's; the exact discrete (monodromy)
# and from-start theory, the finite-G corrections, the ratio statistics and the classifier are
# ours; the MoE routing claims are GSPO's. arXiv 2503.06639 (Mroueh) backs
# `theory/recurrences.py`, which the tests check; no claim script checks it.
SOURCES = {
    "closed-form-fit": PREDICTABLE_GRPO,
    "crit-T-exact": f"{PREDICTABLE_GRPO} (threshold); exact monodromy: ours",
    "crit-T-continuous": f"{PREDICTABLE_GRPO} (continuous rule)",
    "osc-transition": f"{PREDICTABLE_GRPO} (transition); exact monodromy: ours",
    "one-over-g-level": PREDICTABLE_GRPO,
    "one-over-g-slope": PREDICTABLE_GRPO,
    "finite-g-mean": f"{PREDICTABLE_GRPO} (group-size invariance); finite-G drive: ours",
    "moe-churn-vs-T": GSPO,
    "moe-replay-ratio-var": GSPO,
    "moe-grpo-no-replay-unstable": GSPO,
    "diagnose-corpus": f"{PREDICTABLE_GRPO} (failure modes); diagnose: ours",
}


@dataclass(frozen=True)
class Claim:
    id: str
    text: str
    source: str | None = None  # None: SOURCES[id], else "ours"

    @property
    def whose(self) -> str:
        return self.source or SOURCES.get(self.id, "ours")


def mean_se(x) -> tuple[float, float]:
    """(mean, standard error of the mean) of a sample; the error is NaN for a single value."""
    x = np.asarray(x, dtype=float)
    return float(x.mean()), (float(x.std(ddof=1) / math.sqrt(x.size)) if x.size > 1 else math.nan)


def parse_mode(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="the reduced CI-sized run")
    parser.add_argument("--no-record", action="store_true", help="print only; leave the results alone")
    return parser.parse_args()


def device_name() -> str:
    return f"cpu ({platform.machine()}, {os.cpu_count()} cores)"


def record(claim: Claim, *, predicted: str, measured: str, passed: bool, quick: bool, started: float,
           command: str, device: str | None = None, write: bool = True, verdict: str | None = None) -> None:
    """Print the row's verdict and replace its row in the data (`verdict` overrides PASS/FAIL, e.g.
    "PENDING" for a claim whose run needs hardware this machine lacks); both tables are rendered again."""
    wall = time.perf_counter() - started
    verdict = verdict or ("PASS" if passed else "FAIL")
    print(f"[{verdict}] {claim.id}: {claim.text}\n  predicted: {predicted}\n  measured:  {measured}\n  ({wall:.1f} s)")
    if not write:
        return
    row = dict(zip(FIELDS, (claim.id, claim.text, claim.whose, predicted, measured, verdict, "quick" if quick else "full",
                            device or device_name(), f"{wall:.1f} s", f"`{command}`")))
    with _locked():
        rows, sections = load()
        rows[claim.id] = row
        save(rows, sections)


def replace_section(section: str, body: str) -> None:
    """Replace the appendix's section headed `section` (a `## ` line; `body` starts with it) or append it."""
    with _locked():
        rows, sections = load()
        sections[section] = body.rstrip("\n")
        save(rows, sections)
    print(f"wrote section {section!r} of {APPENDIX}")


def load(data: Path | None = None) -> tuple[dict[str, dict], dict[str, str]]:
    """(rows by id, sections by heading) of a data file; both empty if it does not exist."""
    data = DATA if data is None else data
    rows, sections = {}, {}
    for line in data.read_text().splitlines() if data.exists() else []:
        item = json.loads(line)
        if "section" in item:
            sections[item["section"]] = item["body"]
        else:
            rows[item["id"]] = item
    return rows, sections


def dump(rows: dict[str, dict], sections: dict[str, str]) -> str:
    """The data file's text: one JSON object a line, the rows by id, then the sections in their order."""
    lines = [json.dumps({k: rows[i][k] for k in FIELDS}, ensure_ascii=False) for i in sorted(rows)]
    lines += [json.dumps({"section": s, "body": b}, ensure_ascii=False) for s, b in sections.items()]
    return "\n".join(lines) + "\n"


def save(rows: dict[str, dict], sections: dict[str, str], results: Path | None = None) -> None:
    """Write the data, then the two tables rendered from it (beside `results`, default RESULTS)."""
    results = RESULTS if results is None else results
    data, appendix = paths(results)
    tables = render(rows, sections)
    for path, text in ((data, dump(rows, sections)), (results, tables[0]), (appendix, tables[1])):
        _write(path, text)


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _line(cells) -> str:
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


HEADER = """# Claims: predicted vs measured

What this project stands behind: each claim below was checked by a script in this folder against a
prediction stated before the measurement, and a claim that fails is shown failing, with its numbers.
A claim that stands for a family of runs (the pilot forecast's grids, a trainer claim on the CPU and on a
GPU) pools their rows; its verdict is PASS only where the pooled claim holds. Every row, with its device,
wall time and command, and the detailed tables are in [RESULTS_APPENDIX.md](RESULTS_APPENDIX.md); how each
was tested in [docs/validation.md](../docs/validation.md).

Generated from [data/claims.jsonl](data/claims.jsonl) (`python paper_repro/_results.py`); the scripts record
into it (`python paper_repro/<script>.py [--quick]`, or all of them by `gspo-dynamics repro [--quick]`).
The grouping of rows into claims is `paper_repro/_claims.py`.
"""
APPENDIX_HEADER = """# Claims appendix: every recorded row

Generated with [RESULTS.md](RESULTS.md) from [data/claims.jsonl](data/claims.jsonl): each claim's rows
(one per run, grid or round, replaced in place when it is run again), then the tables the scripts write.
"""
TABLE = ("id", "claim", "source", "predicted", "measured", "verdict", "mode", "rows")


def render(rows: dict[str, dict], sections: dict[str, str]) -> tuple[str, str]:
    """(RESULTS.md, RESULTS_APPENDIX.md) of the recorded rows and sections."""
    claims = claim_rows([rows[i] for i in sorted(rows)])
    by_verdict = {}
    for spec, _, pooled in claims:
        by_verdict.setdefault(pooled.verdict, []).append(f"{spec.title} (`{spec.id}`)")
    names = {"PASS": "Holds", "FAIL": "Does not hold"}
    summary = [f"**{names.get(v, v.capitalize())} ({len(t)}):** " + "; ".join(t) + "."
               for v, t in sorted(by_verdict.items(), key=lambda kv: list(names).index(kv[0]) if kv[0] in names else 2)]
    table = [_line(TABLE), "|" + "---|" * len(TABLE)]
    for spec, members, pooled in claims:
        modes = " + ".join(sorted({r["mode"] for r in members}, reverse=True))
        claim = spec.claim or members[0]["claim"]
        source = "; ".join(dict.fromkeys(r["source"] for r in members))
        link = f"[{len(members)} row{'s' * (len(members) > 1)}](RESULTS_APPENDIX.md#{spec.id.lower()})"
        table.append(_line((spec.id, claim, source, pooled.predicted, pooled.measured, pooled.verdict, modes, link)))
    results = HEADER + "\n" + "\n\n".join(summary) + "\n\n" + "\n".join(table) + "\n"
    parts = [APPENDIX_HEADER, "## Rows by claim\n"]
    for spec, members, _ in claims:
        parts.append(f"### {spec.id}\n\n" + "\n".join([_line(FIELDS), "|" + "---|" * len(FIELDS)]
                                                       + [_line(r[k] for k in FIELDS) for r in members]) + "\n")
    parts += [body + "\n" for body in sections.values()]
    return results, "\n".join(parts)


@contextlib.contextmanager
def _locked():
    """Hold an exclusive lock beside RESULTS.md: scripts run side by side (as `repro` and several
    sessions do) then read-modify-write the data in turn instead of losing each other's rows."""
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    with open(RESULTS.with_name(RESULTS.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _write(path: Path, text: str) -> None:
    """Atomic replace: a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


def main() -> int:
    parser = argparse.ArgumentParser(description="render RESULTS.md and RESULTS_APPENDIX.md from data/claims.jsonl")
    parser.add_argument("--check", action="store_true", help="exit 1 where the files differ from their rendering")
    args = parser.parse_args()
    rows, sections = load()
    results, appendix = render(rows, sections)
    if args.check:
        stale = [p.name for p, t in ((RESULTS, results), (APPENDIX, appendix)) if not p.exists() or p.read_text() != t]
        print(f"stale: {', '.join(stale)}" if stale else "up to date")
        return 1 if stale else 0
    with _locked():
        save(rows, sections)
    print(f"wrote {RESULTS} ({len(claim_rows(list(rows.values())))} claims) and {APPENDIX} ({len(rows)} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
