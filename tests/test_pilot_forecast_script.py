"""paper_repro/pilot_forecast.py: its scoring pieces against loops written here (the end-to-end quick
run is in tests/test_paper_repro.py, slow)."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="module")
def script(load_script):
    return load_script("paper_repro", "pilot_forecast")


def test_max_stable_T_is_the_grid_point_before_the_first_unstable_one(script):
    Ts = (1, 4, 16, 32)
    grid = {(0.1, T): T >= 16 for T in Ts} | {(0.2, T): False for T in Ts} | {(0.3, T): T >= 4 for T in Ts}
    assert [script.max_stable_T(grid, lr, Ts) for lr in (0.1, 0.2, 0.3)] == [4, 32, 1]
    assert script.max_stable_T({(0.1, T): True for T in Ts}, 0.1, Ts) == 0


def test_measured_cells_judge_each_run_against_its_own_best_and_its_start(script):
    """Unstable: a run that falls back by 0.5 half-way, and one that jumps from its initial reward 0.5 to 0
    at its first update (no block of it ever held the reward: only its first step did); stable: a monotone
    rise, and a flat run with per-step noise 0.05 (its block means vary by ~0.02, far below the margin)."""
    steps = 97
    rising = np.linspace(0.2, 1.0, steps)
    falling = rising.copy()
    falling[48:] -= 0.5
    jump = np.r_[0.5, np.zeros(steps - 1)]
    noisy = 0.5 + 0.05 * np.random.default_rng(0).standard_normal((2, steps))
    curves = {(1e-3, 1): {"reward": np.stack([rising, rising])}, (1e-3, 16): {"reward": np.stack([falling, falling])},
              (1e-3, 4): {"reward": np.stack([jump, jump])}, (1e-3, 32): {"reward": noisy}}
    cells = script.measured_cells(curves, [1e-3], (1, 4, 16, 32))
    assert [cells[(1e-3, T)][0] for T in (1, 4, 16, 32)] == [False, True, True, False]
    assert cells[(1e-3, 4)][1] == pytest.approx(0.5)
    assert cells[(1e-3, 1)][2] == pytest.approx(rising[-script.PLATEAU_STEPS:].mean())


def test_fit_limit_finds_the_separating_displacement(script):
    """Cells whose displacement T lr s exceeds 1.0 are unstable: the fitted S separates them (accuracy 1)
    and lies between the largest stable and the smallest unstable displacement."""
    lrs, Ts = (1e-3, 3e-3, 1e-2), (1, 4, 16, 32)
    dump = {"count-pg": {"lr_pilot": 1e-3, "drift_per_step": 0.05, "entropy": 2.0,
                         "cells": [[lr, T, T * lr * 50 > 1.0, 0.0, 0.0] for lr in lrs for T in Ts]}}
    S, accuracy = script.fit_limit(dump)
    spreads = sorted(T * lr * 50 / 2.0 for lr in lrs for T in Ts)  # relative to the entropy, equation (5)
    assert accuracy == 1.0 and max(x for x in spreads if x <= 0.5) < S < min(x for x in spreads if x > 0.5)


def test_fit_limit_caps_a_clipped_window_at_the_band_edge(script):
    """With a clip at 0.2 (band edge 0.18) a long window's displacement is the edge or the first step: cells
    unstable only where one step lr s passes 0.5 are separated, whatever T."""
    lrs, Ts = (1e-3, 3e-3, 1e-2, 3e-2), (1, 4, 16, 32)
    dump = {"count-gspo": {"lr_pilot": 1e-3, "drift_per_step": 0.05, "clip": 0.2, "entropy": 1.0,
                           "cells": [[lr, T, lr * 50 > 0.5, 0.0, 0.0] for lr in lrs for T in Ts]}}
    S, accuracy = script.fit_limit(dump)
    assert accuracy == 1.0 and 0.15 < S < 1.5


def test_an_entropy_overshoot_marks_every_lr_from_the_pilots_up(script):
    """A pilot whose entropy rose on its first updates: cells at or above its lr collapse whatever D;
    below it the relative limit decides (D / H = T lr s / H against S = 1)."""
    d = {"lr_pilot": 1e-3, "drift_per_step": 0.01, "entropy": 0.5, "overshoot": True, "clip": None}
    assert script.collapses(d, 1e-3, 1, 1.0) and script.collapses(d, 3e-3, 1, 1.0)
    assert not script.collapses(d, 3e-4, 1, 1.0)  # D / H = 3e-4 x 10 / 0.5 = 0.006
    assert script.collapses(d, 3e-4, 200, 1.0)  # 200 x 3e-3 / 0.5 = 1.2 > 1
    assert not script.collapses({**d, "overshoot": False}, 3e-3, 1, 1.0)
    assert not script.collapses({**d, "entropy": None}, 3e-3, 1000, 1.0)  # no entropy: no collapse forecast


def test_time_to_plateau_of_an_exponential_rise(script):
    """r = 1 - 0.8 exp(-t / 10) is within 5% of its rise for good from t = 10 ln 20 ~ 30: the measured time
    (the first step of the first block whose mean is within) lands at most one BLOCK after it; a flat run has
    no rise to time (nan)."""
    t = np.arange(97.0)
    rise = 1 - 0.8 * np.exp(-t / 10)
    cells = script.measured_cells({(1e-3, 1): {"reward": np.stack([rise, rise])},
                                   (1e-3, 4): {"reward": np.full((2, 97), 0.5)}}, [1e-3], (1, 4))
    assert 0 <= cells[(1e-3, 1)][3] - 10 * np.log(20) <= script.BLOCK
    assert np.isnan(cells[(1e-3, 4)][3])
