"""Prediction vs simulation for one bandit configuration (the `simulate` command).

Runs the torch bandit (expected dynamics, and finite-G stochastic runs over seeds when a group
size is given) and sets the theory next to it: the expected nonlinear trajectory, the plateau
(fixed point), the stationary reward fluctuation (discrete Lyapunov) and the regime.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gspo_dynamics._progress import Progress
from gspo_dynamics.predict import heavy_ball, predict_bandit
from gspo_dynamics.sim import BanditTask, simulate
from gspo_dynamics.theory.bandit import TwoArmBandit
from gspo_dynamics.theory.hyperparams import Hyperparams
from gspo_dynamics.theory.nonlinear import expected_trajectory

STATIONARY_FRACTION = 0.5  # the last half of the run is treated as stationary when it is stable


def compare_bandit(
    bandit: TwoArmBandit,
    hp: Hyperparams,
    *,
    steps: int,
    seeds: int,
    seed: int = 0,
    device: str = "cpu",
    progress: bool = True,
) -> dict[str, Any]:
    """Simulate `hp` on the two-armed bandit and compare with `predict_bandit`."""
    prediction = predict_bandit(bandit, hp)
    lr, mu, _ = heavy_ball(bandit, hp, prediction["fixed_point_reward"])
    theory = expected_trajectory(bandit, hp, lr, mu, steps)
    task = BanditTask.from_theory(bandit)

    expected = simulate(task, [hp], steps=steps, expected=True, device=device).mean_reward[:, 0, 0]
    report: dict[str, Any] = {
        "prediction": prediction,
        "steps": steps,
        "expected": {
            "final_reward": float(expected[-1]),
            "max_abs_gap_to_theory_trajectory": float(np.max(np.abs(expected - theory))),
        },
    }
    if hp.group_size is None:
        return report

    bar = Progress(steps, "simulate", enabled=None if progress else False)
    result = simulate(task, [hp], steps=steps, seeds=seeds, seed=seed, device=device,
                      progress=lambda t, total: bar.update(t))
    bar.close()
    runs = result.mean_reward[:, 0, :]  # (steps + 1, S)
    tail = runs[int(STATIONARY_FRACTION * steps):]
    mean_curve = runs.mean(axis=1)
    stderr_curve = runs.std(axis=1, ddof=1) / math.sqrt(seeds) if seeds > 1 else np.full_like(mean_curve, np.nan)
    report["stochastic"] = {
        "group_size": hp.group_size,
        "seeds": seeds,
        "plateau_mean": float(tail.mean()),
        "plateau_stderr": float(tail.mean(axis=0).std(ddof=1) / math.sqrt(seeds)) if seeds > 1 else None,
        "stationary_reward_std": float(tail.std(ddof=1)),
        "max_abs_gap_mean_vs_theory_trajectory": float(np.max(np.abs(mean_curve - theory))),
        "max_stderr_of_mean_curve": float(np.nanmax(stderr_curve)),
    }
    return report


def comparison_lines(report: dict[str, Any]) -> list[str]:
    """Readable prediction-vs-simulation table."""
    p = report["prediction"]

    def f(x):
        return "-" if x is None else (f"{x:.4g}" if isinstance(x, float) else str(x))

    lines = [
        f"{'quantity':34s} {'predicted':>12s} {'simulated':>12s}",
        f"{'plateau reward R* (expected map)':34s} {f(p['fixed_point_reward']):>12s} {f(report['expected']['final_reward']):>12s}",
        f"{'max |expected sim - theory| R_t':34s} {'0':>12s} {f(report['expected']['max_abs_gap_to_theory_trajectory']):>12s}",
    ]
    s = report.get("stochastic")
    if s:
        lines += [
            f"{'plateau reward (mean of seeds)':34s} {f(p['fixed_point_reward']):>12s} {f(s['plateau_mean']):>12s}  (+- {f(s['plateau_stderr'])} s.e.)",
            f"{'stationary reward std':34s} {f(p.get('stationary_reward_std')):>12s} {f(s['stationary_reward_std']):>12s}",
            f"{'max |mean curve - theory| R_t':34s} {'-':>12s} {f(s['max_abs_gap_mean_vs_theory_trajectory']):>12s}  (max s.e. {f(s['max_stderr_of_mean_curve'])})",
        ]
    lines += [
        f"regime: {p['regime']} (exact discrete), {p['regime_continuous']} (continuous rule)",
        f"critical refresh interval: {f(p['critical_refresh_interval'])} (exact), {f(p['critical_refresh_interval_from_start'])} (from start), "
        f"{f(p['critical_refresh_interval_continuous'])} (continuous)",
    ]
    return lines

