"""The from-start check of the nonlinear expected map."""

import numpy as np
import pytest

from gspo_dynamics.theory import linear, nonlinear
from gspo_dynamics.theory.bandit import TwoArmBandit, fixed_point, stiffness_partials
from gspo_dynamics.theory.hyperparams import SGD, Hyperparams


def _setup(lr, mu, beta, ref=-1.0, correction="none"):
    bandit = TwoArmBandit(ref_logit=ref)
    hp = Hyperparams(lr=lr, optimizer=SGD(momentum=mu), kl_coef=beta, correction=correction)
    fp = fixed_point(bandit, hp)
    a, b = stiffness_partials(fp.logit, bandit, hp)
    return bandit, hp, int(linear.critical_refresh_interval(a, b, lr, mu, 500))


@pytest.mark.parametrize("lr, mu", [(2.0, 0.0), (2.0, 0.9), (10.0, 0.5)])
def test_from_start_never_later_than_the_linear_threshold(lr, mu):
    bandit, hp, t_lin = _setup(lr, mu, 0.5)
    fs = nonlinear.critical_refresh_interval_from_start(bandit, hp, lr, mu, 500)
    assert fs.critical_refresh_interval != linear.STABLE and fs.critical_refresh_interval <= t_lin


def test_large_transient_escapes_before_the_local_threshold():
    # beta = 0.2 puts R* = 0.98 near saturation; momentum 0.9 overshoots into p (1-p) ~ 1e-6.
    bandit, hp, t_lin = _setup(2.0, 0.9, 0.2)
    fs = nonlinear.critical_refresh_interval_from_start(bandit, hp, 2.0, 0.9, 500)
    assert t_lin == 8 and fs.critical_refresh_interval == 1 and fs.outcome == "escaped"
    # ...and the escape is real: the trajectory reaches deep saturation.
    import dataclasses
    traj = nonlinear.expected_trajectory(bandit, dataclasses.replace(hp, refresh_interval=1), 2.0, 0.9, 400)
    p_star = fixed_point(bandit, hp).reward
    assert np.min(traj * (1 - traj)) < nonlinear.ESCAPE_RATIO * p_star * (1 - p_star)


def test_stable_rows_really_converge():
    bandit, hp, t_lin = _setup(2.0, 0.0, 0.5)
    fs = nonlinear.critical_refresh_interval_from_start(bandit, hp, 2.0, 0.0, 500)
    import dataclasses
    for T in range(1, fs.critical_refresh_interval):
        traj = nonlinear.expected_trajectory(bandit, dataclasses.replace(hp, refresh_interval=T), 2.0, 0.0, 4000)
        assert abs(traj[-1] - fixed_point(bandit, hp).reward) < 1e-6


def test_settling_argument_answers_large_T_without_simulating_each():
    """No correction and a KL weight of 1: linearly stable for every T, and every period of the first block's last
    row ends static, so the scan stops after that block by the settling argument; direct simulation of two far
    larger T agrees."""
    bandit, hp, t_lin = _setup(0.5, 0.0, 1.0)
    assert t_lin == linear.STABLE
    fs = nonlinear.critical_refresh_interval_from_start(bandit, hp, 0.5, 0.0, 10_000)
    assert fs.critical_refresh_interval == linear.STABLE and fs.t_scanned == nonlinear.FIRST_BLOCK
    import dataclasses
    for T in (3000, 9999):
        traj = nonlinear.expected_trajectory(bandit, dataclasses.replace(hp, refresh_interval=T), 0.5, 0.0, 6 * T)
        assert abs(traj[-1] - fixed_point(bandit, hp).reward) < 1e-6


def test_a_clipped_period_that_never_settles_is_simulated_to_t_max():
    """The token correction with the PPO clip: once the stale ratio reaches the band edge, the clipped map keeps the
    policy moving within the period (no static state, so no settling argument), and the scan simulates every T up
    to t_max; the last one agrees with direct simulation."""
    bandit, hp, t_lin = _setup(0.5, 0.0, 0.5, correction="token")
    assert t_lin == linear.STABLE
    fs = nonlinear.critical_refresh_interval_from_start(bandit, hp, 0.5, 0.0, 1500)
    assert fs.critical_refresh_interval == linear.STABLE and fs.t_scanned == 1500
    import dataclasses
    traj = nonlinear.expected_trajectory(bandit, dataclasses.replace(hp, refresh_interval=1500), 0.5, 0.0, 6 * 1500)
    assert abs(traj[-1] - fixed_point(bandit, hp).reward) < 1e-6
