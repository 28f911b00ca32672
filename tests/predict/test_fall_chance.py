"""predict._fall_chance: the margin (1) against each rule's own verdict, the chance (2) against its formula, and the
maximum-likelihood fit against scipy's optimiser and against the coefficients that drew the data."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy.optimize import minimize
from test_pilot import heavy_ball_curve, write_log

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.predict import (
    FALL_CHANCE, collapse_grid, fall_chance, fit_fall_chance, margin_grid, pilot_forecast, read_run_config,
)
from gspo_dynamics.theory import collapse
from gspo_dynamics.theory.linear import STABLE, critical_refresh_interval

LRS, TS = np.geomspace(1e-3, 10, 29), np.array([1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64])


def both_rules_pilot(tmp_path, entropy):
    """A pilot with a stiffness (a heavy-ball rise, SGD with momentum 0.5: the linear rule) and a drift and entropy
    (the collapse rules), at lr 0.1 and T = 4."""
    j = np.tile(np.arange(4), 15)
    columns = {"reward": heavy_ball_curve(0.05, 0.5, len(j)), "window/position": j, "ratios/token_log_var": (j * 0.05) ** 2,
               "entropy": entropy, "frac_reward_zero_std": np.full(len(j), 0.5)}
    setup = read_run_config({"lr": 0.1, "group_size": 8, "refresh_interval": 4, "correction": "token", "clip_high": 0.2,
                             "optimizer": "sgd", "momentum": 0.5})
    return pilot_forecast(setup, write_log(tmp_path / "p.jsonl", columns), reward_range=(0.0, 1.0))


@pytest.mark.parametrize("entropy", [np.full(60, 0.8), np.r_[0.5, 0.8, 0.85, np.full(57, 0.6)]])
def test_the_margin_is_positive_exactly_where_a_rule_says_unstable(tmp_path, entropy):
    """m > 0 cell by cell where the collapse map (`collapse_grid`) or the linear rule (T >= T_c at the stiffness
    scaled to lr) says unstable; each cell's m is the largest of the three log ratios computed one cell at a
    time from the scalar routes (`collapse.displacement`, `critical_refresh_interval` at that lr, looked for up to
    max(T) e^5 + 1). Both pilots have a stiffness; the second also overshoots (entropy 0.5 -> 0.85)."""
    f = both_rules_pilot(tmp_path, entropy)
    kappa = f.implications.stiffness_per_step.value
    assert f.max_safe_lr is not None and kappa > 0 and f.displacement is not None
    m = margin_grid(f, LRS, TS)
    t_c = critical_refresh_interval(kappa * LRS / 0.1, 0.0, 1.0, 0.5, t_max=100_000)
    linear = (t_c[None, :] != STABLE) & (TS[:, None] >= t_c[None, :])
    assert np.array_equal(m > 0, collapse_grid(f, LRS, TS) | linear)
    s, rise = f.drift_per_step / 0.1, f.entropy_rise
    for i, T in enumerate(TS):
        for j, lr in enumerate(LRS):
            tc = int(critical_refresh_interval(kappa * lr / 0.1, 0.0, 1.0, 0.5, t_max=int(64 * math.exp(5.0)) + 1))
            parts = [math.log(collapse.displacement(s, lr, int(T), 0.2) / f.collapse_limit)]
            parts += [math.log(T / (tc - 0.5))] if tc else []
            parts += [math.log(rise * lr / (0.1 * collapse.OVERSHOOT_RISE))] if rise and rise > 0 else []
            assert m[i, j] == pytest.approx(max(parts), rel=1e-12, abs=1e-12)


def test_a_rule_the_pilot_cannot_assess_adds_nothing(tmp_path):
    """The same pilot with its lr bound withheld (no linear rule): m > 0 exactly on the collapse map; with the
    collapse fields gone too: no margin at all."""
    f = dataclasses.replace(both_rules_pilot(tmp_path, np.full(60, 0.8)), max_safe_lr=None)
    assert np.array_equal(margin_grid(f, LRS, TS) > 0, collapse_grid(f, LRS, TS))
    assert margin_grid(dataclasses.replace(f, displacement=None), LRS, TS) is None


def test_the_chance_is_the_logistic_of_the_clipped_margin():
    """(2) at a few margins, its clip at +-M_CLIP (so +-inf is finite), monotone in m."""
    a, b = FALL_CHANCE
    for m in (-2.0, 0.0, 0.7, 3.0):
        assert fall_chance(m) == pytest.approx(1 / (1 + math.exp(-(a + b * m))), rel=1e-12)
    assert fall_chance(np.inf) == pytest.approx(fall_chance(5.0)) and fall_chance(-np.inf) == pytest.approx(fall_chance(-5.0))
    grid = fall_chance(np.linspace(-6, 6, 101))
    assert np.all(np.diff(grid) >= 0) and 0 < grid[0] < 5e-3 and 1 - 5e-3 < grid[-1] < 1


def test_the_fit_is_scipys_maximum_and_recovers_the_coefficients_that_drew_the_falls():
    """Falls drawn at (a, b) = (-1, 1.5) over 4,000 cells of 4 runs: Newton's answer equals scipy's minimiser of
    the same negative log-likelihood (to 1e-5, the optimiser's tolerance) and lies within 4 standard errors of
    the truth (se from the Fisher information at the fit)."""
    rng = np.random.default_rng(3)
    m = rng.uniform(-4, 4, 4000)
    n = np.full(m.shape, 4)
    k = rng.binomial(n, 1 / (1 + np.exp(-(-1.0 + 1.5 * m))))
    a, b = fit_fall_chance(m, k, n)

    def nll(w):
        z = w[0] + w[1] * m
        return -np.sum(k * -np.logaddexp(0, -z) + (n - k) * -np.logaddexp(0, z))

    ref = minimize(nll, [0.0, 0.0], method="BFGS", options={"gtol": 1e-9}).x
    assert (a, b) == pytest.approx(tuple(ref), abs=1e-5)
    p = 1 / (1 + np.exp(-(a + b * m)))
    X = np.stack([np.ones_like(m), m], axis=1)
    se = np.sqrt(np.diag(np.linalg.inv((X * (n * p * (1 - p))[:, None]).T @ X)))
    assert abs(a + 1.0) < 4 * se[0] and abs(b - 1.5) < 4 * se[1]


@pytest.mark.parametrize("margins, falls, runs, words", [
    ([0.0, 0.0, 0.0], [1, 2, 3], [4, 4, 4], "two distinct margins"),
    ([-1.0, 1.0], [0, 4], [4, 4], "separated"),
    ([-1.0, 1.0], [0, 0], [4, 4], "separated"),
    ([-1.0, 1.0], [5, 0], [4, 4], "cell 0 has 5 of 4"),
    ([-1.0, 1.0], [1, np.nan], [4, 4], "cell 1 has nan of 4"),
    ([-1.0, 1.0], [0, 0], [4, 0], "runs >= 1"),
    ([-1.0, 1.0, 2.0], [1, 2], [4, 4], r"of one length, got shapes \(3,\), \(2,\), \(2,\)"),
    ([-1.0, np.nan], [1, 2], [4, 4], "margin 1 is nan"),
])
def test_data_that_cannot_identify_the_chance_is_one_clear_error(margins, falls, runs, words):
    with pytest.raises(ConfigError, match=words):
        fit_fall_chance(margins, falls, runs)


def test_the_forecast_gives_the_chance_at_its_own_point_and_withholds_it_without_the_collapse_rules(tmp_path):
    """The summary line and the JSON carry (1) and (2) at the config's (lr, T) = (0.1, 4), the same numbers as the
    grid's (a pilot that did not run and hold at that point: where it did, the line says the chance is not
    identified, tests/predict/test_pilot_own_point.py); without the pilot's drift and entropy both are withheld."""
    f = dataclasses.replace(both_rules_pilot(tmp_path, np.full(60, 0.8)), survived=None)
    m = float(margin_grid(f, [0.1], [4])[0, 0])
    at = f.to_json()["fall_chance"]
    assert (at["margin"], at["chance"]) == pytest.approx((m, float(fall_chance(m))), rel=1e-12)
    line = next(line for line in f.summary_lines() if "loses its reward" in line)
    assert f"{float(fall_chance(m)):.0%}" in line and f"m = {m:+.2f}" in line
    g = dataclasses.replace(f, displacement=None)
    assert g.to_json()["fall_chance"] is None and not any("loses its reward" in line for line in g.summary_lines())


def test_the_map_draws_the_chance_where_it_crosses_its_levels(tmp_path):
    """`predict --plot` with a pilot: the (lr, T) panel labels the chance's contours (10%, 50%, 90% where the map
    spans them) with a legend entry; the labels are the levels."""
    from gspo_dynamics.plots.stability_map import FALL_CHANCE_LEVELS, REFRESH_INTERVALS, stability_map_figure

    f = both_rules_pilot(tmp_path, np.full(60, 0.8))
    lr = 0.1
    chance = fall_chance(margin_grid(f, np.geomspace(lr / 100, lr * 100, 121), REFRESH_INTERVALS))
    assert chance.min() < 0.1 and chance.max() > 0.9  # the map spans every level
    ax = stability_map_figure(f).axes[0]
    assert any("chance a run falls" in t.get_text() for t in ax.get_legend().get_texts())
    assert {t.get_text() for t in ax.texts if t.get_text().endswith("%")} == {f"{v:.0%}" for v in FALL_CHANCE_LEVELS}


def nll(w, m, k, n):
    z = w[0] + w[1] * np.clip(m, -5, 5)
    return float(np.sum(k * np.logaddexp(0, -z) + (n - k) * np.logaddexp(0, z)))


def test_the_fit_holds_where_the_run_counts_differ_by_orders_of_magnitude():
    """Cells of 1 to 1,000 runs, where a full Newton step overshoots to P = 0 or 1 (a review's case first, then 300
    random sets with a fit): the halved steps reach scipy's maximum (to 1e-4 in (a, b), the optimiser's
    tolerance) and never a raw numpy error."""
    cases = [([-5.0, 4.9, 5.0], [1, 0, 4], [1000, 1, 4])]
    rng = np.random.default_rng(5)
    while len(cases) < 300:
        n = rng.choice([1, 4, 40, 400, 1000], size=int(rng.integers(3, 8)))
        m = rng.uniform(-6, 6, len(n))
        k = rng.binomial(n, 1 / (1 + np.exp(-(rng.normal(-1, 1) + rng.normal(1, 0.5) * m))))
        try:
            fit_fall_chance(m, k, n)
        except ConfigError as err:
            assert "separated" in str(err) or "two distinct" in str(err)
            continue
        cases.append((m, k, n))
    for m, k, n in cases:
        m, k, n = (np.asarray(v, dtype=float) for v in (m, k, n))
        a, b = fit_fall_chance(m, k, n)
        ref = minimize(nll, [a, b], args=(m, k, n), method="Nelder-Mead", options={"xatol": 1e-9, "fatol": 1e-12}).x
        assert nll((a, b), m, k, n) <= nll(ref, m, k, n) + 1e-7
        assert (a, b) == pytest.approx(tuple(ref), abs=1e-4)


def test_a_linear_model_stable_at_every_T_adds_nothing_and_warns_nothing(tmp_path):
    """A stiffness so small that no T up to the scan tips the linear model: its part is -inf, the margin is the
    collapse rules' alone (m > 0 exactly on the collapse map), and no numpy warning is raised (the log is taken
    only where T_c exists)."""
    import warnings

    f = both_rules_pilot(tmp_path, np.full(60, 0.8))
    kappa = dataclasses.replace(f.implications.stiffness_per_step, value=1e-9)
    tiny = dataclasses.replace(f, implications=dataclasses.replace(f.implications, stiffness_per_step=kappa))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = margin_grid(tiny, LRS, TS)
    assert np.array_equal(m > 0, collapse_grid(tiny, LRS, TS))
    assert np.array_equal(m, margin_grid(dataclasses.replace(tiny, max_safe_lr=None), LRS, TS))


def test_without_a_ratio_clip_the_displacement_grows_with_T_in_the_margin(tmp_path):
    """correction "none": D = T lr s uncapped, so the displacement's log ratio rises by log 2 from T to 2T at any lr
    (the clipped objectives' stops at the band edge)."""
    j = np.tile(np.arange(4), 15)
    columns = {"reward": heavy_ball_curve(0.05, 0.5, len(j)), "window/position": j, "ratios/token_log_var": (j * 0.05) ** 2,
               "entropy": np.full(len(j), 0.8), "frac_reward_zero_std": np.full(len(j), 0.5)}
    setup = read_run_config({"lr": 0.1, "group_size": 8, "refresh_interval": 4, "correction": "none"})
    f = dataclasses.replace(pilot_forecast(setup, write_log(tmp_path / "n.jsonl", columns)), max_safe_lr=None)
    m = margin_grid(f, [0.01, 0.1], [4, 8, 16])
    assert np.diff(m, axis=0) == pytest.approx(np.full((2, 2), math.log(2)), rel=1e-12)


@pytest.mark.parametrize("entropy", [np.full(60, 0.8), np.r_[0.5, 0.8, 0.85, np.full(57, 0.6)]])
def test_the_risk_bounds_are_where_the_chance_crosses_its_level(tmp_path, entropy):
    """`risk_bounds` at 10%: the chance at the config's lr is at most 10% up to the bound T and past it at the next T
    (checked with the margin at its default floor, every T to 1024; the overshooting pilot passes it at T = 1 already,
    bound 0); at the config's T the chance is at most 10%
    just below the lr bound and past it just above (1e-6 relative: the bisection's 40 halvings of one grid step);
    the summary line says both; a level the config's point already passes bounds T below its own."""
    from gspo_dynamics.predict._fall_chance import risk_bounds

    f = both_rules_pilot(tmp_path, entropy)
    bounds = risk_bounds(f, 0.1)
    assert bounds == f.to_json()["fall_chance"]["bounds"] and bounds["beyond_scan"] == {}
    T, lr = bounds["max_refresh_interval"], bounds["max_lr"]
    Ts = np.arange(1, 1025)
    at_lr = fall_chance(margin_grid(f, [0.1], Ts))[:, 0]
    assert T < 1024 and np.all(at_lr[:T] <= 0.1) and at_lr[T] > 0.1
    assert lr is not None and fall_chance(margin_grid(f, [lr * (1 - 1e-6)], [4]))[0, 0] <= 0.1
    assert fall_chance(margin_grid(f, [lr * (1 + 1e-6)], [4]))[0, 0] > 0.1
    line = next(line for line in f.summary_lines() if "chance of a fall" in line)
    said_T = "not even T = 1" if T == 0 else f"T <= {T}"
    assert f"at most a 10% chance of a fall: {said_T} at this lr, lr <= {lr:.3g} at this T" in line
    own = float(fall_chance(margin_grid(f, [0.1], [4]))[0, 0])
    past = risk_bounds(f, own / 2)
    assert past["max_refresh_interval"] < 4 and (past["max_lr"] is None or past["max_lr"] < 0.1)


def test_bounds_past_the_scan_are_none_and_say_which_way(tmp_path):
    """A drift so small that no T to 1024 and no lr to 1000x passes 10%: both bounds None, "above"; an entropy rise so
    large that even lr / 1000 overshoots: no lr ("below") and not even T = 1; the summary says each in words; a
    level outside (0, 1) is one ConfigError; no drift or entropy, no bounds."""
    from gspo_dynamics.predict._fall_chance import risk_bounds

    f = dataclasses.replace(both_rules_pilot(tmp_path, np.full(60, 0.8)), max_safe_lr=None)
    calm = dataclasses.replace(f, drift_per_step=1e-12, entropy_rise=None)
    bounds = risk_bounds(calm, 0.1)
    assert (bounds["max_refresh_interval"], bounds["max_lr"]) == (None, None)
    assert bounds["beyond_scan"] == {"refresh_interval": "above", "lr": "above"}
    line = next(line for line in calm.summary_lines() if "chance of a fall" in line)
    # the scan reaches 1000x, the claim only LR_REACH x (predict._fall_chance.LR_REACH)
    assert f"every T up to 1024 at this lr, no lr bound below {0.1 * 30:.3g} (30x, the furthest checked) at this T" in line
    wild = dataclasses.replace(f, entropy_rise=1e6)
    bounds = risk_bounds(wild, 0.1)
    assert bounds["max_refresh_interval"] == 0 and bounds["max_lr"] is None and bounds["beyond_scan"] == {"lr": "below"}
    line = next(line for line in wild.summary_lines() if "chance of a fall" in line)
    assert f"not even T = 1 at this lr, no lr down to {0.1 / 1e3:.3g} at this T" in line
    for level in (0, 1, -0.5, float("nan"), "0.1", True):
        with pytest.raises(ConfigError, match="risk level"):
            risk_bounds(f, level)
    assert risk_bounds(dataclasses.replace(f, displacement=None), 0.1) is None


def test_under_cispos_clip_the_displacement_and_the_pilots_own_grow_uncapped(tmp_path):
    """clip_mode "cap" (version 13): the same pilot and clip as a "stop" run, but D = T lr s past the band edge in
    the margin (its log ratio rises by log 2 from T to 2T, as without a correction), in the config's D and in the
    pilot's own (8), where the "stop" run's stop at log(1 + eps_high)."""
    j = np.tile(np.arange(4), 15)
    columns = {"reward": heavy_ball_curve(0.05, 0.5, len(j)), "window/position": j, "ratios/token_log_var": (j * 0.05) ** 2,
               "entropy": np.full(len(j), 0.8), "frac_reward_zero_std": np.full(len(j), 0.5)}
    log = write_log(tmp_path / "c.jsonl", columns)
    base = {"lr": 0.1, "group_size": 8, "refresh_interval": 4, "correction": "token", "clip_high": 0.2}
    cap = dataclasses.replace(pilot_forecast(read_run_config({**base, "clip_mode": "cap"}), log), max_safe_lr=None)
    stop = dataclasses.replace(pilot_forecast(read_run_config(base), log), max_safe_lr=None)
    assert np.diff(margin_grid(cap, [0.01, 0.1], [4, 8, 16]), axis=0) == pytest.approx(np.full((2, 2), math.log(2)), rel=1e-12)
    s = cap.drift_per_step / 0.1
    assert cap.displacement == pytest.approx(4 * 0.1 * s) and stop.displacement == pytest.approx(
        collapse.displacement(s, 0.1, 4, 0.2))
    assert cap.displacement > stop.displacement
    if stop.survived is not None:  # the pilot kept its reward: its own D at its T = 4, (8)
        assert cap.survived == pytest.approx(cap.displacement) and stop.survived == pytest.approx(stop.displacement)


@pytest.mark.parametrize("level, absorbed", [(0.99, True), (0.8, False)])
def test_under_cispos_clip_an_absorbed_run_is_capped_as_a_stopping_clip(tmp_path, level, absorbed):
    """Equation (10) of theory.collapse (version 14): a CISPO pilot (its weight without a floor) that kept a held success
    rate p_h with p_h^G >= 1/2 (0.99^8 = 0.92) has the "stop" run's band edge, margin and bounds; at 0.8 (0.8^8 = 0.17),
    or with a weight floored at 1 - eps_low = 0.8, version 13's uncapped D. The summary says which."""
    j = np.tile(np.arange(4), 15)
    columns = {"reward": np.clip(level + 0.005 * np.sin(np.arange(len(j))), 0, 1), "window/position": j,
               "ratios/token_log_var": (j * 0.05) ** 2, "entropy": np.full(len(j), 0.8),
               "frac_reward_zero_std": np.full(len(j), 0.5)}
    log = write_log(tmp_path / "c.jsonl", columns)
    base = {"lr": 0.1, "group_size": 8, "refresh_interval": 4, "correction": "token", "clip_high": 0.2}
    cap = dataclasses.replace(pilot_forecast(read_run_config({**base, "clip_mode": "cap", "clip_low": 1 - 1e-6}), log),
                              max_safe_lr=None)
    floored = pilot_forecast(read_run_config({**base, "clip_mode": "cap"}), log)  # eps_low 0.2: a floor of 0.8
    stop = dataclasses.replace(pilot_forecast(read_run_config(base), log), max_safe_lr=None)
    assert stop.band_edge == 0.2 and cap.survived is not None and floored.band_edge is None
    assert cap.band_edge == (0.2 if absorbed else None) == cap.to_json()["displacement_band_edge"]
    grids = [margin_grid(f, [0.01, 0.1], [4, 8, 16]) for f in (cap, stop)]
    assert np.array_equal(*grids) is absorbed
    assert (cap.displacement == pytest.approx(stop.displacement)) is absorbed
    said = next(m for m in cap.measured if "detached weight" in m)
    assert ("capped at the band edge" in said) is absorbed and ("uncapped" in said) is not absorbed
    assert "clipped from below at 1 - eps_low = 0.8" in next(m for m in floored.measured if "detached weight" in m)
