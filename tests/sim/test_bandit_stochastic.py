"""Stochastic mode against expected mode, within stated statistical tolerances (fixed seeds).

One stochastic gradient is an unbiased estimate of the expected one, for every correction,
advantage and KL estimator, on- and off-policy (the k3 term is ratio-weighted for this). So the
seed-mean of g, and of one SGD step, must sit within N_SE standard errors of the expected value.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from gspo_dynamics.sim import BanditTask, simulate
from gspo_dynamics.sim._engine import BanditEngine
from gspo_dynamics.theory.hyperparams import Hyperparams

# A mean of S iid draws is within 4 standard errors of its expectation with probability
# 1 - 6e-5 per entry; the seeds are fixed, so the outcome is deterministic.
N_SE = 4.0
# Entries with no randomness (frozen logits, flat prompts): agreement to rounding.
ABS_TOL = 1e-12
SEEDS = 20_000

TASK = BanditTask.k_arm([[0.0, 1.0, 1.0], [0.0, 0.0, 1.0]], ref_logits=[[1.0, 0.0, -1.0], [0.2, 0.0, -0.3]])
COMBOS = list(itertools.product(["none", "token", "sequence"], ["mean", "std"], ["exact", "k3"]))


def _assert_within(samples: np.ndarray, expected: np.ndarray, axis: int) -> None:
    mean = samples.mean(axis=axis)
    se = samples.std(axis=axis, ddof=1) / np.sqrt(samples.shape[axis])
    excess = np.abs(mean - expected) - (N_SE * se + ABS_TOL)
    assert np.all(excess <= 0.0), f"worst excess {excess.max():.3g} (mean {mean}, expected {expected}, se {se})"


@pytest.mark.parametrize("correction, advantage, kl_estimator", COMBOS)
def test_stochastic_gradient_is_unbiased_off_policy(correction, advantage, kl_estimator):
    hps = [
        Hyperparams(lr=1.0, group_size=4, num_groups=2, correction=correction, advantage=advantage,
                    kl_estimator=kl_estimator, kl_coef=0.7, clip_low=0.1, clip_high=0.15),
        Hyperparams(lr=1.0, group_size=4, num_groups=2, correction=correction, advantage=advantage,
                    kl_estimator=kl_estimator, kl_coef=0.0, clip_low=0.3, clip_high=0.5),
    ]
    sampling = torch.tensor(TASK.ref_logits, dtype=torch.float64).expand(2, SEEDS, 2, 3)
    # the current policy has moved away from the sampling one: ratios fall on both sides of the clip
    current = sampling + torch.tensor([[0.3, -0.2, 0.25], [-0.1, 0.35, 0.0]], dtype=torch.float64)
    noisy = BanditEngine(TASK, hps, seeds=SEEDS, seed=3).ascent(current, sampling).numpy()  # (C, S, P, K)
    exact = BanditEngine(TASK, hps, expected=True).ascent(current[:, :1], sampling[:, :1]).numpy()[:, 0]
    _assert_within(noisy, exact, axis=1)


@pytest.mark.parametrize("correction", ["none", "token", "sequence"])
def test_one_simulated_sgd_step_is_unbiased(correction):
    task = BanditTask.prompts([0.2, 0.5, 0.8])
    hps = [Hyperparams(lr=0.5, group_size=5, correction=correction, advantage="std", kl_coef=0.3, kl_estimator="k3")]
    noisy = simulate(task, hps, steps=1, seeds=SEEDS, seed=11, record_logits=True)
    exact = simulate(task, hps, steps=1, expected=True, record_logits=True)
    _assert_within(noisy.logit_gap[1, 0], exact.logit_gap[1, 0, 0], axis=0)


def test_stochastic_plateau_matches_expected_plateau():
    """Late-time reward, averaged over a window and over seeds: the noise-induced shift of the
    plateau is O(lr Var(g)) and measured at < 0.1 standard error here, so N_SE covers it."""
    task = BanditTask.prompts([0.3, 0.6, 0.9])
    hps = [Hyperparams(lr=0.2, group_size=8, kl_coef=1.0, refresh_interval=T) for T in (1, 2)]
    noisy = simulate(task, hps, steps=400, seeds=300, record_every=10, seed=5)
    exact = simulate(task, hps, steps=400, expected=True, record_every=10)
    per_seed = noisy.mean_reward[-20:].mean(axis=0)  # (C, S): time average over the last 200 steps
    plateau = exact.mean_reward[-1, :, 0]
    _assert_within(per_seed.T, plateau, axis=0)
    assert np.all(plateau < 0.9)
