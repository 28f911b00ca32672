"""A gradient-norm or KL spike's severity is what the run did after it (`diagnose._spikes`, module rule): a warning
where the reward fell after one or the log ends too soon to tell, a note where the run absorbed every one."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gspo_dynamics.diagnose import diagnose
from gspo_dynamics.diagnose._spikes import AFTER_ROWS, FALL_Z, after_spike, spike_severity
from gspo_dynamics.logs import RunLog

N = 80


def make_log(reward, grad_norm=None, kl=None) -> RunLog:
    series = {"reward": np.asarray(reward, float)}
    if grad_norm is not None:
        series["grad_norm"] = np.asarray(grad_norm, float)
    if kl is not None:
        series["kl_ref"] = np.asarray(kl, float)
    return RunLog(steps=np.arange(1, len(reward) + 1, dtype=np.int64), series=series, format="jsonl",
                  source="<synthetic>", trainer="trl")


def noisy(level: np.ndarray, seed: int = 1) -> np.ndarray:
    return level + 0.02 * np.random.default_rng(seed).standard_normal(level.size)


def spiked_norm(at: int) -> np.ndarray:
    norm = 0.5 * np.exp(0.1 * np.random.default_rng(1).standard_normal(N))
    norm[at - 1] = 20.0
    return norm


def finding(log: RunLog, name: str):
    return next(f for f in diagnose(log).findings if f.name == name)


def test_a_spike_the_run_absorbed_is_a_note_that_says_so():
    """The reward holds at 0.6 (row noise 0.02; this seed's z is +0.2) around a 40x gradient-norm spike at step 50:
    found, a note, the reward's move given."""
    log = make_log(noisy(np.full(N, 0.6)), spiked_norm(50))
    f = finding(log, "grad_norm_spike")
    assert f.severity == "note" and "within its row noise" in f.summary
    assert "  " + f.summary in diagnose(log).report_lines(explain=True)  # a note's summary is said under --explain


def test_a_spike_the_reward_falls_after_is_a_warning_with_the_fall():
    """The reward drops from 0.6 to 0.3 right after the spike at step 50: a warning naming the fall."""
    level = np.where(np.arange(1, N + 1) <= 50, 0.6, 0.3)
    f = finding(make_log(noisy(level), spiked_norm(50)), "grad_norm_spike")
    assert f.severity == "warning" and "the reward fell by 0.29" in f.summary and "after step 50" in f.summary


def test_a_spike_in_the_last_rows_is_a_warning_too_soon_to_tell():
    """A spike with fewer than AFTER_ROWS reward rows after it (a live run's last rows): a warning."""
    f = finding(make_log(noisy(np.full(N, 0.6)), spiked_norm(N - AFTER_ROWS + 2)), "grad_norm_spike")
    assert f.severity == "warning" and "too soon to tell" in f.summary


def test_a_kl_spike_follows_the_same_rule():
    kl = np.full(N, 0.05)
    kl[49] = 0.9
    held = finding(make_log(noisy(np.full(N, 0.6)), kl=kl), "kl_spike")
    fell = finding(make_log(noisy(np.where(np.arange(1, N + 1) <= 50, 0.6, 0.3)), kl=kl), "kl_spike")
    assert (held.severity, fell.severity) == ("note", "warning")


def test_the_change_and_its_z_against_a_direct_computation():
    """after_spike at step 50 against the means and the first-difference scatter computed here, row by row."""
    reward = noisy(np.linspace(0.2, 0.7, N), seed=3)
    change, z = after_spike(make_log(reward), 50)
    after, before = reward[50:60], reward[40:50]  # steps 51..60 and 41..50 (step s is row s - 1)
    diffs = [reward[i + 1] - reward[i] for i in range(N - 1)]
    sigma = float(np.std(diffs, ddof=1)) / math.sqrt(2)
    assert change == pytest.approx(after.mean() - before.mean())
    assert z == pytest.approx(change / (sigma * math.sqrt(2 / 10)))
    assert math.isnan(after_spike(make_log(reward), N - 3)[1])


def test_under_row_noise_alone_a_spike_warns_at_the_one_sided_rate():
    """A flat reward of independent row noise: z < -FALL_Z on Phi(-2) = 2.3% of spikes (simulated 4000 logs)."""
    rng = np.random.default_rng(7)
    logs = 4000
    fell = sum(spike_severity(make_log(0.5 + 0.05 * rng.standard_normal(N)), [40])[0] == "warning" for _ in range(logs))
    expected = 0.5 * math.erfc(FALL_Z / math.sqrt(2))
    assert abs(fell / logs - expected) < 4 * math.sqrt(expected * (1 - expected) / logs)

