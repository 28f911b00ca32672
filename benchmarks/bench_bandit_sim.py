"""Benchmark: throughput of the batched torch bandit simulator against a plain Python loop.

Both run the same two-arm update (logits (0, z), rewards (0, 1), only z trained; pi(1) = p = sigmoid(z)):

    z_s <- z                         every T steps (t % T == 0, t = 0, 1, ...)
    g    = (1/G) sum_i A_i (1[a_i = 1] - p_s),  a_i ~ pi_s,  A_i = r_i - mean_j r_j    (correction "none")
         - beta p (1 - p) (z - z_ref)                                                  (exact KL at pi)
    v   <- mu v + g,   z <- z + lr v                                                   (heavy-ball SGD)

The stale gradient d log pi_s(a) / dz = 1[a = 1] - p_s is taken at the sampling policy, as the
"pg" loss does for correction "none". Expected mode (G -> infinity) replaces the G samples by
both actions weighted by pi_s(a), with A_a = r_a - p_s. `simulate` does this for C configs x S
seeds at once; `loop_run` does one run at a time with scalar floats (`math` and `random` only).

Measured in runs x steps per second (a run is one config x seed), best of --repeats after a
warm-up: (1) stochastic G = 8, --configs x --seeds runs; (2) expected dynamics, --expected-configs
runs. The loop is timed on a subset of the runs (its cost per run-step does not depend on the
batch). Before timing, the script checks that the two agree:
  * stochastic, on the simulator's own uniforms: one loop step from the simulator's state
    (z, v, z_s, t) gives its next z to 1e-10, at every step of several runs;
  * expected mode: the same to 1e-10 on 200 of the configs, at every step;
  * with its own `random` stream the loop's mean z matches the simulator's within 5 standard errors.
Whole free-running trajectories are compared too and reported, not asserted: in oscillating or
unstable configs float64 rounding differences (~1e-16) compound and exceed 1e-10.
Run (about 30 s on 2 cores):

    PYTHONPATH=. python benchmarks/bench_bandit_sim.py [--write-results]

Prints one line per measurement and markdown rows; --write-results replaces the section
"Bandit simulator throughput" of benchmarks/RESULTS.md (other sections are kept).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
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
from gspo_dynamics.theory.hyperparams import SGD, Hyperparams

REF_LOGIT = -1.0  # z_ref of the two-arm task; runs start at pi_ref
PATH_TOL = 1e-10  # loop vs simulator on the same uniforms, and in expected mode (float64 rounding only)
TARGET_RATIO = 100.0  # simulator / loop throughput the simulator is meant to reach
MEAN_SIGMAS = 5.0  # loop vs simulator means, in standard errors of their difference
SECTION = "## Bandit simulator throughput"
WARM_UP_STEPS = 5  # the simulator's warm-up call: a short run of the same batch
# torch intra-op threads. The Python loop uses one core, so one thread compares like with like;
# and on this shared 2-core machine, with other processes on the cores, torch's 2-thread pool
# made a step 20-40x slower than 1 thread (probed: 86 vs 4.5 ms per expected-mode step).
DEFAULT_THREADS = 1
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


def check_against_engine(configs, *, steps: int, seeds: int, expected: bool, seed: int = 1):
    """Loop vs the simulator's engine on the same random numbers: (max local |dz|, (C, S) free-running max |dz|).

    Local: one loop step from the engine's exact state (z, v, z_s, t) at every step, so float64
    rounding differences (~1e-16) cannot compound. Free-running: whole loop trajectories, where
    they do compound in oscillating or unstable configs. `simulate` steps this same engine.
    """
    engine = BanditEngine(BanditTask.two_arm(ref_logit=REF_LOGIT), configs, seeds=seeds, expected=expected, seed=seed)
    mirror = torch.Generator().manual_seed(seed)  # replays the engine's draws: u of shape (S, P, G) per step

    def z_of(logits):  # (C, S, 1, 2) -> (C, S); l0 stays 0
        return (logits[..., 0, 1] - logits[..., 0, 0]).tolist()

    z, v, z_s, u = [z_of(engine.logits)], [], [], []
    for _ in range(steps):
        v.append(engine.moment1[..., 0, 1].tolist())
        z_s.append(z_of(engine.sampling_logits))
        u.append([] if expected else torch.rand((seeds, 1, BASE.group_size), generator=mirror, dtype=torch.float64))
        engine.step()
        z.append(z_of(engine.logits))
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


def measure(name, configs, *, seeds, steps, expected, loop_runs, repeats, threads=None, general=True):
    """(row dict) simulator and loop rates in runs x steps / s (the loop is single-threaded Python)."""
    runs = len(configs) * seeds
    previous = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    task = BanditTask.two_arm(ref_logit=REF_LOGIT)

    def run_sim(n_steps: int, engine: str = "auto") -> None:  # "auto" takes the fused two-arm engine here
        simulate(task, configs, steps=n_steps, seeds=seeds, expected=expected, record_every=n_steps, engine=engine)

    sim_s = best_time(lambda: run_sim(steps), repeats, warm_up=lambda: run_sim(WARM_UP_STEPS))
    general_s = best_time(lambda: run_sim(steps, "general"), max(1, repeats // 2),
                          warm_up=lambda: run_sim(WARM_UP_STEPS, "general")) if general else float("nan")
    threads_used = torch.get_num_threads()
    torch.set_num_threads(previous)
    subset = [configs[i % len(configs)] for i in range(loop_runs)]  # loop_runs runs, cycling through the configs

    def loop_all() -> None:
        rng = random.Random(0)
        for hp in subset:
            loop_run(hp, steps, None if expected else rng.random)

    loop_s = best_time(loop_all, repeats)
    sim_rate, loop_rate, general_rate = runs * steps / sim_s, loop_runs * steps / loop_s, runs * steps / general_s
    print(f"{name}: simulator {runs} runs x {steps} steps best {sim_s:.3f}s = {sim_rate:,.0f} run-steps/s "
          f"(general engine {general_rate:,.0f}); "
          f"python loop {loop_runs} runs x {steps} steps best {loop_s:.3f}s = {loop_rate:,.0f} run-steps/s; "
          f"ratio {sim_rate / loop_rate:,.1f}x")
    return dict(name=f"{name} ({threads_used} torch thread{'s' if threads_used > 1 else ''})",
                batch=f"{len(configs)} configs x {seeds} seeds x {steps} steps", sim=sim_rate,
                loop=loop_rate, ratio=sim_rate / loop_rate, general=general_rate)


# ---- report ----------------------------------------------------------------------------------------


def machine() -> str:
    model = cpu_model()
    return (f"{model}, {os.cpu_count()} cores, torch {torch.__version__} ({torch.get_num_threads()} threads), "
            f"float64, {datetime.date.today().isoformat()}, 1-min load average {os.getloadavg()[0]:.1f} at the start")


def table(rows) -> list[str]:
    lines = ["| mode | batch | simulator (run-steps/s) | python loop (run-steps/s) | ratio | general engine (run-steps/s) | its ratio |",
             "|---|---|---|---|---|---|---|"]
    def general(r):
        return ("-", "-") if r["general"] != r["general"] else (f"{r['general']:,.0f}", f"{r['general'] / r['loop']:,.1f}x")

    lines += [f"| {r['name']} | {r['batch']} | {r['sim']:,.0f} | {r['loop']:,.0f} | {r['ratio']:,.1f}x | "
              f"{general(r)[0]} | {general(r)[1]} |" for r in rows]
    return lines


def write_results(rows, checks: list[str], host: str, args) -> None:
    body = "\n".join([
        SECTION,
        "",
        "`gspo_dynamics.sim.simulate` (two-arm task, ref logit -1, correction none, exact KL, heavy-ball SGD)",
        "against a plain per-run Python loop of the same update (scalar floats, `math`/`random` only),",
        "in runs x steps per second (run = one config x seed); best of "
        f"{args.repeats} after a warm-up, simulator timed end to end",
        "(engine construction included, recording only the last step). `simulate` dispatches this task to the fused",
        "two-arm engine (`sim/_fast.py`); the general autograd engine (`engine=\"general\"`, best of "
        f"{max(1, args.repeats // 2)}) is shown for comparison. Target ratio >= 100x: "
        + "; ".join(f"{r['name']}: " + ("met" if r["ratio"] >= TARGET_RATIO else "**not met**") for r in rows) + ".",
        "The last row uses both cores of the machine (torch's default thread count) on a larger batch; the",
        "loop it is compared with is the same single-threaded Python loop.",
        "",
        *table(rows),
        "",
        f"Machine: {host}. Other processes were sharing the machine (see the load average), so rates vary by "
        "tens of percent between runs; the torch thread count is explained in the script (DEFAULT_THREADS).",
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
    checked = expected[:: max(1, len(expected) // 200)]
    sto_local, sto_free = check_against_engine(stochastic[:4], steps=100, seeds=8, expected=False)
    exp_local, exp_free = check_against_engine(checked, steps=args.expected_steps, seeds=1, expected=True)
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
        "the one-step checks step the general engine; tests/sim/test_fast.py checks the fused engine against it "
        "(same uniforms, same paths to rounding; expected mode to 1e-12)",
    ]

    rows = [
        measure("stochastic, G = 8", stochastic, seeds=args.seeds, steps=args.steps, expected=False,
                loop_runs=args.loop_runs, repeats=args.repeats),
        measure("expected, G = inf", expected, seeds=1, steps=args.expected_steps, expected=True,
                loop_runs=args.loop_runs * 5, repeats=args.repeats),
        measure("stochastic, G = 8", stochastic_configs(4 * args.configs, rng), seeds=4 * args.seeds, steps=args.steps // 2,
                expected=False, loop_runs=args.loop_runs, repeats=3, threads=os.cpu_count(), general=False),
    ]
    print(f"total {time.perf_counter() - t0:.1f}s; rows for {RESULTS.name} ({host}):")
    print("\n".join(table(rows)))
    if args.write_results:
        write_results(rows, checks, host, args)


if __name__ == "__main__":
    main()
