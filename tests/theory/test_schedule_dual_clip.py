"""theory.schedule, theory.dual_clip and predict._schedule against independent routes: a loop, Monte Carlo, and a
relaxation stepped under the schedule."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.predict._schedule import effective_run_length, pilot_factor
from gspo_dynamics.theory.dual_clip import drift_for_share, dual_clip_share
from gspo_dynamics.theory.schedule import LRSchedule


def test_weighted_length_is_the_sum_of_the_factors():
    s = LRSchedule(shape="cosine", warmup=10, total=100, floor=0.1)
    assert s.weighted_length(100) == pytest.approx(sum(float(s.factor(k)) for k in range(100)), rel=1e-12)
    assert s.factor(s.peak_step()) == pytest.approx(1.0)
    assert LRSchedule().weighted_length(37) == 37


def test_a_decaying_schedule_needs_the_run_length():
    with pytest.raises(ConfigError, match="needs the run's length"):
        LRSchedule(shape="linear")


@pytest.mark.parametrize("delta, T, cap", [(0.3, 4, 3.0), (0.8, 8, 2.0), (0.05, 16, 1.5)])
def test_dual_clip_share_against_monte_carlo(delta, T, cap):
    """Equation (1): draw log r_j ~ N(0, (j delta)^2) and a sign; count A < 0 with r > c; mean over the window."""
    rng = np.random.default_rng(0)
    n = 400_000
    shares = []
    for j in range(T):
        log_r = rng.normal(0.0, j * delta, n) if j else np.zeros(n)
        negative = rng.random(n) < 0.5
        shares.append(np.mean(negative & (log_r > math.log(cap))))
    assert dual_clip_share(delta, T, cap) == pytest.approx(np.mean(shares), abs=4e-4)


def test_drift_for_share_inverts_the_share():
    delta = drift_for_share(0.01, 8, 3.0)
    assert dual_clip_share(delta, 8, 3.0) == pytest.approx(0.01, rel=1e-9)
    assert drift_for_share(0.01, 1, 3.0) is None and drift_for_share(0.5, 8, 3.0) is None


def test_the_effective_run_length_matches_a_relaxation_stepped_under_the_schedule():
    """predict._schedule (2): a first-order relaxation r_{k+1} = r_k + x m(k) (1 - r_k) run N steps under the schedule
    ends where the same relaxation at the pilot's mean factor ends after n_eff steps (to first order in x)."""
    schedule = LRSchedule(shape="linear", warmup=20, total=400)
    x, pilot_steps = 0.004, np.arange(1, 81)
    m_p = pilot_factor(schedule, pilot_steps)
    r = 0.0
    for k in range(400):
        r += x * float(schedule.factor(k)) * (1 - r)
    n_eff = effective_run_length(schedule, 80, 400, m_p)
    r_pilot = 1 - math.exp(-x * schedule.weighted_length(80))  # the pilot's own end, then n_eff - 80 steps at m_p
    r_clock = 1 - (1 - r_pilot) * math.exp(-x * m_p * (n_eff - 80))
    assert r_clock == pytest.approx(r, abs=2e-3)
    assert n_eff < 400  # the decay makes the rest of the run count for less
