"""The static-shape decode loop (`_graph_decode`, the rollout's path on CUDA) against the reference
path (the model's own cached forward every step): same tokens, same sampler log-probs.

On the CPU the loop runs eagerly (`graphs=False`): the function a graph would replay. The CUDA
cases (`gpu` marker) replay the graphs and check them against the same loop run eagerly on the GPU
(the same kernels: equal results) and against the reference path."""

import functools
import gc
import warnings
import weakref

import pytest
import torch

from gspo_dynamics.train import _graph_decode, _triton_attention
from gspo_dynamics.train.rollout import _finish, completion_log_probs, draw, generate
from gspo_dynamics.train.tokenizer import Tokenizer
from _train_helpers import CUDA, sharp_model
from test_decode import DENSE, LOGP_TOL, prompts

TOK = Tokenizer()
# the Triton kernel: compiled on CUDA, through Triton's interpreter on the CPU (tests/conftest.py); skipped without Triton
VARIANTS = [("matmul", "mm"), ("sdpa", "mm"), ("sdpa", "linear")]
NEEDS_TRITON = pytest.mark.skipif(not _triton_attention.available(torch.device("cpu")),
                                  reason="needs Triton, on a CPU through its interpreter (tests/conftest.py)")
NEEDS_TRITON_CUDA = pytest.mark.skipif(_triton_attention.triton is None, reason="needs Triton")


@pytest.fixture(autouse=True)
def _sdpa_unless_set(monkeypatch):
    """ATTENTION "sdpa" unless a test sets another: on a CPU the Triton kernel runs through Triton's
    interpreter, ~0.1 s a call, so only the tests written for it use it there."""
    monkeypatch.setattr(_graph_decode, "ATTENTION", "sdpa")
OPTIONS = (dict(temperature=0.0), dict(), dict(temperature=0.8, top_p=0.9))
# bf16 keeps 8 bits of mantissa: logits of size ~5 (scale-3 weights) carry ~2^-8 x 5 = 0.02 of
# rounding per product, a few products deep; 0.15 in a log-prob is ~7 such roundings, far below the
# O(1) gaps between the log-probs of different tokens.
BF16_LOGP_TOL = 0.15


def static_rollout(model, ids, mask, N, graphs=False, temperature=1.0, top_p=1.0, seed=3, compiled=False):
    """`generate`'s Rollout, decoded by `_graph_decode.decode` (the same uniforms as `generate`)."""
    B, P = ids.shape
    U = None if temperature == 0.0 else torch.rand(N, B, generator=torch.Generator(ids.device).manual_seed(seed), device=ids.device)
    with torch.inference_mode():
        tokens, logprobs = _graph_decode.decode(model, ids, mask, N, temperature, top_p, TOK.eos_id, U, draw, graphs, compiled)
    return _finish(ids, mask, tokens.clone(), logprobs.clone(), TOK.eos_id, TOK.pad_id, None)


def assert_same(a, b, tol=LOGP_TOL):
    assert torch.equal(a.sequences, b.sequences)
    assert torch.equal(a.attention_mask, b.attention_mask)
    assert torch.equal(a.truncated, b.truncated)
    assert torch.allclose(a.sampler_logprobs, b.sampler_logprobs, atol=tol, rtol=0)


@pytest.mark.parametrize("attention, matmul", VARIANTS)
@pytest.mark.parametrize("window", [4, 64])
@pytest.mark.parametrize("overrides", DENSE)
@pytest.mark.parametrize("kind", ["padded", "equal", "one_token"])
def test_static_loop_equals_reference_rollout(overrides, kind, window, attention, matmul, monkeypatch):
    """float32 on the CPU, greedy and sampled, either attention and weight layout: the same tokens exactly and the
    sampler log-probs to float32 tolerance (test_decode.py's reasons), with windows of 4 slots
    (several windows, the future slots of each masked) and of 64 (one window over the whole cache)."""
    monkeypatch.setattr(_graph_decode, "WINDOW", window)
    monkeypatch.setattr(_graph_decode, "ATTENTION", attention)
    monkeypatch.setattr(_graph_decode, "MATMUL", matmul)
    model = sharp_model(TOK.vocab_size, seed=len(overrides), **overrides)
    ids, mask = prompts(kind)
    for options in OPTIONS:
        ref = generate(model, ids, mask, 14, eos_id=TOK.eos_id, pad_id=TOK.pad_id, fast=False,
                       generator=torch.Generator().manual_seed(3), **options)
        assert_same(static_rollout(model, ids, mask, 14, **options), ref)


def test_static_loop_stops_when_every_row_has_ended(monkeypatch):
    """With a host check every step, the loop stops at the step where the last row drew EOS (before
    the last step: the final draw is skipped) and the rollout still equals the reference's."""
    monkeypatch.setattr(_graph_decode, "EOS_CHECK", 1)
    model = sharp_model(TOK.vocab_size, seed=2)  # its longest completion: 27 tokens
    ids, mask = prompts("equal")
    N = 30
    ref = generate(model, ids, mask, N, eos_id=TOK.eos_id, pad_id=TOK.pad_id, fast=False, generator=torch.Generator().manual_seed(3))
    assert not ref.truncated.any()  # the precondition: every row ends before N
    assert_same(static_rollout(model, ids, mask, N), ref)


@pytest.mark.parametrize("overrides", DENSE[:3])
def test_sessions_are_reused_with_the_models_current_weights(overrides):
    """A second rollout of the same shape reuses the first one's session (cache and graphs) with the
    weights refreshed after an in-place update (an optimizer step), and prompts of another length
    within PROMPT_ROUND share it too (left padding, masked): each rollout equals the reference path
    on the model as it is then. A third shape evicts the least recently used of KEEP = 2 sessions. Parameters
    whose storage is replaced get a new session (the old one would read the old tensors), and no session keeps
    the Decoder's float32 copies of the matrices it cast."""
    model = sharp_model(TOK.vocab_size, seed=5, **overrides)
    padded, shorter = prompts("padded"), TOK.batch_encode(["1+2", "3", "", "44+5", "6", "7+7", "8"])
    assert shorter[0].shape[1] < padded[0].shape[1] <= _graph_decode.PROMPT_ROUND

    def check(ids, mask):
        ref = generate(model, ids, mask, 14, eos_id=TOK.eos_id, pad_id=TOK.pad_id, fast=False, generator=torch.Generator().manual_seed(3))
        assert_same(static_rollout(model, ids, mask, 14), ref)

    check(*padded)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())))
    check(*padded)
    check(*shorter)
    assert len(_graph_decode._SESSIONS[model]) == 1
    check(padded[0][:3], padded[1][:3])  # another batch size: a second session
    check(*prompts("one_token"))  # a third: the first is evicted
    assert len(_graph_decode._SESSIONS[model]) == _graph_decode.KEEP == 2
    with torch.no_grad():  # storage replaced, not updated in place (as .to() or load_state_dict(assign=True) do)
        model.embed.weight.data = model.embed.weight.data.flip(0).clone()
        for block in model.blocks:
            block.ln1.weight.data = 1.5 * block.ln1.weight.data
    check(*prompts("one_token"))  # a new session reads the new tensors
    assert all(session.step.dec._weights is None for session in _graph_decode._SESSIONS[model].values())


def test_a_models_sessions_go_with_it():
    """The sessions hold no reference to their model: a model deleted is collected, and its sessions (caches,
    graphs) with it; `release` frees a live model's."""
    model = sharp_model(TOK.vocab_size, seed=1)
    static_rollout(model, *prompts(), 6)
    alive = weakref.ref(model)
    before = len(_graph_decode._SESSIONS)
    del model
    gc.collect()
    assert alive() is None and len(_graph_decode._SESSIONS) == before - 1
    kept = sharp_model(TOK.vocab_size, seed=2)
    static_rollout(kept, *prompts(), 6)
    _graph_decode.release(kept)
    assert kept not in _graph_decode._SESSIONS


@pytest.mark.parametrize("attention", ["matmul", "sdpa"])
@pytest.mark.parametrize("overrides", DENSE[:3])
def test_static_loop_in_bf16_matches_float32_logprobs(overrides, attention, monkeypatch):
    """Under CPU bf16 autocast (a bf16 cache; bf16 matrix products, float32 residual stream and
    softmax): the sampler log-probs of the drawn tokens equal the float32 teacher-forced log-probs
    of the same sequences within BF16_TOL_LOGP, and the cache stayed bf16."""
    monkeypatch.setattr(_graph_decode, "ATTENTION", attention)
    model = sharp_model(TOK.vocab_size, seed=11, scale=3.0, **overrides)
    ids, mask = prompts()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert model.new_kv_cache(1, 2).keys.dtype == torch.bfloat16
        ro = static_rollout(model, ids, mask, 14)
    with torch.no_grad():
        exact, _ = completion_log_probs(model, ro.sequences, ro.attention_mask, ro.completion_mask)
    assert torch.allclose(ro.sampler_logprobs, exact, atol=BF16_LOGP_TOL, rtol=0)


def test_supports_only_cuda_dense_float32_models():
    model = sharp_model(TOK.vocab_size)
    assert not _graph_decode.supports(model, torch.device("cpu"))
    assert not _graph_decode.supports(sharp_model(TOK.vocab_size, n_experts=4, top_k=2), torch.device("cuda"))
    assert not _graph_decode.supports(model.to(torch.bfloat16), torch.device("cuda"))


@pytest.mark.parametrize("device", [CUDA])
@pytest.mark.parametrize("attention, matmul", [*VARIANTS, pytest.param("triton", "mm", marks=NEEDS_TRITON_CUDA)])
@pytest.mark.parametrize("overrides", DENSE)
def test_graph_replays_equal_the_eager_loop_on_cuda(overrides, attention, matmul, device, monkeypatch):
    """On CUDA, float32 and bf16 autocast: graph replays give exactly the eager loop's tokens and
    log-probs (the same kernels), and in float32 the reference path's tokens; `generate` takes the
    graph path."""
    monkeypatch.setattr(_graph_decode, "WINDOW", 8)  # several windows: several graphs captured
    monkeypatch.setattr(_graph_decode, "ATTENTION", attention)
    monkeypatch.setattr(_graph_decode, "MATMUL", matmul)
    model = sharp_model(TOK.vocab_size, seed=len(overrides), device=device, **overrides)
    ids, mask = prompts("padded", device)
    assert _graph_decode.supports(model, torch.device(device))
    for options in OPTIONS:
        graphed = static_rollout(model, ids, mask, 14, graphs=True, **options)
        assert_same(graphed, static_rollout(model, ids, mask, 14, graphs=False, **options), tol=0.0)
        ref = generate(model, ids, mask, 14, eos_id=TOK.eos_id, pad_id=TOK.pad_id, fast=False,
                       generator=torch.Generator(device).manual_seed(3), **options)
        assert_same(graphed, ref)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            half = static_rollout(model, ids, mask, 14, graphs=True, **options)
            assert_same(half, static_rollout(model, ids, mask, 14, graphs=False, **options), tol=0.0)


@NEEDS_TRITON
@pytest.mark.parametrize("overrides, kind", [  # H_kv = H, H / 2 and 1, each kind of prompt twice; the rest slow (interpreted)
    (DENSE[0], "padded"), (DENSE[2], "one_token"), (DENSE[3], "padded"), pytest.param(DENSE[0], "one_token", marks=pytest.mark.slow),
    pytest.param(DENSE[2], "padded", marks=pytest.mark.slow), (DENSE[3], "one_token")])
def test_static_loop_with_the_triton_kernel_equals_reference_rollout(overrides, kind, monkeypatch):
    """ATTENTION "triton" on the CPU (Triton's interpreter), float32, sampled: the reference path's tokens
    exactly and its log-probs to float32 tolerance, the step's window being the whole cache (W = S)."""
    monkeypatch.setattr(_graph_decode, "ATTENTION", "triton")
    model = sharp_model(TOK.vocab_size, seed=len(overrides), **overrides)
    ids, mask = prompts(kind)
    ref = generate(model, ids, mask, 10, eos_id=TOK.eos_id, pad_id=TOK.pad_id, fast=False,
                   generator=torch.Generator().manual_seed(3), temperature=0.8, top_p=0.9)
    assert_same(static_rollout(model, ids, mask, 10, temperature=0.8, top_p=0.9), ref)
    assert next(iter(_graph_decode._SESSIONS[model].values())).step.attention == "triton"


@NEEDS_TRITON
def test_static_loop_with_the_triton_kernel_in_bf16_matches_float32_logprobs(monkeypatch):
    """As test_static_loop_in_bf16_matches_float32_logprobs, through the Triton kernel (a bf16 cache)."""
    monkeypatch.setattr(_graph_decode, "ATTENTION", "triton")
    model = sharp_model(TOK.vocab_size, seed=11, scale=3.0, **DENSE[2])
    ids, mask = prompts()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ro = static_rollout(model, ids, mask, 10)
    with torch.no_grad():
        exact, _ = completion_log_probs(model, ro.sequences, ro.attention_mask, ro.completion_mask)
    assert torch.allclose(ro.sampler_logprobs, exact, atol=BF16_LOGP_TOL, rtol=0)


def test_triton_attention_falls_back_to_sdpa_where_it_cannot_run(monkeypatch):
    """Without Triton, or off CUDA with the interpreter off, a step asked for "triton" attends by "sdpa"."""
    monkeypatch.setattr(_graph_decode, "ATTENTION", "triton")
    monkeypatch.setattr(_triton_attention, "_INTERPRETED", False)
    assert _graph_decode.StaticStep(sharp_model(TOK.vocab_size), torch.float32).attention == "sdpa"
    monkeypatch.setattr(_triton_attention, "_INTERPRETED", True)
    monkeypatch.setattr(_triton_attention, "triton", None)
    assert _graph_decode.StaticStep(sharp_model(TOK.vocab_size), torch.float32).attention == "sdpa"


@NEEDS_TRITON
def test_a_triton_kernel_that_fails_to_build_leaves_the_step_on_sdpa(monkeypatch):
    """A kernel Triton cannot build or run (an older Triton, a driver) is probed once per (device, dtype, heads):
    one RuntimeWarning, the step attends by sdpa, and a second step asks no second probe."""
    class Broken:
        def __getitem__(self, grid):
            raise RuntimeError("cannot build\nsecond line")

    monkeypatch.setattr(_graph_decode, "ATTENTION", "triton")
    monkeypatch.setattr(_triton_attention, "_chunk_kernel", Broken())
    monkeypatch.setattr(_triton_attention, "_WORKS", {})
    model = sharp_model(TOK.vocab_size)
    with pytest.warns(RuntimeWarning, match="RuntimeError: cannot build\\); the decode step attends by sdpa"):
        assert _graph_decode.StaticStep(model, torch.float32).attention == "sdpa"
    assert list(_triton_attention._WORKS.values()) == [False]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second probe, no second warning
        assert _graph_decode.StaticStep(model, torch.float32).attention == "sdpa"


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch's own, raised while compiling
# on the CPU inductor's first compile costs ~20 s of CPU: the CPU case is slow, as is inductor's case of
# test_prompts_of_nearby_lengths_share_one_compiled_step (the default run traces that one with aot_eager)
@pytest.mark.parametrize("device, attention", [pytest.param("cpu", "sdpa", marks=pytest.mark.slow),
                                               pytest.param(*CUDA.values, "sdpa", marks=CUDA.marks),
                                               pytest.param(*CUDA.values, "triton", marks=(*CUDA.marks, NEEDS_TRITON_CUDA))])
def test_compiled_step_equals_reference_rollout(device, attention, monkeypatch):
    """A compiled step (`decode(compiled=True)`: the logits through torch.compile, then captured on CUDA): in float32 the reference
    path's tokens exactly and its log-probs to float32 tolerance (inductor's fused kernels sum in another
    order); on CUDA with sdpa (8-slot windows asked for: a compiled step takes one window, the whole cache)
    and with the Triton kernel inside the compiled step. One graph is captured."""
    monkeypatch.setattr(_graph_decode, "ATTENTION", attention)
    if device == "cuda":
        monkeypatch.setattr(_graph_decode, "WINDOW", 8)
    model = sharp_model(TOK.vocab_size, seed=3, device=device, **DENSE[2])
    ids, mask = prompts("padded", device)
    ref = generate(model, ids, mask, 14, eos_id=TOK.eos_id, pad_id=TOK.pad_id, fast=False,
                   generator=torch.Generator(device).manual_seed(3), temperature=0.8)
    assert_same(static_rollout(model, ids, mask, 14, graphs=device == "cuda", temperature=0.8, compiled=True), ref)
    session = next(iter(_graph_decode._SESSIONS[model].values()))
    assert len(session.captured) == (device == "cuda") and session.warm <= {session.cache.capacity}


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch's own, raised while compiling
@pytest.mark.parametrize("backend", ["aot_eager", pytest.param("inductor", marks=pytest.mark.slow)])
def test_prompts_of_nearby_lengths_share_one_compiled_step(backend, monkeypatch):
    """Two prompt batches padded to 8 and 16 tokens, on two models with other weights (two sessions), have caches
    of the same CACHE_ROUND-rounded capacity, so the compiled step traces once (torch's frame counter) and each
    rollout equals its own model's reference path (no session's weights are baked into the shared code); each session
    steps in one window, the whole cache, and captures no graph on the CPU. Traced by dynamo either way; compiled by
    inductor (torch.compile's default, ~20 s of CPU the first time: slow) or run by aot_eager (the same graph eagerly)."""
    from torch._dynamo.utils import counters

    if backend != "inductor":
        monkeypatch.setattr(torch, "compile", functools.partial(torch.compile, backend=backend))

    models = [sharp_model(TOK.vocab_size, seed=seed, **DENSE[2]) for seed in (1, 2)]
    batches = TOK.batch_encode(["1", "2", "", "4"]), TOK.batch_encode(["12+34+56+78=", "5+6=", "", "7"])
    assert batches[0][0].shape[1] <= _graph_decode.PROMPT_ROUND < batches[1][0].shape[1]
    torch._dynamo.reset()
    counters.clear()
    for model, (ids, mask) in zip(models, batches):
        ref = generate(model, ids, mask, 14, eos_id=TOK.eos_id, pad_id=TOK.pad_id, fast=False,
                       generator=torch.Generator().manual_seed(3), temperature=0.8)
        assert_same(static_rollout(model, ids, mask, 14, temperature=0.8, compiled=True), ref)
        session = next(iter(_graph_decode._SESSIONS[model].values()))
        assert session.cache.capacity == _graph_decode.CACHE_ROUND
        assert not session.captured and session.warm <= {session.cache.capacity}  # one window, no graph on the CPU
    assert counters["frames"]["ok"] == 1


def test_a_compiled_step_past_torchs_recompile_limit_says_so_once(monkeypatch):
    """With torch's recompile limit at 1, the second rollout shape (another batch size) warns that new shapes decode
    uncompiled; the first shape again, and a third, do not warn again. (torch.compile is stubbed: the count is
    ours, kept per shape whatever torch does.) The limit is set by torch's own config.patch: undoing a monkeypatch
    on torch's config module deletes the key (torch 2.13), and every later torch.compile then fails on it."""
    monkeypatch.setattr(torch, "compile", lambda fn, **_: fn)
    monkeypatch.setattr(_graph_decode, "_COMPILED_SHAPES", set())
    model = sharp_model(TOK.vocab_size, seed=1, **DENSE[2])
    name = "recompile_limit" if hasattr(torch._dynamo.config, "recompile_limit") else "cache_size_limit"

    def rollout(prompts):
        ids, mask = TOK.batch_encode(prompts)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            static_rollout(model, ids, mask, 6, compiled=True)
        return [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]

    with torch._dynamo.config.patch(**{name: 1}):
        assert rollout(["1", "2"]) == []
        said = rollout(["1", "2", "3"])
        assert len(said) == 1 and "past torch's recompile limit (1)" in said[0]
        assert rollout(["4", "5"]) == [] and rollout(["1", "2", "3", "4"]) == []
    assert getattr(torch._dynamo.config, name) != 1
