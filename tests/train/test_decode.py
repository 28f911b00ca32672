"""The fast decode path (`_decode.Decoder` in `rollout.generate`) against the reference path (the
model's own cached forward every step): same tokens, same sampler log-probs, same logits."""

import pytest
import torch

from gspo_dynamics.train import _decode
from gspo_dynamics.train.rollout import completion_log_probs, draw, generate, sampler_distribution
from gspo_dynamics.train.tokenizer import Tokenizer
from _train_helpers import DEVICES, sharp_model

TOK = Tokenizer()
LOGIT_TOL = 1e-5  # float32 logits of O(10): the two paths differ only in summation order (~1e-6 seen)
LOGP_TOL = 1e-4  # as tests/train/test_rollout.py: log-probs after a log-softmax over sharpened logits

DENSE = [
    dict(),
    dict(positional="learned"),
    dict(norm="rmsnorm", mlp="swiglu", n_kv_heads=2, tie_embeddings=False),  # the Llama options
    dict(norm="rmsnorm", mlp="swiglu", n_kv_heads=1, rope_theta=500.0),
    dict(positional="learned", n_kv_heads=2, tie_embeddings=False),
]


def model_of(seed=0, scale=10.0, **overrides):
    return sharp_model(TOK.vocab_size, seed, scale, **overrides)


def prompts(kind="padded", device="cpu"):
    """Left-padded prompts of different lengths, equal lengths, or one token (BOS; the last row's
    marked padding, a prompt with no real token)."""
    if kind == "one_token":
        ids, mask = TOK.batch_encode([""] * 8, device=device)
        mask[-1] = 0
        return ids, mask
    texts = ["12+34=", "5+6=", "", "7", "99+99=", "3", "41+2="] if kind == "padded" else ["12+3", "45+6", "78+9", "1+11", "2+22", "5+55", "8+80", "3+33"]
    return TOK.batch_encode(texts, device=device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("overrides", DENSE)
@pytest.mark.parametrize("kind", ["padded", "equal", "one_token"])
def test_fast_rollout_equals_reference_rollout(overrides, kind, device):
    """Greedy and sampled (tau = 1 and tau = 0.8 with top-p 0.9): the same tokens exactly (both paths
    draw row r of step t with the same uniform; no draw lands within ~1e-6 of a CDF boundary at
    these seeds), the same sampler log-probs to float32 tolerance. One-token prompts take the
    fast path's own prefill (a decode step at slot 0)."""
    model = model_of(seed=len(overrides), device=device, **overrides)
    ids, mask = prompts(kind, device)
    finished = []
    for options in (dict(temperature=0.0), dict(), dict(temperature=0.8, top_p=0.9)):
        fast, ref = (generate(model, ids, mask, 14, eos_id=TOK.eos_id, pad_id=TOK.pad_id, fast=f,
                              generator=torch.Generator(device).manual_seed(3), **options) for f in (True, False))
        assert torch.equal(fast.sequences, ref.sequences)
        assert torch.equal(fast.attention_mask, ref.attention_mask)
        assert torch.equal(fast.truncated, ref.truncated)
        assert torch.allclose(fast.sampler_logprobs, ref.sampler_logprobs, atol=LOGP_TOL, rtol=0)
        assert (fast.sampler_logprobs[fast.completion_mask == 0] == 0).all()
        finished.append(~fast.truncated)
    finished = torch.cat(finished)
    if device == "cpu":  # CUDA draws other uniforms from the same seed: whether a row stops there is chance
        assert finished.any() and not finished.all()  # some rows stopped (at varied steps), some ran to the end


@pytest.mark.parametrize("overrides", DENSE)
def test_fast_sampler_logprobs_equal_teacher_forced_logprobs(overrides):
    model = model_of(seed=5, **overrides)
    ids, mask = prompts()
    ro = generate(model, ids, mask, 14, eos_id=TOK.eos_id, pad_id=TOK.pad_id, generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        logp, _ = completion_log_probs(model, ro.sequences, ro.attention_mask, ro.completion_mask)
    assert torch.allclose(logp, ro.sampler_logprobs, atol=LOGP_TOL, rtol=0)


@pytest.mark.parametrize("overrides", DENSE)
def test_decoder_step_logits_equal_the_models_cached_step(overrides):
    """Feed the same tokens through `Decoder.step` and the model's cached forward after the same
    prefill: logits agree to float32 summation order at every step, padded rows included."""
    model = model_of(seed=2, scale=3.0, **overrides)
    ids, mask = prompts()
    B, P = ids.shape
    n_steps = 6
    feed = torch.randint(0, TOK.vocab_size, (n_steps, B), generator=torch.Generator().manual_seed(0))
    decoder = _decode.Decoder(model)
    first = mask.sum(-1)
    table = decoder.position_table(int(first.max()) + n_steps, ids.device)
    bias = _decode.padding_bias(mask, P + n_steps)
    assert bias is not None and torch.equal(bias[:, 0, 0, :P] == 0, mask.bool()) and (bias[..., P:] == 0).all()
    with torch.no_grad():
        ref_cache, fast_cache = model.new_kv_cache(B, P + n_steps), model.new_kv_cache(B, P + n_steps)
        model(ids, attention_mask=mask, kv_cache=ref_cache)
        model(ids, attention_mask=mask, kv_cache=fast_cache)
        for t in range(n_steps):
            ref, _ = model(feed[t][:, None], kv_cache=ref_cache)
            tables = tuple(x.index_select(0, first + t) for x in table)
            fast = decoder.step(feed[t], tables, list(fast_cache.keys), list(fast_cache.values), P + t, bias)
            assert torch.allclose(fast, ref[:, 0], atol=LOGIT_TOL * ref.abs().max(), rtol=0)


def test_draw_inverts_the_cdf_and_never_leaves_the_nucleus():
    """u = 0 draws the first token of positive mass, u -> 1 (the largest float32 below 1 that
    torch.rand makes) the last one; tokens outside the top-p nucleus are never drawn."""
    logits = torch.randn(5, 15, generator=torch.Generator().manual_seed(1)) * 3
    q = sampler_distribution(logits, 1.0, 0.6).exp()
    positive = (q > 0).long()
    first_kept = positive.argmax(-1)
    last_kept = 14 - positive.flip(-1).argmax(-1)
    lo, _ = draw(logits, 1.0, 0.6, torch.zeros(5))
    hi, hi_logp = draw(logits, 1.0, 0.6, torch.full((5,), 1.0 - 2.0**-24))
    assert torch.equal(lo, first_kept) and torch.equal(hi, last_kept)
    assert torch.allclose(hi_logp, q.log().gather(1, hi[:, None])[:, 0])
    u = torch.rand(20000, generator=torch.Generator().manual_seed(2))
    tokens, _ = draw(logits[:1].expand(20000, -1), 1.0, 0.6, u)
    assert (q[0, tokens] > 0).all()


def test_draw_is_exact_inversion_of_the_cumulative_sum():
    """y = #{j : c_j <= u c_V} against a Python loop over the CDF (an independent route)."""
    logits = torch.randn(7, 11, generator=torch.Generator().manual_seed(3))
    u = torch.rand(7, generator=torch.Generator().manual_seed(4))
    tokens, _ = draw(logits, 0.7, 1.0, u)
    cdf = torch.softmax(logits / 0.7, -1).cumsum(-1)
    for row in range(7):
        target = float(u[row] * cdf[row, -1])
        expected = next(j for j in range(11) if float(cdf[row, j]) > target)
        assert int(tokens[row]) == expected


def test_fast_path_applies_only_where_it_computes_the_same_function():
    dense, moe = model_of(), model_of(n_experts=4, top_k=2)
    cpu = torch.device("cpu")
    assert _decode.supports(dense, cpu) and not _decode.supports(moe, cpu)
    assert not _decode.supports(model_of().to(torch.bfloat16), cpu)
    assert not _decode.supports(model_of(dropout=0.1).train(), cpu) and _decode.supports(model_of(dropout=0.1), cpu)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert not _decode.supports(dense, cpu)


def test_fast_rollout_leaves_the_model_unchanged_and_fills_the_cache_slots():
    model = model_of(norm="rmsnorm", mlp="swiglu")
    before = {k: v.clone() for k, v in model.state_dict().items()}
    ids, mask = prompts("equal")
    caches = []
    original = model.new_kv_cache
    model.new_kv_cache = lambda *a, **k: caches.append(original(*a, **k)) or caches[-1]
    generate(model, ids, mask, 9, eos_id=None, generator=torch.Generator().manual_seed(7))
    assert len(caches) == 1 and caches[0].length == ids.shape[1] + 8  # the last drawn token is never fed
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())


@pytest.mark.parametrize("norm", [torch.nn.RMSNorm(24, eps=1e-6), torch.nn.LayerNorm(24)])
def test_norm_with_its_gain_folded_into_the_next_matrix_is_the_modules(norm):
    """(x / rms(x)) (g W) = RMSNorm(x) W (the gain moved into W's rows); a LayerNorm is not folded."""
    with torch.no_grad():
        norm.weight.uniform_(0.5, 2.0, generator=torch.Generator().manual_seed(0))
        x = torch.randn(5, 24, generator=torch.Generator().manual_seed(1)) * 0.01
        w_t = torch.randn(24, 7, generator=torch.Generator().manual_seed(2))
        fast = _decode._Norm(norm)
        assert torch.allclose(fast(x) @ fast.into(w_t), norm(x) @ w_t, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("compact", [0.0, 0.5, 1.0])
def test_dropping_finished_rows_changes_no_token(compact, device, monkeypatch):
    """Finished rows dropped never (0), once half the batch is done, or at every EOS (1): the same
    rollout as the reference path, which computes every row every step."""
    from gspo_dynamics.train import rollout

    monkeypatch.setattr(rollout, "COMPACT", compact)
    model = model_of(seed=1, norm="rmsnorm", mlp="swiglu", device=device)
    ids, mask = prompts(device=device)
    fast, ref = (generate(model, ids, mask, 14, eos_id=TOK.eos_id, pad_id=TOK.pad_id, fast=f,
                          generator=torch.Generator(device).manual_seed(8)) for f in (True, False))
    assert torch.equal(fast.sequences, ref.sequences)
    assert torch.allclose(fast.sampler_logprobs, ref.sampler_logprobs, atol=LOGP_TOL, rtol=0)
    lengths = fast.completion_mask.sum(-1)
    assert len(lengths.unique()) >= 3  # rows finished at several different steps
