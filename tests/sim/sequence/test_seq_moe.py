"""Routing replay in the tiny MoE transformer: replaying the sampler's routing reproduces its
log-probs after the router moved; without replay the changed decisions are counted."""

from __future__ import annotations

import pytest
import torch

from gspo_dynamics.sim.sequence import Addition, Routing, log_probs, routing_changes, sample

from _seq_cases import TOL, make_policy

ROUTER_NOISE = 0.3  # std of the router perturbation: enough to flip a share of top-2 choices


def _rollout(dtype):
    g = torch.Generator().manual_seed(11)
    task = Addition(n_digits=6)
    policy = make_policy("moe", task.response_len, dtype, seed=11)
    prompts = task.prompts(32, generator=g)
    tokens, logp, mask, routing = sample(policy, prompts, task.response_len, g, eos=task.eos)
    return policy, prompts, tokens, logp, mask, routing, g


def _move_router(policy, g):
    with torch.no_grad():
        for block in policy.blocks:
            w = block.mlp.router.weight
            w.add_(ROUTER_NOISE * torch.randn(w.shape, generator=g, dtype=w.dtype))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
def test_replay_reproduces_the_sampler_after_the_router_moves(dtype):
    policy, prompts, tokens, logp, mask, routing, g = _rollout(dtype)
    _, before = policy(prompts, tokens)
    assert routing_changes(routing, before, mask).sum() == 0  # same parameters: same choices

    _move_router(policy, g)
    replayed = log_probs(policy, prompts, tokens, mask, routing)
    assert torch.allclose(replayed, logp, atol=TOL[dtype], rtol=0)

    logits, fresh = policy(prompts, tokens)  # no replay: the router decides again
    changes = routing_changes(routing, fresh, mask)
    assert changes.sum() > 0
    per_sequence_bound = policy.config.n_layers * (prompts.shape[1] + mask.sum(1) - 1)
    assert torch.all(changes <= per_sequence_bound)
    drift = (log_probs(policy, prompts, tokens, mask) - logp).abs()
    assert drift.max() > 1e3 * TOL[dtype]


def test_counted_changes_are_the_positions_whose_expert_set_differs():
    experts = torch.tensor([[[[0, 1], [2, 3], [0, 3]]]])  # (n_layers=1, B=1, T=3, k=2)
    moved = torch.tensor([[[[0, 1], [1, 3], [0, 2]]]])
    old, new = Routing(experts, None), Routing(moved, None)
    assert routing_changes(old, new).tolist() == [2]
    # T = P + L - 1 with P = 1, L = 3: input position 2 is fed response token 1, padding here
    assert routing_changes(old, new, mask=torch.tensor([[True, False, False]])).tolist() == [1]


def test_experts_only_replay_keeps_choices_and_trains_the_router():
    """GSPO's routing replay: the recorded experts, mixed by the current router's gates."""
    policy, prompts, tokens, logp, mask, routing, g = _rollout(torch.float64)
    same = log_probs(policy, prompts, tokens, mask, routing.experts_only())
    assert torch.allclose(same, logp, atol=TOL[torch.float64], rtol=0)  # unmoved router: same gates

    _move_router(policy, g)
    logits, used = policy(prompts, tokens, routing.experts_only())
    assert torch.equal(used.experts, routing.experts)
    drift = (log_probs(policy, prompts, tokens, mask, routing.experts_only()) - logp).abs()
    assert drift.max() > 1e3 * TOL[torch.float64]  # the gates moved with the router

    routers = [block.mlp.router.weight for block in policy.blocks]
    log_probs(policy, prompts, tokens, mask, routing.experts_only()).sum().backward()
    assert all(w.grad is not None and w.grad.abs().sum() > 0 for w in routers)
    policy.zero_grad(set_to_none=True)
    log_probs(policy, prompts, tokens, mask, routing).sum().backward()  # full replay: gates fixed
    assert all(w.grad is None or w.grad.abs().sum() == 0 for w in routers)


def test_replay_does_not_freeze_the_experts():
    policy, prompts, tokens, logp, mask, routing, g = _rollout(torch.float64)
    with torch.no_grad():
        policy.blocks[0].mlp.w_down.mul_(1.5)
    moved = log_probs(policy, prompts, tokens, mask, routing)
    assert (moved - logp).abs().max() > 1e-6


def test_routing_of_the_wrong_shape_is_refused():
    policy, prompts, tokens, logp, mask, routing, g = _rollout(torch.float32)
    with pytest.raises(ValueError, match="routing.experts"):
        policy(prompts, tokens[:, :-1], routing)
