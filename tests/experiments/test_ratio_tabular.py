"""gspo_dynamics/experiments/_ratio_tabular.py: the one `signed_advantage` behind the ratio figure (uniform pi_s) and
ratio_statistics.py's claims (any tabular pi_s); the claims' pieces are in tests/test_ratio_statistics_claim.py."""

from __future__ import annotations

import numpy as np
import pytest

from gspo_dynamics.experiments import signed_advantage
from gspo_dynamics.sim.sequence import PatternMatch

MOMENT_TOL = 0.03  # absolute: 20k Monte Carlo groups on each side, s.e. ~1-2% of moments ~0.3-1


def test_the_uniform_shortcut_is_the_general_monte_carlo_of_a_uniform_policy():
    """A uniform pi_s draws one Monte Carlo for all positions; a pi_s a hair off uniform takes the general route
    (per position, from the exact count law): the same moments and sign shares within Monte Carlo error."""
    L, V, G = 4, 15, 8
    target = np.array(PatternMatch(length=L).target)
    uniform = np.full((L, V), 1.0 / V)
    nudged = uniform * (1.0 + 1e-12 * np.arange(V))
    nudged /= nudged.sum(-1, keepdims=True)
    fast = signed_advantage(uniform, target, np.random.default_rng(0), group_size=G, draws=20_000)
    slow = signed_advantage(nudged, target, np.random.default_rng(1), group_size=G, draws=20_000)
    for field in ("pos_mean", "neg_mean", "pos_sq", "neg_sq"):
        assert getattr(fast[0], field) == pytest.approx(getattr(slow[0], field), abs=MOMENT_TOL), field
    for a, b in zip(fast[1:], slow[1:]):
        assert a.shape == (L, V) and a == pytest.approx(b, abs=MOMENT_TOL)
