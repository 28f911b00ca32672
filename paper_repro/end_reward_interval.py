"""Claim: the interval `predict --pilot` gives for the reward at a run's end covers it as often as it says,
on runs held out of its calibration (`predict._end_reward`: split conformal prediction, equations (2)-(4)).

Protocol (fixed before the coverage was read; the score (2) was chosen among four candidates, raw error and
error over the noise, over the noise plus the forecast's carry, over the carry alone, by the median width at
nominal coverage leave-one-round-out over these same runs, so that choice is in sample; every coverage below
is on runs held out of the quantile it uses):

  runs        every seed of every cell with T <= INTERVAL_MAX_REFRESH of the 82 grids of paper_repro/pilot_forecast.py
              (96 steps each; the seed curves shipped in paper_repro/data/pilot_forecast_cells.json.gz), stable or
              not: the interval is for a run as it goes, not for one known to stay stable.
  pilots      each run's own first n = 12, 24 or 48 steps (runs N / n = 8, 4, 2 times their pilot), fitted and read
              at the run's end by the library (`predict.end_reward`, equation (1)); the outcome is the run's mean
              reward over its last 16 steps.
  calibration the runs with a scale (2) above zero (`predict._end_reward.has_scale`; a pilot whose rewards do not move
              around its forecast gets no interval), split by the forecast's position (at a bound of [0, 1], inside):
              the quantile (3) at INTERVAL_LEVEL of each position's scores per ratio is what the library ships
              (`INTERVAL_QUANTILES`; this script says when they differ).
  coverage    leave one round out (the seven rounds of grids, each the combinations chosen together) and leave
              one task out (count, pattern, addition), per position: the quantile from the other rounds / tasks, the
              share of the held-out runs inside their interval, and the interval's median width clipped to [0, 1]
              (as `predict` prints it).
  baseline    the same forecast with a constant-width interval: the split-conformal quantile of the raw error
              |R_end - R_obs|, pooled over positions.
  target      coverage within 0.05 of INTERVAL_LEVEL on every round and every task held out, in each position
              (the guarantee's premise, exchangeability, is what a held-out task tests).

    python paper_repro/end_reward_interval.py --quick            # CI: 2 combinations' runs (n = 24, one seed) recomputed
                                                                 # and checked against the shipped scores, which it tabulates
    python paper_repro/end_reward_interval.py --workers 2        # full: 82 grids (~30 min on 2 cores)
    python paper_repro/end_reward_interval.py --from-scores paper_repro/data/end_reward_scores.json.gz   # re-tabulate
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from _pilot_dump import dumped_curves
from _results import Claim, device_name, record
from pilot_forecast import COMBINATIONS

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.fit import fit_trajectory
from gspo_dynamics.predict import (
    INTERVAL_LEVEL, INTERVAL_MAX_REFRESH, INTERVAL_QUANTILES, conformal_quantile, end_reward, end_position, has_scale,
)

CELLS = Path(__file__).with_name("data") / "pilot_forecast_cells.json.gz"
SCORES = Path(__file__).with_name("data") / "end_reward_scores.json.gz"
RUN_STEPS = 96
OUTCOME_STEPS = 16  # the outcome: a run's mean reward over its last 16 steps (= round(96 END_SHARE), equation (1)'s window)
PILOT_LENGTHS = (12, 24, 48)
ROUNDS = ("develop", "confirm-4", "confirm-5", "confirm-6", "confirm-7", "confirm-8", "confirm-9")
TASKS = ("count", "pattern", "addition")
TOLERANCE = 0.05  # a held-out coverage this close to the level meets the target
RANGE = (0.0, 1.0)  # every task's reward range
POSITIONS = ("bound", "inside")
QUICK = dict(combinations=("count-pg", "addition-grpo"), lengths=(24,), seeds=1)
QUICK_RUNS = 20  # its runs: 2 combinations x 10 cells with T <= 4 x one seed


def combination_runs(name: str, entry: dict, lengths, seeds: int | None) -> list[dict]:
    """One combination's runs (module docstring): per cell with T <= INTERVAL_MAX_REFRESH, seed and pilot length n, the
    forecast, its score's scale, the outcome and the score (2)."""
    task, role = COMBINATIONS[name][0], COMBINATIONS[name][4]
    out = []
    for (lr, T), curves in sorted(dumped_curves(entry).items()):
        if T > INTERVAL_MAX_REFRESH:
            continue
        reward = curves["reward"]
        for seed in range(reward.shape[0] if seeds is None else seeds):
            outcome = float(reward[seed, -OUTCOME_STEPS:].mean())
            for n in lengths:
                steps = np.arange(1, n + 1)
                try:
                    fit = fit_trajectory(steps, reward[seed, :n])
                except ConfigError:
                    continue
                end = end_reward(fit, steps, reward[seed, :n], RUN_STEPS, T, RANGE)
                out.append(dict(combination=name, role=role, task=task, lr=lr, T=T, seed=seed, ratio=RUN_STEPS // n,
                                value=end.value, scale=end.scale, outcome=outcome,
                                score=abs(end.value - outcome) / end.scale))
    return out


def compute(names, lengths, seeds, workers: int) -> list[dict]:
    """Every run's score, the combinations spread over `workers` processes."""
    entries = json.loads(gzip.open(CELLS).read())
    jobs = [(name, entries[name], lengths, seeds) for name in names]
    if workers <= 1:
        return [run for job in jobs for run in combination_runs(*job)]
    with ProcessPoolExecutor(workers) as pool:
        return [run for runs in pool.map(combination_runs, *zip(*jobs)) for run in runs]


def calibrated(runs: list[dict]) -> list[dict]:
    """The runs an interval is given for (a scale above zero, `predict._end_reward.has_scale`), each with its
    position (`end_position`) and, for the baseline, its raw error |R_end - R_obs|."""
    return [{**r, "position": end_position(r["value"], RANGE), "error": abs(r["value"] - r["outcome"])}
            for r in runs if has_scale(r["value"], r["scale"])]


def width(value: float, half: float) -> float:
    """The interval's width clipped to the reward's range, as `predict` prints it."""
    return min(value + half, RANGE[1]) - max(value - half, RANGE[0])


def held_out(runs: list[dict], key: str, groups, ratio: int, where: str | None) -> list[tuple[str, float, float, int]]:
    """(group, coverage, median clipped width, runs) per group held out of the calibration in turn, at one ratio:
    ours within one position (`where`), by its own quantile; the baseline (`where` None) pooled, on the raw
    error (a constant-width interval around the same forecast)."""
    at = [r for r in runs if r["ratio"] == ratio and (where is None or r["position"] == where)]
    field = "score" if where else "error"
    out = []
    for group in groups:
        test = [r for r in at if r[key] == group]
        rest = [r[field] for r in at if r[key] != group]
        if not test or not rest:
            continue
        q = conformal_quantile(rest, INTERVAL_LEVEL)
        half = lambda r: q * (r["scale"] if where else 1.0)  # noqa: E731
        out.append((group, float(np.mean([r[field] <= q for r in test])),
                    float(np.median([width(r["value"], half(r)) for r in test])), len(test)))
    return out


def reproduced_runs(fresh: list[dict], shipped: list[dict]) -> int:
    """How many recomputed runs have the shipped score (to 1e-9) under the same combination, cell, seed and ratio."""
    key = lambda r: (r["combination"], r["lr"], r["T"], r["seed"], r["ratio"])  # noqa: E731
    scores = {key(r): r["score"] for r in shipped}
    return sum(key(r) in scores and abs(scores[key(r)] - r["score"]) <= 1e-9 for r in fresh)


def table(rows) -> str:
    return "; ".join(f"{g} {c:.0%} (width {w:.3g}, {n} runs)" for g, c, w, n in rows)


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="the reduced CI-sized run")
    parser.add_argument("--workers", type=int, default=1, help="processes fitting the pilots")
    parser.add_argument("--from-scores", help="re-tabulate a --scores file, no fitting")
    parser.add_argument("--scores", default=None, help=f"where to write the runs' scores (full mode: {SCORES.name})")
    parser.add_argument("--no-record", action="store_true", help="print only; leave RESULTS.md alone")
    return parser.parse_args()


def main() -> None:
    args = arguments()
    started = time.perf_counter()
    fresh: list[dict] = []
    if args.from_scores or args.quick:
        dump = json.loads(gzip.open(args.from_scores or SCORES).read())
        runs = dump["runs"]
        started -= 0 if args.quick else dump["wall_s"]  # the row's wall time: the fits', measured when they were run
        if args.quick:
            fresh = compute(QUICK["combinations"], QUICK["lengths"], QUICK["seeds"], args.workers)
            reproduced = reproduced_runs(fresh, runs)
    else:
        runs = compute(tuple(COMBINATIONS), PILOT_LENGTHS, None, args.workers)
        with gzip.open(args.scores or SCORES, "wt") as f:
            json.dump({"level": INTERVAL_LEVEL, "run_steps": RUN_STEPS, "wall_s": time.perf_counter() - started, "runs": runs}, f)
    runs = calibrated(runs)
    ratios = sorted({r["ratio"] for r in runs})
    lines, ok = [], True
    for ratio in ratios:
        for where in POSITIONS:
            scores = [r["score"] for r in runs if r["ratio"] == ratio and r["position"] == where]
            q = conformal_quantile(scores, INTERVAL_LEVEL)
            shipped = INTERVAL_QUANTILES[where].get(ratio)
            by_round, by_task = held_out(runs, "role", ROUNDS, ratio, where), held_out(runs, "task", TASKS, ratio, where)
            ok &= all(abs(c - INTERVAL_LEVEL) <= TOLERANCE for _, c, _, _ in by_round + by_task)
            same = shipped is not None and round(q, 3) == shipped
            lines.append(f"ratio {ratio} (n = {RUN_STEPS // ratio}), forecast {where}: q = {q:.3f} from {len(scores)} runs "
                         + ("(as shipped)" if same else f"(the library ships {shipped}: update INTERVAL_QUANTILES)")
                         + f"; by round held out: {table(by_round)}; by task held out: {table(by_task)}")
        base_round, base_task = held_out(runs, "role", ROUNDS, ratio, None), held_out(runs, "task", TASKS, ratio, None)
        lines.append(f"ratio {ratio}, baseline (the same forecast, a constant width from its raw error, pooled): by round "
                     f"held out: {table(base_round)}; by task held out: {table(base_task)}")
    if args.quick:
        ok &= reproduced == len(fresh) == QUICK_RUNS
        lines.append(f"quick: the shipped scores; {reproduced} of {len(fresh)} runs recomputed equal the shipped scores")
    for line in lines:
        print(line)
    mode = "--quick" if args.quick else f"--from-scores {args.from_scores}" if args.from_scores else "--workers 2"
    record(Claim("end-reward-interval", f"the {INTERVAL_LEVEL:.0%} split-conformal interval of the reward at a run's end "
                 f"(`predict --pilot`, predict._end_reward) covers runs held out of its calibration {INTERVAL_LEVEL:.0%} of the "
                 f"time within {TOLERANCE}, on every round and every task held out, for forecasts at a bound and inside"),
           predicted=f"coverage {INTERVAL_LEVEL:.0%} (exchangeable runs: at least that, below it + 1/(m + 1))",
           measured=" — ".join(lines), passed=ok and len(ratios) > 0, quick=args.quick, started=started,
           command=f"python paper_repro/end_reward_interval.py {mode}", device=device_name(),
           write=not args.no_record)


if __name__ == "__main__":
    main()
