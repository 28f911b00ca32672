"""Issue 49, items 4 and 5: every number `predict` and `diagnose` print is one the data support, and every pilot the
CLI accepts gets an answer or one clear reason.

Over every log found (the shared real logs and runs, ../shared/data/real_logs and real_runs; the wild corpus's logs,
named in paper_repro/wild_logs/labels_*.json and heldout*/labels_*.json and looked for in $GSPO_DYNAMICS_WILD_LOGS,
else ../wild_logs; synthetic ramps, flat, short and step logs written here; absent logs are skipped and counted), it
runs, in process as a user would from the shell:

  diagnose LOG --json, diagnose LOG --explain
  predict --config C --pilot LOG --pilot-steps K (--json, --explain), K in 7, 8, 9 and 10% and 25% of the log's
  reward points, C a TRL GRPOConfig with the run's length (max_steps: the log's last step) and one without it

and counts, by the rules of tests/_sanity.py: absurd numbers (per rule), internal errors (an exception other than
the one-line ConfigError, or a refusal whose text is an internal check's: `INTERNAL`), and refusals. The rules read
every numeric field of the JSON (details, the fit's own parameters and every evidence item included) and the whole
--explain text (the fit line `r_inf = x +- s, tau = ...`, the evidence lines' `rise x`, `climb x`); the numeric JSON
fields no rule bounds (counts, ratios, statistics, rates, means of logged windows) are listed at the end (`unjudged`),
so a field that can carry an absurd number without a rule is seen.

    python benchmarks/absurd_numbers.py [--only SUBSTRING] [--show N] [--jobs 2]

Recorded (2026-12-02, 119 logs: 14 shared, 94 wild, 11 synthetic; 2190 calls):
  before (c9e89f4)  absurd numbers 939 in 93 logs (reward 265, stderr 208, rise 184, lr_multiple 99, non_finite 98,
                    step 85; 7 of the non_finite were prose, "is NaN or infinite", before the rule said so);
                    internal errors 608 in 101 logs (588 "the pilot steps (--pilot-steps) must be an integer >= 8, got
                    7", 20 "timescale tau must be positive, got -9.5e-18")
  after             absurd numbers 51 in 23 logs, every one `details.max_safe_lr` over 100x the pilot's lr (up to
                    3.9e299: the lr advice, predict/_pilot_headline.py's and _fall_chance.py's, not fixed here);
                    internal errors 0; refusals 604, each one line (588 "--pilot-steps 7 keeps too few reward
                    points: a forecast needs at least 8 (the pilot has N)")
  then (a4f6d8d)    absurd numbers 0; internal errors 0; refusals 604 (max_safe_lr null past 30x the pilot's lr,
                    with its reading in lr_note)
Recorded (2026-12-02, issue 49 item 4's audit: the rules now read the fit's own parameters, every evidence rise and
the --explain fit line; 106 logs found, 13 absent; 2104 calls; benchmarks/RESULTS.md "No absurd numbers"):
  first fix (84820f2+ea01e9f)  absurd numbers 11 in 11 logs (step 9: predict's stiffness note 'tau = 11.99 +- 49' on
                    8-20-point pilots; reward 2: fit.selection.exponential_params.r0 slightly below a success rate's 0)
  after (891dd96)   absurd numbers 0; internal errors 0; refusals 564 (552 short --pilot-steps, 6 a pilot reaching the
                    run's end: another engineer's uncommitted predict check in the working tree); 165 numeric JSON field
                    paths no rule bounds (listed by the run)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import sys
import tempfile
import traceback
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from _sanity import Context, check_json, check_text, unjudged  # noqa: E402

SHARED = ROOT.parent / "shared" / "data"
WILD = Path(os.environ.get("GSPO_DYNAMICS_WILD_LOGS", ROOT.parent / "wild_logs"))
LABELS = sorted((ROOT / "paper_repro" / "wild_logs").glob("labels_*.json")) + \
    sorted((ROOT / "paper_repro" / "wild_logs").glob("heldout*/labels_*.json"))
SHORT_PILOTS = (7, 8, 9)
SHARES = (0.10, 0.25)
LR = 1e-6
# a refusal that shows an internal check's words, not the user's input: a dataclass's or a closed form's validation
INTERNAL = re.compile(r"timescale tau|must be an integer >=|must be positive, got|must be finite, got|"
                      r"r_inf|Oscillator|Traceback|\bgot -?\d[\d.]*e-\d\d")


def shared_logs() -> tuple[list[Path], int]:
    found, absent = [], 0
    for folder in (SHARED / "real_logs", SHARED / "real_runs"):
        if folder.is_dir():
            found += [p for p in sorted(folder.iterdir()) if p.is_file() and p.name != "INDEX.md"]
        else:
            absent += 1
    names = [e["file"] for labels in LABELS for e in json.loads(labels.read_text())]
    absent += sum(not (WILD / n).is_file() for n in names)
    return found + [WILD / n for n in names if (WILD / n).is_file()], absent


def synthetic_logs(folder: Path) -> list[Path]:
    """Ramps, flat, short, a step (tau ~ 0) and a [0, 1] reward whose plateau no fit identifies, as JSONL."""
    rng = np.random.default_rng(0)
    curves = {
        "ramp_0.01_1.01": np.linspace(0.01, 1.01, 101),
        "ramp_0_1_noisy": np.clip(np.linspace(0.0, 1.0, 200) + rng.normal(0, 0.05, 200), 0, 1),
        "ramp_0_10": np.linspace(0.0, 10.0, 120) + rng.normal(0, 0.3, 120),
        "flat_exact": np.full(60, 0.5),
        "flat_noisy": 0.5 + rng.normal(0, 0.05, 60),
        "step_tau0": np.r_[0.1, np.full(59, 0.8)] + rng.normal(0, 1e-4, 60),
        "slow_unidentified": np.clip(0.2 + 0.0008 * np.arange(200) + rng.normal(0, 0.1, 200), 0, 1),
        "falling": np.clip(0.8 - 0.004 * np.arange(150) + rng.normal(0, 0.03, 150), 0, 1),
        **{f"short_{n}": np.linspace(0.2, 0.5, n) + rng.normal(0, 0.02, n) for n in SHORT_PILOTS},
    }
    paths = []
    for name, reward in curves.items():
        path = folder / f"synthetic_{name}.jsonl"
        path.write_text("".join(json.dumps({"step": i + 1, "reward": float(r)}) + "\n" for i, r in enumerate(reward)))
        paths.append(path)
    return paths


def _cli(argv: list[str]) -> tuple[int | str, str, str]:
    """(exit code, or 'internal' for an exception that escaped main; stdout; stderr or the traceback's last line)."""
    from gspo_dynamics.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), _quiet():
            code = main(argv)
    except Exception as exc:  # noqa: BLE001 - counting what escapes is the point
        return "internal", out.getvalue(), f"{type(exc).__name__}: {exc}".splitlines()[0] + \
            f" [{traceback.extract_tb(exc.__traceback__)[-1].name}]"
    return code, out.getvalue(), err.getvalue().strip()


@contextlib.contextmanager
def _quiet():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _configs(folder: Path, last_step: int) -> dict[str, Path]:
    with_len, without = folder / f"trl_{last_step}.json", folder / "trl_no_length.json"
    with_len.write_text(json.dumps({"learning_rate": LR, "num_generations": 8, "per_device_train_batch_size": 8,
                                    "max_steps": int(last_step)}))
    without.write_text(json.dumps({"learning_rate": LR, "num_generations": 8, "per_device_train_batch_size": 8}))
    return {"with_length": with_len, "no_length": without}


def one_log(path: Path, configs: tuple[str, ...] = ("with_length", "no_length")) -> dict:
    """Every call on one log: its findings (absurd numbers, internal errors, refusals); `configs` the pilots'
    configs (`_configs`) to run."""
    from gspo_dynamics.logs import read_log

    result = {"log": path.name, "calls": 0, "absurd": [], "internal": [], "refusals": [], "unjudged": set()}

    def judge(argv, ctx, what):
        for fmt in ("--json", "--explain"):
            code, out, err = _cli([*argv, fmt])
            result["calls"] += 1
            if code == "internal" or (code != 0 and (INTERNAL.search(err) or "\n" in err)):
                result["internal"].append(f"{what} {fmt}: {err}")
            elif code != 0:
                result["refusals"].append(f"{what}: {err}")
            elif ctx is not None:
                found = check_json(json.loads(out), ctx) if fmt == "--json" else check_text(out, ctx)
                if fmt == "--json":
                    result["unjudged"] |= {f"{argv[0]} {p}" for p in unjudged(json.loads(out), ctx)}
                result["absurd"] += [f"{what} {fmt}: {f}" for f in found]

    try:
        with _quiet():
            log = read_log(str(path))
        steps, reward = log.valid("reward")
    except Exception:  # noqa: BLE001 - diagnose says why below
        steps, reward = np.array([]), np.array([])
    ctx = Context.of(reward, steps[-1] if len(steps) else 1) if len(reward) else None
    judge(["diagnose", str(path)], ctx, "diagnose")
    if len(reward) < 2:
        return result
    with tempfile.TemporaryDirectory() as tmp:
        configs = {k: v for k, v in _configs(Path(tmp), int(steps[-1])).items() if k in configs}
        ks = sorted({*SHORT_PILOTS, *(int(round(s * len(reward))) for s in SHARES)})
        for k in ks:
            if k < 2 or k > len(reward):
                continue
            for name, config in configs.items():
                run_steps = int(steps[-1]) if name == "with_length" else None
                pctx = Context.of(reward[:k], steps[k - 1], run_steps=run_steps, lr=LR)
                judge(["predict", "--config", str(config), "--pilot", str(path), "--pilot-steps", str(k)], pctx,
                      f"predict k={k} {name}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="logs whose name holds this")
    parser.add_argument("--show", type=int, default=3, help="findings shown per log")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        logs, absent = shared_logs()
        logs += synthetic_logs(Path(tmp))
        if args.only:
            logs = [p for p in logs if args.only in p.name]
        with ProcessPoolExecutor(args.jobs) as pool:
            results = list(pool.map(one_log, logs))
    rules, calls = Counter(), 0
    for r in results:
        calls += r["calls"]
        for f in r["absurd"]:
            rules[f.split(": ", 1)[1].split()[0]] += 1
        if r["absurd"] or r["internal"]:
            print(f"{r['log'][:100]}: {len(r['absurd'])} absurd, {len(r['internal'])} internal")
            for f in (r["internal"] + r["absurd"])[:args.show]:
                print(f"    {f[:300]}")
    refusals = Counter(re.sub(r"-?\d[\d.e+-]*", "#", f.split(": ", 1)[1])[:140] for r in results for f in r["refusals"])
    print(f"\n{len(logs)} logs ({absent} absent, skipped), {calls} calls")
    print(f"absurd numbers: {sum(rules.values())} ({dict(rules)}) in {sum(bool(r['absurd']) for r in results)} logs")
    print(f"internal errors: {sum(len(r['internal']) for r in results)} in {sum(bool(r['internal']) for r in results)} logs")
    print(f"refusals: {sum(refusals.values())}, by message:")
    for message, n in refusals.most_common():
        print(f"  {n:4d}  {message}")
    free = sorted(set().union(*(r["unjudged"] for r in results)))
    print(f"numeric JSON fields no rule bounds (counts, ratios, statistics, rates, window means): {len(free)}")
    for line in free:
        print(f"  {line}")


if __name__ == "__main__":
    main()
