"""Claim (issue 49 item 3, last part): predict's stability verdict from a pilot is right on public runs that collapse.

The TRL atlas (trl_atlas_v2.py) judges predict on runs we made; this script adds public runs other people trained and
checked into GitHub, some of which collapsed, beside runs of the same repositories (and, where they exist, the same
config) that held. This docstring is the protocol; it and the manifest were committed before the scored predict calls
(four format checks ran predict earlier, before the labels were written: haxiaww llama_med_grpo/v3 "safe", Sunshine535
exp1a/rho0.30_seed43 "unsafe", Hor1zon-thu output.log "safe", and jianghoucheng i80f2v90 with its full Hydra dump,
refused; no label was changed after them).

Corpus. data/public_collapse/manifest.json, one entry per run: repo, the 40-hex commit and path of the log, its sha256
and bytes, the reward points counted by eye (an independent parser, not gspo_dynamics), the config's repository path
(and commit where it differs from the log's) with the values read from it, T and the clip as the config sets them,
the label and the step of the fall. How they were found: the labelled wild logs (paper_repro/wild_logs, two
labelled dynamical_instability) and the shared real runs pointed at repositories with many runs of one recipe;
every log of those repositories' snapshots was screened for a rise then a fall (a drop by at least half the gain) and
read by eye; code/issue search for checked-in collapsed runs found post-mortems without logs. Kept: runs whose config
is in the same repository and whose log format predict reads. The logs are third-party data and never enter the
repository: they live in $GSPO_DYNAMICS_PUBLIC_LOGS, else ../public_collapse beside the repository root, under
logs/<file> (`git show COMMIT:PATH`); an entry whose file is absent or whose sha256 differs is skipped and counted.

Labels, by eye from the full reward curve, before any predict call:
  fell        the reward collapsed: after reaching its level (a rise, or the level it started at) it dropped by at
              least half of its gain (or of its level, for a run that started at its plateau) and stayed down for at
              least 3 logged points; or it crashed to the reward's floor; or it declined from its start and never came
              back. Whether it later recovered is said in the reason; it stays "fell". fall_step: the first logged step
              of the drop. strength "weak" where the drop is within a few noise standard deviations (scored apart).
  held        no such drop: rose and kept it, or kept the level it started at (dips that recover within 3 points are
              noise); a run that stays flat at a low level without any rise would be "never rose" (listed, not scored)
Pilot: the first K = max(8, floor(0.2 n)) of the run's n reward points (short runs of 40 points are allowed: this is
the collapse check only, no end-reward claim). fall_in_pilot: the fall happened at or before the pilot's last step,
so the pilot holds the fall (a detection, not a forecast); those runs are scored and also reported apart.

Prediction: once per run, the CLI at the code as committed,
    gspo-dynamics predict --config CFG --pilot LOG --pilot-steps K [extra] --json
with CFG written from the manifest's values into $LOGS/configs/ (never into the repository: TRL keys as JSON, verl's
nested keys as YAML) and extra the manifest's (--devices for an 8-GPU TRL run; --run-steps, the last logged step, for
verl runs whose config sets epochs, not steps). Kept in data/public_collapse/rows.jsonl: verdict, reason, the first
change, details.max_safe_lr and lr_note, the exit status and, for a refusal, its message (a refusal counts as not safe,
as in the atlas).

Scores (every labelled run scored, never-rose runs listed):
  verdict right   a run that fell is right when predict's verdict is not "safe"; one that held is right when "safe"
  baselines       always safe; the issue's rule "not safe iff no clip and T > 1" (T and the clip from the config)
  reported apart  per repository; falls after the pilot only (forecasts) and inside it; clear labels only
  cross-check     the atlas's outcome rule (trl_atlas_v2.outcome, r0 the first point, max_steps the last logged step)
                  on the reward series predict's reader reads: its outcome beside the eye's label, disagreements listed
  target          (the atlas's) >= 90% of verdicts right, and more than always safe; a miss stays in the table

    python paper_repro/public_collapse.py predict       # predict on every present log, writes rows.jsonl
    python paper_repro/public_collapse.py [score] [--no-record | --quick]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

DATA = Path(__file__).parent / "data" / "public_collapse"
MANIFEST, ROWS = DATA / "manifest.json", DATA / "rows.jsonl"
LABELS = ("fell", "held", "never rose")
VERDICT_TARGET = 0.9  # the atlas's target (trl_atlas.VERDICT_TARGET)
PREDICT_TIMEOUT_S = 600


def logs_root() -> Path:
    """$GSPO_DYNAMICS_PUBLIC_LOGS, else ../public_collapse beside the repository root."""
    env = os.environ.get("GSPO_DYNAMICS_PUBLIC_LOGS")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "public_collapse"


def load_manifest(path: Path = MANIFEST) -> list[dict]:
    return json.loads(path.read_text())["runs"]


def present(run: dict, root: Path) -> Path | None:
    """The run's log under root/logs when it is there with the manifest's sha256, else None."""
    path = root / "logs" / run["file"]
    if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != run["sha256"]:
        return None
    return path


def pilot_points(n: int) -> int:
    """K = max(8, floor(0.2 n)): the first 20% of the reward points, at least 8."""
    return max(8, math.floor(0.2 * n))


def write_config(run: dict, root: Path) -> Path:
    """The run's config file, written from the manifest's values into root/configs (never into the repository)."""
    cfg = run["config"]
    name = run["id"].replace(":", "__").replace("/", "__")
    out = root / "configs" / "written"
    out.mkdir(parents=True, exist_ok=True)
    if cfg["framework"] == "verl":
        import yaml

        path = out / f"{name}.yaml"
        path.write_text(yaml.safe_dump(cfg["values"], sort_keys=False))
    else:
        path = out / f"{name}.json"
        path.write_text(json.dumps(cfg["values"], indent=1) + "\n")
    return path


def _cli() -> str:
    exe = Path(sys.executable).with_name("gspo-dynamics")
    return str(exe) if exe.exists() else (shutil.which("gspo-dynamics") or "gspo-dynamics")


def predict_one(run: dict, log: Path, root: Path) -> dict:
    """One CLI call; its verdict, reason, first change, max_safe_lr and lr_note (a refusal: its message)."""
    cfg = write_config(run, root)
    cmd = [_cli(), "predict", "--config", str(cfg), "--pilot", str(log), "--pilot-steps", str(run["pilot_points"]),
           *run["extra_args"], "--json"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=PREDICT_TIMEOUT_S)
    row = {"id": run["id"], "rc": proc.returncode, "wall_s": round(time.perf_counter() - t0, 1),
           "command": "gspo-dynamics " + " ".join(c if c != str(log) else f"$LOGS/logs/{run['file']}"
                                                   for c in cmd[1:]).replace(str(root), "$LOGS")}
    try:
        out = json.loads(proc.stdout)
    except json.JSONDecodeError:
        msg = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {**row, "verdict": f"error: {msg}"[:400], "reason": "", "change": None, "max_safe_lr": None, "lr_note": ""}
    changes = out.get("changes") or []
    details = out.get("details") or {}
    return {**row, "verdict": out["verdict"], "reason": out.get("reason", ""),
            "change": changes[0] if changes else None, "max_safe_lr": details.get("max_safe_lr"),
            "lr_note": details.get("lr_note") or ""}


def run_predict(root: Path) -> None:
    rows, skipped = [], []
    for run in load_manifest():
        log = present(run, root)
        if log is None:
            skipped.append(run["id"])
            continue
        row = predict_one(run, log, root)
        rows.append(row)
        print(f"{run['id']}: {run['label']}, predict {row['verdict'][:80]} ({row['wall_s']} s)", flush=True)
    DATA.mkdir(parents=True, exist_ok=True)
    ROWS.write_text("".join(json.dumps(r) + "\n" for r in rows))
    print(f"wrote {len(rows)} rows to {ROWS}; {len(skipped)} absent or altered: {', '.join(skipped) or 'none'}")


def load_rows(path: Path = ROWS) -> dict[str, dict]:
    return {r["id"]: r for r in map(json.loads, path.read_text().splitlines())} if path.exists() else {}


def right(verdict: str, label: str) -> bool | None:
    """A fell run is right when the verdict is not safe (a refusal included); a held run when it is safe."""
    if label not in ("fell", "held"):
        return None
    return (verdict != "safe") if label == "fell" else (verdict == "safe")


def issue_rule(run: dict) -> str:
    """The issue's structural rule: not safe iff no clip and T > 1."""
    return "at risk" if run["clip"] == "off" and run["T"] > 1 else "safe"


def share(runs: list[dict], verdict_of) -> tuple[int, int]:
    marks = [m for m in (right(verdict_of(r), r["label"]) for r in runs) if m is not None]
    return sum(marks), len(marks)


def frac(a: int, n: int) -> str:
    return f"{a}/{n}" + (f" ({a / n:.0%})" if n else "")


def rule_outcome(log: Path) -> tuple[str | None, int]:
    """The atlas v2 outcome rule on the reward series predict's reader reads (max_steps the last logged step), and
    how many reward points that reader finds."""
    from gspo_dynamics.logs import read_log

    import trl_atlas_v2 as v2

    try:
        steps, reward = read_log(str(log)).valid("reward")
    except Exception:  # an unread log has no rule outcome; the eye's label stands
        return None, 0
    if len(steps) == 0:
        return None, 0
    return v2.outcome(steps, reward, max_steps=int(steps[-1]))[0], len(steps)


def score(runs: list[dict], rows: dict[str, dict]) -> dict:
    scored = [{**r, "verdict": rows[r["id"]]["verdict"]} for r in runs if r["id"] in rows]
    rules = {"predict": lambda r: r["verdict"], "always safe": lambda r: "safe",
             "not safe iff no clip and T > 1": issue_rule}
    acc = {name: share(scored, f) for name, f in rules.items()}
    groups = {
        "fell": [r for r in scored if r["label"] == "fell"],
        "held": [r for r in scored if r["label"] == "held"],
        "fell after the pilot (forecasts)": [r for r in scored if r["label"] == "fell" and not r["fall_in_pilot"]],
        "fell inside the pilot": [r for r in scored if r["label"] == "fell" and r["fall_in_pilot"]],
        "clear labels": [r for r in scored if r["strength"] == "clear"],
    }
    by_group = {k: share(v, rules["predict"]) for k, v in groups.items()}
    by_repo = {repo: {name: share([r for r in scored if r["repo"] == repo], f) for name, f in rules.items()}
               for repo in dict.fromkeys(r["repo"] for r in scored)}
    a, n = acc["predict"]
    passed = n > 0 and a / n >= VERDICT_TARGET and a > acc["always safe"][0]
    return {"acc": acc, "by_group": by_group, "by_repo": by_repo, "n": len(scored), "passed": passed, "scored": scored}


def table(scored: list[dict], rows: dict[str, dict], checks: dict[str, tuple]) -> list[str]:
    lines = ["| run | T | clip | label (fall step; pilot to step) | atlas rule | predict | max_safe_lr | right |",
             "|---|---|---|---|---|---|---|---|"]
    for r in scored:
        row = rows[r["id"]]
        fall = f"{r['label']}" + (f" at {r['fall_step']}" if r["fall_step"] is not None else "") \
            + ("" if r["strength"] == "clear" else ", weak") + f"; K {r['pilot_points']} to {r['pilot_last_step']}"
        rule, n_read = checks.get(r["id"], (None, 0))
        rule_txt = "-" if rule is None else rule + ("" if n_read == r["reward_points"] else f" ({n_read} pts read)")
        lr = f"{row['max_safe_lr']:.2g}" if row.get("max_safe_lr") else "-"
        ok = right(row["verdict"], r["label"])
        lines.append(f"| {r['id']} | {r['T']} | {r['clip']} | {fall} | {rule_txt} | {row['verdict'][:70]} | {lr} | "
                     f"{'-' if ok is None else 'yes' if ok else 'MISS'} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", nargs="?", default="score", choices=("predict", "score"))
    parser.add_argument("--no-record", action="store_true")
    parser.add_argument("--quick", action="store_true",
                        help="score the kept rows without the logs (no rule cross-check), record nothing (the paper_repro harness)")
    args = parser.parse_args()
    root = logs_root()
    if args.action == "predict":
        run_predict(root)
        return
    started = time.perf_counter()
    runs, rows = load_manifest(), load_rows()
    if not rows:
        sys.exit(f"no rows in {ROWS}: run `python paper_repro/public_collapse.py predict` first")
    s = score(runs, rows)
    checks = {}
    if not args.quick:
        checks = {r["id"]: rule_outcome(log) for r in s["scored"] if (log := present(r, root)) is not None}
    print("\n".join(table(s["scored"], rows, checks)))
    acc = "; ".join(f"{k} {frac(*v)}" for k, v in s["acc"].items())
    groups = "; ".join(f"{k} {frac(*v)}" for k, v in s["by_group"].items())
    repos = "; ".join(f"{repo}: predict {frac(*v['predict'])}, always safe {frac(*v['always safe'])}"
                      for repo, v in s["by_repo"].items())
    disagree = [f"{i} (eye {next(r['label'] for r in runs if r['id'] == i)}, rule {c[0]})" for i, c in checks.items()
                if c[0] is not None and c[0] != next(r["label"] for r in runs if r["id"] == i)]
    counts = ", ".join(f"{lab} {sum(r['label'] == lab for r in s['scored'])}" for lab in LABELS)
    print(f"verdicts right on {s['n']} public runs ({counts}; {len(s['by_repo'])} repositories): {acc}")
    print(f"  predict by group: {groups}")
    print(f"  by repository: {repos}")
    if checks:
        print(f"  the atlas rule disagrees with the eye on {len(disagree)}/{len(checks)}: {', '.join(disagree) or 'none'}")
    from _results import Claim, record

    record(Claim("public-collapse", "on public GRPO runs that collapsed and runs of the same repositories that held, "
                                    "predict's verdict from the first 20% of the reward points is right"),
           predicted=f">= {VERDICT_TARGET:.0%} verdicts right (fell: not safe; held: safe) and more than always safe",
           measured=f"{s['n']} runs ({counts}) from {len(s['by_repo'])} repositories; right: {acc}; predict by group: "
                    f"{groups}; by repository: {repos}"
                    + (f"; the atlas rule disagrees with the eye's label on {len(disagree)}/{len(checks)}" if checks else ""),
           passed=s["passed"], quick=args.quick, started=started, command="python paper_repro/public_collapse.py score",
           write=not (args.no_record or args.quick))


if __name__ == "__main__":
    main()
