"""The data behind each figure, on tiny inputs, checked by a route independent of the one plotted."""

import math

import numpy as np
import pytest

from gspo_dynamics.experiments import _group_size, _sequence, _stability, _trajectories
from gspo_dynamics.plots.figures import _group_size as group_size_plots, _stability as stability_plots
from gspo_dynamics.theory import linear
from gspo_dynamics.theory.bandit import TwoArmBandit, sigmoid
from gspo_dynamics.theory.hyperparams import SGD, Hyperparams

BANDIT = TwoArmBandit(ref_logit=-1.0)

BASE = Hyperparams(lr=1.0, kl_coef=0.5)


@pytest.fixture(scope="module")
def panels():
    lr = np.geomspace(0.5, 5.0, 6)
    return _stability.phase_diagram_data(BANDIT, BASE, (0.0, 0.9), lr, lr[[0, -1]], t_max=24, sim_horizon=1200)


def test_phase_diagram_exact_boundary_is_the_first_unstable_cell(panels):
    # Two routes to T_c: the running monodromy scan (plotted line) and the regime map built from
    # M(T) by repeated squaring, cell by cell. Integers: exact agreement.
    for p in panels:
        unstable = p.regime == _stability.REGIMES.index("unstable")  # (t_max, n)
        first = np.where(unstable.any(axis=0), unstable.argmax(axis=0) + 1, linear.STABLE)
        np.testing.assert_array_equal(first, p.exact)


def test_phase_diagram_continuous_rule_matches_its_closed_form(panels):
    a, _ = _stability.stiffness(BANDIT, BASE)
    for p in panels:
        t_star = 1.0 + 2.0 * (1.0 - p.momentum) / (p.lr * a)  # c(T) = 0
        expected = np.where(np.ceil(t_star) <= 24, np.ceil(t_star), linear.STABLE)
        np.testing.assert_array_equal(expected, p.continuous)


def test_phase_diagram_simulated_boundary_follows_the_exact_one(panels):
    # The simulation resolves T_c to +-1 near neutral stability (sim.stability.PERIODS); a short
    # horizon (1200 steps = 50 periods of T = 24) keeps that resolution for these configs.
    for p in panels:
        exact = np.array([p.exact[np.argmin(np.abs(p.lr - x))] for x in p.sim_lr])
        assert np.all(np.abs(exact - p.simulated) <= 1), (p.momentum, exact, p.simulated)


def test_critical_momentum_solves_the_damping_ratio_equation():
    a, b = 0.09, 0.007
    for lr in (0.05, 0.2, 1.0):
        mu = _trajectories.critical_momentum(a, b, lr)
        # zeta = 1 <=> (1 - mu)^2 = 4 m k = 2 (1 + mu) lr (a + b): an independent closed form
        assert (1 - mu) ** 2 == pytest.approx(2 * (1 + mu) * lr * (a + b), rel=1e-9)


def test_regime_curves_start_at_the_reference_and_track_the_theory():
    base = Hyperparams(lr=0.2, kl_coef=0.5, group_size=8, num_groups=4)
    configs = _trajectories.regime_configs(BANDIT, base, lr=0.2, underdamped_momentum=0.9)
    assert [round(c.momentum, 3) for c in configs.values()][::2] == [0.0, 0.9]
    curves = _trajectories.regime_data(BANDIT, configs, steps=80, seeds=64, fit=False)  # fits: ~4 s each
    zetas = [c.zeta for c in curves]
    assert zetas[0] > 1 and zetas[1] == pytest.approx(1.0, abs=1e-9) and zetas[2] < 1
    for c in curves:
        assert c.mean[0] == pytest.approx(sigmoid(-1.0)) and c.theory[0] == pytest.approx(sigmoid(-1.0))
        # finite-G mean vs exact expected map: 5 s.e. plus the second-order noise bias (< 2e-3,
        # paper_repro/one_over_g.py's allowance)
        assert np.all(np.abs(c.mean - c.theory) <= 5 * c.se + 2e-3)


def test_slow_start_is_quadratic_and_beats_the_exponential():
    hp = Hyperparams(lr=0.02, optimizer=SGD(momentum=0.9), kl_coef=0.5)
    d = _trajectories.slow_start_data(BANDIT, hp, steps=300)
    assert d.oscillator.r_squared > d.exponential.r_squared
    # from rest the rise is super-linear: R(4) - R(0) over R(2) - R(0) is 2 for a linear start
    # (the exponential's) and 4 for a pure quadratic; momentum 0.9 gives ~3 in the simulation
    rise = d.reward - d.reward[0]
    assert rise[4] / rise[2] > 2.5
    # the drawn quadratic is the fitted oscillator's t -> 0 expansion: same curvature at t = 0
    t = d.steps.astype(float)
    second = np.diff(d.oscillator.predict(t[:3]), 2)[0]  # ~ R''(0) of the fit (unit steps)
    assert np.diff(d.quadratic[:3], 2)[0] == pytest.approx(second, rel=0.1)


def test_zero_variance_simulation_agrees_with_the_binomial_law():
    d = _group_size.zero_variance_data((2, 8), [0.1, 0.5, 0.9], samples=20_000, seed=3)
    for i, G in enumerate(d.groups):
        expected = d.p_points**G + (1 - d.p_points) ** G  # the law, written out here
        se = np.sqrt(expected * (1 - expected) / d.samples)
        assert np.all(np.abs(d.simulated[i] - expected) <= 5 * se + 1e-12)
        np.testing.assert_allclose(np.interp(d.p_points, d.p, d.theory[i]), expected, rtol=1e-12)


def test_group_size_fluctuation_is_near_the_lyapunov_level():
    sweep_base = Hyperparams(lr=0.5, refresh_interval=2, kl_coef=0.5)
    d = _group_size.group_size_data(BANDIT, sweep_base, (4, 16), (4, 16), steps=400, seeds=128)
    # 128 seeds x ~200 correlated stationary steps: the estimate is good to ~10%; allow 30%
    np.testing.assert_allclose(d.variance, d.lyapunov, rtol=0.3)
    assert d.variance[0] / d.variance[1] == pytest.approx(4.0, rel=0.35)  # ~1/G between G = 4 and 16
    assert d.mean.shape == d.theory.shape == (2, len(d.steps))


def test_churn_is_zero_right_after_a_refresh():
    d = _sequence.churn_data((1, 2), steps=4, seeds=1)
    assert d.window_mean[0] == 0.0  # T = 1: always on-policy
    assert d.by_position[2][0] < 1e-3  # j = 0: only rounding between sampler and teacher forcing
    assert math.isfinite(d.by_position[2][1])


def test_panels_label_their_axes(panels):
    from matplotlib.figure import Figure

    fig = Figure()
    axes = fig.subplots(1, 3)
    stability_plots.draw_phase_diagram(axes[0], panels[0])
    d = _group_size.zero_variance_data((2, 4), [0.5], samples=100)
    group_size_plots.draw_zero_variance(axes[1], d)
    group_size_plots.draw_zero_variance_vs_group(axes[2], d, (0.5,))
    for ax in axes:
        assert ax.get_xlabel() and ax.get_ylabel() and ax.get_title()
    assert axes[0].get_ylabel() == "refresh interval T (steps)"
    labels = axes[0].get_legend_handles_labels()[1]
    assert labels == ["exact discrete $T_c$", "continuous rule $T_c$", "simulated $T_c$"]


def test_ratio_walk_advantage_moments_match_sampled_groups():
    # Independent route: draw whole groups of the uniform policy (every member's L tokens) and read
    # the member advantages at a target / non-target token; Monte Carlo on both sides (20k groups x
    # 8 members vs 20k draws): s.e. ~1-2% of each moment, tolerance 0.03 absolute (moments ~0.3-1).
    import torch

    from gspo_dynamics.objectives import group_advantages

    L, V, G = 3, 15, 8
    probs, target = np.full((L, V), 1.0 / V), np.array(_sequence.PatternMatch(length=L).target)
    adv, pos, neg = _sequence.signed_advantage(probs, target, np.random.default_rng(0), group_size=G, draws=20_000)
    pos, neg = ((probs * w).sum(-1).mean() for w in (pos, neg))  # the advantage-sign shares
    rng = np.random.default_rng(1)
    matches = rng.random((20_000, G, L)) < 1.0 / V  # (M, G, L) position t matches its target
    a = group_advantages(torch.from_numpy(matches.mean(-1)), scale="group").numpy()  # (M, G)
    hit, miss = a[matches[..., 0]], a[~matches[..., 0]]  # member advantages given position 0 (mis)matches
    for sample, row in ((hit, (0, _sequence.PatternMatch(length=L).target[0])), (miss, None)):
        y = row if row is not None else (0, (_sequence.PatternMatch(length=L).target[0] + 1) % V)
        assert adv.pos_mean[y] == pytest.approx(np.maximum(sample, 0).mean(), abs=0.03)
        assert adv.neg_mean[y] == pytest.approx(np.minimum(sample, 0).mean(), abs=0.03)
        assert adv.pos_sq[y] == pytest.approx((np.maximum(sample, 0) ** 2).mean(), abs=0.03)
    assert pos == pytest.approx((a > 0).mean(), abs=0.01) and neg == pytest.approx((a < 0).mean(), abs=0.01)


def test_ratio_data_walk_tracks_grpo_token_variance_and_lognormal_identities():
    d = _sequence.ratio_data((1, 16), seeds=2, refresh_interval=4, lr_per_token=3.0)
    for o in _sequence.OBJECTIVES:
        # L = 1: log s = log w_1, so the two measured variances coincide exactly
        assert d.seq_var[o][0] == pytest.approx(d.token_var[o][0], rel=1e-9)
        # the lognormal line is sigma^2 / L at the measured sigma^2 (steps of equal length L; means are linear)
        np.testing.assert_allclose(d.seq_var_theory[o], d.token_var[o] / d.lengths, rtol=1e-9)
        assert np.all((d.clip[o] >= 0) & (d.clip[o] <= 1) & (d.clip_theory[o] >= 0) & (d.clip_theory[o] <= 1))
    # the walk's sequence law is the L-fold convolution of its token law: Var[log s] = Var[log w] / L
    # (positions alike and independent); the FFT on the grid keeps this to rounding (1e-6 relative)
    np.testing.assert_allclose(d.walk_seq_var, d.walk_token_var / d.lengths, rtol=1e-6)
    # the walk predicts GRPO's measured token variance (2 seeds x 3 stale steps: ~20% noise; allow 40%)
    np.testing.assert_allclose(d.token_var["grpo"], d.walk_token_var, rtol=0.4)
    assert np.all((d.walk_clip >= 0) & (d.walk_clip <= 1))
