"""Claim (issue 49 item 3, second protocol): predict's stability verdict from a run's first 20% is right on real TRL
runs that fail, judged on seeds no rule was shaped on.

Why a second protocol. The first (paper_repro/trl_atlas.py, protocol 4735009; its 90 runs and FAIL stay as recorded)
had two faults found on its results: (i) its outcome rule took the start level r0 from the run's own first 2.5%, so
a run whose reward crashed from the warmed level to 0 on its first updates ("pinned at 0") read "never rose" and went
unscored, though it is the plainest failure there is; (ii) its held-out seeds 1-2 were then read while predict's rules
were changed, so they are no longer held out. This protocol was committed before any of its scored runs: every rule
of predict is frozen at the commit that records the held-out seeds' predictions, and those seeds (3, 4) were never
run before.

Runs: TRL's own GRPOTrainer (trl 1.16) through `trl_family.run` exactly as the first protocol (tiny Llama built in
code, supervised warm-up into success (0.2, 0.5), pattern task with its exact 0/1 reward, G = 8, N = 8 prompts per
step, beta 0, GRPO loss, constant lr, CPU, 400 optimizer steps, `trl_atlas.config`), over

  learning_rate         1e-4, 3e-4, 1e-3, 1.7e-3, 3e-3, 1e-2     (two decades; 1.7e-3 splits the first grid's step
                                                                   1e-3 -> 3e-3, where its runs began to fall)
  steps_per_generation  1, 2, 4, 8                               (T; T = 2 was cut from the first grid)
  epsilon               0.2 (clip on), 1e9 (clip off); at T = 1 the clip is not run twice: with one optimizer step
                        per rollout the ratio is exactly 1 and the two runs are the same run (the first grid's T = 1
                        pairs agree to the last digit); the T = 1 row counts once, in the clip-on cell
  seed                  0 (development: predict's rules may be shaped on it), 3 and 4 (held out)

42 runs per seed, 126 in all (~18 s each on one core).

Outcome of each run, on its logged reward points r_i at optimizer steps s_i (one point per rollout):

  r0    = r_1, the first logged point: the reward of the warmed policy's own first rollout, before any RL update
  end   = mean of r over steps s > (1 - WINDOW) x max_steps (the last 10%)
  peak  = the largest mean of r over any window of WINDOW x max_steps steps
  fell        a non-finite reward or loss, or a crash of the trainer; or end <= r0 - DROP (lost reward below its
              start, rise or not: this is what makes a crash to 0 on the first updates a fall); or
              peak - r0 >= RISE and peak - end >= FALL_SHARE x (peak - r0) (lost half of what it gained)
  held        peak - r0 >= RISE and not fell
  never rose  neither
  RISE = 0.15, DROP = 0.15, FALL_SHARE = 0.5, WINDOW = 0.1 (as the first protocol)

Prediction: as the first protocol (`trl_atlas.predict_run`: the Python API a user's `gspo-dynamics predict --config
config.json --pilot trainer_state.json --pilot-steps K` runs, K = max(8, the reward points at steps <= 20% of
max_steps)), at the code of the commit that records the held-out rows; kept: verdict, max_safe_lr.

Scores, on held-out seeds 3 and 4 (a never-rose run is listed, not scored):
  verdict right      (the issue's target, as the first protocol) a run that fell is not "safe"; one that held is "safe"
  decided            reported beside it, not a target: "at risk" is read as predict's hedge; right among the safe and
                     unsafe verdicts (safe on held, unsafe on fell), and the share of runs answered "at risk"
  by cell kind       the clip-off cells at T > 1 apart: predict calls every such config at risk before any pilot (the
                     issue's own rule, item 3), so a clip-off run that held counts as a miss of the first score
  baselines          always safe; "not safe iff clip off and T > 1"; "unsafe iff lr > X", X the midpoint of adjacent
                     grid lrs that scores best on seed 0
  stable lr          per (T, clip) cell, over all three seeds: the boundary is the geometric mean of the smallest grid
                     lr at which >= 2 of 3 seeds fell and the grid lr below it (censored where no lr, or the lowest,
                     falls); predict's value is the geometric median of the held-out seeds' max_safe_lr in the cell;
                     right within 2x of the boundary
  targets            >= 90% verdicts right on the held-out seeds; stable lr within 2x on >= 80% of measurable cells

Rows: data/trl_atlas/runs_v2.jsonl (committed; logs in --logs, default $TMPDIR/trl_atlas_v2, too big to commit).

    python paper_repro/trl_atlas_v2.py run --seeds 0          # runs a seed's grid, skipping rows already kept
    python paper_repro/trl_atlas_v2.py predict                # predict again on every kept log, at this code
    python paper_repro/trl_atlas_v2.py [score] [--no-record | --quick]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

import trl_atlas as v1  # noqa: E402  (the runs and predict's call are the first protocol's)

LRS = (1e-4, 3e-4, 1e-3, 1.7e-3, 3e-3, 1e-2)
REFRESH = (1, 2, 4, 8)
SEEDS, FIT_SEEDS, HELD_OUT = (0, 3, 4), (0,), (3, 4)
RISE, DROP, FALL_SHARE, WINDOW = v1.RISE, v1.DROP, v1.FALL_SHARE, v1.WINDOW
ROWS = Path(__file__).parent / "data" / "trl_atlas" / "runs_v2.jsonl"
VERDICT_TARGET, LR_TARGET, LR_FACTOR, FALL_QUORUM = v1.VERDICT_TARGET, v1.LR_TARGET, v1.LR_FACTOR, v1.FALL_QUORUM


def cells() -> list[tuple[int, str]]:
    """(T, clip) cells: clip on and off at T > 1, one cell at T = 1 (the clip does nothing there)."""
    return [(T, clip) for T in REFRESH for clip in (("on",) if T == 1 else ("on", "off"))]


def outcome(steps, rewards, max_steps: int = v1.MAX_STEPS, crashed: bool = False) -> tuple[str, dict]:
    """(fell / held / never rose, {r0, peak, end}) by this protocol's rule (module docstring): r0 is the first point."""
    s, r = np.asarray(steps, float), np.asarray(rewards, float)
    if crashed or len(r) == 0 or not np.all(np.isfinite(r)):
        return "fell", {"r0": None, "peak": None, "end": None}
    w = WINDOW * max_steps
    r0 = float(r[0])
    end = float(r[s > max_steps - w].mean()) if np.any(s > max_steps - w) else float(r[-1])
    peak = max(float(r[(s > a - w) & (s <= a)].mean()) for a in s if a >= w)  # windows ending at each logged step
    stats = {"r0": round(r0, 4), "peak": round(peak, 4), "end": round(end, 4)}
    gain = peak - r0
    if end <= r0 - DROP or (gain >= RISE and peak - end >= FALL_SHARE * gain):
        return "fell", stats
    return ("held" if gain >= RISE else "never rose"), stats


def run_grid(seeds, logs: Path, rows: Path = ROWS) -> None:
    """Every grid point of `seeds` not yet in `rows`, each row appended as it finishes (held-out seeds may be run
    into a file of their own, unread until predict's rules are frozen, then `predict` at the frozen commit)."""
    rows.parent.mkdir(parents=True, exist_ok=True)
    done = {(r["lr"], r["T"], r["clip"], r["seed"]) for r in load_rows(rows)}
    for seed in seeds:
        for T, clip in cells():
            for lr in LRS:
                if (lr, T, clip, seed) not in done:
                    v1.run_point(lr, T, clip, seed, logs, rows, outcome)


def load_rows(path: Path = ROWS) -> list[dict]:
    return v1.load_rows(path)


def decided(verdict: str, out: str) -> bool | None:
    """Right among decided verdicts: safe on held, unsafe on fell; None for "at risk" (a hedge) or never rose."""
    if out == "never rose" or verdict not in ("safe", "unsafe"):
        return None
    return verdict == ("safe" if out == "held" else "unsafe")


def _share(rows, mark) -> tuple[int, int]:
    marks = [m for m in (mark(r) for r in rows) if m is not None]
    return sum(marks), len(marks)


def lr_threshold(rows) -> float:
    """The midpoint X of adjacent grid lrs for 'unsafe iff lr > X' that scores best on `rows` (ties: the largest)."""
    return v1.lr_threshold(rows, LRS)


def held_out_scores(held: list[dict], fit_rows: list[dict], boundary_rows: list[dict], fit_label: str) -> dict:
    """The module docstring's scores of the `held` rows (their outcomes marked): verdicts right, by cell kind,
    decided, at risk, the ceiling of item 3's rule, against the baselines (the lr cut fitted on `fit_rows`, said
    "lr > X (`fit_label`)"); per (T, clip) cell the boundary measured on `boundary_rows` and predict's geometric-median
    max_safe_lr over the held rows, {(T, clip): (boundary or None, why, that lr or None, n given, n)}."""
    x = lr_threshold(fit_rows)
    rules = {"predict": lambda r: r["verdict"], "always safe": lambda r: "safe",
             "clip off and T > 1": lambda r: "unsafe" if r["clip"] == "off" and r["T"] > 1 else "safe",
             f"lr > {x:.2g} ({fit_label})": lambda r: "unsafe" if r["lr"] > x else "safe"}
    acc = {name: _share(held, lambda r, f=f: v1.right(f(r), r["outcome"])) for name, f in rules.items()}
    structural = [r for r in held if r["clip"] == "off" and r["T"] > 1]
    rest = [r for r in held if not (r["clip"] == "off" and r["T"] > 1)]
    by_kind = {"clip on or T = 1": _share(rest, lambda r: v1.right(r["verdict"], r["outcome"])),
               "clip off, T > 1": _share(structural, lambda r: v1.right(r["verdict"], r["outcome"]))}
    scored = [r for r in held if r["outcome"] != "never rose"]
    # item 3 calls a config without a clip at T > 1 at risk before any pilot, and TRL logs no drift there (its clip
    # fraction is 0 at epsilon 1e9), so every such run that held is a miss of the first score for any predictor
    # that keeps that rule: the most it can score
    bound = sum(not (r["clip"] == "off" and r["T"] > 1 and r["outcome"] == "held") for r in scored)
    cb = {}
    for T, clip in cells():
        ours = [r for r in held if r["T"] == T and r["clip"] == clip]
        cb[(T, clip)] = (*v1.boundary([r for r in boundary_rows if r["T"] == T and r["clip"] == clip], LRS),
                         *v1.geometric_median_lr(ours), len(ours))
    measurable = {k: v for k, v in cb.items() if v[0] is not None}
    within = {k: v for k, v in measurable.items() if v[2] is not None and max(v[2] / v[0], v[0] / v[2]) <= LR_FACTOR}
    return {"acc": acc, "by_kind": by_kind, "decided": _share(held, lambda r: decided(r["verdict"], r["outcome"])),
            "at_risk": (sum(r["verdict"] == "at risk" for r in scored), len(scored)), "ceiling": (bound, len(scored)),
            "cells": cb, "measurable": len(measurable), "within": len(within), "x": x}


def score(rows) -> dict:
    for r in rows:
        r["outcome"], r["stats"] = outcome(r["steps"], r["reward"], crashed=r["crashed"])
    fit = [r for r in rows if r["seed"] in FIT_SEEDS]
    s = held_out_scores([r for r in rows if r["seed"] in HELD_OUT], fit, rows, "fit on seed 0")
    return {**s, "dev": _share(fit, lambda r: v1.right(r["verdict"], r["outcome"]))}


def _frac(a: int, n: int) -> str:
    return f"{a}/{n}" + (f" ({a / n:.0%})" if n else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", nargs="?", default="score", choices=("run", "predict", "score"))
    parser.add_argument("--seeds", default=",".join(map(str, SEEDS)))
    parser.add_argument("--logs", default=str(Path(tempfile.gettempdir()) / "trl_atlas_v2"))
    parser.add_argument("--rows", default=str(ROWS), help="where `run` appends its rows")
    parser.add_argument("--no-record", action="store_true")
    parser.add_argument("--quick", action="store_true", help="score the kept rows, record nothing (the paper_repro harness)")
    args = parser.parse_args()
    if args.action == "run":
        run_grid([int(s) for s in args.seeds.split(",")], Path(args.logs), Path(args.rows))
        return
    if args.action == "predict":
        v1.repredict(Path(args.logs), ROWS)
        return
    started = time.perf_counter()
    rows = load_rows()
    if not rows:
        sys.exit(f"no rows in {ROWS}: run `python paper_repro/trl_atlas_v2.py run` first")
    s = score(rows)
    for r in rows:
        r["posthoc"] = r["outcome"]  # the first protocol's table reads it
    print("\n".join(v1.table(rows)))
    share = {k: _frac(*v) for k, v in s["acc"].items()}
    print("verdicts right on held-out seeds 3-4: " + "; ".join(f"{k} {v}" for k, v in share.items()))
    print("  predict by cell kind: " + "; ".join(f"{k} {_frac(*v)}" for k, v in s["by_kind"].items()))
    print(f"  decided (at risk as a hedge): right {_frac(*s['decided'])}; at risk on {_frac(*s['at_risk'])} scored runs")
    print(f"  the most any predictor that calls clip off at T > 1 at risk can score: {_frac(*s['ceiling'])}")
    print(f"  predict on the development seed 0: {_frac(*s['dev'])}")
    for (T, clip), (bound, why, pred, n_pred, n) in s["cells"].items():
        print(f"T {T} clip {clip}: boundary {why}; predict's max_safe_lr "
              + (f"{pred:.2g} ({n_pred}/{n} held-out runs give one)" if pred else f"withheld on all {n} held-out runs"))
    held_seeds = {r["seed"] for r in rows} & set(HELD_OUT)
    if not held_seeds:
        return
    from _results import Claim, record

    a, n = s["acc"]["predict"]
    passed = n > 0 and a / n >= VERDICT_TARGET and s["measurable"] > 0 and s["within"] / s["measurable"] >= LR_TARGET
    counts = ", ".join(f"{o} {sum(r['outcome'] == o for r in rows)}" for o in ("fell", "held", "never rose"))
    record(Claim("trl-atlas-v2", "on real TRL GRPOTrainer runs over lr x T x clip (second protocol, seeds never seen "
                                 "by a rule), predict's verdict from the first 20% is right where runs fail"),
           predicted=f">= {VERDICT_TARGET:.0%} verdicts right on held-out seeds 3-4 (fell: not safe; held: safe); "
                     f"max_safe_lr within {LR_FACTOR:g}x of the boundary on >= {LR_TARGET:.0%} of measurable cells",
           measured=f"{len(rows)} runs ({counts}); right on seeds 3-4: " + "; ".join(f"{k} {v}" for k, v in share.items())
                    + "; predict by kind: " + "; ".join(f"{k} {_frac(*v)}" for k, v in s["by_kind"].items())
                    + f"; decided {_frac(*s['decided'])}, at risk on {_frac(*s['at_risk'])}; the most a predictor "
                    f"keeping item 3's rule (clip off at T > 1 is at risk) can score {_frac(*s['ceiling'])}; stable lr within "
                    f"{LR_FACTOR:g}x on {s['within']}/{s['measurable']} measurable cells ({len(s['cells'])} cells)",
           passed=passed, quick=False, started=started, command="python paper_repro/trl_atlas_v2.py score",
           write=not (args.no_record or args.quick))


if __name__ == "__main__":
    main()
