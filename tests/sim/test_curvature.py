"""Finite-difference curvature of the simulator vs the theory's analytic stiffness."""

import numpy as np
import pytest

from gspo_dynamics.sim import BanditTask
from gspo_dynamics.sim.curvature import expected_force, two_arm_stiffness
from gspo_dynamics.theory.bandit import TwoArmBandit, fixed_point, stiffness_partials
from gspo_dynamics.theory.curvature import curvature_scale, stiffness_by_finite_differences
from gspo_dynamics.theory.hyperparams import Hyperparams

FD_ATOL = 1e-8  # central differences with h = 1e-5 on O(0.1) forces (module docstring)


@pytest.mark.parametrize("kw", [
    dict(advantage="mean", correction="none", kl_estimator="exact"),
    dict(advantage="std", correction="none", kl_estimator="k3", group_size=4),
    dict(advantage="mean", correction="token", kl_estimator="exact", group_size=8),
    dict(advantage="std", correction="sequence", kl_estimator="k3"),
])
def test_simulator_stiffness_matches_the_analytic_theory(kw):
    bandit = TwoArmBandit(ref_logit=-1.0)
    hp = Hyperparams(lr=1.0, kl_coef=0.5, **kw)
    a, b = two_arm_stiffness(BanditTask.from_theory(bandit), hp)
    a_th, b_th = stiffness_partials(fixed_point(bandit, hp).logit, bandit, hp)
    assert a == pytest.approx(a_th, abs=FD_ATOL) and b == pytest.approx(b_th, abs=FD_ATOL)


def test_k_arm_curvature_skips_the_shift_invariant_direction():
    # Three arms, rewards (0, 0.5, 1): softmax logits are shift invariant, so A + B has a zero mode.
    task = BanditTask.k_arm([[0.0, 0.5, 1.0]], ref_logits=[[0.0, 0.0, 0.0]])
    hp = Hyperparams(lr=0.5, kl_coef=0.5)
    force = expected_force(task, hp)
    z = np.zeros(3)
    for _ in range(20000):  # on-policy expected dynamics to the fixed point (here within ~900 steps)
        step = force(z, z)
        if np.abs(step).max() < 1e-13:
            break
        z = z + 0.5 * step
    assert np.abs(force(z, z)).max() < 1e-12
    A, B = stiffness_by_finite_differences(force, z)
    assert np.abs((A + B).sum(axis=1)).max() < 1e-8  # constant shift: no restoring force
    assert curvature_scale(A, B) > 0


def test_scalar_finite_differences_of_a_known_quadratic():
    a, b = stiffness_by_finite_differences(lambda z, zs: -0.3 * zs - 0.2 * z, 0.7)
    assert a == pytest.approx(0.3, abs=1e-10) and b == pytest.approx(0.2, abs=1e-10)
