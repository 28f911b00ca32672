"""implications(): the two premises of its thresholds (interior plateau, linear regime), checked against
independent routes - the exact expected bandit dynamics (`theory.nonlinear`, `theory.bandit`) and the
exact discrete linear map (`theory.linear`) - rather than against the formulas in `_implications`.
"""

from dataclasses import replace

import numpy as np
import pytest

from gspo_dynamics import ConfigError
from gspo_dynamics.fit import fit_trajectory, implications
from gspo_dynamics.theory import linear
from gspo_dynamics.theory.bandit import TwoArmBandit, fixed_point
from gspo_dynamics.theory.hyperparams import SGD, Hyperparams
from gspo_dynamics.theory.nonlinear import critical_refresh_interval_from_start, expected_trajectory
from gspo_dynamics.theory.trajectory import fastest_relaxation_rate, single_exponential

NOISE = 0.005  # measurement noise added to the exact curves (as in test_implications)
STEPS = 300
LR, MU = 0.5, 0.5  # heavy-ball values of the bandit runs
MONOTONE_TOL = 1e-12  # float64 rounding of R = sigmoid(z) near 1: a fall larger than this is real
BANDIT = TwoArmBandit(ref_logit=0.0, init_logit=-0.5)


def _hp(kl_coef, T=1):
    return Hyperparams(lr=LR, optimizer=SGD(momentum=MU), refresh_interval=T, group_size=8, advantage="std",
                       correction="none", kl_coef=kl_coef)


def _fit_bandit(kl_coef):
    R = expected_trajectory(BANDIT, _hp(kl_coef), LR, MU, STEPS)  # exact expected on-policy curve
    t = np.arange(R.size, dtype=float)
    return fit_trajectory(t, R + np.random.default_rng(0).normal(0.0, NOISE, R.size))


def test_a_plateau_at_the_reward_bound_has_no_threshold_as_the_exact_bandit_dynamics_show():
    """No KL: the bandit saturates (R* = 1). The fit -> stiffness -> T_c reading still gives a finite T_c;
    the exact expected dynamics with the stale drive ("none") stay monotone at that T and far beyond it,
    and the from-start scan finds no threshold. With the reward range given, implications agrees."""
    assert not fixed_point(BANDIT, _hp(0.0)).interior
    fit = _fit_bandit(0.0)
    unchecked = implications(fit, _hp(0.0))
    assert unchecked.interior_plateau is None and unchecked.critical_refresh_interval is not None
    for T in (unchecked.critical_refresh_interval, 2 * unchecked.critical_refresh_interval, 64):
        R = expected_trajectory(BANDIT, _hp(0.0, T), LR, MU, STEPS)
        assert np.diff(R).min() >= -MONOTONE_TOL  # monotone saturation: the predicted T_c is not a threshold
    assert critical_refresh_interval_from_start(BANDIT, _hp(0.0), LR, MU).critical_refresh_interval == linear.STABLE
    checked = implications(fit, _hp(0.0), reward_range=(0.0, 1.0))
    assert checked.interior_plateau is False
    for name in ("critical_refresh_interval", "critical_refresh_interval_continuous", "exact_regime",
                 "max_safe_refresh_interval", "max_safe_refresh_interval_range"):
        assert getattr(checked, name) is None
    assert checked.stiffness_per_step == unchecked.stiffness_per_step  # the fit's reading itself is unchanged
    assert any("reward's bound" in n for n in checked.notes)


def test_an_interior_plateau_keeps_its_thresholds():
    """KL restoring force: interior fixed point (R* ~ 0.72); the range changes nothing but the flag."""
    fp = fixed_point(BANDIT, _hp(2.0))
    assert fp.interior and 0.6 < fp.reward < 0.8
    fit = _fit_bandit(2.0)
    plain, checked = implications(fit, _hp(2.0)), implications(fit, _hp(2.0), reward_range=(0.0, 1.0))
    assert checked.interior_plateau is True
    assert checked.critical_refresh_interval == plain.critical_refresh_interval
    assert checked.max_safe_refresh_interval == plain.max_safe_refresh_interval


def test_a_plateau_beyond_or_at_the_lower_bound_is_saturation_too():
    t = np.arange(200.0)
    rng = np.random.default_rng(3)
    falling = fit_trajectory(t, single_exponential(t, 0.0, 0.6, 20.0) + rng.normal(0, NOISE, t.size))
    assert implications(falling, reward_range=(0.0, 1.0)).interior_plateau is False
    assert implications(falling, reward_range=(-1.0, 1.0)).interior_plateau is True


@pytest.mark.parametrize("mu", [0.3, 0.6, 0.9])
def test_the_on_policy_decay_bound_is_the_exact_maps(mu):
    """rho(M(1)) >= sqrt(mu) over stiffnesses and stale fractions (det M(1) = mu), with equality reached:
    the fastest linear relaxation is -ln(mu)/2 per step, the bound `linear_regime` uses."""
    lam = np.geomspace(1e-4, 1e2, 400)[:, None]
    f = np.linspace(0.0, 1.0, 5)[None, :]
    M = linear.monodromy(lam * f, lam * (1 - f), 1.0, mu, 1)
    assert np.allclose(np.linalg.det(M), mu, rtol=1e-9, atol=1e-12)
    rho = linear.spectral_radius(M)
    assert rho.min() >= np.sqrt(mu) * (1 - 1e-12)
    assert rho.min() == pytest.approx(np.sqrt(mu), rel=1e-3)  # reached (critical damping), so the bound is tight


@pytest.mark.parametrize("mu", [0.5, 0.9])
def test_curves_of_the_linear_heavy_ball_are_in_its_linear_regime_and_faster_ones_are_not(mu):
    """Independent route: iterate the exact linear on-policy map x <- M(1) x (relaxation toward 0.8) at
    the fastest stiffness (critical damping) and a slower one; fitted, neither is flagged. An exponential
    faster than sqrt(mu) per step (tau = 3 at mu = 0.9, 0.5 at mu = 0.5) is."""
    hp = Hyperparams(lr=1.0, optimizer=SGD(momentum=mu), refresh_interval=1)
    lam_fast = (1 - np.sqrt(mu)) ** 2  # double root sqrt(mu) of l^2 - (1 + mu - lam) l + mu: critical damping
    for lam in (lam_fast, lam_fast / 4):
        M = linear.monodromy(lam, 0.0, 1.0, mu, 1)
        x, R = np.array([-0.6, 0.0]), []
        for _ in range(400):
            R.append(0.8 + x[0])
            x = M @ x
        t = np.arange(400.0)
        fit = fit_trajectory(t, np.array(R) + np.random.default_rng(1).normal(0, NOISE, t.size))
        imp = implications(fit, hp)
        assert imp.linear_regime is True
        assert imp.decay_rate.value <= -np.log(mu) / 2 + 4 * imp.decay_rate.stderr
    tau = 3.0 if mu == 0.9 else 0.5
    t = np.arange(100.0)
    fast = fit_trajectory(t, single_exponential(t, 0.9, 0.3, tau) + np.random.default_rng(2).normal(0, NOISE, t.size))
    imp = implications(fast, hp)
    assert imp.linear_regime is False and any("linear regime" in n for n in imp.notes)
    assert implications(fast, replace(hp, refresh_interval=2)).linear_regime is None  # checked on-policy only


def test_bad_reward_range():
    t = np.arange(50.0)
    fit = fit_trajectory(t, single_exponential(t, 0.8, 0.2, 10.0) + np.random.default_rng(2).normal(0, NOISE, t.size))
    for bad in ((1.0, 0.0), (0.0,), (0.0, float("inf")), "01"):
        with pytest.raises(ConfigError, match="reward range"):
            implications(fit, reward_range=bad)


def test_where_the_plateau_lies_against_the_bound():
    """Rewards in [0, 1] around a curve rising to 0.5. Scattered by 0.3 over 120 steps, the plateau's standard
    error (about 0.04) places it inside, though one point's scatter spans the range (the scatter term is capped at
    BOUND_BAND of it); scattered by 0.02, inside. Twelve noisy points whose fit leaves R_inf's standard error
    infinite do not locate it (None, with the note). A curve rising to 0.97 with scatter 0.03 (within 2 min(s,
    0.05) of 1) is at the bound."""
    t = np.arange(1, 121)
    curve = 0.5 - 0.3 * np.exp(-t / 15)
    rng = np.random.default_rng(3)
    noisy = np.clip(curve + rng.normal(0, 0.3, t.size), 0, 1)
    fit = fit_trajectory(t, noisy)
    assert fit.residual_std > 0.25 and fit.stderr["r_inf"] < 0.05
    assert implications(fit, reward_range=(0.0, 1.0)).interior_plateau is True
    quiet = curve + rng.normal(0, 0.02, t.size)
    assert implications(fit_trajectory(t, quiet), reward_range=(0.0, 1.0)).interior_plateau is True
    short = fit_trajectory(np.arange(1, 13), np.clip(0.5 + np.random.default_rng(3).normal(0, 0.3, 12), 0, 1))
    imp = implications(short, reward_range=(0.0, 1.0))
    assert not np.isfinite(short.stderr["r_inf"]) and imp.interior_plateau is None
    assert any("does not identify the plateau" in n for n in imp.notes)
    near = fit_trajectory(t, 0.97 - 0.5 * np.exp(-t / 15) + rng.normal(0, 0.03, t.size))
    assert implications(near, reward_range=(0.0, 1.0)).interior_plateau is False
    # an infinite standard error still finds a plateau within the scatter band of a bound (and none elsewhere)
    unlocated = replace(short, stderr={**short.stderr, "r_inf": np.inf})
    assert implications(replace(unlocated, params={**short.params, "r_inf": 0.999}),
                        reward_range=(0.0, 1.0)).interior_plateau is False
    assert implications(replace(unlocated, params={**short.params, "r_inf": 0.6}),
                        reward_range=(0.0, 1.0)).interior_plateau is None


def test_a_time_scale_faster_than_the_hyperparameters_allow():
    """mu = 0.9, T = 1: no curvature relaxes faster than tau_c = 19 steps. A fitted tau below it gives no stiffness,
    with one note (not the theory's exception): a noisy pilot whose tau lies within two standard errors of tau_c
    is told a longer pilot may give one; a noise-free tau = 5 is not."""
    hp = Hyperparams(lr=1.0, optimizer=SGD(momentum=0.9), refresh_interval=1, group_size=8)
    tau_c = 1.0 / fastest_relaxation_rate(1.0, 0.9, 1, 1.0)
    assert tau_c == pytest.approx(19.0)
    t = np.arange(1, 31.0)
    fit = fit_trajectory(t, 0.8 - 0.6 * np.exp(-t / 18) + 0.05 * np.random.default_rng(2).standard_normal(30))
    tau, se = fit.params["tau"], fit.stderr["tau"]
    assert fit.model == "exponential" and tau < tau_c < tau + 2 * se
    imp = implications(fit, hp)
    said = [n for n in imp.notes if "shorter than any curvature gives these hyperparameters (tau >= 19 steps" in n]
    assert imp.stiffness_per_step is None and len(said) == 1 and "a longer pilot may give one" in said[0]
    fast = implications(fit_trajectory(t, 0.8 - 0.6 * np.exp(-t / 5)), hp)
    said = [n for n in fast.notes if "no stiffness is read from it" in n]
    assert fast.stiffness_per_step is None and len(said) == 1 and "longer pilot" not in said[0]


def test_a_time_scale_the_data_do_not_identify_gives_no_stiffness_nor_a_threshold():
    """A straight noisy ramp: the exponential's tau is not identified (its plateau is not), so no stiffness, no
    regime and no largest safe T are read from it, and the reason is kept (`Implications.unidentified`)."""
    rng = np.random.default_rng(3)
    t = np.arange(1, 61, dtype=float)
    fit = fit_trajectory(t, 0.2 + 0.004 * t + rng.normal(0, 0.03, t.size))
    assert fit.model == "exponential" and "tau" in fit.unidentified_params()
    imp = implications(fit, Hyperparams(lr=1e-6, group_size=8, refresh_interval=1, optimizer=SGD(momentum=0.0)))
    assert imp.stiffness_per_step is None and imp.exact_regime is None and imp.max_safe_refresh_interval is None
    assert "time scale is not identified" in imp.unidentified["stiffness_per_step"]
    assert any("no stiffness is read" in n for n in imp.notes)
    # nor a relaxation rate checked against the linear regime (audit s38 D9: "relaxes at 126.5 per step" beside "the
    # time scale is not identified"), at Adam's momentum too, whose bound such a rate would pass
    adam = implications(fit, Hyperparams(lr=1e-6, group_size=8, refresh_interval=1))
    assert adam.linear_regime is None and not any("relaxes at" in n for n in adam.notes)
