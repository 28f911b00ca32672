"""Prediction vs simulation (the `simulate` command), for the two testbeds.

Bandit (`compare_bandit`): runs the torch bandit (expected dynamics, and finite-G stochastic runs
over seeds when a group size is given) and sets the theory next to it: the expected nonlinear
trajectory, the plateau (fixed point), the stationary reward fluctuation (discrete Lyapunov) and
the regime.

Sequence (`compare_sequence`): trains a small policy on a synthetic sequence task with any loss of
the registry (`run_sequence_rl`) and sets the token- vs sequence-ratio theory next to the measured
ratio spread, clip fractions and ratio std, per refresh-window position (`predict.predicted_ratio_metrics`: the
token lognormal, GSPO's reward-aligned sequence law).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import math
from typing import Any

import numpy as np
import torch

from gspo_dynamics._errors import ConfigError
from gspo_dynamics._progress import Progress
from gspo_dynamics.predict import heavy_ball, predict_bandit
from gspo_dynamics.predict import NO_CLIP, predicted_ratio_metrics
from gspo_dynamics.sim._task import BanditTask
from gspo_dynamics.sim.bandit import simulate
from gspo_dynamics.sim.sequence import (
    Addition,
    CountParity,
    MoETransformerConfig,
    PatternMatch,
    SequenceRLConfig,
    SequenceTask,
    TabularPolicy,
    TinyMoETransformer,
    TinyTransformer,
    TransformerConfig,
    run_sequence_rl,
)
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



# ---- the sequence testbed ------------------------------------------------------------------------

SEQUENCE_TASKS: tuple[str, ...] = ("pattern", "count", "addition")
SEQUENCE_POLICIES: tuple[str, ...] = ("tabular", "transformer", "moe")
DEFAULT_LENGTH = 4  # L of the counting tasks: a few seconds on a CPU, and a uniform policy finds rewards
DEFAULT_DIGITS = 1  # D of addition: a + b with one-digit operands
DEFAULT_SEQUENCE_STEPS = 100
DEFAULT_TASK, DEFAULT_POLICY = SEQUENCE_TASKS[0], SEQUENCE_POLICIES[0]  # pattern, tabular
FINAL_FRACTION = 0.1  # "final" and "peak" rewards average this share of the steps (at least one window):
                      # one minibatch's reward is a noisy estimate
# the sequence policies' tensors are tiny: one intra-op thread is the fastest, and several are
# many times slower on a busy machine (measured: 4 s vs 19 s for the default MoE run)
CPU_THREADS = 1


def sequence_task(name: str, *, length: int | None = None, digits: int | None = None,
                  min_matches: int | None = None, min_count: int | None = None,
                  parity: str | None = None) -> SequenceTask:
    """A sequence task by name; a knob that the task does not have raises ConfigError.

    pattern: PatternMatch(length, min_matches), min_matches default ceil(length / 2)
    count:   CountParity(length, min_count, parity), min_count and parity default to CountParity's
    addition: Addition(n_digits=digits)
    length defaults to DEFAULT_LENGTH, digits to DEFAULT_DIGITS.
    """
    knobs = {"length": length, "digits": digits, "min_matches": min_matches, "min_count": min_count, "parity": parity}
    allowed = {"pattern": ("length", "min_matches"), "count": ("length", "min_count", "parity"),
               "addition": ("digits",)}
    if name not in allowed:
        raise ConfigError(f"sequence task must be one of {', '.join(SEQUENCE_TASKS)}; got {name!r}")
    extra = [k for k, v in knobs.items() if v is not None and k not in allowed[name]]
    if extra:
        raise ConfigError(f"the {name} task has no {extra[0]} (its knobs: {', '.join(allowed[name])})")
    if name == "addition":
        return Addition(n_digits=DEFAULT_DIGITS if digits is None else digits)
    length = DEFAULT_LENGTH if length is None else length
    if name == "pattern":
        half = (length + 1) // 2 if isinstance(length, int) and not isinstance(length, bool) else None
        return PatternMatch(length=length, min_matches=half if min_matches is None else min_matches)
    given = {"min_count": min_count, "parity": parity}  # None: CountParity's defaults
    return CountParity(length=length, **{k: v for k, v in given.items() if v is not None})


def sequence_defaults() -> dict[str, Any]:
    """What `simulate --testbed sequence` takes for a flag left out: the task, its knobs, the policy
    and the steps, then `SequenceRLConfig`'s fields (None: the objective's own, `ObjectiveDefaults`)."""
    config = {f.name: (f.default_factory() if f.default is dataclasses.MISSING else f.default)
              for f in dataclasses.fields(SequenceRLConfig) if f.name != "objective"}
    config["optimizer"] = config["optimizer"].name
    count = {f.name: f.default for f in dataclasses.fields(CountParity) if f.name in ("min_count", "parity")}
    return {"task": DEFAULT_TASK, "length": DEFAULT_LENGTH, "digits": DEFAULT_DIGITS, **count, "policy": DEFAULT_POLICY,
            "steps": DEFAULT_SEQUENCE_STEPS, **config}


def sequence_policy(name: str, task: SequenceTask, *, seed: int = 0):
    """A freshly initialised policy by name, sized for `task` (weights seeded by `seed`)."""
    if name not in SEQUENCE_POLICIES:
        raise ConfigError(f"sequence policy must be one of {', '.join(SEQUENCE_POLICIES)}; got {name!r}")
    if name == "tabular":
        return TabularPolicy(task.response_len, task.vocab_size)
    generator = torch.Generator().manual_seed(seed)
    sizes = {"vocab_size": task.vocab_size, "max_len": task.prompt_len + task.response_len}
    if name == "transformer":
        return TinyTransformer(TransformerConfig(**sizes), generator=generator)
    return TinyMoETransformer(MoETransformerConfig(**sizes), generator=generator)


@contextlib.contextmanager
def _cpu_threads(n: int | None):
    """torch's intra-op threads set to n for the block (None: unchanged), then restored."""
    before = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _mean(x) -> float | None:
    """nan-aware mean as a float, None when nothing is finite (JSON has no NaN)."""
    x = np.asarray(x, dtype=float)
    return float(np.nanmean(x)) if np.isfinite(x).any() else None


def compare_sequence(task: SequenceTask, policy, config: SequenceRLConfig, *, steps: int = DEFAULT_SEQUENCE_STEPS,
                     seed: int = 0, device: str = "cpu", progress: bool = True) -> dict[str, Any]:
    """Train `policy` on `task` with `run_sequence_rl` and set the measured ratio statistics and
    clip fractions next to the theory's (`theory.ratios`) at the measured log-ratio spread.

    Args:
        task, policy: a sequence task and policy (`sequence_task`, `sequence_policy`).
        config: a `SequenceRLConfig`.
        steps, seed, device: as in `run_sequence_rl`; progress: draw a bar on a terminal.

    Returns a JSON-ready dict (floats, None where a value is undefined).
    """
    bar = Progress(steps, "simulate", enabled=None if progress else False)
    with _cpu_threads(CPU_THREADS if torch.device(device).type == "cpu" else None):
        run = run_sequence_rl(task, policy, config, steps=steps, seed=seed, device=device,
                              progress=lambda t, total: bar.update(t))
    bar.close()
    cfg, j = run.config, run.window_position
    # a metric of the update is NaN at a step without one, and absent if no step updated
    m = collections.defaultdict(lambda: np.full(steps, np.nan), run.metrics)
    T = cfg.refresh_interval
    w = max(T, int(np.ceil(FINAL_FRACTION * steps)))  # steps averaged for "final" and "peak"

    def rewards(curve):
        smooth = np.convolve(curve, np.ones(w) / w, mode="valid")  # moving average over w steps
        return {"initial": float(curve[:w].mean()), "final": float(smooth[-1]), "peak": float(smooth.max())}

    predicted = predicted_ratio_metrics(m, cfg.objective, cfg.eps_low, cfg.eps_high, config=cfg,
                                        expected_reward=run.expected_reward)
    optimizer = {"name": cfg.optimizer.name, **dataclasses.asdict(cfg.optimizer)}
    report: dict[str, Any] = {
        "testbed": "sequence",
        "task": {"name": type(task).__name__, **dataclasses.asdict(task)},
        "policy": type(policy).__name__,
        "config": {**dataclasses.asdict(cfg), "optimizer": optimizer,  # with the objective's defaults resolved
                   "clip_low": cfg.eps_low, "clip_high": cfg.eps_high, "advantage_scale": cfg.scale},
        "steps": steps,
        "seed": seed,
        "response_length": run.response_len,
        "reward": rewards(m["reward"]),
        "expected_reward": None if run.expected_reward is None else {
            "initial": float(run.expected_reward[0]), "final": float(run.expected_reward[-1]),
            "peak": float(run.expected_reward.max())},
        "ratio_level": predicted["level"],
        "clip_fraction": {"measured": _mean(m["losses/clip_frac"]), "measured_low": _mean(m["losses/clip_frac_low"]),
                          "measured_high": _mean(m["losses/clip_frac_high"]),
                          "predicted": _mean(predicted["clip_frac"])},
        "ratio_std": {"measured": _mean(m["losses/ratio_std"]),
                      "predicted": _mean(predicted["ratio_std"])},
        "token_log_ratio": {"variance": _mean(m["ratios/token_log_var"]), "mean": _mean(m["ratios/token_log_mean"]),
                            "predicted_mean": _mean(predicted["token_log_mean"])},
        "sequence_log_ratio": {"variance": _mean(m["ratios/seq_log_var"]),
                               "predicted_variance": _mean(predicted["seq_log_var"])},
        "grad_norm": _mean(m["grad_norm"]),
        "routing_churn": _mean(m["routing/churn"]) if "routing/churn" in m else None,
        "by_window_position": [],
    }
    for position in range(T):
        at = j == position
        row = {"window_position": position,
               "token_log_ratio_variance": _mean(m["ratios/token_log_var"][at]),
               "sequence_log_ratio_variance": _mean(m["ratios/seq_log_var"][at]),
               "clip_fraction": _mean(m["losses/clip_frac"][at]),
               "clip_fraction_predicted": _mean(predicted["clip_frac"][at])}
        if "routing/churn" in m:
            row["routing_churn"] = _mean(m["routing/churn"][at])
        report["by_window_position"].append(row)
    return report


def sequence_lines(report: dict[str, Any]) -> list[str]:
    """Readable measured-vs-predicted table of a `compare_sequence` report."""

    def f(x):
        return "-" if x is None else (f"{x:.4g}" if isinstance(x, float) else str(x))

    c, task = report["config"], report["task"]
    knobs = ", ".join(f"{k}={v}" for k, v in task.items() if k not in ("name", "target"))
    r, clip = report["reward"], report["clip_fraction"]
    lines = [
        f"{task['name']}({knobs}), {report['policy']}, objective {c['objective']} ({report['ratio_level']} ratio, "
        + ("not clipped" if c["objective"] in NO_CLIP else f"clip {c['clip_low']:g}/{c['clip_high']:g}")
        + f"), T={c['refresh_interval']}, G={c['group_size']}, "
        f"N={c['prompts_per_step']}, {c['optimizer']['name']} lr={c['lr']:g}, {report['steps']} steps",
        f"reward (minibatch mean): initial {f(r['initial'])}, final {f(r['final'])}, peak {f(r['peak'])}",
    ]
    e = report["expected_reward"]
    if e:
        lines.append(f"exact expected reward:  initial {f(e['initial'])}, final {f(e['final'])}, peak {f(e['peak'])}")
    lines += [
        f"{'quantity (mean over steps)':34s} {'predicted':>12s} {'measured':>12s}",
        f"{'clip fraction':34s} {f(clip['predicted']):>12s} {f(clip['measured']):>12s}",
        f"{'ratio std':34s} {f(report['ratio_std']['predicted']):>12s} {f(report['ratio_std']['measured']):>12s}",
        f"{'token log-ratio mean (-sigma^2/2)':34s} {f(report['token_log_ratio']['predicted_mean']):>12s} "
        f"{f(report['token_log_ratio']['mean']):>12s}",
        f"{'sequence log-ratio var (sigma^2/L)':34s} {f(report['sequence_log_ratio']['predicted_variance']):>12s} "
        f"{f(report['sequence_log_ratio']['variance']):>12s}",
        f"token log-ratio variance sigma^2 (measured): {f(report['token_log_ratio']['variance'])}",
    ]
    if report["routing_churn"] is not None:
        lines.append(f"routing churn (share of decisions changed since sampling): {f(report['routing_churn'])}")
    lines.append(f"{'window position j':18s} {'sigma^2':>10s} {'clip pred':>10s} {'clip meas':>10s}"
                 + (f" {'churn':>8s}" if report["routing_churn"] is not None else ""))
    for row in report["by_window_position"]:
        lines.append(f"{row['window_position']:<18d} {f(row['token_log_ratio_variance']):>10s} "
                     f"{f(row['clip_fraction_predicted']):>10s} {f(row['clip_fraction']):>10s}"
                     + (f" {f(row['routing_churn']):>8s}" if "routing_churn" in row else ""))
    return lines
