"""Claim (issue 49 item 3): predict's stability verdict, from a run's first 20%, is right where real TRL runs fail.

An atlas of runs made by TRL's own GRPOTrainer (trl 1.16) through `trl_family.run` (tiny Llama built in code, a
supervised warm-up into success (0.2, 0.5), pattern task with its exact 0/1 reward, G = 8, N = 8 prompts per step,
beta 0, GRPO loss, constant lr, CPU). This docstring is the protocol; it was committed before the first scored run.

Grid (5 x 3 x 2 x 3 = 90 runs, each max_steps = 400 optimizer steps, one CPU thread, ~5-25 s each):

  learning_rate         1e-4, 3e-4, 1e-3, 3e-3, 1e-2          (two decades, ~3.16x apart)
  steps_per_generation  1, 4, 8                                (T, optimizer steps per rollout; num_iterations 1)
  epsilon               0.2 (clip on), 1e9 (clip off)          (1e9, not 10: log(1 + 10) = 2.4 nats is a band edge
                                                                predict reads as a clip; 1e9 is TRL's way to say none)
  seed                  0 (fits the lr baseline), 1, 2 (held out)

Cut from the issue's wish list to fit ~35 min of one core: T = 2 (T in {1, 4, 8} spans the range), more seeds, and
num_iterations > 1 (T is made by steps_per_generation alone).

Outcome of each run, by this rule on its logged reward points r_i at optimizer steps s_i (TRL logs the reward once
per rollout: 400 points at T = 1, 50 at T = 8). Windows are fractions of max_steps, so every T is judged alike:

  r0    = mean of r over steps s <= START x max_steps (the first 2.5%: the warmed start, before a fast rise)
  end   = mean of r over steps s >  (1 - WINDOW) x max_steps (the last 10%)
  peak  = the largest mean of r over any window of WINDOW x max_steps steps
  fell        a non-finite reward or loss, or a crash of the trainer; or end <= r0 - DROP (lost reward below its
              start, rise or not); or peak - r0 >= RISE and peak - end >= FALL_SHARE x (peak - r0)
              (lost half of what it gained)
  held        peak - r0 >= RISE and not fell
  never rose  neither (peak - r0 < RISE and end > r0 - DROP)
  RISE = 0.15, DROP = 0.15, FALL_SHARE = 0.5, WINDOW = 0.1, START = 0.025

Prediction, from the run's first PILOT_FRACTION = 20% of its steps: the Python API a user's CLI call runs,
`pilot_headline(pilot_forecast(read_run_config(config), trainer_state.json, pilot_steps=K))`, with config the run's
own GRPOConfig values (`config(...)`, also written as config.json beside the log: the same answer comes from
`gspo-dynamics predict --config config.json --pilot trainer_state.json --pilot-steps K`) and K = max(8, the number of
reward points at steps <= 0.2 x max_steps). Kept: the verdict (safe / at risk / unsafe; a refusal is kept as its
error and counts as not safe) and details.max_safe_lr (the largest stable lr at the run's T; null where withheld).

Scores (held-out seeds 1 and 2; runs that never rose are listed, not scored):
  verdict right   a run that fell is not "safe"; a run that held is "safe"
  baselines       always safe; "unsafe iff clip off and T > 1"; "unsafe iff lr > X" with X the grid midpoint
                  that scores best on seed 0
  stable lr       per (T, clip) cell, the measured boundary is the geometric mean of the smallest grid lr at which
                  at least 2 of 3 seeds fell and the grid lr below it (known to ~1.8x by the grid alone); censored
                  where no lr or the lowest lr falls. predict's value for the cell is the geometric median of its
                  runs' max_safe_lr; right when within 2x of the boundary.
  targets         >= 90% verdicts right on held-out seeds; stable lr within 2x on >= 80% of the measurable cells

Logs: trainer_state.json, label.json, run.json and config.json per run in a temporary folder (--logs, default
$TMPDIR/trl_atlas; a T = 1 log is ~350 KB, too big to commit); each run's row (its reward points rounded to 3
decimals, the prediction, the wall time) is appended to data/trl_atlas/runs.jsonl, which is committed.

    python paper_repro/trl_atlas.py run [--seeds 0,1,2] [--logs DIR]    # runs the grid, skipping rows already kept
    python paper_repro/trl_atlas.py predict [--logs DIR]                 # predict again on the kept logs, at this code
    python paper_repro/trl_atlas.py [score] [--no-record | --quick]      # scores runs.jsonl, records trl-atlas
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

LRS = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2)
REFRESH = (1, 4, 8)  # steps_per_generation
CLIPS = {"on": 0.2, "off": 1e9}  # TRL epsilon
SEEDS = (0, 1, 2)
FIT_SEEDS, HELD_OUT = (0,), (1, 2)
MAX_STEPS = 400
RISE, DROP, FALL_SHARE, WINDOW, START = 0.15, 0.15, 0.5, 0.1, 0.025
PILOT_FRACTION, MIN_PILOT_POINTS = 0.2, 8  # predict needs 8 reward points
VERDICT_TARGET, LR_TARGET, LR_FACTOR, FALL_QUORUM = 0.9, 0.8, 2.0, 2
ROWS = Path(__file__).parent / "data" / "trl_atlas" / "runs.jsonl"


def config(lr: float, T: int, clip: str, seed: int) -> dict:
    """The run's GRPOConfig values as a user's config file holds them (trl_family.DEFAULTS plus the grid point)."""
    import trl_family as tf

    return {**tf.DEFAULTS, "learning_rate": lr, "steps_per_generation": T, "epsilon": CLIPS[clip],
            "max_steps": MAX_STEPS, "per_device_train_batch_size": 64, "max_completion_length": 9, "seed": seed}


def outcome(steps, rewards, max_steps: int = MAX_STEPS, crashed: bool = False) -> tuple[str, dict]:
    """(fell / held / never rose, {r0, peak, end}) by the protocol's rule (module docstring)."""
    s, r = np.asarray(steps, float), np.asarray(rewards, float)
    if crashed or not np.all(np.isfinite(r)) or len(r) == 0:
        return "fell", {"r0": None, "peak": None, "end": None}
    w = WINDOW * max_steps
    r0 = float(r[s <= START * max_steps].mean()) if np.any(s <= START * max_steps) else float(r[0])
    end = float(r[s > max_steps - w].mean()) if np.any(s > max_steps - w) else float(r[-1])
    peak = max(float(r[(s > a - w) & (s <= a)].mean()) for a in s if a >= w)  # windows ending at each logged step
    stats = {"r0": round(r0, 4), "peak": round(peak, 4), "end": round(end, 4)}
    gain = peak - r0
    if end <= r0 - DROP or (gain >= RISE and peak - end >= FALL_SHARE * gain):
        return "fell", stats
    return ("held" if gain >= RISE else "never rose"), stats


def pilot_points(n_points: int, steps) -> int:
    return max(MIN_PILOT_POINTS, sum(1 for s in steps if s <= PILOT_FRACTION * MAX_STEPS))


def predict_run(cfg: dict, state: Path, k: int) -> dict:
    """predict's verdict and largest stable lr from the log's first k reward points."""
    from gspo_dynamics.predict import pilot_forecast, pilot_headline, read_run_config

    try:
        forecast = pilot_forecast(read_run_config(cfg), str(state), pilot_steps=k)
        head = pilot_headline(forecast)
        return {"verdict": head.verdict, "reason": head.reason, "max_safe_lr": forecast.max_safe_lr,
                "lr_note": forecast.lr_note, "pilot_points": k}
    except Exception as err:  # a refusal is a result (not safe), kept with its message
        return {"verdict": f"error: {type(err).__name__}: {err}"[:300], "reason": "", "max_safe_lr": None,
                "lr_note": "", "pilot_points": k}


def run_one(lr: float, T: int, clip: str, seed: int, logs: Path) -> dict:
    """Train one grid point with TRL (trl_family.run), then predict from its pilot; returns its row."""
    import trl_family as tf

    name = f"lr{lr:g}-T{T}-clip{clip}-{seed}"
    cfg = config(lr, T, clip, seed)
    grpo = {k: cfg[k] for k in ("learning_rate", "steps_per_generation", "epsilon", "max_steps")}
    run_dir = logs / name
    crashed, info = False, {}
    t0 = time.perf_counter()
    try:
        info = tf.run(tf.Recipe(mode="trl_atlas", grpo=grpo, note=f"atlas point {name}"), seed, run_dir)
    except Exception as err:  # a trainer crash is an outcome (fell), kept with its message
        crashed, info = True, {"error": f"{type(err).__name__}: {err}"[:300]}
    (run_dir / "config.json").write_text(json.dumps(cfg, indent=1) + "\n")
    state = run_dir / tf.STATE_NAME
    hist = json.loads(state.read_text())["log_history"] if state.exists() else []
    pts = [(h["step"], h["reward"]) for h in hist if "reward" in h]
    crashed = crashed or any(not math.isfinite(h.get("loss", 0.0)) for h in hist)
    steps = [p[0] for p in pts]
    pred = predict_run(cfg, state, pilot_points(len(pts), steps)) if pts and not crashed else \
        {"verdict": "error: no log", "reason": "", "max_safe_lr": None, "lr_note": "", "pilot_points": 0}
    return {"lr": lr, "T": T, "clip": clip, "seed": seed, "crashed": crashed, **info,
            "wall_s": round(time.perf_counter() - t0, 1), "steps": steps, "reward": [round(p[1], 3) for p in pts], **pred}


def run_grid(seeds, logs: Path) -> None:
    """Every grid point of `seeds` not yet in ROWS, seed by seed, each row appended as it finishes."""
    ROWS.parent.mkdir(parents=True, exist_ok=True)
    done = {(r["lr"], r["T"], r["clip"], r["seed"]) for r in load_rows()}
    for seed in seeds:
        for T in REFRESH:
            for clip in CLIPS:
                for lr in LRS:
                    if (lr, T, clip, seed) in done:
                        continue
                    run_point(lr, T, clip, seed, logs, ROWS, outcome)


def run_point(lr: float, T: int, clip: str, seed: int, logs: Path, rows: Path, outcome_of) -> None:
    """Train one grid point (`run_one`), append its row to `rows` and print its outcome by `outcome_of`."""
    row = run_one(lr, T, clip, seed, logs)
    with rows.open("a") as f:
        f.write(json.dumps(row) + "\n")
    print(f"lr {lr:g} T {T} clip {clip} seed {seed}: {outcome_of(row['steps'], row['reward'], crashed=row['crashed'])[0]}, "
          f"predict {row['verdict']} (max lr {row['max_safe_lr']}), {row['wall_s']:.0f} s", flush=True)


def repredict(logs: Path, path: Path = ROWS) -> None:
    """predict again on every kept row's pilot (its log in `logs`), at this code; rows whose log is gone are kept."""
    rows = load_rows(path)
    for r in rows:
        run_dir = logs / f"lr{r['lr']:g}-T{r['T']}-clip{r['clip']}-{r['seed']}"
        if (run_dir / "trainer_state.json").exists() and not r["crashed"]:
            cfg = json.loads((run_dir / "config.json").read_text())
            r.update(predict_run(cfg, run_dir / "trainer_state.json", pilot_points(len(r["steps"]), r["steps"])))
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def load_rows(path: Path = ROWS) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def right(verdict: str, out: str) -> bool | None:
    """Whether a verdict is right for an outcome (None: never rose, not scored)."""
    if out == "never rose":
        return None
    return (verdict != "safe") if out == "fell" else (verdict == "safe")


def _accuracy(rows, verdict_of) -> tuple[int, int]:
    marks = [right(verdict_of(r), r["outcome"]) for r in rows]
    marks = [m for m in marks if m is not None]
    return sum(marks), len(marks)


def lr_threshold(rows, lrs=LRS) -> float:
    """The grid midpoint X for 'unsafe iff lr > X' that scores best on `rows` (ties: the largest X)."""
    cuts = [math.sqrt(a * b) for a, b in zip(lrs, lrs[1:])] + [lrs[-1] * 2]
    return max(cuts, key=lambda x: (_accuracy(rows, lambda r: "unsafe" if r["lr"] > x else "safe")[0], x))


def cell_boundaries(rows) -> dict:
    """{(T, clip): (measured boundary or None, why, predict's geometric-median max_safe_lr or None)}."""
    out = {}
    for T in REFRESH:
        for clip in CLIPS:
            cell = [r for r in rows if r["T"] == T and r["clip"] == clip]
            bound, why = boundary(cell, LRS)
            pred, given = geometric_median_lr(cell)
            out[(T, clip)] = (bound, why, pred, given, len(cell))
    return out


def boundary(cell, lrs) -> tuple[float | None, str]:
    """(the cell's measured boundary or None, why): the geometric mean of the smallest lr at which FALL_QUORUM runs
    fell and the grid lr below it; None where no lr, or the lowest, falls."""
    falls = [lr for lr in lrs if sum(r["outcome"] == "fell" for r in cell if r["lr"] == lr) >= FALL_QUORUM]
    if not falls:
        return None, f"no lr fell (boundary > {lrs[-1]:g})"
    if falls[0] == lrs[0]:
        return None, f"the lowest lr fell (boundary < {lrs[0]:g})"
    i = lrs.index(falls[0])
    return math.sqrt(lrs[i - 1] * lrs[i]), f"between {lrs[i - 1]:g} and {lrs[i]:g}"


def geometric_median_lr(rows) -> tuple[float | None, int]:
    """(the geometric median of the rows' max_safe_lr where given, or None; how many give one)."""
    preds = [r["max_safe_lr"] for r in rows if r.get("max_safe_lr")]
    return (math.exp(statistics.median(math.log(p) for p in preds)) if preds else None), len(preds)


def posthoc_outcome(row: dict) -> str:
    """Not the protocol's rule (added after the first runs, reported apart): a run whose reward ends DROP below the
    warm-up's success rate (measured before TRL's first step) fell, also where it crashed inside the first START of
    its steps, which the protocol's r0 (its own first START) cannot see."""
    out = row["outcome"]
    if out == "never rose" and row.get("warmup_success") is not None and row["stats"]["end"] is not None \
            and row["stats"]["end"] <= row["warmup_success"] - DROP:
        return "fell"
    return out


def score(rows) -> dict:
    for r in rows:
        r["outcome"], r["stats"] = outcome(r["steps"], r["reward"], crashed=r["crashed"])
        r["posthoc"] = posthoc_outcome(r)
    fit = [r for r in rows if r["seed"] in FIT_SEEDS]
    held = [r for r in rows if r["seed"] in HELD_OUT]
    x = lr_threshold(fit)
    rules = {"predict": lambda r: r["verdict"], "always safe": lambda r: "safe",
             "clip off and T > 1": lambda r: "unsafe" if r["clip"] == "off" and r["T"] > 1 else "safe",
             f"lr > {x:.2g} (fit on seed 0)": lambda r: "unsafe" if r["lr"] > x else "safe"}
    acc = {name: _accuracy(held, rule) for name, rule in rules.items()}
    cells = cell_boundaries(rows)
    measurable = {k: v for k, v in cells.items() if v[0] is not None}
    within = {k: v for k, v in measurable.items() if v[2] is not None and max(v[2] / v[0], v[0] / v[2]) <= LR_FACTOR}
    posthoc = [{**r, "outcome": r["posthoc"]} for r in held]
    acc_posthoc = {name: _accuracy(posthoc, rule) for name, rule in rules.items()}
    return {"acc": acc, "acc_posthoc": acc_posthoc, "acc_all_seeds": _accuracy(rows, rules["predict"]), "cells": cells,
            "measurable": len(measurable), "within": len(within), "x": x}


def table(rows) -> list[str]:
    lines = ["| lr | T | clip | seed | outcome (r0 / peak / end) | predict | max_safe_lr | wall s |", "|---|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["T"], r["clip"], r["lr"], r["seed"])):
        st = r["stats"]
        stats = f"{st['r0']:.2f} / {st['peak']:.2f} / {st['end']:.2f}" if st["r0"] is not None else "crash"
        lr = f"{r['max_safe_lr']:.2g}" if r.get("max_safe_lr") else "-"
        out = r["outcome"] + (f" [post-hoc: {r['posthoc']}]" if r["posthoc"] != r["outcome"] else "")
        lines.append(f"| {r['lr']:g} | {r['T']} | {r['clip']} | {r['seed']} | {out} ({stats}) | "
                     f"{r['verdict'][:60]} | {lr} | {r['wall_s']:.0f} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", nargs="?", default="score", choices=("run", "predict", "score"))
    parser.add_argument("--seeds", default=",".join(map(str, SEEDS)))
    parser.add_argument("--logs", default=str(Path(tempfile.gettempdir()) / "trl_atlas"))
    parser.add_argument("--no-record", action="store_true")
    parser.add_argument("--quick", action="store_true", help="score the kept rows, record nothing (the paper_repro harness)")
    args = parser.parse_args()
    if args.action == "run":
        run_grid([int(s) for s in args.seeds.split(",")], Path(args.logs))
        return
    if args.action == "predict":
        repredict(Path(args.logs))
        return
    started = time.perf_counter()
    rows = load_rows()
    s = score(rows)
    print("\n".join(table(rows)))
    share = {k: f"{a}/{n}" + (f" ({a / n:.0%})" if n else "") for k, (a, n) in s["acc"].items()}
    print("verdicts right on held-out seeds: " + "; ".join(f"{k} {v}" for k, v in share.items()))
    print("  by the post-hoc rule (an early crash below the warm-up's success fell): "
          + "; ".join(f"{k} {a}/{n}" for k, (a, n) in s["acc_posthoc"].items()))
    a_all, n_all = s["acc_all_seeds"]
    print(f"  predict on all seeds: {a_all}/{n_all}")
    for (T, clip), (bound, why, pred, n_pred, n) in s["cells"].items():
        print(f"T {T} clip {clip}: boundary {why}; predict's max_safe_lr "
              + (f"{pred:.2g} ({n_pred}/{n} runs give one)" if pred else f"withheld on all {n} runs"))
    from _results import Claim, record

    a, n = s["acc"]["predict"]
    passed = n > 0 and a / n >= VERDICT_TARGET and s["measurable"] > 0 and s["within"] / s["measurable"] >= LR_TARGET
    walls = [r["wall_s"] for r in rows]
    ph, withheld = s["acc_posthoc"], sum(not r.get("max_safe_lr") for r in rows)
    counts = ", ".join(f"{o} {sum(r['outcome'] == o for r in rows)}" for o in ("fell", "held", "never rose"))
    record(Claim("trl-atlas", "on real TRL GRPOTrainer runs over lr x T x clip, predict's verdict from the first 20% "
                              "is right where runs fail, and its largest stable lr is near the measured boundary"),
           predicted=f">= {VERDICT_TARGET:.0%} verdicts right on held-out seeds (fell: not safe; held: safe); "
                     f"max_safe_lr within {LR_FACTOR:g}x of the boundary on >= {LR_TARGET:.0%} of measurable (T, clip) cells",
           measured=f"{len(rows)} runs ({counts}); right on seeds 1-2: " + "; ".join(f"{k} {v}" for k, v in share.items())
                    + f"; stable lr within {LR_FACTOR:g}x on {s['within']}/{s['measurable']} measurable cells "
                    f"({len(s['cells'])} cells; predict withholds max_safe_lr on {withheld}/{len(rows)} runs); post-hoc "
                    f"(not the protocol: a crash below the warm-up's success inside the first 2.5% fell): predict "
                    f"{ph['predict'][0]}/{ph['predict'][1]}, always safe {ph['always safe'][0]}/{ph['always safe'][1]}; "
                    f"median run {statistics.median(walls):.0f} s",
           passed=passed, quick=False, started=started, command="python paper_repro/trl_atlas.py score",
           write=not (args.no_record or args.quick))


if __name__ == "__main__":
    main()
