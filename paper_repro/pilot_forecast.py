"""Forecasts of real trainer runs from a config and a pilot, judged as forecasts against baselines.

Protocol, version 14 (fixed, and committed, before any of its held-out grids was run; 2026-11-26, session 17):
version 13 unchanged but for one rule of the model. Under a clip that caps a detached weight (CISPO), the push on a
sampled token whose advantage is negative fades as its weight w = pi / pi_old falls with it, and only the push on
the rewarded tokens keeps going past the band edge. Where the run's success is absorbing, most of its groups all
correct at the pilot's held success rate (p_h^G >= 1/2, `theory.collapse.ABSORBED_SHARE`; p_h as (9) reads it, from a
pilot that kept its reward), every group that push reaches ends all correct and stops carrying a gradient, so the
displacement that moves the reward is capped at the band edge as version 12 capped it (`theory.collapse` (4) and
(10)); elsewhere version 13's uncapped D. No other loss changes (a loss without a weight, pg's, has no fading push).
Found by a session that had read every earlier round: on the 27 CISPO combinations of rounds develop to confirm-16,
by the collapse part alone at S (the whole forecast is scored when the round is read), both regime targets on 20
against version 13's 17, 471 of their 540 cells right against 427, false alarms 44 against 99, cells safe but
unstable 25 against 14 (count's nine runs, p_h >= 0.98, hold where the uncapped displacement says they fall;
pattern's, p_h <= 0.91, and addition's, <= 0.44, are version 13's). Held out ("confirm-17", from the shared start,
chosen and committed with this text before their grids were run): ten CISPO combinations with a setting never used
on CISPO for that task: G = 4 (N = 8), eps_high = 0.3, temperature 0.8, 20 warm-up steps, min_count 3 and a
gradient-norm clip of 0.1 on count; min_matches 4, min_matches 6 and 20 warm-up steps on pattern; temperature 0.8 on
addition (the min_matches settings make pattern easier, perhaps absorbing; min_count 3 makes count harder, perhaps
not). Scored as version 13's rows (targets unchanged; the final reward version 12's), with version 13's verdict on
the same cells beside. The change's own target: both regime targets met on more of the ten than under version 13's
verdict, and more of the round's 200 cells right; its cells safe but unstable are reported beside, not a target (the
rule trades some for false alarms). The fall chance's row for this round as version 11's, on version 14's margin.
Second round ("confirm-18", chosen after confirm-17 was read, committed with this paragraph before its grids ran;
version 14 unchanged): confirm-17's absorbing and non-absorbing pilots fell on different tasks, so this round looks
for one task on both sides of p_h^G = 1/2: eight CISPO combinations that move a task's difficulty, on pattern
min_matches 2, 3 and 5 and length 4 and 6 (easier than the exact match of 8, perhaps absorbing), on count min_count
2, an odd count, and min_count 2 with an odd count (harder than any count, perhaps not). Scored as confirm-17's
rows, the change's row and the fall chance's row as confirm-17's; per combination, RESULTS.md's section shows the
pilot's held success rate beside its verdicts.

Protocol, version 13 (fixed, and committed, before any of its held-out grids was run; 2026-11-26, session 16):
version 12 unchanged but for one rule of the model. A loss whose clip caps a token's importance weight without
switching its gradient off (CISPO: -(1/N) sum sg[clip(w)] A grad log pi, `Hyperparams.clip_mode` "cap") keeps
moving the policy past the clip's band edge, so its displacement between samplers is D = T lr s uncapped, as for a
run without a correction (`theory.collapse` (2)-(3) with no band edge), where version 12 capped it at the edge after
the first step as for PPO's min (which switches a clipped token's gradient off). Found by a session that had read
every earlier round: on the 17 CISPO combinations of rounds develop to confirm-14 (confirm-15 has none), both regime
targets met on 10 against version 12's 8, cells safe but unstable 11 against 41, false alarms 67 against 14 (count's
runs, which solve their prompts, hold where the uncapped displacement says they fall); no other objective changes.
Held out ("confirm-16", from the shared start, chosen and committed with this text before their grids were run):
ten CISPO combinations with a setting never used on CISPO for that task: top-p 0.9, weight decay 0.1 and beta2 =
0.99 on count; temperature 1.2, top-p 0.9 and beta1 = 0.5 on pattern; temperature 1.2, a gradient-norm clip of 0.1,
beta2 = 0.99 and G = 16 (N = 2) on addition. Scored as version 12's rows (targets unchanged; the final reward
version 12's), with version 12's verdict on the same cells beside. The change's own target: both regime targets
met on more of the ten than under version 12's verdict, and fewer cells safe but unstable. The fall chance's row
for this round as version 11's, on version 13's margin.

Protocol, version 12 (fixed, and committed, before any of its held-out grids was run; 2026-11-26, session 16):
version 11 unchanged (below) for the regime, the collapse, the max safe T, the fall chance ((a, b) as version 11
froze them) and every score and target. One change, the final reward of the held-out rows: version 10's prior (the
mean final reward of the stable cells at the cell's T in the task's combinations of earlier rounds) is refined by
what the config says of the run, its objective and its step, in two levels of shrinkage (`predict._prior` (4)):

    m0 = the mean of F0, the final rewards of the stable cells at the cell's T in the task's earlier rounds,
    m1 = (sum of F1 + kappa m0) / (|F1| + kappa),  F1 the cells of F0 with the cell's objective,
    m2 = (sum of F2 + kappa m1) / (|F2| + kappa),  F2 the cells of F1 with the cell's optimizer and lr,

kappa = 2, the forecast m2 (where F1 or F2 is empty its level is its parent's; ours, the pilot's curve, where F0
is). The levels and kappa were chosen by a session that had read every earlier round, on the rolling origin of
rounds 5-13 (each round's cells forecast from the rounds before it): combinations whose every stable cell lies
within 0.05, 50 of 100 against version 10's 39 (kappa = 1: 52, kappa = 3: 47; the objective's level alone: 44;
the lr factor in place of (optimizer, lr): 49): a selection, whose test is this round. Held out ("confirm-14",
from the shared start, chosen and committed with this text before their grids were run): ten combinations
pairing a setting with a task and objective it was never used on: AdamW beta2 = 0.99 on count/pg, beta1 = 0.5 on
count/cispo, top-p 0.9 on count/dapo, weight decay 0.1 on pattern/grpo, temperature 0.8 on pattern/dapo, a
gradient-norm clip of 0.1 on pattern/pg, beta2 = 0.99 on pattern/cispo, temperature 1.2 on addition/gspo, weight
decay 0.1 on addition/dr_grpo and beta1 = 0.5 on addition/cispo. Scored as version 10's rows (targets unchanged),
with version 10's prior on the same cells beside it; the fall chance's row for this round as version 11's.
Version 12's second held-out round ("confirm-15", from the shared start, chosen and committed with this paragraph
after confirm-14 was read and before its own grids were run; the model, the shrunk prior, (a, b), scores and targets
unchanged): temperature 1.2 on count/gspo, weight decay 0.1 on count/dr_grpo, a gradient-norm clip of 0.1 on
count/grpo and on pattern/gspo, beta2 = 0.99 on pattern/dr_grpo, weight decay 0.1 on pattern/gspo_token, beta1 = 0.5
on pattern/pg, top-p 0.9 on addition/grpo, weight decay 0.1 on addition/dapo and temperature 0.8 on addition/pg.

Protocol, version 11 (fixed, and committed, before any of its held-out grids was run; 2026-11-26, session 15):
version 10 unchanged (its text: pilot_forecast.md, "Protocol texts"): version 9's measure, grid, seeds, pilot,
scores, targets and model for the regime, the collapse and the max safe T, and the final reward of held-out rows
from the task's earlier rounds. One forecast is added and judged held out: the chance that one run (seed) at a cell
loses its reward, P = 1 / (1 + exp(-(a + b m))) (`predict._fall_chance` (1), (2): m the log of the largest ratio of a
rule of ours to its threshold, > 0 exactly where ours says unstable), with (a, b) = predict.FALL_CHANCE as committed
at 28791cc, (-1.5011, 1.3680), fitted on the seeds of all 102 earlier grids (the rolling-origin fit for this round). Scored on the 800 seeds
of the held-out round (`_fall_chance_report.fall_chance_claim`, claim pilot-forecast-fall-chance [since named
pilot-forecast-fall-chance-confirm-12, one row per round]) by the per-run
Brier score, against two forecasts without the model from the same earlier grids: their fall rate, and a lookup
of the task's earlier grids at the cell's lr factor and T (its fall rate there, shrunk by one pseudo-run toward the
overall rate). Target: a Brier score below both, and the seed-weighted mean chance within 0.05 of the share of
seeds that fell. Held out ("confirm-12", from the shared start, chosen and committed with this text before their
grids were run): ten combinations pairing a setting with a task and objective it was never used on: temperature
1.2 on count/pg, weight decay 0.1 on count/dapo, G = 16 (N = 2) on count/cispo, a clip range of 0.3 above on
pattern/grpo, top-p 0.9 on pattern/pg, a gradient-norm clip of 0.1 on pattern/dr_grpo, AdamW beta1 = 0.5 on
pattern/dapo, beta2 = 0.99 on addition/gspo, weight decay 0.1 on addition/cispo and temperature 0.8 on
addition/dr_grpo. Their rows are also version 10's second held-out round (its model unchanged).
Version 11's second held-out round ("confirm-13", from the shared start, chosen and committed with this paragraph
after confirm-12 was read and before its own grids were run; the model, (a, b), scores and targets unchanged): top-p
0.9 on count/grpo, weight decay 0.1 on count/gspo_token, temperature 0.8 on count/dr_grpo, a clip of 0.3 above on
pattern/cispo, a 20-step warm-up on pattern/gspo, beta2 = 0.99 on pattern/gspo_token, beta1 = 0.5 on addition/grpo,
a gradient-norm clip of 0.1 on addition/gspo_token, temperature 1.2 on addition/dapo and weight decay 0.1 on
addition/pg. The chance's row for each round (pilot-forecast-fall-chance-<round>) takes its baselines from every
round before it (for confirm-13, confirm-12 included), the chance's (a, b) staying version 11's.

Protocol versions 10, 9, 8, 7 and 6, each fixed before its held-out grids was run, as they stood here: pilot_forecast.md
("Protocol texts of versions 6-10"; versions 10 and 11 keep version 9's model, described below).

Version 5's protocol (its model in force with version 7's equation (8) added; the grid, the seeds, the measure
and the pilot are version 4's; the roles below do not change with the results; versions 1-4 and why each was
replaced: pilot_forecast.md):

  combinations  (task, objective, optimizer, model) of our trainer, G = 8, N = 4 prompts per step, 100k model
                unless named; the role (COMBINATIONS) is the version that held a combination out.
                Development (DEVELOPMENT): the 22 combinations of version 4, all seen: its ten development
                ones ("develop": count/pg, pattern/grpo, count/gspo, pattern/gspo, count/grpo, pattern/pg with
                AdamW and with SGD momentum 0.9, count/pg with SGD, pattern/grpo and pattern/gspo on the 1m
                model) and its twelve held-out ones ("confirm-4": addition with one digit and partial credit
                under pg, grpo, gspo and gspo-SGD; pattern/grpo, pattern/gspo and count/gspo with SGD momentum;
                count/pg, count/grpo and count/gspo on the 1m model; count/dr_grpo and pattern/dr_grpo).
                Confirmation ("confirm-5"), chosen and their grids run before the version-5 model was fitted,
                their results not read until it was frozen and committed: objectives no version used (dapo
                on count and pattern, cispo on pattern and addition, gspo_token on addition), addition under
                dr_grpo and under pg with SGD momentum, group sizes no version used at the same N G = 32
                responses per step (count/grpo with G = 4, N = 8; pattern/grpo with G = 16, N = 2), and
                addition/grpo on the 1m model. Ten more, added with the model unchanged (as committed at
                ebaf59b) by a session stopped before it recorded any result (its dumps were lost with its
                machine), so all twenty were run and scored afresh by the next one: gspo_token on count and
                pattern, cispo on count, dapo on addition and with SGD momentum on pattern, addition/grpo with
                G = 16, pattern/pg with G = 4, count/gspo with G = 16, pattern/grpo with partial credit (a reward
                no version used on pattern), and count/dapo on the 1m model.
                Held out again ("confirm-6"): ten combinations chosen, and their grids started, after version
                5's results were read and before any other model was tried: a KL weight of 0.04 (count/grpo,
                pattern/gspo), SGD momentum on addition/cispo and count/dr_grpo, count needing 3 ones, pattern
                needing 6 of 8 matches, pattern of length 12, batch-scaled advantages (count/grpo), G = 4 on
                addition/gspo and G = 16 on pattern/dapo. The one model tried meanwhile (below) was not
                adopted, so they judge version 5 a second time.
                Held out by version 6 ("confirm-7", each a combination of settings no version used, all on
                the 100k model and run from the shared start): a clip range of 0.1 (count/grpo) and of 0.3
                above (addition/grpo), AdamW beta2 = 0.99 (pattern/gspo), SGD momentum on count/cispo and
                pattern/gspo_token, G = 4 on pattern/dr_grpo, G = 16 on pattern/cispo, a KL weight of 0.04 on
                count/gspo_token and on addition/pg, and weight decay 0.1 on count/pg.
                Held out by versions 7 and 8 ("confirm-8", "confirm-9", from the shared start): the ten each
                names (their protocol texts, pilot_forecast.md).
                Held out by version 9 ("confirm-10", from the shared start): the ten named under version 9.
                Held out by version 10 ("confirm-11", from the shared start): the ten its text names.
                Held out by version 11 ("confirm-12", "confirm-13", from the shared start): the twenty named at the top.
                Held out by version 12 ("confirm-14", "confirm-15", from the shared start): the twenty named at the top.
                Held out by version 13 ("confirm-16", from the shared start): the ten CISPO ones named at the top.
  pilot         one run per combination at the base learning rate and T = 2 (so that its stale steps
                measure the per-step drift), PILOT_STEPS = 24 steps = 25% of a full run, seed PILOT_SEED.
  grid          20 (lr, T) cells the pilot never saw: lr = base x LR_FACTORS, T = steps_per_generation in
                REFRESH_INTERVALS (fresh groups every step from the sampling policy: the theory's schedule),
                STEPS steps, seeds FIRST_SEED .. FIRST_SEED + SEEDS - 1 each.
  measured      per seed: its curve is the initial policy's reward (`initial_rewards`: the first max(T) steps of
                the grid's T = max(T) cells, all drawn by the initial policy, 1024 responses) followed by means
                of SEED_BLOCK steps; the seed is unstable when the curve falls more than DRAWDOWN_MARGIN below its
                running maximum (it lost reward it had: collapsed, oscillated, or jumped at once to a worse
                policy), or (version 8) loses COLLAPSE_SHARE of a running maximum of at least DRAWDOWN_MARGIN / 2,
                and a cell is unstable when any of its seeds is (a user runs one seed). Its final
                reward: the seed-mean reward of the last PLATEAU_STEPS steps.
  forecasts     ours: `predict.pilot_forecast` at each cell's (lr, T): unstable when T exceeds the max safe T
                of the pilot's stiffness scaled to the cell's lr (the linear model; none where its premises
                fail), or when the signal-weighted displacement between samplers passes the collapse limit
                relative to the pilot's token entropy, (1 - z) D(lr, T) > S H (`theory.collapse`, equations
                (2)-(5) and (7): D = T lr s, capped by the clip's band edge after the first step (version 13:
                not under CISPO's clip, which keeps the gradient); s from the
                pilot's stale steps, H its mean entropy, 1 - z the run's share of groups with signal (version
                9, equation (9); the pilot's mean share before), S = predict.COLLAPSE_SPREAD set
                on the development combinations by --fit-limit on a --dump of their cells; version 4: D > S H;
                version 7: the limit at least the pilot's own D when it kept its reward, equation (8)),
                or when the pilot's entropy rise on its first updates r, scaled to the cell's lr, passes
                a quarter: r lr / lr_pilot > 1/4 (equation (6); version 3: r > 1/4 and lr >= lr_pilot); baseline "continuous": eta K T < 1 - mu with the pilot's eta K
                scaled to the lr; baseline "always stable". Final reward and time to plateau: the pilot's fitted
                curve with its time scaled by the cell's lr over the pilot's, each step read at its sampler
                (`sampler_updates`: at T = 32 the last 16 steps log the policy after 64 updates).
  scores        per combination and forecaster: accuracy, cells predicted stable but measured unstable,
                the largest stable T per lr (predicted vs measured, agreement within one grid step), and the
                final-reward ("plateau") error on the stable cells. Over all combinations, what the final-reward
                target asks (`final_reward_reach`) and what a pilot of each cell itself would give (`own_pilot_reach`:
                the cell's first seed's first PILOT_STEPS steps, fitted and extrapolated to the run's end), which
                separates the extrapolation's error from the transfer across (lr, T), next to the naive forecast
                (the base pilot's last rewards held flat).
  targets       accuracy >= 85% on every combination, at most 1 "safe but unstable" cell, max safe T within
                one grid step, final reward within 0.05 on stable cells, and better than both baselines.

    python paper_repro/pilot_forecast.py --quick      # CI: 2 combinations x 4 cells x 2 seeds (~2 min on 2 cores)
    python paper_repro/pilot_forecast.py --workers 2 --dump cells.json   # full: 92 x 20 cells x 4 seeds (~150 min)
    python paper_repro/pilot_forecast.py --fit-limit cells.json          # S from the development combinations
    python paper_repro/pilot_forecast.py --fit-weight cells.json         # S and accuracy per weight w of (9)
    python paper_repro/pilot_forecast.py --from-dump cells.json          # score the dumped cells (pilots re-run)
    python paper_repro/pilot_forecast.py --workers 2 --from-dump paper_repro/data/pilot_forecast_cells.json.gz
                                      # every row from the shipped seed curves of all 92 grids (~5 min)

The results of each protocol version, what each changed and why, and what was tried and not adopted:
paper_repro/pilot_forecast.md.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

import torch
from _pilot_protocol import (
    ABSORB_ROLES, CHANCE_ROLES, CLIP_ROLES, COMBINATIONS, DEVELOPMENT, FIRST_SEED, INIT_SEED, LR_FACTORS, PILOT_SEED, PILOT_STEPS, PRIOR_ROLES, QUICK,
    REFRESH_INTERVALS, ROUNDS, SEEDS, SHARE_WEIGHTS, SHARED_START, SHRUNK_ROLES, VERSION_4_SPREAD, VERSION_11_CHANCE,
    VERSION_12_KAPPA, prior_order,
)
from _pilot_dump import collapses, dump_entry, dumped_curves, fit_limit, fit_weight, pilot_entry, read_dump
from _pilot_report import cell_map, describe, write_section
from _clip_mode_report import change_claim, change_reach
from _fall_chance_report import CALIBRATION_TOL, fall_chance_claim, fall_chance_reach, round_complete
from _results import PREDICTABLE_GRPO, Claim, device_name, record
from trainer_at_scale import Runs

from gspo_dynamics.experiments import (
    ACCURACY_MIN,
    PILOT_T,
    PLATEAU_TOL,
    SAFE_BUT_UNSTABLE_MAX,
    STEPS,
    exact_forecast_reach,
    final_reward_reach,
    initial_rewards,
    measured_cells,
    own_pilot_reach,
    passed,
    pilot_plateau_gap,
    prior_plateau_error,
    regime_reach,
    score,
    shrunk_plateau_error,
    shrunk_reach,
    task_prior_reach,
    window_progress,
)
from gspo_dynamics.predict import COLLAPSE_SPREAD, collapse_grid, margin_grid, pilot_forecast, read_run_config
from gspo_dynamics.logs import read_log
from gspo_dynamics.theory import collapse
from gspo_dynamics.theory.linear import critical_refresh_interval
from gspo_dynamics.train.config import TrainConfig
from gspo_dynamics.train.trainer import train


def base_config(name: str) -> TrainConfig:
    """The combination's run at its base lr: from the shared checkpoint (INIT_SEED) when its role is one of
    SHARED_START (version 6), else from each run's own seed (versions 1-5)."""
    task, objective, fields, lr, role = COMBINATIONS[name]
    start = {"init_seed": INIT_SEED} if role in SHARED_START else {}
    return TrainConfig(task=task, objective=objective, steps=STEPS, lr=lr, device="cpu",
                       **{"model": "100k", "group_size": 8, "prompts_per_step": 4, **start, **fields})


def pilot(cfg: TrainConfig):
    """The pilot run (base lr, T = PILOT_T, PILOT_STEPS steps), its forecast object for `cfg` and, for a loss whose
    clip keeps the gradient (CISPO), the forecasts as versions 12 and 13 read it ({"version 12": its displacement
    capped, "version 13": uncapped, `uncapped`}; {} for the others: neither version changed them). It runs on one
    thread whichever process runs it: the thread count changes the order of the float sums, and a pilot that
    drifts far (addition's, 0.6-0.9 per stale step) carries that rounding into a different run (found in
    version 9: two addition pilots read differently run from the grid's process and from a --from-dump worker)."""
    pilot_cfg = replace(cfg, steps=PILOT_STEPS, steps_per_generation=PILOT_T, seed=PILOT_SEED)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with tempfile.TemporaryDirectory() as d:
            train(pilot_cfg, d)
            log = read_log(f"{d}/trainer_state.json")
    finally:
        torch.set_num_threads(threads)
    setup = read_run_config(pilot_cfg.to_dict())
    fc = pilot_forecast(setup, log, reward_range=(0.0, 1.0))
    if setup.hparams.clip_mode != "cap":
        return setup, fc, {}
    stop = replace(setup, hparams=replace(setup.hparams, clip_mode="stop"))
    return setup, fc, {"version 12": pilot_forecast(stop, log, reward_range=(0.0, 1.0), fit=fc.fit),  # the same points
                       "version 13": uncapped(fc)}


EARLIER_MARGINS = {"version 12": "margin v12", "version 13": "margin v13"}  # where a result keeps each one's margin


def uncapped(fc):
    """The forecast `fc` as version 13 read it, for the grid and the margin (`collapse_grid`, `margin_grid`): its band
    edge dropped and its displacement, the config's and the pilot's own at the protocol's PILOT_T (every pilot of the
    protocol runs at it), uncapped (theory.collapse (2)); its bounds and text stay version 14's. `fc` itself where
    version 14 left it uncapped (the run's success not absorbing)."""
    if fc.band_edge is None or fc.displacement is None:
        return fc
    hp = fc.config.setup.hparams
    s = fc.drift_per_step / hp.lr
    return replace(fc, band_edge=None, displacement=collapse.displacement(s, hp.lr, hp.refresh_interval),
                   survived=None if fc.survived is None else collapse.displacement(s, hp.lr, PILOT_T))


def forecast_cells(fc, mu: float, lr_pilot: float, lrs, Ts) -> dict:
    """(lr, T) -> {forecaster: unstable?} from the pilot's forecast `fc` (module docstring): ours is
    unstable past the linear threshold or where the pilot's quantities say collapse (`predict.collapse_grid`);
    "version 4" is ours with version 4's collapse limit (the previous model, shown beside it)."""
    imp = fc.implications
    kappa = imp.stiffness_per_step.value if imp.stiffness_per_step is not None else math.nan
    usable = fc.max_safe_lr is not None and math.isfinite(kappa) and kappa > 0
    risk = collapse_grid(fc, lrs, Ts)
    hp = fc.config.setup.hparams  # version 4: D / H > S_4, no (7), (8), every clip's band edge a cap (as before version 13)
    earlier = {**pilot_entry(fc, lr_pilot), "signal_share": 1.0, "survived": None,
               "clip": None if hp.correction == "none" else hp.clip_high}
    out = {}
    for j, lr in enumerate(lrs):
        k = kappa * lr / lr_pilot
        t_c = int(critical_refresh_interval(k, 0.0, 1.0, mu, t_max=max(Ts))) or None if usable else None
        for i, T in enumerate(Ts):
            linear = t_c is not None and T >= t_c
            out[(lr, T)] = {"ours": linear or (risk is not None and bool(risk[i, j])),
                            "version 4": linear or collapses(earlier, lr, T, VERSION_4_SPREAD),
                            "continuous": math.isfinite(k) and k * T >= 1 - mu,
                            "always stable": False}
    return out


def run_combination(name: str, runs: Runs | None, lr_factors, Ts, seeds: int, dumped: dict | None = None) -> dict:
    """Pilot, grid (measured, or read from a --dump's `dumped` cells), forecasts and scores of one combination."""
    cfg = base_config(name)
    setup, fc, earlier = pilot(cfg)
    if dumped is None:
        lrs = [cfg.lr * f for f in lr_factors]
        grid = {(lr, T): replace(cfg, lr=lr, steps_per_generation=T) for lr in lrs for T in Ts}
        curves = runs.curves(grid, seeds, FIRST_SEED)
        measured = measured_cells(curves, lrs, Ts)
    else:
        curves = dumped_curves(dumped)
        lrs, Ts = sorted({lr for lr, _ in curves}), sorted({T for _, T in curves})
        measured = measured_cells(curves, lrs, Ts)
    forecasts = forecast_cells(fc, setup.hparams.momentum, cfg.lr, lrs, Ts)
    result = score(fc, measured, forecasts, lrs, Ts)
    margin = margin_grid(fc, lrs, Ts)  # predict._fall_chance (1): > 0 exactly where "ours" says unstable, checked here
    if margin is not None and any((margin[Ts.index(T), lrs.index(lr)] > 0) != f["ours"] for (lr, T), f in forecasts.items()):
        raise AssertionError(f"{name}: the fall chance's margin disagrees with ours' verdict (predict._fall_chance (1))")
    result.update(task=cfg.task, lrs=lrs, measured=measured, curves=curves, forecast=fc, predicted={c: f["ours"] for c, f in forecasts.items()},
                  initial=initial_rewards(curves, lrs, Ts),
                  margin=None if margin is None else {(lr, T): float(margin[i, j]) for i, T in enumerate(Ts) for j, lr in enumerate(lrs)})
    for key, earlier_fc in earlier.items():  # versions 13's and 14's changes (module docstring), judged against the
        # earlier version's verdict on the same cells; the fall chance's earlier held-out rounds read their margins
        result[key] = {c: f["ours"] for c, f in forecast_cells(earlier_fc, setup.hparams.momentum, cfg.lr, lrs, Ts).items()}
        m = margin_grid(earlier_fc, lrs, Ts)
        result[EARLIER_MARGINS[key]] = None if m is None else {
            (lr, T): float(m[i, j]) for i, T in enumerate(Ts) for j, lr in enumerate(lrs)}
    return result


def rescore(name: str, dumped: dict) -> tuple[dict, float]:
    """`run_combination` on a --dump entry's cells (the pilot re-run, the grid read) and its seconds: one job of a
    worker pool, on one thread (as `trainer_at_scale.Runs`'s runs: workers share the cores)."""
    torch.set_num_threads(1)
    started = time.perf_counter()
    return run_combination(name, None, (), (), 0, dumped), time.perf_counter() - started


def with_prior(name: str, results: dict) -> None:
    """Version 10 (module docstring): the plateau error of PRIOR_ROLES combination `name` in `results` becomes the
    task prior's (`prior_plateau_error`; version 12, SHRUNK_ROLES: `shrunk_plateau_error`, version 10's kept as
    "v10_plateau_error"), version 9's kept as "pilot_plateau_error"; unchanged without an earlier
    combination of its task in `results` (an unrecorded --only run: `main` refuses to record one)."""
    roles = {n: COMBINATIONS[n][4] for n in results}
    scored = prior_plateau_error(results, roles, name, rounds=ROUNDS)
    if scored is not None:
        result = results[name]
        result["pilot_plateau_error"], (result["plateau_error"], result["prior_fallbacks"]) = result["plateau_error"], scored
        if roles[name] in SHRUNK_ROLES:  # version 12: the prior shrunk, version 10's kept beside it
            result["v10_plateau_error"], (result["plateau_error"], result["prior_fallbacks"]) = (
                result["plateau_error"], shrunk_plateau_error(results, roles, name, rounds=ROUNDS, kappa=VERSION_12_KAPPA))


def final_reward_rule(role: str) -> str:
    """The final-reward forecast of a row of `role`, as its claim states it (versions 10 and 12)."""
    if role in SHRUNK_ROLES:
        return ("; final reward: the mean final reward of the stable cells at the cell's T in the task's combinations of "
                "earlier rounds, shrunk toward those with the cell's objective and then its optimizer and lr (version 12, "
                f"predict._prior (4), kappa {VERSION_12_KAPPA:g})")
    return ("; final reward: the mean final reward of the stable cells at the cell's T in the task's combinations of "
            "earlier rounds (version 10)" if role in PRIOR_ROLES else "")


def record_round_rows(results: dict, roles: dict, args: argparse.Namespace, cmd: str) -> None:
    """The held-out judgements that score a whole round (module docstring): the fall chance's (version 11, one row
    per CHANCE_ROLES round with an earlier one) and versions 13's and 14's changes (one per CLIP_ROLES and ABSORB_ROLES
    round); each recorded only
    where the results hold that round and every earlier one (`round_complete`), printed otherwise."""
    chance = (f"P = 1 / (1 + exp(-(a + b m))), (a, b) = ({VERSION_11_CHANCE[0]:g}, {VERSION_11_CHANCE[1]:g}) fitted on "
              "the seeds of the grids before confirm-12; m the log of the largest ratio of a rule of ours to its threshold")
    kinds = [(CHANCE_ROLES, fall_chance_claim, "fall-chance", lambda r: (
                 f"the chance a run falls (predict._fall_chance), held out on {r}: per-run Brier score below the earlier "
                 f"grids' fall rate and their lookup at the cell's lr factor and T, mean chance within {CALIBRATION_TOL} "
                 "of the share of seeds that fell"), chance),
             (CLIP_ROLES, change_claim, "clip-mode", lambda r: (
                 f"version 13's change held out on {r}: a clip that keeps the gradient (CISPO's) leaves the displacement "
                 "uncapped; both regime targets on more combinations than version 12's verdict on the same cells, and "
                 "fewer cells safe but unstable"),
              "D = T lr s past the clip's band edge for CISPO (theory.collapse.band_edge), capped there by version 12"),
             (ABSORB_ROLES, change_claim, "absorbed", lambda r: (
                 f"version 14's change held out on {r}: CISPO's displacement capped at the band edge where the run's "
                 "success is absorbing (p_h^G >= 1/2); both regime targets on more combinations than version 13's verdict "
                 "on the same cells, and more cells right"),
              "D capped at the band edge for CISPO where the pilot's held success rate p_h has p_h^G >= 1/2 "
              "(theory.collapse (10)), uncapped elsewhere as by version 13")]
    for rounds, judge, kind, claim, predicted in kinds:
        for held_out in rounds:
            started = time.perf_counter()
            judged = judge(results, roles, held_out)
            if judged is None:
                continue
            record(Claim(f"pilot-forecast-{kind}-{held_out}", claim(held_out), PREDICTABLE_GRPO), predicted=predicted,
                   measured=judged[0], passed=judged[1], quick=args.quick, started=started, command=cmd,
                   device=device_name(), write=not args.no_record and round_complete(results, held_out))


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the CI-sized run")
    parser.add_argument("--no-record", action="store_true", help="print only; leave RESULTS.md alone")
    parser.add_argument("--workers", type=int, default=1, help="runs at a time, each in its own process")
    parser.add_argument("--only", help="comma-separated combinations (default: the mode's)")
    parser.add_argument("--dump", help="write every combination's pilot quantities and seed curves to this JSON file")
    parser.add_argument("--fit-limit", metavar="DUMP", help="print the collapse limit S that fits a --dump of the "
                                                             "development combinations, and exit")
    parser.add_argument("--fit-weight", metavar="DUMP", help="print, per weight w of theory.collapse (9), the S "
                                                              "that fits the development combinations of a --dump and "
                                                              "its accuracy, and exit")
    parser.add_argument("--from-dump", metavar="DUMP", help="score the cells of a --dump (the pilots are re-run, "
                                                             "the grid is not)")
    args = parser.parse_args()
    if args.only and set(args.only.split(",")) - set(COMBINATIONS):
        parser.error(f"unknown combinations {sorted(set(args.only.split(',')) - set(COMBINATIONS))}; "
                     f"valid: {', '.join(COMBINATIONS)}")
    if args.from_dump:
        args.from_dump = read_dump(parser, args.from_dump, COMBINATIONS)
    if args.fit_weight:
        dump = read_dump(parser, args.fit_weight, COMBINATIONS)
        develop = {name: d for name, d in dump.items() if COMBINATIONS[name][4] in DEVELOPMENT}
        try:
            rows = fit_weight(develop, SHARE_WEIGHTS)
        except ValueError as err:
            parser.error(f"{args.fit_weight}: {err}")
        parser.exit(0, "".join(f"w = {w:.2f}: S = {S:.4g}, accuracy {accuracy:.1%} (the collapse part, on the "
                               f"{len(develop)} development combinations)\n" for w, S, accuracy in rows))
    if args.fit_limit:
        dump = read_dump(parser, args.fit_limit, COMBINATIONS)
        develop = {name: d for name, d in dump.items() if COMBINATIONS[name][4] in DEVELOPMENT}
        S, accuracy = fit_limit(develop)
        parser.exit(0, f"collapse limit S = {S:.4g} (accuracy {accuracy:.0%} on {', '.join(develop)}; "
                       f"left out: {', '.join(set(dump) - set(develop)) or 'none'})\n")
    return args


def main() -> None:
    args = arguments()
    mode = QUICK if args.quick else dict(combinations=tuple(COMBINATIONS), lr_factors=LR_FACTORS,
                                         refresh_intervals=REFRESH_INTERVALS, seeds=SEEDS)
    dumped = args.from_dump  # None, or the dump read by `arguments`
    if args.only:
        mode["combinations"] = tuple(args.only.split(","))
    elif dumped is not None:
        mode["combinations"] = tuple(dumped)
    mode["combinations"], missing = prior_order(mode["combinations"])
    if missing and not (args.no_record or args.quick):
        name, lack = next(iter(missing.items()))
        print(f"pilot_forecast.py: error: {name}'s row (version 10) needs every earlier grid of its task for the prior; "
              f"{len(lack)} are not in this run ({', '.join(lack[:3])}{', ...' if len(lack) > 3 else ''}): score it "
              "with them (--from-dump of a dump holding them), or pass --no-record", file=sys.stderr)
        raise SystemExit(2)
    runs = None if dumped is not None else Runs(args.workers)
    rescored = {}  # --from-dump: the combinations' pilots, re-run `workers` at a time
    if dumped is not None and args.workers > 1:
        names = mode["combinations"]
        with ProcessPoolExecutor(args.workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            rescored = dict(zip(names, pool.map(rescore, names, [dumped[n] for n in names])))
    cmd = "python paper_repro/pilot_forecast.py" + (" --quick" if args.quick else " --dump cells.json, then --from-dump cells.json")
    dump, parts, results = {}, [], {}
    for name in mode["combinations"]:
        started = time.perf_counter()
        if name in rescored:
            result, seconds = rescored[name]
            started -= seconds  # its pilot's time, spent in a worker
        else:
            result = run_combination(name, runs, mode["lr_factors"], mode["refresh_intervals"], mode["seeds"],
                                     None if dumped is None else dumped[name])
        if dumped is not None:
            started -= dumped[name]["wall_s"]  # the row's wall time: the grid's, measured when it was dumped
        dump[name] = dump_entry(result, COMBINATIONS[name][3], time.perf_counter() - started)
        if args.dump:
            Path(args.dump).write_text(json.dumps(dump, indent=1))
        role = COMBINATIONS[name][4]
        parts.append(cell_map(name, result))
        results[name] = result
        if role in PRIOR_ROLES:
            with_prior(name, results)
        record(Claim(f"pilot-forecast-{name}", f"forecast from a {PILOT_STEPS}-step pilot of {name} ({role}): regime "
                     f"of {len(result['measured'])} (lr, T) cells, accuracy >= {ACCURACY_MIN:.0%}, <= "
                     f"{SAFE_BUT_UNSTABLE_MAX} safe-but-unstable, max safe T within one grid step, plateau within "
                     f"{PLATEAU_TOL}, better than the continuous rule and 'always stable'", PREDICTABLE_GRPO),
               predicted=f"unstable past the linear threshold of the pilot's stiffness scaled to each lr, past the "
                         f"collapse limit (1 - z) D / H > S = {COLLAPSE_SPREAD:g} (D = T lr s capped by the clip's band edge "
                         f"after the first step where the clip switches the gradient off, and under CISPO's where the "
                         f"run's success is absorbing (p_h^G >= 1/2, theory.collapse (10)), s the pilot's drift per unit lr, H its token entropy, 1 - z the run's "
                         f"share of groups with signal, a quarter the pilot's and the rest its held success rate's; at "
                         f"least the pilot's own D when it kept its reward), or where the pilot's "
                         f"entropy rise on its first updates r passes {collapse.OVERSHOOT_RISE:g} scaled to the lr, "
                         f"r lr / lr_pilot" + final_reward_rule(role),
               measured=describe(result), passed=passed(result), quick=args.quick, started=started, command=cmd,
               device=device_name(), write=not args.no_record)
    roles = {name: COMBINATIONS[name][4] for name in results}
    record_round_rows(results, roles, args, cmd)
    final = " ".join(filter(None, (final_reward_reach(results), exact_forecast_reach(results), task_prior_reach(results, roles, rounds=ROUNDS),
                                   shrunk_reach(results, roles, rounds=ROUNDS, held_out=SHRUNK_ROLES, kappa=VERSION_12_KAPPA), change_reach(results, roles, 13), change_reach(results, roles, 14),
                                   window_progress(results), pilot_plateau_gap(results))))  # the readings with nothing to say give ""
    reach = (f"{final}\n\n{own_pilot_reach(results, PILOT_STEPS)}"
             f"\n\n{regime_reach(results, roles)}\n\n{fall_chance_reach(results, roles)}")
    print(reach)
    if not args.no_record and not args.quick:
        write_section(parts, reach)


if __name__ == "__main__":
    main()
