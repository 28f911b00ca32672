"""Measurement (no claim row): diagnose on the full logs of the public runs of `public_collapse.py` against their
fell/held labels (data/public_collapse/manifest.json, written by eye before any predict call).

A collapse should be answered with the collapse: per label, how many runs diagnose leads with dynamical instability,
how many it leads with a confident rise or saturation ("still rising, train longer", "nothing to change"), and the
held runs it alarms on. Logs are looked for as `public_collapse.py` looks for them (absent ones are counted).

    python paper_repro/public_collapse_diagnose.py [--rows]     # --rows: one line per run (--quick: the same)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from public_collapse import load_manifest, logs_root, present  # noqa: E402

from gspo_dynamics.diagnose import diagnose  # noqa: E402
from gspo_dynamics.logs import read_log  # noqa: E402

RISE = ("still_rising", "healthy_saturation")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", action="store_true", help="print one line per run")
    parser.add_argument("--quick", action="store_true", help="the same runs (52 logs read in about a minute)")
    parser.add_argument("--no-record", action="store_true", help="nothing is recorded in any case (a measurement)")
    args = parser.parse_args()
    root, counts, absent = logs_root(), {}, 0
    for run in load_manifest():
        path = present(run, root)
        if path is None:
            absent += 1
            continue
        d = diagnose(read_log(str(path)))
        sure = not d.unsure
        c = counts.setdefault(run["label"], {"runs": 0, "instability first": 0, "confident rise or saturation first": 0})
        c["runs"] += 1
        c["instability first"] += d.primary == "dynamical_instability"
        c["confident rise or saturation first"] += d.primary in RISE and sure
        if args.rows:
            head = d.headline()
            print(f"{run['label']:<5} {run['id'][:48]:<48} {head[0][11:]:<40} | {head[1][11:][:90]}")
    for label, c in sorted(counts.items()):
        print(f"{label}: " + ", ".join(f"{k} {v}" for k, v in c.items()))
    print(f"absent logs: {absent}")


if __name__ == "__main__":
    main()
