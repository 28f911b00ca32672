"""gspo_dynamics.predict: the config-only stability bounds against a direct iteration of
the linearised update (a scalar loop, independent of `theory.linear`'s matrices)."""

from __future__ import annotations

import math

import pytest

from gspo_dynamics.predict import config_forecast, read_run_config


def grows(x: float, mu: float, T: int, periods: int = 3000) -> bool:
    """Iterate x_{j+1} = x_j + v_{j+1}, v_{j+1} = mu v_j - x_stiff * x_s (eta folded into v; all forces
    stale, x_s refreshed every T steps) from a unit deviation; growth of the state over `periods`
    periods means rho > 1 (neutral cases stay bounded: the start and end norms are compared with a margin)."""
    pos, vel = 1.0, 0.0
    start = 1.0
    for _ in range(periods):
        sampled = pos
        for _ in range(T):
            vel = mu * vel - x * sampled
            pos += vel
    return math.hypot(pos, vel) > 10 * start


@pytest.mark.parametrize("mu, T", [(0.0, 1), (0.9, 1), (0.0, 4), (0.9, 4), (0.5, 16), (0.9, 32)])
def test_stiffness_bound_separates_decay_from_growth(mu, T):
    """Just below x_max the iterated deviation decays, just above it grows (2% either side moves rho by
    ~3e-3 per period at mu = 0.9, T = 4, the slowest case here: 3000 periods make that a factor > 10)."""
    setup = read_run_config({"lr": 0.1, "refresh_interval": T, "group_size": 8, "optimizer": "sgd", "momentum": mu})
    f = config_forecast(setup)
    assert not grows(0.98 * f.stiffness_bound, mu, T)
    assert grows(1.02 * f.stiffness_bound, mu, T)
    if T == 1:
        assert f.stiffness_bound == pytest.approx(2 * (1 + mu), rel=1e-9) and f.stiffness_bound_continuous is None
    else:
        assert f.stiffness_bound_continuous == pytest.approx(2 * (1 - mu) / (T - 1))


def test_max_safe_refresh_is_the_last_stable_interval():
    f = config_forecast(read_run_config({"lr": 0.1, "refresh_interval": 4, "group_size": 8, "optimizer": "sgd", "momentum": 0.9}))
    for x, t_safe in f.max_safe_refresh.items():
        assert t_safe is not None and t_safe >= 1
        assert not grows(x, 0.9, t_safe) and grows(x, 0.9, t_safe + 1)


def test_zero_std_share_and_the_summary():
    setup = read_run_config({"learning_rate": 1e-6, "num_generations": 4, "steps_per_generation": 2})
    f = config_forecast(setup)
    assert f.zero_std_share[0.3] == pytest.approx(0.3**4 + 0.7**4)
    text = "\n".join(f.summary_lines())
    assert "TRL GRPOConfig" in text and "needs a pilot" in text and "Adam" in text and "T = 2" in text
    assert f.to_json()["config"]["refresh_interval"] == 2


@pytest.mark.parametrize("mu", [0.0, 0.5, 0.9, 0.99])
def test_the_on_policy_bound_is_heavy_balls_edge_2_1_plus_mu(mu):
    """x_max(1, mu) = 2 (1 + mu) in closed form, against `theory.linear`'s bisection (to its 1e-9 relative) and
    against the scalar loop 2% either side (for mu <= 0.9: at 0.99 the root near -1 moves too little in 3000
    periods to tell)."""
    from gspo_dynamics.theory.linear import critical_learning_rate

    bound = config_forecast(read_run_config({"lr": 1.0, "optimizer": "sgd", "momentum": mu, "refresh_interval": 1})
                            ).stiffness_bound_on_policy
    assert bound == 2.0 * (1.0 + mu) == pytest.approx(float(critical_learning_rate(1.0, 0.0, mu, 1)), rel=1e-9)
    if mu <= 0.9:
        assert not grows(0.98 * bound, mu, 1) and grows(1.02 * bound, mu, 1)
