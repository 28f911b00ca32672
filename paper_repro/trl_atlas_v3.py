"""Claim (issue 49 item 3, third protocol): predict's stability verdict from a run's first 20% is right on real TRL
runs that fail, judged on seeds no rule and no reading of ours has met.

Why a third protocol. The second (trl_atlas_v2.py; its 126 runs and FAIL stay as recorded) held out seeds 3 and 4,
and they were held out for its one scoring. Since then they were read: predict was re-run on them after its `unsure`
verdict was added, their misses were looked at run by run, and pilot features (entropy, gradient-norm spikes) were
tabulated on them. Seeds 0, 3 and 4 are development seeds now. This protocol is committed before any of its runs.

Runs: exactly the second protocol's (`trl_atlas_v2.run_grid`: TRL 1.16's GRPOTrainer through `trl_family.run`, the
tiny Llama built in code and warmed into success (0.2, 0.5), the pattern task's 0/1 reward, G = 8, 400 steps, its
grid of learning_rate x steps_per_generation x epsilon, 42 runs a seed) for seeds 5 and 6, never run before. Rows in
data/trl_atlas/runs_v3.jsonl; the logs in --logs (default $TMPDIR/trl_atlas_v3). The verdicts written as each run ends
(at the code of that moment) are not read: the `predict` action overwrites them.

Outcome of each run: the second protocol's rule (`trl_atlas_v2.outcome`: fell / held / never rose from r0, the last
10% and the best 10% window; RISE = DROP = 0.15, FALL_SHARE = 0.5).

Prediction: the second protocol's (`trl_atlas.predict_run`: the Python API of `gspo-dynamics predict --config
config.json --pilot trainer_state.json --pilot-steps K`, K = max(8, the reward points at steps <= 20% of 400)), at the
commit that records these rows' predictions (`python paper_repro/trl_atlas_v3.py predict`), with every rule of
predict frozen there; kept: verdict, max_safe_lr.

Scores, on seeds 5 and 6 (a never-rose run listed, not scored):
  verdict right   (the issue's target) a run that fell is not "safe"; one that held is "safe"
  reported beside decided verdicts (safe on held, unsafe on fell; "at risk" a hedge) and the share at risk; by cell
                  kind (clip off at T > 1 apart); the most a predictor keeping item 3's rule (a config without a clip
                  at T > 1 is at risk before any pilot, and TRL logs no drift there) can score
  baselines       always safe; "not safe iff clip off and T > 1"; "unsafe iff lr > X", X the midpoint of adjacent grid
                  lrs that scores best on the development seeds 0, 3, 4
  stable lr       per (T, clip) cell, the boundary measured by the second protocol on seeds 0, 3, 4 (the geometric
                  mean of the smallest grid lr at which >= 2 of 3 seeds fell and the grid lr below it), fixed before
                  these runs; predict's value the geometric median of seeds 5 and 6's max_safe_lr in the cell; right
                  within 2x of the boundary
  targets         the issue's: >= 90% of verdicts right; the stable lr within 2x on >= 80% of measurable cells

    python paper_repro/trl_atlas_v3.py run        # trains seeds 5 and 6 (skips rows already kept), ~25 CPU-minutes
    python paper_repro/trl_atlas_v3.py predict    # predict again on every kept row, at this code
    python paper_repro/trl_atlas_v3.py [score] [--no-record | --quick]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import trl_atlas as v1  # noqa: E402  (the runs and predict's call are the first protocol's)
import trl_atlas_v2 as v2  # noqa: E402  (its grid, outcome rule, development rows and boundaries)

HELD_OUT, DEVELOPMENT = (5, 6), (0, 3, 4)
ROWS = Path(__file__).parent / "data" / "trl_atlas" / "runs_v3.jsonl"
VERDICT_TARGET, LR_TARGET, LR_FACTOR = v1.VERDICT_TARGET, v1.LR_TARGET, v1.LR_FACTOR


def _marked(rows: list[dict]) -> list[dict]:
    for r in rows:
        r["outcome"], r["stats"] = v2.outcome(r["steps"], r["reward"], crashed=r["crashed"])
    return rows


def score(held: list[dict], development: list[dict]) -> dict:
    """The module docstring's scores of the held-out rows `held` (`trl_atlas_v2.held_out_scores`), with the baselines'
    threshold and the cells' boundaries from the `development` rows."""
    return v2.held_out_scores(_marked(held), _marked(development), development, "fit on seeds 0, 3, 4")


def measured_text(s: dict, rows: list[dict]) -> str:
    counts = ", ".join(f"{o} {sum(r['outcome'] == o for r in rows)}" for o in ("fell", "held", "never rose"))
    return (f"{len(rows)} runs on seeds 5-6 ({counts}); right: " + "; ".join(f"{k} {v2._frac(*v)}" for k, v in s["acc"].items())
            + "; predict by kind: " + "; ".join(f"{k} {v2._frac(*v)}" for k, v in s["by_kind"].items())
            + f"; decided {v2._frac(*s['decided'])}, at risk on {v2._frac(*s['at_risk'])}; the most a predictor keeping "
            f"item 3's rule (clip off at T > 1 is at risk) can score {v2._frac(*s['ceiling'])}; stable lr within "
            f"{LR_FACTOR:g}x on {s['within']}/{s['measurable']} measurable cells ({len(s['cells'])} cells)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", nargs="?", default="score", choices=("run", "predict", "score"))
    parser.add_argument("--logs", default=str(Path(tempfile.gettempdir()) / "trl_atlas_v3"))
    parser.add_argument("--no-record", action="store_true")
    parser.add_argument("--quick", action="store_true", help="score the kept rows, record nothing (the paper_repro harness)")
    args = parser.parse_args()
    if args.action == "run":
        v2.run_grid(HELD_OUT, Path(args.logs), ROWS)
        return
    if args.action == "predict":
        v1.repredict(Path(args.logs), ROWS)
        return
    started = time.perf_counter()
    held = [r for r in v1.load_rows(ROWS) if r["seed"] in HELD_OUT]
    development = [r for r in v2.load_rows() if r["seed"] in DEVELOPMENT]
    if not held:
        print(f"[SKIP] trl-atlas-v3: no rows in {ROWS}: run `python paper_repro/trl_atlas_v3.py run` first")
        return
    s = score(held, development)
    text = measured_text(s, held)
    print(text)
    for (T, clip), (bound, why, pred, n_pred, n) in s["cells"].items():
        print(f"T {T} clip {clip}: boundary {why}; predict's max_safe_lr "
              + (f"{pred:.2g} ({n_pred}/{n} held-out runs give one)" if pred else f"withheld on all {n} held-out runs"))
    from _results import Claim, record

    a, n = s["acc"]["predict"]
    passed = n > 0 and a / n >= VERDICT_TARGET and s["measurable"] > 0 and s["within"] / s["measurable"] >= LR_TARGET
    record(Claim("trl-atlas-v3", "on real TRL GRPOTrainer runs over lr x T x clip (third protocol, seeds 5-6 run after "
                                 "the rules were frozen), predict's verdict from the first 20% is right where runs fail"),
           predicted=f">= {VERDICT_TARGET:.0%} verdicts right on seeds 5-6 (fell: not safe; held: safe); max_safe_lr "
                     f"within {LR_FACTOR:g}x of the second protocol's boundary on >= {LR_TARGET:.0%} of measurable cells",
           measured=text, passed=passed, quick=False, started=started,
           command="python paper_repro/trl_atlas_v3.py score", write=not (args.no_record or args.quick))


if __name__ == "__main__":
    main()
