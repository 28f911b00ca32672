"""The tokenizer, and the text tasks against the sequence testbed's tensor rewards."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.sim.sequence import TOKENIZER as SIM_TOKENIZER
from gspo_dynamics.train.tasks import TASKS, make_task
from gspo_dynamics.train.tokenizer import Tokenizer

TOK = Tokenizer()
TEXT = st.text(alphabet="0123456789+=$", max_size=12)


@given(st.lists(TEXT, min_size=1, max_size=6), st.booleans())
@settings(max_examples=60, deadline=None)
def test_batch_encode_decode_roundtrip(texts, left_pad):
    ids, mask = TOK.batch_encode(texts, left_pad=left_pad)
    P = max(len(t) for t in texts) + 1
    assert ids.shape == mask.shape == (len(texts), P) and ids.dtype == torch.long
    assert TOK.decode(ids) == texts
    for row, text in enumerate(texts):
        real = mask[row].bool()
        assert int(real.sum()) == len(text) + 1
        assert ids[row, real][0] == TOK.bos_id and (ids[row, ~real] == TOK.pad_id).all()
        # the real tokens are contiguous, on the right when left-padded
        positions = real.nonzero()[:, 0]
        assert positions[0] == (P - len(text) - 1 if left_pad else 0)
        assert torch.equal(positions, torch.arange(int(positions[0]), int(positions[0]) + len(text) + 1))


def test_ids_are_the_testbed_ids():
    assert TOK.symbols == SIM_TOKENIZER.symbols
    assert TOK.encode("0123456789") == list(range(10))
    assert (TOK.pad_id, TOK.bos_id, TOK.eos_id) == (SIM_TOKENIZER.pad, SIM_TOKENIZER.bos, SIM_TOKENIZER.eos)
    assert TOK.encode("12", add_bos=True) == [TOK.bos_id, 1, 2]


def test_decode_with_a_mask_keeps_exactly_the_masked_positions():
    ids = torch.tensor([[4, TOK.pad_id, TOK.bos_id, TOK.eos_id, TOK.pad_id]])
    assert TOK.decode(ids) == ["4$"]
    assert TOK.decode(ids, torch.tensor([[1, 1, 1, 1, 0]])) == ["4_^$"]  # sampled specials stay visible


def test_bad_text_and_batches_are_config_errors():
    with pytest.raises(ConfigError, match="'x'"):
        TOK.encode("1x2")
    with pytest.raises(ConfigError):
        TOK.batch_encode([])
    with pytest.raises(ConfigError):
        TOK.batch_encode("12")
    with pytest.raises(ConfigError):
        TOK.batch_encode([""], add_bos=False)


def test_an_extended_alphabet_is_accepted_and_a_duplicate_refused():
    tok = Tokenizer(symbols="0123456789+=^$_ab")
    assert tok.vocab_size == 17 and tok.decode(tok.encode("ab1")) == "ab1"
    with pytest.raises(ConfigError):
        Tokenizer(symbols="0123456789+=^$_1")


KNOBS = {"pattern": dict(length=4, min_matches=3), "count": dict(length=5, min_count=2, parity="odd"), "addition": dict(n_digits=2)}


@pytest.mark.parametrize("name", TASKS)
def test_reference_completions_earn_reward_one_and_truncation_earns_zero(name):
    task = make_task(name, TOK, **KNOBS[name])
    prompts = task.sample_prompts(16, torch.Generator().manual_seed(0))
    refs = [task.reference_completion(p) for p in prompts]
    assert all(r.endswith("$") and len(r) <= task.max_new_tokens for r in refs)
    assert torch.equal(task.reward(prompts, refs), torch.ones(16))
    assert torch.equal(task.reward(prompts, [r[:-1] for r in refs]), torch.zeros(16))  # no EOS
    assert torch.equal(task.reward(prompts, [r + "123" for r in refs]), torch.ones(16))  # after EOS: ignored


@pytest.mark.parametrize("name", TASKS)
def test_text_rewards_equal_the_testbed_tensor_rewards(name):
    """Random completions scored through text equal the testbed's reward of the same tokens
    (EOS-terminated ones; the testbed's fixed-length tasks have no EOS, so theirs is dropped)."""
    task = make_task(name, TOK, **KNOBS[name])
    sim = task.sim
    g = torch.Generator().manual_seed(1)
    prompts = task.sample_prompts(200, g)
    prompt_ids = SIM_TOKENIZER.encode_batch(["^" + p for p in prompts])
    L = sim.response_len
    digits = torch.randint(0, 10, (200, L), generator=g)
    # bias toward the reference answers' digits so that both rewards occur
    refs = [task.reference_completion(p).rstrip("$").ljust(L, "_")[:L] for p in prompts]
    target = SIM_TOKENIZER.encode_batch(refs)
    keep = torch.rand(200, L, generator=g) < 0.85
    digits = torch.where(keep & (target < 10), target, digits)
    lengths = torch.randint(1, L + 1, (200,), generator=g)
    mask = torch.arange(L) < lengths[:, None]
    if sim.eos is not None:  # the last real token is EOS
        digits = torch.where(torch.arange(L) == lengths[:, None] - 1, SIM_TOKENIZER.eos, digits)
        completions = [SIM_TOKENIZER.decode(row[:n]) for row, n in zip(digits, lengths)]
    else:
        completions = [SIM_TOKENIZER.decode(row[:n]) + "$" for row, n in zip(digits, lengths)]
    expected = sim.reward(prompt_ids, digits, mask).float()
    got = task.reward(prompts, completions)
    assert torch.equal(got, expected)
    assert 0 < expected.sum() < 200


def test_overlong_answers_earn_zero():
    task = make_task("pattern", TOK, length=3)
    assert task.max_new_tokens == 4
    assert task.reward(["", ""], ["012$", "0120$"]).tolist() == [1.0, 0.0]


def test_sampling_prompts_follows_the_generator():
    task = make_task("addition", TOK, n_digits=3)
    a = task.sample_prompts(5, torch.Generator().manual_seed(2))
    b = task.sample_prompts(5, torch.Generator().manual_seed(2))
    assert a == b and all(len(p) == 8 and p[3] == "+" and p[-1] == "=" for p in a)
    assert task.max_new_tokens == 5  # up to 4 digits of the sum, then EOS


@pytest.mark.parametrize(
    "call",
    [
        lambda: make_task("sorting", TOK),
        lambda: make_task("pattern", TOK, lenght=3),
        lambda: make_task("count", TOK, min_count=9, length=4),
        lambda: make_task("addition", TOK).reward(["1+2="], ["3$"]),  # a prompt of the wrong shape
        lambda: make_task("addition", TOK).reward(["12+34="], ["46$", "1$"]),
        lambda: make_task("pattern", TOK).sample_prompts(0),
        lambda: make_task("pattern", Tokenizer(symbols="0123456789^$_")),
    ],
)
def test_bad_task_use_is_a_config_error(call):
    with pytest.raises(ConfigError):
        call()
