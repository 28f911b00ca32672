"""Mroueh's GRPO success recurrence against independent routes.

Routes: the objective E_pi[A] - KL terms maximised numerically over the logit (no Gibbs formula),
Mroueh's closed form for the std advantage, root finding of h(p) - p in probability space (no
logit residual), and the gradient-dynamics fixed point of `bandit` (roots of F(z, z)).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.optimize import brentq, minimize_scalar
from scipy.special import expit, log_expit

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.theory.bandit import TwoArmBandit, fixed_point, force
from gspo_dynamics.theory.hyperparams import Hyperparams
from gspo_dynamics.theory.recurrences import (
    GibbsRecurrence,
    fixed_points,
    group_advantages,
    iterate,
    logit_recurrence,
    recurrence_slope,
    success_recurrence,
)

# The objective J(z) is flat at its maximum: with rounding ~1e-16 |J| and curvature
# |J''| ~ beta p (1-p), a scalar optimiser pins the argmax only to dz ~ sqrt(1e-15 / (beta p (1-p))).
# ARGMAX_TOL is the numerator of that bound with a factor ~3 of room.
ARGMAX_TOL = 1e-7
# Closed forms and root finders that run to machine precision.
EXACT_TOL = 1e-12
# brentq on h(p) - p in probability space: xtol 1e-15 on p, i.e. ~1e-13 in the logit near the tails.
ROOT_TOL = 1e-10


def _kl(log_pi1, log_pi0, log_rho1, log_rho0):
    """KL(pi || rho) for two-action policies given log-probabilities."""
    return np.exp(log_pi1) * (log_pi1 - log_rho1) + np.exp(log_pi0) * (log_pi0 - log_rho0)


def _argmax_objective(p_prev, rec: GibbsRecurrence):
    """(argmax_z J, -J) for J = E_pi[A] - beta_ref KL(pi || pi_ref) - beta_prev KL(pi || pi_prev), numerically."""
    a1, a0 = group_advantages(p_prev, rec.advantage, rec.std_eps)
    z_prev = np.log(p_prev) - np.log1p(-p_prev)

    def negative_objective(z):
        lp1, lp0 = log_expit(z), log_expit(-z)
        value = np.exp(lp1) * a1 + np.exp(lp0) * a0
        value -= rec.kl_ref * _kl(lp1, lp0, log_expit(rec.ref_logit), log_expit(-rec.ref_logit))
        value -= rec.kl_prev * _kl(lp1, lp0, log_expit(z_prev), log_expit(-z_prev))
        return -value

    res = minimize_scalar(negative_objective, bounds=(-80.0, 80.0), method="bounded", options={"xatol": 1e-12})
    assert res.success
    return res.x, negative_objective


@settings(max_examples=120, deadline=None)
@given(
    kl_ref=st.floats(0.0, 5.0),
    kl_prev=st.floats(0.0, 5.0),
    ref_logit=st.floats(-3.0, 3.0),
    advantage=st.sampled_from(["mean", "std"]),
    std_eps=st.sampled_from([0.0, 1e-4, 0.1]),
    p_prev=st.floats(0.02, 0.98),
)
def test_recurrence_is_the_argmax_of_the_objective(kl_ref, kl_prev, ref_logit, advantage, std_eps, p_prev):
    assume(kl_ref + kl_prev >= 0.3)  # keeps the optimum inside the optimiser's bounds (|z| < 80)
    rec = GibbsRecurrence(kl_ref=kl_ref, kl_prev=kl_prev, ref_logit=ref_logit, advantage=advantage, std_eps=std_eps)
    z_num, objective = _argmax_objective(p_prev, rec)
    z_next = float(logit_recurrence(np.log(p_prev / (1 - p_prev)), rec))
    curvature = rec.beta * expit(z_next) * expit(-z_next)
    assert z_next == pytest.approx(z_num, abs=ARGMAX_TOL / np.sqrt(curvature))
    # the Gibbs logit is at least as good as the optimiser's (up to rounding of J)
    assert -objective(z_next) >= -objective(z_num) - 1e-14 * (1.0 + abs(objective(z_num)))
    assert float(success_recurrence(p_prev, rec)) == pytest.approx(expit(z_num), abs=ARGMAX_TOL)


@pytest.mark.parametrize("kl_ref,ref_logit", [(0.1, 0.0), (1.0, -2.0), (4.0, 1.5)])
def test_mean_advantage_kl_to_reference_is_constant(kl_ref, ref_logit):
    # Delta = 1 and no memory of p_{n-1}: every iterate after the first is sigmoid(z_ref + 1/beta).
    rec = GibbsRecurrence(kl_ref=kl_ref, ref_logit=ref_logit, advantage="mean")
    p = np.linspace(0.01, 0.99, 17)
    np.testing.assert_allclose(success_recurrence(p, rec), expit(ref_logit + 1 / kl_ref), rtol=EXACT_TOL)
    (fp,) = fixed_points(rec)
    assert fp.logit == pytest.approx(ref_logit + 1 / kl_ref, rel=EXACT_TOL)
    assert fp.stable and fp.slope == 0.0


@pytest.mark.parametrize("beta,ref_logit", [(0.5, 0.0), (2.0, -1.0), (1.3, 2.0)])
def test_std_advantage_matches_mroueh_closed_form(beta, ref_logit):
    # Mroueh (2025), KL to the reference, eps = 0:  h(p) = 1 / (1 + (1-q)/q exp(-1 / (beta sqrt(p (1-p))))).
    q = expit(ref_logit)
    p = np.linspace(0.01, 0.99, 23)
    expected = 1.0 / (1.0 + (1 - q) / q * np.exp(-1.0 / (beta * np.sqrt(p * (1 - p)))))
    rec = GibbsRecurrence(kl_ref=beta, ref_logit=ref_logit, advantage="std")
    np.testing.assert_allclose(success_recurrence(p, rec), expected, rtol=1e-11)


@settings(max_examples=60, deadline=None)
@given(
    st.floats(0.0, 4.0), st.floats(0.0, 4.0), st.floats(-4.0, 4.0), st.sampled_from(["mean", "std"]),
    st.sampled_from([0.0, 1e-3, 0.2]), st.floats(0.03, 0.97),
)
def test_slope_matches_central_differences(kl_ref, kl_prev, ref_logit, advantage, std_eps, p):
    assume(kl_ref + kl_prev > 0.1)
    rec = GibbsRecurrence(kl_ref=kl_ref, kl_prev=kl_prev, ref_logit=ref_logit, advantage=advantage, std_eps=std_eps)
    h = 1e-6
    fd = (success_recurrence(p + h, rec) - success_recurrence(p - h, rec)) / (2 * h)
    # central differences: truncation O(h^2 h''') and rounding 1e-16 / h, both well below 1e-6 here
    assert float(recurrence_slope(p, rec)) == pytest.approx(float(fd), rel=1e-5, abs=1e-6)


def _fixed_points_in_p(rec: GibbsRecurrence, grid: int = 200_001):
    """Roots of h(p) - p on a grid in p (probability space; no logit residual involved)."""
    p = np.linspace(1e-6, 1 - 1e-6, grid)
    d = success_recurrence(p, rec) - p
    idx = np.flatnonzero(np.sign(d[:-1]) != np.sign(d[1:]))
    f = lambda x: float(success_recurrence(x, rec)) - x  # noqa: E731
    return [brentq(f, p[i], p[i + 1], xtol=1e-15) for i in idx]


@pytest.mark.parametrize(
    "kl_ref,ref_logit,advantage,std_eps",
    [
        (0.5, 0.0, "mean", 0.0),
        (2.0, 0.0, "std", 0.0),
        (3.0, -1.0, "std", 0.0),
        (1.5, 0.5, "std", 0.05),  # one root, at p* = 1 - 1.3e-6
        (8.0, -3.0, "std", 0.0),
    ],
)
@pytest.mark.parametrize("kl_prev", [0.0, 0.7, 5.0])
def test_fixed_points_do_not_depend_on_kl_prev(kl_ref, ref_logit, advantage, std_eps, kl_prev):
    # Solve h(p) = p in probability space with beta_prev > 0 and compare to the logit roots at beta_prev = 0.
    base = GibbsRecurrence(kl_ref=kl_ref, ref_logit=ref_logit, advantage=advantage, std_eps=std_eps)
    mixed = GibbsRecurrence(kl_ref=kl_ref, kl_prev=kl_prev, ref_logit=ref_logit, advantage=advantage, std_eps=std_eps)
    expected = _fixed_points_in_p(mixed)
    got = [fp.success for fp in fixed_points(base)]
    assert len(got) == len(expected) >= 1
    np.testing.assert_allclose(got, expected, rtol=ROOT_TOL)
    np.testing.assert_allclose([fp.success for fp in fixed_points(mixed)], got, rtol=EXACT_TOL)


def test_stability_classification_and_iteration():
    rec = GibbsRecurrence(kl_ref=2.0, kl_prev=1.0, advantage="std")
    lower, upper = fixed_points(rec)
    assert lower.stable and not upper.stable
    assert lower.success < upper.success
    # from below the upper root the iteration settles on the lower one; from just above it runs to 1
    path = iterate(np.array([0.3, upper.success - 1e-3, upper.success + 1e-3]), rec, 400)
    assert path[-1, 0] == pytest.approx(lower.success, rel=1e-12)
    assert path[-1, 1] == pytest.approx(lower.success, rel=1e-12)
    assert path[-1, 2] == 1.0
    # the iterates equal repeated application of the one-step map
    p = 0.3
    for n in range(1, 6):
        p = float(success_recurrence(p, rec))
        assert path[n, 0] == pytest.approx(p, rel=1e-13)


def test_overshooting_fixed_point_is_unstable():
    # far below the reference the std gap falls steeply in z (Delta ~ exp(-z/2)), so h'(p*) < -1
    rec = GibbsRecurrence(kl_ref=3.0, ref_logit=-10.0, advantage="std")
    lower = fixed_points(rec)[0]
    assert lower.slope < -1.0 and not lower.stable
    # adding the proximal term (beta_prev) damps it back into stability without moving it
    damped = fixed_points(GibbsRecurrence(kl_ref=3.0, kl_prev=6.0, ref_logit=-10.0, advantage="std"))[0]
    assert damped.logit == pytest.approx(lower.logit, rel=EXACT_TOL)
    assert damped.stable


@pytest.mark.parametrize("advantage", ["mean", "std"])
def test_no_reference_kl_has_no_fixed_point(advantage):
    rec = GibbsRecurrence(kl_ref=0.0, kl_prev=0.5, advantage=advantage)
    assert fixed_points(rec) == ()
    path = iterate(0.2, rec, 200)
    assert np.all(np.diff(path) >= 0.0) and path[-1] == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("beta,ref_logit", [(0.3, 0.0), (1.0, -1.0), (2.5, 1.0)])
def test_mean_fixed_point_agrees_with_gradient_dynamics(beta, ref_logit):
    bandit = TwoArmBandit(ref_logit=ref_logit)
    hp = Hyperparams(lr=1.0, kl_coef=beta, advantage="mean", std_eps=0.0, kl_estimator="exact")
    (fp,) = fixed_points(GibbsRecurrence(kl_ref=beta, ref_logit=ref_logit, advantage="mean"))
    gd = fixed_point(bandit, hp)
    assert gd.interior
    assert fp.logit == pytest.approx(gd.logit, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("beta,ref_logit", [(2.0, 0.0), (3.0, -1.0), (1.5, 1.0), (6.0, -2.5), (1.0, 0.0), (0.4, 1.0)])
def test_std_fixed_points_agree_with_gradient_dynamics(beta, ref_logit):
    bandit = TwoArmBandit(ref_logit=ref_logit)
    hp = Hyperparams(lr=1.0, kl_coef=beta, advantage="std", std_eps=0.0, kl_estimator="exact")
    roots = fixed_points(GibbsRecurrence(kl_ref=beta, ref_logit=ref_logit, advantage="std"))
    gd = fixed_point(bandit, hp)
    # the gradient dynamics from pi_ref stop at the first root of F(z, z) above z_ref: our lowest
    assert gd.interior == bool(roots)
    if roots:
        assert roots[0].logit == pytest.approx(gd.logit, rel=1e-10, abs=1e-10)
    # and every root of ours is a root of the on-policy force: F(z, z) = -p (1 - p) r(z) = 0
    for fp in roots:
        F = float(force(fp.logit, fp.logit, bandit, hp))
        assert abs(F) < 1e-13


@settings(max_examples=60, deadline=None)
@given(
    st.floats(0.05, 10.0), st.floats(0.0, 5.0), st.floats(-5.0, 5.0), st.sampled_from(["mean", "std"]),
    st.sampled_from([0.0, 0.01, 0.3]),
)
def test_fixed_point_properties(kl_ref, kl_prev, ref_logit, advantage, std_eps):
    rec = GibbsRecurrence(kl_ref=kl_ref, kl_prev=kl_prev, ref_logit=ref_logit, advantage=advantage, std_eps=std_eps)
    roots = fixed_points(rec)
    if advantage == "mean" or std_eps > 0:
        assert len(roots) % 2 == 1  # r < 0 at z_ref and r -> +inf: an odd number of crossings
    for fp in roots:
        assert fp.logit > ref_logit  # success amplification: p* > p_ref
        if fp.success < 1.0 - 1e-6:  # closer to 1, p itself no longer resolves the logit (1 - p is rounded)
            assert float(success_recurrence(fp.success, rec)) == pytest.approx(fp.success, rel=1e-10)
            assert fp.slope == pytest.approx(float(recurrence_slope(fp.success, rec)), rel=1e-6, abs=1e-9)
    assert all(a.logit < b.logit for a, b in zip(roots[:-1], roots[1:]))


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(kl_ref=-1.0),
        dict(kl_ref=0.0, kl_prev=0.0),
        dict(kl_ref=1.0, advantage="median"),
        dict(kl_ref=1.0, std_eps=-0.1),
        dict(kl_ref=float("nan")),
    ],
)
def test_invalid_parameters_raise(kwargs):
    with pytest.raises(ConfigError):
        GibbsRecurrence(**kwargs)


@pytest.mark.parametrize("p", [0.0, 1.0, -0.2, float("nan")])
def test_success_outside_open_interval_raises(p):
    with pytest.raises(ConfigError):
        success_recurrence(p, GibbsRecurrence(kl_ref=1.0))
