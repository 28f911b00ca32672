"""Predictions for one configuration: fixed point, stiffness, thresholds, regime.

`predict_bandit` answers "is this configuration stable, and how does it approach its plateau?"
for the two-armed softmax bandit, from the theory alone (no simulation): the exact discrete
answer (monodromy of the linearised update), the continuous oscillator rule, and the from-start
check of the nonlinear expected map. Where the exact and continuous answers differ, both are
reported; the simulator follows the exact discrete map.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.theory import continuous, finite_group, fluctuations, linear
from gspo_dynamics.theory.bandit import TwoArmBandit, fixed_point, stiffness_partials
from gspo_dynamics.theory.hyperparams import Adam, Hyperparams, effective_sgd
from gspo_dynamics.theory.nonlinear import critical_refresh_interval_from_start

T_MAX = 10_000  # thresholds are searched for T <= T_MAX; None means stable for every such T


def _threshold(value) -> int | None:
    value = int(value)
    return None if value == linear.STABLE else value


def heavy_ball(bandit: TwoArmBandit, hp: Hyperparams, reward: float) -> tuple[float, float, float]:
    """(lr, mu, s_bar): the heavy-ball equivalent of the optimizer at the fixed point.

    For Adam the frozen second moment s_bar is the per-step gradient noise
    Var(g) = Var_k[g_k] / num_groups at the fixed point (finite G required).
    """
    if not isinstance(hp.optimizer, Adam):
        lr, mu = effective_sgd(hp, 0.0)
        return lr, mu, 0.0
    if hp.group_size is None:
        raise ConfigError(
            "Adam is analysed in its linear regime, where gradient noise sets the second moment: "
            "give a finite group size (--group-size), or use --optimizer sgd for G -> infinity"
        )
    s_bar = float(finite_group.group_gradient_variance(reward, hp.group_size, hp.advantage, hp.std_estimator, hp.std_eps))
    s_bar /= hp.num_groups
    lr, mu = effective_sgd(hp, s_bar)
    return lr, mu, s_bar


def predict_bandit(
    bandit: TwoArmBandit,
    hp: Hyperparams,
    *,
    t_max: int = T_MAX,
    from_start: bool = True,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Everything the theory says about one configuration, as a JSON-ready dict."""
    fp = fixed_point(bandit, hp)
    report: dict[str, Any] = {
        "testbed": "bandit",
        "fixed_point_reward": fp.reward,
        "fixed_point_logit": fp.logit if fp.interior else None,
        "interior_fixed_point": fp.interior,
        "notes": [],
    }
    if not fp.interior:
        report["notes"].append(
            "no interior fixed point: the reward drive beats the KL force everywhere, so the policy "
            "saturates (R -> 1) and every force vanishes there; linear thresholds do not apply"
        )
        for key in ("curvature", "curvature_stale", "curvature_fresh", "stiffness", "stiffness_stale",
                    "stiffness_fresh", "spectral_radius", "damping_ratio", "damping_ratio_continuous",
                    "critical_refresh_interval", "critical_refresh_interval_from_start",
                    "critical_refresh_interval_continuous", "critical_learning_rate"):
            report[key] = None
        report.update(regime="overdamped", regime_continuous="overdamped")
        return report

    a, b = stiffness_partials(fp.logit, bandit, hp)
    lr, mu, s_bar = heavy_ball(bandit, hp, fp.reward)
    T = hp.refresh_interval
    M = linear.monodromy(a, b, lr, mu, T)
    rho = float(linear.spectral_radius(M))
    m, c, k = (float(x) for x in continuous.oscillator_coefficients(a, b, lr, mu, T))
    t_exact = _threshold(linear.critical_refresh_interval(a, b, lr, mu, t_max))
    t_cont = _threshold(continuous.critical_refresh_interval(a, b, lr, mu, t_max))
    lr_crit_hb = float(linear.critical_learning_rate(a, b, mu, T))
    lr_scale = lr / hp.lr  # heavy-ball lr per unit of the optimizer's lr
    report.update(
        curvature=a + b,
        curvature_stale=a,
        curvature_fresh=b,
        effective_lr=lr,
        effective_momentum=mu,
        adam_second_moment=s_bar if isinstance(hp.optimizer, Adam) else None,
        stiffness=lr * (a + b),
        stiffness_stale=lr * a,
        stiffness_fresh=lr * b,
        oscillator={"mass": m, "damping": c, "stiffness": k},
        spectral_radius=rho,
        relaxation_steps=(-T / math.log(rho)) if 0.0 < rho < 1.0 else None,
        damping_ratio=_finite_or_none(linear.discrete_damping_ratio(M, T)),
        damping_ratio_continuous=_finite_or_none(continuous.damping_ratio(a, b, lr, mu, T)),
        regime=str(linear.discrete_regime(M)),
        regime_continuous=str(continuous.regime(a, b, lr, mu, T)),
        critical_refresh_interval=t_exact,
        critical_refresh_interval_continuous=t_cont,
        oscillatory_refresh_interval=_threshold(linear.oscillatory_refresh_interval(a, b, lr, mu, t_max)),
        oscillatory_refresh_interval_continuous=_threshold(continuous.oscillatory_refresh_interval(a, b, lr, mu, t_max)),
        critical_learning_rate=lr_crit_hb / lr_scale if math.isfinite(lr_crit_hb) else None,
    )
    if from_start:
        if progress:
            progress("from-start check: iterating the expected nonlinear map from pi_ref")
        fs = critical_refresh_interval_from_start(bandit, hp, lr, mu, t_max)
        report["critical_refresh_interval_from_start"] = _threshold(fs.critical_refresh_interval)
        report["from_start_outcome"] = fs.outcome
    else:
        report["critical_refresh_interval_from_start"] = None
        report["from_start_outcome"] = "not computed"
    if hp.group_size is not None:
        report["zero_variance_group_fraction"] = float(finite_group.zero_variance_probability(fp.reward, hp.group_size))
        report["stationary_reward_std"] = (
            math.sqrt(fluctuations.stationary_reward_variance(bandit, hp)) if rho < 1.0 - linear.RHO_TOL else None
        )
    report["notes"].extend(_notes(report, hp))
    return report


def _finite_or_none(x) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def _notes(r: dict[str, Any], hp: Hyperparams) -> list[str]:
    notes = []
    if r["critical_refresh_interval"] != r["critical_refresh_interval_continuous"]:
        notes.append(
            f"the continuous rule puts the refresh-interval threshold at {_fmt(r['critical_refresh_interval_continuous'])}, "
            f"the exact discrete map at {_fmt(r['critical_refresh_interval'])}; the simulation follows the exact discrete map"
        )
    if r["regime"] != r["regime_continuous"]:
        notes.append(f"at T = {hp.refresh_interval} the exact map is {r['regime']}, the continuous rule says {r['regime_continuous']}")
    fs, lin = r.get("critical_refresh_interval_from_start"), r["critical_refresh_interval"]
    if fs is not None and (lin is None or fs < lin):
        notes.append(
            f"from pi_ref the run fails to converge already at T = {fs} ({r['from_start_outcome']}), "
            f"before the local threshold {_fmt(lin)}: the transient leaves the basin of the fixed point"
        )
    return notes


def _fmt(t: int | None) -> str:
    return "none up to T = 10000" if t is None else f"T = {t}"


def summary_lines(report: dict[str, Any]) -> list[str]:
    """The readable form of `predict_bandit`'s report."""
    def fmt(x):
        if x is None:
            return "none (stable up to T = 10000)"
        return f"{x:.6g}" if isinstance(x, float) else str(x)

    lines = [f"fixed point reward      R* = {fmt(report['fixed_point_reward'])}"]
    if report["interior_fixed_point"]:
        lines += [
            f"curvature (stale/fresh)    {fmt(report['curvature_stale'])} / {fmt(report['curvature_fresh'])}",
            f"stiffness (per step)     k = {fmt(report['stiffness'])}  (stale {fmt(report['stiffness_stale'])}, fresh {fmt(report['stiffness_fresh'])})",
            f"oscillator               m = {fmt(report['oscillator']['mass'])}, c = {fmt(report['oscillator']['damping'])}, k = {fmt(report['oscillator']['stiffness'])}",
            f"regime at this T         {report['regime']} (exact discrete), {report['regime_continuous']} (continuous rule)",
            f"spectral radius          {fmt(report['spectral_radius'])}    damping ratio {fmt(report['damping_ratio'])} (exact), {fmt(report['damping_ratio_continuous'])} (continuous)",
            f"critical refresh T       {fmt(report['critical_refresh_interval'])} (exact, local)",
            f"                         {fmt(report['critical_refresh_interval_from_start'])} (from pi_ref, nonlinear: {report['from_start_outcome']})",
            f"                         {fmt(report['critical_refresh_interval_continuous'])} (continuous rule)",
            f"critical learning rate   {fmt(report['critical_learning_rate'])} (exact, at this T)",
        ]
    if "zero_variance_group_fraction" in report:
        lines.append(f"zero-variance groups     {fmt(report['zero_variance_group_fraction'])} at R*")
        if report["stationary_reward_std"] is not None:
            lines.append(f"stationary reward std    {fmt(report['stationary_reward_std'])} (linearised, discrete Lyapunov)")
    lines += [f"note: {n}" for n in report["notes"]]
    return lines


def as_json_ready(obj):
    """Convert numpy scalars (and nested containers of them) to plain Python for json.dumps."""
    if isinstance(obj, dict):
        return {k: as_json_ready(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [as_json_ready(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    return obj
