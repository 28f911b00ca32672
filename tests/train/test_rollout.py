"""KV-cache rollouts: cached = uncached, sampler log-probs = teacher forcing, EOS, top-p, errors."""

import math

import pytest
import torch

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.train.rollout import completion_log_probs, generate, sampler_distribution
from gspo_dynamics.train.tokenizer import Tokenizer
from _train_helpers import sharp_model

TOK = Tokenizer()
LOGP_TOL = 1e-4  # float32 log-probs: cached vs full pass differ only in summation order (~1e-6 seen)


def model_of(seed=0, scale=10.0, **overrides):
    return sharp_model(TOK.vocab_size, seed, scale, **overrides)


def prompts():
    return TOK.batch_encode(["12+34=", "5+6=", "", "7", "99+99="])


VARIANTS = [dict(), dict(positional="learned"), dict(n_experts=4, top_k=2), dict(n_experts=3, top_k=1, positional="learned")]


def greedy_without_cache(model, ids, mask, n, eos):
    """Reference: re-run the whole sequence every step, take the argmax."""
    seq, att = ids.clone(), mask.clone()
    alive = torch.ones(ids.shape[0], dtype=torch.bool, device=ids.device)
    for _ in range(n):
        with torch.no_grad():
            logits, _ = model(seq, attention_mask=att)
        token = torch.where(alive, logits[:, -1].argmax(-1), TOK.pad_id)
        seq = torch.cat([seq, token[:, None]], 1)
        att = torch.cat([att, alive.long()[:, None]], 1)
        alive &= token != eos
    return seq, att


@pytest.mark.parametrize("overrides", VARIANTS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kv_cache_greedy_equals_uncached_greedy_exactly(overrides, seed):
    model = model_of(seed, **overrides)
    ids, mask = prompts()
    ro = generate(model, ids, mask, 12, temperature=0.0, eos_id=TOK.eos_id, pad_id=TOK.pad_id)
    seq, att = greedy_without_cache(model, ids, mask, 12, TOK.eos_id)
    assert torch.equal(ro.sequences, seq)
    assert torch.equal(ro.attention_mask, att)
    assert (ro.sampler_logprobs == 0).all()  # greedy: a point mass


@pytest.mark.parametrize("overrides", VARIANTS)
def test_sampler_logprobs_equal_teacher_forced_logprobs(overrides):
    """tau = 1, p = 1: the sampler's q is the model's pi, so log q(y) = log pi(y) up to float32
    summation order; for MoE with the router recomputing (no replay) and with replay."""
    model = model_of(**overrides)
    ids, mask = prompts()
    ro = generate(model, ids, mask, 12, eos_id=TOK.eos_id, pad_id=TOK.pad_id, generator=torch.Generator().manual_seed(3))
    assert 0 < ro.completion_mask.sum() < ro.completion_mask.numel()  # EOS reached by some rows, not all
    with torch.no_grad():
        logp, aux = completion_log_probs(model, ro.sequences, ro.attention_mask, ro.completion_mask)
        assert torch.allclose(logp, ro.sampler_logprobs, atol=LOGP_TOL, rtol=0)
        if ro.routing is not None:
            replayed, _ = completion_log_probs(
                model, ro.sequences, ro.attention_mask, ro.completion_mask, routing=ro.routing
            )
            assert torch.allclose(replayed, ro.sampler_logprobs, atol=LOGP_TOL, rtol=0)
            real = ro.attention_mask.bool()
            for recorded, recomputed in zip(ro.routing, aux["routing"]):
                assert recorded.shape == (ids.shape[0], ro.sequences.shape[1], model.config.top_k)
                assert torch.equal(recorded[real], recomputed[real])
    assert ro.sampler_logprobs.dtype == torch.float32


def test_tempered_sampler_logprobs_are_those_of_the_tempered_distribution():
    model = model_of()
    ids, mask = prompts()
    ro = generate(model, ids, mask, 10, temperature=0.7, eos_id=TOK.eos_id, pad_id=TOK.pad_id,
                  generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        tempered, _ = completion_log_probs(model, ro.sequences, ro.attention_mask, ro.completion_mask, temperature=0.7)
        plain, _ = completion_log_probs(model, ro.sequences, ro.attention_mask, ro.completion_mask)
    assert torch.allclose(tempered, ro.sampler_logprobs, atol=LOGP_TOL, rtol=0)
    assert not torch.allclose(plain, ro.sampler_logprobs, atol=LOGP_TOL, rtol=0)  # the mismatch is visible


@pytest.mark.parametrize("overrides", VARIANTS)
def test_a_rows_greedy_rollout_does_not_depend_on_its_batch(overrides):
    """Left padding and neighbours change nothing: each prompt decoded alone gives the tokens it
    gets inside the batch (exact; the logits agree to ~1e-6 and no argmax is that close)."""
    model = model_of(seed=4, **overrides)
    texts = ["12+34=", "5+6=", "", "7", "99+99="]
    ids, mask = TOK.batch_encode(texts)
    batch = generate(model, ids, mask, 10, temperature=0.0, eos_id=TOK.eos_id, pad_id=TOK.pad_id)
    for row, text in enumerate(texts):
        one_ids, one_mask = TOK.batch_encode([text])
        alone = generate(model, one_ids, one_mask, 10, temperature=0.0, eos_id=TOK.eos_id, pad_id=TOK.pad_id)
        assert torch.equal(alone.completion_ids[0], batch.completion_ids[row])


def test_top_p_log_probs_exceed_the_models():
    """The nucleus renormalises a subset: log q(y) = log pi(y) - log pi(nucleus) >= log pi(y)."""
    model = model_of(scale=3.0)
    ids, mask = prompts()
    ro = generate(model, ids, mask, 10, top_p=0.7, eos_id=TOK.eos_id, pad_id=TOK.pad_id,
                  generator=torch.Generator().manual_seed(12))
    with torch.no_grad():
        logp, _ = completion_log_probs(model, ro.sequences, ro.attention_mask, ro.completion_mask)
    real = ro.completion_mask.bool()
    assert (ro.sampler_logprobs[real] >= logp[real] - LOGP_TOL).all()
    assert (ro.sampler_logprobs[real] > logp[real] + 1e-3).any()


def test_eos_rows_stop_and_are_padded():
    model = model_of(seed=1)
    ids, mask = prompts()
    ro = generate(model, ids, mask, 12, eos_id=TOK.eos_id, pad_id=TOK.pad_id, generator=torch.Generator().manual_seed(5))
    comp = ro.completion_ids
    for row in range(ids.shape[0]):
        m = ro.completion_mask[row]
        n = int(m.sum())
        assert torch.equal(m, (torch.arange(12) < n).long())  # a prefix
        eos_at = (comp[row] == TOK.eos_id).nonzero()
        if ro.truncated[row]:
            assert n == 12 and len(eos_at) == 0
        else:
            assert comp[row, n - 1] == TOK.eos_id and (comp[row, : n - 1] != TOK.eos_id).all()
            assert (comp[row, n:] == TOK.pad_id).all() and (ro.sampler_logprobs[row, n:] == 0).all()
    assert ro.truncated.any() and not ro.truncated.all()
    assert torch.equal(ro.attention_mask[:, ids.shape[1] :], ro.completion_mask)


def test_same_generator_seed_same_rollout():
    model = model_of(n_experts=4, top_k=2)
    ids, mask = prompts()
    a = generate(model, ids, mask, 8, eos_id=TOK.eos_id, generator=torch.Generator().manual_seed(6))
    b = generate(model, ids, mask, 8, eos_id=TOK.eos_id, generator=torch.Generator().manual_seed(6))
    assert torch.equal(a.sequences, b.sequences) and torch.equal(a.sampler_logprobs, b.sampler_logprobs)
    assert all(torch.equal(x, y) for x, y in zip(a.routing, b.routing))


def test_cache_is_allocated_once_with_room_for_prompt_and_completion():
    model = model_of()
    calls = []
    original = model.new_kv_cache

    def spy(batch, slots, dtype=None):
        cache = original(batch, slots, dtype)
        calls.append((batch, slots, cache))
        return cache

    model.new_kv_cache = spy
    ids, mask = prompts()
    generate(model, ids, mask, 9, eos_id=None, generator=torch.Generator().manual_seed(7))
    assert len(calls) == 1 and calls[0][:2] == (ids.shape[0], ids.shape[1] + 9)
    keys = calls[0][2].keys
    assert keys.shape == (2, ids.shape[0], 4, ids.shape[1] + 9, 8)  # (layers, B, H, P + N, d_h)
    assert calls[0][2].length == ids.shape[1] + 8  # the last drawn token is never fed (dense)


def test_sampled_token_frequencies_follow_the_sampler_distribution():
    """One step from 4000 copies of a prompt: each token's count is Binomial(4000, q); all within
    5 standard deviations (a false alarm has probability < 1e-5 per token)."""
    model = model_of(scale=3.0)
    n = 4000
    ids, mask = TOK.batch_encode(["12+3"] * n)
    for top_p in (1.0, 0.8):
        ro = generate(model, ids, mask, 1, top_p=top_p, generator=torch.Generator().manual_seed(8))
        with torch.no_grad():
            logits, _ = model(ids[:1], attention_mask=mask[:1])
        q = sampler_distribution(logits[0, -1], 1.0, top_p).exp()
        counts = torch.bincount(ro.completion_ids[:, 0], minlength=TOK.vocab_size).float()
        sd = (n * q * (1 - q)).sqrt()
        assert ((counts - n * q).abs() <= 5 * sd + 1e-6).all()
        assert torch.allclose(ro.sampler_logprobs[:, 0], q.log()[ro.completion_ids[:, 0]], atol=LOGP_TOL)


def test_top_p_nucleus_matches_a_sorted_loop():
    logits = torch.randn(6, 15, generator=torch.Generator().manual_seed(9)) * 3
    for p in (0.05, 0.3, 0.7, 0.95, 1.0):
        log_q = sampler_distribution(logits, 0.9, p)
        probs = torch.softmax(logits / 0.9, -1)
        for row in range(6):
            order = probs[row].argsort(descending=True).tolist()
            kept, mass = [], 0.0
            for token in order:  # keep tokens until the mass before them reaches p
                if mass >= p:
                    break
                kept.append(token)
                mass += float(probs[row, token])
            expected = torch.full((15,), -math.inf)
            expected[kept] = torch.log(probs[row, kept] / probs[row, kept].sum())
            assert torch.allclose(log_q[row], expected, atol=1e-5)


def test_tiny_top_p_is_greedy():
    model = model_of()
    ids, mask = prompts()
    greedy = generate(model, ids, mask, 8, temperature=0.0, eos_id=TOK.eos_id, pad_id=TOK.pad_id)
    nucleus = generate(model, ids, mask, 8, top_p=1e-6, eos_id=TOK.eos_id, pad_id=TOK.pad_id,
                       generator=torch.Generator().manual_seed(10))
    assert torch.equal(greedy.sequences, nucleus.sequences)
    assert (nucleus.sampler_logprobs == 0).all()


def test_generation_works_under_autocast():
    model = model_of(n_experts=4, top_k=2)
    ids, mask = prompts()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ro = generate(model, ids, mask, 6, eos_id=TOK.eos_id, generator=torch.Generator().manual_seed(11))
    assert ro.sampler_logprobs.dtype == torch.float32 and torch.isfinite(ro.sampler_logprobs).all()


@pytest.mark.parametrize(
    "bad",
    [dict(max_new_tokens=0), dict(temperature=-1.0), dict(temperature=float("nan")), dict(top_p=0.0),
     dict(top_p=1.5), dict(eos_id=99), dict(pad_id=-1), dict(max_new_tokens=40)],
)
def test_bad_generation_options_are_config_errors(bad):
    model = model_of()
    ids, mask = prompts()
    options = {"max_new_tokens": 4, "eos_id": TOK.eos_id, "pad_id": TOK.pad_id, **bad}
    with pytest.raises(ConfigError):
        generate(model, ids, mask, **options)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("overrides", [dict(), dict(n_experts=4, top_k=2)])
def test_cuda_rollouts_keep_their_guarantees(overrides):
    """On CUDA: cached greedy = uncached greedy (float32), sampler log-probs = teacher forcing,
    and bf16 autocast generation runs with float32 log-probs (bf16 tolerance: ~1e-2)."""
    model = model_of(**overrides).cuda()
    ids, mask = (t.cuda() for t in prompts())
    ro = generate(model, ids, mask, 12, temperature=0.0, eos_id=TOK.eos_id, pad_id=TOK.pad_id)
    seq, _ = greedy_without_cache(model, ids, mask, 12, TOK.eos_id)
    assert torch.equal(ro.sequences, seq)
    g = torch.Generator("cuda").manual_seed(0)
    ro = generate(model, ids, mask, 12, eos_id=TOK.eos_id, pad_id=TOK.pad_id, generator=g)
    with torch.no_grad():
        logp, _ = completion_log_probs(model, ro.sequences, ro.attention_mask, ro.completion_mask)
    assert torch.allclose(logp, ro.sampler_logprobs, atol=LOGP_TOL, rtol=0)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        ro = generate(model, ids, mask, 12, eos_id=TOK.eos_id, pad_id=TOK.pad_id, generator=g)
        with torch.no_grad():
            logp, _ = completion_log_probs(model, ro.sequences, ro.attention_mask, ro.completion_mask)
    assert ro.sampler_logprobs.dtype == torch.float32
    assert torch.allclose(logp, ro.sampler_logprobs, atol=5e-2, rtol=0)
