"""predict at the pilot's own point: the entropy overshoot (theory.collapse (6)) is read from the entropy alone, so
T = 1 is no shelter from it; a displacement the pilot itself ran and held is not made at risk by the D share or by
the fall chance at the threshold, m = 0, that the survived limit puts there by construction."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from test_fall_chance import both_rules_pilot
from test_pilot import write_log

from gspo_dynamics.predict import pilot_forecast, pilot_headline, read_run_config
from gspo_dynamics.predict._collapse_risk import COLLAPSE_SPREAD
from gspo_dynamics.predict._fall_chance import config_fall_chance, fall_chance
from gspo_dynamics.predict._headline import AT_RISK_CHANCE
from gspo_dynamics.predict._pilot_headline import ran_and_held
from gspo_dynamics.theory import collapse

TRL_T1 = {"learning_rate": 3e-3, "num_generations": 8, "per_device_train_batch_size": 64, "max_steps": 400}


def _t1_pilot(tmp_path, entropy: np.ndarray):
    """A TRL pilot at T = 1 (no drift between samplers to measure) whose reward rises 0.25 -> 0.9."""
    steps = np.arange(len(entropy))
    reward = 0.9 - 0.65 * np.exp(-steps / 15.0)
    path = write_log(tmp_path / "pilot.jsonl", {"reward": reward, "entropy": entropy})
    return pilot_forecast(read_run_config(TRL_T1), path, reward_range=(0.0, 1.0))


def test_an_entropy_overshoot_at_t1_is_unsafe_with_the_lr_of_equation_6(tmp_path):
    entropy = np.r_[0.78, 1.04, 1.0, 0.93, np.linspace(0.9, 0.4, 76)]  # +33% on the first updates
    f = _t1_pilot(tmp_path, entropy)
    assert f.displacement is None and f.overshoot is True
    rise = 1.04 / 0.78 - 1
    assert f.entropy_rise == pytest.approx(rise)
    assert f.collapse_max_lr == pytest.approx(3e-3 * collapse.OVERSHOOT_RISE / rise)  # lr_p R / r, (6)
    head = pilot_headline(f)
    assert head.verdict == "unsafe" and "overshoots" in head.reason
    lr_change = next(c for c in head.changes if c.key == "learning_rate")
    assert lr_change.value <= f.collapse_max_lr
    assert any("entropy rose 33% on the first updates" in line for line in f.summary_lines())


def test_an_entropy_that_falls_at_t1_is_no_overshoot(tmp_path):
    f = _t1_pilot(tmp_path, np.linspace(0.78, 0.4, 80))
    assert f.overshoot is False and f.entropy_rise < 0 and f.collapse_max_lr is None
    assert "overshoots" not in pilot_headline(f).reason


def _past_the_bound(tmp_path):
    """The both-rules pilot with no fall and no linear bound, its entropy set so that its own displacement D is 1.5x
    the theory's limit S H / (1 - z) (theory.collapse (7))."""
    base = both_rules_pilot(tmp_path, np.full(60, 0.8))
    D = base.displacement
    H = D * base.signal_share / (1.5 * COLLAPSE_SPREAD)
    base = dataclasses.replace(base, fall=None, max_safe_lr=None, kl_pull=False, entropy=H, survived=None)
    assert collapse.relative_limit(COLLAPSE_SPREAD, H, base.signal_share) == pytest.approx(D / 1.5)
    return base, D


def test_a_displacement_the_pilot_ran_and_held_is_not_at_risk_by_construction(tmp_path):
    base, D = _past_the_bound(tmp_path)
    own = dataclasses.replace(base, survived=D)
    assert ran_and_held(own) and own.collapse_limit == pytest.approx(D)
    chance = config_fall_chance(own)
    assert chance["margin"] == pytest.approx(0.0, abs=1e-12)  # D / L = 1: the threshold itself
    assert chance["chance"] == pytest.approx(float(fall_chance(0.0))) and chance["chance"] >= AT_RISK_CHANCE
    head = pilot_headline(own)
    assert head.verdict == "safe", head.lines()
    assert "ran at this move between refreshes" in head.reason
    # nor is the threshold's chance printed as the run's: the pilot ran there and held, how far the limit lies above
    # is not identified (issue 49 item 4)
    assert head.forecast["collapse_chance"] is None
    assert any("collapse risk at these settings: not identified" in t for t in head.forecast["text"])
    assert any("loses its reward: not identified" in line for line in own.summary_lines())


@pytest.mark.parametrize("survived_share", [None, 0.5])
def test_a_displacement_past_what_the_pilot_ran_stays_a_risk(tmp_path, survived_share):
    """The same D with no survived move (the pilot fell or ran at another T), or with half of D survived: the
    limit is below D and the verdict is not safe."""
    base, D = _past_the_bound(tmp_path)
    f = dataclasses.replace(base, survived=None if survived_share is None else survived_share * D)
    assert not ran_and_held(f)
    assert pilot_headline(f).verdict != "safe"


def test_came_back_is_the_level_after_the_fall_not_the_pilots_mean(tmp_path):
    """An 8-row pilot that fell 0.69 -> ~0 and stayed there: its held level (all 8 rows) is 0.35, but it did not come
    back: unsafe, not a dip (a public run's pilot read 'came back to 0.353' from such rows)."""
    import json

    reward = [0.7, 0.69, 0.68, 0.7, 0.025, 0.0, 0.025, 0.0]
    rows = [{"step": 5 * (i + 1), "reward": r} for i, r in enumerate(reward)]
    path = tmp_path / "pilot.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = {"learning_rate": 1e-4, "num_generations": 8, "per_device_train_batch_size": 64, "max_steps": 200}
    f = pilot_forecast(read_run_config(cfg), str(path), reward_range=(0.0, 1.0))
    assert f.fall.lost and f.held == pytest.approx(np.mean(reward))
    head = pilot_headline(f)
    assert head.verdict == "unsafe" and "came back" not in head.reason, head.lines()


def test_an_entropy_rise_within_its_row_scatter_is_no_overshoot_at_t1(tmp_path):
    """Entropy over 2 completions a step (a Wordle run: 0.38 -> 0.72 on the first update, rows over 0.38-0.88 all
    run long): the +60% is within 3 sd of a difference of two rows, so no overshoot, no lr bound, and the verdict is
    unsure with that reason, not "unsafe, lower the lr"."""
    rng = np.random.default_rng(1)
    entropy = np.r_[0.45, 0.72, 0.5, 0.6, 0.6 + 0.12 * rng.standard_normal(76)]
    f = _t1_pilot(tmp_path, entropy)
    assert collapse.entropy_rise(entropy) > collapse.OVERSHOOT_RISE and collapse.rise_within_noise(entropy)
    assert f.overshoot is None and f.entropy_rise is None and f.collapse_max_lr is None
    assert "within its own row scatter" in f.rise_unread
    head = pilot_headline(f)
    assert head.verdict == "unsure" and "within its own row scatter" in head.reason and not head.changes
    assert f.to_json()["entropy_rise_unread"] == f.rise_unread
