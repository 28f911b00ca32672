"""The decode step's attention as one Triton kernel: one query per row against the KV cache, reading
only the slots up to the step's own (`_graph_decode`'s ATTENTION "triton").

Why: at decode, the keys and values of every earlier position are the step's largest memory traffic
(100m preset, 256 rows of ~130 cached positions: ~1.2 GB per step against ~0.2 GB of weights), so the
attention's read of the cache is the rollout's bandwidth bound (`bench_trainer.decode_bound`). The
"sdpa" and "matmul" paths read a whole 64-slot window past the current slot and materialise a mask;
this kernel takes the slot as a device scalar (so one CUDA graph serves every step) and a row's
real-slot flags, and skips the loads of every other slot.

For row b and key/value head j, with the query heads h = j g .. j g + g - 1 (grouped-query attention,
g = H / H_kv) and the attended slots A_b = {n <= s : real_b[n]}:

    o_{b,h} = sum_{n in A_b} softmax_n(q_{b,h} . k_{b,j,n}) v_{b,j,n}

(the query arrives scaled by 1/sqrt(d_h), as in `StaticStep.logits`; A_b must hold the slot s itself, as it
does in a decode step, where every slot from the prompt's end on is real). The slots are cut into C chunks
(split-K, "flash-decoding"), one program per (b, j, chunk), each a running-max softmax over its blocks:

    m' = max(m, max_n x_n),  l' = l e^{m - m'} + sum_n e^{x_n - m'},  a' = a e^{m - m'} + sum_n e^{x_n - m'} v_n

and the chunks are merged with the same rescaling, o = sum_c e^{m_c - M} a_c / sum_c e^{m_c - M} l_c,
M = max_c m_c (one chunk: o = a / l, no merge). Sums run in float32 whatever the cache's dtype; the
running max starts at -1e30, not -inf, so a chunk with no attended slot gives l = 0 and weight
e^{-1e30 - M} = 0 in the merge, not NaN. The products are tensor-core `tl.dot`s over the g query heads
padded to 16 rows: for the built-in presets (g = 1) 15 of the 16 rows are zeros, work a bandwidth-bound
call can spare. Checked against softmax attention with a boolean mask (tests/train/test_triton_attention.py;
on a CPU through Triton's interpreter, TRITON_INTERPRET=1). Speed on an H200: a tie with sdpa alone, 36%
of the bandwidth inside the trainer's step (benchmarks/RESULTS.md).

Triton is optional (it ships with CUDA builds of torch): without it `available()` is False and the
decode step attends by "sdpa".
"""

from __future__ import annotations

import os
import warnings

import torch

try:  # pragma: no cover - which branch runs depends on the install
    import triton
    import triton.language as tl
except ImportError:  # CPU-only torch builds ship without Triton
    triton = None

# key/value-block elements per program, BLOCK x D_PAD (64 x 128 at d_h = 128)
REGISTER_BUDGET = 8192
DOT_MIN = 16  # tl.dot's smallest side: the query heads of a group and d_h are padded up to it
PROGRAMS_PER_SM = 2  # split the slots into chunks until the grid has this many programs per SM
MAX_CHUNKS = 8  # the merge holds every chunk's (G_PAD, D_PAD) sums at once: at most this many
MIN_CAPABILITY = (8, 0)  # bf16 tensor-core tl.dot: Ampere or later
# Triton picks interpretation when it defines a kernel (at import), so the flag is read once, here
_INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"


def available(device: torch.device) -> bool:
    """Whether `decode_attention` runs on `device`: Triton installed, and the device a CUDA GPU of compute
    capability MIN_CAPABILITY or later (or Triton's interpreter on, which runs the kernels on the CPU: the
    tests' route)."""
    if triton is None:
        return False
    if device.type == "cuda":
        return torch.cuda.get_device_capability(device) >= MIN_CAPABILITY
    return _INTERPRETED


_WORKS: dict[tuple, bool] = {}  # (device, dtype, H, H_kv, d_h) -> whether the kernel built and ran there


def works(device: torch.device, dtype: torch.dtype, heads: int, kv_heads: int, head_dim: int) -> bool:
    """Whether the kernel builds and runs for these heads on `device`: a probe call on a 2-row, 16-slot cache,
    once per process and key. A Triton or driver that cannot build it (an older Triton's `tl.dot`, say) leaves
    the decode step on sdpa with one RuntimeWarning, rather than failing the rollout."""
    key = (str(device), dtype, heads, kv_heads, head_dim)
    if key not in _WORKS:
        try:
            q = torch.zeros(2, heads, head_dim, device=device, dtype=dtype)
            cache = torch.zeros(2, kv_heads, 16, head_dim, device=device, dtype=dtype)
            real = torch.ones(2, 16, dtype=torch.bool, device=device)
            decode_attention(q, cache, cache.clone(), real, torch.tensor([3], device=device))
            _WORKS[key] = True
        except Exception as e:  # noqa: BLE001 - any failure to build or run means: use sdpa
            warnings.warn(f"the Triton decode-attention kernel failed on {device} ({type(e).__name__}: "
                          f"{(str(e).splitlines() or [''])[0][:200]}); the decode step attends by sdpa", RuntimeWarning,
                          stacklevel=2)
            _WORKS[key] = False
    return _WORKS[key]


def _pow2(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


if triton is not None:

    @triton.jit
    def _chunk_kernel(q_ptr, k_ptr, v_ptr, real_ptr, slot_ptr, o_ptr, m_ptr, l_ptr, a_ptr,
                      sq_b, sq_h, sk_b, sk_h, sk_s, sv_b, sv_h, sv_s, sr_b, so_b, so_h,
                      H_kv, S, D, CHUNK, n_chunks,
                      G: tl.constexpr, G_PAD: tl.constexpr, D_PAD: tl.constexpr, BLOCK: tl.constexpr,
                      N_BLOCKS: tl.constexpr, SINGLE: tl.constexpr, PRECISION: tl.constexpr, DOT_F32: tl.constexpr,
                      FLAGS_IN_LOADS: tl.constexpr):
        """Program (b H_kv + j, c): the running-max softmax of query heads j g .. j g + g - 1 of row b
        over the attended slots of chunk c; with SINGLE (one chunk) the output o, else the chunk's
        (m, l, a) for `_merge_kernel`. The products are tensor-core `tl.dot`s over G_PAD >= 16 query
        rows (the rows past g are zeros, never stored)."""
        bj = tl.program_id(0)
        c = tl.program_id(1)
        b = (bj // H_kv).to(tl.int64)  # row offsets b * stride pass 2^31 in a large cache
        j = bj % H_kv
        slot = tl.load(slot_ptr)
        gi = tl.arange(0, G_PAD)
        di = tl.arange(0, D_PAD)
        q_mask = (gi[:, None] < G) & (di[None, :] < D)
        q = tl.load(q_ptr + b * sq_b + (j * G + gi)[:, None] * sq_h + di[None, :], mask=q_mask, other=0.0)
        m = tl.full([G_PAD], -1e30, tl.float32)
        l = tl.zeros([G_PAD], tl.float32)
        a = tl.zeros([G_PAD, D_PAD], tl.float32)
        start = c * CHUNK
        for i in range(N_BLOCKS):  # a fixed trip count: the slot is a device value (masked loads past it read nothing)
            n = start + i * BLOCK + tl.arange(0, BLOCK)
            filled = (n <= slot) & (n < S)  # n < start + CHUNK holds: CHUNK = N_BLOCKS BLOCK
            ok = filled & (tl.load(real_ptr + b * sr_b + n, mask=filled, other=0) != 0)
            # FLAGS_IN_LOADS: the flags mask the loads (padding slots not read, the loads wait for the flags);
            # else the loads take every filled slot and the flags mask the scores and values only
            kv_mask = (ok if FLAGS_IN_LOADS else filled)[:, None] & (di[None, :] < D)
            k = tl.load(k_ptr + b * sk_b + j * sk_h + n[:, None] * sk_s + di[None, :], mask=kv_mask, other=0.0)
            if DOT_F32:  # Triton's interpreter multiplies half types wrongly: the same numbers, in float32
                x = tl.dot(q.to(tl.float32), tl.trans(k.to(tl.float32)), input_precision="ieee")
            else:
                x = tl.dot(q, tl.trans(k), input_precision=PRECISION)  # (G_PAD, BLOCK) float32
            x = tl.where(ok[None, :], x, float("-inf"))
            m_new = tl.maximum(m, tl.max(x, axis=1))
            scale = tl.exp(m - m_new)
            p = tl.exp(x - m_new[:, None])
            v = tl.load(v_ptr + b * sv_b + j * sv_h + n[:, None] * sv_s + di[None, :], mask=kv_mask, other=0.0)
            if not FLAGS_IN_LOADS:
                v = tl.where(ok[:, None], v, 0.0)  # a padding slot's value may be anything: 0 x NaN is NaN
            l = l * scale + tl.sum(p, axis=1)
            if DOT_F32:
                a = a * scale[:, None] + tl.dot(p.to(v.dtype).to(tl.float32), v.to(tl.float32), input_precision="ieee")
            else:
                a = a * scale[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PRECISION)
            m = m_new
        if SINGLE:
            o = a / l[:, None]
            tl.store(o_ptr + b * so_b + (j * G + gi)[:, None] * so_h + di[None, :], o.to(o_ptr.dtype.element_ty), mask=q_mask)
        else:
            row = bj * n_chunks + c
            tl.store(m_ptr + row * G_PAD + gi, m)
            tl.store(l_ptr + row * G_PAD + gi, l)
            tl.store(a_ptr + (row * G_PAD + gi)[:, None] * D_PAD + di[None, :], a)

    @triton.jit
    def _merge_kernel(o_ptr, m_ptr, l_ptr, a_ptr, so_b, so_h, H_kv, D, n_chunks,
                      G: tl.constexpr, G_PAD: tl.constexpr, D_PAD: tl.constexpr, C_PAD: tl.constexpr):
        """Program b H_kv + j: o = sum_c e^{m_c - M} a_c / sum_c e^{m_c - M} l_c over its chunks."""
        bj = tl.program_id(0)
        b = (bj // H_kv).to(tl.int64)
        j = bj % H_kv
        ci = tl.arange(0, C_PAD)
        gi = tl.arange(0, G_PAD)
        di = tl.arange(0, D_PAD)
        rows = bj * n_chunks + ci
        c_ok = ci < n_chunks
        m = tl.load(m_ptr + rows[:, None] * G_PAD + gi[None, :], mask=c_ok[:, None], other=-1e30)  # (C_PAD, G_PAD)
        l = tl.load(l_ptr + rows[:, None] * G_PAD + gi[None, :], mask=c_ok[:, None], other=0.0)
        a = tl.load(a_ptr + (rows[:, None, None] * G_PAD + gi[None, :, None]) * D_PAD + di[None, None, :],
                    mask=c_ok[:, None, None], other=0.0)  # (C_PAD, G_PAD, D_PAD)
        w = tl.exp(m - tl.max(m, axis=0)[None, :])
        o = tl.sum(w[:, :, None] * a, axis=0) / tl.sum(w * l, axis=0)[:, None]
        o_mask = (gi[:, None] < G) & (di[None, :] < D)
        tl.store(o_ptr + b * so_b + (j * G + gi)[:, None] * so_h + di[None, :], o.to(o_ptr.dtype.element_ty), mask=o_mask)


def chunk_count(rows: int, slots: int, block: int, device: torch.device) -> int:
    """Chunks C per (row, key/value head) pair: 1 when the `rows` programs already give every SM
    PROGRAMS_PER_SM of them, else enough to, and never more than MAX_CHUNKS or the slots' blocks."""
    sms = torch.cuda.get_device_properties(device).multi_processor_count if device.type == "cuda" else 1
    want = -(-PROGRAMS_PER_SM * sms // rows)
    return max(1, min(want, MAX_CHUNKS, -(-slots // block)))


def decode_attention(q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, real: torch.Tensor,
                     slot: torch.Tensor, chunks: int | None = None, block: int | None = None,
                     num_warps: int = 4, num_stages: int | None = None, flags_in_loads: bool = True) -> torch.Tensor:
    """Attention output (B, H, d_h) in q's dtype (module docstring).

    q: (B, H, d_h), scaled by 1/sqrt(d_h); keys, values: (B, H_kv, S, d_h) cache views, unit stride in
    d_h; real: (B, S) bool, the slots that hold a real token; slot: (1,) int64 on the device, the last
    attended slot (every later slot is skipped); chunks: the split-K count (None: `chunk_count`);
    block: slots per loop step (None: up to 64, REGISTER_BUDGET / d_h); num_warps, num_stages: Triton's
    launch options (None: Triton's default stages); flags_in_loads: the real-slot flags mask the key and value
    loads (True, as measured on an H200) or only the scores and values (False: the loads need not wait for
    the flags, at the price of reading the padding slots). benchmarks/bench_decode_attention.py sweeps the
    last five."""
    B, H, D = q.shape
    _, H_kv, S, _ = keys.shape
    if H % H_kv or keys.stride(-1) != 1 or values.stride(-1) != 1 or q.stride(-1) != 1 or real.stride(-1) != 1:
        raise ValueError(f"decode_attention needs H ({H}) a multiple of H_kv ({H_kv}) and unit stride in d_h and in the slots")
    if keys.shape != values.shape or keys.shape[0] != B or keys.shape[-1] != D:
        raise ValueError(f"decode_attention needs keys and values of one shape (B, H_kv, S, d_h) = ({B}, H_kv, S, {D}), "
                         f"got {tuple(keys.shape)} and {tuple(values.shape)}")
    if not q.dtype == keys.dtype == values.dtype or real.shape != (B, S) or slot.numel() != 1:
        raise ValueError(f"decode_attention needs q, keys, values of one dtype ({q.dtype}, {keys.dtype}, {values.dtype}), "
                         f"real of shape {(B, S)} (got {tuple(real.shape)}) and one slot (got {slot.numel()})")
    if block is not None and (block < DOT_MIN or block & (block - 1)):
        raise ValueError(f"decode_attention's block must be a power of 2 >= {DOT_MIN}, got {block}")
    if chunks is not None and not 1 <= chunks <= MAX_CHUNKS:
        raise ValueError(f"decode_attention's chunks must be in [1, {MAX_CHUNKS}], got {chunks}")
    G = H // H_kv
    G_PAD, D_PAD = max(DOT_MIN, _pow2(G)), max(DOT_MIN, _pow2(D))
    block = max(DOT_MIN, min(64, REGISTER_BUDGET // D_PAD)) if block is None else block
    C = chunk_count(B * H_kv, S, block, q.device) if chunks is None else chunks
    per_chunk = -(-S // C)
    chunk = -(-per_chunk // block) * block  # ceil(S / C) slots, rounded up to whole blocks
    C = -(-S // chunk)  # the chunks that hold a slot
    out = torch.empty_like(q)
    if C == 1:
        m = l = a = out  # unused by the single-chunk program
    else:
        m = torch.empty(B * H_kv * C * G_PAD, device=q.device, dtype=torch.float32)
        l = torch.empty_like(m)
        a = torch.empty(B * H_kv * C * G_PAD * D_PAD, device=q.device, dtype=torch.float32)
    launch = {"num_warps": num_warps} | ({} if num_stages is None else {"num_stages": num_stages})
    _chunk_kernel[(B * H_kv, C)](q, keys, values, real, slot, out, m, l, a,
                                 q.stride(0), q.stride(1), keys.stride(0), keys.stride(1), keys.stride(2),
                                 values.stride(0), values.stride(1), values.stride(2), real.stride(0),
                                 out.stride(0), out.stride(1), H_kv, S, D, chunk, C,
                                 G=G, G_PAD=G_PAD, D_PAD=D_PAD, BLOCK=block, N_BLOCKS=chunk // block, SINGLE=C == 1,
                                 PRECISION="ieee" if q.dtype == torch.float32 else "tf32",
                                 DOT_F32=_INTERPRETED and q.dtype != torch.float32, FLAGS_IN_LOADS=flags_in_loads, **launch)
    if C > 1:
        _merge_kernel[(B * H_kv,)](out, m, l, a, out.stride(0), out.stride(1), H_kv, D, C,
                                   G=G, G_PAD=G_PAD, D_PAD=D_PAD, C_PAD=_pow2(C))
    return out
