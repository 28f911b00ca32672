"""Simulated stability boundaries against the exact linear theory (monodromy matrix).

The two routes share nothing but the bandit: the simulator measures growth of an offset from
the fixed point; the theory computes the spectral radius of the one-period map from the
analytic stiffnesses. They must name the same critical refresh interval wherever the
threshold is sharp (rho steps clearly across 1 between T_c - 1 and T_c: see stability.PERIODS).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from gspo_dynamics import ConfigError
from gspo_dynamics.sim import BanditTask, simulated_critical_refresh_interval
from gspo_dynamics.sim.stability import PERIODS, fixed_points
from gspo_dynamics.theory import bandit as tb
from gspo_dynamics.theory import linear
from gspo_dynamics.theory.hyperparams import Adam, Hyperparams, SGD

T_MAX = 12
# Sharp thresholds only: growth per period at T_c of at least RHO_UNSTABLE (PERIODS periods then
# amplify > 10x), decay at T_c - 1 of at most RHO_STABLE.
RHO_UNSTABLE = 1.03
RHO_STABLE = 0.99
FIXED_POINT_TOL = 1e-12


def _base(lr, mu, beta, **kw):
    return Hyperparams(lr=lr, optimizer=SGD(momentum=mu), kl_coef=beta, **kw)


CASES = [
    (1.0, [_base(4.0, 0.0, 1.0), _base(1.0, 0.9, 3.0), _base(4.0, 0.9, 1.0), _base(4.0, 0.9, 3.0), _base(1.0, 0.0, 3.0), _base(4.0, 0.0, 3.0)]),
    (1.0, [_base(4.0, 0.0, 3.0, advantage="std"), _base(4.0, 0.9, 3.0, advantage="std")]),
    (-1.0, [_base(4.0, 0.0, 3.0, advantage="std", correction="token"), _base(1.0, 0.0, 3.0, advantage="std", correction="token")]),
    (1.0, [_base(lr, mu, beta, group_size=4, correction="sequence") for lr, mu, beta in [(8.0, 0.0, 2.3), (8.0, 0.5, 2.3), (4.0, 0.8, 1.3)]]),
]


def _theory(bandit, hp):
    """(critical T from the monodromy matrix, rho(M(T)) for T = 1..T_MAX)."""
    z_star = tb.fixed_point(bandit, hp).logit
    a, b = tb.stiffness_partials(z_star, bandit, hp)
    rho = linear.spectral_radius_by_interval(a, b, hp.lr, hp.momentum, T_MAX)
    return int(linear.critical_refresh_interval(a, b, hp.lr, hp.momentum, T_MAX)), rho


@functools.cache  # one simulation per case for the module: the reference-start test reuses case 0's
def _simulated_local(case: int) -> np.ndarray:
    """The simulated local-start thresholds of CASES[case]'s configs (each row of the batch its own run)."""
    ref_logit, hps = CASES[case]
    return simulated_critical_refresh_interval(tb.TwoArmBandit(ref_logit=ref_logit), hps, T_MAX)


@pytest.mark.parametrize("case", range(len(CASES)))
def test_local_threshold_equals_linear_theory(case):
    ref_logit, hps = CASES[case]
    bandit = tb.TwoArmBandit(ref_logit=ref_logit)
    simulated = _simulated_local(case)
    for i, hp in enumerate(hps):
        T_c, rho = _theory(bandit, hp)
        if T_c:  # premise: a sharp threshold
            assert rho[T_c - 1] >= RHO_UNSTABLE and (T_c == 1 or rho[T_c - 2] <= RHO_STABLE), rho
        else:
            assert np.all(rho <= RHO_STABLE), rho
        assert simulated[i] == T_c, f"config {i}: simulated {simulated[i]}, theory {T_c} (rho {rho})"


def test_the_cases_include_stable_and_unstable_thresholds():
    bandit = tb.TwoArmBandit(ref_logit=1.0)
    found = {_theory(bandit, hp)[0] for hp in CASES[0][1]}
    assert 0 in found and len(found - {0}) >= 3


def test_reference_start_agrees_where_the_dynamics_are_tame_and_flags_blow_up():
    """Where every stable T contracts fast enough to converge within the horizon, starting at
    the reference finds the same threshold; a huge lr overshoots to saturation at T = 1."""
    bandit = tb.TwoArmBandit(ref_logit=1.0)
    hps = CASES[0][1][2:] + [_base(60.0, 0.0, 1.0)]
    local = _simulated_local(0)[2:]  # case 0's local thresholds of the same configs
    reference = simulated_critical_refresh_interval(bandit, hps, T_MAX, start="reference")
    np.testing.assert_array_equal(reference[:-1], local)
    assert reference[-1] == 1


def test_single_config_returns_an_int():
    T_c = simulated_critical_refresh_interval(BanditTask.two_arm(1.0), _base(4.0, 0.0, 1.0), T_MAX)
    assert isinstance(T_c, int) and T_c == 7


@pytest.mark.parametrize("shared", [{}, {"advantage": "std", "group_size": 3}, {"kl_estimator": "k3", "correction": "token"}])
def test_fixed_points_match_the_theory_root(shared):
    bandit = tb.TwoArmBandit(ref_logit=-0.5)
    hps = [_base(1.0, 0.0, 0.55, **shared), _base(0.01, 0.0, 0.15, **shared), _base(50.0, 0.9, 2.1, **shared)]
    z_star = fixed_points(BanditTask.from_theory(bandit), hps)
    want = [tb.fixed_point(bandit, hp).logit for hp in hps]
    np.testing.assert_allclose(z_star, want, atol=FIXED_POINT_TOL, rtol=0)


def test_default_horizon_resolves_the_stated_growth():
    assert RHO_UNSTABLE**PERIODS > 10.0 and RHO_STABLE**PERIODS < 1.0


@pytest.mark.parametrize(
    "bandit, hps, kwargs, match",
    [
        (tb.TwoArmBandit(), [Hyperparams(lr=0.1, optimizer=Adam(), kl_coef=1.0)], {}, "Adam"),
        (tb.TwoArmBandit(), [_base(1.0, 0.0, 0.0)], {}, "kl_coef = 0"),
        (tb.TwoArmBandit(), [_base(1.0, 0.0, 0.3, advantage="std")], {}, "saturates"),
        (BanditTask.k_arm([0.0, 1.0, 0.5]), [_base(1.0, 0.0, 1.0)], {}, "two-arm"),
        (BanditTask.prompts([0.2, 0.4]), [_base(1.0, 0.0, 1.0)], {}, "two-arm"),
        (tb.TwoArmBandit(), [_base(1.0, 0.0, 1.0)], {"start": "middle"}, "start"),
        (tb.TwoArmBandit(), [_base(1.0, 0.0, 1.0)], {"horizon": 5}, "horizon"),
    ],
)
def test_bad_input_raises(bandit, hps, kwargs, match):
    with pytest.raises(ConfigError, match=match):
        simulated_critical_refresh_interval(bandit, hps, T_MAX, **kwargs)
