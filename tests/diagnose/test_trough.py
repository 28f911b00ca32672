"""A rise, a long fall and a recovery (`_instability._trough`): the fall is an instability though the run ends high,
named at the step the CUSUM test puts the break; a healthy saturation and a flat noisy run show no trough."""

from __future__ import annotations

import numpy as np

from gspo_dynamics.diagnose import diagnose
from gspo_dynamics.logs import RunLog

ROWS = 60


def log_of(p: np.ndarray, seed: int = 0) -> RunLog:
    """Rows of 64 binary samples at success p, logged every 8 steps."""
    rng = np.random.default_rng(seed)
    reward = rng.binomial(64, np.clip(p, 0, 1)) / 64
    return RunLog(steps=8 * np.arange(1, p.size + 1), series={"reward": reward}, format="jsonl", source="<synthetic>",
                  trainer="trl", reward_std_kind="unknown")


def trough_item(d) -> dict | None:
    inst = next((v for v in d.verdicts if v.mode == "dynamical_instability"), None)
    return next((e for e in inst.evidence if e["signal"].startswith("sustained drop")), None) if inst else None


def test_a_rise_a_fall_and_a_recovery_is_an_instability_named_at_its_break():
    p = np.concatenate([np.linspace(0.3, 0.95, 15), np.full(30, 0.02), np.full(15, 0.95)])
    d = diagnose(log_of(p))
    item = trough_item(d)
    assert d.primary == "dynamical_instability" and item is not None
    assert abs(item["broke_at_step"] - 8 * 15) <= 16 and item["break_p_value"] < 0.01


def test_a_saturation_and_a_flat_noisy_run_have_no_trough():
    t = np.arange(ROWS)
    for p in (0.3 + 0.6 * (1 - np.exp(-t / 8)), np.full(ROWS, 0.4)):
        for seed in range(5):
            assert trough_item(diagnose(log_of(p, seed))) is None


def test_the_trough_search_alarms_on_white_noise_at_about_its_false_alarm_rate():
    """The CUSUM p of the rows the search chose is read times TROUGH_SEARCH (`_fall._trough`): on white noise the
    trough fires on about ALPHA of logs (it fired on ~4% of them before the correction), and the correction is what
    brings it there: with the bridge's own p it fires several times as often on the same logs."""
    from gspo_dynamics.diagnose import _fall
    from gspo_dynamics.diagnose._changepoint import ALPHA

    rng = np.random.default_rng(7)
    fired, uncorrected, n, reps = 0, 0, 100, 2000
    s, w = np.arange(1, n + 1), round(0.25 * n)
    for _ in range(reps):
        r = rng.normal(size=n)
        trend = {"early": float(np.mean(r[:w]))}
        fired += _fall._trough(s, r, trend) is not None
        original = _fall.TROUGH_SEARCH
        try:
            _fall.TROUGH_SEARCH = 1
            uncorrected += _fall._trough(s, r, trend) is not None
        finally:
            _fall.TROUGH_SEARCH = original
    assert fired / reps <= 1.6 * ALPHA  # 2000 logs: ALPHA's 20 alarms +- 4.5
    assert uncorrected / reps >= 2.5 * ALPHA
