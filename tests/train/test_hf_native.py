"""The native path: Llama-family Hugging Face configs rebuilt as the built-in model with the same
weights must compute what transformers computes (logits, gradients, greedy generations).

Skipped cleanly without transformers (the optional extra), except the checks of the built-in
model's new options, which need no transformers."""

import dataclasses
import math

import pytest
import torch

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.train.model import ModelConfig, build_model
from gspo_dynamics.train.rollout import completion_log_probs, generate
from gspo_dynamics.train.tokenizer import Tokenizer
from _train_helpers import DEVICES

TOK = Tokenizer()
# float32, same math in a different order (fused W_qkv / gate-up matmuls, SDPA vs HF's eager or SDPA
# attention): logits of size ~1 agree to a few ulps times the depth; measured max |diff| ~5e-7.
LOGIT_TOL = 1e-5
GRAD_TOL = 1e-5  # gradients of a mean log-prob, entries of size <= ~1: same argument as LOGIT_TOL

BASE = dict(vocab_size=TOK.vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
            num_attention_heads=4, max_position_embeddings=64)
SPECS = {
    "llama-gqa-untied": dict(model_type="llama", num_key_value_heads=2, tie_word_embeddings=False, rope_theta=500.0, **BASE),
    "llama-mha-tied": dict(model_type="llama", num_key_value_heads=4, tie_word_embeddings=True, rms_norm_eps=1e-5, **BASE),
    "mistral-gqa": dict(model_type="mistral", num_key_value_heads=1, sliding_window=None, **BASE),
}


def pair(spec, seed=0):
    """(transformers wrapper, native model) with the same sharp random weights, in eval mode."""
    from gspo_dynamics.train.hf import load_hf_model, native_from_hf

    torch.manual_seed(seed)
    wrapped = load_hf_model(spec)
    with torch.no_grad():
        for p in wrapped.parameters():  # sharp weights: distinct logits, so greedy ties are not an issue
            p.normal_(0, 0.3)
    wrapped.eval()
    return wrapped, native_from_hf(wrapped.hf_model)


def padded_batch(seed=1):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, TOK.vocab_size, (4, 12), generator=g)
    mask = torch.ones_like(ids)
    mask[1, :3] = 0  # left padding of different lengths
    mask[2, :7] = 0
    return ids, mask


@pytest.mark.parametrize("name", list(SPECS))
def test_native_logits_and_gradients_equal_transformers(name):
    pytest.importorskip("transformers")
    from gspo_dynamics.train.hf import _weight_map

    wrapped, native = pair(SPECS[name])
    assert native.num_parameters() == native.config.parameter_count() == wrapped.num_parameters()
    ids, mask = padded_batch()
    real = mask.bool()
    a, _ = wrapped(ids, mask)
    b, _ = native(ids, mask)
    assert a.abs().max() > 0.5  # not trivially small
    assert torch.allclose(a[real], b[real], atol=LOGIT_TOL, rtol=0)  # padding queries are garbage on both sides

    # gradients of the same scalar, mapped back through the weight map (stacked matrices split by rows)
    for logits in (a, b):
        torch.log_softmax(logits, -1)[real].mean().backward()
    hf_params = dict(wrapped.hf_model.named_parameters())
    for ours, sources in _weight_map(native.config):
        theirs = torch.cat([hf_params[s].grad for s in sources], dim=0)
        assert torch.allclose(native.get_parameter(ours).grad, theirs, atol=GRAD_TOL, rtol=0), ours


@pytest.mark.parametrize("name", list(SPECS))
def test_native_greedy_generation_equals_transformers_generate(name):
    pytest.importorskip("transformers")
    wrapped, native = pair(SPECS[name], seed=3)
    ids, mask = TOK.batch_encode(["12+34=", "5+6=", "", "7"])
    N = 10
    ours = generate(native, ids, mask, N, temperature=0.0, eos_id=TOK.eos_id, pad_id=TOK.pad_id)
    with torch.no_grad():  # transformers' own generate: its DynamicCache, its position ids from the mask
        theirs = wrapped.hf_model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=N, do_sample=False,
                                           eos_token_id=TOK.eos_id, pad_token_id=TOK.pad_id, min_new_tokens=0)
    theirs = torch.nn.functional.pad(theirs, (0, ids.shape[1] + N - theirs.shape[1]), value=TOK.pad_id)
    assert torch.equal(ours.sequences, theirs)
    assert ours.completion_mask.sum() > 2 * len(ids)  # some rows generate several tokens


def test_native_sampler_logprobs_equal_the_wrappers_teacher_forcing():
    pytest.importorskip("transformers")
    wrapped, native = pair(SPECS["llama-gqa-untied"], seed=4)
    ids, mask = TOK.batch_encode(["12+34=", "5+6=", ""])
    ro = generate(native, ids, mask, 12, eos_id=TOK.eos_id, pad_id=TOK.pad_id, generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        logp, _ = completion_log_probs(wrapped, ro.sequences, ro.attention_mask, ro.completion_mask)
    assert torch.allclose(logp, ro.sampler_logprobs, atol=LOGIT_TOL, rtol=0)


def test_hf_state_dict_round_trips_into_transformers():
    transformers = pytest.importorskip("transformers")
    from gspo_dynamics.train.hf import hf_state_dict

    wrapped, native = pair(SPECS["llama-gqa-untied"], seed=6)
    config = wrapped.hf_model.config
    state = hf_state_dict(native, config)
    fresh = transformers.AutoModelForCausalLM.from_config(config)
    fresh.load_state_dict(state)  # strict: the names and shapes are transformers' own
    for k, v in wrapped.hf_model.state_dict().items():
        assert torch.equal(state[k], v), k
    with pytest.raises(ConfigError, match="not the native config"):
        hf_state_dict(build_model(dataclasses.replace(native.config, d_ff=32)), config)


def test_load_modes_and_unsupported_architectures():
    pytest.importorskip("transformers")
    from gspo_dynamics.train.hf import HFCausalLM, load_hf_model
    from gspo_dynamics.train.model import CausalLM

    llama = SPECS["llama-mha-tied"]
    assert isinstance(load_hf_model(llama), HFCausalLM)  # default: the wrapper, as before
    assert isinstance(load_hf_model(llama, native=True), CausalLM)
    assert isinstance(load_hf_model(llama, native="auto", dtype=torch.float64), CausalLM)
    assert load_hf_model(llama, native=True, dtype=torch.float64).embed.weight.dtype == torch.float64
    gpt2 = dict(model_type="gpt2", vocab_size=TOK.vocab_size, n_embd=32, n_layer=2, n_head=4, n_positions=64)
    assert isinstance(load_hf_model(gpt2, native="auto"), HFCausalLM)  # unsupported: falls back
    for spec, reason in [(gpt2, "model_type 'gpt2'"), ({**llama, "attention_bias": True}, "biases"),
                         ({**llama, "hidden_act": "gelu"}, "hidden_act"),
                         ({**llama, "rope_scaling": {"rope_type": "linear", "factor": 2.0}}, "rope_type"),
                         ({**llama, "head_dim": 16}, "head_dim"),
                         ({**SPECS["mistral-gqa"], "sliding_window": 16}, "sliding window")]:
        with pytest.raises(ConfigError, match=reason):
            load_hf_model(spec, native=True)
    with pytest.raises(ConfigError, match="native must be"):
        load_hf_model(llama, native="yes")


# The built-in model's Llama options, without transformers.
LLAMA_LIKE = dict(vocab_size=15, d_model=32, n_layers=2, n_heads=4, d_ff=48, max_seq_len=32)


@pytest.mark.parametrize("options", [dict(norm="rmsnorm"), dict(mlp="swiglu"), dict(n_kv_heads=2),
                                     dict(n_kv_heads=1, mlp="swiglu", norm="rmsnorm", tie_embeddings=False)])
def test_options_parameter_count_flops_and_cache(options, monkeypatch):
    """Analytic parameter count = allocated; flops_per_token = FlopCounterMode on an explicit attention
    (repeating the K/V heads for grouped-query); the cache holds H_kv heads and one cached pass equals
    the full pass (float32 summation order: 1e-5)."""
    from torch.utils.flop_counter import FlopCounterMode

    from gspo_dynamics.train import _attention

    config = ModelConfig(**LLAMA_LIKE, **options)
    model = build_model(config, torch.Generator().manual_seed(0)).eval()
    assert model.num_parameters() == config.parameter_count()
    ids, mask = padded_batch(seed=2)
    ids = ids % config.vocab_size
    full, _ = model(ids, mask)
    cache = model.new_kv_cache(4, 12)
    assert cache.keys.shape == (2, 4, config.kv_heads, 12, config.head_dim)
    first, _ = model(ids[:, :5], mask[:, :5], kv_cache=cache)
    rest = [model(ids[:, t : t + 1], mask[:, t : t + 1], kv_cache=cache)[0] for t in range(5, 12)]
    cached = torch.cat([first, *rest], dim=1)
    assert torch.allclose(cached[mask.bool()], full[mask.bool()], atol=LOGIT_TOL, rtol=0)

    def explicit(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, enable_gqa=False):
        k = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)
        v = v.repeat_interleave(q.shape[1] // v.shape[1], dim=1)
        T = q.shape[-2]
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        return torch.softmax(scores.masked_fill(~causal, -torch.inf), -1) @ v

    monkeypatch.setattr(_attention.F, "scaled_dot_product_attention", explicit)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(torch.zeros(3, 16, dtype=torch.long))
    assert counter.get_total_flops() == 3 * 16 * config.flops_per_token(16, training=False)


@pytest.mark.parametrize("bad, match", [(dict(norm="batchnorm"), "norm must be"), (dict(norm_eps=0.0), "norm_eps"),
                                        (dict(mlp="relu"), "mlp must be"), (dict(n_kv_heads=3), "multiple of n_kv_heads"),
                                        (dict(n_kv_heads=0), "n_kv_heads"),
                                        (dict(mlp="swiglu", n_experts=2, top_k=1), "n_experts = 0")])
def test_bad_options_are_config_errors(bad, match):
    with pytest.raises(ConfigError, match=match):
        ModelConfig(**{**LLAMA_LIKE, **bad})


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("options", [dict(), dict(n_kv_heads=2, mlp="swiglu", norm="rmsnorm")])
def test_decode_steps_skip_padding_rows_and_match_the_full_pass(options, device):
    """A one-token cached step with padding rows computes only the real rows: their logits equal the
    teacher-forced pass (LOGIT_TOL: same math on fewer rows), the padding rows' logits are exactly 0,
    and a row that is padding at one step and real later still matches (its skipped slot is masked)."""
    config = ModelConfig(**LLAMA_LIKE, **options)
    model = build_model(config, torch.Generator().manual_seed(1)).eval().to(device)
    g = torch.Generator().manual_seed(3)
    ids = torch.randint(0, config.vocab_size, (4, 10), generator=g)
    mask = torch.ones_like(ids)
    mask[0, 6:] = 0  # finished (padding from step 6 on)
    mask[1, 7] = 0  # padding at one step, then real again
    mask[2, :2] = 0  # left padding
    mask[3, 5:] = 0
    mask[:, 8] = 0  # a step where every row is padding
    ids, mask = ids.to(device), mask.to(device)
    with torch.no_grad():
        full, _ = model(ids, mask)
        cache = model.new_kv_cache(4, 10)
        steps = [model(ids[:, :5], mask[:, :5], kv_cache=cache)[0]]
        steps += [model(ids[:, t : t + 1], mask[:, t : t + 1], kv_cache=cache)[0] for t in range(5, 10)]
    cached = torch.cat(steps, dim=1)
    real = mask.bool()
    assert torch.allclose(cached[real], full[real], atol=LOGIT_TOL, rtol=0)
    assert torch.equal(cached[:, 5:][~real[:, 5:]], torch.zeros_like(cached[:, 5:][~real[:, 5:]]))
    assert cache.length == 10 and torch.equal(cache.n_real, mask.sum(1))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("buckets", [1, 4])
@pytest.mark.parametrize("options", [dict(), dict(n_kv_heads=2, mlp="swiglu", norm="rmsnorm", tie_embeddings=False),
                                     dict(positional="learned")])
def test_packed_pass_equals_the_untrimmed_pass(options, buckets, device, monkeypatch):
    """A full pass over left- and right-padded rows of very different lengths runs packed (the real
    positions only, attention in `buckets` length buckets): the real positions' logits and the
    gradients of a masked loss equal the single untrimmed pass (LOGIT_TOL, GRAD_TOL: the same sums
    over other row counts); every padding position gets logits 0 (not computed), and only those."""
    from gspo_dynamics.train import model as model_module

    config = ModelConfig(**LLAMA_LIKE, **options)
    g = torch.Generator().manual_seed(4)
    B, T = 16, 20
    ids = torch.randint(0, config.vocab_size, (B, T), generator=g)
    ends = torch.randint(3, 8, (B,), generator=g)
    ends[:2] = T  # two long rows: most of the batch is padding
    mask = (torch.arange(T) < ends[:, None]).long()
    mask[:, :2] = torch.tensor([0, 1])  # left padding too
    ids, mask = ids.to(device), mask.to(device)
    monkeypatch.setattr(model_module, "PAD_BUCKETS", buckets)
    packing = model_module.CausalLM._packing(mask.bool())
    assert packing is not None and len(packing.buckets) == buckets  # the packed path runs
    assert sorted(packing.index.tolist()) == mask.reshape(-1).nonzero()[:, 0].tolist()  # each real position once

    def run(saving):
        monkeypatch.setattr(model_module, "PAD_SAVING", saving)
        model = build_model(config, torch.Generator().manual_seed(2)).to(device)
        logits, _ = model(ids, mask)
        ((torch.log_softmax(logits, -1)[..., 0] * mask).sum() / mask.sum()).backward()  # a mean: entries <= ~1
        return logits.detach(), {n: p.grad for n, p in model.named_parameters()}

    packed, grads = run(0.25)
    full, full_grads = run(1.0)  # no padding share is that large: one untrimmed pass
    real = mask.bool()
    assert torch.allclose(packed[real], full[real], atol=LOGIT_TOL, rtol=0)
    assert torch.equal((packed == 0).all(-1), ~real) and packed.isfinite().all()
    for name, grad in grads.items():
        assert torch.allclose(grad, full_grads[name], atol=GRAD_TOL, rtol=0), name


def test_packing_declines_dense_rows_and_empty_batches():
    """No packing where the padding is under PAD_SAVING of the positions, or where nothing is real."""
    from gspo_dynamics.train import model as model_module

    dense = torch.ones(8, 10, dtype=torch.bool)
    dense[:, :2] = False  # 20% padding
    assert model_module.CausalLM._packing(dense) is None
    assert model_module.CausalLM._packing(torch.zeros(8, 10, dtype=torch.bool)) is None
