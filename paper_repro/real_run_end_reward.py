"""Claim: on finished real runs of repositories never seen in its fitting, predict's end-reward forecast from a pilot
is never worse than the naive reading (the held level), beats the published laws from 25% pilots, and its 90%
interval covers 85-95% of runs with the best interval score.

Protocol (fixed on 2026-12-02, committed before its first evaluation; a miss stays in the table as FAIL):

  runs        every log of `_end_reward_runs.finished_runs`: ../shared/data/real_runs and real_logs, the files of
              paper_repro/real_run_manifest.json under --extra, and the labelled wild logs (labels_*.json and
              heldout/labels_*.json, less `refused` and `too_short`; the files in $GSPO_DYNAMICS_WILD_LOGS or
              ../wild_logs), each read by `logs.read_log`, kept with >= 40 finite reward points, a reward series
              equal to one kept before skipped. Counted before this protocol was fixed: 70 runs from 52 repositories
              (28 logging entropy); the repository is the label's or manifest's `repo`, else the file name's owner/name.
  pilots      the first 10% and 25% of each run's reward points, at least 8 (`real_run_forecast.MIN_PILOT`).
  horizon     h = the run's last step / the pilot's last step (predict's `ratio`).
  truth       y = the mean reward over the run's last sixth (`real_run_forecast.end_mask`).
  noise       sigma = std(first differences of the pilot) / sqrt(2), floored at 1% of the reach's width; errors are
              |forecast - y| / sigma. The reach: [0, 1] where every pilot reward lies there, else
              `predict.reward_reach` of the pilot (its range widened by its width on each side).
  ours        `predict._end_blend` (its docstring holds the equations): the readings at the run's end, clipped to the
              reach: H the held level (the pilot's last 8 rewards' mean), C the closed-form fit's end (predict's curve;
              H where its plateau is extrapolated, `plateau_extrapolation` > fit.EXTRAPOLATION_LIMIT), S ScaleRL's
              sigmoid, E the entropy law where entropy is logged (a law that falls back is H). The information
              factor g = z^2 / (z^2 + 4), z = |mean of the pilot's last 8 - its first 8| / (sigma sqrt(2 / 8)); g = 0
              for a pilot of fewer than 16 points. The forecast R = H + g sum_k w_k (F_k - H), k in {C, S, E},
              w_k >= 0, sum_k w_k <= 1, one w per horizon bin (h <= 6, h > 6), learned as the least total scaled
              absolute error sum_i |y_i - R_i| / sigma_i over the training runs' pilots (both shares; a linear program).
  interval    split conformal across runs (Mondrian by horizon bin): scale u = sigma + max_k |F_k - H|; scores
              s_i = |y_i - R_i| / u_i with R_i from weights learned without run i's repository; q = the
              ceil((m + 1) 0.9)-th smallest of the bin's m scores; band [R - q u, R + q u] within the reach; a band
              equal to the whole reach is not printed (withheld), and is scored as the reach.
  evaluation  leave-one-repository-out: each repository's runs forecast with weights learned on the other
              repositories' runs, and with q from the other repositories' scores, each of those scores from weights
              learned without its own repository and the held-out one (nested).
  baselines   held level, last value, exponential saturation, ScaleRL's sigmoid, the entropy law (on the runs that
              log entropy; ours compared on those same runs), and a parametric ensemble after Domhan et al. 2015
              (IJCAI, "Speeding up automatic hyperparameter optimization of deep neural networks by extrapolation of
              learning curves"): the curve families exponential saturation, ScaleRL's sigmoid, the closed-form fit,
              log-linear a + b ln(t - t_0 + 1) and the constant, each fitted to the pilot, weighted by
              exp(-BIC / 2), BIC = n ln(RSS / n) + p ln n. The closed-form curve alone (predict's forecast before this
              protocol) is reported, not a target. Each baseline's band: the same conformal rule with u = sigma.
  scores      per pilot share: the median scaled error; the 90% band's coverage; the mean interval score of
              Gneiting & Raftery 2007 (JASA, eq. 43), IS = (hi - lo) + (2 / 0.1)((lo - y)_+ + (y - hi)_+), over sigma.
  targets     T1: from 25% pilots ours' median scaled error is below every baseline's. T2: from 10% pilots it is not
              above the held level's. T3: ours' 90% band covers 85-95% of runs at both shares. T4: ours' mean
              interval score is the lowest of every method's at both shares. Per-run numbers:
              paper_repro/real_run_end_reward.md.

    python paper_repro/real_run_end_reward.py                # every source found
    python paper_repro/real_run_end_reward.py --quick        # CI: the shared runs only (the same protocol)
    python paper_repro/real_run_end_reward.py --ship         # also print the constants predict._end_blend ships
"""

from __future__ import annotations

import argparse
from pathlib import Path

from _end_reward_runs import finished_runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the shared runs only (what CI has)")
    parser.add_argument("--extra", nargs="*", default=[], type=Path, help="folders holding the manifest's logs")
    parser.add_argument("--wild", type=Path, default=None, help="the folder of the wild logs (default ../wild_logs)")
    parser.add_argument("--no-record", action="store_true", help="print only; leave RESULTS.md alone")
    parser.add_argument("--ship", action="store_true", help="print the constants predict._end_blend ships")
    args = parser.parse_args()
    runs, skipped = finished_runs(args.extra, args.quick, args.wild)
    print(f"{len(runs)} runs from {len({r['repo'] for r in runs})} repositories; {len(skipped)} logs skipped "
          "(the protocol's evaluation follows in the next commit)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
