"""Confirmation: the end-reward readings of paper_repro/real_run_end_reward.py met on finished real runs from
repositories none of its protocols has seen (issue 49). No target and no tuning: a table, fixed before its first run.

Protocol (fixed on 2026-12-02, committed before any fresh run was evaluated; nothing here is chosen from its results).
Protocols 1-4 of real_run_end_reward.py all met the same 70 runs from 52 repositories; a fifth protocol on them would
be a forking path, so fresh runs judge the two candidates instead.

  runs        the entries of paper_repro/data/fresh_runs/manifest.json ("runs": repo, commit, path, sha256, file, why),
              each chosen by its metadata only (a finished run logging >= 40 reward points, from a repository not
              among the 52 nor any other this project has read), before any curve's end was looked at (but for the
              fourth search's 9 runs, the second held-out wild set's, whose curves a labeller and diagnose had seen;
              the manifest says so, and the table is given with and without them). The files are
              other people's: never in this repository; looked for in --runs, $GSPO_DYNAMICS_FRESH_RUNS or
              ../fresh_runs, sha256 checked; absent ones are skipped and counted. Each read by `logs.read_log` as
              `_end_reward_runs` reads (`real_run_forecast.load_runs`, MIN_POINTS = 40, a repeated series once).
  enough      the table is written only for >= MIN_RUNS runs from >= MIN_REPOS repositories; below that the script
              says how many it found and stops ([SKIP]): a confirmation on a handful of runs confirms nothing.
  pilots,     protocol 2's, by its own function (`real_run_end_reward.pilot_row`): the first 10% and 25% of the reward
  truth,      points (at least 8), h = the run's last step / the pilot's, y = the mean over the run's last sixth,
  noise       sigma = std(first differences of the pilot) / sqrt(2) floored at 1% of the reach, errors |R - y| / sigma.
  methods     shipped: predict's end blend as shipped, `_end_blend.blend` with BLEND_WEIGHTS and BLEND_GATE (protocol
                  2's constants, all gates open), its band (5) with BAND_QUANTILES, none beyond BAND_MAX_HORIZON
                  (as `predict._end_reward` gives it; a band not given is scored as the whole reach).
              gated: the same with protocol 4's gate as computed on all 70 runs: `real_run_end_reward.py --ship` with
                  SHIPPED = 4 on the 70 runs (G_b of (4g) with each run's forecast from weights learned without its own
                  repository; run 2026-12-02 at 4aaada0, 46 s), which printed BLEND_GATE {near: 1, far: 0} (GATE_4) and
                  BAND_QUANTILES with the shut far bin's from the held level's scores, flat 3.937 / trend 3.833
                  (QUANTILES_4; the near bin's are the shipped ones); where G_b = 0 the forecast is the held level.
              held level, last value, ScaleRL's sigmoid, the curve ensemble: `pilot_row`'s ends; their 90% bands
                  split conformal with u = sigma per horizon bin (both shares pooled), from the other fresh
                  repositories' scores (protocol 2's baseline bands, left out by repository).
  scores      per pilot share and method: the median scaled error, the 90% band's coverage, the mean interval score
              (Gneiting & Raftery 2007, eq. 43) over sigma; per-run rows. Written to
              paper_repro/real_run_end_reward_fresh.md; nothing recorded in RESULTS.md, nothing shipped from it.

    python paper_repro/end_reward_fresh.py                       # the manifest's runs found in ../fresh_runs
    python paper_repro/end_reward_fresh.py --runs DIR --no-record  # print only
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np
import real_run_forecast as rrf
from _end_reward_runs import MIN_POINTS
from real_run_end_reward import BINS, pilot_row, score_row

from gspo_dynamics.predict._end_blend import (
    BAND_MAX_HORIZON, BAND_QUANTILES, BLEND_GATE, BLEND_WEIGHTS, band, band_quantile, blend,
)

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "data" / "fresh_runs" / "manifest.json"
TABLE = HERE / "real_run_end_reward_fresh.md"
ENV_VAR = "GSPO_DYNAMICS_FRESH_RUNS"
SHARES = (0.10, 0.25)
MIN_RUNS, MIN_REPOS = 15, 8  # fewer runs or repositories: no table (module docstring, "enough")
# protocol 4's gate and a shut bin's band quantiles on the 70 runs: real_run_end_reward.py --ship with SHIPPED = 4
GATE_4 = {"near": 1, "far": 0}
QUANTILES_4 = {"near": {"flat": 1.459, "trend": 1.580}, "far": {"flat": 3.937, "trend": 3.833}}
BASELINES = ("held", "last", "scalerl_sigmoid", "ensemble")
METHODS = ("shipped", "gated") + BASELINES


def manifest_runs(folder: Path | None, manifest: Path | None = None) -> tuple[list[dict], list[str]]:
    """The manifest's runs found in `folder` (sha256 checked), read as `_end_reward_runs` reads; why others were not."""
    where = Path(folder or os.environ.get(ENV_VAR) or HERE.parents[1] / "fresh_runs")
    manifest = manifest or MANIFEST
    entries = json.loads(manifest.read_text())["runs"] if manifest.exists() else []
    found, skipped = [], []
    for entry in entries:
        path = where / entry["file"]
        if not path.is_file():
            skipped.append(f"{entry['file']}: absent")
        elif rrf._sha256(path) != entry["sha256"]:
            skipped.append(f"{entry['file']}: sha256 differs from the manifest's")
        else:
            found.append((path, entry))
    runs, not_read = rrf.load_runs([], MIN_POINTS, (found, skipped))
    return runs, not_read


def shipped(row: dict, gates: dict[str, int], quantiles: dict) -> tuple[float, tuple[float, float] | None]:
    """The blend's end and band (`predict._end_reward`'s) with the shipped weights, gated by `gates`."""
    r = row["readings"]
    value = float(np.clip(blend(r, np.multiply(gates[r.where], BLEND_WEIGHTS[r.where])), *row["reach"]))
    if r.horizon > BAND_MAX_HORIZON:
        return value, None
    return value, band(value, r.scale, quantiles[r.where][r.group], row["reach"])


def evaluate(rows: list[dict]) -> None:
    """Each row's end, band, scaled error, coverage and interval score per method (module docstring)."""
    for row in rows:
        row["forecast"], row["band"] = {}, {}
        for name, gates, quantiles in (("shipped", BLEND_GATE, BAND_QUANTILES), ("gated", GATE_4, QUANTILES_4)):
            row["forecast"][name], row["band"][name] = shipped(row, gates, quantiles)
        for name in BASELINES:
            scores = [abs(o["y"] - o["ends"][name]) / o["sigma"] for o in rows
                      if o["repo"] != row["repo"] and o["bin"] == row["bin"]]  # both shares, as protocol 2
            row["forecast"][name] = row["ends"][name]
            row["band"][name] = band(row["ends"][name], row["sigma"], band_quantile(scores), row["reach"])
        score_row(row)


def summary(rows: list[dict]) -> dict:
    """Per share and method: (median scaled error, coverage, mean interval score)."""
    return {sh: {k: (float(np.median([r["error"][k] for r in rows if r["share"] == sh])),
                     float(np.mean([r["covered"][k] for r in rows if r["share"] == sh])),
                     float(np.mean([r["is"][k] for r in rows if r["share"] == sh]))) for k in METHODS} for sh in SHARES}


def table_lines(s: dict) -> list[str]:
    lines = ["| method | " + " | ".join(f"{sh:.0%}: median error | coverage | interval score" for sh in SHARES) + " |",
             "|---" * (1 + 3 * len(SHARES)) + "|"]
    for k in METHODS:
        lines.append(f"| {k} | " + " | ".join(f"{s[sh][k][0]:.2f} | {s[sh][k][1]:.0%} | {s[sh][k][2]:.1f}"
                                               for sh in SHARES) + " |")
    return lines


def write_table(rows: list[dict], s: dict, header: str) -> None:
    lines = ["# The end reward on fresh finished runs (paper_repro/end_reward_fresh.py; protocol in its docstring)", "",
             header, ""] + table_lines(s) + ["", "| run | repo | pilot | h | sigma | truth | shipped | gated | held | "
                                              "last | sigmoid | ensemble |", "|---" * 12 + "|"]
    for r in rows:
        lines.append(f"| {r['run'][:50]} | {r['repo']} | {r['n']}/{r['points']} | {r['readings'].horizon:.3g} | "
                     f"{r['sigma']:.3g} | {r['y']:.3g} | " + " | ".join(
                         f"{r['forecast'][k]:.3g} ({r['error'][k]:.2f})" + ("" if r["covered"][k] else " miss")
                         for k in METHODS) + " |")
    TABLE.write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, default=None, help="the manifest's logs' folder (default ../fresh_runs)")
    parser.add_argument("--quick", action="store_true", help="the same (CI: the runs are absent there, so it skips)")
    parser.add_argument("--no-record", action="store_true", help="print only; leave the table alone")
    args = parser.parse_args(argv)
    runs, skipped = manifest_runs(args.runs)
    repos = len({r["repo"] for r in runs})
    found = f"{len(runs)} fresh runs from {repos} repositories; {len(skipped)} manifest logs skipped"
    if len(runs) < MIN_RUNS or repos < MIN_REPOS:
        print(f"[SKIP] {found}: a confirmation needs >= {MIN_RUNS} runs from >= {MIN_REPOS} repositories")
        return 0
    rows = [pilot_row(run, share) for share in SHARES for run in runs]
    evaluate(rows)
    s = summary(rows)
    print(found)
    print("\n".join(table_lines(s)))
    if not args.no_record:
        bins = ", ".join(f"{b} {sum(r['bin'] == b for r in rows)}" for b in BINS)
        write_table(rows, s, f"{found}. Pilots per horizon bin: {bins}.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
