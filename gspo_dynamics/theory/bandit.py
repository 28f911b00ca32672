"""The two-armed softmax bandit: the exact reduction of group-based policy gradient to one logit.

pi(1) = p = sigmoid(z), reward 1 for action 1 and 0 for action 0, so the expected reward is
R = p exactly. Reference policy pi_ref(1) = q = sigmoid(z_ref). The optimizer follows the ascent
direction F(z, z_s) of the objective E[r] - beta KL(pi || pi_ref), where z_s is the logit of the
sampling policy (refreshed every T steps) and z the current logit:

  reward drive, correction "none" (the stale gradient is applied as is):
      D = m(p_s)
  reward drive, importance ratio w = pi / pi_s with PPO clip (token = sequence on a bandit):
      D = m(p_s) [ w1 (1 - p) 1{w1 <= 1 + eps_high} + w0 p 1{w0 >= 1 - eps_low} ],
      w1 = p / p_s,  w0 = (1 - p) / (1 - p_s)
  KL (always fresh, evaluated at the current policy):
      exact:  K = -beta p (1 - p) (z - z_ref)          (d KL / dz, since log(p / (1-p)) = z)
      k3:     K = -beta (p - q)                        (E_pi[(1 - q_a / pi_a) d log pi_a / dz])

with m(p) the finite-group drive factor of `finite_group.drive_factor` (p (1 - p) for the mean
baseline at G -> infinity). F = D + K. Unclipped, the ratio turns the drive fresh except for the
stale group normaliser: D = m(p_s) p (1 - p) / (p_s (1 - p_s)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.theory import finite_group
from gspo_dynamics.theory.hyperparams import Hyperparams

# Logits beyond this distance from the reference are saturated in float64: p (1 - p) < 1e-17,
# every force vanishes below rounding, and a run that gets there does not come back.
SATURATION_LOGIT = 40.0


def sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(z, dtype=float)))


@dataclass(frozen=True, kw_only=True)
class TwoArmBandit:
    """Two-armed bandit with reward 1 for action 1: R = pi(1) = sigmoid(z)."""

    ref_logit: float = 0.0  # z_ref, pi_ref(1) = sigmoid(z_ref)
    init_logit: float | None = None  # z_0, the initial policy; None starts at pi = pi_ref

    def __post_init__(self) -> None:
        for name in ("ref_logit", "init_logit"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, (int, float)) and math.isfinite(value)):
                raise ConfigError(f"{name} must be a finite number, got {value!r}")
        if abs(self.ref_logit) > SATURATION_LOGIT / 2:
            raise ConfigError(f"ref_logit must be within +-{SATURATION_LOGIT / 2:g}, got {self.ref_logit}")

    @property
    def start_logit(self) -> float:
        return self.ref_logit if self.init_logit is None else self.init_logit


def _drive_factor(p, hp: Hyperparams):
    return finite_group.drive_factor(p, hp.group_size, hp.advantage, hp.std_estimator, hp.std_eps)


def _drive_factor_slope(p, hp: Hyperparams):
    """dm/dz = m'(p) p (1 - p)."""
    p = np.asarray(p, dtype=float)
    dm_dp = finite_group.drive_factor_derivative(p, hp.group_size, hp.advantage, hp.std_estimator, hp.std_eps)
    return dm_dp * p * (1.0 - p)


def reward_drive(z, z_s, hp: Hyperparams):
    """D(z, z_s), the expected reward drive (module docstring); broadcasts over arrays."""
    p, p_s = sigmoid(z), sigmoid(z_s)
    m = _drive_factor(p_s, hp)
    if hp.correction == "none":
        return m * np.ones_like(p)
    if hp.clip_mode != "stop":
        raise ConfigError(f"the bandit's drive models PPO's clip ('stop'), not clip_mode {hp.clip_mode!r} (CISPO's capped weight)")
    with np.errstate(divide="ignore", invalid="ignore"):
        w1, w0 = p / p_s, (1.0 - p) / (1.0 - p_s)
    up = np.where(w1 <= 1.0 + hp.clip_high, w1 * (1.0 - p), 0.0)
    down = np.where(w0 >= 1.0 - hp.clip_low, w0 * p, 0.0)
    return m * (up + down)


def kl_force(z, bandit: TwoArmBandit, hp: Hyperparams):
    """K(z), minus beta times the gradient of the KL term at the current policy."""
    p, q = sigmoid(z), sigmoid(bandit.ref_logit)
    if hp.kl_estimator == "exact":
        return -hp.kl_coef * p * (1.0 - p) * (np.asarray(z, dtype=float) - bandit.ref_logit)
    return -hp.kl_coef * (p - q)


def force(z, z_s, bandit: TwoArmBandit, hp: Hyperparams):
    """F(z, z_s) = D(z, z_s) + K(z): the expected ascent direction of one optimizer step."""
    return reward_drive(z, z_s, hp) + kl_force(z, bandit, hp)


def stiffness_partials(z_star, bandit: TwoArmBandit, hp: Hyperparams) -> tuple[float, float]:
    """(a, b) = (-dF/dz_s, -dF/dz) at z = z_s = z_star, analytically.

    none:        dF/dz_s = m'(p) p (1-p)                  dF/dz = dK/dz
    corrected:   dF/dz_s = m'(p) p (1-p) + m(p) (2p - 1)  dF/dz = m(p) (1 - 2p) + dK/dz
    dK/dz:       exact  -beta [p (1-p) (1-2p) (z - z_ref) + p (1-p)];   k3  -beta p (1-p)
    (the corrected drive at w = 1 is unclipped: the clip is inactive at the fixed point).
    """
    p = float(sigmoid(z_star))
    u = p * (1.0 - p)
    if hp.kl_estimator == "exact":
        dk = -hp.kl_coef * (u * (1.0 - 2.0 * p) * (z_star - bandit.ref_logit) + u)
    else:
        dk = -hp.kl_coef * u
    slope = float(_drive_factor_slope(p, hp))
    if hp.correction == "none":
        return -slope, -dk
    m = float(_drive_factor(p, hp))
    return -(slope + m * (2.0 * p - 1.0)), -(m * (1.0 - 2.0 * p) + dk)


@dataclass(frozen=True)
class FixedPoint:
    logit: float  # z*
    reward: float  # R* = sigmoid(z*)
    interior: bool  # False: no interior fixed point, the policy saturates (R* is then 1)


def fixed_point(bandit: TwoArmBandit, hp: Hyperparams) -> FixedPoint:
    """The fixed point reached from the start: the first root of F(z, z) = 0 above the start.

    F(z, z) = m(p) + K(z) is positive just above z_ref (the reward pulls up) and, when beta > 0,
    turns negative where the KL restoring force wins. With the std normaliser the drive decays
    like sqrt(p (1-p)) while the exact-KL force decays like p (1-p) (z - z_ref), so there can be
    no interior root: the policy then saturates (reported as interior=False, R* = 1).
    """
    if hp.kl_coef == 0.0:
        return FixedPoint(logit=math.inf, reward=1.0, interior=False)

    def on_policy(z):
        return float(force(z, z, bandit, hp))

    lo = bandit.ref_logit
    if on_policy(lo) <= 0.0:  # only possible at the boundary of the reward range
        return FixedPoint(logit=lo, reward=float(sigmoid(lo)), interior=True)
    grid = np.linspace(lo, lo + SATURATION_LOGIT, 4001)
    values = force(grid, grid, bandit, hp)
    p_grid = sigmoid(grid)
    # A zero where p rounds to 1 is saturation (every force underflows), not a root.
    ends = (values[1:] < 0.0) | ((values[1:] == 0.0) & (p_grid[1:] * (1.0 - p_grid[1:]) > 0.0))
    crossing = np.flatnonzero((values[:-1] > 0.0) & ends)
    if crossing.size == 0:
        return FixedPoint(logit=math.inf, reward=1.0, interior=False)
    i = crossing[0]
    lo_z, hi_z = grid[i], grid[i + 1]
    if on_policy(hi_z) >= 0.0:  # the vectorised and scalar evaluations differ by rounding at a grid root
        return FixedPoint(logit=float(hi_z), reward=float(sigmoid(hi_z)), interior=True)
    z_star = brentq(on_policy, lo_z, hi_z, xtol=1e-14, rtol=4 * np.finfo(float).eps)
    return FixedPoint(logit=z_star, reward=float(sigmoid(z_star)), interior=True)


def expected_map(z, v, z_s, bandit: TwoArmBandit, hp: Hyperparams, lr: float, momentum: float):
    """One heavy-ball step of the expected nonlinear dynamics: returns (z', v')."""
    v = momentum * v + force(z, z_s, bandit, hp)
    return z + lr * v, v
