"""paper_repro/moe_routing.py's `ProbedMoE`: measuring leaves the training run unchanged, its
own-routing variance is the loop's metric, and its pieces add up as theory/routing.py's (1) says:
Var(X) - Var(X_r) = Var(Delta) + 2 Cov(X_r, Delta), with Var(Delta) the plug-in flip mixture."""

import numpy as np
import pytest
import torch

from gspo_dynamics.sim.sequence import MoETransformerConfig, PatternMatch, TinyMoETransformer, run_sequence_rl

STEPS, T = 12, 4
METRIC_RTOL = 1e-5  # cached sampler vs teacher-forced pi_old: float32 rounding (~5e-7 measured)
IDENTITY_RTOL = 1e-8  # (1) holds exactly for population moments; float64 sums of ~256 terms


@pytest.fixture(scope="module")
def script(load_script):
    return load_script("paper_repro", "moe_routing")


def _run(policy_cls, replay, **kwargs):
    torch.manual_seed(0)
    task = PatternMatch(length=4, partial_credit=True)
    config = MoETransformerConfig(vocab_size=task.vocab_size, max_len=task.prompt_len + task.response_len)
    policy = policy_cls(config, torch.Generator().manual_seed(3), **kwargs)
    run = run_sequence_rl(task, policy, objective="grpo", routing_replay=replay, refresh_interval=T, lr=3e-2,
                          steps=STEPS, seed=5)
    return run, policy


@pytest.mark.parametrize("replay", ["none", "experts"])
def test_probing_leaves_the_run_unchanged_and_matches_its_metric(script, replay):
    plain, _ = _run(TinyMoETransformer, replay)
    probed, policy = _run(script.ProbedMoE, replay, eos=None, limit=STEPS)
    for name, values in plain.metrics.items():
        assert np.array_equal(values, probed.metrics[name], equal_nan=True), name
    records = policy._probe["records"]
    assert len(records) == STEPS
    own = np.array([r[f"var_{replay}"] for r in records])
    stale = plain.window_position > 0
    assert np.allclose(own[stale], plain["ratios/token_log_var"][stale], rtol=METRIC_RTOL, atol=0)
    fresh = [r for r, j in zip(records, plain.window_position) if j == 0]
    assert all(r["q"] == 0 and r["var_none"] < 1e-10 for r in fresh)  # the sampler itself: no flips, ratio 1
    assert any(r["q"] > 0 for r in records)  # the router moved enough to flip some tokens


def test_probe_pieces_satisfy_the_variance_identity(script):
    _, policy = _run(script.ProbedMoE, "none", eos=None, limit=STEPS)
    for r in policy._probe["records"]:
        for replay in script.REPLAYS:
            exact = r["var_none"] - r[f"var_{replay}"]
            pieces = r[f"dv_model_{replay}"] + 2 * r[f"cov_{replay}"]
            assert np.isclose(exact, pieces, rtol=IDENTITY_RTOL, atol=1e-15)


def test_probe_stops_after_its_limit(script):
    _, policy = _run(script.ProbedMoE, "full", eos=None, limit=5)
    assert len(policy._probe["records"]) == 5
