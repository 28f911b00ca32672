"""Claim: real logs from repositories no rule was shaped on are read right, and judged right or said to be unsure.

The protocol, fixed before the first run, is paper_repro/wild_logs/PROTOCOL.md; this script is its scorer. The
labels (`paper_repro/wild_logs/labels_*.json`) were written by eye, each log's expected reading and verdict, before
any code of this package read the log. The logs are other people's and are not in this repository: they are looked
for in $GSPO_DYNAMICS_WILD_LOGS, else ../wild_logs beside the repository root, under each entry's `file` name
(fetched from its repository at its commit; the sha256 must match); absent ones are counted and skipped.

Per log: `read_log(path)` as a user calls it, then `diagnose(log)`. Scores: read as expected, tracebacks, refusals,
false non_finite, verdicts right / unsure, and the confidence >= 0.9 bucket with the Platt map refitted leaving each
repository out. Records the rows wild-logs-read and wild-logs-verdicts and the appendix section with every log.

Three sets, scored apart: `dev` (labels_*.json: the development corpus, which the readers' authors saw while they
worked), `heldout` (heldout/labels_*.json: labelled after the readers were frozen from repositories nobody had
looked at, the honest measure of logs from the wild) and `heldout2` (heldout2/labels_*.json: a second such set,
labelled in session 44 against the readers of sessions 25-43, committed before any code of this package read it).

    python paper_repro/wild_logs.py [--set dev|heldout|heldout2] [--no-record] [--logs DIR] [--only SUBSTRING]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import time
import traceback
from collections import Counter, defaultdict
from pathlib import Path

from _results import Claim, record, replace_section

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.diagnose import TOO_SHORT, diagnose
from gspo_dynamics.diagnose._calibration import calibrate, fit_platt
from gspo_dynamics.logs import read_log

ROOT = Path(__file__).resolve().parents[1]
LABELS = Path(__file__).with_name("wild_logs")
ENV_VAR = "GSPO_DYNAMICS_WILD_LOGS"
SECTIONS = {"dev": "## Logs from the wild: the development corpus (issue 48)",
            "heldout": "## Logs from the wild: the held-out set (issue 48)",
            "heldout2": "## Logs from the wild: the second held-out set (session 44)"}
FOLDERS = {"dev": LABELS, "heldout": LABELS / "heldout", "heldout2": LABELS / "heldout2"}
# the protocol's targets
READ_TARGET, RIGHT_TARGET, CONFIDENT_TARGET, UNSURE_MAX, CONFIDENT = 0.95, 0.85, 0.90, 0.20, 0.9
REL, ABS = 1e-3, 1e-6  # reward_first / reward_last agree to this (relative, absolute)
SERIES_OF_COLUMN = {"reward_column": "reward", "entropy_column": "entropy", "length_column": "mean_length",
                    "kl_ref_column": "kl_ref", "grad_norm_column": "grad_norm"}
NON_MODE = ("refused", TOO_SHORT)


def load_entries(folder: Path = LABELS) -> list[dict]:
    """Every labelled log of every labels_*.json, in file order (a file that does not parse is an error)."""
    entries = []
    for path in sorted(folder.glob("labels_*.json")):
        entries += json.loads(path.read_text(encoding="utf-8"))
    return entries


def logs_dir(explicit: str | None = None) -> Path:
    return Path(explicit or os.environ.get(ENV_VAR) or ROOT.parent / "wild_logs")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def locate(entry: dict, folder: Path) -> tuple[Path | None, str]:
    path = folder / entry["file"]
    if not path.is_file():
        return None, "absent"
    if _sha256(path) != entry["sha256"]:
        return None, "sha256 differs from the label's"
    return path, ""


# a non-finite number in a value's place: after ':' or '=' (and an optional quote), as JSON, Python or a console prints it
_NON_FINITE = re.compile(rb"""[:=]\s*['"]?[-+]?(?:nan|inf|infinity)(?![A-Za-z_])""", re.IGNORECASE)


def file_has_non_finite(path: Path, label: bool) -> bool:
    """Whether the file holds a non-finite value anywhere (the label's word for a TensorBoard file)."""
    data = path.read_bytes()
    return label if data[:1] not in b"{[" and b"\x00" in data[:4096] else bool(_NON_FINITE.search(data))


def _close(a: float, b: float) -> bool:
    return math.isfinite(a) and math.isfinite(b) and abs(a - b) <= max(ABS, REL * max(abs(a), abs(b)))


def reading_misses(log, entry: dict) -> list[str]:
    """What of the read differs from the label's expected reading ([] when it is read as expected)."""
    want, misses = entry["reading"], []
    if "reward" not in log:
        return ["no reward series"]
    steps, reward = log.valid("reward")
    if steps.size == 0:
        return ["no finite reward"]
    if (int(steps[0]), int(steps[-1])) != (want["step_first"], want["step_last"]):
        misses.append(f"steps {steps[0]}-{steps[-1]}, label {want['step_first']}-{want['step_last']}")
    if abs(steps.size - want["n_reward"]) > 1:
        misses.append(f"{steps.size} reward points, label {want['n_reward']}")
    for got, key in ((reward[0], "reward_first"), (reward[-1], "reward_last")):
        if want.get(key) is not None and not _close(float(got), float(want[key])):
            misses.append(f"{key} {got:.6g}, label {want[key]:.6g}")
    n_runs = getattr(log, "n_runs", 1)
    if n_runs != entry.get("runs", 1):
        misses.append(f"{n_runs} run(s) found, label {entry.get('runs', 1)}")
    columns = getattr(log, "columns", None)
    for key, series in SERIES_OF_COLUMN.items():
        if key not in want:
            continue
        if columns is None:
            misses.append("the RunLog does not say which column became which series")
            break
        if columns.get(series) != want[key]:
            misses.append(f"{series} from {columns.get(series)!r}, label {want[key]!r}")
    n_eval = getattr(log, "n_eval_points", None)
    if n_eval is None:
        n_eval = sum(1 for name in log.names if name.startswith("eval/"))
    if (n_eval > 0) != (want.get("eval_points", 0) > 0):
        misses.append(f"eval points {n_eval}, label {want.get('eval_points', 0)}")
    return misses


def format_class(described: str) -> str:
    """The kind of file a label's words describe: TensorBoard, trainer_state.json, CSV, JSONL, JSON document, console."""
    text = described.lower()
    for word, kind in (("tensorboard", "TensorBoard"), ("trainer_state", "trainer_state.json"), ("csv", "CSV"),
                       ("jsonl", "JSONL"), ("json lines", "JSONL"), ("json", "JSON document")):
        if word in text and not (kind == "JSON document" and any(w in text for w in ("console", "stdout"))):
            return kind
    return "console"


def score(entry: dict, path: Path) -> dict:
    """One log's row: how it was read and judged against its label."""
    row = {"file": entry["file"], "repo": entry["repo"], "writer": entry.get("writer", "?"),
           "format": format_class(entry.get("format", "?")), "label": entry["label"], "also_ok": entry.get("also_ok") or [],
           "outcome": "read", "misses": [], "primary": "-", "confidence": None, "unsure": [], "non_finite": False}
    try:
        log = read_log(path)
        diagnosis = diagnose(log)
    except ConfigError as error:
        row.update(outcome="refused", primary="refused", misses=[] if entry["label"] == "refused" else
                   [f"refused: {str(error)[:160]}"])
        return row
    except Exception as error:  # noqa: BLE001 - a traceback is what this counts
        row.update(outcome="traceback", primary="traceback",
                   misses=[f"{type(error).__name__}: {error}"[:200]], trace=traceback.format_exc(limit=3))
        return row
    if entry["label"] == "refused":
        row["misses"] = [] if diagnosis.primary in row["also_ok"] else ["read, label refused"]
    elif entry.get("reading"):
        row["misses"] = reading_misses(log, entry)
    row["diverged"] = bool(getattr(log, "diverged", {}))
    row["non_finite"] = any(f.name == "non_finite" for f in diagnosis.findings)
    row["primary"] = diagnosis.primary
    row["unsure"] = list(getattr(diagnosis, "unsure", ()) or ())
    if diagnosis.primary != TOO_SHORT and diagnosis.verdicts:
        row["confidence"] = float(diagnosis.verdicts[0].confidence)
    return row


def right(row: dict) -> bool:
    return row["primary"] == row["label"] or row["primary"] in row["also_ok"]


def held_out_confidences(rows: list[dict]) -> dict[str, float]:
    """file -> the printed confidence passed through the Platt map refitted without the file's repository.
    Platt maps compose into a Platt map, so refitting on printed confidences is refitting on raw ones."""
    judged = [r for r in rows if r["confidence"] is not None and not r["unsure"]]
    out = {}
    for repo in {r["repo"] for r in judged}:
        train = [r for r in judged if r["repo"] != repo]
        ab = fit_platt([r["confidence"] for r in train], [right(r) for r in train]) if train else (1.0, 0.0)
        out.update({r["file"]: calibrate(r["confidence"], ab) for r in judged if r["repo"] == repo})
    return out


def _share(k: int, n: int) -> str:
    return f"{k}/{n} = {k / n:.0%}" if n else "0/0"


def summarise(rows: list[dict], labelled: int) -> dict:
    read_ok = [r for r in rows if not r["misses"] and r["outcome"] != "traceback"]
    tracebacks = [r for r in rows if r["outcome"] == "traceback"]
    wrong_refusals = [r for r in rows if r["outcome"] == "refused" and r["label"] != "refused"]
    false_nf = [r for r in rows if (r.get("diverged") and not r["label_non_finite"]) or
                (r["non_finite"] and not r["file_non_finite"])]
    modal = [r for r in rows if r["label"] not in NON_MODE and r["outcome"] == "read"]
    unsure = [r for r in modal if r["unsure"]]
    given = [r for r in rows if r["outcome"] == "read" and not r["unsure"] and r["label"] != "refused"]
    held = held_out_confidences(rows)
    confident = [r for r in given if held.get(r["file"], 0.0) >= CONFIDENT]
    printed = [r for r in given if (r["confidence"] or 0.0) >= CONFIDENT]
    s = {"present": len(rows), "labelled": labelled, "repos": len({r["repo"] for r in rows}),
         "read": (len(read_ok), len(rows)), "tracebacks": len(tracebacks), "wrong_refusals": len(wrong_refusals),
         "false_non_finite": len(false_nf), "right": (sum(map(right, given)), len(given)),
         "unsure": (len(unsure), len(modal)),
         "unsure_naming_label": (sum(r["label"] in r["unsure"] or bool(set(r["also_ok"]) & set(r["unsure"]))
                                     for r in unsure), len(unsure)), "confident": (sum(map(right, confident)), len(confident)),
         "printed_confident": (sum(map(right, printed)), len(printed))}
    frac = lambda pair: pair[0] / pair[1] if pair[1] else 0.0  # noqa: E731
    s["read_pass"] = bool(rows) and frac(s["read"]) >= READ_TARGET and not tracebacks and not wrong_refusals \
        and not false_nf
    s["verdict_pass"] = bool(given) and frac(s["right"]) >= RIGHT_TARGET and frac(s["unsure"]) <= UNSURE_MAX and \
        (not confident or frac(s["confident"]) >= CONFIDENT_TARGET)
    return s


def breakdown(rows: list[dict], key: str) -> list[str]:
    groups = defaultdict(list)
    for r in rows:
        groups[r[key]].append(r)
    lines = [f"| {key} | logs | read as expected | verdict right (given) | unsure |", "|---|---|---|---|---|"]
    for name, members in sorted(groups.items()):
        given = [r for r in members if r["outcome"] == "read" and not r["unsure"] and r["label"] != "refused"]
        lines.append(f"| {name} | {len(members)} | {_share(sum(not r['misses'] for r in members), len(members))} | "
                     f"{_share(sum(map(right, given)), len(given))} | {sum(bool(r['unsure']) for r in members)} |")
    return lines


def section(name: str, rows: list[dict], s: dict, absent: list[str]) -> str:
    lines = [SECTIONS[name], "",
             f"`python paper_repro/wild_logs.py --set {name}`, protocol `paper_repro/wild_logs/PROTOCOL.md` (fixed before the first "
             "run). Each log was labelled by eye before this package read it; the logs are other people's and are not "
             f"in this repository (manifest and labels in `paper_repro/wild_logs/`). Present: {s['present']} of "
             f"{s['labelled']} labelled logs, from {s['repos']} repositories" +
             (f"; absent: {len(absent)}" if absent else "") + ".", "",
             f"- read as expected: {_share(*s['read'])} (target >= {READ_TARGET:.0%}); tracebacks {s['tracebacks']} "
             f"(target 0); refused without a `refused` label {s['wrong_refusals']} (target 0); false non_finite "
             f"{s['false_non_finite']} (target 0)",
             f"- verdicts right where given: {_share(*s['right'])} (target >= {RIGHT_TARGET:.0%}); unsure on "
             f"{_share(*s['unsure'])} of the logs labelled with a mode (target <= {UNSURE_MAX:.0%}); the modes an "
             f"unsure answer names include the label (or one it allows) on {_share(*s['unsure_naming_label'])}",
             f"- right at confidence >= {CONFIDENT} with the Platt map refitted leaving the log's repository out: "
             f"{_share(*s['confident'])} (target >= {CONFIDENT_TARGET:.0%}); at the printed confidence: "
             f"{_share(*s['printed_confident'])}", "",
             *breakdown(rows, "format"), "", *breakdown(rows, "writer"), "", *breakdown(rows, "label"), "",
             "| file | writer | label (also ok) | diagnose | confidence | read | misses |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        label = r["label"] + (f" ({', '.join(r['also_ok'])})" if r["also_ok"] else "")
        said = ("unsure: " + " or ".join(r["unsure"])) if r["unsure"] else r["primary"]
        conf = "-" if r["confidence"] is None else f"{r['confidence']:.2f}"
        lines.append("| " + " | ".join(str(x).replace("|", "\\|") for x in (
            r["file"][:70], r["writer"], label, said, conf, "yes" if not r["misses"] else "**no**",
            "; ".join(r["misses"]) or "-")) + " |")
    return "\n".join(lines) + "\n"


HISTORY = LABELS / "runs.jsonl"  # one line per recorded run: the set, the code's commit, the date, the summary


def code_commit() -> str:
    """The last commit that changed the gspo_dynamics imported ("+" when its tree differs from it)."""
    import subprocess

    import gspo_dynamics

    where = Path(gspo_dynamics.__file__).resolve().parents[1]
    head = subprocess.run(["git", "-C", str(where), "log", "-1", "--format=%h", "--abbrev=10", "--", "gspo_dynamics"],
                          capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(where), "status", "--porcelain", "--", "gspo_dynamics"],
                           capture_output=True, text=True)
    return (head.stdout.strip() or "unknown") + ("+" if dirty.stdout.strip() else "")


def history(name: str, s: dict | None = None) -> list[dict]:
    """The recorded runs of set `name`, oldest first, with `s` (this run) appended to the file when given."""
    runs = [json.loads(line) for line in HISTORY.read_text().splitlines()] if HISTORY.is_file() else []
    if s is not None:
        run = {"set": name, "commit": code_commit(), "date": time.strftime("%Y-%m-%d"), **s}
        same = [i for i, r in enumerate(runs) if r["set"] == name and r["commit"] == run["commit"]]
        runs = [r for i, r in enumerate(runs) if i not in same] + [run]  # a run of the same code replaces its own
        HISTORY.write_text("".join(json.dumps(r) + "\n" for r in runs))
    return [r for r in runs if r["set"] == name]


def history_lines(runs: list[dict]) -> list[str]:
    lines = ["Every recorded run of this set (the first is the rules' first meeting with these logs):", "",
             "| date | code | read as expected | wrong refusals | false non_finite | right where given | unsure | "
             "right at >= 0.9 (held out) |", "|---|---|---|---|---|---|---|---|"]
    for r in runs:
        lines.append(f"| {r['date']} | {r['commit']} | {_share(*r['read'])} | {r['wrong_refusals']} | "
                     f"{r['false_non_finite']} | {_share(*r['right'])} | {_share(*r['unsure'])} | "
                     f"{_share(*r['confident'])} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", default="dev", choices=tuple(SECTIONS), help="which labelled set (default: dev)")
    parser.add_argument("--no-record", action="store_true", help="print only; leave RESULTS.md alone")
    parser.add_argument("--quick", action="store_true", help="as --no-record (the paper_repro harness's mode)")
    parser.add_argument("--logs", help=f"folder of the logs (default: ${ENV_VAR}, else ../wild_logs)")
    parser.add_argument("--only", help="score only the logs whose file name contains this")
    args = parser.parse_args()
    started = time.perf_counter()
    folder = logs_dir(args.logs)
    entries = [e for e in load_entries(FOLDERS[args.set]) if not args.only or args.only in e["file"]]
    rows, absent = [], []
    for entry in entries:
        path, why = locate(entry, folder)
        if path is None:
            absent.append(f"{entry['file']}: {why}")
            continue
        row = score(entry, path)
        row["label_non_finite"] = bool(entry.get("non_finite"))
        row["file_non_finite"] = file_has_non_finite(path, row["label_non_finite"])
        rows.append(row)
        said = ("unsure: " + "/".join(row["unsure"])) if row["unsure"] else row["primary"]
        print(f"{row['file'][:64]:64s} {row['label']:22s} {said:40s} {'ok' if not row['misses'] else row['misses']}")
    if not rows:  # an outside input absent here: said first, as the paper_repro harness reads a skip
        print(f"[SKIP] none of the {len(entries)} labelled logs is in {folder} (${ENV_VAR} names their folder)")
        return
    for line in absent:
        print("absent", line)
    s = summarise(rows, len(entries))
    print(json.dumps({k: v for k, v in s.items()}, default=str))
    by_label = Counter(r["label"] for r in rows)
    cmd = f"python paper_repro/wild_logs.py --set {args.set}"
    write = not args.no_record and not args.quick and not args.only
    record(Claim(f"wild-logs-read-{args.set}", f"{args.set}: real logs from repositories no reader was shaped on are read as labelled by eye"),
           predicted=f">= {READ_TARGET:.0%} read as expected, 0 tracebacks, refusals only without a reward-like "
                     "series, 0 false non_finite",
           measured=f"{s['present']} logs from {s['repos']} repositories: read as expected {_share(*s['read'])}; "
                    f"tracebacks {s['tracebacks']}; wrong refusals {s['wrong_refusals']}; false non_finite "
                    f"{s['false_non_finite']}", passed=s["read_pass"], quick=False, started=started, command=cmd,
           write=write)
    record(Claim(f"wild-logs-verdicts-{args.set}", f"{args.set}: on those logs diagnose's verdict is right, or it says it is unsure"),
           predicted=f"right >= {RIGHT_TARGET:.0%} where given; >= {CONFIDENT_TARGET:.0%} at confidence >= "
                     f"{CONFIDENT} (Platt map refitted leaving the repository out); unsure <= {UNSURE_MAX:.0%}",
           measured=f"right {_share(*s['right'])}; at >= {CONFIDENT} held out {_share(*s['confident'])} (printed "
                    f"{_share(*s['printed_confident'])}); unsure {_share(*s['unsure'])} (naming the label "
                    f"{_share(*s['unsure_naming_label'])}); labels "
                    + ", ".join(f"{k} {v}" for k, v in by_label.most_common()),
           passed=s["verdict_pass"], quick=False, started=started, command=cmd, write=write)
    if write:
        runs = history(args.set, {k: v for k, v in s.items() if not k.endswith("_pass")})
        replace_section(SECTIONS[args.set], section(args.set, rows, s, absent) + "\n" + "\n".join(history_lines(runs))
                        + "\n")


if __name__ == "__main__":
    main()
