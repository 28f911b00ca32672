"""Policies and sampling: the sampler's log-probs are the teacher-forced ones (cached decoding
equals the full pass), causality, shapes at L = 1 and 256, EOS padding, the sampled law."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gspo_dynamics import ConfigError
from gspo_dynamics.sim.sequence import (
    Addition,
    MoETransformerConfig,
    PatternMatch,
    TabularPolicy,
    TinyMoETransformer,
    TransformerConfig,
    log_probs,
    sample,
)

from _seq_cases import POLICIES, TOL, V, Z, make_policy


def _teacher_forced_through_cache(policy, prompts, tokens):
    """(B, L, V) logits from begin/extend fed the given tokens instead of samples."""
    logits, state = policy.begin(prompts, tokens.shape[1])
    out = [logits]
    for t in range(tokens.shape[1] - 1):
        out.append(policy.extend(state, tokens[:, t]))
    return torch.stack(out, dim=1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("kind", POLICIES)
@pytest.mark.parametrize("task", [PatternMatch(length=12), Addition(n_digits=5)], ids=["fixed", "eos"])
@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_sampled_log_probs_equal_teacher_forced(kind, dtype, task, temperature):
    g = torch.Generator().manual_seed(1)
    policy = make_policy(kind, task.response_len, dtype)
    prompts = task.prompts(16, generator=g)
    tokens, logp, mask, routing = sample(policy, prompts, task.response_len, g, temperature, eos=task.eos)
    assert logp.dtype == dtype and torch.all(logp <= 0)
    # the expert choices are replayed exactly, and recomputed without replay: both agree
    for replay in (None, routing):
        again = log_probs(policy, prompts, tokens, mask, replay, temperature)
        assert torch.allclose(again, logp, atol=TOL[dtype], rtol=0), (again - logp).abs().max()


@pytest.mark.parametrize("kind", POLICIES)
def test_cached_decoding_equals_the_full_pass(kind):
    g = torch.Generator().manual_seed(2)
    task = Addition(n_digits=4)
    policy = make_policy(kind, task.response_len)
    prompts = task.prompts(8, generator=g)
    tokens = torch.randint(0, V, (8, task.response_len), generator=g)
    with torch.no_grad():
        cached = _teacher_forced_through_cache(policy, prompts, tokens)
        full, _ = policy(prompts, tokens)
    assert torch.allclose(cached, full, atol=TOL[torch.float32], rtol=0)


@settings(max_examples=15, deadline=None)
@given(position=st.integers(0, 9), seed=st.integers(0, 2**16), kind=st.sampled_from(POLICIES))
def test_changing_a_token_leaves_earlier_log_probs_unchanged(position, seed, kind):
    """Causality: log pi(y_t | x, y_<t) for t < j does not see y_j; t > j does (transformers)."""
    g = torch.Generator().manual_seed(seed)
    task = Addition(n_digits=8)  # L = 10
    policy = make_policy(kind, task.response_len, torch.float64, seed=seed)
    prompts = task.prompts(4, generator=g)
    tokens = torch.randint(0, V, (4, task.response_len), generator=g)
    changed = tokens.clone()
    changed[:, position] = (tokens[:, position] + 1 + torch.randint(0, V - 1, (4,), generator=g)) % V
    with torch.no_grad():
        before = log_probs(policy, prompts, tokens)
        after = log_probs(policy, prompts, changed)
    assert torch.equal(before[:, :position], after[:, :position])
    assert (before[:, position] != after[:, position]).all()  # the scored token itself changed
    if kind != "tabular" and position + 1 < task.response_len:
        assert (before[:, position + 1 :] != after[:, position + 1 :]).any()


@pytest.mark.parametrize("L", [1, 256])
@pytest.mark.parametrize("kind", POLICIES)
def test_shapes_at_the_extreme_lengths(kind, L):
    task = PatternMatch(length=L, min_matches=1)
    policy = make_policy(kind, L, max_len=L + 1)
    g = torch.Generator().manual_seed(3)
    prompts = task.prompts(2)
    tokens, logp, mask, routing = sample(policy, prompts, L, g)
    assert tokens.shape == logp.shape == mask.shape == (2, L) and mask.all()
    logits, used = policy(prompts, tokens)
    assert logits.shape == (2, L, V)
    assert torch.allclose(log_probs(policy, prompts, tokens, mask), logp, atol=TOL[torch.float32], rtol=0)
    assert task.reward(prompts, tokens, mask).shape == (2,)
    if kind == "moe":  # (n_layers, B, P + L - 1, k)
        assert routing.experts.shape == used.experts.shape == routing.gates.shape == (2, 2, L, 2)
    else:
        assert routing is None and used is None


@pytest.mark.parametrize("kind", POLICIES)
def test_eos_ends_a_response_and_pads_after_it(kind):
    task = Addition(n_digits=6)
    policy = make_policy(kind, task.response_len)
    with torch.no_grad():  # make EOS likely, so most responses stop early
        if kind == "tabular":
            policy.logits[:, task.eos] += 2.5
        else:
            policy.ln_f.bias.fill_(1.0)  # a constant feature, which the EOS logit reads
            policy.head.weight[task.eos] = 0.15
    g = torch.Generator().manual_seed(4)
    prompts = task.prompts(64, generator=g)
    tokens, logp, mask, _ = sample(policy, prompts, task.response_len, g, eos=task.eos)
    lengths = mask.sum(1)
    assert torch.equal(mask, torch.arange(task.response_len) < lengths[:, None])  # a prefix
    assert (lengths < task.response_len).any()
    ended = mask & (tokens == task.eos)
    assert torch.equal(ended.sum(1), (tokens[torch.arange(64), lengths - 1] == task.eos).long())  # EOS only last
    assert torch.all(tokens[~mask] == task.eos) and torch.all(logp[~mask] == 0) and torch.all(logp[mask] < 0)


def test_sampled_frequencies_follow_the_tempered_softmax():
    g = torch.Generator().manual_seed(5)
    policy = TabularPolicy(2, V, logits=torch.randn(2, V, generator=g))
    n = 50_000
    for temperature in (1.0, 0.5, 2.0):
        tokens, logp, _, _ = sample(policy, torch.zeros(n, 1, dtype=torch.long), 2, g, temperature)
        probs = torch.softmax(policy.logits.detach() / temperature, dim=-1)  # (L, V)
        freq = torch.nn.functional.one_hot(tokens, V).double().mean(0)  # (L, V)
        se = (probs * (1 - probs) / n).sqrt()
        assert torch.all((freq - probs).abs() < Z * se + 1e-4)
        assert torch.allclose(logp, probs.log()[torch.arange(2), tokens], atol=1e-6)


@pytest.mark.parametrize("kind", POLICIES)
def test_sampling_is_reproducible_from_the_generator(kind):
    policy = make_policy(kind, 6)
    prompts = PatternMatch(length=6).prompts(4)
    a = sample(policy, prompts, 6, torch.Generator().manual_seed(7))
    b = sample(policy, prompts, 6, torch.Generator().manual_seed(7))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


def test_log_probs_are_differentiable():
    policy = make_policy("transformer", 5)
    prompts = Addition(n_digits=3).prompts(3)
    tokens = torch.randint(0, V, (3, 5))
    log_probs(policy, prompts, tokens).sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in policy.parameters())


# ---- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, word",
    [
        (lambda p, x: sample(p, x, 4, temperature=0.0), "temperature"),
        (lambda p, x: sample(p, x, 4, temperature=math.inf), "temperature"),
        (lambda p, x: sample(p, x, 0), "max_len"),
        (lambda p, x: sample(p, x, 4, eos=V), "eos"),
        (lambda p, x: sample(p, x, 40), "max_len"),
        (lambda p, x: TransformerConfig(d_model=10, n_heads=3), "n_heads"),
        (lambda p, x: TransformerConfig(n_layers=0), "n_layers"),
        (lambda p, x: MoETransformerConfig(n_experts=2, top_k=3), "top_k"),
        (lambda p, x: TinyMoETransformer(TransformerConfig()), "MoETransformerConfig"),
        (lambda p, x: TabularPolicy(0, V), "length"),
    ],
)
def test_bad_input_raises_config_error(call, word):
    policy = make_policy("transformer", 4)
    with pytest.raises(ConfigError, match=word):
        call(policy, torch.zeros(2, 1, dtype=torch.long))


def test_misuse_raises():
    policy = make_policy("transformer", 4)
    prompts, tokens = torch.zeros(2, 1, dtype=torch.long), torch.zeros(2, 4, dtype=torch.long)
    _, _, _, routing = sample(make_policy("moe", 4), prompts, 4)
    with pytest.raises(ValueError, match="no router"):
        policy(prompts, tokens, routing)
    with pytest.raises(ValueError, match="prompts"):
        policy(prompts.float(), tokens)
    with pytest.raises(ValueError, match="tokens"):
        policy(prompts, tokens[:1])
    with pytest.raises(ConfigError, match="max_len"):
        sample(TabularPolicy(3, V), prompts, 4)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("kind", POLICIES)
def test_sampling_on_cuda_matches_teacher_forcing(kind):
    task = Addition(n_digits=5)
    policy = make_policy(kind, task.response_len).cuda()
    g = torch.Generator(device="cuda").manual_seed(0)
    prompts = task.prompts(64, generator=g)
    tokens, logp, mask, routing = sample(policy, prompts, task.response_len, g, eos=task.eos)
    assert tokens.is_cuda and logp.is_cuda and mask.is_cuda
    again = log_probs(policy, prompts, tokens, mask, routing)
    assert torch.allclose(again, logp, atol=1e-5, rtol=0)  # TF32 and other kernels: looser
    assert task.reward(prompts, tokens, mask).is_cuda
