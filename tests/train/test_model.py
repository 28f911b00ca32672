"""The built-in causal LM: parameter counts, validation, causality, padding, RoPE, MoE, autocast."""

import dataclasses
import math

import pytest
import torch

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.train._moe import MoEMLP, load_balance_loss
from gspo_dynamics.train.model import MODEL_PRESETS, PRESET_SIZES, ModelConfig, build_model, preset_config

FP32_TOL = 1e-5  # float32 logits of O(1) size, same math in another summation order
PRESET_REL_TOL = 0.30  # the brief: a preset's name is its parameter count within 30%


def tiny(**overrides) -> ModelConfig:
    base = dict(vocab_size=15, d_model=32, n_layers=2, n_heads=4, d_ff=48, max_seq_len=32)
    return ModelConfig(**{**base, **overrides})


def model_of(config: ModelConfig, seed: int = 0, scale: float = 1.0):
    """A model with weights seeded and scaled (scale > 1: sharper, less uniform logits)."""
    model = build_model(config, torch.Generator().manual_seed(seed))
    with torch.no_grad():
        for p in model.parameters():
            if p.ndim >= 2:
                p.mul_(scale)
    return model.eval()


VARIANTS = [
    dict(),
    dict(positional="learned"),
    dict(tie_embeddings=False),
    dict(n_experts=4, top_k=2),
    dict(n_experts=3, top_k=1, positional="learned", tie_embeddings=False),
]


@pytest.mark.parametrize("overrides", VARIANTS)
def test_analytic_parameter_count_equals_allocated(overrides):
    config = tiny(**overrides)
    assert build_model(config).num_parameters() == config.parameter_count()


@pytest.mark.parametrize("name", list(MODEL_PRESETS))
def test_presets_have_their_nominal_size_counted_on_the_meta_device(name):
    config = preset_config(name, vocab_size=16)
    with torch.device("meta"):  # nothing allocated, even for 1b
        model = build_model(config)
    assert model.num_parameters() == config.parameter_count()
    assert abs(config.parameter_count() / PRESET_SIZES[name] - 1) <= PRESET_REL_TOL


def test_active_parameters_of_moe_count_k_of_e_experts():
    dense = tiny(d_ff=48)
    moe = tiny(d_ff=48, n_experts=4, top_k=1)
    # one expert active: the dense count plus the router
    assert moe.active_parameter_count() == dense.parameter_count() + moe.n_layers * moe.d_model * 4


@pytest.mark.parametrize(
    "bad",
    [
        dict(d_model=30),  # not a multiple of n_heads
        dict(d_model=12, n_heads=4),  # head dim 3: odd, no RoPE pairs
        dict(n_layers=0),
        dict(vocab_size=True),
        dict(n_experts=-1),
        dict(n_experts=2, top_k=3),
        dict(dropout=1.0),
        dict(positional="alibi"),
        dict(tie_embeddings="yes"),
    ],
)
def test_bad_configs_are_config_errors(bad):
    with pytest.raises(ConfigError):
        tiny(**bad)


def test_unknown_preset_lists_the_names():
    with pytest.raises(ConfigError, match="100k"):
        preset_config("7b", 16)


@pytest.mark.parametrize("overrides", VARIANTS)
def test_causal_a_later_token_never_changes_earlier_logits(overrides):
    model = model_of(tiny(**overrides), scale=5.0)
    x = torch.randint(0, 15, (3, 10), generator=torch.Generator().manual_seed(1))
    y = x.clone()
    y[:, 6:] = (y[:, 6:] + 1) % 15
    with torch.no_grad():
        a, _ = model(x)
        b, _ = model(y)
    assert torch.allclose(a[:, :6], b[:, :6], atol=FP32_TOL)
    assert not torch.allclose(a[:, 6:], b[:, 6:], atol=FP32_TOL)


@pytest.mark.parametrize("overrides", VARIANTS)
def test_left_padding_changes_nothing_on_real_tokens(overrides):
    model = model_of(tiny(**overrides), scale=5.0)
    x = torch.randint(0, 15, (2, 7), generator=torch.Generator().manual_seed(2))
    padded = torch.cat([torch.full((2, 4), 14), x], dim=1)
    mask = torch.cat([torch.zeros(2, 4, dtype=torch.long), torch.ones(2, 7, dtype=torch.long)], dim=1)
    with torch.no_grad():
        plain, aux_plain = model(x)
        pad, aux_pad = model(padded, attention_mask=mask)
    assert torch.allclose(plain, pad[:, 4:], atol=FP32_TOL)
    assert torch.isfinite(pad).all()  # padding queries see their own slot: no NaN rows
    if aux_plain["routing"] is not None:
        for a, b in zip(aux_plain["routing"], aux_pad["routing"]):
            assert torch.equal(a, b[:, 4:])


def test_rope_depends_only_on_relative_positions():
    """Shifting every position by the same offset leaves RoPE attention (and the logits) unchanged;
    learned absolute positions do not have this symmetry."""
    x = torch.randint(0, 15, (2, 9), generator=torch.Generator().manual_seed(3))
    pos = torch.arange(9).expand(2, 9)
    for positional, invariant in (("rope", True), ("learned", False)):
        model = model_of(tiny(positional=positional), scale=5.0)
        with torch.no_grad():
            a, _ = model(x, positions=pos)
            b, _ = model(x, positions=pos + 7)
        assert torch.allclose(a, b, atol=1e-4) == invariant  # angles up to 16 rad: float32 cos/sin


def test_moe_batched_dispatch_equals_a_per_token_loop():
    torch.manual_seed(0)
    mlp = MoEMLP(d_model=8, d_ff=12, n_experts=5, top_k=2)
    for p in mlp.parameters():
        torch.nn.init.normal_(p, 0, 0.5)
    x = torch.randn(3, 7, 8)
    out, experts, _ = mlp(x)
    logits = mlp.router(x)
    for b in range(3):
        for t in range(7):
            chosen = logits[b, t].topk(2).indices.sort().values
            assert torch.equal(chosen, experts[b, t])
            gates = torch.softmax(logits[b, t, chosen], -1)
            ref = sum(g * (torch.nn.functional.gelu(x[b, t] @ mlp.w_up[e]) @ mlp.w_down[e]) for g, e in zip(gates, chosen))
            assert torch.allclose(out[b, t], ref, atol=FP32_TOL)


def test_load_balance_loss_is_one_for_a_uniform_router_and_matches_a_loop():
    E, k = 4, 2
    scores = torch.rand(2, 5, E, generator=torch.Generator().manual_seed(4))
    experts = scores.topk(k, dim=-1).indices.sort(-1).values  # distinct sets, as the router makes
    uniform = torch.full((2, 5, E), 1.0 / E)
    assert math.isclose(float(load_balance_loss(uniform, experts, None)), 1.0, rel_tol=1e-6)
    probs = torch.softmax(torch.randn(2, 5, E, generator=torch.Generator().manual_seed(5)), -1)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
    tokens = [(b, t) for b in range(2) for t in range(5) if mask[b, t]]
    f = [sum(int(e in experts[b, t].tolist()) for b, t in tokens) / (len(tokens) * k) for e in range(E)]
    P = [sum(float(probs[b, t, e]) for b, t in tokens) / len(tokens) for e in range(E)]
    expected = E * sum(fe * pe for fe, pe in zip(f, P))
    assert math.isclose(float(load_balance_loss(probs, experts, mask)), expected, rel_tol=1e-6)


def test_routing_replay_reproduces_the_forward_and_still_trains_the_router():
    model = model_of(tiny(n_experts=4, top_k=2), scale=5.0)
    x = torch.randint(0, 15, (2, 8), generator=torch.Generator().manual_seed(6))
    logits, aux = model(x)
    replayed, aux2 = model(x, routing=aux["routing"])
    assert torch.equal(logits, replayed)  # same choices, same gate formula: bitwise equal
    other = tuple((r + 1) % 4 for r in aux["routing"])
    moved, aux3 = model(x, routing=other)
    assert not torch.allclose(moved, logits, atol=FP32_TOL)
    assert all(torch.equal(a, b) for a, b in zip(aux3["routing"], other))
    moved.logsumexp(-1).sum().backward()
    assert model.blocks[0].mlp.router.weight.grad.abs().sum() > 0  # gates recomputed: router gets a gradient


def test_bad_routing_and_dense_routing_are_refused():
    model = model_of(tiny(n_experts=4, top_k=2))
    x = torch.zeros(1, 3, dtype=torch.long)
    with pytest.raises(ValueError, match="shape"):
        model(x, routing=(torch.zeros(1, 3, 1, dtype=torch.long),) * 2)
    with pytest.raises(ValueError, match="dense"):
        model_of(tiny())(x, routing=(torch.zeros(1, 3, 2, dtype=torch.long),) * 2)


@pytest.mark.parametrize("overrides", [dict(), dict(n_experts=4, top_k=2)])
def test_works_under_bf16_autocast(overrides):
    """bf16 has an 8-bit mantissa: logits of O(1) agree with float32 to ~1e-2."""
    model = model_of(tiny(**overrides))
    x = torch.randint(0, 15, (2, 6), generator=torch.Generator().manual_seed(7))
    ref, _ = model(x)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        low, aux = model(x)
        if aux["load_balance_loss"] is not None:
            assert torch.isfinite(aux["load_balance_loss"])
    assert low.dtype == torch.float32
    assert torch.allclose(low, ref, atol=5e-2)


def test_dropout_is_active_only_in_training_mode():
    model = model_of(dataclasses.replace(tiny(), dropout=0.5))
    x = torch.randint(0, 15, (2, 6), generator=torch.Generator().manual_seed(8))
    with torch.no_grad():
        a, _ = model(x)
        b, _ = model(x)
        model.train()
        c, _ = model(x)
    assert torch.equal(a, b) and not torch.allclose(a, c)


def test_too_long_inputs_are_refused():
    model = model_of(tiny(max_seq_len=8))
    with pytest.raises(ValueError, match="max_seq_len"):
        model(torch.zeros(1, 9, dtype=torch.long))


def test_flops_per_token_equal_a_flop_counter_on_an_explicit_attention(monkeypatch):
    """FlopCounterMode counts every matmul of a forward; with SDPA replaced by explicit matmuls
    (q k^T, then the weights times v) the count is the formula's, exactly (dense model)."""
    from torch.utils.flop_counter import FlopCounterMode

    from gspo_dynamics.train import _attention

    def explicit(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False):
        T = q.shape[-2]
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        return torch.softmax(scores.masked_fill(~causal, -torch.inf), -1) @ v

    monkeypatch.setattr(_attention.F, "scaled_dot_product_attention", explicit)
    for overrides in (dict(), dict(tie_embeddings=False, positional="learned")):
        config = tiny(**overrides)
        model = model_of(config)
        B, T = 3, 16
        with FlopCounterMode(display=False) as counter:
            model(torch.zeros(B, T, dtype=torch.long))
        assert counter.get_total_flops() == B * T * config.flops_per_token(T, training=False)
        assert config.flops_per_token(T) == 3 * config.flops_per_token(T, training=False)
    # MoE: the router and k of the E experts
    moe, dense = tiny(n_experts=4, top_k=2), tiny()
    extra = 2 * moe.n_layers * (moe.d_model * 4 + 2 * moe.d_model * moe.d_ff)
    assert moe.flops_per_token(8, training=False) == dense.flops_per_token(8, training=False) + extra


@pytest.mark.parametrize("options", [dict(n_experts=4, top_k=2), dict(n_experts=3, top_k=1, positional="learned")])
def test_a_packed_moe_pass_equals_the_unpacked_one(options, monkeypatch):
    """An MoE model's full pass over padded rows runs packed too: at the real positions the logits and the expert
    sets equal the unpacked pass's, so do the load-balance loss (both average over the real tokens) and every
    gradient (FP32_TOL); padding positions get logits 0 and the expert set 0..k-1; replaying the unpacked pass's
    expert sets gives the packed pass the same logits."""
    from gspo_dynamics.train import model as model_module

    config = tiny(**options)
    g = torch.Generator().manual_seed(5)
    B, T = 12, 16
    ids = torch.randint(0, config.vocab_size, (B, T), generator=g)
    ends = torch.randint(3, 7, (B,), generator=g)
    ends[0] = T
    mask = (torch.arange(T) < ends[:, None]).long()
    mask[:, 0] = 0  # left padding too
    real = mask.bool()

    def run(saving, routing=None):
        monkeypatch.setattr(model_module, "PAD_SAVING", saving)
        model = model_of(config, seed=2, scale=3.0)
        logits, aux = model(ids, mask, routing=routing)
        loss = (torch.log_softmax(logits, -1)[..., 0] * mask).sum() / mask.sum() + aux["load_balance_loss"]
        loss.backward()
        return logits.detach(), aux, {n: p.grad for n, p in model.named_parameters()}

    assert model_module.CausalLM._packing(real) is not None
    packed, aux, grads = run(0.25)
    full, full_aux, full_grads = run(1.0)
    assert torch.allclose(packed[real], full[real], atol=FP32_TOL, rtol=0) and (packed[~real] == 0).all()
    k = config.top_k
    for p_layer, f_layer in zip(aux["routing"], full_aux["routing"]):
        assert torch.equal(p_layer[real], f_layer[real]) and torch.equal(p_layer[~real], torch.arange(k).expand(int((~real).sum()), k))
    assert float(aux["load_balance_loss"].detach()) == pytest.approx(float(full_aux["load_balance_loss"].detach()), abs=FP32_TOL)
    for name, grad in grads.items():
        assert torch.allclose(grad, full_grads[name], atol=FP32_TOL, rtol=0), name
    replayed, _, _ = run(0.25, routing=full_aux["routing"])
    assert torch.allclose(replayed[real], full[real], atol=FP32_TOL, rtol=0)


def test_expanded_grouped_query_keys_give_enable_gqas_attention():
    """`_attention.expand_kv` (what a masked CUDA call uses, the memory-efficient kernel taking no enable_gqa)
    against torch's own enable_gqa, float64 on the CPU under a padding mask: equal to rounding (1e-12)."""
    from torch.nn import functional as F

    from gspo_dynamics.train._attention import attention_mask_4d, expand_kv

    g = torch.Generator().manual_seed(0)
    q = torch.randn(3, 8, 5, 4, generator=g, dtype=torch.float64)
    k, v = (torch.randn(3, 2, 5, 4, generator=g, dtype=torch.float64) for _ in range(2))
    mask = attention_mask_4d(torch.tensor([[1, 1, 1, 1, 1], [0, 0, 1, 1, 1], [1, 1, 1, 0, 0]]).bool(), 0, 5)
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    got = F.scaled_dot_product_attention(q, *expand_kv(k, v, 8), attn_mask=mask)
    assert torch.allclose(got, want, atol=1e-12, rtol=0)


@pytest.mark.parametrize("bias", [0.0, 1.5, 8.0])  # even routing, uneven, one expert idle and one taking most
def test_grouped_experts_equal_the_batched_buffer(bias):
    """`MoEMLP._grouped` (one matmul pair per expert, the CPU path) against `_batched` (the (E, C, d) buffer and two
    bmm, the CUDA path), float32 on the CPU: outputs within 1e-6 and every gradient within 1e-5 of its scale
    (the same products per row; the buffer's zero padding rows only add exact zeros to the weight gradients,
    but in another order)."""
    from gspo_dynamics.train._moe import MoEMLP

    g = torch.Generator().manual_seed(0)
    moe = MoEMLP(16, 32, 6, 2)
    with torch.no_grad():
        moe.w_up.copy_(torch.randn(moe.w_up.shape, generator=g) * 0.2)
        moe.w_down.copy_(torch.randn(moe.w_down.shape, generator=g) * 0.2)
    x = torch.randn(300, 16, generator=g, requires_grad=True)
    logits = torch.randn(300, 6, generator=g) + torch.linspace(0.0, bias, 6)
    experts = logits.topk(2, dim=-1).indices.sort(dim=-1).values
    gates = torch.softmax(logits.gather(-1, experts), dim=-1)
    flat = experts.reshape(-1)
    order = torch.argsort(flat, stable=True)  # the sorted assignments `_experts` hands either path
    counts = torch.bincount(flat, minlength=6)
    runs = []
    for path in ("_batched", "_grouped"):
        rows = getattr(moe, path)(x[order // 2], flat[order], counts)
        moe.zero_grad(set_to_none=True)
        x.grad = None
        (rows.square().sum() + rows.sum()).backward()
        runs.append((rows.detach(), x.grad.clone(), moe.w_up.grad.clone(), moe.w_down.grad.clone()))
    (a, *ga), (b, *gb) = runs
    assert torch.allclose(a, b, atol=1e-6, rtol=0)
    for u, v in zip(ga, gb):
        assert torch.allclose(u, v, atol=1e-5 * float(u.abs().max()), rtol=0)
    if bias == 8.0:
        assert int(torch.bincount(experts.reshape(-1), minlength=6).min()) == 0  # an idle expert: an empty block


def test_the_cpu_runs_grouped_experts_only_on_many_rows_of_a_mostly_padded_buffer(monkeypatch):
    """`MoEMLP._experts`' dispatch (`_moe` docstring): the buffer for a decode step's few rows and for even routing,
    `_grouped` for GROUPED_MIN_ROWS rows or more with the buffer GROUPED_PADDING times the real rows or more."""
    from gspo_dynamics.train import _moe

    moe = _moe.MoEMLP(8, 16, 4, 2)
    called = []
    for name in ("_batched", "_grouped"):
        real = getattr(moe, name)
        monkeypatch.setattr(moe, name, lambda *a, _n=name, _f=real: called.append(_n) or _f(*a))

    def run(N, skew):  # skew: every token's second expert is expert 3 (the buffer E C = 4 N over N k = 2 N rows)
        first = torch.arange(N) % 3
        experts = torch.stack([first, torch.full((N,), 3)], 1) if skew else torch.stack([first, (first + 1) % 4], 1)
        moe._experts(torch.randn(N, 8), experts.sort(-1).values, torch.full((N, 2), 0.5))
        return called.pop()

    assert run(_moe.GROUPED_MIN_ROWS, skew=True) == "_grouped"
    assert run(_moe.GROUPED_MIN_ROWS // 2 - 1, skew=True) == "_batched"  # under GROUPED_MIN_ROWS real rows
    assert run(_moe.GROUPED_MIN_ROWS, skew=False) == "_batched"  # even: the buffer is ~4/3 of the rows
