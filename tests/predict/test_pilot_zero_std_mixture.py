"""The pilot's zero-std shares by G over prompts of mixed difficulty (`predict._pilot_log.zero_std_shares`): fitted from a
simulated log at one G, checked against fresh simulations at other G (the issue's verl case: batch success ~0.71 at
G = 16 with 44% of groups flat, where the batch law says 0.4%)."""

from __future__ import annotations

import numpy as np
import pytest

from gspo_dynamics.predict._pilot_log import zero_std_shares
from gspo_dynamics.logs import RunLog

A, B = 0.59, 0.24  # per-prompt success ~ Beta(A, B): mean 0.71, and 44% flat groups at G = 16
PROMPTS = 512  # prompts per logged step
STEPS = 40
TOL = 0.03  # a share from STEPS x PROMPTS simulated groups against the fit's: a few binomial errors of 20k groups


def simulate(G: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """(mean reward, zero-std share) per step of PROMPTS groups of G pass/fail rewards."""
    p = rng.beta(A, B, (STEPS, PROMPTS, 1))
    wins = (rng.random((STEPS, PROMPTS, G)) < p).sum(-1)  # (STEPS, PROMPTS)
    return wins.mean(-1) / G, ((wins == 0) | (wins == G)).mean(-1)


def test_the_mixture_fitted_at_one_group_size_predicts_the_others():
    rng = np.random.default_rng(0)
    reward, share = simulate(16, rng)
    log = RunLog(steps=np.arange(1, STEPS + 1), series={"reward": reward, "frac_zero_std": share}, format="jsonl", source="<sim>")
    measured: list[str] = []
    mean, shares, logged = zero_std_shares(log, reward, STEPS, (0.0, 1.0), measured, group_size=16)
    assert logged == pytest.approx(share.mean()) and any("mixed difficulty" in m for m in measured)
    batch = np.mean(reward**16 + (1 - reward) ** 16)
    assert batch < 0.01 < 0.4 < shares[16]  # the batch law is off by two orders of magnitude
    for G in (4, 64):
        assert shares[G] == pytest.approx(simulate(G, rng)[1].mean(), abs=TOL)


def test_without_a_logged_share_the_batch_law_stands():
    reward = np.full(STEPS, 0.5)
    log = RunLog(steps=np.arange(1, STEPS + 1), series={"reward": reward}, format="jsonl", source="<sim>")
    _, shares, logged = zero_std_shares(log, reward, STEPS, (0.0, 1.0), [], group_size=8)
    assert logged is None and shares[8] == pytest.approx(2 * 0.5**8)
