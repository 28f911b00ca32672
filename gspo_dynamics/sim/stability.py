"""Stability boundaries measured by simulation alone, independent of the linear theory.

`simulated_critical_refresh_interval` runs the expected two-arm dynamics (float64) for every
refresh interval T = 1..t_max of several base configurations at once (configs = bases x T) and
reports the smallest T that the simulation finds unstable. The linear theory
(`theory.linear.critical_refresh_interval`) predicts the same number from the monodromy matrix;
the two are tested against each other, so neither may borrow from the other.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np
import torch

from gspo_dynamics._checks import positive_int
from gspo_dynamics._errors import ConfigError
from gspo_dynamics.sim._engine import BanditEngine
from gspo_dynamics.sim._task import BanditTask
from gspo_dynamics.theory.bandit import SATURATION_LOGIT, TwoArmBandit
from gspo_dynamics.theory.hyperparams import Adam, Hyperparams

STARTS: tuple[str, ...] = ("local", "reference")
# "local": initial offset from z*. Small enough that growth to GROWTH * DELTA = 1e-5 stays linear
# (second-order terms ~1e-5 relative), ten orders above float64 rounding of z (~1e-16).
DELTA = 1e-6
# "local": unstable iff |z - z*| exceeds GROWTH * DELTA in the final window. A stable period map
# shrinks the offset; the factor 10 absorbs the transient amplification that momentum and stale
# forces give even stable (non-normal) dynamics before they decay.
GROWTH = 10.0
# "reference": stable iff |z - z*| < CONVERGED throughout the final window.
CONVERGED = 1e-6
# Default horizon: PERIODS periods of the largest T (every smaller T gets more), at least
# MIN_HORIZON steps. A T whose period map grows offsets by rho per period is caught once
# rho^PERIODS > GROWTH, i.e. rho > 1.023: T within ~2% of neutral may be reported late.
PERIODS = 100
MIN_HORIZON = 2000
# Fixed point search: damped on-policy dynamics until |F(z, z)| < FP_TOL, steps capped at
# FP_MAX_STEP logits so one step cannot jump over a root pair; then FP_POLISH Newton steps with a
# central-difference slope (step FP_H: relative slope error ~FP_H^2) take z* to rounding level
# even where the slope is small (z* error ~ |F| / |dF/dz|).
FP_TOL = 1e-12
FP_MAX_ITER = 5000
FP_MAX_STEP = 0.5
FP_POLISH = 3
FP_H = 1e-3
FP_GROW, FP_SHRINK = 1.5, 0.5


def _two_arm(bandit) -> BanditTask:
    if isinstance(bandit, TwoArmBandit):
        return BanditTask.from_theory(bandit)
    if isinstance(bandit, BanditTask) and bandit.is_two_arm and bandit.num_prompts == 1:
        return bandit
    raise ConfigError(f"bandit must be a two-arm bandit (TwoArmBandit or BanditTask.two_arm), got {bandit!r}")


def _logits(z: torch.Tensor) -> torch.Tensor:
    """(C,) trained logit -> (C, 1, 1, 2) logits (0, z)."""
    return torch.stack([torch.zeros_like(z), z], dim=-1).reshape(-1, 1, 1, 2)


def fixed_points(task: BanditTask, hps: Sequence[Hyperparams], device="cpu") -> np.ndarray:
    """z* per config: where the on-policy expected force F(z, z) of the simulator vanishes.

    Runs the damped on-policy dynamics z <- z + lam F(z, z) (T = 1, no momentum) from the start
    logit, with a per-config step size lam that starts at the config's lr, grows by 1.5 after a
    step that reduces |F| or keeps its sign, and halves (rejecting the step) otherwise: on-policy
    gradient flow with a learning rate kept inside its own stability range, so it converges
    whatever the config's own lr and momentum do; Newton steps then polish z*. Raises
    ConfigError when there is no interior fixed point (kl_coef = 0, or the std normaliser
    outrunning the KL force: the policy saturates).
    """
    for i, hp in enumerate(hps):
        if hp.kl_coef == 0.0:
            raise ConfigError(f"config {i} has kl_coef = 0: without a KL penalty there is no interior fixed point")
    on_policy = [dataclasses.replace(hp, refresh_interval=1) for hp in hps]
    engine = BanditEngine(task, on_policy, expected=True, device=device)

    def force(z):
        return engine.ascent(_logits(z), _logits(z))[:, 0, 0, 1]

    z = engine.logits[:, 0, 0, 1].clone()
    F = force(z)
    lam = engine.cfg.lr.reshape(-1).clone()
    for _ in range(FP_MAX_ITER):
        active = F.abs() > FP_TOL
        if not bool(active.any()):
            break
        z_new = z + (lam * F).clamp(-FP_MAX_STEP, FP_MAX_STEP)
        F_new = force(z_new)
        accept = active & torch.isfinite(F_new) & ((torch.sign(F_new) == torch.sign(F)) | (F_new.abs() < F.abs()))
        z, F = torch.where(accept, z_new, z), torch.where(accept, F_new, F)
        lam = torch.where(accept, lam * FP_GROW, torch.where(active, lam * FP_SHRINK, lam))
    for _ in range(FP_POLISH):
        slope = (force(z + FP_H) - force(z - FP_H)) / (2.0 * FP_H)
        newton = -F / slope
        ok = (slope < 0.0) & (newton.abs() < FP_H)  # only near an attracting root
        z = torch.where(ok, z + newton, z)
        F = force(z)
    slope = (force(z + FP_H) - force(z - FP_H)) / (2.0 * FP_H)
    good = (F.abs() <= FP_TOL) & (slope < 0.0) & (z.abs() < SATURATION_LOGIT / 2)
    z_star = z.cpu().numpy()
    bad = np.flatnonzero(~good.cpu().numpy())
    if bad.size:
        i = int(bad[0])
        raise ConfigError(
            f"config {i} has no interior fixed point reachable from the start (the search ended at "
            f"z = {z_star[i]:.6g} with force {float(F[i]):.3g}): the policy saturates"
        )
    return z_star


def simulated_critical_refresh_interval(
    bandit,
    hps: Hyperparams | Sequence[Hyperparams],
    t_max: int,
    *,
    start: str = "local",
    horizon: int | None = None,
    device="cpu",
):
    """Smallest refresh interval T in 1..t_max whose expected two-arm dynamics are unstable; 0 if none.

    Every base config in `hps` is run with each T = 1..t_max (its own refresh_interval is
    replaced), all in one batch; the bases may differ in lr, optimizer, clip and kl_coef, and
    must agree on the fields listed in `sim._engine.SHARED_FIELDS`.

    start="local": find the fixed point z* (`fixed_points`), start at z* + DELTA with zero
        velocity, and call T unstable if |z - z*| exceeds GROWTH * DELTA anywhere in the final
        window (the last t_max steps: at least one full period of every T), or the run became
        non-finite. This measures the linear stability of the period map, as the monodromy
        theory does, by letting an offset grow or decay. Adam is refused: its step
        m_hat / sqrt(s_hat) is scale-free, so a tiny offset is not a linear perturbation.
    start="reference": start at the reference policy (z = z_ref, v = 0) and call T unstable
        unless |z - z*| < CONVERGED throughout the final window; blowing up (non-finite, or
        |z| > SATURATION_LOGIT) counts as unstable. This is the nonlinear question a user asks.

    horizon: steps per run; default max(MIN_HORIZON, PERIODS * t_max) (see PERIODS for the
        resolution this gives near the threshold).

    Returns an int array of shape (len(hps),), or an int for a single Hyperparams.
    """
    single = isinstance(hps, Hyperparams)
    bases = [hps] if single else list(hps)
    if start not in STARTS:
        raise ConfigError(f"start must be one of {', '.join(STARTS)}; got {start!r}")
    positive_int("t_max", t_max)
    horizon = max(MIN_HORIZON, PERIODS * t_max) if horizon is None else horizon
    if not (isinstance(horizon, int) and horizon > t_max):
        raise ConfigError(f"horizon must be an integer > t_max = {t_max}, got {horizon!r}")
    if start == "local":
        for i, hp in enumerate(bases):
            if isinstance(hp.optimizer, Adam):
                raise ConfigError(f"config {i} uses Adam, whose local dynamics are not linear; use start='reference'")
    task = _two_arm(bandit)
    z_star = np.repeat(fixed_points(task, bases, device), t_max)  # (n * t_max,) base-major
    configs = [dataclasses.replace(hp, refresh_interval=T) for hp in bases for T in range(1, t_max + 1)]
    z0 = z_star + DELTA if start == "local" else np.full_like(z_star, task.start_logits[0, 1])
    engine = BanditEngine(task, configs, expected=True, device=device, start_logits=_logits(torch.as_tensor(z0)).numpy())
    target = torch.as_tensor(z_star, dtype=engine.dtype, device=engine.device)

    blown = torch.zeros_like(target, dtype=torch.bool)
    worst = torch.zeros_like(target)  # max |z - z*| over the final window
    for t in range(1, horizon + 1):
        engine.step()
        z = engine.logits[:, 0, 0, 1]
        blown |= ~torch.isfinite(z) | (z.abs() > SATURATION_LOGIT)
        if t > horizon - t_max:
            worst = torch.maximum(worst, torch.nan_to_num((z - target).abs(), nan=torch.inf))
    if start == "local":
        unstable = blown | (worst > GROWTH * DELTA)
    else:
        unstable = blown | ~(worst < CONVERGED)
    unstable = unstable.reshape(len(bases), t_max).cpu().numpy()
    first = np.where(unstable.any(axis=1), unstable.argmax(axis=1) + 1, 0).astype(np.int64)
    return int(first[0]) if single else first
