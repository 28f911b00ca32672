"""Every paper_repro claim, in its --quick mode (slow: run with `bash scripts/test.sh --full`)."""

import subprocess
import sys
from pathlib import Path

import pytest

# Claims known to fail, with the reason recorded in paper_repro/RESULTS.md; they still must run.
KNOWN_FAILING = {
    "moe_routing": "the flip-mixture prediction of replay's variance reduction misses experts replay at T = 8: "
                   "the replay run itself drifts ~15% more (row moe-replay-ratio-var)",
    "diagnose_trainer_corpus": "noise-dominated recipe runs whose rise is significant (Welch z ~5, the late half still "
                               "climbing) read as still rising; quick mode 3/4 (full 13/21 at 4b8611a and at b2a99f8 before "
                               "it, 19/21 when last recorded: row diagnose-trainer-corpus)",
    "trainer_at_scale": "pg collapses within one refresh period at lr 1e-2, T >= 8, where the one-logit model "
                        "predicts no threshold (the plateau is the reward's bound; row trainer-refresh-threshold)",
    "end_reward_interval": "the 90% interval covers 83-98% of the runs of each round held out, but with a task held "
                           "out 54-82% of addition's runs forecast at a bound and 66-81% of pattern's inside: a task "
                           "unlike the calibration's is covered less (row end-reward-interval)",
    "kl_pull_refresh": "quick mode only (4 seeds a cell): since the packed passes changed the float sums (session 13), "
                       "(b) reads 2 of 4 seeds fallen at the base lr and T = 6 against 0 at a third of it and T = 16; "
                       "the full mode (16 seeds) passes (row kl-pull-refresh)",
    "pilot_forecast": "protocol v14: 88.0% of the 3400 cells of 170 combinations (confirm-17 89.5% and confirm-18 "
                      "87.5%, held out, 3 of 10 and 1 of 8 meeting every target: count's grids, stable but for a cell "
                      "or two, leave no room to beat 'always stable'; confirm-14 to -16 as first read: 1, 3 and 7) but "
                      "most held-out combinations miss one; the 4-seed measurement alone caps what any forecaster of "
                      "the cells' instability rates reaches (rows pilot-forecast-*, pilot_forecast.md); v12's final "
                      "reward meets its target on 39 of 47 held-out combinations (v10's prior: 21); v13's CISPO change "
                      "passes held out, v14's on confirm-17 and ties on confirm-18 (rows pilot-forecast-clip-mode-*, "
                      "pilot-forecast-absorbed-*); the fall chance's held-out rows: confirm-13, -15, -17 and -18 pass, "
                      "confirm-12, -14 and -16 fail",
    "diagnose_generalisation": "with TRL's own GRPOTrainer as a fourth family (issue 38) the trainer family reads 76% "
                               "and the TRL family 87% left out (its runs made after the last change 93%); quick mode "
                               "scores 16 / 16 / 4 / 30 logs (rows diagnose-lofo-*)",
    "real_run_forecast": "on 23 public real runs (8 in ../shared, 15 fetched per paper_repro/real_run_manifest.json) "
                         "the forecast beats every baseline only on the curve from 25% pilots; from 10% pilots its "
                         "median end error is 2.31 sigma against ScaleRL's 1.23; the interval covers 74% (10%) and "
                         "96% (25%); no run collapsed after its pilot (rows real-run-*)",
    "real_run_end_reward": "protocol 2 (2026-12-02), 70 runs from 52 repositories left out by repository: coverage "
                           "91%/90% (T3) and the lowest interval score (T4) hold, but from 25% pilots the blend (0.67 "
                           "sigma) trails the parametric ensemble alone (0.57), and from 10% pilots it is above the "
                           "held level (1.02 vs 0.94) (rows real-run-end-reward-2-*; protocol 1's rows "
                           "real-run-end-reward-* fail too; protocol 4's gate per horizon bin passes T2, 0.92 vs "
                           "0.94, but its 25% median is 0.76: rows real-run-end-reward-4-*)",
    "trl_atlas": "the first protocol's 90 TRL runs: predict right on 19/44 held-out seeds against 35/44 always safe "
                 "(row trl-atlas)",
    "trl_atlas_v2": "126 TRL runs, seeds 3-4 held out: predict right on 56/84 (67%) against an lr cut's 90%; the "
                    "stable lr within 2x on 0/7 cells (row trl-atlas-v2)",
    "trl_atlas_v3": "84 TRL runs on seeds 5-6, run after predict's rules were frozen: right on 55/84 (65%) against always "
                    "safe's 50/84 and an lr cut's 74/84; at most 63/84 for any predictor keeping item 3's clip rule; "
                    "the stable lr within 2x on 1/7 cells (row trl-atlas-v3)",
    "public_collapse": "52 public runs: predict right on 34/52 (65%) against always safe's 31/52 (row public-collapse)",
    "wild_logs": "the development corpus's unsure share: 15/63 = 24% against <= 20% (13/63 = 21% before a flat log "
                 "with no per-sample spread too short to have seen a visible change became unsure, 2026-12-02); every "
                 "unsure answer names the label, right 54/55 where sure (row wild-logs-verdicts-dev)",
}
# Measurements without a claim (no target, nothing recorded): they must run and print their result.
MEASUREMENTS = {"diagnose_contextual_corpus": "primary verdict = label", "trl_family": "log rows written by TRL",
                "public_collapse_diagnose": "absent logs:", "verl_examples": "example scripts read",
                "openrlhf_examples": "example scripts read",
                "end_reward_fresh": "fresh runs from"}
NEEDS = {"trl_family": "trl"}  # scripts that need an optional package: skipped without it
SCRIPTS = sorted(p for p in (Path(__file__).parents[1] / "paper_repro").glob("*.py") if not p.name.startswith("_"))


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_claim_passes_in_quick_mode(script):
    """Every script runs to its end (a known-failing claim too: only its [FAIL] verdict is expected, never a crash,
    which an xfail mark on the whole test once hid: pilot_forecast's quick mode crashed after its rows)."""
    if script.stem in NEEDS:
        pytest.importorskip(NEEDS[script.stem])
    proc = subprocess.run([sys.executable, str(script), "--quick", "--no-record"], capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-2000:]
    if proc.stdout.startswith("[SKIP]"):  # an outside input it compares against is absent here (the peer's checkout)
        pytest.skip(proc.stdout.splitlines()[0])
    if script.stem in MEASUREMENTS:
        assert MEASUREMENTS[script.stem] in proc.stdout, proc.stdout[-2000:]
        return
    assert "[PASS]" in proc.stdout or "[FAIL]" in proc.stdout, proc.stdout[-2000:]
    if "[FAIL]" in proc.stdout and script.stem in KNOWN_FAILING:
        pytest.xfail(KNOWN_FAILING[script.stem])
    assert "[FAIL]" not in proc.stdout and "[PASS]" in proc.stdout, proc.stdout[-2000:]
