"""Claim: every real training log is read, refused or reported as too short, as it should be.

Reads every file of ../shared/data/real_logs (or $GSPO_DYNAMICS_REAL_LOGS; INDEX.md there
describes them; other people's runs, never shipped with this repository): the detected format, trainer and version guess, rows, and the primary
verdict of `diagnose` with its evidence. The DPO log must be refused with a clear message, the
3-row smoke run reported as too short, and the JSON and TensorBoard copies of one run
(same run directory in the file name) must give identical series (at float32 precision: the
event file stores float32). Records the claim's row and replaces the "## Diagnose: real training
logs" section of paper_repro/RESULTS.md with the table.

    python paper_repro/diagnose_real_logs.py [--no-record] [--logs DIR]
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

import numpy as np
from _real_log_labels import load_labels, locate
from _results import Claim, record, replace_section

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.diagnose import TOO_SHORT, diagnose
from gspo_dynamics.logs import read_log
from gspo_dynamics.real_logs import real_log_files, real_logs_dir, real_logs_missing_reason

SECTION = "## Diagnose: real training logs"
LABELS_SECTION = "## Diagnose: real logs labelled by eye"
# the run directory of a copied file: everything before its checkpoint/log sub-folder
_RUN_DIR = re.compile(r"^(?P<run>.+?)__(?:checkpoint-\d+|logs|runs)__")


def logs_dir(explicit: str | None = None) -> Path:
    if explicit:
        if not Path(explicit).is_dir():
            raise SystemExit(f"--logs {explicit}: not a folder")
        return Path(explicit)
    folder = real_logs_dir()
    if folder is None:
        raise SystemExit(real_logs_missing_reason())
    return folder


def _evidence(verdict) -> str:
    items = []
    for e in verdict.evidence[:3]:
        value = e.get("value")
        value = f"{value:.3g}" if isinstance(value, float) else str(value)
        items.append(f"{e['signal']} {value}")
    return "; ".join(items)


def summarise(path: Path) -> dict:
    """One row of the table: how the file was read and what diagnose says about it."""
    row = {"file": path.name, "format": "-", "trainer": "-", "rows": 0, "reward_points": 0,
           "primary": "-", "evidence": "", "others": "", "status": "read"}
    try:
        log = read_log(path)
    except ConfigError as error:
        row.update(status="refused", primary="refused", evidence=str(error))
        return row
    row.update(format=log.format, trainer=f"{log.trainer} {log.version or ''}".strip(), rows=int(log.steps.size),
               reward_points=log.n_points("reward"))
    d = diagnose(log)
    row["primary"] = d.primary
    if d.primary == TOO_SHORT:
        row.update(status="too_short", evidence=f"{row['reward_points']} reward points")
        return row
    main = d.verdict(d.primary)
    row["evidence"] = _evidence(main) if main is not None else ""
    row["others"] = ", ".join(f"{v.mode} {v.confidence:.2f}" for v in d.verdicts if v.mode != d.primary)
    return row


def cross_format_pairs(files: list[Path]) -> list[tuple[Path, Path]]:
    """(JSON/text copy, TensorBoard copy) of the same run, paired by run directory in the name."""
    runs: dict[str, list[Path]] = {}
    for path in files:
        m = _RUN_DIR.match(path.name)
        if m:
            runs.setdefault(m["run"], []).append(path)
    pairs = []
    for members in runs.values():
        tb = [p for p in members if ".tfevents." in p.name]
        other = [p for p in members if ".tfevents." not in p.name]
        pairs += [(a, b) for a in other for b in tb]
    return pairs


def compare_copies(a: Path, b: Path) -> tuple[bool, int, str]:
    """(identical, series compared, first difference): steps equal and every common series equal at float32."""
    la, lb = read_log(a), read_log(b)
    if not np.array_equal(la.steps, lb.steps):
        return False, 0, f"steps differ ({la.steps.size} vs {lb.steps.size})"
    common = sorted(set(la.names) & set(lb.names))
    for name in common:
        # TensorBoard stores float32, so the JSON's float64 values are compared after rounding to float32
        if not np.array_equal(la[name].astype(np.float32), lb[name].astype(np.float32), equal_nan=True):
            return False, len(common), f"series {name!r} differs"
    return True, len(common), ""


def labelled_rows() -> list[dict]:
    """Every hand-labelled log (real_log_labels.json) present here, with diagnose's primary verdict now
    beside the label given by eye (and the verdict when it was labelled); absent ones say why."""
    rows = []
    for entry in load_labels():
        path, why = locate(entry)
        now = summarise(path)["primary"] if path is not None else f"absent ({why})"
        agree = None if path is None else (now == entry["label"] or now == entry.get("secondary"))
        rows.append({**entry, "primary_now": now, "agree": agree})
    return rows


def labels_section(rows: list[dict]) -> str:
    present = [r for r in rows if r["agree"] is not None]
    primary = sum(r["primary_now"] == r["label"] for r in present)
    either = sum(bool(r["agree"]) for r in present)
    lines = [LABELS_SECTION, "",
             "Each log was labelled by eye from its curves, with the reason, before diagnose was run on it "
             "(`paper_repro/real_log_labels.json`; the logs are other people's and are not in this repository: "
             "shared ones in ../shared/data/real_logs, external ones where `$GSPO_DYNAMICS_EXTERNAL_LOGS` points, "
             "each with its repository, commit and path). Disagreements stay in the table.", "",
             f"Present here: {len(present)} of {len(rows)}. diagnose's primary = the label on {primary}/{len(present)}; "
             f"= the label or its stated secondary on {either}/{len(present)}.", "",
             "| file | where | rows | label (secondary) | diagnose now | at labelling | agree | why (by eye) |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        label = r["label"] + (f" ({r['secondary']})" if r.get("secondary") else "")
        agree = "-" if r["agree"] is None else ("yes" if r["primary_now"] == r["label"] else
                                                 "secondary" if r["agree"] else "**no**")
        lines.append("| " + " | ".join(str(x).replace("|", "\\|") for x in (
            r["file"][:60], r["where"], r["rows"], label, r["primary_now"], r["diagnose_primary_at_labelling"], agree,
            r["reason"])) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the same run (it is already small)")
    parser.add_argument("--no-record", action="store_true", help="print only; leave RESULTS.md alone")
    parser.add_argument("--logs", help="folder of logs (default: ../shared/data/real_logs or $GSPO_DYNAMICS_REAL_LOGS)")
    args = parser.parse_args()
    started = time.perf_counter()
    folder = logs_dir(args.logs)
    files = real_log_files(folder)
    rows = [summarise(p) for p in files]
    for r in rows:
        print(f"{r['file'][:70]:70s} {r['format']:12s} {r['rows']:5d} rows  {r['primary']:22s} {r['evidence'][:100]}")
    pairs = [(a, b, *compare_copies(a, b)) for a, b in cross_format_pairs(files)]
    for a, b, same, n, why in pairs:
        print(f"cross-format {a.name[:40]}... vs {b.name[-40:]}: {'identical' if same else 'DIFFERENT'} ({n} series) {why}")
    refused = [r for r in rows if r["status"] == "refused"]
    short = [r for r in rows if r["status"] == "too_short"]
    # the INDEX calls it DPO; its keys (odds_ratio_loss, sft_loss) are TRL's ORPO trainer's: DPO family either way
    dpo_ok = len(refused) == 1 and "DPO" in refused[0]["evidence"]
    short_ok = len(short) == 1 and short[0]["reward_points"] == 3
    pairs_ok = bool(pairs) and all(same for _, _, same, _, _ in pairs)
    diagnosed = [r for r in rows if r["status"] == "read"]
    passed = dpo_ok and short_ok and pairs_ok and len(rows) == len(files)
    as_what = [m[1] for r in refused if (m := re.search(r"run of (.+?), not of", r["evidence"]))]
    measured = (f"{len(files)} files: {len(diagnosed)} diagnosed, {len(refused)} refused "
                f"(as {'; '.join(as_what) or 'unexpected'}), {len(short)} too short "
                f"({short[0]['reward_points'] if short else '-'} points); {len(pairs)} JSON/TensorBoard pair(s) "
                f"{'identical' if pairs_ok else 'NOT identical'}")
    cmd = "python paper_repro/diagnose_real_logs.py"
    record(Claim("diagnose-real-logs", "every shared real log is read (DPO refused, 3-row run too short) and "
                 "its JSON and TensorBoard copies give identical series"),
           predicted="all read; 1 DPO refused; 1 too short; copies identical", measured=measured, passed=passed,
           quick=args.quick, started=started, command=cmd, write=not args.no_record)
    labelled = labelled_rows()
    for r in labelled:
        print(f"labelled {r['file'][:60]:60s} {r['label']:22s} now {str(r['primary_now'])[:40]:40s} agree {r['agree']}")
    if not args.no_record:
        replace_section(LABELS_SECTION, labels_section(labelled))
        table = ["| file | format | trainer (version) | rows | primary verdict | evidence | other verdicts |",
                 "|---|---|---|---|---|---|---|"]
        for r in rows:
            table.append("| " + " | ".join(str(x).replace("|", "\\|") for x in (
                r["file"], r["format"], r["trainer"], r["rows"], r["primary"], r["evidence"], r["others"] or "-")) + " |")
        body = [SECTION, "", f"`{cmd}` on {folder.name}/ ({len(files)} files; verdicts without hyperparameters).", "",
                *table, "", "Cross-format copies of one run (steps and every common series equal at float32):", ""]
        body += [f"- `{a.name}` vs `{b.name}`: {'identical' if same else 'different: ' + why} ({n} common series)"
                 for a, b, same, n, why in pairs]
        replace_section(SECTION, "\n".join(body) + "\n")


if __name__ == "__main__":
    main()
