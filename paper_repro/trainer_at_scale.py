"""Claims at transformer scale: our trainer's runs (`gspo_dynamics.train`) against the theory.

Built-in causal transformer on the `count` task (binary reward; every prompt is the same empty
prompt, so the per-prompt success rate is the success rate p). Quick mode: the "100k" model on
CPU; full mode: the "10m" model with more seeds and steps, meant for a GPU (`--device cuda`).

  trainer-fit-r2        the seed-mean reward curve is fitted by the closed form (`fit_trajectory`,
                        exponential / oscillator by BIC) with R^2 >= R2_MIN at G = 4 and G = 16
  trainer-g-invariance  the deterministic trajectory is group-size invariant: the seed-mean curves
                        at G = 4 and 16, in BIN-step bins, differ by at most Z_SE standard errors
  trainer-one-over-g    the fluctuation scales as 1/G: Var over seeds of the logged reward, pooled
                        over steps, Var_4 / Var_16 = 16 / 4 within a factor VAR_RATIO_TOL
  trainer-refresh       at a large lr and T = T_BIG, no correction (`pg`, stale gradient applied as
                        is) loses monotone saturation while GRPO (token clip) and GSPO (sequence
                        clip) keep it. Per seed, a run loses it when its rollout drawdown exceeds
                        DRAWDOWN_MARGIN; pg's count of such seeds must exceed GRPO's and GSPO's
                        pooled count by a one-sided Fisher exact test at COLLAPSE_P (with
                        collapse_seeds seeds each), and the on-policy mean drawdown stay below the
                        margin. A seed either collapses within the first periods (reward to ~0,
                        entropy down, EOS lost) or saturates, so the mean drawdown over 4 seeds
                        (the first form of this claim) was a coin flip: it passed before the
                        sampler's random stream changed and failed after, with pg collapsing in
                        5 of 12 seeds vs 0 of 24 for GRPO and GSPO at the same settings. The
                        theory's reading of the on-policy curve is reported alongside (information;
                        the plateau cannot be told from the reward's bound, where it gives no threshold)
  trainer-refresh-threshold  predicted vs measured T_c of pg at each of the threshold_lrs.
                        Predicted: `fit.implications` of the seed-mean on-policy curve with the reward
                        range REWARD_RANGE (exact discrete, all forces stale; None when the plateau cannot
                        be told from the reward's bound: saturation has no restoring force, no threshold).
                        Measured: the smallest T of T_SWEEP at which pg loses monotone saturation
                        (`lost_saturation`: seed-mean rollout drawdown above the on-policy run's by
                        DRAWDOWN_MARGIN); None if none. The sweep runs the theory's schedule: every
                        step draws fresh groups from the sampling policy (steps_per_generation = T),
                        not num_iterations = T passes over one minibatch (the same draws reused T
                        times hold the sampling noise for a period, which the theory does not model).
                        PASS iff they agree within TC_FACTOR at every lr (`tc_agree`).
  trainer-zero-std      frac_reward_zero_std = E[p^G + (1 - p)^G]: measured vs the exact finite-
                        sample form [C(k, G) + C(n - k, G)] / C(n, G) at the step's k successes of n
  trainer-entropy       entropy-reward relation R = -a exp(H) + b with a > 0 (Cui et al. 2025,
                        arXiv:2505.22617), R^2 >= ENTROPY_R2_MIN on the seed-mean curves

Why the threshold row is stated this way: its earlier form ("T_c from the fit; pg at T = 16 > T_c
loses monotone saturation", lr 3e-3) predicted T_c = 3 and failed: pg stayed monotone at every T
in 2..32 at lrs 1e-3 and 3e-3 (128 steps, 4 seeds), where the linear map at the fitted stiffness
grows 14x per period at T = 16. That T_c read a threshold into a fit whose premises fail here: the
binary count task's plateau is its bound R = 1 (no fixed point with a restoring force: the stale
drive still points toward the bound), and the rise (tau ~ 2.6 steps) is faster than Adam's
linear heavy-ball regime allows at mu = b1 = 0.9 (tau >= 19). `implications` now checks both and
gives no threshold at a bound plateau; the unchecked reading is printed in the row for comparison.
What pg does show is a collapse within one refresh period once lr x T ~ 0.1-0.2: the entropy falls
(2.65 -> 1-2), completions lose EOS or get an odd count, the reward falls from ~0.36 to ~0 and stays
(all-zero groups give no gradient). 12 seeds, fresh groups each step: lr 1e-2: 0, 4, 9 of 12 seeds
at T = 8, 16, 32; lr 3e-3: 0 of 8 at T = 32, 5 of 8 at T = 64; lr 1e-3: 0 of 12 up to T = 32. The
one-logit reduced model cannot represent a large move that concentrates the policy on the wrong
answers, so the row fails where the collapse falls inside the sweep (lr 1e-2).

Full mode, first run (H100, 10m model, 2026-11-24): the five group-size rows pass with R^2 = 1.000
fits (the 10m model rises in a few steps to the bound). trainer-refresh fails in a way the quick
mode never showed: at lr 3e-3, T = 16 passes over one rollout, GSPO loses monotone saturation in
7 of 12 seeds (pg 4, GRPO 1; the cause is not established: the window-end log-ratio variance
of GSPO, 0.67, is GRPO's, 0.62); and pg's measured threshold (T = 16 at lr 1e-3, T = 4 at lr 3e-3) again meets a
prediction of "none" at a bound plateau. Both rows stay FAIL with their numbers.

    python paper_repro/trainer_at_scale.py --quick          # CPU, about 2-4 min on 2 busy cores
    python paper_repro/trainer_at_scale.py --device cuda    # full mode, on a GPU (without one, full mode
                                                            # records PENDING rows and runs the quick mode)
    python paper_repro/trainer_at_scale.py --pending        # full-mode rows marked PENDING (no GPU here)
    python paper_repro/trainer_at_scale.py --device cuda --workers 16 --only groups,refresh
                            # runs at a time in their own processes (a GPU holds many tiny runs at once),
                            # and the phases (groups, refresh, threshold) one command each if time is short

A run is a function of its config and seed on a given device, whatever the worker count.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import replace

import numpy as np
import torch
from scipy.stats import fisher_exact
from _results import PREDICTABLE_GRPO, Claim, device_name, load, mean_se, record

from gspo_dynamics._errors import TrainingDiverged
from gspo_dynamics.fit import fit_exponential, fit_trajectory, implications
from gspo_dynamics.theory.hyperparams import Adam, Hyperparams
from gspo_dynamics.train.config import TrainConfig
from gspo_dynamics.train.trainer import train

R2_MIN = 0.8  # seed-mean curves of few seeds keep binomial noise p(1-p)/(N G S): R^2 ~ 0.9 at best in quick mode
Z_SE = 3.0  # standard errors allowed between the two groups' binned mean curves (~ 1% two-sided per bin)
BIN = 8  # steps per bin of the curve comparison: per-seed bin means are close to normal
VAR_RATIO_TOL = 1.5  # Var_4 / Var_16 within [4 / 1.5, 4 x 1.5]: ~2.5 s.e. of a variance ratio with ~150 dof each
DRAWDOWN_MARGIN = 0.1  # reward drop (of per-rollout means) that counts as losing monotone saturation
COLLAPSE_P = 0.05  # one-sided Fisher exact test: pg's collapsed seeds vs GRPO's and GSPO's pooled
ZERO_STD_Z = 3.0  # standard errors allowed between measured and predicted zero-std fractions
ENTROPY_R2_MIN = 0.7  # the entropy-reward relation is empirical (Cui et al. report R^2 ~ 0.9+ on LLMs)
T_BIG = 16  # refresh interval past the threshold (num_iterations passes over one rollout)
T_SWEEP = (4, 8, 16, 32)  # refresh intervals of the threshold sweep (a factor-2 grid)
TC_FACTOR = 2.0  # the sweep resolves T_c to its grid ratio: a threshold between grid points shows at the next one
REWARD_RANGE = (0.0, 1.0)  # the count task's binary reward
PENDING_MEASURED = "pending (needs a GPU): full mode, model 10m"  # a placeholder row, refreshed by --pending

MODES = {
    "quick": dict(model="100k", seeds=4, steps=40, refresh_seeds=4, collapse_seeds=12, refresh_steps=64, prompts=4, lr=3e-4, refresh_lr=1e-2,
                  threshold_lrs=(1e-3, 3e-3, 1e-2), sweep_steps=96),
    "full": dict(model="10m", seeds=8, steps=200, refresh_seeds=4, collapse_seeds=12, refresh_steps=256, prompts=8, lr=1e-4, refresh_lr=3e-3,
                 threshold_lrs=(3e-4, 1e-3, 3e-3), sweep_steps=256),
}
CLAIMS = {
    "trainer-fit-r2": f"transformer reward curves (seed mean) fitted by the closed form with R^2 >= {R2_MIN}, G = 4 and 16",
    "trainer-g-invariance": f"transformer: seed-mean reward curves at G = 4 and 16 agree within {Z_SE:g} s.e. ({BIN}-step bins)",
    "trainer-one-over-g": f"transformer: seed variance of the reward Var_4 / Var_16 = 4 within a factor {VAR_RATIO_TOL}",
    "trainer-refresh": f"transformer, T = {T_BIG}, large lr: no correction (pg) loses monotone saturation, GRPO and GSPO keep it",
    "trainer-refresh-threshold": f"transformer, pg: T_c predicted from the on-policy fit (premises checked) = T_c measured by a "
                                 f"T sweep {T_SWEEP[0]}..{T_SWEEP[-1]}, within a factor {TC_FACTOR:g}, at each of 3 lrs",
    "trainer-zero-std": "transformer: frac_reward_zero_std = p^G + (1 - p)^G at the measured success rate",
    "trainer-entropy": f"transformer: R = -a exp(H) + b, a > 0, R^2 >= {ENTROPY_R2_MIN}",
}
SOURCES = {  # the rest are ours (the zero-std law) or found by id in _results.SOURCES
    "trainer-fit-r2": PREDICTABLE_GRPO, "trainer-g-invariance": PREDICTABLE_GRPO, "trainer-one-over-g": PREDICTABLE_GRPO,
    "trainer-refresh": PREDICTABLE_GRPO, "trainer-refresh-threshold": PREDICTABLE_GRPO,
    "trainer-entropy": "Cui et al. 2025 (arXiv 2505.22617)",
}


CURVE_KEYS = ("reward", "frac_reward_zero_std", "entropy", "ratios/token_log_var", "kl")  # kl: nan without a KL weight


def one_run(cfg: TrainConfig) -> dict[str, list[float]]:
    """The CURVE_KEYS series of one run of `cfg` (top level: a worker process can call it). A run that diverges
    (`TrainingDiverged`: its gradient stopped being finite, so its policy can no longer sample) is a collapse:
    its steps from then on log reward 0 and nothing else (nan)."""
    torch.set_num_threads(1)  # tiny models: more threads only spin, and workers share the cores
    with tempfile.TemporaryDirectory() as d:
        try:
            rows = train(cfg, d).rows
        except TrainingDiverged as exc:
            rows = exc.rows + [{"reward": 0.0}] * (cfg.steps - len(exc.rows))
    return {k: [row.get(k, math.nan) for row in rows] for k in CURVE_KEYS}


class Runs:
    """Runs batches of trainer configs, in `workers` processes when more than one (spawned, so each
    holds its own CUDA context; tiny models leave a GPU mostly idle, and several processes fill it)."""

    def __init__(self, workers: int):
        self.pool = None
        if workers > 1:
            self.pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))

    def curves(self, configs: dict, seeds: int, first_seed: int = 0) -> dict:
        """{key: {metric: array (seeds, steps)}} for each key's config run at seeds first_seed, ... (`seeds` of them)."""
        jobs = [(key, replace(cfg, seed=s)) for key, cfg in configs.items() for s in range(first_seed, first_seed + seeds)]
        started = time.perf_counter()
        if self.pool:
            futures = [self.pool.submit(one_run, cfg) for _, cfg in jobs]
            for done, _ in enumerate(as_completed(futures), 1):
                if done % max(1, len(jobs) // 8) == 0:
                    print(f"  {done}/{len(jobs)} runs done ({time.perf_counter() - started:.0f} s)", flush=True)
            results = [f.result() for f in futures]
        else:
            results = [one_run(cfg) for _, cfg in jobs]
        out = {key: {k: [] for k in CURVE_KEYS} for key in configs}
        for (key, _), series in zip(jobs, results):
            for k, v in series.items():
                out[key][k].append(v)
        return {key: {k: np.asarray(v, dtype=float) for k, v in m.items()} for key, m in out.items()}


def zero_std_exact(reward: np.ndarray, n: int, G: int) -> np.ndarray:
    """E[share of zero-std groups | k successes among n = N G samples], k = reward n:

        [C(k, G) + C(n - k, G)] / C(n, G)   (exchangeable draws: -> p^G + (1 - p)^G as n -> inf)."""
    k = np.rint(reward * n).astype(int)
    share = np.vectorize(lambda k: (math.comb(k, G) + math.comb(n - k, G)) / math.comb(n, G), otypes=[float])
    return share(k)  # exact integers divided once: C(128, 16) ~ 1e19 overflows int64, not a float64 quotient


def curve_gap(a: np.ndarray, b: np.ndarray, width: int) -> np.ndarray:
    """z per bin of `width` steps: (mean_a - mean_b) / sqrt(se_a^2 + se_b^2) of the per-seed bin
    means; a (S_a, steps), b (S_b, steps), S >= 2 seeds each (a trailing partial bin is dropped)."""
    bins = a.shape[1] // width
    ma, mb = (x[:, : bins * width].reshape(x.shape[0], bins, width).mean(-1) for x in (a, b))  # (S, bins)
    se2 = ma.var(0, ddof=1) / ma.shape[0] + mb.var(0, ddof=1) / mb.shape[0]
    return (ma.mean(0) - mb.mean(0)) / np.sqrt(np.maximum(se2, 1e-300))


def drawdown(reward: np.ndarray, T: int) -> float:
    """Largest fall of the per-rollout mean reward below its running maximum."""
    per_rollout = reward[: len(reward) // T * T].reshape(-1, T).mean(axis=1)
    return float(np.max(np.maximum.accumulate(per_rollout) - per_rollout))


def finite_mean(x, axis=None):
    """The mean of x's finite values (along `axis`), nan where there are none: a run that diverged
    (`one_run`) logs nan for every metric but the reward from then on."""
    x = np.asarray(x, dtype=float)
    finite = np.isfinite(x)
    with np.errstate(invalid="ignore"):
        return np.where(finite, x, 0.0).sum(axis=axis) / finite.sum(axis=axis)


def entropy_fit(H: np.ndarray, R: np.ndarray) -> tuple[float, float]:
    """(a, R^2) of the least-squares fit R = -a exp(H) + b over the points where both are finite; (nan, nan)
    with fewer than 3."""
    finite = np.isfinite(H) & np.isfinite(R)
    if finite.sum() < 3:
        return math.nan, math.nan
    H, R = np.asarray(H)[finite], np.asarray(R)[finite]
    X = np.column_stack([-np.exp(H), np.ones_like(H)])
    coef, *_ = np.linalg.lstsq(X, R, rcond=None)
    resid = R - X @ coef
    return float(coef[0]), float(1 - resid.var() / R.var())


PHASES = ("groups", "refresh", "threshold")  # each records its own rows: a GPU session can run them one by one


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the reduced CI-sized run (CPU)")
    parser.add_argument("--no-record", action="store_true", help="print only; leave the results alone")
    parser.add_argument("--device", default="auto", help="cpu | cuda | auto (default)")
    parser.add_argument("--pending", action="store_true", help="record the full-mode rows as PENDING (needs a GPU) and exit")
    parser.add_argument("--workers", type=int, default=1, help="runs at a time, each in its own process (default 1)")
    parser.add_argument("--only", default=",".join(PHASES), help=f"comma-separated phases to run (default all: {','.join(PHASES)})")
    args = parser.parse_args()
    phases = [p for p in args.only.split(",") if p]
    if args.workers < 1 or not phases or set(phases) - set(PHASES):
        parser.error(f"--workers must be >= 1 and --only a comma-separated subset of {','.join(PHASES)}")
    started = time.perf_counter()
    if args.pending:
        return record_pending(started)
    device = args.device if args.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    if not args.quick and args.device == "auto" and device == "cpu":
        # full mode is sized for a GPU (hours on 2 CPU cores): without one, the quick rows are what
        # this machine measures, and the full-mode rows stay PENDING (`--device cpu` forces it)
        print("no GPU: recording the full-mode rows as PENDING and running the quick mode")
        if not args.no_record:
            record_pending(started)
        args.quick = True
    mode = MODES["quick" if args.quick else "full"]
    suffix = "" if args.quick else "-gpu"
    where = device_name() if device == "cpu" else f"{device} ({torch.cuda.get_device_name(0)})"
    torch.set_num_threads(1)  # tiny models: more threads only spin on a shared 2-core machine
    cmd = "python paper_repro/trainer_at_scale.py" + (" --quick" if args.quick else f" --device {device}")
    base = TrainConfig(task="count", model=mode["model"], objective="grpo", steps=mode["steps"], prompts_per_step=mode["prompts"],
                       lr=mode["lr"], device=device)

    def emit(cid, *, predicted, measured, passed):
        record(Claim(cid + suffix, CLAIMS[cid], SOURCES.get(cid)), predicted=predicted, measured=measured,
               passed=passed, quick=args.quick, started=started, command=cmd, device=where, write=not args.no_record)

    runs = Runs(args.workers)
    for phase in phases:
        {"groups": group_claims, "refresh": refresh_claim, "threshold": threshold_claim}[phase](base, mode, runs, emit)


def group_claims(base: TrainConfig, mode: dict, runs: Runs, emit) -> None:
    """G = 4 vs 16: fit quality, G-invariance of the mean curve, 1/G of the variance, zero-std, entropy."""
    N = mode["prompts"]
    curves = runs.curves({G: replace(base, group_size=G) for G in (4, 16)}, mode["seeds"])
    fits, var, zs_meas, zs_pred, ent = {}, {}, [], [], []
    for G, c in curves.items():
        steps = np.arange(1, c["reward"].shape[1] + 1)
        fits[G] = fit_trajectory(steps, c["reward"].mean(axis=0))
        var[G] = float(c["reward"].var(axis=0, ddof=1).mean())
        zs_meas.append(c["frac_reward_zero_std"].ravel())
        zs_pred.append(zero_std_exact(c["reward"], N * G, G).ravel())
        logged = np.isfinite(c["entropy"])  # the seeds still running at each step
        ent.append(entropy_fit(finite_mean(c["entropy"], axis=0), finite_mean(np.where(logged, c["reward"], np.nan), axis=0)))
        print(f"G={G:2d}: fit {fits[G].model} R^2 {fits[G].r_squared:.3f} params {fits[G].params}; Var over seeds {var[G]:.4g}")
    emit("trainer-fit-r2", predicted=f"R^2 >= {R2_MIN}",
         measured=", ".join(f"G={G}: {f.model} R^2 = {f.r_squared:.3f} (R_inf {f.params['r_inf']:.2f})" for G, f in fits.items()),
         passed=all(f.r_squared >= R2_MIN for f in fits.values()))

    # exponential time constants of both mean curves (the massless closed form, fitted alike for comparison)
    taus = {G: fit_exponential(np.arange(1, c["reward"].shape[1] + 1), c["reward"].mean(0)).params["tau"] for G, c in curves.items()}
    z = curve_gap(curves[4]["reward"], curves[16]["reward"], BIN)
    gap_curve = float(np.max(np.abs(curves[4]["reward"].mean(0) - curves[16]["reward"].mean(0))))
    emit("trainer-g-invariance", predicted=f"mean_4(t) = mean_16(t): max |z| <= {Z_SE:g} over {BIN}-step bins",
         measured=f"max |z| = {np.max(np.abs(z)):.2f} (bins: {', '.join(f'{x:+.1f}' for x in z)}); max |mean_4 - mean_16| = "
                  f"{gap_curve:.3f}; exponential fits tau_4 = {taus[4]:.3g}, tau_16 = {taus[16]:.3g}",
         passed=bool(np.max(np.abs(z)) <= Z_SE))

    ratio = var[4] / var[16]
    emit("trainer-one-over-g", predicted="Var_4 / Var_16 = 4",
         measured=f"{ratio:.2f} (Var_4 = {var[4]:.3g}, Var_16 = {var[16]:.3g}; binomial sampling noise included, also 1/G)",
         passed=abs(math.log(ratio / 4)) <= math.log(VAR_RATIO_TOL))

    logged = np.isfinite(np.concatenate(zs_meas))  # a diverged run logs no zero-std share: its steps leave all four
    meas, pred = np.concatenate(zs_meas)[logged], np.concatenate(zs_pred)[logged]
    d_mean, d_se = mean_se(meas - pred)
    p_all = np.concatenate([curves[G]["reward"].ravel() for G in curves])[logged]  # zs_* run over curves in this order
    group = np.concatenate([np.full(curves[G]["reward"].size, G) for G in curves])[logged]
    plug = p_all**group + (1 - p_all) ** group
    emit("trainer-zero-std", predicted=f"{pred.mean():.4f} (plug-in p^G + (1-p)^G: {plug.mean():.4f})",
         measured=f"{meas.mean():.4f} (difference {d_mean:+.4f} +- {d_se:.4f}, p in [{p_all.min():.2f}, {p_all.max():.2f}])",
         passed=abs(d_mean) <= ZERO_STD_Z * d_se if d_se > 0 else d_mean == 0)

    emit("trainer-entropy", predicted=f"a > 0, R^2 >= {ENTROPY_R2_MIN}",
         measured=", ".join(f"G={G}: a = {a:.3g}, R^2 = {r2:.3f}" for G, (a, r2) in zip((4, 16), ent)),
         passed=all(a > 0 and r2 >= ENTROPY_R2_MIN for a, r2 in ent))


def refresh_claim(base: TrainConfig, mode: dict, runs: Runs, emit) -> None:
    """Refresh interval T_BIG at a large lr: no correction (pg) against GRPO and GSPO."""
    ref = replace(base, group_size=8, steps=mode["refresh_steps"], lr=mode["refresh_lr"])
    dd, drift, reading = refresh_sweep(ref, mode["collapse_seeds"], runs)
    lost = {k: int(np.sum(np.asarray(v) > DRAWDOWN_MARGIN)) for k, v in dd.items()}  # seeds that lost saturation
    n = mode["collapse_seeds"]
    clipped = lost["grpo"] + lost["gspo"]
    p_value = fisher_exact([[lost["pg"], n - lost["pg"]], [clipped, 2 * n - clipped]], alternative="greater").pvalue
    on_policy_ok = float(np.mean(dd["on-policy"])) < DRAWDOWN_MARGIN
    emit("trainer-refresh", predicted=f"seeds losing monotone saturation (drawdown > {DRAWDOWN_MARGIN}): pg more than GRPO and "
                                      f"GSPO pooled (one-sided Fisher exact p < {COLLAPSE_P}); on-policy mean drawdown < "
                                      f"{DRAWDOWN_MARGIN} (theory's reading of the on-policy fit: {reading})",
         measured="seeds lost " + ", ".join(f"{k} {c}/{n}" for k, c in lost.items()) + f" (Fisher p = {p_value:.2g}); mean drawdown "
                  + ", ".join(f"{k} {np.mean(v):.3f}" for k, v in dd.items())
                  + f" (lr {ref.lr:g}, T = {T_BIG}); window-end Var log(pi/pi_old) " + ", ".join(f"{k} {v:.3g}" for k, v in drift.items()),
         passed=p_value < COLLAPSE_P and on_policy_ok)


def threshold_claim(base: TrainConfig, mode: dict, runs: Runs, emit) -> None:
    """The refresh threshold of pg, predicted vs measured, at each of the threshold_lrs."""
    sweeps = [replace(base, group_size=8, steps=mode["sweep_steps"], lr=lr) for lr in mode["threshold_lrs"]]
    results = threshold_sweep(sweeps, mode["refresh_seeds"], runs)
    preds = [f"lr {cfg.lr:g}: {p['text']}" for cfg, (p, _) in zip(sweeps, results)]
    meas = [f"lr {cfg.lr:g}: T_c {m['t_c'] or f'> {T_SWEEP[-1]}'} ({m['text']})" for cfg, (_, m) in zip(sweeps, results)]
    agree = [tc_agree(p["t_c"], m["t_c"]) for p, m in results]
    emit("trainer-refresh-threshold", predicted="; ".join(preds),
         measured="; ".join(meas) + f" (pg, fresh groups every step, vs on-policy; {mode['refresh_seeds']} seeds x {mode['sweep_steps']} steps; "
                  f"agree: {', '.join('yes' if a else 'no' for a in agree)})",
         passed=all(agree))


def theory_reading(on_policy: np.ndarray, cfg: TrainConfig):
    """Fit the seed-mean on-policy curve and read the refresh threshold from it (`fit.implications`, exact
    discrete, all forces stale, premises checked with REWARD_RANGE): (T_c or None, the unchecked T_c,
    a one-line summary)."""
    fit = fit_trajectory(np.arange(1, on_policy.shape[1] + 1), on_policy.mean(0))
    hp = Hyperparams(lr=cfg.lr, optimizer=Adam(beta1=cfg.beta1, beta2=cfg.beta2), refresh_interval=1)
    imp, unchecked = implications(fit, hp, reward_range=REWARD_RANGE), implications(fit, hp).critical_refresh_interval
    why = []
    if imp.interior_plateau is False:
        why.append(f"plateau {imp.plateau} not told from the reward's bound: no restoring force")
    if imp.linear_regime is False:
        why.append(f"decay {imp.decay_rate}/step > Adam's linear reach {-math.log(cfg.beta1) / 2:.3g}")
    text = (f"T_c {imp.critical_refresh_interval or 'none'} ({fit.model} R^2 {fit.r_squared:.3f}; "
            + "; ".join(why + [f"unchecked reading T_c = {unchecked}"]) + ")")
    return imp.critical_refresh_interval, unchecked, text


def lost_saturation(pg: np.ndarray, T: int, on_policy: np.ndarray) -> tuple[bool, float, float]:
    """pg (seeds, steps) at refresh interval T against the on-policy runs (seeds, steps): (lost, excess
    drawdown, final-reward deficit), both seed means; lost when the excess drawdown exceeds DRAWDOWN_MARGIN.
    The deficit (information) compares pg's last rollout, drawn at step k = S - T, with the on-policy
    reward at that step (steps k - 1 .. k + 1): a positive one with no drawdown is a slower rise, not a loss."""
    excess = np.mean([drawdown(r, T) for r in pg]) - np.mean([drawdown(r, 1) for r in on_policy])
    k = pg.shape[1] // T * T - T
    deficit = on_policy[:, max(k - 1, 0) : k + 2].mean() - pg[:, k].mean()
    return bool(excess > DRAWDOWN_MARGIN), float(excess), float(deficit)


def tc_agree(predicted: int | None, measured: int | None) -> bool:
    """Predicted T_c (None: no threshold) vs the measured grid point (None: none up to T_SWEEP[-1]) within
    TC_FACTOR: the true threshold lies in (previous grid point, measured], so the prediction must lie in
    (previous / TC_FACTOR, measured x TC_FACTOR]; a measured None needs a prediction above T_SWEEP[-1] / TC_FACTOR."""
    if measured is None:
        return predicted is None or predicted > T_SWEEP[-1] / TC_FACTOR
    if predicted is None:
        return False
    i = T_SWEEP.index(measured)
    previous = T_SWEEP[i - 1] if i else 1
    return previous / TC_FACTOR < predicted <= measured * TC_FACTOR


def threshold_sweep(sweeps: list[TrainConfig], seeds: int, runs: Runs) -> list[tuple[dict, dict]]:
    """On-policy runs of each config (the theory's reading) and pg at every T of T_SWEEP (fresh groups
    every step, steps_per_generation = T), all in one batch: per config, (predicted, measured) dicts
    with the T_c (None: none) and a summary."""
    configs = {(i, 0): cfg for i, cfg in enumerate(sweeps)}
    configs |= {(i, T): replace(cfg, objective="pg", steps_per_generation=T) for i, cfg in enumerate(sweeps) for T in T_SWEEP}
    curves = runs.curves(configs, seeds)
    results = []
    for i, cfg in enumerate(sweeps):
        on_policy = curves[(i, 0)]["reward"]
        t_c, unchecked, text = theory_reading(on_policy, cfg)
        t_meas, cells = None, []
        for T in T_SWEEP:
            lost, excess, deficit = lost_saturation(curves[(i, T)]["reward"], T, on_policy)
            cells.append(f"T={T}: {excess:+.2f}/{deficit:+.2f}")
            if lost and t_meas is None:
                t_meas = T
        print(f"lr {cfg.lr:g}: predicted {text}; measured {t_meas} (excess drawdown / final deficit: {', '.join(cells)})")
        results.append((dict(t_c=t_c, unchecked=unchecked, text=text),
                        dict(t_c=t_meas, text="excess drawdown/deficit " + ", ".join(cells))))
    return results


def refresh_sweep(ref: TrainConfig, seeds: int, runs: Runs):
    """On-policy runs of `ref` and pg / GRPO / GSPO at T = T_BIG (num_iterations), in one batch:
    (per-seed drawdowns, window-end token log-ratio variances, the theory's reading of the on-policy curve)."""
    objectives = ("pg", "grpo", "gspo")  # at T = 1 all three are the same update (ratio = 1)
    curves = runs.curves({"on-policy": ref} | {obj: replace(ref, objective=obj, num_iterations=T_BIG) for obj in objectives}, seeds)
    on_policy = curves["on-policy"]["reward"]
    dd = {"on-policy": [drawdown(r, 1) for r in on_policy]}
    reading = theory_reading(on_policy, ref)[2]
    drift = {}  # Var of the token log-ratio log pi_theta / pi_old at the window's last step (j = T - 1)
    for obj in objectives:
        dd[obj] = [drawdown(r, T_BIG) for r in curves[obj]["reward"]]
        drift[obj] = float(finite_mean(curves[obj]["ratios/token_log_var"][:, T_BIG - 1 :: T_BIG]))
    print(f"lr {ref.lr:g}: drawdowns", {k: [round(x, 3) for x in v] for k, v in dd.items()}, "window-end log-ratio var", drift)
    return dd, drift, reading


def record_pending(started: float) -> None:
    """Full-mode rows PENDING (their claim text refreshed), unless a full-mode result is already there."""
    present = {i for i, row in load()[0].items() if row["measured"] != PENDING_MEASURED}
    for cid, text in CLAIMS.items():
        if cid + "-gpu" in present:
            continue
        record(Claim(cid + "-gpu", text, SOURCES.get(cid)), predicted="see the quick row",
               measured=PENDING_MEASURED, passed=False, quick=False, started=started,
               command="python paper_repro/trainer_at_scale.py --device cuda", device="none yet (needs a GPU)",
               verdict="PENDING")


if __name__ == "__main__":
    main()
