"""paper_repro/pilot_forecast.py, its scoring (gspo_dynamics/experiments/_forecast_scores.py, _forecast_readings.py)
and its dump (_pilot_dump.py): the pieces against loops
written here (the end-to-end quick run is in tests/test_paper_repro.py, slow)."""

from __future__ import annotations

import dataclasses
import json
import math
from types import SimpleNamespace

import numpy as np
import scipy.stats
import pytest

from gspo_dynamics.experiments import _forecast_readings as readings
from gspo_dynamics.experiments import _task_prior as task_prior
from gspo_dynamics.experiments import brier_score, fall_chance_baselines, rolling_origin

ROUNDS = ("develop",) + tuple(f"confirm-{k}" for k in range(4, 19))  # the synthetic results' rounds, in order
SHRUNK = dict(rounds=ROUNDS, held_out=tuple(f"confirm-{k}" for k in range(14, 19)), kappa=2.0)  # as version 12's
from gspo_dynamics.experiments import _forecast_scores as scores


@pytest.fixture(scope="module")
def script(load_script):
    return load_script("paper_repro", "pilot_forecast")


@pytest.fixture(scope="module")
def dumps(load_script):
    return load_script("paper_repro", "_pilot_dump")


def test_max_stable_T_is_the_grid_point_before_the_first_unstable_one():
    Ts = (1, 4, 16, 32)
    grid = {(0.1, T): T >= 16 for T in Ts} | {(0.2, T): False for T in Ts} | {(0.3, T): T >= 4 for T in Ts}
    assert [scores.max_stable_T(grid, lr, Ts) for lr in (0.1, 0.2, 0.3)] == [4, 32, 1]
    assert scores.max_stable_T({(0.1, T): True for T in Ts}, 0.1, Ts) == 0


def grid_curves(cells: dict, steps: int = 96, seeds: int = 2) -> dict:
    """Seed curves of a grid: each (lr, T) -> an array (seeds, steps) or a function of (seed, steps)."""
    out = {}
    for cell, curve in cells.items():
        reward = np.stack([curve(s, steps) for s in range(seeds)]) if callable(curve) else np.asarray(curve, float)
        out[cell] = {"reward": reward}
    return out


def test_initial_rewards_are_the_first_window_of_the_largest_T():
    """Per seed: the mean of the first max(T) steps of the T = max(T) cells (the initial policy's rollouts),
    averaged over the learning rates; the other cells do not enter."""
    rng = np.random.default_rng(1)
    curves = {(lr, T): {"reward": rng.random((3, 96))} for lr in (1e-3, 3e-3) for T in (1, 32)}
    expected = np.mean([curves[(lr, 32)]["reward"][:, :32].mean(axis=1) for lr in (1e-3, 3e-3)], axis=0)
    assert np.allclose(scores.initial_rewards(curves, (1e-3, 3e-3), (1, 32)), expected)


def test_measured_cells_judge_each_seed_against_its_best_and_the_initial_reward():
    """Every seed starts at 0.3 (the T = 32 cell's first window). Unstable: a cell where one seed of two falls
    back by 0.5 half-way (1 unstable seed), and one where a seed jumps to 0 at its first update (a fall of 0.3
    from the initial reward, though no block of its own ever held it); stable: a rise to 1, and a flat run
    with per-step noise 0.05 (16-step means vary by ~0.013, far below the margin)."""
    def rise(seed, n):
        return np.linspace(0.3, 1.0, n)

    def falls_back(seed, n):
        return rise(seed, n) - 0.5 * ((seed == 1) & (np.arange(n) >= 48))

    def jump(seed, n):
        return np.r_[0.3, np.zeros(n - 1)] if seed == 0 else rise(seed, n)

    noise = np.random.default_rng(0).standard_normal((2, 96))
    curves = grid_curves({(1e-3, 1): rise, (1e-3, 4): falls_back, (1e-3, 16): jump, (1e-3, 32): 0.3 + 0.05 * noise})
    cells = scores.measured_cells(curves, [1e-3], (1, 4, 16, 32))
    assert [cells[(1e-3, T)][0] for T in (1, 4, 16, 32)] == [False, True, True, False]
    assert [cells[(1e-3, T)][4] for T in (1, 4, 16, 32)] == [0, 1, 1, 0]
    assert cells[(1e-3, 16)][1] == pytest.approx(0.3, abs=0.02)  # the initial reward, measured in the T = 32 cell
    assert cells[(1e-3, 1)][2] == pytest.approx(rise(0, 96)[-scores.PLATEAU_STEPS:].mean())


def test_a_run_that_loses_all_of_a_low_reward_is_unstable():
    """Version 8's floor clause, every seed starting at 0.1 (the T = 32 cell): seeds that fall to 0 (a fall of
    0.1, not past DRAWDOWN_MARGIN) lost all they had: unstable; seeds that fall to 0.03 (70% of the best) are
    not, nor are seeds at 0.3 that dip to 0.21 (0.09, 30%). From a start of 0.04 (under DRAWDOWN_MARGIN / 2,
    within the noise of a reward that low) a fall to 0 is not counted."""
    def falls_from(level, to):
        return lambda seed, n: np.where(np.arange(n) >= 48, to, level)

    curves = grid_curves({(1e-3, 1): falls_from(0.1, 0.0), (1e-3, 4): falls_from(0.1, 0.03),
                          (1e-3, 16): falls_from(0.3, 0.21), (1e-3, 32): falls_from(0.1, 0.1)})
    cells = scores.measured_cells(curves, [1e-3], (1, 4, 16, 32))
    assert [cells[(1e-3, T)][0] for T in (1, 4, 16, 32)] == [True, False, False, False]
    assert cells[(1e-3, 1)][1] == pytest.approx(0.1) and cells[(1e-3, 1)][4] == 2
    low = scores.measured_cells(grid_curves({(1e-3, 1): falls_from(0.04, 0.0), (1e-3, 32): falls_from(0.04, 0.04)}),
                                [1e-3], (1, 32))
    assert not low[(1e-3, 1)][0] and low[(1e-3, 1)][1] == pytest.approx(0.04)


def test_measured_falls_match_a_loop_over_seeds_and_blocks():
    """The vectorised per-seed fall against a loop: the initial reward, then SEED_BLOCK-step means, the
    largest drop below the running best, the cell's fall the largest seed's."""
    rng = np.random.default_rng(3)
    curves = {(lr, T): {"reward": rng.random((4, 96))} for lr in (1e-3, 1e-2) for T in (1, 4, 32)}
    lrs, Ts = (1e-3, 1e-2), (1, 4, 32)
    r0 = scores.initial_rewards(curves, lrs, Ts)
    cells = scores.measured_cells(curves, lrs, Ts)
    for cell, c in curves.items():
        worst, lost = 0.0, 0
        for seed, r in enumerate(c["reward"]):
            best, seed_lost = r0[seed], False
            for k in range(0, 96 - scores.SEED_BLOCK + 1, scores.SEED_BLOCK):
                block = r[k:k + scores.SEED_BLOCK].mean()
                worst = max(worst, best - block)
                seed_lost |= best - block > scores.DRAWDOWN_MARGIN or (
                    best - block > scores.COLLAPSE_SHARE * best and best >= scores.DRAWDOWN_MARGIN / 2)
                best = max(best, block)
            lost += seed_lost
        assert cells[cell][1] == pytest.approx(worst)
        assert cells[cell][0] == (lost > 0) and cells[cell][4] == lost


def dump_of(name: str, unstable, lrs, Ts, **pilot) -> dict:
    """A --dump entry whose cells are stable (flat 0.5) or unstable (one seed falls to 0 after step 48)."""
    def curve(lr, T):
        return lambda seed, n: np.where((seed == 0) & (np.arange(n) >= 48) & unstable(lr, T), 0.0, 0.5)
    curves = grid_curves({(lr, T): curve(lr, T) for lr in lrs for T in Ts})
    return {name: {**pilot, "curves": [[lr, T, {"reward": c["reward"].tolist()}] for (lr, T), c in curves.items()]}}


def test_fit_limit_finds_the_separating_displacement(dumps):
    """Cells whose displacement T lr s exceeds 1.0 are unstable: the fitted S separates them (accuracy 1)
    and lies between the largest stable and the smallest unstable displacement."""
    lrs, Ts = (1e-3, 3e-3, 1e-2), (1, 4, 16, 32)
    dump = dump_of("count-pg", lambda lr, T: T * lr * 50 > 1.0, lrs, Ts, lr_pilot=1e-3, drift_per_step=0.05, entropy=2.0)
    S, accuracy = dumps.fit_limit(dump)
    spreads = sorted(T * lr * 50 / 2.0 for lr in lrs for T in Ts)  # relative to the entropy, equation (5)
    assert accuracy == 1.0 and max(x for x in spreads if x <= 0.5) < S < min(x for x in spreads if x > 0.5)


def test_fit_weight_reweighs_the_share_of_the_pilots_that_kept_their_reward(dumps):
    """`fit_weight` at w is `fit_limit` on the entries with (9)'s share at w where the pilot survived, the
    pilot's share where it did not (against the entries rewritten here); w = 1 is the pilot's share; an entry
    written before version 9 is refused."""
    from gspo_dynamics.theory import collapse

    lrs, Ts = (1e-3, 3e-3, 1e-2), (1, 4, 16, 32)
    common = dict(lr_pilot=1e-3, drift_per_step=0.05, entropy=2.0, group_size=8, pilot_signal_share=0.6)
    dump = dump_of("count-pg", lambda lr, T: T * lr * 50 > 1.0, lrs, Ts, survived=0.1, held_success=0.95,
                   signal_share=0.5, **common)
    dump |= dump_of("count-gspo", lambda lr, T: T * lr * 50 > 2.0, lrs, Ts, survived=None, held_success=0.95,
                    signal_share=0.6, **common)
    for (w, S, accuracy), weight in zip(dumps.fit_weight(dump, (0.25, 1.0)), (0.25, 1.0)):
        by_hand = {"count-pg": {**dump["count-pg"], "signal_share": collapse.run_signal_share(0.6, 0.95, 8, weight)},
                   "count-gspo": {**dump["count-gspo"], "signal_share": 0.6}}
        assert (w, S, accuracy) == (weight, *dumps.fit_limit(by_hand))
    with pytest.raises(ValueError, match="before protocol version 9"):
        dumps.fit_weight({"count-pg": {k: v for k, v in dump["count-pg"].items() if k != "held_success"}}, (0.5,))


def test_fit_limit_caps_a_clipped_window_at_the_band_edge(dumps):
    """With a clip at 0.2 (band edge 0.18) a long window's displacement is the edge or the first step: cells
    unstable only where one step lr s passes 0.5 are separated, whatever T."""
    lrs, Ts = (1e-3, 3e-3, 1e-2, 3e-2), (1, 4, 16, 32)
    dump = dump_of("count-gspo", lambda lr, T: lr * 50 > 0.5, lrs, Ts, lr_pilot=1e-3, drift_per_step=0.05, clip=0.2,
                   entropy=1.0)
    S, accuracy = dumps.fit_limit(dump)
    assert accuracy == 1.0 and 0.15 < S < 1.5


def test_an_entropy_overshoot_marks_every_lr_where_the_scaled_rise_passes_a_quarter(dumps):
    """A pilot whose entropy rose by r = 0.5 on its first updates: cells with r lr / lr_pilot > 1/4 collapse
    whatever D (equation (6): from lr_pilot / 2 up); below it the relative limit decides (D / H = T lr s / H
    against S = 1)."""
    d = {"lr_pilot": 1e-3, "drift_per_step": 0.01, "entropy": 0.5, "overshoot": True, "entropy_rise": 0.5, "clip": None}
    assert dumps.collapses(d, 1e-3, 1, 1.0) and dumps.collapses(d, 3e-3, 1, 1.0) and dumps.collapses(d, 6e-4, 1, 1.0)
    assert not dumps.collapses(d, 4e-4, 1, 1.0)  # r lr / lr_pilot = 0.2; D / H = 4e-4 x 10 / 0.5 = 0.008
    assert dumps.collapses(d, 4e-4, 200, 1.0)  # 200 x 4e-3 / 0.5 = 1.6 > 1
    assert not dumps.collapses({**d, "overshoot": False, "entropy_rise": -0.1}, 3e-3, 1, 1.0)
    assert not dumps.collapses({**d, "entropy": None}, 3e-3, 1000, 1.0)  # no entropy: no collapse forecast


def test_time_to_plateau_of_an_exponential_rise():
    """r = 1 - 0.8 exp(-t / 10) is within 5% of its rise for good from t = 10 ln 20 ~ 30: the measured time
    (the first step of the first block whose mean is within) lands at most one BLOCK after it; a flat run has
    no rise to time (nan). The T = 32 cell holds the initial reward 0.2 for its first window."""
    t = np.arange(96.0)
    rise = 1 - 0.8 * np.exp(-t / 10)
    cells = scores.measured_cells(grid_curves({(1e-3, 1): np.stack([rise, rise]), (1e-3, 32): np.full((2, 96), 0.5)}),
                                  [1e-3], (1, 32))
    assert 0 <= cells[(1e-3, 1)][3] - 10 * np.log(20) <= scores.BLOCK
    assert np.isnan(cells[(1e-3, 32)][3])


def test_the_forecast_time_to_plateau_is_the_fits_read_at_the_sampler_and_nan_without_one():
    """A fit settled from pilot step 11 at half the pilot's lr: (11 - 1.5) / 0.5 = 19 updates, logged from the
    next refresh (step 20 + 1 at T = 4; 32 + 1 at T = 32); a fit that never settles (infinite time) gives nan."""
    def forecast(t):
        return type("Forecast", (), {"implications": type("Imp", (), {"time_to_plateau": type("V", (), {"value": t})})})()
    lag = 1 + (scores.PILOT_T - 1) / 2
    assert scores.forecast_time_to_plateau(forecast(lag + 9.5), 0.5, 4) == 21
    assert scores.forecast_time_to_plateau(forecast(lag + 9.5), 0.5, 32) == 33
    assert np.isnan(scores.forecast_time_to_plateau(forecast(float("inf")), 0.5, 4))


def test_the_signal_share_scales_the_relative_displacement(dumps):
    """(1 - z) D / H, equation (7): a pilot with half its groups flat halves what `fit_limit` scans and moves
    the limit that separates the same cells by the same factor."""
    d = {"lr_pilot": 1e-3, "drift_per_step": 0.05, "entropy": 2.0, "clip": None}
    assert dumps.relative_displacement({**d, "signal_share": 0.5}, 3e-3, 4) == pytest.approx(
        0.5 * dumps.relative_displacement(d, 3e-3, 4))
    assert dumps.collapses({**d, "signal_share": 0.5}, 3e-3, 4, 0.1) and not dumps.collapses({**d, "signal_share": 0.5}, 3e-3, 4, 0.2)


class LinearFit:
    """A stand-in for the pilot's fitted curve: R(t) = t / 100 (so the forecast shows which times it read)."""
    t_start = 1.0

    def predict(self, t):
        return np.asarray(t, dtype=float) / 100


def test_final_reward_reads_each_steps_sampler():
    """At T = 32 the last 16 steps (80-95) log the sampler after 64 updates; at T = 1 step k logs the policy
    after k. At lr_ratio 0.5 the pilot's time for u updates is 1 + (PILOT_T - 1) / 2 + 0.5 u."""
    assert np.all(scores.sampler_updates(np.arange(80, 96), 32) == 64)
    assert np.all(scores.sampler_updates(np.arange(80, 96), 1) == np.arange(80, 96))
    fc = type("Forecast", (), {"fit": LinearFit()})()
    lag = 1 + (scores.PILOT_T - 1) / 2
    steps = np.arange(scores.STEPS - scores.PLATEAU_STEPS, scores.STEPS)
    expected = {T: np.mean([(lag + 0.5 * T * (k // T)) / 100 for k in steps]) for T in (1, 4, 32)}
    for T, value in expected.items():
        assert scores.forecast_final_reward(fc, 0.5, T) == pytest.approx(value)


def test_final_reward_reach_counts_ours_and_the_best_single_number():
    """Combination a: stable finals 0.90, 0.92 (T = 1, 4) and 0.70 (T = 32), forecast 0.91: ours and the best
    single number (midpoint 0.81, half-range 0.11) miss with T = 32 and meet without it. Combination b: 0.50
    and 0.58, forecast 0.60: the best single number meets (half-range 0.04), ours misses (0.10). Combination
    c has no stable cell and is not counted. The naive forecast (the pilot's last 8 rewards) is the same level
    as ours here, so it counts as ours."""
    def result(finals, level):
        fit = type("Constant", (), {"predict": lambda self, t: np.full(np.shape(t), level)})()
        pilot = (np.arange(1.0, 25.0), np.r_[np.zeros(16), np.full(8, level)])  # the naive forecast reads the last 8: level
        forecast = SimpleNamespace(fit=fit, pilot=pilot,
                                   config=SimpleNamespace(setup=SimpleNamespace(hparams=SimpleNamespace(lr=1e-3))))
        measured = {(1e-3, T): (final is None, 0.0, final, 0.0, 0) for T, final in finals.items()}
        return {"measured": measured, "forecast": forecast}

    text = readings.final_reward_reach({"a": result({1: 0.90, 4: 0.92, 32: 0.70}, 0.91),
                                      "b": result({1: 0.50, 4: 0.58, 32: None}, 0.60),
                                      "c": result({1: None, 32: None}, 0.5)})
    assert "met by ours on 0 and by the naive forecast (the pilot's last 8 rewards held) on 0 of the 2 combinations" in text
    assert "would meet it on 1:" in text
    assert "Without the T = 32 cells (a stale window ends lower): ours 1, the naive forecast 1 and the best single " \
           "number 2 of 2" in text
    assert "not scored" in readings.final_reward_reach({"c": result({1: None}, 0.5)})


def test_window_progress_is_the_ratio_of_first_window_gains():
    """Two count combinations whose T = 32 seed curves sit at r0 over steps 0-31 and r0 + g over 32-95, g = 0.3 at a
    third of the base lr and 0.3 x q at 3 times it (q = 1.2 and 0.8: median 1.00, quartiles 0.90-1.10); the grid's
    lrs are written as base / 3 (at base 5e-3 an ulp from factor x base), which the reading must still find. One
    pattern combination whose low-lr window gains 0.01 (under WINDOW_GAIN_MIN: skipped, no ratio), and one whose
    high-lr cell is unstable (no gains at all). A high-lr window that loses reward gives a negative ratio. Ours'
    error is the constant fit's level 0.9 minus each stable T = 32 cell's final reward (its last 16 steps' mean)."""
    lr = 5e-3

    def result(task, gains, unstable=()):
        fit = type("Constant", (), {"predict": lambda self, t: np.full(np.shape(t), 0.9)})()
        forecast = SimpleNamespace(fit=fit, config=SimpleNamespace(setup=SimpleNamespace(hparams=SimpleNamespace(lr=lr))))
        curves, measured = {}, {}
        for grid_lr, g in gains.items():
            reward = np.tile(np.r_[np.full(32, 0.2), np.full(64, 0.2 + g)], (4, 1))
            curves[(grid_lr, 32)] = {"reward": reward}
            measured[(grid_lr, 32)] = (grid_lr in unstable, 0.0, 0.2 + g, 0.0, 0)
        return {"task": task, "curves": curves, "measured": measured, "forecast": forecast}

    low, high = lr / 3, lr * 3
    assert low != lr * (1 / 3)  # an ulp apart: the lookup is by math.isclose, not ==
    results = {"a": result("count", {low: 0.3, high: 0.36}), "b": result("count", {low: 0.3, high: 0.24}),
               "c": result("pattern", {low: 0.01, high: 0.5}), "d": result("pattern", {low: 0.3, high: 0.5}, unstable=(high,))}
    assert scores.first_window_gains(results["a"], 32, (1 / 3, 3.0)) == pytest.approx((0.3, 0.36))
    assert scores.first_window_gains(results["d"], 32, (1 / 3, 3.0)) is None
    assert scores.first_window_gains(results["a"], 16, (1 / 3, 3.0)) is None  # no T = 16 cells
    assert scores.first_window_gains(results["a"], 64, (1 / 3, 3.0)) is None  # 2T = 128 steps: past the run's 96
    text = readings.window_progress(results)
    ratios = text.split("The forecast")[0]
    assert "count 1.00 (quartiles 0.90-1.10, 2 combinations); 1 skipped" in ratios and "pattern" not in ratios
    assert "assumes 9" in text and "from the sampler after 64 updates on" in text
    errors = [0.9 - 0.5, 0.9 - 0.56, 0.9 - 0.5, 0.9 - 0.44]  # count's four stable cells
    pattern = [0.9 - 0.21, 0.9 - 0.7, 0.9 - 0.5]  # c's two, d's stable low-lr one
    assert f"count {np.mean(errors):+.3f} on 4" in text and f"pattern {np.mean(pattern):+.3f} on 3" in text
    assert "count 1.20 (one combination)" in readings.window_progress({"a": results["a"]})
    losing = readings.window_progress({"e": result("count", {low: 0.3, high: -0.15})})
    assert "count -0.50 (one combination)" in losing
    assert readings.window_progress({"d": results["d"]}) == ""


def test_pilot_plateau_gap_reads_the_on_policy_cells_against_the_fits_plateau():
    """Pattern, pilot lr 1e-3, fit plateau 0.7: a and b unstable at T = 1 and the base lr, c stable there; the
    lowest lr's T = 1 finals 0.9, 0.95 and 0.8, b's lowest cell unstable (no gap): a's +0.20 over 1 where the
    base-lr cell falls, c's +0.10 over 1 where it holds. A count combination without a T = 1 cell at the base lr is not read;
    one whose lowest on-policy cell is the base lr's (the quick grid) is counted but gives no gap."""
    def result(task, cells):
        fit = SimpleNamespace(params={"r_inf": 0.7})
        forecast = SimpleNamespace(fit=fit, config=SimpleNamespace(setup=SimpleNamespace(hparams=SimpleNamespace(lr=1e-3))))
        return {"task": task, "forecast": forecast,
                "measured": {cell: (unstable, 0.0, final, 0.0, 0) for cell, (unstable, final) in cells.items()}}

    low, base = 1e-3 / 3, 1e-3
    results = {"a": result("pattern", {(low, 1): (False, 0.9), (base, 1): (True, 0.3), (base, 4): (False, 0.9)}),
               "b": result("pattern", {(low, 1): (True, 0.95), (base, 1): (True, 0.2)}),
               "c": result("pattern", {(low, 1): (False, 0.8), (base, 1): (False, 0.85)}),
               "d": result("count", {(low, 1): (False, 1.0), (base, 4): (False, 1.0)}),
               "e": result("addition", {(base, 1): (False, 0.4), (10 * base, 1): (True, 0.0)})}
    text = readings.pilot_plateau_gap(results)
    assert ("pattern: the base-lr cell unstable on 2 of 3; the gap +0.20 over 1 where it falls, +0.10 over 1 where "
            "it holds") in text and "count" not in text
    assert ("addition: the base-lr cell unstable on 0 of 1; the gap not measured where it falls, not measured where "
            "it holds") in text
    assert readings.pilot_plateau_gap({"d": results["d"]}) == ""
    assert readings.signed(-0.004) == "+0.00" and readings.signed(-0.006) == "-0.01"


def test_own_pilot_reach_fits_each_cells_first_steps():
    """Cell (1e-3, 1): the first seed follows R(t) = 0.9 - 0.6 exp(-t / 60) exactly (t = step + 1, still rising
    at the end, so a time axis off by a step shows) and the other seeds 0.1 above it, so the first seed's
    24 steps fit R and its forecast misses the others' final reward by -0.1 (a pilot read from every seed
    would miss by -0.025). Cell (1e-3, 4): 0.3 for 40 steps and 0.8 after: its own pilot says 0.3 (-0.5).
    Not scored: T = 32, an unstable cell, and a cell whose first seed has no finite reward (ConfigError).
    Ours: a constant 0.8 forecast; flat: the base pilot's last 8 rewards, 0.3 (its earlier ones 0.9 are not read)."""
    t = np.arange(1.0, scores.STEPS + 1.0)
    exact = 0.9 - 0.6 * np.exp(-t / 60)
    rising = np.vstack([exact] + [exact + 0.1] * 3)
    jump = np.tile(np.where(t <= 40, 0.3, 0.8), (4, 1))
    blank = np.vstack([np.full_like(t, np.nan)] + [exact] * 3)
    curves = {(1e-3, 1): {"reward": rising}, (1e-3, 4): {"reward": jump}, (1e-3, 32): {"reward": jump},
              (3e-3, 1): {"reward": jump}, (3e-3, 4): {"reward": blank}}
    measured = {cell: (cell == (3e-3, 1), 0.0, 0.0, 0.0, 0) for cell in curves}
    fit = type("Constant", (), {"predict": lambda self, t: np.full(np.shape(t), 0.8)})()
    base_pilot = (np.arange(1.0, 25.0), np.r_[np.full(16, 0.9), np.full(8, 0.3)])
    forecast = SimpleNamespace(fit=fit, pilot=base_pilot,
                               config=SimpleNamespace(setup=SimpleNamespace(hparams=SimpleNamespace(lr=1e-3))))
    result = {"measured": measured, "curves": curves, "forecast": forecast, "task": "pattern"}
    errors = readings.own_pilot_errors(result, 24)
    target = exact[-scores.PLATEAU_STEPS:].mean() + 0.1
    assert errors[0] == (pytest.approx(-0.1, abs=1e-6), pytest.approx(0.8 - target), pytest.approx(0.3 - target))
    assert errors[1] == (pytest.approx(-0.5), pytest.approx(0.0), pytest.approx(-0.5))
    assert len(errors) == 2
    text = readings.own_pilot_reach({"a": result}, 24)
    assert "On the 2 stable cells with T <= 4, the final reward of the cell's other seeds within 0.05, own pilot / " \
           "ours / flat: 0% / 50% / 0% (by task: pattern 0% / 50% / 0% of 2); every such cell of a combination: " \
           "0 / 0 / 0 of 1 combinations" in text
    assert "not scored" in readings.own_pilot_reach({"a": {**result, "measured": {c: (True,) + m[1:] for c, m in measured.items()}}}, 24)


@pytest.mark.parametrize("content, says", [
    ('{"count-pg": {"lr_pilot": 0.003, "cells": []}}', "no seed curves"),  # a version-3 dump: cells only
    ("[1, 2]", "unknown combinations"),
    ("{not json", "cannot read the dump"),
    ('{"no-such-combination": {"curves": []}}', "unknown combinations"),
])
def test_a_bad_dump_is_one_line_and_exit_2(script, tmp_path, capsys, content, says, dumps):
    import argparse

    path = tmp_path / "cells.json"
    path.write_text(content)
    with pytest.raises(SystemExit) as stop:
        dumps.read_dump(argparse.ArgumentParser(prog="pilot_forecast.py"), str(path), script.COMBINATIONS)
    assert stop.value.code == 2 and says in capsys.readouterr().err


def scored(accuracy=0.9, safe_but_unstable=0, max_t_ok=True, plateau_error=0.01, baselines=(0.5, 0.5)) -> dict:
    """A combination's scores as `score` returns them, ours and the baselines'."""
    row = {"ours": dict(accuracy=accuracy, safe_but_unstable=safe_but_unstable, max_t_ok=max_t_ok, max_t=[(4, 4)])}
    for who, acc in zip(("continuous", "always stable"), baselines):
        row[who] = dict(accuracy=acc, safe_but_unstable=0, max_t_ok=True, max_t=[(4, 4)])
    return row | {"plateau_error": plateau_error}


@pytest.mark.parametrize("change, missed", [
    ({}, []),
    ({"accuracy": 0.8}, ["accuracy under 85%"]),
    ({"safe_but_unstable": 2}, ["more than 1 safe-but-unstable"]),
    ({"max_t_ok": False}, ["max safe T off by more than one grid step"]),
    ({"plateau_error": 0.06}, ["plateau error over 0.05"]),
    ({"plateau_error": float("nan")}, []),  # no stable cell: nothing to miss
    ({"baselines": (0.9, 0.5)}, ["not ahead of continuous"]),  # a tie is not ahead
    ({"accuracy": 0.8, "baselines": (0.95, 0.95)}, ["accuracy under 85%", "not ahead of continuous and always stable"]),
])
def test_misses_names_each_target_missed_and_passing_is_missing_none(change, missed):
    result = scored(**change)
    assert scores.misses(result) == missed
    assert scores.passed(result) is (not missed)


def test_the_shipped_cells_are_a_gzipped_dump_of_every_combination(script, dumps):
    """paper_repro/data/pilot_forecast_cells.json.gz (the seed curves of the grids behind RESULTS.md) reads
    through `read_dump` and holds every combination's 20 cells of 4 seeds x 96 steps."""
    import argparse
    from pathlib import Path

    path = Path(script.__file__).parent / "data" / "pilot_forecast_cells.json.gz"
    dump = dumps.read_dump(argparse.ArgumentParser(prog="pilot_forecast.py"), str(path), script.COMBINATIONS)
    assert set(dump) == set(script.COMBINATIONS)
    curves = dumps.dumped_curves(dump["count-pg"])
    assert len(curves) == 20 and all(c["reward"].shape == (script.SEEDS, scores.STEPS) for c in curves.values())


def test_a_corrupt_gzipped_dump_is_one_line_and_exit_2(script, tmp_path, capsys, dumps):
    import argparse

    path = tmp_path / "cells.json.gz"
    path.write_bytes(b"not gzip at all")
    with pytest.raises(SystemExit) as stop:
        dumps.read_dump(argparse.ArgumentParser(prog="pilot_forecast.py"), str(path), script.COMBINATIONS)
    assert stop.value.code == 2 and "cannot read the dump" in capsys.readouterr().err


def test_an_exact_forecast_meets_the_target_when_every_seed_mean_lands_within_the_tolerance():
    """Combination a: two stable cells whose 4 seeds' finals have sd 0.06 and 0.02, and an unstable one (not
    read); b: seeds that agree (P = 1); c: no stable cell (None, not counted). The closed form erf(0.05 / (se
    sqrt 2)), se = sd / 2, multiplied over a's cells, against 200 000 draws of two 4-seed means of normal
    seeds with those sds (4 standard errors); the text sums the chances, P_a + 1, over 2 combinations. A
    seed whose reward is nan is left out (3 seeds: sd 0.06, se 0.06 / sqrt 3); one finite seed says nothing."""
    def curves_for(finals):
        return {"reward": np.repeat(np.asarray(finals, dtype=float)[:, None], scores.STEPS, axis=1)}

    unit = np.array([-1.5, -0.5, 0.5, 1.5]) / np.std([-1.5, -0.5, 0.5, 1.5], ddof=1)  # sd 1 (ddof 1)
    a = {"measured": {(1e-3, 1): (False,), (1e-3, 4): (False,), (1e-3, 32): (True,)},
         "curves": {(1e-3, 1): curves_for(0.5 + 0.06 * unit), (1e-3, 4): curves_for(0.8 + 0.02 * unit),
                    (1e-3, 32): curves_for([0, 1, 0, 1])}}
    b = {"measured": {(1e-3, 1): (False,)}, "curves": {(1e-3, 1): curves_for([0.9] * 4)}}
    c = {"measured": {(1e-3, 1): (True,)}, "curves": {(1e-3, 1): curves_for([0.9] * 4)}}
    rng = np.random.default_rng(0)
    within = [np.abs(rng.normal(0, sd, (200_000, 4)).mean(axis=1)) <= 0.05 for sd in (0.06, 0.02)]
    mc = float(np.mean(within[0] & within[1]))
    p = readings.exact_forecast_chance(a)
    assert abs(p - mc) <= 4 * np.sqrt(mc * (1 - mc) / 200_000)
    assert readings.exact_forecast_chance(b) == 1.0 and readings.exact_forecast_chance(c) is None
    text = readings.exact_forecast_reach({"a": a, "b": b, "c": c})
    assert f"target on at least {p + 1:.1f} of those 2 combinations" in text
    nan_seed = {"measured": {(1e-3, 1): (False,)}, "curves": {(1e-3, 1): curves_for([0.5, np.nan, 0.56, 0.44])}}
    assert readings.exact_forecast_chance(nan_seed) == pytest.approx(math.erf(0.05 / (0.06 / math.sqrt(3) * math.sqrt(2))))
    one_seed = {"measured": {(1e-3, 1): (False,)}, "curves": {(1e-3, 1): curves_for([0.5, np.nan, np.nan, np.nan])}}
    assert readings.exact_forecast_chance(one_seed) is None
    assert readings.exact_forecast_reach({"c": c}) == ""


def test_task_prior_forecasts_each_stable_cell_by_the_tasks_other_combinations():
    """Three count combinations a, b, c (rounds develop, confirm-4, confirm-5), stable finals at T = 1 and 32 of
    (1.0, 0.9), (0.98, 0.7), (0.96, 0.8), one unstable cell in c; a lone pattern combination d (no other of its task:
    no prior, not scored). Leave one out, a's cells get (0.97, 0.75): within 0.05 at T = 1, 0.15 off at T = 32; b's
    (0.98, 0.85), c's (0.99, 0.8). Ours and the naive forecast hold 0.97 (a constant fit; the pilot's last 8 rewards).
    From earlier rounds only: a has no prior, b's is a's (1.0, 0.9), c's the mean of a's and b's."""
    def result(task, finals, unstable=()):
        fit = type("Constant", (), {"predict": lambda self, t: np.full(np.shape(t), 0.97)})()
        forecast = SimpleNamespace(fit=fit, pilot=(np.arange(1.0, 25.0), np.full(24, 0.97)),
                                   config=SimpleNamespace(setup=SimpleNamespace(hparams=SimpleNamespace(lr=1e-3))))
        measured = {(1e-3, T): ((1e-3, T) in unstable, 0.0, f, 0.0, 0) for T, f in finals.items()}
        return {"task": task, "measured": measured, "forecast": forecast, "predicted": {c: False for c in measured}}

    results = {"a": result("count", {1: 1.0, 32: 0.9}),
               "b": result("count", {1: 0.98, 32: 0.7, 4: 0.2}, unstable=((1e-3, 4),)),
               "c": result("count", {1: 0.96, 32: 0.8, 4: 0.1}, unstable=((1e-3, 4),)), "d": result("pattern", {1: 0.5})}
    roles = {"a": "develop", "b": "confirm-4", "c": "confirm-5", "d": "confirm-5"}
    loo = task_prior.task_prior_rows(results)
    assert [round(row[1], 6) for row in loo["a"]] == [0.97, 0.75] and math.isnan(loo["d"][0][1])
    assert [round(row[1], 6) for row in loo["c"]] == [0.99, 0.8]  # its unstable T = 4 cell is no cell of the table
    assert all(row[2] == pytest.approx(0.97) and row[3] == pytest.approx(0.97) for row in loo["b"])
    ahead = task_prior.task_prior_rows(results, roles, rounds=ROUNDS)
    assert math.isnan(ahead["a"][0][1]) and [row[1] for row in ahead["b"]] == [1.0, 0.9]
    assert [round(row[1], 6) for row in ahead["c"]] == [0.99, 0.8]
    text = task_prior.task_prior_reach(results, roles, rounds=ROUNDS)
    # all cells: c's prior (0.99, 0.8) is within at both; a's T = 32 off by 0.15, b's by 0.15; ours 0.97 is off at T = 32
    assert "all: the prior 1, ours 0, the naive forecast 0 of 3 combinations (67% / 50% / 50% of their stable cells)" in text
    assert "T < 32: the prior 3, ours 3, the naive forecast 3 of 3 combinations (100% / 100% / 100%" in text
    assert "from earlier rounds only (2 combinations with a prior): the prior 1, ours 0" in text
    # count at T = 1: finals 1.0, 0.98, 0.96 (mean 0.98, sd 0.016), ours and naive 0.97 (signed error -0.01)
    assert "count: T = 1 0.98 (0.02; -0.01 / -0.01, 3 cells), T = 32 0.80 (0.08; +0.17 / +0.17, 3 cells)" in text
    assert "pattern: T = 1 0.50 (0.00; +0.47 / +0.47, 1 cell)" in text
    assert task_prior.task_prior_reach({"d": results["d"]}, roles, rounds=ROUNDS) == ""
    # the regime by lookup: b's two cells from a's, c's three from a's and b's (its T = 4 unstable as b's was);
    # ours says stable everywhere here, so it misses c's T = 4 cell
    assert ("lookup of the task's earlier rounds (a cell unstable when most earlier combinations were unstable at "
            "its lr factor and T; no theory): 100.0% of 5 cells right, 0 safe but unstable, against ours' 80.0% and 1") in text
    # version 10's final-reward score: c's cells from a's and b's (earlier rounds) at their T: |0.99 - 0.96| at T = 1,
    # |0.8 - 0.8| at T = 32; a (the first round) and d (no earlier pattern combination) have no prior
    assert task_prior.prior_plateau_error(results, roles, "c", rounds=ROUNDS) == (pytest.approx(0.03, abs=1e-12), 0)
    assert task_prior.prior_plateau_error(results, roles, "a", rounds=ROUNDS) is None
    assert task_prior.prior_plateau_error(results, roles, "d", rounds=ROUNDS) is None
    # the prior's 90% prediction interval (predict._prior (3)) by scipy's t: a's T = 1 cell from b's and c's 0.98, 0.96
    half = scipy.stats.t.ppf(0.95, 1) * np.std([0.98, 0.96], ddof=1) * math.sqrt(1 + 1 / 2)
    assert loo["a"][0][5] == pytest.approx((0.97 - half, 0.97 + half), abs=1e-12) and loo["d"][0][5] is None
    assert ("held 100.0% of 6 stable cells' final reward: T = 1 100% (half-width 0.109), T = 32 100% (half-width "
            "0.547)") in text


def test_version_10_rows_come_last_and_are_not_recorded_without_every_earlier_grid_of_their_task(
        script, monkeypatch, capsys):
    """`prior_order`: a confirm-11 combination after the others, with the earlier combinations of its task that a
    run lacks; `main` refuses, before running anything, to record its row without them (one line, exit 2)."""
    names, missing = script.prior_order(["count-cispo-temp1.2", "count-pg", "pattern-grpo"])
    later = script.PRIOR_ROLES
    count = [n for n, c in script.COMBINATIONS.items() if c[0] == "count" and c[4] not in later]
    assert names == ["count-pg", "pattern-grpo", "count-cispo-temp1.2"]
    assert sorted(missing["count-cispo-temp1.2"]) == sorted(set(count) - {"count-pg"})
    assert script.prior_order(list(script.COMBINATIONS))[1] == {}
    monkeypatch.setattr("sys.argv", ["pilot_forecast.py", "--only", "count-cispo-temp1.2"])
    monkeypatch.setattr(script, "Runs", lambda *a: pytest.fail("ran a grid"))
    with pytest.raises(SystemExit) as stop:
        script.main()
    err = capsys.readouterr().err.strip()
    assert stop.value.code == 2 and len(err.splitlines()) == 1 and "needs every earlier grid of its task" in err


def test_with_prior_swaps_in_the_priors_plateau_error_and_keeps_the_pilots(script, monkeypatch):
    results = {"count-cispo-temp1.2": {"plateau_error": 0.2}}
    monkeypatch.setattr(script, "prior_plateau_error", lambda res, roles, name, rounds: (0.04, 1))
    script.with_prior("count-cispo-temp1.2", results)
    assert results["count-cispo-temp1.2"] == {"plateau_error": 0.04, "pilot_plateau_error": 0.2, "prior_fallbacks": 1}
    monkeypatch.setattr(script, "prior_plateau_error", lambda res, roles, name, rounds: None)
    untouched = {"count-cispo-temp1.2": {"plateau_error": 0.2}}
    script.with_prior("count-cispo-temp1.2", untouched)
    assert untouched == {"count-cispo-temp1.2": {"plateau_error": 0.2}}


def test_version_12_shrinks_the_prior_toward_the_cells_objective_and_step():
    """`shrunk_rows` by hand (predict._prior (4), kappa 2): count combinations a (grpo, develop) and b (gspo, confirm-4)
    with stable finals at T = 1 and 32 of (1.0, 0.9) and (0.98, 0.7), all at lr 1e-3 with AdamW; c (grpo,
    confirm-5) measured (0.96, 0.8). c's T = 1 cell: m0 = 0.99, m1 = (1.0 + 2 m0) / 3, m2 = (1.0 + 2 m1) / 3; its
    T = 32 cell: m0 = 0.8, m1 = (0.9 + 2 m0) / 3, m2 = (0.9 + 2 m1) / 3. A cell at another lr stops at m1."""
    from gspo_dynamics.predict import read_run_config


    def result(objective, finals, lr=1e-3):
        fit = type("Constant", (), {"predict": lambda self, t: np.full(np.shape(t), 0.97)})()
        setup = read_run_config({"task": "count", "model": "100k", "objective": objective, "lr": 1e-3})
        measured = {(lr, T): (False, 0.0, f, 0.0, 0) for T, f in finals.items()}
        return {"task": "count", "measured": measured, "predicted": {c: False for c in measured},
                "forecast": SimpleNamespace(fit=fit, pilot=(np.arange(1.0, 25.0), np.full(24, 0.97)),
                                            config=SimpleNamespace(setup=setup))}

    results = {"a": result("grpo", {1: 1.0, 32: 0.9}), "b": result("gspo", {1: 0.98, 32: 0.7}),
               "c": result("grpo", {1: 0.96, 32: 0.8}), "d": result("grpo", {1: 0.96}, lr=3e-3)}
    roles = {"a": "develop", "b": "confirm-4", "c": "confirm-5", "d": "confirm-5"}
    m1 = [(1.0 + 2 * 0.99) / 3, (0.9 + 2 * 0.8) / 3]
    want = [(1.0 + 2 * m1[0]) / 3, (0.9 + 2 * m1[1]) / 3]
    rows = task_prior.shrunk_rows(results, roles, "c", rounds=ROUNDS, kappa=2.0)
    assert [row[1] for row in rows] == pytest.approx(want, abs=1e-12) and [row[4] for row in rows] == [0.96, 0.8]
    assert rows[0][2] == pytest.approx(0.97)  # ours, the fallback where no earlier cell has the T
    assert [row[3] for row in rows] == pytest.approx([0.99, 0.8])  # version 10's prior, the plain mean
    assert task_prior.shrunk_rows(results, roles, "d", rounds=ROUNDS, kappa=2.0)[0][1] == pytest.approx(m1[0], abs=1e-12)  # no cell at its lr
    assert task_prior.shrunk_plateau_error(results, roles, "c", rounds=ROUNDS, kappa=2.0) == (pytest.approx(want[1] - 0.8, abs=1e-12), 0)
    assert task_prior.shrunk_plateau_error(results, roles, "a", rounds=ROUNDS, kappa=2.0) is None
    text = task_prior.shrunk_reach({n: results[n] for n in "abc"}, roles, **SHRUNK)
    # c alone from confirm-5, in sample: version 12 off by 0.056 at T = 32 (one of two cells within), version 10's
    # (0.99, 0.8) within; no held-out round among them
    assert ("in sample (confirm-5): 0 of 1 combinations (50% of their stable cells), version 10's prior 1 (100%); "
            "(3)'s 90% half-width about it held 2 of 2 cells (`shrunk_reach`)") in text and "held out" not in text
    half = scipy.stats.t.ppf(0.95, 1) * np.std([0.9, 0.7], ddof=1) * math.sqrt(1.5)  # (3) from a's and b's T = 32 cells
    assert rows[1][5] == pytest.approx((want[1] - half, want[1] + half), abs=1e-12)
    roles["c"] = "confirm-14"
    assert "held out (confirm-14): 0 of 1 combinations" in task_prior.shrunk_reach({n: results[n] for n in "abc"}, roles, **SHRUNK)


def _chance_results(rng, rounds, per_round=10):
    """Synthetic results: per round `per_round` count combinations of 20 cells x 4 seeds (the protocol's round)
    whose seeds fall at the chance `fall_chance(m)` of their margin m (uniform in [-3, 3]); the forecast stands in
    with only its pilot lr."""
    from types import SimpleNamespace

    from gspo_dynamics.predict import fall_chance

    results, roles = {}, {}
    for r, role in enumerate(np.repeat(rounds, per_round)):
        cells = [(3e-3 * f, T) for f in (1 / 3, 1.0, 3.0, 10.0, 30.0) for T in (1, 4, 16, 32)]
        margin = {c: float(rng.uniform(-3, 3)) for c in cells}
        falls = {c: int(rng.binomial(4, float(fall_chance(margin[c])))) for c in cells}
        results[f"c{r}"] = dict(task="count", margin=margin, measured={c: (falls[c] > 0, 0, 0, 0, falls[c]) for c in cells},
                                curves={cells[0]: {"reward": np.zeros((4, 1))}},
                                forecast=SimpleNamespace(config=SimpleNamespace(setup=SimpleNamespace(hparams=SimpleNamespace(lr=3e-3)))))
        roles[f"c{r}"] = role
    return results, roles


def test_the_fall_chance_claim_scores_the_held_out_round_with_the_shipped_coefficients(load_script):
    """Seeds drawn at the shipped chance itself: its Brier score on the held-out round equals (1) computed by hand,
    beats the earlier rounds' rate (margins spread over [-3, 3]), and its mean chance is within the tolerance;
    the lookup of one earlier grid per (lr factor, T) is (k + rate) / (n + 1); without an earlier round, no claim."""
    report = load_script("paper_repro", "_fall_chance_report")
    from gspo_dynamics.predict import fall_chance

    rng = np.random.default_rng(11)
    results, roles = _chance_results(rng, ("develop", "confirm-4", "confirm-12"))
    text, passed = report.fall_chance_claim(results, roles, "confirm-12")
    held = [results[name] for name, role in roles.items() if role == "confirm-12"]
    p = np.array([float(fall_chance(r["margin"][c])) for r in held for c in r["measured"]])
    k = np.array([m[4] for r in held for m in r["measured"].values()], dtype=float)
    brier = float(np.sum(k * (1 - p) ** 2 + (4 - k) * p**2) / (4 * len(k)))
    assert f"per-run Brier score {brier:.4f}" in text
    cells = report._cells(results, roles)
    train, test = [c for c in cells if c[0] < 9], [c for c in cells if c[0] == 9]
    rate, lookup = fall_chance_baselines(train, test)
    kk = {c[1:4]: sum(t[5] for t in train if t[1:4] == c[1:4]) for c in test}
    assert lookup == pytest.approx([(kk[c[1:4]] + rate[0]) / (80 + 1) for c in test])
    assert rate[0] == pytest.approx(sum(c[5] for c in train) / (4 * len(train)))
    assert brier < brier_score(rate, k, np.full(len(k), 4)) and passed  # drawn at the chance itself: it should pass
    assert f"fall rate {brier_score(rate, k, np.full(len(k), 4)):.4f}" in text
    assert f"earlier grids {brier_score(lookup, k, np.full(len(k), 4)):.4f}" in text
    assert report.fall_chance_claim(*_chance_results(rng, ("confirm-12",)), "confirm-12") is None
    rows = rolling_origin(cells)
    assert set(rows["round"]) == {1, 9} and len(rows["model"]) == 400
    # no leak: the held-out round's own falls move neither its baselines nor an earlier round's forecasts
    for r in held:
        r["measured"] = {c: (True, 0, 0, 0, 4) for c in r["measured"]}
    moved = report._cells(results, roles)
    assert fall_chance_baselines([c for c in moved if c[0] < 9], [c for c in moved if c[0] == 9]) == (rate, lookup)
    again = rolling_origin(moved)
    first = rows["round"] == 1
    assert np.array_equal(again["model"][first], rows["model"][first]) and np.array_equal(again["lookup"][first], rows["lookup"][first])


def test_a_fall_chance_row_is_recorded_only_from_its_whole_round_and_every_earlier_one(load_script, script):
    """`round_complete`: every combination up to confirm-12 holds it for confirm-12, not for confirm-13; one missing
    earlier combination, or one of the round's own, does not."""
    report = load_script("paper_repro", "_fall_chance_report")
    rounds = script.ROUNDS
    upto = [n for n, c in script.COMBINATIONS.items() if rounds.index(c[4]) <= rounds.index("confirm-12")]
    assert report.round_complete(upto, "confirm-12") and not report.round_complete(upto, "confirm-13")
    assert not report.round_complete(upto[1:], "confirm-12") and not report.round_complete(upto[:-1], "confirm-12")


def test_versions_13s_and_14s_changes_are_judged_against_the_earlier_verdict_on_the_same_cells(load_script):
    """`_clip_mode_report` by hand: a CISPO combination c of 20 cells, 6 unstable; version 13 flags those 6 and 1
    more (95%, 0 safe but unstable: both targets), version 12 flags 3 of them (85%, 3 safe but unstable: not both).
    Version 13's claim passes on its round (more combinations meeting both, fewer safe but unstable) and not when the
    two verdicts tie; rounds without a CISPO combination give None; the reach parts in sample and held out. Version
    14's (the current verdict, "predicted", against "version 13") on confirm-17: flags exactly the 6 (100%, both
    targets) against version 13's 95%, both targets on 1 against 1: not more, so it fails; against a version 13 that
    flagged 4 more (80%, not both) it passes, with more cells right (20 against 16)."""
    report = load_script("paper_repro", "_clip_mode_report")
    cells = [(lr, T) for lr in (1e-3, 3e-3, 1e-2, 3e-2, 1e-1) for T in (1, 4, 16, 32)]
    unstable = set(cells[:6])
    measured = {c: (c in unstable, 0.0, 0.5, 0.0, int(c in unstable)) for c in cells}
    v13 = {c: c in unstable or c == cells[6] for c in cells}
    v12 = {c: c in set(cells[:3]) for c in cells}
    results = {"c": {"measured": measured, "predicted": v13, "version 13": v13, "version 12": v12},
               "d": {"measured": measured, "predicted": v12, "version 13": v12, "version 12": v12},
               "e": {"measured": measured, "predicted": v13}}  # not a CISPO row: no earlier verdicts
    assert report.regime(results["c"], v13) == (pytest.approx(0.95), 0, True)
    assert report.regime(results["c"], v12) == (pytest.approx(0.85), 3, False)
    roles = {"c": "confirm-16", "d": "confirm-15", "e": "confirm-16"}
    text, passed = report.change_claim(results, roles, "confirm-16")
    assert passed and ("both regime targets on 1 (version 12's verdict: 0), safe but unstable 0 (3), false alarms 1 (0), "
                       "cells right 19 (17) of 20") in text
    assert report.change_claim(results, {**roles, "c": "confirm-15"}, "confirm-16") is None
    tie = {"c": {**results["c"], "version 13": v12}}
    assert report.change_claim(tie, roles, "confirm-16")[1] is False
    reach = report.change_reach(results, roles, 13)
    assert "in sample (1 combinations): both regime targets on 0 against 0" in reach and "held out (1 combinations)" in reach
    exact = {c: c in unstable for c in cells}
    absorbed = {"f": {"measured": measured, "predicted": exact, "version 13": v13, "version 12": v12}}
    text, passed = report.change_claim(absorbed, {"f": "confirm-17"}, "confirm-17")
    assert not passed and "both regime targets on 1 (version 13's verdict: 1)" in text and "cells right 20 (19)" in text
    alarms = {c: c in unstable or c in set(cells[6:10]) for c in cells}
    text, passed = report.change_claim({"f": {**absorbed["f"], "version 13": alarms}}, {"f": "confirm-17"}, "confirm-17")
    assert passed and "cells right 20 (16) of 20" in text
    assert "Version 14's change" in report.change_reach({**results, **absorbed}, {**roles, "f": "confirm-17"}, 14)


def test_rounds_held_out_before_version_14_keep_the_margin_their_version_read(load_script):
    """A CISPO row carries "margin v12" (its displacement capped, as versions 11 and 12 read it) and "margin v13"
    (uncapped) beside version 14's margin: `_cells` reads v12's for the fall chance's rounds before CLIP_ROLES, v13's
    for those before ABSORB_ROLES, the current margin otherwise, and the current margin where a row has no earlier
    one; `judged_by` names the version per round."""
    report = load_script("paper_repro", "_fall_chance_report")
    results, roles = _chance_results(np.random.default_rng(3), ["confirm-12"], per_round=2)
    cispo = results["c0"]
    cispo["margin v12"] = {c: m - 1.0 for c, m in cispo["margin"].items()}
    cispo["margin v13"] = {c: m + 1.0 for c, m in cispo["margin"].items()}
    now, v13, v12 = (report._cells(results, roles, v) for v in (14, 13, 12))
    first = next(iter(cispo["margin"]))
    assert (now[0][4], v13[0][4], v12[0][4]) == (cispo["margin"][first], cispo["margin"][first] + 1.0,
                                                 cispo["margin"][first] - 1.0)
    assert now[20:] == v13[20:] == v12[20:]  # the other row has no earlier margins: the same cells
    assert [report.judged_by(r) for r in ("confirm-12", "confirm-15", "confirm-16", "confirm-17")] == [12, 12, 13, 14]


def test_version_13s_reading_of_an_absorbed_cispo_pilot_is_uncapped(script, tmp_path, monkeypatch):
    """`uncapped`: a CISPO pilot at the protocol's PILOT_T whose success is absorbing (version 14 caps its displacement
    at the band edge) read as version 13 read it, against an independent route, the whole forecast recomputed with
    absorption switched off (ABSORBED_SHARE above 1, version 13's code path): the same collapse grid and margin over
    an (lr, T) grid (exactly: the same floats), the config's D = T lr s; a pilot version 14 left uncapped is returned
    as it is."""
    from gspo_dynamics.predict import collapse_grid, margin_grid, pilot_forecast
    from gspo_dynamics.logs import read_log
    from gspo_dynamics.predict import read_run_config
    from gspo_dynamics.theory import collapse

    j = np.tile(np.arange(script.PILOT_T), 30)
    rows = [{"step": i + 1, "reward": 0.99 + 0.005 * math.sin(i), "window/position": int(j[i]),
             "ratios/token_log_var": float((j[i] * 0.05) ** 2), "entropy": 0.8, "frac_reward_zero_std": 0.5}
            for i in range(len(j))]
    path = tmp_path / "pilot.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    setup = read_run_config({"lr": 0.1, "group_size": 8, "refresh_interval": 4, "correction": "token",
                             "clip_high": 0.2, "clip_low": 1 - 1e-6, "clip_mode": "cap"})
    fc = dataclasses.replace(pilot_forecast(setup, read_log(str(path))), max_safe_lr=None)
    assert fc.band_edge == 0.2 and fc.survived is not None
    monkeypatch.setattr(collapse, "ABSORBED_SHARE", 2.0)
    v13_route = dataclasses.replace(pilot_forecast(setup, read_log(str(path))), max_safe_lr=None)
    v13 = script.uncapped(fc)
    assert v13.band_edge is None is v13_route.band_edge
    lrs, Ts = [0.01, 0.03, 0.1, 0.3], [1, 2, 4, 16, 32]
    assert np.array_equal(collapse_grid(v13, lrs, Ts), collapse_grid(v13_route, lrs, Ts))
    assert np.array_equal(margin_grid(v13, lrs, Ts), margin_grid(v13_route, lrs, Ts))
    assert not np.array_equal(margin_grid(fc, lrs, Ts), margin_grid(v13, lrs, Ts))  # the cap mattered here
    assert v13.displacement == pytest.approx(v13_route.displacement) == pytest.approx(4 * fc.drift_per_step)
    assert script.uncapped(v13) is v13


def test_a_sections_header_gives_the_held_success_rate_and_cispos_cap(load_script):
    """`held_text`: the pilot's held success rate p_h and p_h^G (0.99^8 = 0.923), and under CISPO's clip whether the
    displacement was capped (theory.collapse (10)); nothing without the pilot's rewards."""
    report = load_script("paper_repro", "_pilot_report")

    def fc(held, mode="cap", edge=0.28, correction="token"):
        hp = SimpleNamespace(group_size=8, clip_mode=mode, correction=correction)
        return SimpleNamespace(held=held, band_edge=edge, config=SimpleNamespace(setup=SimpleNamespace(hparams=hp)))

    assert report.held_text(fc(0.99)) == ", held success rate 0.99 (p_h^G 0.923), D capped at the band edge"
    assert report.held_text(fc(0.5, edge=None)).endswith("(p_h^G 0.00391), D uncapped")
    assert report.held_text(fc(0.5, mode="stop")) == ", held success rate 0.5 (p_h^G 0.00391)"
    assert report.held_text(fc(None)) == ""
