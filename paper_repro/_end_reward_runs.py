"""The finished real runs of paper_repro/real_run_end_reward.py: where they are found and how each is read.

Three sources, each read by `logs.read_log` as a user calls it (`real_run_forecast.load_runs`): the shared runs
(../shared/data/real_runs, ../shared/data/real_logs) and the manifest's files found under --extra
(`real_run_forecast.candidate_logs`), and the labelled logs from the wild (paper_repro/wild_logs/labels_*.json and
heldout/labels_*.json; the files in $GSPO_DYNAMICS_WILD_LOGS or ../wild_logs, sha256 checked, `wild_logs.locate`),
less those labelled refused or too short. The logs are other people's: never in this repository; absent ones are
skipped and counted.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import real_run_forecast as rrf
import wild_logs

from gspo_dynamics.fit import fit_exponential_saturation, fit_sigmoid_scalerl

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


def ensemble_end(steps, reward, fit, window, reach) -> float:
    """The parametric ensemble baseline (after Domhan et al. 2015; real_run_end_reward's docstring): the end of each
    curve family fitted to the pilot, weighted by exp(-BIC / 2), BIC = n ln(RSS / n) + p ln n."""
    t, r = np.asarray(steps, dtype=float), np.asarray(reward, dtype=float)
    n = r.size
    ends, bic = [], []

    def add(end: float, rss: float, p: int) -> None:
        if math.isfinite(end) and math.isfinite(rss):
            ends.append(float(np.clip(end, *reach)))
            bic.append(n * math.log(max(rss, 1e-300) / n) + p * math.log(n))

    for law in (fit_exponential_saturation(t, r), fit_sigmoid_scalerl(t, r)):
        if not law.fallback:
            add(float(np.mean(law.predict(window, reach))), law.rss, 3)
    if fit is not None:
        add(float(np.mean(np.clip(fit.predict(window), *reach))), fit.residual_std ** 2 * (n - len(fit.fitted)), len(fit.fitted))
    design = np.column_stack([np.ones(n), np.log(t - t[0] + 1)])
    coef, *_ = np.linalg.lstsq(design, r, rcond=None)
    add(float(np.mean(coef[0] + coef[1] * np.log(window - t[0] + 1))), float(np.sum((r - design @ coef) ** 2)), 2)
    add(float(np.mean(r)), float(np.sum((r - np.mean(r)) ** 2)), 1)
    b = np.asarray(bic)
    w = np.exp(-(b - b.min()) / 2)
    return float(np.dot(w / w.sum(), ends))
