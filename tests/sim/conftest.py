"""Fixtures shared by the bandit engine tests."""

from __future__ import annotations

import dataclasses

import pytest

from gspo_dynamics.theory.hyperparams import Adam, Hyperparams, SGD

# Adam divides g by |g| + eps: where g is rounding noise (a flat group at z = z_ref) the default eps = 1e-8
# turns ~1e-17 differences between two engines into ~1e-9 steps, so the mixed batches use a larger one
MIXED_ADAM_EPS = 1e-3


@pytest.fixture
def mixed_configs():
    """`vary(base)`: SGD without and with momentum (strong enough that the PPO clip binds) and Adam,
    varied around `base`, for engine-equivalence tests that run them as one batch."""
    def vary(base: Hyperparams) -> list[Hyperparams]:
        return [
            dataclasses.replace(base, lr=0.5, optimizer=SGD(momentum=0.0), kl_coef=0.0),
            dataclasses.replace(base, lr=1.5, optimizer=SGD(momentum=0.9), kl_coef=0.3, clip_low=0.1, clip_high=0.05),
            dataclasses.replace(base, lr=0.3, optimizer=Adam(eps=MIXED_ADAM_EPS), kl_coef=0.4),
        ]
    return vary
