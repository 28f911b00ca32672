"""Bandit forces, fixed points and stiffness against independent routes (float64)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gspo_dynamics import ConfigError
from gspo_dynamics.theory.bandit import TwoArmBandit, fixed_point, force, sigmoid, stiffness_partials
from gspo_dynamics.theory.hyperparams import Hyperparams

FD_STEP = 1e-6  # central differences: truncation ~h^2 f''' ~1e-12, rounding ~eps/h ~1e-10
FD_ATOL = 1e-8

combos = st.fixed_dictionaries({
    "advantage": st.sampled_from(["mean", "std"]),
    "correction": st.sampled_from(["none", "token", "sequence"]),
    "kl_estimator": st.sampled_from(["exact", "k3"]),
    "group_size": st.sampled_from([None, 2, 4, 16]),
    "kl_coef": st.floats(0.1, 2.0),
})


@settings(max_examples=150, deadline=None)
@given(combos, st.floats(-3.0, 1.0))
def test_analytic_stiffness_matches_finite_differences(kw, ref):
    bandit, hp = TwoArmBandit(ref_logit=ref), Hyperparams(lr=1.0, **kw)
    fp = fixed_point(bandit, hp)
    if not fp.interior:
        return
    z, h = fp.logit, FD_STEP
    a, b = stiffness_partials(z, bandit, hp)
    a_fd = -(force(z, z + h, bandit, hp) - force(z, z - h, bandit, hp)) / (2 * h)
    b_fd = -(force(z + h, z, bandit, hp) - force(z - h, z, bandit, hp)) / (2 * h)
    assert a == pytest.approx(float(a_fd), abs=FD_ATOL)
    assert b == pytest.approx(float(b_fd), abs=FD_ATOL)


@settings(max_examples=100, deadline=None)
@given(combos, st.floats(-3.0, 1.0))
def test_fixed_point_zeroes_the_on_policy_force(kw, ref):
    bandit, hp = TwoArmBandit(ref_logit=ref), Hyperparams(lr=1.0, **kw)
    fp = fixed_point(bandit, hp)
    if fp.interior:
        assert abs(float(force(fp.logit, fp.logit, bandit, hp))) < 1e-13
        assert fp.reward == pytest.approx(float(sigmoid(fp.logit)))


@pytest.mark.parametrize("G", [None, 2, 4, 64])
def test_mean_baseline_exact_kl_fixed_point_closed_form(G):
    # p (1-p) (1 - 1/G) = beta p (1-p) (z - z_ref)  =>  z* = z_ref + (1 - 1/G) / beta.
    beta, ref = 0.5, -1.0
    fp = fixed_point(TwoArmBandit(ref_logit=ref), Hyperparams(lr=1.0, kl_coef=beta, group_size=G))
    assert fp.logit == pytest.approx(ref + (1 - (1 / G if G else 0)) / beta, abs=1e-12)


def test_unclipped_ratio_removes_staleness_of_the_mean_baseline_drive():
    # With w = pi / pi_s the mean-baseline drive is fresh: dF/dz_s = 0 at G -> infinity.
    bandit = TwoArmBandit(ref_logit=-1.0)
    for corr in ("token", "sequence"):
        a, _ = stiffness_partials(1.0, bandit, Hyperparams(lr=1.0, kl_coef=0.5, correction=corr))
        assert abs(a) < 1e-15


def test_clip_stops_the_push_beyond_the_trust_region():
    bandit = TwoArmBandit(ref_logit=0.0)
    hp = Hyperparams(lr=1.0, correction="token", clip_high=0.2, clip_low=0.2)
    z_s = 0.0  # p_s = 1/2; p / p_s > 1.2 and (1-p)/(1-p_s) < 0.8 once p > 0.6
    far = math.log(0.7 / 0.3)
    assert float(force(far, z_s, bandit, hp)) == 0.0
    assert float(force(0.1, z_s, bandit, hp)) > 0.0


def test_no_interior_fixed_point_without_kl():
    fp = fixed_point(TwoArmBandit(ref_logit=0.0), Hyperparams(lr=1.0, kl_coef=0.0))
    assert not fp.interior and fp.reward == 1.0


def test_bad_bandit_raises_config_error():
    with pytest.raises(ConfigError, match="ref_logit"):
        TwoArmBandit(ref_logit=float("nan"))
    with pytest.raises(ConfigError, match="ref_logit"):
        TwoArmBandit(ref_logit=100.0)


def test_force_broadcasts():
    hp = Hyperparams(lr=1.0, kl_coef=0.5)
    z = np.linspace(-2, 2, 7)
    out = force(z[:, None], z[None, :], TwoArmBandit(ref_logit=-1.0), hp)
    assert out.shape == (7, 7)
