"""diagnose's finding of a one-row KL spike (`diagnose._spikes.kl_spikes`): logs built here whose answer is known,
and the two real logs whose INDEX names a spike (read where they are)."""

from __future__ import annotations

import numpy as np
import pytest
from _real_logs import ALEX_JSON, IMJONEZZ, SUNSHINE

from gspo_dynamics.diagnose import diagnose
from gspo_dynamics.diagnose._spikes import KL_SPIKE_WINDOW, kl_spikes
from gspo_dynamics.logs import RunLog, read_log


def make_log(kl, reward=None) -> RunLog:
    n = len(kl)
    reward = np.linspace(0.2, 0.6, n) if reward is None else reward
    return RunLog(steps=np.arange(1, n + 1, dtype=np.int64), series={"kl_ref": np.asarray(kl, float),
                  "reward": np.asarray(reward, float)}, format="jsonl", source="<synthetic>", trainer="trl")


def test_a_one_row_jump_is_a_spike_with_the_reward_around_it():
    """KL 0.05 for 60 rows with 0.9 at step 41, the reward 0.5 before it and 0.3 after: one spike at step 41, its
    baseline the median of the 20 rows before (0.05), the reward's change over 10 rows after against 10 before -0.2."""
    kl = np.full(60, 0.05)
    kl[40] = 0.9
    reward = np.r_[np.full(41, 0.5), np.full(19, 0.3)]
    spikes = kl_spikes(make_log(kl, reward))
    assert len(spikes) == 1
    s = spikes[0]
    assert (s["step"], s["kl"], s["before"]) == (41, 0.9, 0.05) and s["reward_change"] == pytest.approx(-0.2)
    found = next(f for f in diagnose(make_log(kl, reward)).findings if f.name == "kl_spike")
    assert "step 41" in found.summary and "0.9" in found.summary and "fell by 0.2" in found.summary
    assert found.severity == "warning"


@pytest.mark.parametrize("kl", [
    np.linspace(0.0, 2.0, 80),  # a steady climb: every row near the median before it
    np.r_[np.full(40, 0.001), 0.02, np.full(39, 0.001)],  # 20x, but 0.019 nats: no spike
    np.r_[np.full(40, 0.5), 0.95, np.full(39, 0.5)],  # 0.45 nats up, but under 10x its baseline
    np.full(KL_SPIKE_WINDOW, 0.05),  # no row has 20 rows before it
])
def test_no_spike(kl):
    assert kl_spikes(make_log(kl)) == []


@pytest.mark.real_logs
def test_the_real_logs_spikes_are_found_and_no_others(real_logs):
    """The Llama run's KL spike at step 206 and the Qwen3.5 run's at step 50 (their INDEX entries), each the only
    one; the Wordle run, whose KL sits near 1 from the start, has none."""
    assert [s["step"] for s in kl_spikes(read_log(real_logs / IMJONEZZ))] == [206]
    assert [s["step"] for s in kl_spikes(read_log(real_logs / SUNSHINE))] == [50]
    assert kl_spikes(read_log(real_logs / ALEX_JSON)) == []


def test_a_kl_climbing_steadily_from_zero_is_no_spike():
    """A KL growing from 0 as the policy leaves the reference (8% a row, a contextual-bandit healthy run's shape)
    passes 10x the median of its earlier rows without any row jumping: no spike."""
    from gspo_dynamics.diagnose._spikes import KL_SPIKE_JUMP, KL_SPIKE_RATIO, spike_rows

    kl = np.r_[1e-4 * 1.25 ** np.arange(40), np.full(40, 0.17)]
    assert spike_rows(kl, KL_SPIKE_RATIO, KL_SPIKE_JUMP)[0].size == 0
    kl[60] = 2.5  # a real one-row spike on top (15x)
    assert list(spike_rows(kl, KL_SPIKE_RATIO, KL_SPIKE_JUMP)[0]) == [60]
