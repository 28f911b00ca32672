"""implications(): the exact discrete regime and the plateau-extrapolation flag.

The exact regime is checked by an independent route: the monodromy built by multiplying T step
matrices in a Python loop (instead of `linear.monodromy`'s repeated squaring), classified by its
eigenvalues with numpy.linalg.eigvals.
"""

import dataclasses
import math

import numpy as np
import pytest

from gspo_dynamics.fit import fit_trajectory, implications
from gspo_dynamics.fit._trajectory import EXTRAPOLATION_LIMIT, plateau_extrapolation
from gspo_dynamics.theory import linear
from gspo_dynamics.theory.hyperparams import SGD, Hyperparams
from gspo_dynamics.theory.trajectory import oscillator_from_hyperparams, single_exponential, trajectory

RHO_TOL = 1e-9  # the tolerance `linear` uses for a neutral spectral radius


def _loop_regime(kappa: float, mu: float, T: int) -> str:
    S = linear.step_matrix(kappa, 0.0, 1.0, mu)  # all stale, eta = 1: the module's STALE_FRACTION = 1
    P = np.eye(3)
    for _ in range(T):
        P = S @ P
    M = P[:2, :2].copy()
    M[:, 0] += P[:2, 2]  # refresh: x_s <- x at the period start
    lam = np.linalg.eigvals(M)
    if np.max(np.abs(lam)) > 1.0 + RHO_TOL:
        return "unstable"
    rotating = np.any(np.abs(lam.imag) > 1e-14 * np.abs(lam)) or np.any(lam.real < 0)
    return "oscillatory" if rotating else "overdamped"


@pytest.mark.parametrize("mu,T", [(0.0, 1), (0.5, 1), (0.5, 4), (0.9, 1), (0.9, 3)])
def test_exact_regime_matches_a_loop_built_monodromy(mu, T):
    t = np.arange(300.0)
    r = single_exponential(t, 0.8, 0.2, 40.0) + np.random.default_rng(0).normal(0.0, 0.005, t.size)
    fit = fit_trajectory(t, r)
    hp = Hyperparams(lr=0.1, optimizer=SGD(momentum=mu), refresh_interval=T)
    imp = implications(fit, hp)
    assert imp.stiffness_per_step is not None
    assert imp.exact_regime == _loop_regime(imp.stiffness_per_step.value, mu, T)


def test_slow_start_at_t1_is_never_unstable_and_an_inconsistent_margin_is_noted():
    # a slow start (inertia, overdamped): the oscillator may be selected, but its damping is not identified
    lam, lr, mu = 0.004, 1.0, 0.5
    osc = oscillator_from_hyperparams(lam, 0.0, lr, mu, 1)
    t = np.arange(0.0, 600.0, 5.0)
    r = trajectory(osc, t, 0.85, 0.48, 0.0) + np.random.default_rng(1).normal(0.0, 0.01, t.size)
    fit = fit_trajectory(t, r)
    imp = implications(fit, Hyperparams(lr=lr, optimizer=SGD(momentum=mu), refresh_interval=1))
    assert not fit.oscillation
    assert imp.exact_regime != "unstable"
    assert imp.critical_refresh_interval is None or imp.critical_refresh_interval > 1
    if imp.damping_margin_source == "predicted":
        assert imp.damping_margin.value == pytest.approx(1.0)  # T = 1: no lag erosion, exactly
    else:  # measured: the rule says exactly 1 at T = 1, so a margin many s.e. away must be flagged
        off = abs(imp.damping_margin.value - 1.0) > 2.0 * imp.damping_margin.stderr
        assert off == any("disagrees with the rule" in n for n in imp.notes)


def test_plateau_extrapolation_definition():
    assert plateau_extrapolation(0.5, 0.0, 1.0) == 0.0
    assert plateau_extrapolation(1.5, 0.0, 1.0) == pytest.approx(0.5)
    assert plateau_extrapolation(-2.0, 0.0, 1.0) == pytest.approx(2.0)
    assert plateau_extrapolation(1.0, 0.5, 0.5) == math.inf
    assert EXTRAPOLATION_LIMIT < 1.0


@pytest.mark.parametrize("case", ["slow_start_early", "underdamped", "exponential", "overshoot_early"])
def test_selected_oscillator_never_wins_only_by_extrapolating(case):
    t = np.arange(0.0, 150.0)
    rng = np.random.default_rng(7)
    if case == "slow_start_early":  # observed well before the plateau: every plateau is an extrapolation
        osc = oscillator_from_hyperparams(0.0005, 0.0, 1.0, 0.9, 1)
        r = trajectory(osc, t, 1.0, 0.0, 0.0)
    elif case == "underdamped":
        osc = oscillator_from_hyperparams(0.02, 0.0, 1.0, 0.9, 1)
        r = trajectory(osc, t, 0.7, 0.2, 0.0)
    elif case == "exponential":
        r = single_exponential(t, 0.8, 0.2, 30.0)
    else:
        osc = oscillator_from_hyperparams(0.002, 0.0, 1.0, 0.9, 1)
        r = trajectory(osc, t, 0.9, 0.1, 0.0)
    fit = fit_trajectory(t, r + rng.normal(0.0, 0.01, t.size))
    ext = fit.selection["extrapolation"]
    if fit.model == "oscillator":
        assert ext[fit.variant] <= EXTRAPOLATION_LIMIT or ext["exponential"] > EXTRAPOLATION_LIMIT
    if fit.selection["extrapolation_overruled"]:
        assert fit.variant == "exponential"
    assert fit.plateau_extrapolation == ext[fit.variant]


@pytest.mark.parametrize("mu,T", [(0.0, 1), (0.5, 4), (0.9, 3)])
def test_the_theory_calls_stable_exactly_when_T_is_within_its_bound_in_the_overdamped_regime(mu, T):
    t = np.arange(300.0)
    r = single_exponential(t, 0.8, 0.2, 40.0) + np.random.default_rng(0).normal(0.0, 0.005, t.size)
    imp = implications(fit_trajectory(t, r), Hyperparams(lr=0.1, optimizer=SGD(momentum=mu), refresh_interval=T))
    within = imp.max_safe_refresh_interval is None or T <= imp.max_safe_refresh_interval
    assert imp.theory_calls_stable() == (within and imp.exact_regime != "oscillatory")
    assert not dataclasses.replace(imp, interior_plateau=False).theory_calls_stable()  # a plateau on the bound: no theory
    assert not dataclasses.replace(imp, exact_regime="oscillatory").theory_calls_stable()
    assert not implications(fit_trajectory(t, r)).theory_calls_stable()  # without hyperparameters: nothing to call
