"""Reward hacking is the training reward rising for the wrong reason: evidence that rests on a change of the reward's
make-up (longer completions, one reward function carrying the gain) counts only beside a rise, and a component's
fall counts only where it matters to the reward (a new user's audit: 'reward hacking (0.59)' on a length grown 2.18x
while the reward did not move, Welch z 1.35). Logs made here."""

from __future__ import annotations

import numpy as np

from gspo_dynamics.diagnose import diagnose
from gspo_dynamics.logs import RunLog

N = 120


def make_log(reward, **series) -> RunLog:
    data = {"reward": np.asarray(reward, float), **{k: np.asarray(v, float) for k, v in series.items()}}
    return RunLog(steps=np.arange(1, len(reward) + 1, dtype=np.int64), series=data, format="jsonl",
                  source="<synthetic>", trainer="trl")


def _length(seed: int) -> np.ndarray:
    """Completions growing 200 -> ~520 tokens (2.6x), with row noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(N)
    return 200 + 320 * t / (N - 1) + rng.normal(0, 10, N)


def test_length_growth_beside_a_flat_reward_is_a_note_not_hacking():
    rng = np.random.default_rng(3)
    flat = 0.5 + rng.normal(0, 0.05, N)
    d = diagnose(make_log(flat, mean_length=_length(3)))
    assert d.verdict("reward_hacking") is None
    note = next(n for n in d.notes if n.startswith("the mean completion length grew"))
    assert "did not rise significantly" in note and "not reward hacking" in note


def test_length_growth_beside_a_significant_rise_is_hacking_evidence():
    rng = np.random.default_rng(4)
    t = np.arange(N)
    rising = 0.2 + 0.6 * (1 - np.exp(-t / 40)) + rng.normal(0, 0.03, N)
    d = diagnose(make_log(rising, mean_length=_length(4)))
    hack = d.verdict("reward_hacking")
    assert hack is not None and hack.confidence >= 0.5
    item = next(e for e in hack.evidence if e["signal"] == "mean completion length late / early")
    assert item["holds"] and item["welch_z"] >= 3
