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


def test_measured_cells_compare_each_T_with_the_same_lr_on_policy(script):
    """A run that falls back by 0.5 half-way (a drawdown of ~0.3 in 16-step rollout means) is unstable against
    a monotone on-policy run at the same lr; a monotone one is stable."""
    steps = 64
    rising = np.linspace(0.2, 1.0, steps)
    falling = rising.copy()
    falling[32:] -= 0.5
    curves = {(1e-3, 1): {"reward": np.stack([rising, rising])}, (1e-3, 16): {"reward": np.stack([falling, falling])},
              (1e-3, 4): {"reward": np.stack([rising, rising])}}
    cells = script.measured_cells(curves, [1e-3], (1, 4, 16))
    assert cells[(1e-3, 16)][0] and not cells[(1e-3, 4)][0] and not cells[(1e-3, 1)][0]
    assert cells[(1e-3, 4)][2] == pytest.approx(rising[-script.PLATEAU_STEPS:].mean())


def test_fit_limit_finds_the_separating_spread(script):
    """Cells whose spread (T - 1) lr s exceeds 1.0 are unstable: the fitted S separates them (accuracy 1)
    and lies between the largest stable and the smallest unstable spread."""
    dump = {"count-pg": {"lr_pilot": 1e-3, "drift_per_step": 0.05,
                         "cells": [[lr, T, (T - 1) * lr * 50 > 1.0, 0.0, 0.0] for lr in (1e-3, 3e-3, 1e-2) for T in (1, 4, 16, 32)]}}
    S, accuracy = script.fit_limit(dump)
    spreads = sorted((T - 1) * lr * 50 for lr in (1e-3, 3e-3, 1e-2) for T in (1, 4, 16, 32))
    assert accuracy == 1.0 and max(x for x in spreads if x <= 1.0) < S < min(x for x in spreads if x > 1.0)
