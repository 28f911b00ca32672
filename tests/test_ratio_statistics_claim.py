"""The pieces of paper_repro/ratio_statistics.py that its claims rest on, at small sizes:
the per-step drift predicted from the hyperparameters matches the first SGD step's logit change,
and one step after a refresh the measured ratio statistics match the theory."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).parents[1] / "paper_repro"))
import ratio_statistics as rs  # noqa: E402

from gspo_dynamics.experiments import (  # noqa: E402
    first_step_drift,
    lognormal_ratio_prediction,
    predicted_drifts,
    signed_advantage,
    tabular_ratio_run,
    walk_ratio_prediction,
)
from gspo_dynamics.sim.sequence import PatternMatch, TabularPolicy  # noqa: E402

DRIFT_TOL = 0.10  # relative; Monte Carlo s.e. of the measured d and n with 256 minibatches is ~2-5%


@pytest.fixture(autouse=True)
def _float64_one_thread():
    dtype, threads = torch.get_default_dtype(), torch.get_num_threads()
    torch.set_default_dtype(torch.float64)
    torch.set_num_threads(1)
    yield
    torch.set_default_dtype(dtype)
    torch.set_num_threads(threads)


def setting(L: int):
    logits = rs.LOGIT_SCALE * torch.randn(L, 15, generator=torch.Generator().manual_seed(L))
    task = PatternMatch(length=L, partial_credit=True)
    policy_s = TabularPolicy(L, 15, logits)
    policy_s.logits.requires_grad_(False)
    return task, policy_s


@pytest.mark.parametrize("L", [4, pytest.param(64, marks=pytest.mark.slow)])  # the same check, 64 tokens: ~5 s of CPU
def test_predicted_drift_matches_the_first_step(L):
    task, policy_s = setting(L)
    probs = policy_s.probs().numpy()
    lr = 1.0 * L
    d, n, _ = predicted_drifts(probs, np.array(task.target), lr, np.random.default_rng(0))
    d_meas, n_meas = first_step_drift(policy_s, task, lr, 256, torch.Generator().manual_seed(1))
    assert math.sqrt(np.mean(n**2)) == pytest.approx(n_meas, rel=DRIFT_TOL)
    assert math.sqrt(np.mean(d**2)) == pytest.approx(d_meas, rel=DRIFT_TOL)


def test_one_step_ratio_variance_and_the_one_over_l_law():
    L, seeds = 16, 48  # seed s.e. of the variance ~3%
    task, policy_s = setting(L)
    d, n, _ = predicted_drifts(policy_s.probs().numpy(), np.array(task.target), 10.0, np.random.default_rng(0))
    pred = lognormal_ratio_prediction(math.sqrt(np.mean(d**2)), math.sqrt(np.mean(n**2)), (1,), L)
    runs = [tabular_ratio_run(policy_s, task, 10.0, rs.GRPO_CLIP, (1,), 4096, torch.Generator().manual_seed(s))[1]
            for s in range(seeds)]
    tok_var = np.mean([r["tok_var"] for r in runs])
    seq_var = np.mean([r["seq_var"] for r in runs])
    assert tok_var == pytest.approx(pred["tok_var"][0], rel=rs.VAR_TOL)
    assert L * seq_var / tok_var == pytest.approx(1.0, rel=rs.SCALING_TOL)
    for k in rs.TAILS + rs.LOGGED:
        assert all(0.0 <= r[k] <= 1.0 for r in runs)


def test_clip_aware_walk_matches_the_clipped_update_where_the_lognormal_does_not():
    """Six GRPO steps at the script's lr (predicted sigma(8) = eps_low): the ratios reach the clip
    range, the measured spread falls well below the memoryless lognormal and matches the walk."""
    L, seeds, j = 16, 12, 6  # seed s.e. of the variance ~3%
    task, policy_s = setting(L)
    probs, target = policy_s.probs().numpy(), np.array(task.target)
    rng = np.random.default_rng(0)
    d, n, _ = predicted_drifts(probs, target, 1.0, rng)
    d_unit, n_unit = math.sqrt(np.mean(d**2)), math.sqrt(np.mean(n**2))
    lr = rs.SIGMA_REF / math.sqrt(float(rs.log_ratio_variance(d_unit, rs.J_REF, n_unit)))
    walk, edge = walk_ratio_prediction(probs, signed_advantage(probs, target, rng), lr, rs.GRPO_CLIP, (j,))
    lognormal = lognormal_ratio_prediction(lr * d_unit, lr * n_unit, (j,), L)
    runs = [tabular_ratio_run(policy_s, task, lr, rs.GRPO_CLIP, (j,), 4096, torch.Generator().manual_seed(s))[j]
            for s in range(seeds)]
    tok_var = np.mean([r["tok_var"] for r in runs])
    assert edge < 1e-6
    assert tok_var == pytest.approx(walk["tok_var"][0], rel=rs.VAR_TOL)
    assert tok_var < (1 - rs.VAR_TOL) * lognormal["tok_var"][0]
    for k in rs.TAILS:
        assert np.mean([r[k] for r in runs]) == pytest.approx(walk[k][0], abs=rs.CLIP_TOL), k
