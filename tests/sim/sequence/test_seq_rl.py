"""The sequence RL loop: determinism, on-policy ratios of exactly 1, stale minibatches that GSPO's
tiny clip range catches, a slow reference of the refresh schedule, routing churn, and learning."""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest
import torch

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.objectives import LOSSES, get_loss, group_advantages
from gspo_dynamics.sim.sequence import (
    ROUTING_REPLAYS,
    Addition,
    PatternMatch,
    SequenceRLConfig,
    TabularPolicy,
    log_probs,
    run_sequence_rl,
    sample,
)
from gspo_dynamics.theory.hyperparams import SGD
from gspo_dynamics.theory.ratios import GRPO_CLIP, GSPO_CLIP

from _seq_cases import TOL, V, make_policy

TASK = PatternMatch(length=4, min_matches=2)  # a uniform policy succeeds with probability ~0.024
EASY = PatternMatch(length=4, min_matches=1)  # ~0.24: few groups of G = 4 are flat, most steps update
SMALL = {"group_size": 4, "prompts_per_step": 2}  # 8 responses per minibatch: fast
LOSS_METRICS = ("losses/clip_frac", "losses/clip_frac_low", "losses/clip_frac_high")
# measured at seed 0: the exact expected reward goes from 0.024 to > 0.9 in 40 steps; 0.5 leaves room
LEARNED = 0.5


def _run(kind="tabular", task=TASK, seed=0, uniform=False, **hyperparams):
    """A run from a random policy of `kind` (or the uniform tabular policy)."""
    if uniform:
        policy = TabularPolicy(task.response_len, V)
    else:
        policy = make_policy(kind, task.response_len, max_len=task.prompt_len + task.response_len)
    return run_sequence_rl(task, policy, seed=seed, **{**SMALL, **hyperparams}), policy


@pytest.mark.parametrize("kind", ["tabular", "moe"])
def test_a_run_is_a_function_of_policy_config_and_seed(kind):
    (a, pa), (b, pb) = (_run(kind, objective="grpo", refresh_interval=2, steps=6) for _ in range(2))
    assert a.metrics.keys() == b.metrics.keys()
    for name in a.metrics:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    assert all(torch.equal(p, q) for p, q in zip(pa.parameters(), pb.parameters()))
    c, _ = _run(kind, objective="grpo", refresh_interval=2, steps=6, seed=1)
    assert not np.array_equal(a["ratios/token_log_var"], c["ratios/token_log_var"])


@pytest.mark.parametrize("objective", sorted(LOSSES))
def test_on_policy_ratios_are_exactly_one_for_the_tabular_policy(objective):
    run, _ = _run(objective=objective, refresh_interval=1, steps=5, lr=0.1)
    assert (run.window_position == 0).all()
    assert (run["losses/ratio_mean"] == 1.0).all() and (run["losses/ratio_std"] == 0.0).all()
    assert (run["ratios/token_log_var"] == 0.0).all() and (run["losses/approx_kl"] == 0.0).all()
    for name in LOSS_METRICS:
        assert (run[name] == 0.0).all(), name


@pytest.mark.parametrize("kind", ["transformer", "moe"])
def test_the_first_minibatch_after_a_refresh_is_on_policy_for_transformers(kind):
    """Sampler (KV cache) and update (teacher forcing) agree to float32 rounding: ratio 1 within TOL."""
    run, _ = _run(kind, objective="gspo", refresh_interval=3, steps=6)
    fresh = run.window_position == 0
    assert np.abs(run["losses/ratio_mean"][fresh] - 1.0).max() <= TOL[torch.float32]
    assert (run["losses/clip_frac"][fresh] == 0.0).all()  # 1e-6 is far inside GSPO's 3e-4


def test_stale_minibatches_leave_gspo_tiny_clip_range():
    run, _ = _run(task=EASY, objective="gspo", refresh_interval=4, steps=16, lr=0.1)
    fresh, stale = run.window_position == 0, run.window_position > 0
    assert (run["losses/clip_frac"][fresh] == 0.0).all()
    assert run["losses/clip_frac"][stale].max() > 0.0
    assert (run["ratios/token_log_var"][stale] > 0.0).all()  # the policy moved since the refresh
    for name in LOSS_METRICS:
        assert ((run[name] >= 0.0) & (run[name] <= 1.0)).all(), name
    assert run.config.eps_low == GSPO_CLIP[0] and run.config.eps_high == GSPO_CLIP[1]


@pytest.mark.parametrize("objective", ["pg", "grpo"])
def test_the_schedule_matches_a_slow_reference(objective):
    """One rollout of T N prompts x G responses, minibatch j at step j; pg takes its gradient at
    the sampler (the stale gradient as is), grpo at the current policy. A transformer: for the
    tabular policy pg's gradient does not depend on the policy (group advantages sum to zero)."""
    T, N, G, lr, seed = 2, 4, 4, 0.5, 0
    policy = make_policy("transformer", EASY.length, max_len=EASY.prompt_len + EASY.length)
    sampler, reference = copy.deepcopy(policy), copy.deepcopy(policy)
    run_sequence_rl(EASY, policy, objective=objective, optimizer=SGD(), lr=lr, refresh_interval=T,
                    prompts_per_step=N, group_size=G, steps=T, seed=seed)

    g = torch.Generator().manual_seed(seed)
    prompts = EASY.prompts(T * N, generator=g).repeat_interleave(G, dim=0)  # (T N G, 1)
    tokens, logp_old, mask, _ = sample(reference, prompts, EASY.length, g)
    advantages = group_advantages(EASY.reward(prompts, tokens, mask).view(T * N, G)).view(-1)
    scorer = sampler if objective == "pg" else reference
    for j in range(T):
        rows = slice(j * N * G, (j + 1) * N * G)
        assert advantages[rows].abs().sum() > 0  # both minibatches move the policy
        logp = log_probs(scorer, prompts[rows], tokens[rows], mask[rows])
        loss, _ = get_loss(objective)(logp, logp_old[rows], advantages[rows], mask[rows],
                                      clip_low=GRPO_CLIP[0], clip_high=GRPO_CLIP[1])
        grads = torch.autograd.grad(loss, list(scorer.parameters()), allow_unused=True)
        with torch.no_grad():
            for p, grad in zip(reference.parameters(), grads):
                if grad is not None:
                    p -= lr * grad
    for p, q, p0 in zip(policy.parameters(), reference.parameters(), sampler.parameters()):
        assert torch.allclose(p, q, atol=1e-6, rtol=0)
    assert any(not torch.equal(p, p0) for p, p0 in zip(policy.parameters(), sampler.parameters()))


@pytest.mark.parametrize("objective", ["grpo", "gspo"])
def test_training_raises_the_exact_expected_reward(objective):
    run, _ = _run(objective=objective, refresh_interval=2, steps=40, lr=0.1, group_size=8, prompts_per_step=4,
                  uniform=True)
    assert run.expected_reward.shape == (41,)
    assert run.expected_reward[-1] > run.expected_reward[0] + LEARNED, run.expected_reward[[0, -1]]


def test_expected_reward_only_where_it_has_a_closed_form():
    run, _ = _run("transformer", objective="grpo", steps=2)
    assert run.expected_reward is None
    run, _ = _run("tabular", task=Addition(n_digits=1), objective="grpo", steps=2)
    assert run.expected_reward is None


@pytest.mark.parametrize("replay", ROUTING_REPLAYS)
def test_routing_churn_is_measured_whatever_the_replay(replay):
    run, _ = _run("moe", objective="grpo", refresh_interval=3, steps=9, routing_replay=replay)
    churn, j = run["routing/churn"], run.window_position
    assert (churn[j == 0] == 0.0).all()  # the router is the sampler's
    assert ((churn >= 0.0) & (churn <= 1.0)).all()
    assert churn[j > 0].max() > 0.0  # Adam steps of 0.05 move some top-2 choices


def test_dense_policies_have_no_routing():
    run, _ = _run("transformer", objective="grpo", steps=2)
    assert "routing/churn" not in run.metrics
    with pytest.raises(ConfigError, match="MoE"):
        _run("transformer", objective="grpo", steps=2, routing_replay="full")


def test_kl_penalty_to_the_initial_policy():
    run, _ = _run(objective="grpo", steps=6, kl_coef=0.1, lr=0.1)
    assert run["kl"][0] == 0.0 and (run["kl"] >= 0.0).all() and run["kl"][-1] > 0.0


def test_dynamic_sampling_keeps_only_informative_groups():
    run, _ = _run(objective="dapo", steps=12, dynamic_sampling=True, uniform=True)
    kept = run["groups/kept_frac"]
    assert ((kept >= 0.0) & (kept <= 1.0)).all() and (kept == 0.0).any() and (kept > 0.0).any()
    skipped = kept == 0.0  # nothing left to learn from: no update, no loss metrics
    assert np.isnan(run["losses/loss"][skipped]).all() and np.isfinite(run["losses/loss"][~skipped]).all()
    np.testing.assert_array_equal(kept, 1.0 - run["frac_reward_zero_std"])  # rewards count every group


def test_config_defaults_follow_the_objective_and_survive_replace():
    gspo = SequenceRLConfig(objective="gspo")
    assert (gspo.eps_low, gspo.eps_high, gspo.scale) == (*GSPO_CLIP, "group")
    grpo = dataclasses.replace(gspo, objective="grpo")
    assert (grpo.eps_low, grpo.eps_high) == GRPO_CLIP
    assert SequenceRLConfig(objective="dr_grpo").scale == "none"
    assert SequenceRLConfig(objective="grpo", optimizer="sgd").optimizer == SGD()


@pytest.mark.parametrize("bad, needle", [
    ({"objective": "ppo"}, "unknown loss"),
    ({"objective": "grpo", "group_size": 1}, "group size"),
    ({"objective": "grpo", "lr": 0.0}, "learning rate"),
    ({"objective": "grpo", "clip_low": -0.1}, "clip_low"),
    ({"objective": "grpo", "optimizer": "rmsprop"}, "optimizer"),
    ({"objective": "grpo", "advantage_scale": "rank"}, "advantage scale"),
    ({"objective": "grpo", "routing_replay": "partial"}, "routing replay"),
    ({"objective": "grpo", "kl_coef": -1.0}, "KL"),
    ({"objective": "grpo", "epochs": 2}, "unknown hyperparameter"),
    ({"lr": 0.1}, "objective"),
])
def test_bad_config_is_one_config_error(bad, needle):
    with pytest.raises(ConfigError, match=needle):
        run_sequence_rl(TASK, TabularPolicy(TASK.length, V), steps=1, **bad)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_runs_on_cuda():
    run, policy = _run("moe", objective="gspo", refresh_interval=2, steps=4, device="cuda")
    assert next(policy.parameters()).is_cuda
    assert np.isfinite(run["losses/ratio_mean"]).all() and (run["routing/churn"][run.window_position == 0] == 0).all()
