"""Sequence tasks: hand-built rewards, the exact oracles against brute force and Monte Carlo,
the difficulty knob, bad input."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gspo_dynamics import ConfigError
from gspo_dynamics.sim.sequence import (
    TOKENIZER,
    Addition,
    CountParity,
    PatternMatch,
    TabularPolicy,
    Tokenizer,
    count_distribution,
    sample,
)

from _seq_cases import V, Z

EXACT = 1e-12  # float64 oracles summing the same terms in another order


def _score(task, prompts: list[str], responses: list[str], mask=None) -> list[float]:
    p, y = TOKENIZER.encode_batch(prompts), TOKENIZER.encode_batch(responses)
    m = torch.ones_like(y, dtype=torch.bool) if mask is None else torch.tensor(mask, dtype=torch.bool)
    return task.reward(p, y, m).tolist()


def _uniform_rate(task, n: int, seed: int) -> tuple[float, float]:
    """Monte Carlo success rate of the uniform policy and its standard error."""
    g = torch.Generator().manual_seed(seed)
    prompts = task.prompts(n, generator=g)
    tokens, _, mask, _ = sample(TabularPolicy(task.response_len, V), prompts, task.response_len, g, eos=task.eos)
    r = task.reward(prompts, tokens, mask)
    rate = r.mean().item()
    return rate, math.sqrt(max(rate * (1 - rate), 1.0 / n) / n)


# ---- hand-built examples ------------------------------------------------------------------------


def test_tokenizer_round_trip_and_ids():
    assert TOKENIZER.encode("^12+3=") == [TOKENIZER.bos, 1, 2, 10, 3, 11]
    assert TOKENIZER.decode(TOKENIZER.encode("907$_")) == "907$_"
    ids = TOKENIZER.encode_batch(["12$_", "3$__"])
    assert TOKENIZER.decode(ids, ids != TOKENIZER.pad) == ["12$", "3$"]
    assert (TOKENIZER.vocab_size, TOKENIZER.eos, TOKENIZER.pad) == (15, 13, 14)


def test_pattern_match_rewards():
    exact = PatternMatch(length=4, target="0123")
    assert _score(exact, ["^"] * 3, ["0123", "0124", "9999"]) == [1.0, 0.0, 0.0]
    three = PatternMatch(length=4, target="0123", min_matches=3)
    assert _score(three, ["^"] * 3, ["0123", "0124", "0155"]) == [1.0, 1.0, 0.0]
    partial = PatternMatch(length=4, target="0123", partial_credit=True)
    assert _score(partial, ["^"] * 2, ["0124", "5555"]) == [0.75, 0.0]
    # a masked position is not a match, whatever token it holds
    assert _score(exact, ["^"], ["0123"], mask=[[1, 1, 1, 0]]) == [0.0]
    assert PatternMatch(length=12).target == (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1)


def test_count_parity_rewards():
    task = CountParity(length=4, token=1, min_count=2, parity="even")
    assert _score(task, ["^"] * 5, ["1100", "1110", "1000", "1111", "0000"]) == [1.0, 0.0, 0.0, 1.0, 0.0]
    odd = CountParity(length=4, token=1, parity="odd")
    assert _score(odd, ["^"] * 3, ["1000", "1100", "1110"]) == [1.0, 0.0, 1.0]
    any_parity = CountParity(length=4, token=7, min_count=1, parity="any")
    assert _score(any_parity, ["^"] * 3, ["7000", "7700", "0000"]) == [1.0, 1.0, 0.0]
    assert _score(task, ["^"], ["1111"], mask=[[1, 1, 1, 0]]) == [0.0]  # three counted: odd


def test_addition_targets_and_rewards():
    task = Addition(n_digits=2)
    prompts = ["^49+30=", "^99+99=", "^00+00=", "^05+05="]
    target, length = task.targets(TOKENIZER.encode_batch(prompts))
    assert TOKENIZER.decode(target) == ["79$_", "198$", "0$__", "10$_"]
    assert length.tolist() == [3, 4, 2, 3]
    ok, stop = [[1, 1, 1, 0]], [[1, 1, 1, 1]]
    assert _score(task, prompts[:1], ["79$$"], ok) == [1.0]
    assert _score(task, prompts[:1], ["79$$"], stop) == [0.0]  # real tokens past the target
    assert _score(task, prompts[:1], ["079$"], stop) == [0.0]  # no leading zeros
    assert _score(task, prompts[:1], ["7999"], stop) == [0.0]  # never stops
    assert _score(task, prompts[1:2], ["198$"], stop) == [1.0]
    assert _score(task, prompts[2:3], ["0$$$"], [[1, 1, 0, 0]]) == [1.0]
    partial = Addition(n_digits=2, partial_credit=True)
    assert _score(partial, prompts[1:2], ["197$"], stop) == [0.75]
    assert _score(partial, prompts[:1], ["7999"], stop) == pytest.approx([2 / 3])
    assert Addition(n_digits=3).prompt_len == 9 and Addition(n_digits=3).response_len == 5


@pytest.mark.parametrize("task", [PatternMatch(length=6, min_matches=2), CountParity(length=6), Addition(n_digits=3)])
def test_rewards_are_binary_and_ignore_padding(task):
    g = torch.Generator().manual_seed(0)
    prompts = task.prompts(256, generator=g)
    tokens = torch.randint(0, V, (256, task.response_len), generator=g)
    mask = torch.arange(task.response_len) < torch.randint(1, task.response_len + 1, (256, 1), generator=g)
    if isinstance(task, Addition):  # random digits are almost never right: plant some answers
        target, _ = task.targets(prompts[:64])
        tokens[:64], mask[:64] = target, target != TOKENIZER.pad
    r = task.reward(prompts, tokens, mask)
    assert r.shape == (256,) and set(r.unique().tolist()) == {0.0, 1.0}
    scrambled = torch.where(mask, tokens, torch.randint(0, V, tokens.shape, generator=g))
    assert torch.equal(task.reward(prompts, scrambled, mask), r)


# ---- exact oracles ------------------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=6))
def test_count_distribution_matches_enumeration(ps):
    p = torch.tensor(ps, dtype=torch.float64)
    brute = torch.zeros(len(ps) + 1, dtype=torch.float64)
    for hits in itertools.product([0, 1], repeat=len(ps)):
        brute[sum(hits)] += math.prod(pi if h else 1 - pi for pi, h in zip(ps, hits))
    assert torch.allclose(count_distribution(p), brute, atol=EXACT, rtol=0)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**16), length=st.integers(1, 4), k=st.integers(1, 4), partial=st.booleans())
def test_pattern_match_expected_reward_matches_enumeration(seed, length, k, partial):
    """E[r] under independent positions, by summing over all responses of a 3-token alphabet."""
    k = min(k, length)
    task = PatternMatch(length=length, min_matches=k, partial_credit=partial)
    g = torch.Generator().manual_seed(seed)
    probs = torch.zeros(length, V, dtype=torch.float64)
    probs[:, :3] = torch.softmax(torch.randn(length, 3, generator=g, dtype=torch.float64), -1)
    responses = torch.tensor(list(itertools.product(range(3), repeat=length)))  # (3^L, L)
    weight = probs[torch.arange(length), responses].prod(-1)
    prompts = task.prompts(responses.shape[0])
    r = task.reward(prompts, responses, torch.ones_like(responses, dtype=torch.bool))
    r = torch.round(r.double() * length) / length  # rewards come in float32: restore the exact k/L
    assert task.expected_reward(probs).item() == pytest.approx((weight * r).sum().item(), abs=EXACT)


def test_uniform_pattern_match_is_the_binomial_tail():
    """Monte Carlo success of the uniform tabular policy = P(Binomial(L, 1/V) >= k) = the oracle."""
    L = 4
    for k in range(1, L + 1):
        task = PatternMatch(length=L, min_matches=k)
        exact = sum(math.comb(L, j) * (1 / V) ** j * (1 - 1 / V) ** (L - j) for j in range(k, L + 1))
        oracle = task.expected_reward(torch.full((L, V), 1.0 / V, dtype=torch.float64)).item()
        assert oracle == pytest.approx(exact, abs=EXACT)
        rate, se = _uniform_rate(task, 20_000, seed=k)
        assert abs(rate - exact) < Z * se, (k, rate, exact)


@pytest.mark.parametrize(
    "tasks",
    [
        [PatternMatch(length=4, min_matches=k) for k in (1, 2, 3)],
        [PatternMatch(length=L, min_matches=1) for L in (8, 4, 1)],
        [CountParity(length=8, min_count=c) for c in (0, 2, 4)],
        [Addition(n_digits=d) for d in (1, 2, 3)],
    ],
    ids=["pattern-k", "pattern-length", "count-parity", "addition"],
)
def test_difficulty_lowers_the_uniform_success_rate(tasks):
    """Harder settings lower both the exact success rate of the uniform policy and a Monte
    Carlo estimate of it, and the two agree."""
    n = 40_000
    g = torch.Generator().manual_seed(1)
    exact, measured = [], []
    for i, task in enumerate(tasks):
        uniform = torch.full((task.response_len, V), 1.0 / V, dtype=torch.float64)
        if isinstance(task, Addition):
            exact.append(task.expected_reward(uniform, task.prompts(n, generator=g)).mean().item())
        else:
            exact.append(task.expected_reward(uniform).item())
        rate, se = _uniform_rate(task, n, seed=10 + i)
        assert abs(rate - exact[-1]) < Z * se + 1e-3 * exact[-1], (task, rate, exact[-1])
        measured.append(rate)
    assert exact == sorted(exact, reverse=True) and len(set(exact)) == len(exact)
    assert measured == sorted(measured, reverse=True)


def test_addition_partial_credit_oracle_matches_monte_carlo():
    task = Addition(n_digits=1, partial_credit=True)
    g = torch.Generator().manual_seed(3)
    prompts = task.prompts(20_000, generator=g)
    policy = TabularPolicy(task.response_len, V, logits=torch.randn(task.response_len, V, generator=g))
    tokens, _, mask, _ = sample(policy, prompts, task.response_len, g, eos=task.eos)
    r = task.reward(prompts, tokens, mask)
    exact = task.expected_reward(policy.probs().detach(), prompts).mean().item()
    assert abs(r.mean().item() - exact) < Z * r.std().item() / math.sqrt(r.numel())


@pytest.mark.parametrize("L", [1, 256])
def test_extreme_lengths(L):
    ones = torch.ones(3, L, dtype=torch.long)  # L tokens "1": any count passes parity "any"
    for task, perfect in (
        (PatternMatch(length=L), torch.tensor([PatternMatch(length=L).target] * 3)),
        (PatternMatch(length=L, min_matches=1), ones * 0),
        (CountParity(length=L, parity="any", min_count=L), ones),
    ):
        prompts = task.prompts(3)
        assert task.reward(prompts, perfect, torch.ones(3, L, dtype=torch.bool)).tolist() == [1.0, 1.0, 1.0]
        uniform = torch.full((L, V), 1.0 / V, dtype=torch.float64)
        assert -EXACT <= task.expected_reward(uniform).item() <= 1.0 + EXACT
    task = Addition(n_digits=254)
    assert task.response_len == 256
    prompts = task.prompts(2, generator=torch.Generator().manual_seed(0))
    target, length = task.targets(prompts)
    assert task.reward(prompts, target, target != TOKENIZER.pad).tolist() == [1.0, 1.0]


# ---- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, word",
    [
        (lambda: PatternMatch(length=0), "length"),
        (lambda: PatternMatch(length=4, min_matches=5), "min_matches"),
        (lambda: PatternMatch(length=4, target="012"), "target"),
        (lambda: PatternMatch(length=2, target="0x"), "vocabulary"),
        (lambda: CountParity(length=4, min_count=-1), "min_count"),
        (lambda: CountParity(length=3, min_count=3, parity="even"), "no count"),
        (lambda: CountParity(length=4, parity="even-ish"), "parity"),
        (lambda: CountParity(length=4, token=15), "token"),
        (lambda: Addition(n_digits=0), "n_digits"),
        (lambda: Addition(n_digits=2.0), "n_digits"),
        (lambda: Addition().prompts(0), "batch"),
        (lambda: Tokenizer(symbols="aab"), "distinct"),
    ],
)
def test_bad_configs_raise_config_error(make, word):
    with pytest.raises(ConfigError, match=word):
        make()


def test_wrong_shapes_raise():
    task = PatternMatch(length=4)
    with pytest.raises(ValueError, match="tokens"):
        task.reward(task.prompts(2), torch.zeros(2, 3, dtype=torch.long), torch.ones(2, 3))
    with pytest.raises(ValueError, match="prompts"):
        task.reward(task.prompts(3), torch.zeros(2, 4, dtype=torch.long), torch.ones(2, 4))
