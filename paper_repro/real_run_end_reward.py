"""Claim: on finished real runs of repositories never seen in its fitting, predict's end-reward forecast from a pilot
is never worse than the naive reading (the held level), beats the published laws and a parametric curve ensemble from
25% pilots, and its 90% interval covers 85-95% of runs with the best interval score.

Protocol 4 (fixed on 2026-12-02, committed before its first evaluation; a miss stays in the table as FAIL).
Protocols 2 (scored at bc931d9) and 3 (at 93ab436) both FAIL T2: from 10% pilots, 67 of 70 in the "far" horizon
bin, ours' median scaled error 1.02 / 1.048 against the held level's 0.939: the far bin's weights help on the
repositories they were learned on and not on those left out. Their rows stay as recorded (-2-*, -3-*), protocol 3's
per-run table in real_run_end_reward_v3.md. What changes from protocol 2, and only this: a gate per horizon bin b on
protocol 2's weights (the linear program of (4), `learn_weights`; not protocol 3's). In the fold that leaves out
repository X, over the training rows i of bin b (repo r_i != X, both shares), with R_i^(-X,-r_i) protocol 2's nested
forecast of row i (weights learned without X and r_i: the forecasts whose scores the band already uses) and H_i its
held level:

    G_b = 1  if  median_i |y_i - R_i^(-X,-r_i)| / sigma_i  <  median_i |y_i - H_i| / sigma_i,  else G_b = 0
    R = H + G_b w_b^(-X) . x    (w_b^(-X) protocol 2's weights of bin b learned without X; x the features of (4))

so a bin keeps its learned weights only where, left out by repository inside the training repositories, they beat
the held level on the targets' own statistic (the median scaled error); a tie keeps the held level. Where G_b = 0
the forecast is the held level and its band is (5) on the held level's scores s_i = |y_i - H_i| / u_i of the
training rows (the same scale u, groups and pooling); where G_b = 1 the band is protocol 2's (the nested scores).
Nothing in the gate is tuned (no margin, threshold or cap); nothing is chosen from protocol 4's results. Everything
else (runs, pilots, horizon, truth, noise, readings, information, bins, the weights' objective, bands and their
scale, the nested leave-one-repository-out, baselines, scores, targets T1-T4) is protocol 2's, as below. The same
run also scores protocol 2's ungated forecast (G_b = 1 everywhere; deterministic, so protocol 2's numbers) for the
shipping rule; it is printed, not recorded again. Rows: real-run-end-reward-4-error (T1, T2) and
real-run-end-reward-4-interval (T3, T4); per-run numbers: paper_repro/real_run_end_reward.md. Shipping (fixed
here, before the run): predict._end_blend ships the gate (a per-bin constant G_b, `--ship`'s: on every run, the
gate above with each run's forecast from weights learned without its own repository, and the band quantiles of a
closed bin from the held level's scores) only if protocol 4 passes every target protocol 2 passed (T3, T4) and its
median scaled error at neither pilot share is above protocol 2's (recorded: 1.02 at 10%, 0.67 at 25%); else
protocol 2's constants stay shipped (G_b = 1).

Protocol 3 (fixed on 2026-12-02, committed before its first evaluation; a miss stays in the table as FAIL). Protocol 2
(986fec1, described below) was scored at bc931d9: its rows real-run-end-reward-2-error / -interval stay in
paper_repro/RESULTS.md as recorded and its per-run table in real_run_end_reward_v2.md (protocol 1's: _v1.md). What
changes from protocol 2, and only this: the objective of the weights (4). Why: (4) of protocol 2 minimises the SUM of
the scaled absolute errors, which a few runs missed by 15-38 noise units dominate, while the targets read the MEDIAN;
its weights moved the typical run to gain on those few (10% pilots: 1.02 against the held level's 0.94). Protocol 3
learns (a_b, c_b) per horizon bin b, on the same training rows (both shares), as the minimum of a bounded loss, the
capped absolute error of the scaled error: protocol 2's absolute error where a run is within cap_b noise units,
a fixed cost cap_b where it is missed by more, so a run missed by 38 noise units weighs no more than one missed by
cap_b:

    (a_b, c_b) = argmin_{w in W} sum_i min(|e_i|, cap_b),   e_i = (y_i - R_i) / sigma_i,
    W = {w = (a, c) in R^8: w >= 0, sum w <= 1}  (protocol 2's constraints: R between H and the readings)
    cap_b = 3 s_b,   s_b = 1.4826 median_i |t_i|,   t_i = (y_i - H_i) / sigma_i

3 s is the three-sigma rejection point of the Hampel identifier (Davies & Gather 1993, JASA 88; Pearson 2002, IEEE
TCST 10), s the normal-consistent median absolute value of the residuals of the preliminary fit, here the zero
weights (the held level): the held level's scaled errors over the training rows of bin b (of the fold: never a
held-out row). Nothing in the cap is chosen from protocol 3's results. The absolute centre is kept because the
targets read a median, an L1 quantity (a Cauchy loss, first written here at 1bba1c3 and replaced before any run,
is quadratic in its centre: on synthetic sets it gave up a reading that was right on 40 runs to spare 4 runs it
missed by 40 noise units). The loss is not convex, so it is minimised by a stated global method: every point of W
whose coordinates are multiples of 1/8 (12,870 points, w = 0 among them); from each of the 4 with the least loss,
concentration steps (Rousseeuw & Van Driessen 2006): protocol 2's linear program on the runs within the cap at the
current point, repeated while the capped loss falls (it never rises); the answer the least-loss point found. Zero
weights stay feasible and are the answer wherever no reading lowers the loss (the "far" bin's weights can be zero,
as in the LP); on the rows it learned from, the loss is at most the held level's. The shrinkage to the held level
where the pilot carries little information is kept: each weight is still a_k + g c_k of (3), g of (2). Everything
else (runs, pilots, horizon, truth, noise, readings, information, bins, bands and their scale, the nested
leave-one-repository-out, baselines, scores, targets T1-T4) is protocol 2's, as below. Rows:
real-run-end-reward-3-error (T1, T2) and real-run-end-reward-3-interval (T3, T4); per-run numbers:
paper_repro/real_run_end_reward.md. Shipping: `--ship`'s constants go into predict._end_blend only if protocol 3 is
not worse than protocol 2 overall: it passes every target protocol 2 passed (T3, T4), and its median scaled errors
summed over both shares are not above protocol 2's (0.67 + 1.02 = 1.69); else protocol 2's constants stay shipped.

Protocol 2 (fixed on 2026-12-02, committed before its first evaluation). Protocol 1
(e8bc861: the blend of C, S, E gated by g, bands by horizon bin) was scored at 29d66f4; its rows real-run-end-reward-
error / -interval stay in paper_repro/RESULTS.md as recorded and its per-run table in real_run_end_reward_v1.md. What
changed from protocol 1: the ensemble moved into predict (`predict._curve_ensemble`) and became a reading of the blend;
each reading's weight is a line in the pilot's information, a + g c, learned per horizon bin; the bands are Mondrian by
horizon bin and information group. Everything else (runs, pilots, truth, noise, baselines, scores, targets) is
protocol 1's.

  runs        every log of `_end_reward_runs.finished_runs`: ../shared/data/real_runs and real_logs, the files of
              paper_repro/real_run_manifest.json under --extra, and the labelled wild logs (labels_*.json and
              heldout/labels_*.json, less `refused` and `too_short`; the files in $GSPO_DYNAMICS_WILD_LOGS or
              ../wild_logs), each read by `logs.read_log`, kept with >= 40 finite reward points, a reward series
              equal to one kept before skipped. Counted before this protocol was fixed (as for protocol 1): 70 runs
              from 52 repositories (28 logging entropy); the repository is the label's or manifest's `repo`, else the
              file name's owner/name.
  pilots      the first 10% and 25% of each run's reward points, at least 8 (`real_run_forecast.MIN_PILOT`).
  horizon     h = the run's last step / the pilot's last step (predict's `ratio`).
  truth       y = the mean reward over the run's last sixth (`real_run_forecast.end_mask`).
  noise       sigma = std(first differences of the pilot) / sqrt(2), floored at 1% of the reach's width; errors are
              |forecast - y| / sigma. The reach: [0, 1] where every pilot reward lies there, else
              `predict.reward_reach` of the pilot (its range widened by its width on each side).
  ours        `predict._end_blend` (its docstring holds the equations), as `predict --pilot` computes it: the readings
              at the run's end, clipped to the reach: H the held level (the pilot's last 8 rewards' mean), C the
              closed-form fit's end (H where its plateau is extrapolated), S ScaleRL's sigmoid, E the entropy law
              where entropy is logged (H where it falls back or is not logged), D the curve ensemble
              (`predict._curve_ensemble`: constant, log-linear, exponential saturation, ScaleRL's sigmoid and the
              closed form, each fitted to the pilot, weighted by exp(-BIC / 2), BIC = n ln(RSS / n) + p ln n). The
              information g = z^2 / (z^2 + 4), z = |mean of the pilot's last 8 - its first 8| / (sigma sqrt(2 / 8));
              g = 0 for a pilot of fewer than 16 points. The forecast R = H + sum_k (a_k + g c_k) (F_k - H), k in
              {C, S, E, D}, a, c >= 0, sum_k (a_k + c_k) <= 1, one (a, c) per horizon bin (h <= 6, h > 6), learned as
              the least total scaled absolute error sum_i |y_i - R_i| / sigma_i over the training runs' pilots (both
              shares; a linear program).
  interval    split conformal across runs, Mondrian by horizon bin x information group (g < 1/2 "flat", else
              "trend"): scale u = sigma + max_k |F_k - H| (k over C, S, E, D); scores s_i = |y_i - R_i| / u_i with R_i
              from weights learned without run i's repository; q = the ceil((m + 1) 0.9)-th smallest of the group's m
              scores (none where that rank exceeds m), a group of fewer than 20 scores taking its horizon bin's
              (both groups pooled); band [R - q u, R + q u] within the reach; a band equal to the
              whole reach, or with no q, is not printed (withheld), and is scored as the reach. (Amended
              2026-12-04, after the protocols' runs: a band spanning 90% of the reach or more is withheld too,
              `_end_blend.NEAR_WHOLE`, scored as the reach likewise; its effect is in docs/validation.md.)
  evaluation  leave-one-repository-out: each repository's runs forecast with weights learned on the other
              repositories' runs, and with q from the other repositories' scores, each of those scores from weights
              learned without its own repository and the held-out one (nested).
  baselines   held level, last value, exponential saturation, ScaleRL's sigmoid, the entropy law (on the runs that
              log entropy; ours compared on those same runs), and the parametric ensemble D alone (after Domhan et al.
              2015, IJCAI, "Speeding up automatic hyperparameter optimization of deep neural networks by extrapolation
              of learning curves"). The closed-form curve alone is reported, not a target. Each baseline's band: split
              conformal with u = sigma, Mondrian by horizon bin.
  scores      per pilot share: the median scaled error; the 90% band's coverage; the mean interval score of
              Gneiting & Raftery 2007 (JASA, eq. 43), IS = (hi - lo) + (2 / 0.1)((lo - y)_+ + (y - hi)_+), over sigma
              (a proper scoring rule for the 90% central interval).
  targets     T1: from 25% pilots ours' median scaled error is below every baseline's. T2: from 10% pilots it is not
              above the held level's. T3: ours' 90% band covers 85-95% of runs at both shares. T4: ours' mean
              interval score is the lowest of every method's at both shares. Rows real-run-end-reward-2-error (T1, T2)
              and real-run-end-reward-2-interval (T3, T4); per-run numbers: real_run_end_reward_v2.md.

    python paper_repro/real_run_end_reward.py                # every source found
    python paper_repro/real_run_end_reward.py --quick        # CI: the shared runs only (the same protocol)
    python paper_repro/real_run_end_reward.py --ship         # also print the constants predict._end_blend ships
                                                             # (SHIPPED: protocol 2's; protocols 3 and 4 did not ship)
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
from pathlib import Path

import numpy as np
import real_run_forecast as rrf
from _end_reward_runs import finished_runs
from _results import Claim, record

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.fit import fit_exponential_saturation, fit_trajectory, last_value
from gspo_dynamics.predict import end_window, held_reward, reward_reach
from gspo_dynamics.predict._end_blend import (
    Readings, band, band_quantile, blend, gate, information, interval_score, law_readings, learn_weights, learn_weights_capped,
    mondrian_quantile, pilot_noise,
)

HERE = Path(__file__).resolve().parent
TABLE = HERE / "real_run_end_reward.md"
SHARES = (0.10, 0.25)
BINS = ("near", "far")
GROUPS = ("flat", "trend")  # the bands' information groups (predict._end_blend (5))
BASELINES = ("held", "last", "exp_saturation", "scalerl_sigmoid", "entropy_law", "ensemble")
REPORTED = ("curve",)  # predict's closed-form curve alone, the forecast before this protocol: shown, not a target
UNGATED = "protocol 2"  # protocol 2's forecast and band (G_b = 1), scored in the same run for the shipping rule only
COVERAGE = (0.85, 0.95)
LEARN = {2: learn_weights, 3: learn_weights_capped, 4: learn_weights}  # each protocol's objective (4) / (4') of
# predict._end_blend (protocol 4: protocol 2's, gated by (4g))
PROTOCOL = 4  # the protocol this script scores and records (rows real-run-end-reward-4-*)
# the protocol whose constants predict._end_blend ships, which --ship prints: protocol 3 was scored (rows
# real-run-end-reward-3-*) and by its own shipping rule not shipped (its medians summed 1.05 + 0.65 = 1.70 > 1.69);
# protocol 4 was scored (rows real-run-end-reward-4-*) and by its rule not shipped: its 25% median 0.757 > 0.672, the
# near gate shut in one fold of 70 (its --ship gate on every run would be near 1, far 0)
SHIPPED = 2


def pilot_row(run: dict, share: float) -> dict:
    """One run's pilot at `share`: the readings, the truth and every baseline's end (module docstring)."""
    steps, reward = run["steps"], run["reward"]
    n = max(rrf.MIN_PILOT, math.ceil(share * reward.size))
    ps, pr = steps[:n], reward[:n]
    reach = reward_reach(pr, (0.0, 1.0) if pr.min() >= 0 and pr.max() <= 1 else None)
    sigma = pilot_noise(pr, reach)
    run_steps = int(round(steps[-1]))
    window = end_window(run_steps)
    held = held_reward(pr)
    entropy = rrf._entropy(run, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fit = fit_trajectory(ps, pr)
        except ConfigError:  # the closed-form fit fails on this pilot (an internal error of fit, reported): C = H
            fit = None
        laws = law_readings(fit, ps, pr, window, reach, held, entropy)
        ends = {"held": held, "last": last_value(pr).level,
                "exp_saturation": float(np.mean(fit_exponential_saturation(ps, pr).predict(window, reach))),
                "scalerl_sigmoid": laws[1], "ensemble": laws[3],
                "curve": held if fit is None else float(np.mean(np.clip(fit.predict(window), *reach)))}
    if entropy is not None:
        ends["entropy_law"] = laws[2]
    readings = Readings(held, laws, information(pr, sigma), sigma, run_steps / float(ps[-1]))
    return {"run": run["name"], "repo": run["repo"], "share": share, "n": n, "points": reward.size, "reach": reach,
            "sigma": sigma, "y": float(reward[rrf.end_mask(steps)].mean()), "readings": readings, "bin": readings.where,
            "ends": ends}


class Learner:
    """Weights (a, c) learned per horizon bin on the rows outside a set of repositories, cached: by `protocol`'s
    objective (protocol 4: protocol 2's, predict._end_blend (4))."""

    def __init__(self, rows: list[dict], protocol: int = PROTOCOL):
        self.rows, self.cache, self.learn = rows, {}, LEARN[protocol]

    def weights(self, without: frozenset) -> dict[str, np.ndarray]:
        if without not in self.cache:
            out = {}
            for b in BINS:
                rows = [r for r in self.rows if r["bin"] == b and r["repo"] not in without]
                x = np.array([r["readings"].features / r["sigma"] for r in rows]).reshape(len(rows), -1)
                t = np.array([(r["y"] - r["readings"].held) / r["sigma"] for r in rows])
                out[b] = self.learn(x, t)
            self.cache[without] = out
        return self.cache[without]

    def forecast(self, row: dict, without: frozenset) -> float:
        return blend(row["readings"], self.weights(without)[row["bin"]])


def gates(rows: list[dict], learner: Learner, without: frozenset) -> tuple[dict[str, int], list, list]:
    """G_b of protocol 4 per bin on `rows` (none of them from `without`), each row forecast with weights learned
    without `without` and its own repository, and the band's scores (bin, group, |y - R| / u): protocol 4's (the
    held level's in a closed bin) and protocol 2's (the nested forecasts')."""
    nested = [learner.forecast(r, without | {r["repo"]}) for r in rows]
    g = {b: gate([abs(r["y"] - f) / r["sigma"] for r, f in zip(rows, nested) if r["bin"] == b],
                 [abs(r["y"] - r["readings"].held) / r["sigma"] for r in rows if r["bin"] == b]) for b in BINS}
    ungated = [(r["bin"], r["readings"].group, abs(r["y"] - f) / r["readings"].scale) for r, f in zip(rows, nested)]
    gated = [(b, grp, s if g[b] else abs(r["y"] - r["readings"].held) / r["readings"].scale)
             for r, (b, grp, s) in zip(rows, ungated)]
    return g, gated, ungated


def evaluate(rows: list[dict]) -> None:
    """Leave one repository out (module docstring): each row gets every method's end, band and scores."""
    learner = Learner(rows)
    repos = sorted({r["repo"] for r in rows})
    for held_out in repos:
        out = frozenset([held_out])
        rest = [r for r in rows if r["repo"] != held_out]
        g, ours_scores, ungated_scores = gates(rest, learner, out)
        for row in (r for r in rows if r["repo"] == held_out):
            learned = learner.forecast(row, out)
            row["gate"] = g[row["bin"]]
            row["forecast"] = {"ours": learned if row["gate"] else row["readings"].held, UNGATED: learned, **row["ends"]}
            row["band"] = {}
            for name, scores in (("ours", ours_scores), (UNGATED, ungated_scores)):
                q = mondrian_quantile(scores, row["bin"], row["readings"].group)
                row["band"][name] = band(row["forecast"][name], row["readings"].scale, q, row["reach"])
            for name, end in row["ends"].items():
                scores = [abs(r["y"] - r["ends"][name]) / r["sigma"] for r in rest if r["bin"] == row["bin"] and name in r["ends"]]
                row["band"][name] = band(end, row["sigma"], band_quantile(scores), row["reach"])
    for row in rows:
        score_row(row)


def score_row(row: dict) -> None:
    """A row's scaled error, coverage and interval score per method, from its `forecast` and `band` (a withheld band,
    None, scored as the reach)."""
    row["error"] = {k: abs(v - row["y"]) / row["sigma"] for k, v in row["forecast"].items()}
    row["covered"], row["is"] = {}, {}
    for k, b in row["band"].items():
        lo, hi = row["reach"] if b is None else b
        row["covered"][k] = bool(lo <= row["y"] <= hi)
        row["is"][k] = interval_score(lo, hi, row["y"]) / row["sigma"]


def summary(rows: list[dict]) -> dict:
    """Per share: each method's (median scaled error, coverage, mean interval score, runs), ours on each baseline's runs,
    and ours' withheld bands."""
    out = {}
    for share in SHARES:
        here = [r for r in rows if r["share"] == share]
        per = {}
        for k in ("ours",) + BASELINES + REPORTED + (UNGATED,):
            sub = [r for r in here if k in r["error"]]
            per[k] = {"error": float(np.median([r["error"][k] for r in sub])), "ours_error": float(np.median(
                [r["error"]["ours"] for r in sub])), "cover": float(np.mean([r["covered"][k] for r in sub])),
                "is": float(np.mean([r["is"][k] for r in sub])), "ours_is": float(np.mean([r["is"]["ours"] for r in sub])),
                "runs": len(sub)}
        per["withheld"] = sum(r["band"]["ours"] is None for r in here)
        per["open"] = {b: (sum(r["gate"] for r in here if r["bin"] == b), sum(r["bin"] == b for r in here)) for b in BINS}
        out[share] = per
    return out


def targets(s: dict) -> dict[str, tuple[bool, str]]:
    """T1-T4 of the protocol, each (passed, its numbers)."""
    q, t = s[0.25], s[0.10]
    t1 = all(q[k]["ours_error"] < q[k]["error"] for k in BASELINES)
    t2 = t["ours"]["error"] <= t["held"]["error"]
    t3 = all(COVERAGE[0] <= s[sh]["ours"]["cover"] <= COVERAGE[1] for sh in SHARES)
    t4 = all(s[sh][k]["ours_is"] < s[sh][k]["is"] for sh in SHARES for k in BASELINES + REPORTED)
    return {"T1": (t1, "25% pilots, ours vs each baseline (median scaled error, same runs): " + ", ".join(
                f"{k} {q[k]['ours_error']:.2f} vs {q[k]['error']:.2f}" for k in BASELINES)),
            "T2": (t2, f"10% pilots: ours {t['ours']['error']:.3f} vs held {t['held']['error']:.3f}"),
            "T3": (t3, "; ".join(f"{sh:.0%} pilots {s[sh]['ours']['cover']:.0%} of {s[sh]['ours']['runs']}"
                                 f" ({s[sh]['withheld']} bands withheld: 90% of the reach or more)" for sh in SHARES)),
            "T4": (t4, "; ".join(f"{sh:.0%} pilots: ours {s[sh]['ours']['is']:.1f}, " + ", ".join(
                f"{k} {s[sh][k]['is']:.1f}" + ("" if s[sh][k]["runs"] == s[sh]["ours"]["runs"] else
                                                f" (ours {s[sh][k]['ours_is']:.1f} on its {s[sh][k]['runs']} runs)")
                for k in BASELINES + REPORTED) for sh in SHARES))}


def table_lines(s: dict) -> list[str]:
    lines = ["| method | " + " | ".join(f"{sh:.0%}: median error | coverage | interval score" for sh in SHARES) + " |",
             "|---" * (1 + 3 * len(SHARES)) + "|"]
    for k in ("ours",) + BASELINES + REPORTED + (UNGATED,):
        lines.append(f"| {k} | " + " | ".join(f"{s[sh][k]['error']:.2f} | {s[sh][k]['cover']:.0%} | {s[sh][k]['is']:.1f}"
                                               + ("" if s[sh][k]["runs"] == s[sh]["ours"]["runs"] else f" ({s[sh][k]['runs']} runs)")
                                               for sh in SHARES) + " |")
    return lines


def ship(rows: list[dict]) -> str:
    """The constants predict._end_blend ships (protocol SHIPPED's): weights learned on every run, the gate (protocol 4;
    else open) and q from each run's out-of-repository forecast."""
    learner = Learner(rows, SHIPPED)
    w = learner.weights(frozenset())
    g, gated, ungated = gates(rows, learner, frozenset())
    g, scores = (g, gated) if SHIPPED == 4 else ({b: 1 for b in BINS}, ungated)
    q = ", ".join(f'"{b}": {{' + ", ".join(f'"{g}": {mondrian_quantile(scores, b, g):.3f}' for g in GROUPS) + "}"
                  for b in BINS)
    weights = ", ".join(f'"{b}": ({", ".join(f"{v:.3f}" for v in w[b])})' for b in BINS)
    shut = ", ".join(f'"{b}": {g[b]}' for b in BINS)
    return (f"BLEND_WEIGHTS = {{{weights}}}\nBLEND_GATE = {{{shut}}}\nBAND_QUANTILES = {{{q}}}\nBAND_MAX_HORIZON = "
            f"{max(r['readings'].horizon for r in rows):.3g}\nCALIBRATION = \"{len({r['run'] for r in rows})} finished real "
            f"runs from {len({r['repo'] for r in rows})} public repositories\"")


def group_counts(rows: list[dict]) -> str:
    """Per pilot share, how many pilots fall in each band group (horizon bin, information group)."""
    return "; ".join(f"{sh:.0%} pilots " + ", ".join(
        f"{b}/{g} {sum(r['share'] == sh and r['bin'] == b and r['readings'].group == g for r in rows)}"
        for b in BINS for g in GROUPS) for sh in SHARES)


def gate_counts(s: dict) -> str:
    """Per pilot share and horizon bin, in how many of its pilots' folds the gate was open."""
    return "; ".join(f"{sh:.0%} pilots " + ", ".join(f"{b} {s[sh]['open'][b][0]}/{s[sh]['open'][b][1]}" for b in BINS)
                     for sh in SHARES)


def shipping(s: dict, found: dict) -> str:
    """Protocol 4's shipping rule (module docstring) on this run: T3, T4 pass and neither median above protocol 2's."""
    medians = [(s[sh]["ours"]["error"], s[sh][UNGATED]["error"]) for sh in SHARES]
    ok = found["T3"][0] and found["T4"][0] and all(a <= b for a, b in medians)
    return (f"shipping rule: {'SHIP' if ok else 'do not ship'} the gate: T3 {'PASS' if found['T3'][0] else 'FAIL'}, T4 "
            f"{'PASS' if found['T4'][0] else 'FAIL'}; median scaled error, gated vs protocol 2: " + ", ".join(
                f"{sh:.0%} {a:.3f} vs {b:.3f}" for sh, (a, b) in zip(SHARES, medians)) + f"; gate open: {gate_counts(s)}")


def write_table(rows: list[dict], s: dict, header: str) -> None:
    lines = ["# The end reward on finished real runs, left out by repository (paper_repro/real_run_end_reward.py; protocol "
             f"{PROTOCOL} in its docstring)", "", header + " Protocol 1's, 2's and 3's results, as recorded: "
             "real_run_end_reward_v1.md, _v2.md, _v3.md.", ""]
    lines += table_lines(s) + ["", f"Band groups (horizon bin, information): {group_counts(rows)}.",
                                "", f"Gate G_b open (learned weights kept), folds' pilots: {gate_counts(s)}.", ""]
    lines += ["| run | repo | pilot | h | g | sigma | truth | G | ours | band | held | ensemble | curve |", "|---" * 13 + "|"]
    for r in rows:
        b = r["band"]["ours"]
        lines.append(f"| {r['run'][:50]} | {r['repo']} | {r['n']}/{r['points']} | {r['readings'].horizon:.3g} | "
                     f"{r['readings'].info:.2f} | "
                     f"{r['sigma']:.3g} | {r['y']:.3g} | {r['gate']} | {r['forecast']['ours']:.3g} ({r['error']['ours']:.2f}) | "
                     + ("withheld" if b is None else f"[{b[0]:.3g}, {b[1]:.3g}]") + ("" if r["covered"]["ours"] else " miss")
                     + f" | {r['error']['held']:.2f} | {r['error']['ensemble']:.2f} | {r['error']['curve']:.2f} |")
    TABLE.write_text("\n".join(lines) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the shared runs only (what CI has)")
    parser.add_argument("--extra", nargs="*", default=[], type=Path, help="folders holding the manifest's logs")
    parser.add_argument("--wild", type=Path, default=None, help="the folder of the wild logs (default ../wild_logs)")
    parser.add_argument("--no-record", action="store_true", help="print only; leave RESULTS.md alone")
    parser.add_argument("--ship", action="store_true", help="print the constants predict._end_blend ships (protocol SHIPPED's)")
    args = parser.parse_args()
    started = time.perf_counter()
    runs, skipped = finished_runs(args.extra, args.quick, args.wild)
    n_repos = len({r["repo"] for r in runs})
    print(f"{len(runs)} runs from {n_repos} repositories; {len(skipped)} logs skipped")
    if n_repos < 3:
        print("[SKIP] fewer than 3 repositories of finished real runs found: ../shared/data and ../wild_logs absent")
        return 0
    rows = [pilot_row(run, share) for share in SHARES for run in runs]
    evaluate(rows)
    s = summary(rows)
    header = f"{len(runs)} runs from {n_repos} repositories."
    print("\n".join(table_lines(s)))
    print(shipping(s, targets(s)))
    if args.ship:
        print(ship(rows))
    if not args.no_record:
        write_table(rows, s, header)
    _record(targets(s), header, args, started)
    return 0


def _record(found: dict, header: str, args, started: float) -> None:
    command = "python paper_repro/real_run_end_reward.py" + (" --quick" if args.quick else "")
    write = not args.no_record
    record(Claim(f"real-run-end-reward-{PROTOCOL}-error", f"{header} Protocol {PROTOCOL}. Left out by repository, predict's "
                 "end-reward forecast (the blend, each horizon bin's weights gated by an inner leave-one-repository-out "
                 "check against the held level) beats every baseline from 25% pilots and is not above the held level from 10% pilots", source="ours; "
                 "baselines: arXiv 2507.18014, 2510.13786, 2505.22617, Domhan et al. 2015"),
           predicted="T1: 25% pilots, median scaled error below every baseline's; T2: 10% pilots, not above the held "
           "level's", measured=f"T1 {'PASS' if found['T1'][0] else 'FAIL'}: {found['T1'][1]}; T2 "
           f"{'PASS' if found['T2'][0] else 'FAIL'}: {found['T2'][1]}", passed=found["T1"][0] and found["T2"][0],
           quick=args.quick, started=started, command=command, write=write)
    record(Claim(f"real-run-end-reward-{PROTOCOL}-interval", f"{header} Protocol {PROTOCOL}. Left out by repository, predict's 90% end-reward band "
                 "covers 85-95% of runs with the best interval score (Gneiting & Raftery 2007)"),
           predicted="T3: coverage in [0.85, 0.95] at 10% and 25% pilots; T4: the lowest mean interval score at both",
           measured=f"T3 {'PASS' if found['T3'][0] else 'FAIL'}: {found['T3'][1]}; T4 "
           f"{'PASS' if found['T4'][0] else 'FAIL'}: {found['T4'][1]}", passed=found["T3"][0] and found["T4"][0],
           quick=args.quick, started=started, command=command, write=write)


if __name__ == "__main__":
    raise SystemExit(main())
