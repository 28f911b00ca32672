"""The finished real runs of paper_repro/real_run_end_reward.py: where they are found and how each is read.

Three sources, each read by `logs.read_log` as a user calls it (`real_run_forecast.load_runs`): the shared runs
(../shared/data/real_runs, ../shared/data/real_logs) and the manifest's files found under --extra
(`real_run_forecast.candidate_logs`), and the labelled logs from the wild (paper_repro/wild_logs/labels_*.json and
heldout/labels_*.json; the files in $GSPO_DYNAMICS_WILD_LOGS or ../wild_logs, sha256 checked, `wild_logs.locate`),
less those labelled refused or too short. The logs are other people's: never in this repository; absent ones are
skipped and counted.
"""

from __future__ import annotations

from pathlib import Path

import real_run_forecast as rrf
import wild_logs

MIN_POINTS = 40  # a finished run with a pilot: 10% of it is >= 4 points, its end (last sixth) >= 7 points
NOT_RUNS = ("refused", "too_short")  # labels whose logs are no finished run


def wild_candidates(folder: Path | None = None) -> tuple[list[tuple[Path, dict]], list[str]]:
    """(path, label entry) of every labelled wild log found (dev and held-out sets), and the reasons for the rest."""
    where = wild_logs.logs_dir(None if folder is None else str(folder))
    found, skipped = [], []
    for labels in (wild_logs.LABELS, wild_logs.LABELS / "heldout"):
        for entry in wild_logs.load_entries(labels):
            if entry["label"] in NOT_RUNS:
                skipped.append(f"{entry['file'][:80]}: labelled {entry['label']}")
                continue
            path, why = wild_logs.locate(entry, where)
            if path is None:
                skipped.append(f"{entry['file'][:80]}: {why}")
            else:
                found.append((path, entry))
    return found, skipped


def finished_runs(extra: list[Path], quick: bool, wild: Path | None = None) -> tuple[list[dict], list[str]]:
    """Every run the protocol reads (quick: the shared runs only), each with its `repo`, and the reasons for those
    skipped."""
    shared, skipped = rrf.candidate_logs([] if quick else extra)
    if not quick:
        more, why = wild_candidates(wild)
        shared, skipped = shared + more, skipped + why
    runs, not_read = rrf.load_runs([], MIN_POINTS, (shared, []))
    return runs, skipped + not_read

