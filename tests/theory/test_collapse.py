"""theory.collapse against an independent route: Adam (and SGD) on a K-armed softmax bandit whose
sampler is frozen for a window, in plain numpy. The premises of equation (1): the log-ratio spread
grows linearly in the window position, in proportion to lr, and (for Adam, not SGD) free of the
reward's scale."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.theory import collapse

K = 12


def window(lr: float, steps: int, *, optimizer: str = "adam", reward_scale: float = 1.0, seed: int = 0) -> np.ndarray:
    """Log-ratio spread sigma_j (j = 0 .. steps) over the frozen sampler pi_old of a K-armed bandit:
    each step ascends E_{y ~ pi_old}[A(y) grad log pi_z(y)] (no correction: the stale pg gradient,
    exact expectation), A = r - E_old r, with Adam (b1 0.9, b2 0.999, bias-corrected) or plain SGD."""
    rng = np.random.default_rng(seed)
    z0 = rng.normal(0, 1, K)
    r = reward_scale * rng.random(K)
    p_old = np.exp(z0 - z0.max())
    p_old /= p_old.sum()
    A = r - p_old @ r
    z, m, v = z0.copy(), np.zeros(K), np.zeros(K)
    spreads = [0.0]
    for t in range(1, steps + 1):
        p = np.exp(z - z.max())
        p /= p.sum()
        grad = p_old * A - (p_old @ A) * p  # E_old[A (e_y - p)]
        if optimizer == "adam":
            m = 0.9 * m + 0.1 * grad
            v = 0.999 * v + 0.001 * grad**2
            z = z + lr * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-12)
        else:
            z = z + lr * grad
        logp = z - z.max() - np.log(np.exp(z - z.max()).sum())
        log_ratio = logp - np.log(p_old)
        mean = p_old @ log_ratio
        spreads.append(float(np.sqrt(p_old @ (log_ratio - mean) ** 2)))
    return np.asarray(spreads)


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_spread_grows_linearly_in_the_window_position(optimizer):
    """sigma_j = j sigma_1 to first order: within 5% for j <= 8 at a small step (the second-order term
    is ~ j^2 lr^2 against j lr)."""
    lr = 1e-3 if optimizer == "adam" else 1e-2
    s = window(lr, 8, optimizer=optimizer)
    j = np.arange(1, 9)
    np.testing.assert_allclose(s[1:] / (j * s[1]), 1.0, rtol=0.05)


def test_adam_drift_is_proportional_to_lr_and_free_of_the_reward_scale():
    """delta = lr s: doubling lr doubles sigma_1 (Adam's first step is lr sign(g): exactly); scaling the
    reward by 10 leaves Adam's drift unchanged and multiplies SGD's by 10 (equation (1)'s remark)."""
    a1, a2 = window(1e-3, 4)[1:], window(2e-3, 4)[1:]
    np.testing.assert_allclose(a2 / a1, 2.0, rtol=0.02)
    np.testing.assert_allclose(window(1e-3, 4, reward_scale=10.0)[1:], a1, rtol=1e-6)
    sgd, sgd_scaled = window(1e-2, 4, optimizer="sgd")[1:], window(1e-2, 4, optimizer="sgd", reward_scale=10.0)[1:]
    np.testing.assert_allclose(sgd_scaled / sgd, 10.0, rtol=0.05)


@pytest.mark.parametrize("clip", [None, 0.2, 3.0])
def test_thresholds_are_the_boundary_of_a_scan_of_the_displacement(clip):
    """T_max and lr_max of equations (3)-(4) against a scan of D (eq. (2)/(4)) over T = 1 .. 400 and a fine
    lr grid; the clip at 0.2 (band edge 0.18 < S) leaves only the first step, at 3.0 (1.39 > S) bounds T."""
    s, S = 30.0, 0.5
    for lr in (1e-4, 1e-3, 5e-3, 2e-2):
        safe = [T for T in range(1, 401) if collapse.displacement(s, lr, T, clip) <= S]
        expected = None if len(safe) == 400 else (max(safe) if safe else 0)
        assert collapse.max_safe_refresh_interval(s, lr, S, clip) == expected
    for T in (1, 2, 8, 32):
        lrs = np.geomspace(1e-5, 1.0, 4001)
        safe = [lr for lr in lrs if collapse.displacement(s, lr, T, clip) <= S]
        lr_max = collapse.max_safe_learning_rate(s, T, S, clip)
        assert max(safe) <= lr_max * (1 + 1e-12) and min(x for x in lrs if x not in safe) > lr_max


def test_the_displacement_counts_the_on_policy_step():
    """D = T lr s (eq. (2)): one step's move at T = 1, sigma_T of eq. (1) at any T."""
    assert collapse.displacement(30.0, 1e-3, 1) == pytest.approx(0.03)
    assert collapse.displacement(30.0, 1e-3, 8) == pytest.approx(collapse.window_spread(30.0, 1e-3, 8))


@pytest.mark.parametrize("call", [lambda: collapse.window_spread(-1.0, 1e-3, 2), lambda: collapse.max_safe_refresh_interval(1.0, 0.0, 0.5),
                                  lambda: collapse.max_safe_learning_rate(1.0, 0, 0.5), lambda: collapse.window_spread(1.0, 1e-3, -1),
                                  lambda: collapse.displacement(1.0, 1e-3, 2, -0.2)])
def test_bad_values_are_config_errors(call):
    with pytest.raises(ConfigError):
        call()


def test_a_clip_bounds_the_displacement_at_the_band_edge_but_not_the_first_step():
    """Equation (4): the band edge log(1.28) caps a long window; a single step past it is not capped."""
    assert collapse.displacement(50.0, 1e-3, 10) == pytest.approx(0.5)
    assert collapse.displacement(50.0, 1e-3, 10, 0.28) == pytest.approx(math.log(1.28))
    assert collapse.displacement(50.0, 1e-4, 2, 0.28) == pytest.approx(0.01)
    assert collapse.displacement(50.0, 1e-1, 10, 0.28) == pytest.approx(5.0)


def test_the_relative_limit_scales_with_the_entropy():
    """Equation (5): the absolute limit is S H; bad values are ConfigErrors."""
    assert collapse.relative_limit(5.0, 0.4) == pytest.approx(2.0)
    with pytest.raises(ConfigError):
        collapse.relative_limit(5.0, 0.0)


@pytest.mark.parametrize("entropy, expected", [
    ([0.50, 0.80, 0.90, 0.88], True),  # pattern/grpo's pilot: +80% on the first updates
    ([2.65, 2.63, 2.62, 2.54], False),  # count/pg's: falls as it sharpens
    ([0.50, 0.60, 0.62, 0.55], False),  # +24%: under the quarter
    ([0.50, 0.50, 0.50, 0.50, 0.90], False),  # a rise after the first OVERSHOOT_STEPS steps is not looked at
    ([0.50, float("nan"), 0.70], True),  # a missing value is skipped
    ([0.5], False), ([], False), ([0.0, 0.3], False),  # nothing to compare with
])
def test_overshoot_is_an_early_entropy_rise_over_a_quarter(entropy, expected):
    assert collapse.overshoots(entropy) is expected


@pytest.mark.parametrize("entropy, rise", [
    ([0.50, 0.80, 0.90, 0.88], 0.8), ([2.65, 2.63, 2.62, 2.54], 2.63 / 2.65 - 1), ([0.50, float("nan"), 0.70], 0.4),
    ([0.5], None), ([], None), ([0.0, 0.3], None),
])
def test_entropy_rise_is_the_largest_early_ratio_minus_one(entropy, rise):
    got = collapse.entropy_rise(entropy)
    assert got is None if rise is None else got == pytest.approx(rise)


@pytest.mark.parametrize("rise", [0.05, 0.25, 0.8, 1.7])
def test_the_overshoot_bound_is_where_the_scaled_rise_passes_a_quarter(rise):
    """Equation (6) against a scan of lr: r lr / lr_pilot <= OVERSHOOT_RISE exactly up to the bound; no
    bound when the entropy fell or is unknown."""
    lr_pilot = 3e-3
    bound = collapse.overshoot_max_learning_rate(rise, lr_pilot)
    lrs = lr_pilot * np.geomspace(0.01, 100, 4001)
    safe = lrs[rise * lrs / lr_pilot <= collapse.OVERSHOOT_RISE]
    assert safe.max() <= bound < lrs[len(safe)]
    assert collapse.overshoot_max_learning_rate(-0.01, lr_pilot) is None and collapse.overshoot_max_learning_rate(None, 1.0) is None


@pytest.mark.parametrize("clip", [None, 0.2, 1e6])
def test_displacement_grid_is_the_scalar_displacement_at_every_cell(clip):
    """Vectorised against the loop over the scalar `displacement` (equations (2), (4)): equal to rounding."""
    lrs, Ts = np.geomspace(1e-4, 1e-1, 13), np.array([1, 2, 4, 16, 64])
    grid = collapse.displacement_grid(7.0, lrs, Ts, clip)
    loop = np.array([[collapse.displacement(7.0, lr, int(T), clip) for lr in lrs] for T in Ts])
    assert grid.shape == (len(Ts), len(lrs)) and np.allclose(grid, loop, rtol=1e-12, atol=0)


def test_the_signal_share_divides_the_limit():
    """Equation (7): (1 - z) D > S H is D > S H / (1 - z); at_risk over a grid with a signal share g is
    at_risk at the limit S / g (a scan of g), and a share outside (0, 1] is a ConfigError."""
    assert collapse.relative_limit(0.3, 2.0, 0.25) == pytest.approx(2.4)
    lrs, Ts = np.geomspace(1e-4, 1e-1, 17), [1, 4, 16, 32]
    for g in (1.0, 0.5, 0.1, 0.01):
        weighted = collapse.at_risk(7.0, 0.8, 0.3, 3e-3, lrs, Ts, 0.3, 0.2, signal_share=g)
        D = collapse.displacement_grid(7.0, lrs, Ts, 0.2)
        assert np.array_equal(weighted, (g * D / 0.8 > 0.3) | (0.3 * lrs / 3e-3 > collapse.OVERSHOOT_RISE)[None, :])
    for bad in (0.0, -0.1, 1.5, float("nan")):
        with pytest.raises(ConfigError):
            collapse.relative_limit(0.3, 2.0, bad)


def test_the_runs_signal_share_is_the_mean_over_a_run_four_times_its_pilot():
    """Equation (9) against a simulated run of 4 x 2,500 steps of 8 groups: its first quarter's groups flat with
    the pilot's chance z_p, the rest groups of G Bernoulli(p_h) rewards, flat when all agree; the run's mean share
    of groups with signal (80,000 groups: standard error <= 0.0018, tolerance 0.008, 4.5 sigma). Bad input is a
    ConfigError."""
    rng = np.random.default_rng(11)
    for pilot_share, p_h, G in ((0.6, 0.9, 8), (0.3, 0.97, 4), (0.8, 0.5, 16), (0.5, 0.0, 8)):
        first = rng.random((2_500, 8)) < pilot_share  # a group with signal
        rewards = rng.random((7_500, 8, G)) < p_h
        rest = rewards.any(axis=2) & ~rewards.all(axis=2)
        simulated = np.concatenate([first.ravel(), rest.ravel()]).mean()
        assert collapse.run_signal_share(pilot_share, p_h, G) == pytest.approx(simulated, abs=0.008)
    assert collapse.run_signal_share(0.6, 0.9, 8, weight=1.0) == pytest.approx(0.6)
    for p in (0.0, 0.2, 0.5, 0.93, 1.0):  # the held term is symmetric in success and failure, 0 at either bound
        assert collapse.held_signal_share(p, 8) == pytest.approx(collapse.held_signal_share(1 - p, 8), abs=1e-15)
    assert collapse.held_signal_share(1.0, 8) == 0.0 and collapse.held_signal_share(0.7, 1) == 0.0  # one draw never differs
    assert collapse.run_signal_share(np.float32(0.5), np.float64(0.5), np.int64(8)) == pytest.approx(
        0.125 + 0.75 * (1 - 2 * 0.5**8))  # numpy scalars are numbers
    assert collapse.run_signal_share(0.6, 0.5, 2, weight=0.0) == pytest.approx(0.5)
    for bad in (dict(pilot_share=0.0), dict(pilot_share=1.2), dict(held_success=1.1), dict(held_success=-0.1),
                dict(group_size=0), dict(weight=1.5), dict(held_success=float("nan"))):
        with pytest.raises(ConfigError):
            collapse.run_signal_share(**(dict(pilot_share=0.5, held_success=0.5, group_size=8) | bad))


def test_a_survived_displacement_raises_the_limit_to_it():
    """Equation (8): at_risk with the displacement D_p a pilot survived is at_risk at the absolute limit
    max(S H / (1 - z), D_p) (a scan of D_p below and above S H / (1 - z), against the displacement grid); the
    pilot's own cell is then never at risk by displacement; None leaves the bound; D_p <= 0 is a ConfigError."""
    lrs, Ts = np.geomspace(1e-4, 1e-1, 17), [1, 2, 4, 16, 32]
    S, H, g = 0.3, 0.02, 0.4
    bound = S * H / g
    D = collapse.displacement_grid(7.0, lrs, Ts, 0.2)
    for survived in (None, 0.5 * bound, bound, 1.7 * bound, 40 * bound):
        risk = collapse.at_risk(7.0, H, None, 3e-3, lrs, Ts, S, 0.2, signal_share=g, survived=survived)
        assert np.array_equal(risk, D > (bound if survived is None else max(bound, survived)))
        assert collapse.survived_limit(bound, survived) == (bound if survived is None else max(bound, survived))
    lr_p, T_p = 3e-3, 2
    own = collapse.displacement(7.0, lr_p, T_p, 0.2)
    assert own > bound  # the pilot alone would be flagged by (7) ...
    assert not collapse.at_risk(7.0, H, None, lr_p, [lr_p], [T_p], S, 0.2, g, survived=own)[0, 0]  # ... not by (8)
    assert collapse.at_risk(7.0, H, None, lr_p, [lr_p], [T_p], S, 0.2, g)[0, 0]
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ConfigError):
            collapse.survived_limit(bound, bad)


def stale_log_ratios(lr: float, steps: int, *, weight_cap: float | None, floor: float = 0.0,
                     seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Per-arm log ratios log pi / pi_old (steps + 1, K) over a frozen sampler of `window`'s bandit, and the arms'
    advantages A: Adam ascends E_old[c(y) A(y) grad log pi(y)] with c = 1 (pg) or CISPO's sg[clip(w, floor, 1 +
    eps_high)], w = pi / pi_old (`weight_cap` = eps_high; `floor` = 1 - eps_low, 0: none)."""
    rng = np.random.default_rng(seed)
    z0 = rng.normal(0, 1, K)
    r = rng.random(K)
    p_old = np.exp(z0 - z0.max())
    p_old /= p_old.sum()
    A = r - p_old @ r
    z, m, v = z0.copy(), np.zeros(K), np.zeros(K)
    ratios = [np.zeros(K)]
    for t in range(1, steps + 1):
        p = np.exp(z - z.max())
        p /= p.sum()
        c = p_old * A * (1.0 if weight_cap is None else np.clip(p / p_old, floor, 1 + weight_cap))
        grad = c - c.sum() * p  # E_old[c A (e_y - p)]
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad**2
        z = z + lr * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-12)
        ratios.append(z - z.max() - np.log(np.exp(z - z.max()).sum()) - np.log(p_old))
    return np.asarray(ratios), A


def negative_push_ratio(weight_cap: float | None, floor: float = 0.0, seed: int = 0) -> float:
    """The negative arms' mean log-ratio move over the second 32 steps of a 64-step stale window at lr 0.1 over
    that of the first 32 (`stale_log_ratios`: a displacement of several nats, where w is far below 1)."""
    ratios, A = stale_log_ratios(0.1, 64, weight_cap=weight_cap, floor=floor, seed=seed)
    negative = A < 0
    first, second = -ratios[32][negative].mean(), -(ratios[64] - ratios[32])[negative].mean()
    assert first > 1.0
    return second / first


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cispos_weight_fades_the_push_on_negative_tokens_unless_it_has_a_floor(seed):
    """Equation (10)'s premise and WEIGHT_FLOOR_MAX: under CISPO's weight the push on a token with A < 0 lowers w =
    pi / pi_old with pi and fades; pg's does not, nor does a weight clipped from below at a floor well above
    WEIGHT_FLOOR_MAX (verl's default 0.8). Measured (module docstring): the second half's push against the first is
    0.26-0.30 without a floor, 0.36-0.40 at the floor 0.05, 0.76-0.83 at 0.2, 1.03-1.17 at 0.8 and 1.13-1.18 for
    pg; the bounds below sit between those, about 0.1 from each."""
    assert negative_push_ratio(0.28, seed=seed) < 0.4
    assert negative_push_ratio(0.28, floor=collapse.WEIGHT_FLOOR_MAX, seed=seed) < 0.5
    assert negative_push_ratio(0.28, floor=0.2, seed=seed) > 0.65
    assert negative_push_ratio(0.28, floor=0.8, seed=seed) > 0.9 and negative_push_ratio(None, seed=seed) > 1.0


@pytest.mark.parametrize("held, G, expected", [(0.99, 8, True), (0.917, 8, False), (0.92, 8, True), (0.9, 4, True),
                                               (0.5, 1, True), (0.49, 1, False), (None, 8, False), (1.0, None, True),
                                               (0.999, None, False)])
def test_a_run_is_absorbed_where_half_its_groups_all_succeed(held, G, expected):
    """Equation (10): p_h^G >= 1/2 (0.917^8 = 0.4999, 0.92^8 = 0.513); unknown p_h is not absorbed; G -> infinity
    only at p_h = 1."""
    assert collapse.absorbed(held, G) is expected


def test_cispos_band_edge_caps_only_an_absorbed_run_whose_weight_has_no_floor():
    """`band_edge`: a stopping clip caps at eps_high whatever p_h; CISPO's cap only where (10) holds and its weight can
    fade (no lower bound: eps_low = 1 - 1e-6, as our trainer's CISPO maps; verl's default eps_low = 0.2 keeps a floor of
    0.8: uncapped whatever p_h; a floor of 0.04 still fades); no correction, none."""
    from gspo_dynamics.theory.hyperparams import Hyperparams
    base = dict(lr=1e-3, refresh_interval=4, group_size=8, correction="token", clip_high=0.28)
    stop = Hyperparams(**base)
    cap = Hyperparams(**base, clip_low=1 - 1e-6, clip_mode="cap")
    floored = Hyperparams(**base, clip_low=0.2, clip_mode="cap")
    none = Hyperparams(lr=1e-3, refresh_interval=4, group_size=8, correction="none")
    assert collapse.band_edge(stop) == collapse.band_edge(stop, 0.5) == 0.28
    assert collapse.band_edge(cap) is None and collapse.band_edge(cap, 0.9) is None and collapse.band_edge(cap, 0.99) == 0.28
    assert collapse.band_edge(floored, 0.99) is None and collapse.band_edge(floored, 1.0) is None
    edge = Hyperparams(**base, clip_low=0.96, clip_mode="cap")  # a floor of 0.04, under WEIGHT_FLOOR_MAX
    assert collapse.band_edge(edge, 0.99) == 0.28
    assert collapse.band_edge(none, 1.0) is None
    with pytest.raises(ConfigError):
        collapse.band_edge(cap, 1.5)


def test_entropy_row_noise_is_the_mad_of_first_differences_as_a_loop_computes_it():
    """(6') against a loop: sigma_H = 1.4826 median |H_{j+1} - H_j| / sqrt(2); None below NOISE_ROWS values."""
    rng = np.random.default_rng(3)
    h = list(0.8 + 0.05 * rng.standard_normal(40))
    h[7] = float("nan")
    finite = [x for x in h if np.isfinite(x)]
    diffs = sorted(abs(b - a) for a, b in zip(finite, finite[1:]))
    m = len(diffs)
    median = diffs[m // 2] if m % 2 else (diffs[m // 2 - 1] + diffs[m // 2]) / 2
    assert collapse.entropy_row_noise(h) == pytest.approx(1.4826 * median / math.sqrt(2))
    assert collapse.entropy_row_noise(h[:collapse.NOISE_ROWS - 1]) is None


def test_a_rise_within_the_rows_scatter_is_no_overshoot_and_a_true_step_is_one():
    """Simulated rows at a row noise sigma: with no change, a rise past (6')'s level (about 3 sd of a difference) is
    rare (under 1% of 2000 pilots read an overshoot even where 25% of H_0 is within the noise); a jump of 10 sd that
    stays is read."""
    rng = np.random.default_rng(0)
    sigma, n = 0.08, 40
    false = sum(collapse.overshoots(0.4 + sigma * rng.standard_normal(n)) for _ in range(2000))
    assert false < 20  # without (6') the quarter rule alone fires on about half of them
    assert sum(collapse.entropy_rise(0.4 + sigma * rng.standard_normal(n)) > collapse.OVERSHOOT_RISE
               for _ in range(2000)) > 500
    jump = np.r_[0.4, np.full(n - 1, 0.4 + 10 * math.sqrt(2) * 0.01)] + 0.01 * rng.standard_normal(n)
    assert collapse.overshoots(jump) and not collapse.rise_within_noise(jump)


@pytest.mark.parametrize("m", [9, 15, 39])
def test_the_overshoot_level_of_the_largest_of_k_rows_is_sidaks_tail_against_t_draws(m):
    """(6')'s level for the largest of k = 3 rows against Student's t draws: one row passes it with the tail
    alpha_3 = 1 - (1 - Phi(-3))^(1/3) (0.045%), so the largest of 3 independent ones with Phi(-3) (0.135%)."""
    level = collapse.overshoot_level(m, 3)
    draws = np.random.default_rng(m).standard_t(m - 1, size=(3, 2_000_000))
    assert np.mean(draws[0] > level) == pytest.approx(0.00045, rel=0.15)
    assert np.mean(draws.max(axis=0) > level) == pytest.approx(0.00135, rel=0.1)
    assert collapse.overshoot_level(m, 1) < level


def test_where_no_row_moved_the_largest_first_rise_passes_the_level_about_as_often_as_three_sd():
    """The whole (6') statistic on rows of pure noise, vectorised (max_{j <= 3} H_j - H_0 against the level times
    sqrt(2) sigma_H of the median first difference), 40,000 pilots of 16 rows: near Phi(-3) = 0.135% (the median's
    scale, less efficient than a standard deviation, puts it a little above: 0.2%); at one row's level (no Sidak)
    the largest of three passes two to three times as often."""
    rng = np.random.default_rng(0)
    h = 0.5 + 0.05 * rng.standard_normal((40_000, 16))
    noise = 1.4826 * np.median(np.abs(np.diff(h, axis=1)), axis=1) / math.sqrt(2.0)
    rise = h[:, 1:4].max(axis=1) - h[:, 0]
    assert collapse.rise_level(h[0]) == collapse.overshoot_level(15, 3)
    share = np.mean(rise > collapse.overshoot_level(15, 3) * math.sqrt(2.0) * noise)
    assert 0.0005 < share < 0.0035
    assert np.mean(rise > collapse.overshoot_level(15, 1) * math.sqrt(2.0) * noise) > 2 * share


@pytest.mark.parametrize("m", [9, 15, 39])
def test_the_overshoot_level_is_students_t_at_the_normals_three_sd_tail(m):
    """(6')'s level for a scale read from m differences, against draws of Student's t with m - 1 degrees of freedom:
    the share past the level is the normal's one-sided tail at 3 sd (0.135%); it falls to 3 as m grows."""
    level = collapse.overshoot_level(m)
    draws = np.random.default_rng(m).standard_t(m - 1, size=2_000_000)
    assert np.mean(draws > level) == pytest.approx(0.00135, rel=0.1)
    assert collapse.overshoot_level(10_000) == pytest.approx(3.0, abs=0.01) and level > 3.0
