"""Collapse by one large move: the policy's drift within a refresh window under Adam's normalised steps.

The linear model (`theory.linear`) describes small deviations around a fixed point with a restoring
force. Trainer runs show another failure: within one refresh period the policy moves so far from the
sampler that the next rollout draws from a different, often degenerate, policy (entropy falls, the
reward drops to 0 and all-zero groups stop the gradient). This module states the drift that governs it.

Adam moves parameter i by u_i = lr m_i / (sqrt(v_i) + eps) per step. With a steady gradient (the
sampler is frozen for the window, so every step's expected gradient is the same function of a slowly
moving theta) m_i / sqrt(v_i) -> sign(g_i) / sqrt(1 + (s_i / g_i)^2), s_i the gradient's noise: a
step of lr a_i, a_i in [0, 1] set by the signal-to-noise ratio, not by the gradient's size. A sampled
token's log-probability moves by Delta(y) = sum_i d log pi(y) / d theta_i u_i, the same direction at
every step of the window, so after j stale steps the log-ratio to the sampler is j Delta(y) to first
order and its spread over the sampler's tokens is

    sigma_j = j delta,    delta = lr s,                                              (1)

s = std_y(sum_i d log pi(y) / d theta_i a_i): the model's, the task's and the point of training's, not
the learning rate's or the refresh interval's. (Plain SGD has u_i = lr g_i: delta = lr |g| s', also
linear in lr at a fixed gradient, but it scales with the reward too; Adam's does not.)

A window is at risk when the spread at its last stale position, j = T - 1, passes a limit S:

    (T - 1) lr s > S    <=>    T > T_max = 1 + S / (lr s),    lr > lr_max = S / ((T - 1) s).   (2)

A ratio clip stops the push on a token (GRPO) or a sequence (GSPO) once its ratio leaves the band in
the direction of its advantage, so with a clip the coherent drift of the sampled tokens ends at the
band's edge, log(1 + eps_high); the window's spread is then min((T - 1) lr s, log(1 + eps_high)) and
a clipped objective is at risk only where that bound exceeds S (`clipped_spread`). What the clip does
not bound (the drift of tokens the update moves through shared parameters) is outside this model.

s is measured by a pilot with stale steps (the token log-ratio variance at window position j is
(j delta)^2; `fit.pilot_forecast`); S is one number for all models and tasks, set from data
(`fit._pilot.COLLAPSE_SPREAD` says where). Checked in tests/theory/test_collapse.py against Adam on a
softmax bandit with a frozen sampler: sigma_j / (j sigma_1) -> 1, sigma_1 proportional to lr and free of
the reward's scale, unlike SGD's.
"""

from __future__ import annotations

import math

from gspo_dynamics._checks import positive_int
from gspo_dynamics._errors import ConfigError


def _positive(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def window_spread(drift_per_lr: float, lr: float, position: int) -> float:
    """sigma_j = j lr s, equation (1): the log-ratio spread after `position` stale steps."""
    return positive_int("position", position, minimum=0) * _positive("lr", lr) * _positive("drift_per_lr", drift_per_lr)


def max_safe_refresh_interval(drift_per_lr: float, lr: float, limit: float) -> int:
    """The largest T with (T - 1) lr s <= S, equation (2)."""
    return 1 + math.floor(_positive("limit", limit) / (_positive("lr", lr) * _positive("drift_per_lr", drift_per_lr)))


def max_safe_learning_rate(drift_per_lr: float, refresh_interval: int, limit: float) -> float:
    """lr_max = S / ((T - 1) s), equation (2); inf on-policy (T = 1: no stale step, no window drift)."""
    T = positive_int("refresh_interval", refresh_interval)
    return math.inf if T == 1 else _positive("limit", limit) / ((T - 1) * _positive("drift_per_lr", drift_per_lr))


def clipped_spread(spread: float, clip_high: float | None) -> float:
    """The window's spread under a ratio clip: min(spread, log(1 + eps_high)); unchanged without one (None)."""
    return spread if clip_high is None else min(spread, math.log1p(_positive("clip_high", clip_high)))
