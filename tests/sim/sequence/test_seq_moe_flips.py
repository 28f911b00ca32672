"""`affected_tokens`: which response tokens a changed routing decision reaches. Checked by its
rule on hand-built routings, and against the policy itself: at the same parameters, the log-prob of
an unaffected token is the same with the router's own choices as with the old choices replayed
(experts only), and an affected one moves."""

from __future__ import annotations

import pytest
import torch

from gspo_dynamics.sim.sequence import Addition, Routing, log_probs, sample
from gspo_dynamics.sim.sequence._moe import affected_tokens

from _seq_cases import make_policy

# std of the router perturbation: small, as one optimizer step; with 15 prompt positions a larger one
# flips some first-layer prompt decision of every sequence and leaves no token unaffected (~74% affected here)
ROUTER_NOISE = 0.01
SAME = 1e-12  # float64: an unaffected token runs the same arithmetic on the same numbers (0 measured)
MOVED = 1e-9  # an affected token's jump is many orders above rounding


def _routing(changes, n_layers=2, T=5):
    """Experts (n_layers, 1, T, 2) all {0, 1}, with {0, 2} at the (layer, position) pairs in `changes`."""
    experts = torch.tensor([0, 1]).repeat(n_layers, 1, T, 1)
    moved = experts.clone()
    for layer, s in changes:
        moved[layer, 0, s] = torch.tensor([0, 2])
    return Routing(experts, None), Routing(moved, None)


@pytest.mark.parametrize("changes, expected", [
    ([], [False, False, False]),
    ([(1, 2)], [True, False, False]),  # last layer at input position 2 = P - 1 + t, t = 0: that token only
    ([(1, 3)], [False, True, False]),
    ([(0, 3)], [False, True, True]),  # an earlier layer reaches every later position through attention
    ([(0, 0)], [True, True, True]),  # a prompt position
    ([(1, 0)], [False, False, False]),  # the last layer at a prompt position predicts no response token
])
def test_the_rule_on_hand_built_routings(changes, expected):
    old, new = _routing(changes)  # T = P + L - 1 = 5 with P = 3, L = 3
    assert affected_tokens(old, new, prompt_len=3)[0].tolist() == expected
    mask = torch.tensor([[True, True, False]])
    assert affected_tokens(old, new, prompt_len=3, mask=mask)[0].tolist() == [e and m for e, m in zip(expected, [1, 1, 0])]


def test_unaffected_tokens_keep_their_log_prob_and_affected_ones_move():
    g = torch.Generator().manual_seed(11)
    task = Addition(n_digits=6)
    policy = make_policy("moe", task.response_len, torch.float64, seed=11)
    prompts = task.prompts(64, generator=g)
    tokens, logp, mask, routing = sample(policy, prompts, task.response_len, g, eos=task.eos)
    with torch.no_grad():
        for block in policy.blocks:
            w = block.mlp.router.weight
            w.add_(ROUTER_NOISE * torch.randn(w.shape, generator=g, dtype=w.dtype))
    with torch.no_grad():
        fresh_logp = log_probs(policy, prompts, tokens, mask)
        fresh = policy(prompts, tokens)[1]
        replayed = log_probs(policy, prompts, tokens, mask, routing.experts_only())
    affected = affected_tokens(routing, fresh, prompts.shape[1], mask)
    jump = (fresh_logp - replayed).abs()
    unaffected = mask & ~affected
    assert affected.any() and unaffected.any()  # the perturbation leaves both kinds
    assert jump[unaffected].max() <= SAME
    assert (jump[affected] > MOVED).all()  # a changed decision generically moves the token
    assert not affected[~mask].any()


def test_routings_of_different_shapes_are_refused():
    old, new = _routing([], T=5)
    with pytest.raises(ValueError, match="differ in shape"):
        affected_tokens(old, Routing(new.experts[:, :, :4], None), prompt_len=3)
    with pytest.raises(ValueError, match="prompt_len"):
        affected_tokens(old, new, prompt_len=6)
    with pytest.raises(ValueError, match="mask"):
        affected_tokens(old, new, prompt_len=3, mask=torch.ones(1, 2, dtype=torch.bool))
