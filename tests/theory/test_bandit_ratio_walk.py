"""The bandit's clip-aware ratio walk (`theory.bandit_ratio_walk`) and its use in `ratio_stability`,
against independent routes (float64):

* the step's lattice against `finite_group` (mean, variance) and against direct enumeration;
* the histogram walk against a particle Monte Carlo of the same Markov chain, written as a loop;
* limits: c_0 = 0, no clipping as eps -> infinity, the memoryless drift at j = 1;
* `ratio_stability`'s walk law: c_j handed to the threshold scan, the lognormal law unchanged.
"""

import itertools
import math

import numpy as np
import pytest

from gspo_dynamics import ConfigError
from gspo_dynamics.theory import finite_group
from gspo_dynamics.theory.bandit import TwoArmBandit, fixed_point, force, kl_force, sigmoid
from gspo_dynamics.theory.bandit_ratio_walk import (
    bandit_noise_drift,
    bandit_ratio_walk,
    group_mean_gradient_law,
    stationary_sampling_spread,
    step_factor,
    walk_step,
)
from gspo_dynamics.theory.hyperparams import SGD, Adam, Hyperparams
from gspo_dynamics.theory.ratio_stability import (
    bandit_clipped_fractions,
    bandit_critical_refresh_interval,
    bandit_noise_temperature_factor,
    critical_refresh_interval_ratio,
    noise_temperature_factor,
    window_clipped_fraction,
)

BANDIT = TwoArmBandit(ref_logit=-1.0)
Z_SCORE = 4.0  # statistical tolerance in standard errors (fixed seeds)
PARTICLES = 40_000
# The deposit moves each mass by at most one cell (h <= step sd / 4): variance + h^2/4 per step
# (<= 1/64 of a step's), and a tail probability by at most the mass of the cells next to a bound.
GRID_VAR_RTOL = 0.03
GRID_TAIL_ATOL = 0.004
QUADRATURE_RTOL = 1e-10  # exact sums, rounding only
# the momentum walk's (D, u) grid is coarse (MOMENTUM_CELLS): cell ~ 1/25 of D's stationary sd, so a
# bound's cell holds ~1/25 of the density there; deposits add h^2/4 per step (~0.04% of the variance)
MOMENTUM_GRID_TAIL_ATOL = 0.01
SPREAD_STEP = 1e-3  # rounding of the particles' sampling logits (see _particles)
# c_j is discontinuous in z_s (lattice atoms against the clip bounds): the walk's 25 equal-probability
# nodes over z_s carry an O(1/K) error there; 0.004 ~ 1/K times the largest jump of c_j (~0.1) seen
SPREAD_ATOL = 0.004


def _hp(**kw):
    base = dict(lr=2.0, kl_coef=0.5, group_size=4, correction="token", clip_low=0.2, clip_high=0.2, refresh_interval=8)
    return Hyperparams(**{**base, **kw})


# --- the step law ----------------------------------------------------------------------------


@pytest.mark.parametrize("advantage", ["mean", "std"])
@pytest.mark.parametrize("G, n", [(4, 1), (8, 3)])
def test_step_lattice_has_the_finite_group_moments_and_the_enumerated_law(advantage, G, n):
    hp = _hp(group_size=G, num_groups=n, advantage=advantage)
    p = 0.3
    atoms, probs = group_mean_gradient_law(p, hp)
    args = (G, advantage, hp.std_estimator, hp.std_eps)
    assert probs.sum() == pytest.approx(1.0, rel=QUADRATURE_RTOL)
    assert atoms @ probs == pytest.approx(float(finite_group.drive_factor(p, *args)), rel=QUADRATURE_RTOL)
    var = (probs * (atoms - atoms @ probs) ** 2).sum()
    assert var == pytest.approx(float(finite_group.group_gradient_variance(p, *args)) / n, rel=1e-9)
    # direct enumeration of every group's successes k_1..k_n
    coef = finite_group.group_gradient_coefficients(*args)
    pmf = [math.comb(G, k) * p**k * (1 - p) ** (G - k) for k in range(G + 1)]
    law = {}
    for ks in itertools.product(range(G + 1), repeat=n):
        value = round(sum(coef[k] for k in ks) / n, 10)
        law[value] = law.get(value, 0.0) + math.prod(pmf[k] for k in ks)
    for a, q in zip(atoms, probs):
        assert law[round(a, 10)] == pytest.approx(q, rel=1e-9)
    assert len(law) == atoms.size


def test_step_law_mean_is_the_theory_force_and_vanishes_at_the_fixed_point():
    hp = _hp()
    z = fixed_point(BANDIT, hp).logit
    step = walk_step(z, BANDIT, hp)
    D = np.linspace(-0.5, 0.5, 41)
    mean, _ = step.moments(D)
    # the corrected, PPO-clipped expected force of `bandit` at z = z* + D, z_s = z*
    np.testing.assert_allclose(mean, hp.lr * force(z + D, z, BANDIT, hp), rtol=1e-12, atol=1e-15)
    assert step.moments(np.zeros(1))[0][0] == pytest.approx(0.0, abs=1e-12)
    targets = step.targets(D)  # (C, A): the atoms' successors average to the mean step
    np.testing.assert_allclose(targets @ step.gradient_prob - D, mean, rtol=1e-10, atol=1e-14)


def test_step_factor_modes():
    D = np.linspace(-1.0, 1.0, 201)
    ps = 0.4
    p = sigmoid(math.log(ps / (1 - ps)) + D)
    none = step_factor(D, ps, 0.2, 0.2, "none")
    np.testing.assert_allclose(none, p * (1 - p) / (ps * (1 - ps)), rtol=1e-12)
    drop, stale = step_factor(D, ps, 0.2, 0.2, "drop"), step_factor(D, ps, 0.2, 0.2, "stale")
    w1, w0 = p / ps, (1 - p) / (1 - ps)
    inside = (w1 <= 1.2) & (w1 >= 0.8) & (w0 <= 1.2) & (w0 >= 0.8)
    np.testing.assert_allclose(stale[inside], none[inside], rtol=1e-12)
    # the PPO min drops action 1 (A >= 0) above 1 + eps_high and action 0 (A <= 0) below 1 - eps_low only
    ppo_cut = (w1 > 1.2) | (w0 < 0.8)
    assert ppo_cut.any() and (~ppo_cut & ~inside).any()
    np.testing.assert_allclose(drop[~ppo_cut], none[~ppo_cut], rtol=1e-12)
    assert (drop[ppo_cut] < none[ppo_cut]).all() and (drop <= stale + 1e-15).all()
    with pytest.raises(ConfigError, match="drop, stale, none"):
        step_factor(D, ps, 0.2, 0.2, "cispo")


# --- the walk against a particle Monte Carlo of the same chain --------------------------------


def _particles(hp, z_star, steps, clip_mode, spread, rng):
    """D particles stepped by the module docstring's chain: per step, each particle's group-mean
    gradient drawn from the lattice of its own sampling policy, the KL force and h(D) per particle.
    Sampling logits z_s ~ N(z*, spread^2) are rounded to SPREAD_STEP (their variance changes by
    SPREAD_STEP^2 / 12, ~1e-7 here) so that particles share lattices."""
    zs = z_star + np.round(spread * rng.standard_normal(PARTICLES) / SPREAD_STEP) * SPREAD_STEP  # (M,)
    ps = sigmoid(zs)
    lo, hi = (math.inf, math.inf) if clip_mode == "none" else (hp.clip_low, hp.clip_high)
    mu = hp.momentum
    groups = [(np.flatnonzero(zs == v), group_mean_gradient_law(float(sigmoid(v)), hp)) for v in np.unique(zs)]
    D = np.zeros(PARTICLES)
    # mu > 0: the velocity at the refresh, the noise-driven stationary law N(0, sigma^2 / (1 - mu^2))
    sigma2 = finite_group.group_gradient_variance(sigmoid(z_star), hp.group_size, hp.advantage) / hp.num_groups
    u = rng.standard_normal(PARTICLES) * math.sqrt(sigma2 / (1 - mu**2)) if mu > 0 else np.zeros(PARTICLES)
    history = [D.copy()]
    for _ in range(steps):
        g = np.empty(PARTICLES)
        for members, (atoms, probs) in groups:
            g[members] = rng.choice(atoms, size=members.size, p=probs / probs.sum())
        h = step_factor(D, ps, lo, hi, clip_mode)
        u = mu * u + kl_force(zs + D, BANDIT, hp) + h * g
        D = D + hp.lr * u
        history.append(D.copy())
    return zs, np.stack(history)  # (J, M)


def _mc_readouts(hp, zs, D, clip_mode):
    ps = sigmoid(zs)
    p = sigmoid(zs + D)
    w1, w0 = p / ps, (1 - p) / (1 - ps)
    x1, x0 = np.log(w1), np.log(w0)
    lo, hi = (math.inf, math.inf) if clip_mode == "none" else (hp.clip_low, hp.clip_high)
    cut = w1 * (1 - p) * (w1 > 1 + hi) + w0 * p * (w0 < 1 - lo)
    mean_x = (ps * x1 + (1 - ps) * x0).mean(-1)
    var = (ps * x1**2 + (1 - ps) * x0**2).mean(-1) - mean_x**2
    h2 = step_factor(D, ps, lo, hi, clip_mode) ** 2
    return var, cut, w1 * (1 - p) + w0 * p, h2


@pytest.mark.parametrize("advantage, spread, momentum", [("mean", 0.0, 0.0), ("std", 0.0, 0.0), ("mean", 0.2, 0.0),
                                                        ("mean", 0.0, 0.5), ("mean", 0.0, 0.9)])
def test_walk_matches_a_particle_monte_carlo_of_the_same_chain(advantage, spread, momentum):
    lr = (1.0 if advantage == "std" else 2.0) * (1 - momentum)
    hp = _hp(lr=lr, group_size=4 if advantage == "mean" else 8, advantage=advantage, optimizer=SGD(momentum=momentum))
    tail_atol = GRID_TAIL_ATOL if momentum == 0 else MOMENTUM_GRID_TAIL_ATOL
    z = fixed_point(BANDIT, hp).logit
    J = 10
    walk = bandit_ratio_walk(z, BANDIT, hp, J, sampling_spread=spread)
    rng = np.random.default_rng(11)
    zs, D = _particles(hp, z, J - 1, "drop", spread, rng)
    var, cut, norm, h2 = _mc_readouts(hp, zs, D, "drop")
    for j in range(1, J):
        se_var = np.sqrt(2.0 / PARTICLES) * var[j]
        assert walk.log_ratio_variance()[j] == pytest.approx(var[j], rel=GRID_VAR_RTOL, abs=Z_SCORE * se_var)
        # c_j = E[cut] / E[norm]: a ratio estimator; its SE from the delta method
        c = cut[j].mean() / norm[j].mean()
        se_c = np.std(cut[j] - c * norm[j]) / np.sqrt(PARTICLES) / norm[j].mean()
        assert abs(walk.clipped_fraction()[j] - c) <= Z_SCORE * se_c + tail_atol + (SPREAD_ATOL if spread else 0)
        se_h2 = np.std(h2[j]) / np.sqrt(PARTICLES)
        assert abs(walk.noise_factor()[j] - h2[j].mean()) <= Z_SCORE * se_h2 + tail_atol
    assert walk.clipped_fraction()[J - 1] > 0.005  # the check is not vacuous: the clip binds


# --- limits -----------------------------------------------------------------------------------


def test_window_start_and_unclipped_limit():
    hp = _hp()
    z = fixed_point(BANDIT, hp).logit
    for mode in ("drop", "stale"):
        walk = bandit_ratio_walk(z, BANDIT, hp, 12, clip_mode=mode)
        assert walk.clipped_fraction()[0] == 0.0 and walk.noise_factor()[0] == 1.0
        assert walk.log_ratio_variance()[0] == 0.0
    # eps -> infinity: nothing clipped, the same law as the unclipped walk
    wide = bandit_ratio_walk(z, BANDIT, _hp(clip_low=1 - 1e-12, clip_high=1e12), 12)
    free = bandit_ratio_walk(z, BANDIT, hp, 12, clip_mode="none")
    assert (wide.clipped_fraction() == 0.0).all()
    np.testing.assert_allclose(wide.density, free.density, rtol=0, atol=1e-15)
    np.testing.assert_allclose(wide.noise_factor(), free.noise_factor(), rtol=1e-13)
    # the clip walls hold the spread: the clipped walk's variance is below the free walk's
    clipped = bandit_ratio_walk(z, BANDIT, hp, 12)
    assert (clipped.log_ratio_variance()[1:] <= free.log_ratio_variance()[1:] + 1e-15).all()
    assert clipped.log_ratio_variance()[-1] < 0.95 * free.log_ratio_variance()[-1]  # 9% below at j = 11


def test_first_step_spread_is_the_memoryless_drift():
    # j = 1 from D_0 = 0: h(0) = 1 and the mean step vanishes, so Var[D_1] = eta^2 sigma^2 exactly and
    # Var_{pi_s}[log w] = p (1 - p) Var[D_1] up to the curvature of log w in D (relative O(D) ~ 1%).
    hp = _hp(lr=0.5, group_size=8, num_groups=4)
    z = fixed_point(BANDIT, hp).logit
    walk = bandit_ratio_walk(z, BANDIT, hp, 2, clip_mode="none")
    n = bandit_noise_drift(z, BANDIT, hp)
    assert walk.log_ratio_variance()[1] == pytest.approx(n**2, rel=0.02)
    sigma2 = finite_group.group_gradient_variance(sigmoid(z), 8, "mean") / 4
    assert n == pytest.approx(0.5 * math.sqrt(sigma2 * sigmoid(z) * (1 - sigmoid(z))), rel=1e-12)


def test_unclipped_spread_grows_monotonically_within_the_window():
    hp = _hp(lr=0.5, group_size=8, num_groups=4)  # eta b < 1: the AR(1) variance sum_i r^2i grows in j
    z = fixed_point(BANDIT, hp).logit
    var = bandit_ratio_walk(z, BANDIT, hp, 40, clip_mode="none").log_ratio_variance()
    assert (np.diff(var) > 0).all()
    c = bandit_ratio_walk(z, BANDIT, _hp(lr=0.5, group_size=8, num_groups=4, clip_low=0.05, clip_high=0.05), 40,
                          clip_mode="stale").clipped_fraction()
    assert (np.diff(c) >= -1e-12).all() and c[-1] > 0.01


def test_sampling_spread_from_the_linear_fluctuations():
    hp = _hp()
    z = fixed_point(BANDIT, hp).logit
    s = stationary_sampling_spread(z, BANDIT, hp)
    assert 0.0 < s < 1.0
    with pytest.raises(ConfigError, match="sampling spread"):
        bandit_ratio_walk(z, BANDIT, hp, 4, sampling_spread=-1.0)


# --- ratio_stability's walk law -----------------------------------------------------------------


def test_threshold_scan_with_given_clipped_fractions_equals_the_lognormal_route():
    # the same c_j handed over explicitly reproduces the lognormal scan exactly
    a_n, b_n, a_f, b_f, lr, mu = 0.3, 0.05, 0.0, 0.25, 0.5, 0.0
    kw = dict(length=4, clip_low=0.2, clip_high=0.28)
    c = np.array([window_clipped_fraction("sequence", 0.1, j, **kw) for j in range(400)])
    by_drift = critical_refresh_interval_ratio(a_n, b_n, a_f, b_f, lr, mu, correction="sequence", drift=0.1,
                                               t_max=400, **kw)
    given = critical_refresh_interval_ratio(a_n, b_n, a_f, b_f, lr, mu, correction="sequence", length=4,
                                            clipped_fractions=c, t_max=400)
    assert int(by_drift) == int(given) > 1
    # a stationary tail: the last row is held
    held = critical_refresh_interval_ratio(a_n, b_n, a_f, b_f, lr, mu, correction="sequence", length=4,
                                           clipped_fractions=np.full(3, c[-1]), t_max=400)
    const = critical_refresh_interval_ratio(a_n, b_n, a_f, b_f, lr, mu, correction="sequence", length=4,
                                            clipped_fractions=np.full(400, c[-1]), t_max=400)
    assert int(held) == int(const)
    with pytest.raises(ConfigError, match="clip_low and clip_high"):
        critical_refresh_interval_ratio(a_n, b_n, a_f, b_f, lr, mu, correction="sequence", drift=0.1, t_max=10)
    with pytest.raises(ConfigError, match="exactly one"):
        critical_refresh_interval_ratio(a_n, b_n, a_f, b_f, lr, mu, correction="sequence", drift=0.1,
                                        clipped_fractions=c, t_max=10, **kw)


def test_bandit_walk_law_is_the_default_and_feeds_the_threshold():
    hp = _hp(advantage="std", lr=1.0, group_size=8)
    z = fixed_point(BANDIT, hp).logit
    c = bandit_clipped_fractions(z, BANDIT, hp, 300)
    assert c[0] == 0.0 and c.max() > 0.01
    walk = bandit_ratio_walk(z, BANDIT, hp, 300)
    np.testing.assert_array_equal(c, walk.clipped_fraction())
    from gspo_dynamics.theory.ratio_stability import bandit_partials

    a_n, b_n, a_f, b_f = bandit_partials(z, BANDIT, hp)
    for mode in ("drop", "stale"):
        expected = critical_refresh_interval_ratio(a_n, b_n, a_f, b_f, hp.lr, hp.momentum, correction="token",
                                                   clipped_fractions=bandit_clipped_fractions(z, BANDIT, hp, 300, clip_mode=mode),
                                                   clip_mode=mode, t_max=300)
        got = bandit_critical_refresh_interval(z, BANDIT, hp, clip_mode=mode, t_max=300)
        assert int(got) == int(expected)
    window = bandit_ratio_walk(z, BANDIT, hp, hp.refresh_interval)  # T = 8 (the grid depends on the window)
    assert bandit_noise_temperature_factor(z, BANDIT, hp) == float(window.noise_factor().mean())


def test_bandit_lognormal_law_from_hp_uses_the_derived_drift():
    hp = _hp(lr=1.0, group_size=8)
    z = fixed_point(BANDIT, hp).logit
    n, q = bandit_noise_drift(z, BANDIT, hp), 1 - float(sigmoid(z))
    c = bandit_clipped_fractions(z, BANDIT, hp, 20, law="lognormal")
    expected = window_clipped_fraction("token", 0.0, np.arange(20), clip_low=0.2, clip_high=0.2, noise_drift=n,
                                       positive_share=q)
    np.testing.assert_array_equal(c, expected)
    factor = bandit_noise_temperature_factor(z, BANDIT, hp, law="lognormal")
    assert factor == pytest.approx(float(noise_temperature_factor("token", 0.0, 8, clip_low=0.2, clip_high=0.2,
                                                                  noise_drift=n, positive_share=q)), rel=1e-14)


def test_no_correction_is_not_clipped_and_bad_input():
    hp = _hp()
    z = fixed_point(BANDIT, hp).logit
    none = Hyperparams(lr=2.0, kl_coef=0.5, group_size=4)
    assert (bandit_clipped_fractions(z, BANDIT, none, 5) == 0).all()
    assert bandit_noise_temperature_factor(z, BANDIT, none) == 1.0
    with pytest.raises(ConfigError, match="lognormal"):
        bandit_critical_refresh_interval(z, BANDIT, hp, drift=0.1, law="walk")
    with pytest.raises(ConfigError, match="walk, lognormal"):
        bandit_clipped_fractions(z, BANDIT, hp, 5, law="gaussian")
    with pytest.raises(ConfigError, match="finite group size"):
        bandit_ratio_walk(z, BANDIT, _hp(group_size=None), 5)
    with pytest.raises(ConfigError, match="effective_sgd"):
        bandit_ratio_walk(z, BANDIT, _hp(optimizer=Adam()), 5)
    with pytest.raises(ConfigError, match="one position"):
        bandit_critical_refresh_interval(z, BANDIT, hp, length=4, t_max=5)
