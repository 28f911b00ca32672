"""Benchmark: throughput of the batched bandit simulator against plain per-run loops of the same update.

Both run the same two-arm update (logits (0, z), rewards (0, 1), only z trained; pi(1) = p = sigmoid(z)):

    z_s <- z                         every T steps (t % T == 0, t = 0, 1, ...)
    g    = (1/G) sum_i A_i (1[a_i = 1] - p_s),  a_i ~ pi_s,  A_i = r_i - mean_j r_j    (correction "none")
         - beta p (1 - p) (z - z_ref)                                                  (exact KL at pi)
    v   <- mu v + g,   z <- z + lr v                                                   (heavy-ball SGD)

The stale gradient d log pi_s(a) / dz = 1[a = 1] - p_s is taken at the sampling policy, as the
"pg" loss does for correction "none". Expected mode (G -> infinity) replaces the G samples by
both actions weighted by pi_s(a), with A_a = r_a - p_s. `simulate` does this for C configs x S
seeds at once, timed with its fastest engine (`engine="numba"`, the kernel `sim/_numba.py`, where
numba is installed, else the fused torch engine `sim/_fast.py`); `loop_run` does one run at a time
with scalar floats (`math` and `random` only).

Measured in runs x steps per second (a run is one config x seed), best of --repeats after a
warm-up: (1) stochastic G = 8, --configs x --seeds runs; (2) expected dynamics, --expected-configs
runs; (3) stochastic on both cores, a larger batch; (4) stochastic, one config x many seeds (every
run draws its own uniforms: drawing them takes about half of this row's time). Two per-run
baselines, each timed on a subset of the runs (their cost per run-step does not depend on the batch):
  * the scalar loop `loop_run`: the strongest one, and the one the >= 100x target is judged on;
  * the same torch update run per run: `simulate` on one config and one seed at a time
    (fused torch engine), as a user without batching would run it.
The batched torch engines (fused, and the general autograd one) are timed on the same batch too.
Before timing, the script checks that the simulator and the loop agree:
  * stochastic, on the simulator's own uniforms: one loop step from the timed engine's state
    (z, v, z_s, t) gives its next z to 1e-10, at every step of several runs;
  * expected mode: the same to 1e-10 on 200 of the configs, at every step;
  * with its own `random` stream the loop's mean z matches the simulator's within 5 standard errors.
Whole free-running trajectories are compared too and reported, not asserted: in oscillating or
unstable configs float64 rounding differences (~1e-16) compound and exceed 1e-10.
Run (about a minute on 2 cores):

    PYTHONPATH=. python benchmarks/bench_bandit_sim.py [--write-results]

Prints one line per measurement and markdown rows; --write-results replaces the section
"Bandit simulator throughput" of benchmarks/RESULTS.md (other sections are kept).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import importlib.metadata
import importlib.util
import math
import os
import random
import time
from typing import Callable

import numpy as np
import torch
from _results import RESULTS, cpu_model, replace_section

from gspo_dynamics.sim import BanditTask, simulate
from gspo_dynamics.sim._engine import BanditEngine
from gspo_dynamics.sim.bandit import engine_class
from gspo_dynamics.theory.hyperparams import SGD, Hyperparams

REF_LOGIT = -1.0  # z_ref of the two-arm task; runs start at pi_ref
PATH_TOL = 1e-10  # loop vs simulator on the same uniforms, and in expected mode (float64 rounding only)
TARGET_RATIO = 100.0  # simulator / scalar loop throughput the simulator is meant to reach
TORCH_LOOP_STEPS = 100  # steps of each run of the per-run torch baseline (one simulate call per run)
MEAN_SIGMAS = 5.0  # loop vs simulator means, in standard errors of their difference
SECTION = "## Bandit simulator throughput"
WARM_UP_STEPS = 5  # the simulator's warm-up call: a short run of the same batch
# torch intra-op threads (the numba kernel uses as many). The Python loop uses one core, so one thread
# compares like with like; and on this shared 2-core machine, with other processes on the cores, torch's
# 2-thread pool made a step 20-40x slower than 1 thread (probed: 86 vs 4.5 ms per expected-mode step).
DEFAULT_THREADS = 1
SIM_ENGINE = "numba" if importlib.util.find_spec("numba") else "fast"  # the simulator's fastest engine here
COMMAND = "cd /work/main && PYTHONPATH=. python benchmarks/bench_bandit_sim.py --write-results"

# the benchmark's stochastic configuration; the batch varies lr and beta around it
BASE = Hyperparams(
    lr=1.0,
    optimizer=SGD(momentum=0.9),
    refresh_interval=4,
    group_size=8,
    advantage="mean",
    correction="none",
    kl_coef=0.5,
    kl_estimator="exact",
)


# ---- the plain Python reference -------------------------------------------------------------------


def loop_run(
    hp: Hyperparams,
    steps: int,
    uniform: Callable[[], float] | None,
    *,
    z_ref: float = REF_LOGIT,
    z0: float = REF_LOGIT,
    v0: float = 0.0,
    z_s0: float = REF_LOGIT,
    t0: int = 0,
    trajectory: list[float] | None = None,
) -> float:
    """One two-arm run of steps t0 .. t0 + steps - 1 with scalar floats; returns the final z.

    uniform: the sampler's U(0, 1) source (stochastic mode, hp.group_size = G); None for the
    expected dynamics (hp.group_size must then be None). Action 1 is drawn iff u > pi_s(0), the
    simulator's inverse-CDF rule (searchsorted on cdf = (1 - p_s, 1)).
    z0, v0, z_s0, t0: the state to start from (default: a fresh run at pi_ref).
    trajectory: if given, z after every step is appended.
    """
    G, T, lr, mu, beta = hp.group_size, hp.refresh_interval, hp.lr, hp.momentum, hp.kl_coef
    z, v, z_s = z0, v0, z_s0
    for t in range(t0, t0 + steps):
        if t % T == 0:
            z_s = z
        p_s = 1.0 / (1.0 + math.exp(-z_s))
        if uniform is None:  # both actions, weight pi_s(a), advantage r_a - R_s (R_s = p_s)
            g = (1.0 - p_s) * (0.0 - p_s) * (0.0 - p_s) + p_s * (1.0 - p_s) * (1.0 - p_s)
        else:
            q0 = 1.0 - p_s  # pi_s(0)
            actions = [1 if uniform() > q0 else 0 for _ in range(G)]  # reward r_i = a_i
            mean = sum(actions) / G
            g = 0.0
            for a in actions:
                g += (a - mean) * (a - p_s)
            g /= G
        p = 1.0 / (1.0 + math.exp(-z))
        g -= beta * p * (1.0 - p) * (z - z_ref)
        v = mu * v + g
        z = z + lr * v
        if trajectory is not None:
            trajectory.append(z)
    return z


# ---- checks ----------------------------------------------------------------------------------------


def simulated_z(configs, *, steps, seeds, seed, record_every):
    """(n_records, C, S) z of `simulate` on the two-arm task, and the recorded steps."""
    result = simulate(
        BanditTask.two_arm(ref_logit=REF_LOGIT), configs, steps=steps, seeds=seeds, seed=seed,
        record_every=record_every, record_logits=True,
    )
    return result.logit_gap[..., 0], result.steps


def engine_state(engine) -> tuple[list, list, list]:
    """(z, v, z_s) of a two-arm engine, each a (C, S) nested list: the general engine keeps (C, S, 1, 2)
    logits and moments, the fused torch and numba engines the trained logit l1 and l0 as (C, S, 1)."""
    if isinstance(engine, BanditEngine):
        logits, sampling, v = engine.logits, engine.sampling_logits, engine.moment1[..., 1]
        z, z_s = logits[..., 1] - logits[..., 0], sampling[..., 1] - sampling[..., 0]
    else:
        z, z_s, v = engine.l1 - engine.l0, engine.l1_s - engine.l0, engine.moment1
    return tuple(np.asarray(x)[..., 0].tolist() for x in (z, v, z_s))


def check_against_engine(configs, *, steps: int, seeds: int, expected: bool, seed: int = 1, engine_cls=BanditEngine):
    """Loop vs a simulator engine on the same random numbers: (max local |dz|, (C, S) free-running max |dz|).

    Local: one loop step from the engine's exact state (z, v, z_s, t) at every step, so float64
    rounding differences (~1e-16) cannot compound. Free-running: whole loop trajectories, where
    they do compound in oscillating or unstable configs. Every engine draws u of shape (S, P, G) per step
    from a torch generator seeded with `seed`.
    """
    engine = engine_cls(BanditTask.two_arm(ref_logit=REF_LOGIT), configs, seeds=seeds, expected=expected, seed=seed)
    mirror = torch.Generator().manual_seed(seed)  # replays the engine's draws: u of shape (S, P, G) per step

    state = engine_state(engine)
    z, v, z_s, u = [state[0]], [], [], []
    for _ in range(steps):
        v.append(state[1])
        z_s.append(state[2])
        u.append([] if expected else torch.rand((seeds, 1, BASE.group_size), generator=mirror, dtype=torch.float64))
        engine.step()
        state = engine_state(engine)
        z.append(state[0])
    local, free = 0.0, np.zeros((len(configs), seeds))
    for c, hp in enumerate(configs):
        for s in range(seeds):
            draws = [] if expected else [ut[s, 0].tolist() for ut in u]  # steps x G uniforms of run (c, s)
            for t in range(steps):
                step_draws = None if expected else iter(draws[t]).__next__
                z_next = loop_run(hp, 1, step_draws, z0=z[t][c][s], v0=v[t][c][s], z_s0=z_s[t][c][s], t0=t)
                local = max(local, abs(z_next - z[t + 1][c][s]))
            stream = None if expected else iter([x for d in draws for x in d]).__next__
            path: list[float] = []
            loop_run(hp, steps, stream, trajectory=path)
            free[c, s] = max(abs(a - b[c][s]) for a, b in zip(path, z[1:]))
    return local, free


def check_means(hp: Hyperparams, steps: int, seeds: int, record_every: int) -> float:
    """Largest |mean z_loop - mean z_sim| in standard errors, over the recorded steps."""
    z_sim, recorded = simulated_z([hp], steps=steps, seeds=seeds, seed=2, record_every=record_every)
    z_sim = z_sim[:, 0, :]  # (n_records, S)
    z_loop = np.empty_like(z_sim)
    z_loop[0] = REF_LOGIT
    for s in range(seeds):
        rng = random.Random(1000 + s)
        path: list[float] = []
        loop_run(hp, steps, rng.random, trajectory=path)
        z_loop[1:, s] = np.array(path)[recorded[1:] - 1]
    diff = z_loop.mean(1) - z_sim.mean(1)
    stderr = np.sqrt((z_loop.var(1, ddof=1) + z_sim.var(1, ddof=1)) / seeds)
    return float(np.max(np.abs(diff[1:]) / stderr[1:]))


# ---- timing ----------------------------------------------------------------------------------------


def best_time(fn: Callable[[], object], repeats: int, warm_up: Callable[[], object] | None = None) -> float:
    (warm_up or fn)()  # first-call costs (allocator, thread pool, lazy imports) stay out of the timing
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def stochastic_configs(n: int, rng: np.random.Generator) -> list[Hyperparams]:
    """BASE with lr in [0.5, 1.5] and beta in [0.25, 1] (shared fields fixed, as one batch needs)."""
    return [
        dataclasses.replace(BASE, lr=float(lr), kl_coef=float(beta))
        for lr, beta in zip(rng.uniform(0.5, 1.5, n), rng.uniform(0.25, 1.0, n))
    ]


def expected_configs(n: int, rng: np.random.Generator) -> list[Hyperparams]:
    """G -> infinity sweep: lr in [0.1, 3], mu in {0, 0.5, 0.9}, T in 1..16, beta in [0.05, 1]."""
    return [
        dataclasses.replace(
            BASE, group_size=None, lr=float(lr), optimizer=SGD(momentum=float(mu)), refresh_interval=int(T),
            kl_coef=float(b),
        )
        for lr, mu, T, b in zip(
            rng.uniform(0.1, 3.0, n), rng.choice([0.0, 0.5, 0.9], n), rng.integers(1, 17, n), rng.uniform(0.05, 1.0, n)
        )
    ]


def measure(name, configs, *, seeds, steps, expected, loop_runs, repeats, threads=None, others=True, torch_runs=10):
    """(row dict) rates in runs x steps / s of the simulator (`SIM_ENGINE`), the batched torch engines (others=True),
    the scalar Python loop and the per-run torch loop (both single-threaded, on subsets of the runs)."""
    runs = len(configs) * seeds
    previous = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    task = BanditTask.two_arm(ref_logit=REF_LOGIT)

    def run_sim(n_steps: int, engine: str) -> None:
        simulate(task, configs, steps=n_steps, seeds=seeds, expected=expected, record_every=n_steps, engine=engine)

    def rate(engine: str, n_repeats: int) -> float:
        best = best_time(lambda: run_sim(steps, engine), n_repeats, warm_up=lambda: run_sim(WARM_UP_STEPS, engine))
        return runs * steps / best

    timed = engine_class(task, SIM_ENGINE).__name__
    sim_rate = rate(SIM_ENGINE, repeats)
    fast_rate = rate("fast", repeats) if others and timed != "TwoArmEngine" else float("nan")
    general_rate = rate("general", max(1, repeats // 2)) if others else float("nan")
    threads_used = torch.get_num_threads()
    torch.set_num_threads(previous)
    subset = [configs[i % len(configs)] for i in range(loop_runs)]  # loop_runs runs, cycling through the configs

    def loop_all() -> None:
        rng = random.Random(0)
        for hp in subset:
            loop_run(hp, steps, None if expected else rng.random)

    def torch_loop() -> None:  # the same update, one run (one config, one seed) per simulate call
        for i, hp in enumerate(subset[:torch_runs]):
            simulate(task, [hp], steps=TORCH_LOOP_STEPS, seeds=1, seed=i, expected=expected,
                     record_every=TORCH_LOOP_STEPS, engine="fast")

    loop_rate = loop_runs * steps / best_time(loop_all, repeats)
    torch_loop_rate = torch_runs * TORCH_LOOP_STEPS / best_time(torch_loop, max(1, repeats // 2))
    print(f"{name}: simulator ({timed}) {runs} runs x {steps} steps: {sim_rate:,.0f} run-steps/s "
          f"(batched fused torch {fast_rate:,.0f}, general {general_rate:,.0f}); scalar python loop {loop_rate:,.0f} "
          f"-> ratio {sim_rate / loop_rate:,.1f}x; per-run torch loop {torch_loop_rate:,.0f} -> ratio "
          f"{sim_rate / torch_loop_rate:,.0f}x")
    return dict(name=f"{name} ({threads_used} thread{'s' if threads_used > 1 else ''})",
                batch=f"{len(configs)} configs x {seeds} seeds x {steps} steps", engine=timed, sim=sim_rate,
                loop=loop_rate, ratio=sim_rate / loop_rate, torch_loop=torch_loop_rate,
                torch_ratio=sim_rate / torch_loop_rate, fast=fast_rate, general=general_rate)


# ---- report ----------------------------------------------------------------------------------------


def machine() -> str:
    model = cpu_model()
    numba = f"numba {importlib.metadata.version('numba')}" if importlib.util.find_spec("numba") else "no numba"
    return (f"{model}, {os.cpu_count()} cores, torch {torch.__version__} ({torch.get_num_threads()} threads), {numba}, "
            f"float64, {datetime.date.today().isoformat()}, 1-min load average {os.getloadavg()[0]:.1f} at the start")


ENGINE_FILES = {"NumbaEngine": "numba kernel (`sim/_numba.py`)", "TwoArmEngine": "fused torch (`sim/_fast.py`)"}


def table(rows) -> list[str]:
    def number(x: float) -> str:
        return "-" if x != x else f"{x:,.0f}"

    lines = ["| mode | batch | simulator engine | simulator | scalar Python loop | **ratio** (target >= 100x) "
             "| per-run torch loop | ratio | batched fused torch | batched general |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['name']} | {r['batch']} | {ENGINE_FILES.get(r['engine'], r['engine'])} | {number(r['sim'])} | "
              f"{number(r['loop'])} | **{r['ratio']:,.1f}x** | {number(r['torch_loop'])} | {r['torch_ratio']:,.0f}x | "
              f"{number(r['fast'])} | {number(r['general'])} |" for r in rows]
    return lines


def write_results(rows, checks: list[str], host: str, args) -> None:
    body = "\n".join([
        SECTION,
        "",
        "`gspo_dynamics.sim.simulate` (two-arm task, ref logit -1, correction none, exact KL, heavy-ball SGD),",
        "rates in runs x steps per second (run = one config x seed), best of "
        f"{args.repeats} after a warm-up, timed end to end",
        "(engine construction and the random numbers included, recording only the last step). `simulate` runs its",
        "fastest engine: the numba kernel (`engine=\"numba\"`, `sim/_numba.py`, optional extra `fast`) where numba is",
        "installed, else the fused torch engine (`sim/_fast.py`); the batched torch engines are shown for comparison",
        f"(the general autograd engine best of {max(1, args.repeats // 2)}). Two per-run baselines of the same update:",
        "the **scalar Python loop** (scalar floats, `math`/`random` only; the strongest, and the one the target is",
        "judged on) and the **per-run torch loop** (`simulate` on one config and one seed per call, fused torch",
        f"engine, {TORCH_LOOP_STEPS} steps per run). Both are single-threaded and timed on a subset of the runs.",
        "Target ratio vs the scalar loop >= 100x: "
        + "; ".join(f"{r['name']}: " + ("met" if r["ratio"] >= TARGET_RATIO else "**not met**") for r in rows) + ".",
        "The both-cores row uses both cores (threads = cores) on a larger batch; the loops it is compared with are",
        "the same single-threaded ones. The other rows share each step's uniforms across configs; the one-config row",
        "draws G = 8 of its own per run-step from torch's generator (about half of its time, probed with the numba",
        "engine), so the engines differ little there.",
        "",
        *table(rows),
        "",
        f"Machine: {host}. Other processes were sharing the machine (see the load average), so rates vary by "
        "tens of percent between runs; each is the best of its repeats. The thread count is explained in the "
        "script (DEFAULT_THREADS).",
        "",
        "Correctness checks run by the script before timing: " + "; ".join(checks) + ".",
        "",
        "Command:",
        "",
        f"    {COMMAND}",
        "",
    ])
    replace_section(SECTION, body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", type=int, default=64, help="stochastic mode: configs C")
    parser.add_argument("--seeds", type=int, default=256, help="stochastic mode: seeds S per config")
    parser.add_argument("--steps", type=int, default=200, help="stochastic mode: steps")
    parser.add_argument("--expected-configs", type=int, default=10_000, help="expected mode: configs")
    parser.add_argument("--expected-steps", type=int, default=200, help="expected mode: steps")
    parser.add_argument("--loop-runs", type=int, default=1000, help="runs the Python loop is timed on")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=DEFAULT_THREADS, help="torch threads; 0 keeps torch's default")
    parser.add_argument("--write-results", action="store_true", help=f"update {RESULTS.name}")
    args = parser.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    host = machine()  # before the work, so the load average is other processes' alone
    rng = np.random.default_rng(0)
    stochastic = stochastic_configs(args.configs, rng)
    expected = expected_configs(args.expected_configs, rng)

    t0 = time.perf_counter()
    timed = engine_class(BanditTask.two_arm(ref_logit=REF_LOGIT), SIM_ENGINE)  # the timed engine, checked against the loop
    checked = expected[:: max(1, len(expected) // 200)]
    sto_local, sto_free = check_against_engine(stochastic[:4], steps=100, seeds=8, expected=False, engine_cls=timed)
    exp_local, exp_free = check_against_engine(checked, steps=args.expected_steps, seeds=1, expected=True,
                                               engine_cls=timed)
    sigmas = max(check_means(hp, steps=100, seeds=2000, record_every=10) for hp in (BASE, stochastic[1]))
    n_ok = int(np.sum(exp_free <= PATH_TOL))
    print(f"checks ({time.perf_counter() - t0:.1f}s): same uniforms local max |dz| = {sto_local:.1e}, "
          f"free-running max |dz| = {sto_free.max():.1e}; expected mode local max |dz| = {exp_local:.1e}, "
          f"free-running max |dz| = {exp_free.max():.1e} ({n_ok}/{exp_free.size} configs <= {PATH_TOL:g}); "
          f"means max {sigmas:.2f} standard errors")
    if not (sto_local <= PATH_TOL and exp_local <= PATH_TOL and sigmas <= MEAN_SIGMAS):
        raise SystemExit("the Python loop and the simulator disagree; not timing")
    free_note = f"all {n_ok} agree to {exp_free.max():.0e}" if n_ok == exp_free.size else (
        f"{n_ok}/{exp_free.size} of them agree to {PATH_TOL:g} over all steps and the rest (oscillating or unstable, "
        f"where 1e-16 rounding differences compound) to {exp_free.max():.0e}"
    )
    checks = [
        "fed the simulator's own uniforms, one loop step from the simulator's state (z, v, z_s, t) reproduces "
        f"its next z "
        f"to {sto_local:.0e} at every step of 4 configs x 8 seeds x 100 steps (tol {PATH_TOL:g}); "
        f"whole free-running loop trajectories agree to {sto_free.max():.0e}",
        f"in expected mode the same one-step comparison gives {exp_local:.0e} (tol {PATH_TOL:g}) at every step of "
        f"{len(checked)} of the configs x {args.expected_steps} steps; free-running, {free_note}",
        f"with its own `random` stream the loop's mean z over 2000 seeds is within {sigmas:.1f} standard errors "
        f"of the simulator's at every 10th of 100 steps (2 configs; tol {MEAN_SIGMAS:g})",
        f"the one-step checks step the timed engine ({timed.__name__}); tests/sim/test_fast.py checks the fused torch "
        "engine against the general one and tests/sim/test_numba_engine.py the numba engine against the fused one "
        "(same uniforms, same paths to rounding; expected mode to 1e-12)",
    ]

    rows = [
        measure("stochastic, G = 8", stochastic, seeds=args.seeds, steps=args.steps, expected=False,
                loop_runs=args.loop_runs, repeats=args.repeats),
        measure("expected, G = inf", expected, seeds=1, steps=args.expected_steps, expected=True,
                loop_runs=args.loop_runs * 5, repeats=args.repeats),
        measure("stochastic, G = 8", stochastic_configs(4 * args.configs, rng), seeds=4 * args.seeds, steps=args.steps // 2,
                expected=False, loop_runs=args.loop_runs, repeats=3, threads=os.cpu_count(), others=False),
        measure("stochastic, G = 8, one config", stochastic_configs(1, rng), seeds=args.configs * args.seeds,
                steps=args.steps // 2, expected=False, loop_runs=args.loop_runs, repeats=3, others=False),
    ]
    print(f"total {time.perf_counter() - t0:.1f}s; rows for {RESULTS.name} ({host}):")
    print("\n".join(table(rows)))
    if args.write_results:
        write_results(rows, checks, host, args)


if __name__ == "__main__":
    main()
