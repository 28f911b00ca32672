"""The rollout's decode loop on a GPU: every step one static-shape function, captured once as a CUDA
graph and replayed per token (`rollout.generate`'s path for a dense built-in model on CUDA).

Why: a decode step of a ~100M-parameter model moves ~0.5 ms of memory traffic but launches ~15
kernels per layer, each costing ~20-40 us of host dispatch; eagerly the GPU idles most of the step
(benchmarks/RESULTS.md, GPU session notes). A graph replays the whole step with one launch.

A graph needs fixed shapes and addresses, so the step differs from `_decode.Decoder.step` in three
ways, none of which changes the function computed:

    1. every row is decoded every step (no compaction): a finished row computes garbage that
       `rollout._finish` masks (its tokens after the first EOS become padding);
    2. the step counter t lives on the device (`t`, (1,) int64), advanced by the graph itself:
       slot s = P + t, position p_r = first_r + t, the uniforms U[t], and the output row t;
    3. attention reads a fixed window of W cache slots, W the smallest multiple of WINDOW >= s + 1
       (one graph per window), with the slots after s masked:

           softmax(q K_W^T / sqrt(d_h) + M_pad + M_future) V_W,   M_future[j] = -inf for j > s,

       which equals attention over the filled prefix K_{0..s} exactly (exp(-inf) = 0). With ATTENTION
       "triton" the kernel reads s from the device and skips the slots after it
       (`_triton_attention`): W = S, one graph for every step. A compiled step (`decode(compiled=True)`)
       also takes W = S, whatever its attention: one graph and one compile per rollout shape (with sdpa it
       then reads every slot's key up to S, masked: ~1.7x a short prompt's windowed bytes, not measured).

Precision: the residual stream x stays float32 (as under autocast, where a bf16 matmul output
added to a float32 x is float32), norms run in float32, every matrix product runs in the cache's
dtype (the autocast dtype under autocast, else the weights'), and so does the attention: one
`scaled_dot_product_attention` call (ATTENTION "sdpa", accumulating in float32 inside) or two batched
products around a float32 softmax ("matmul"), or a Triton kernel summing in float32 ("triton").
In float32 the result equals `_decode.Decoder.step` up to summation order (tests/train/test_graph_decode.py).

Without CUDA (or `graphs=False`) the same step runs eagerly: how the tests check it on a CPU.

Memory: a model keeps up to KEEP sessions, each with its KV cache, between rollouts (the price of not
capturing again: 2 n_layers B S H_kv d_h numbers, 3.3 GiB in bf16 for the 100m preset's 256 rows of 320
slots, 265 rounded up to CACHE_ROUND), plus the step's matrices in the cache's dtype; `release(model)` frees them.
A session reads the embedding, learned positions and norm weights in place, so it belongs to the parameters'
storage: the key holds their addresses, and a model whose parameters were moved or replaced (`.to()`, a
`load_state_dict(assign=True)`) gets a new session. Speed: benchmarks/RESULTS.md (bench_graph_decode.py).
"""

from __future__ import annotations

import dataclasses
import warnings
import weakref
from collections import OrderedDict

import torch
from torch.nn import functional as F

from gspo_dynamics.train import _decode, _triton_attention

WINDOW = 64  # cache slots per attention window: one graph per window; at most WINDOW - 1 masked slots read
EOS_CHECK = 16  # steps between host checks that some row is still alive (each check synchronises)
PROMPT_ROUND = 8  # prompts are left-padded to a multiple of this length: fewer shapes, fewer sessions
# the KV cache's slots are rounded up to a multiple of this: the step's shapes (rows, slots) are shared by
# nearby prompt lengths, so a compiled step compiles once for them (`StaticStep`); the extra slots are never read
CACHE_ROUND = 64
KEEP = 2  # sessions (caches and graphs) a model keeps, the most recently used
MATMUL = "mm"  # the weights' layout: "mm" (in, out) or "linear" (out, in) (`StaticStep`)
# how a step attends (`StaticStep.logits`): "triton" (`_triton_attention`: only the slots up to the step's,
# one graph and one compile for every step; "sdpa" where Triton is missing), "sdpa" or "matmul". On an H200
# (benchmarks/RESULTS.md) triton ties sdpa (17.3 / 17.1% of the bound at 100m, 24.0 / 24.7% at 1b), sdpa
# is 5% faster than matmul, and triton inside a compiled step gives 22.8% and 31.7%
ATTENTION = "triton"


def supports(model, device: torch.device) -> bool:
    """Whether `decode` runs `model` on `device`: a dense built-in CausalLM on CUDA with float32
    weights, no active dropout, autocast off or to a half dtype."""
    from gspo_dynamics.train.model import CausalLM  # model imports _attention only; no cycle at call time

    if device.type != "cuda" or not isinstance(model, CausalLM) or model.config.is_moe:
        return False
    if model.embed.weight.dtype != torch.float32:
        return False
    if torch.is_autocast_enabled("cuda") and torch.get_autocast_dtype("cuda") not in (torch.bfloat16, torch.float16):
        return False
    return not (model.training and model.config.dropout > 0)


class StaticStep:
    """The decode-step weights of one dense CausalLM (as `_decode.Decoder`, matrices cast to `dtype`)
    and the step of the module docstring on fixed buffers."""

    def __init__(self, model, dtype: torch.dtype, compiled: bool = False) -> None:
        dec = _decode.Decoder(model)
        self.dec, self.dtype = dec, dtype
        device = model.embed.weight.device
        triton_ok = _triton_attention.available(device) and _triton_attention.works(device, dtype, dec.H, dec.H_kv, dec.dh)
        self.attention = "sdpa" if ATTENTION == "triton" and not triton_ok else ATTENTION
        # `logits`, or (compiled) its inductor compilation, traced on the first, eager step: the norms, casts,
        # rotary and activation kernels fused between the matrix products. The compiled code is shared by every
        # session of the same shapes; a new shape compiles again (~15 s at 100m on an H200), and torch stops
        # compiling a function after its recompile limit (8 shapes), running later ones uncompiled (which
        # `_note_compiled_shape` says, once)
        self.compiled = compiled
        self.forward = torch.compile(self.logits, dynamic=False) if compiled else self.logits
        # Decoder's matrices are (in, out) for x @ W; "linear" stores them (out, in), the layout of
        # nn.Linear, which GPU matrix libraries are tuned for (F.linear(x, W^T) = x @ W)
        self.linear = MATMUL == "linear"
        cast = (lambda w: w.t().to(dtype).contiguous()) if self.linear else (lambda w: w.to(dtype).contiguous())  # noqa: E731
        ln1, w_ext, w_o, ln2, w_up, swiglu, w_down = dec._weights
        self.layers = tuple(zip(ln1, map(cast, w_ext), map(cast, w_o), ln2, map(cast, w_up), swiglu, map(cast, w_down)))
        self.head = cast(dec.head)
        self.embed = dec.embed  # the model's own parameter (detached): current without a refresh
        dec._weights = dec.head = None  # the Decoder's float32 copies: unused once cast (a half or transposed copy)

    def matrices(self) -> list[torch.Tensor]:
        """The matrices built from the parameters (copies): what a refresh overwrites in place. Norm
        weights, the embedding and learned positions are the model's own tensors, always current."""
        return [w for layer in self.layers for w in layer[1:] if isinstance(w, torch.Tensor)] + [self.head]

    def logits(self, token, tables, keys, values, slot: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        """Logits (n, V) float32 of feeding `token` (n,) at cache slot `slot` ((1,) int64 tensor).

        tables: this step's position rows, each (n, D) float32 (`Decoder.position_table`);
        keys, values: per layer (n, H_kv, S, d_h) cache views, written at `slot`;
        keep: (n, 1, 1, W) bool, True where a key slot is attended (W = the window); for "triton", the
        real slots (W = S), later slots than `slot` skipped by the kernel. The attention is
        ATTENTION's (`self.attention`): two batched matrix products around a float32 softmax ("matmul"),
        one `scaled_dot_product_attention` call in the cache's dtype ("sdpa"), or one
        `_triton_attention.decode_attention` call reading the cache's dtype, summing in float32 ("triton")."""
        d, dt = self.dec, self.dtype
        n, W = token.shape[0], keep.shape[-1]
        H_kv, dh, g = d.H_kv, d.dh, d.H // d.H_kv
        D_q, D_qk, D_v, f = d.H * dh, d.D_qk, d.D_v, d.d_ff
        mm = F.linear if self.linear else torch.mm
        x = self.embed.index_select(0, token)  # (n, d) float32: the residual stream
        if d.rope:
            cos, sin = tables
        else:
            x = x + tables[0]
        for (ln1, w_ext, w_o, ln2, w_up, swiglu, w_down), K, V in zip(self.layers, keys, values):
            out = mm(ln1(x).to(dt), w_ext)  # (n, D_ext)
            qk = out[:, :D_qk] * cos + out[:, D_qk + D_v :] * sin if d.rope else out[:, :D_qk].float()  # float32
            K.index_copy_(2, slot, qk[:, D_q:].view(n, H_kv, 1, dh).to(K.dtype))
            V.index_copy_(2, slot, out[:, D_qk : D_qk + D_v].view(n, H_kv, 1, dh).to(V.dtype))
            if self.attention == "triton":  # query head h reads kv head h // g (GQA); the 1/sqrt(d_h) is in q already
                q = qk[:, :D_q].view(n, d.H, dh).to(dt)
                attn = _triton_attention.decode_attention(q, K, V, keep.view(n, W), slot)  # (n, H, d_h)
            elif self.attention == "sdpa":
                q = qk[:, :D_q].view(n, d.H, 1, dh).to(dt)
                attn = F.scaled_dot_product_attention(q, K[:, :, :W], V[:, :, :W], attn_mask=keep, scale=1.0,
                                                      enable_gqa=g > 1)  # (n, H, 1, d_h)
            else:
                q = qk[:, :D_q].view(n, H_kv, g, dh).to(dt)  # query head h reads kv head h // g, as in GQA
                scores = torch.matmul(q, K[:, :, :W].transpose(-1, -2)).float().masked_fill_(~keep, -torch.inf)
                attn = torch.matmul(scores.softmax(-1).to(dt), V[:, :, :W])  # (n, H_kv, g, d_h)
            x = x + mm(attn.reshape(n, -1), w_o)  # float32 + dt: float32
            up = mm(ln2(x).to(dt), w_up)  # (n, f) or (n, 2 f) = [gate | up]
            hidden = F.silu(up[:, :f]) * up[:, f:] if swiglu else F.gelu(up)
            x = x + mm(hidden, w_down)
        return mm(d.ln_f(x).to(dt), self.head).float()  # (n, V)


class _Session:
    """The fixed buffers of one rollout shape on one model: a KV cache, the step's weights (refreshed
    from the model's parameters every rollout, in place), the loop's state and one CUDA graph per
    attention window, captured on first use and replayed by every later rollout of the same shape."""

    def __init__(self, model, B: int, P: int, N: int, tau: float, p: float, eos_id, sampled: bool, device, graphs: bool,
                 draw, compiled: bool):
        self.P, self.N, self.tau, self.p, self.eos_id, self.graphs = P, N, tau, p, eos_id, graphs
        self.draw = draw  # rollout.draw: (logits, tau, p, u) -> (token, log q)
        # the autocast dtype under autocast, else the weights'; slots past P + N are never attended
        self.cache = model.new_kv_cache(B, -(-(P + N) // CACHE_ROUND) * CACHE_ROUND)
        self.step = StaticStep(model, self.cache.keys.dtype, compiled)
        S = self.cache.capacity
        if compiled:
            _note_compiled_shape((B, S, self.cache.keys.dtype, self.step.attention, str(device),
                                  dataclasses.astuple(model.config)))
        self.table = self.step.dec.position_table(P + N, device)  # float32 rows by position (first + t < P + N)
        self.ids = torch.zeros(B, P, dtype=torch.long, device=device)
        self.mask = torch.zeros(B, P, dtype=torch.long, device=device)
        self.real = torch.ones(B, 1, 1, S, dtype=torch.bool, device=device)  # False on the prompts' padding slots
        self.first = torch.zeros(B, dtype=torch.long, device=device)
        self.U = torch.zeros(N, B, device=device) if sampled else None
        self.last = torch.zeros(B, model.config.vocab_size, device=device)
        self.tokens = torch.zeros(N, B, dtype=torch.long, device=device)
        self.logprobs = torch.zeros(N, B, device=device)
        self.alive = torch.ones(B, dtype=torch.bool, device=device)
        self.t = torch.zeros(1, dtype=torch.long, device=device)
        self.slots = torch.arange(S, device=device)
        self.captured: dict[int, torch.cuda.CUDAGraph] = {}
        self.stream = torch.cuda.Stream(device) if graphs else None  # the warm-up's and the captures' stream
        self.warm: set[int] = set()  # the windows whose step ran eagerly once (a compiled step traces there)

    def body(self, W: int) -> None:
        """Step t: draw token t from `last`, record it, feed it at slot P + t (window W), t += 1."""
        t = self.t
        u = None if self.U is None else self.U.index_select(0, t)[0]
        token, token_logp = self.draw(self.last, self.tau, self.p, u)
        self.tokens.index_copy_(0, t, token[None])
        self.logprobs.index_copy_(0, t, token_logp[None])
        if self.eos_id is not None:
            self.alive.logical_and_(token != self.eos_id)
        slot = t + self.P
        if self.step.attention == "triton":
            keep = self.real  # (B, 1, 1, S): the kernel reads the real slots up to this one
        else:
            keep = self.real[..., :W] & (self.slots[:W] <= slot)  # (B, 1, 1, W): real slots up to this one
        tables = tuple(x.index_select(0, self.first + t) for x in self.table)
        self.last.copy_(self.step.forward(token, tables, list(self.cache.keys), list(self.cache.values), slot, keep))
        t.add_(1)

    def run(self, model, prompt_ids, prompt_mask, U) -> int:
        """Decode one rollout into `tokens` and `logprobs`; the number of tokens fed after the prompt."""
        for mine, fresh in zip(self.step.matrices(), StaticStep(model, self.step.dtype).matrices()):
            mine.copy_(fresh)  # the sampler is the model as it is now
        extra = self.P - prompt_ids.shape[1]  # left padding up to the session's prompt length
        self.ids.zero_()[:, extra:] = prompt_ids
        self.mask.zero_()[:, extra:] = prompt_mask
        self.cache.length = 0
        self.cache.key_mask.zero_()
        self.cache.n_real.zero_()
        self.last.copy_(model(self.ids, attention_mask=self.mask, kv_cache=self.cache)[0][:, -1])
        self.first.copy_(prompt_mask.sum(-1))
        self.real.fill_(True)[:, 0, 0, : self.P] = self.mask.bool()
        if U is not None:
            self.U.copy_(U)
        self.alive.fill_(True)
        self.t.zero_()
        with torch.autocast(prompt_ids.device.type, enabled=False):  # the steps' dtypes are explicit (module docstring)
            fed = self._steps(prompt_ids.device)
        if fed == self.N - 1:  # the last token: drawn, never fed
            token, token_logp = self.draw(self.last, self.tau, self.p, None if U is None else U[self.N - 1])
            self.tokens[self.N - 1], self.logprobs[self.N - 1] = token, token_logp
        self.cache.length = self.P + fed
        return fed

    def _steps(self, device) -> int:
        """Run `body` for steps 0 .. N - 2 (eagerly; or, with graphs, as replays of one graph per
        window after one eager warm-up step the first time) until every row has drawn EOS."""
        fed = 0
        for i in range(self.N - 1):
            if self.step.attention == "triton" or self.step.compiled:
                W = self.cache.capacity  # triton skips the later slots itself; compiled: one graph, one compile
            else:
                W = min(self.cache.capacity, -(-(self.P + i + 1) // WINDOW) * WINDOW)  # the window holding slot P + i
            if not self.graphs:
                self.body(W)
            elif W not in self.warm:  # eagerly on the capture stream: the warm-up a capture needs, per window
                self.stream.wait_stream(torch.cuda.current_stream(device))
                with torch.cuda.stream(self.stream):
                    self.body(W)
                torch.cuda.current_stream(device).wait_stream(self.stream)
                self.warm.add(W)
            else:
                if W not in self.captured:  # recorded, not run: the state is untouched until the replay
                    self.captured[W] = torch.cuda.CUDAGraph()
                    # thread_local: other threads' CUDA calls (a DDP watchdog's event queries) do not void the capture
                    with torch.cuda.graph(self.captured[W], stream=self.stream, capture_error_mode="thread_local"):
                        self.body(W)
                self.captured[W].replay()
            fed = i + 1
            if self.eos_id is not None and fed % EOS_CHECK == 0 and not bool(self.alive.any()):
                break  # every row finished: the rest is padding
        return fed


# model -> its sessions by rollout shape, least recently used first (weak: a model's go with it)
_SESSIONS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# the shapes the compiled step has met in this process: torch keeps one compiled entry of `StaticStep.logits` per
# shape and, past its recompile limit, runs further shapes uncompiled without an error (`_note_compiled_shape`)
_COMPILED_SHAPES: set = set()


def _note_compiled_shape(shape) -> None:
    """Record a compiled step's shape (rows, cache slots, dtype, attention, device, model config); at the first
    shape past torch's recompile limit, one RuntimeWarning, since from there new shapes decode uncompiled."""
    if shape in _COMPILED_SHAPES:
        return
    _COMPILED_SHAPES.add(shape)
    config = torch._dynamo.config
    limit = getattr(config, "recompile_limit", getattr(config, "cache_size_limit", 8))
    if len(_COMPILED_SHAPES) == limit + 1:
        warnings.warn(f"the compiled decode step has met {limit + 1} rollout shapes, past torch's recompile limit "
                      f"({limit}): this and later new shapes decode uncompiled (slower). Fewer shapes (batch sizes, "
                      "prompt lengths) or a larger torch._dynamo.config.recompile_limit keep it compiled",
                      RuntimeWarning, stacklevel=4)


def release(model=None) -> None:
    """Free the sessions (KV caches and graphs) of `model`, or of every model: a session keeps its cache,
    2 n_layers B S H_kv d_h numbers in the cache's dtype (S = P + N rounded up to CACHE_ROUND), between rollouts so that the next one of
    the same shape replays its graphs; release it where that memory is wanted back (the next rollout of
    that shape captures again)."""
    if model is None:
        _SESSIONS.clear()
    else:
        _SESSIONS.pop(model, None)


def decode(model, prompt_ids, prompt_mask, N, tau, p, eos_id, U, draw, graphs: bool | None = None, compiled: bool = False):
    """Raw tokens and log q (B, N) of the rollout, meaningful up to each row's first EOS (as
    `rollout._fast_loop`; `rollout._finish` masks the rest): views of the session's buffers, valid until
    its next rollout (clone them). `draw` is `rollout.draw`; `graphs`: replay CUDA graphs (None: when
    the device is CUDA); `compiled`: the step through torch.compile (`StaticStep`; 1.28-1.33x the rollout
    on an H200 with the Triton attention, benchmarks/RESULTS.md).

    The prompt is left-padded to a multiple of PROMPT_ROUND tokens (masked slots: the same function)
    so that batches of nearby prompt lengths share a session; a model keeps its KEEP most recently
    used sessions."""
    B, P = prompt_ids.shape
    device = prompt_ids.device
    graphs = device.type == "cuda" if graphs is None else graphs
    P_static = max(P, min(-(-P // PROMPT_ROUND) * PROMPT_ROUND, model.config.max_seq_len - N))
    dtype = torch.get_autocast_dtype(device.type) if torch.is_autocast_enabled(device.type) else model.embed.weight.dtype
    storage = tuple(q.data_ptr() for q in model.parameters())  # the tensors the session reads in place
    key = (B, P_static, N, tau, p, eos_id, U is not None, dtype, device, graphs, compiled, storage)
    sessions = _SESSIONS.setdefault(model, OrderedDict())
    if key not in sessions:
        sessions[key] = _Session(model, B, P_static, N, tau, p, eos_id, U is not None, device, graphs, draw, compiled)
        while len(sessions) > KEEP:
            sessions.popitem(last=False)
    sessions.move_to_end(key)
    session = sessions[key]
    session.run(model, prompt_ids, prompt_mask, U)
    return session.tokens.t(), session.logprobs.t()
