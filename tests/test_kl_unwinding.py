"""paper_repro/kl_unwinding.py: its windows and setups, on curves whose answer is known by construction."""

from __future__ import annotations

import math

import numpy as np
import pytest


@pytest.fixture(scope="module")
def script(load_script):
    return load_script("paper_repro", "kl_unwinding")


def test_flat_windows_reads_each_window_whose_mean_share_reaches_the_threshold(script):
    """Two seeds of 8 steps at T = 4: seed 0's second window is flat (mean share 0.96875, above the threshold 0.95)
    and its first is not (0.9); seed 1's first is flat (all 1) and its second not (0.9). The changes are last minus
    first logged step of each flat window, in seed then window order."""
    share = np.array([[1, 1, 0.6, 1, 1, 1, 1, 0.875], [1, 1, 1, 1, 0.6, 1, 1, 1]], dtype=float)
    kl = np.array([[0.0, 0, 0, 0, 1.0, 0.9, 0.8, 0.5], [2.0, 2.1, 2.2, 2.5, 0, 0, 0, 0]])
    entropy = np.array([[0.0, 0, 0, 0, 1.0, 1.1, 1.2, 1.4], [3.0, 2.9, 2.8, 2.0, 0, 0, 0, 0]])
    w = script.flat_windows({"frac_reward_zero_std": share, "kl": kl, "entropy": entropy}, 4)
    np.testing.assert_allclose(w["kl"], [0.5 - 1.0, 2.5 - 2.0])
    np.testing.assert_allclose(w["entropy"], [1.4 - 1.0, 2.0 - 3.0])
    assert script.rises(w) == 0.5


def test_a_trailing_partial_window_and_no_flat_window(script):
    """10 steps at T = 4: the last 2 steps are no window; with every share 0.5 no window is flat, and the share of
    rises is nan (nothing measured), not 0."""
    curves = {k: np.full((1, 10), 0.5) for k in ("frac_reward_zero_std", "kl", "entropy")}
    curves["frac_reward_zero_std"][0, 8:] = 1.0
    w = script.flat_windows(curves, 4)
    assert len(w["entropy"]) == 0 and math.isnan(script.rises(w))


def test_the_setups_differ_only_in_T_and_the_KL_weight(script):
    """Each lr factor's setups: the combination's config at that lr, T = 16 or 4, its own KL weight (0.04) or none;
    the other combinations' at T = 16 with the weight OTHER_KL given or none, their own configs having none."""
    pilot_forecast = pytest.importorskip("pilot_forecast")
    for combination, setups, own in [(script.COMBINATION, script.SETUPS, True)] + [
            (other, script.OTHER_SETUPS, False) for other in script.OTHERS]:
        base = pilot_forecast.base_config(combination)
        assert (base.kl_coef > 0) is own
        made = script.configs(combination, setups)
        assert len(made) == len(script.LR_FACTORS) * len(setups)
        for (c, f, name), cfg in made.items():
            T, kl = setups[name]
            assert c == combination and cfg.lr == pytest.approx(base.lr * f) and cfg.steps_per_generation == T
            assert cfg.kl_coef == (base.kl_coef if kl is None else kl)
            assert cfg.objective == base.objective and cfg.init_seed == base.init_seed


def test_pulled_needs_enough_flat_windows_in_both_setups(script):
    """(a) and (b) on built windows: 6 and 6 flat windows, rises in 4/6 with the weight and 0/6 without: pulled; 3/6
    with it: not; 4 windows without the weight (under MIN_WINDOWS = 5): nothing measured (None)."""
    def windows(changes):
        return {"entropy": np.asarray(changes, dtype=float), "kl": np.full(len(changes), np.nan)}

    free = windows([-0.1] * 6)
    assert script.pulled({"KL, T = 16": windows([0.2] * 4 + [-0.1] * 2), "no KL, T = 16": free}) is True
    assert script.pulled({"KL, T = 16": windows([0.2] * 3 + [-0.1] * 3), "no KL, T = 16": free}) is False
    assert script.pulled({"KL, T = 16": windows([0.2] * 6), "no KL, T = 16": windows([-0.1] * 4)}) is None


@pytest.fixture(scope="module")
def refresh(load_script):
    return load_script("paper_repro", "kl_pull_refresh")


def test_the_refresh_setups_differ_only_in_T(refresh):
    """kl_pull_refresh.py's setups: count/cispo-kl at each T of REFRESH_INTERVALS and each lr factor, its own KL weight."""
    pilot_forecast = pytest.importorskip("pilot_forecast")
    base = pilot_forecast.base_config(refresh.COMBINATION)
    made = refresh.configs(refresh.COMBINATION, refresh.SETUPS)
    assert sorted({cfg.steps_per_generation for cfg in made.values()}) == list(refresh.REFRESH_INTERVALS)
    assert len(made) == len(refresh.LR_FACTORS) * len(refresh.REFRESH_INTERVALS)
    assert all(cfg.kl_coef == base.kl_coef > 0 for cfg in made.values())


def test_the_refresh_claims_rules_at_16_and_4_seeds(refresh):
    """(a) needs a fall at the base lr at T = 8 and at T = 12; (b) the base lr at T = 6 within 4 of 16 seeds of a
    third of it at T = 16, scaled to the seeds run (1 of 4)."""
    third, base = refresh.LR_FACTORS
    fallen = {(f, T): 0 for f in (third, base) for T in refresh.REFRESH_INTERVALS}
    fallen.update({(base, 8): 1, (base, 12): 3, (base, 6): 5, (third, 16): 9})
    assert refresh.verdict(fallen, 16) == (True, True)  # |5 - 9| = 4: at the tolerance
    assert refresh.verdict({**fallen, (base, 6): 4}, 16) == (True, False)  # 5 apart
    assert refresh.verdict({**fallen, (base, 8): 0}, 16) == (False, True)
    quick = {**fallen, (base, 6): 1, (third, 16): 2}
    assert refresh.verdict(quick, 4) == (True, True)  # 1 apart of 4 seeds: within 4 / 16 of them
    assert refresh.verdict({**quick, (third, 16): 3}, 4) == (True, False)


def test_same_lr_T_pairs_a_third_of_the_lr_at_3T_with_the_base_lr_at_T(refresh):
    """Of T = 4, 6, 8, 12, 16 at a third of and at the base lr, only (1/3, 12) and (1, 4) share lr T = 4."""
    third, base = refresh.LR_FACTORS
    fallen = {(f, T): int(T * f) for f in (third, base) for T in refresh.REFRESH_INTERVALS}
    pairs = refresh.same_lr_T(fallen, 16)
    assert len(pairs) == 1 and pairs[0].startswith("lr T = 4:") and "T = 12 4" in pairs[0] and "T = 4 4" in pairs[0]
    assert pairs[0].endswith("(within (b)'s tolerance)")
    apart = refresh.same_lr_T({**fallen, (third, 12): 6, (base, 4): 0}, 16)[0]  # the measured pair: 6 against 0
    assert apart.endswith("(not within (b)'s tolerance: here the falls do not follow lr T)")
