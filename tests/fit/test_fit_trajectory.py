"""fit_trajectory: parameter recovery from noisy curves, stderr coverage, model selection, bad input."""

import math

import numpy as np
import pytest

from gspo_dynamics import ConfigError
from gspo_dynamics.fit import fit_exponential, fit_trajectory
from gspo_dynamics.fit._trajectory import PLATEAU_TOLERANCE
from gspo_dynamics.fit._uncertainty import covariance
from gspo_dynamics.theory.trajectory import Oscillator, single_exponential, trajectory

NOISE = 0.02  # reward noise std; rise 0.7, so a signal-to-noise ratio of 35 per point
Z_RECOVER = 4.0  # a recovered parameter must lie within 4 of its own standard errors (p ~ 6e-5 by chance)


def _noisy(curve, seed=0, sigma=NOISE):
    return curve + np.random.default_rng(seed).normal(0.0, sigma, curve.shape)


def test_exponential_data_select_the_exponential_and_recover_tau():
    t = np.arange(300.0)
    fit = fit_trajectory(t, _noisy(single_exponential(t, 0.8, 0.1, 40.0)))
    assert fit.model == "exponential" and fit.regime == "overdamped"
    assert not fit.inertia and not fit.oscillation
    for name, true in (("r_inf", 0.8), ("r0", 0.1), ("tau", 40.0)):
        assert abs(fit.params[name] - true) < Z_RECOVER * fit.stderr[name], name
    assert fit.r_squared > 0.95


def test_slow_start_data_support_inertia():
    t = np.arange(300.0)
    osc = Oscillator(mass=1.0, damping=0.3, stiffness=0.01)  # zeta = 1.5: overdamped with a slow start
    fit = fit_trajectory(t, _noisy(trajectory(osc, t, 0.8, 0.1, 0.0)))
    assert fit.inertia and fit.model == "oscillator" and fit.variant == "slow_start"
    assert fit.regime == "overdamped" and not fit.oscillation
    assert abs(fit.params["stiffness"] - 0.01) < Z_RECOVER * fit.stderr["stiffness"]
    assert abs(fit.params["damping"] - 0.3) < Z_RECOVER * fit.stderr["damping"]


def test_ringing_data_support_oscillation_with_the_right_damping_ratio():
    t = np.arange(300.0)
    osc = Oscillator(mass=1.0, damping=0.02, stiffness=0.01)  # zeta = 0.1, period ~63 steps
    fit = fit_trajectory(t, _noisy(trajectory(osc, t, 0.7, 0.2, 0.0)))
    assert fit.oscillation and fit.regime == "underdamped"
    assert abs(fit.damping_ratio - 0.1) < Z_RECOVER * fit.damping_ratio_stderr
    assert fit.selection["delta_bic"] > fit.selection["evidence_threshold"]


def test_a_curve_with_only_an_overshoot_is_not_called_oscillating():
    t = np.arange(60.0)  # zeta = 0.5 rings once, but a full damped period (~73 steps) is not in the data
    osc = Oscillator(mass=1.0, damping=0.1, stiffness=0.01)
    fit = fit_trajectory(t, _noisy(trajectory(osc, t, 0.7, 0.2, 0.0), sigma=0.002))
    assert not fit.oscillation


def test_irregular_steps_nan_gaps_and_order_do_not_matter():
    rng = np.random.default_rng(3)
    t = np.sort(rng.choice(np.arange(1000, 1400), 150, replace=False)).astype(float)
    r = _noisy(single_exponential(t - 1000, 0.6, 0.2, 50.0), seed=4)
    r[::9] = np.nan
    perm = rng.permutation(t.size)
    fit = fit_trajectory(t[perm], r[perm])
    assert fit.t_start == t[np.isfinite(r)][0]
    assert abs(fit.params["tau"] - 50.0) < Z_RECOVER * fit.stderr["tau"]
    assert fit.n == int(np.isfinite(r).sum())
    np.testing.assert_allclose(fit.predict(fit.t_start), fit.params["r0"], rtol=1e-12)


def test_stderr_covers_the_truth_at_the_nominal_rate():
    """Jacobian stderr vs repeated experiments: |tau_hat - tau| < 1.96 se in ~95% of 200 noisy replicas.

    Binomial sd of the rate at n = 200 is 0.015; the band [0.90, 0.99] is 3 sd around 0.95.
    (fit_exponential + the same `covariance` that fit_trajectory uses, to keep the test fast.)
    """
    t = np.arange(0.0, 200.0, 2.0)
    truth = {"r_inf": 0.75, "r0": 0.15, "tau": 35.0}
    clean = single_exponential(t, truth["r_inf"], truth["r0"], truth["tau"])
    hits = {k: 0 for k in truth}
    n = 200
    for seed in range(n):
        r = _noisy(clean, seed=seed, sigma=0.03)
        fit = fit_exponential(t, r)
        names, cov = covariance(fit, t, r)
        for i, name in enumerate(names):
            hits[name] += abs(fit.params[name] - truth[name]) < 1.96 * math.sqrt(cov[i, i])
    for name, count in hits.items():
        assert 0.90 <= count / n <= 0.99, (name, count)


def test_stderr_matches_a_parametric_bootstrap_for_the_oscillator():
    """sd of refitted oscillator parameters over bootstrap replicas vs the Jacobian stderr: ratio in
    [0.7, 1.4] (40 replicas: the sd of an sd estimate is ~1/sqrt(2 x 40) = 11%, so 3 sd either side)."""
    t = np.arange(200.0)
    osc = Oscillator(mass=1.0, damping=0.03, stiffness=0.01)
    fit = fit_trajectory(t, _noisy(trajectory(osc, t, 0.7, 0.2, 0.0)))
    assert fit.variant == "slow_start"
    from gspo_dynamics.fit import fit_oscillator

    base = fit.predict(t)
    draws = []
    for seed in range(40):
        refit = fit_oscillator(t, _noisy(base, seed=100 + seed), v0=0.0)
        draws.append([refit.params[n] for n in fit.fitted])
    boot = np.std(np.array(draws), axis=0, ddof=1)
    for name, sd in zip(fit.fitted, boot):
        assert 0.7 < sd / fit.stderr[name] < 1.4, (name, sd, fit.stderr[name])


def test_time_to_plateau_exponential_closed_form_and_oscillator_by_brute_force():
    t = np.arange(300.0)
    fit = fit_trajectory(t, _noisy(single_exponential(t, 0.8, 0.1, 40.0)))
    value, se = fit.time_to_plateau()
    assert value == pytest.approx(fit.params["tau"] * math.log(1 / PLATEAU_TOLERANCE), rel=1e-12)
    assert se == pytest.approx(math.log(1 / PLATEAU_TOLERANCE) * fit.stderr["tau"], rel=1e-3)

    osc = Oscillator(mass=1.0, damping=0.05, stiffness=0.01)  # rings: the band is left and re-entered
    fit = fit_trajectory(t, _noisy(trajectory(osc, t, 0.7, 0.2, 0.0)))
    value, _ = fit.time_to_plateau()
    grid = np.linspace(0.0, 2000.0, 2_000_001)  # dense grid, step 0.001: the last step outside the band
    q = fit.params
    outside = np.abs(fit.predict(grid) - q["r_inf"]) > PLATEAU_TOLERANCE * abs(q["r_inf"] - q["r0"])
    assert value == pytest.approx(grid[np.flatnonzero(outside)[-1]], abs=2e-3)


def test_rows_logged_every_10_steps_do_not_select_an_aliased_oscillator():
    t = np.arange(10.0, 510.0, 10.0)  # TRL logging_steps = 10
    fit = fit_trajectory(t, _noisy(single_exponential(t, 0.8, 0.1, 80.0), sigma=0.05, seed=7))
    for name in fit.selection["aliased"]:
        assert fit.selection["bic"][name] == math.inf
    if fit.model == "oscillator":
        omega = math.sqrt(max(fit.params["stiffness"] - fit.params["damping"] ** 2 / 4, 0.0))
        assert omega * 4 * 10 <= 2 * math.pi


def test_long_logs_are_fitted_on_bins_but_scored_on_every_point():
    t = np.arange(20_000.0)
    fit = fit_trajectory(t, _noisy(single_exponential(t, 0.8, 0.1, 3000.0), sigma=0.05))
    assert fit.selection["binned_points"] is not None and fit.n == t.size
    assert abs(fit.params["tau"] - 3000.0) < Z_RECOVER * fit.stderr["tau"]


@pytest.mark.parametrize("t, r, match", [
    (np.arange(5.0), np.ones(5), "at least"),
    (np.arange(20.0), np.full(20, np.nan), "at least"),
    (np.arange(20.0), np.ones(19), "equal length"),
])
def test_bad_input_is_a_clear_error(t, r, match):
    with pytest.raises(ConfigError, match=match):
        fit_trajectory(t, r)


def test_to_json_is_plain():
    import json

    t = np.arange(100.0)
    fit = fit_trajectory(t, _noisy(single_exponential(t, 0.8, 0.1, 20.0)))
    json.dumps(fit.to_json(), allow_nan=False)


def test_the_flat_lines_bic_is_judged_on_the_standardised_points():
    """delta_bic_flat = BIC(a constant) - BIC(the chosen model), the constant's from its own residuals: on standardised
    points (mean 0, std 1) its RSS is n, so BIC(flat) = n ln 1 + ln n = ln n; noise sits within EVIDENCE_BIC of it, a
    clear rise far past it."""
    from gspo_dynamics.fit import EVIDENCE_BIC

    t = np.arange(1, 41, dtype=float)
    noise = 0.35 + 0.04 * np.random.default_rng(37).standard_normal(40)
    rise = 0.8 - 0.6 * np.exp(-t / 10) + 0.01 * np.random.default_rng(1).standard_normal(40)
    for reward in (noise, rise):
        fit = fit_trajectory(t, reward)
        bic = fit.selection["bic"][fit.variant]
        assert fit.selection["delta_bic_flat"] == pytest.approx(math.log(40) - bic, abs=1e-9)
    flat, moved = (fit_trajectory(t, r).selection["delta_bic_flat"] for r in (noise, rise))
    assert flat <= EVIDENCE_BIC < moved
