"""Causal self-attention with rotary positions and a preallocated key/value cache.

    q, k, v = x W_qkv;   q, k <- RoPE(q, k, positions);   y = softmax(q k^T / sqrt(d_h) + M) v W_o

M is 0 where a query may attend a key and -inf elsewhere: key slot j is visible to query slot i
when j <= i (causal) and j holds a real token (attention mask), and a query always sees its own
slot so that a padding query's row is never all -inf (its output is garbage but finite; nothing
reads it). RoPE (Su et al. 2021, arXiv 2104.09864) rotates each pair of query/key coordinates
(x_i, x_{i + d_h/2}) (the half-split pairing of GPT-NeoX/Llama) by the angle p * theta^(-2i/d_h)
at position p, so q.k depends on positions only through their difference.

Decoding writes each new key and value into cache buffers allocated once per rollout,
(n_layers, B, H, S, d_h), and attends over the filled prefix, so one cached step computes the
same numbers as the full teacher-forced pass up to summation order.

Grouped-query attention (Ainslie et al. 2023, arXiv 2305.13245): with H_kv < H key/value heads,
query head h reads key/value head floor(h H_kv / H) (each K/V head serves H / H_kv consecutive
query heads, as in Llama), and the cache holds only the H_kv heads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import nn
from torch.nn import functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

# A masked attention call on CUDA runs on the memory-efficient kernel (math where that one is switched off), not
# on cuDNN's, which builds an execution plan for every new shape (~1.8 ms of CPU a forward and ~3 ms a backward on
# an H100, torch 2.11), and a padded batch's shapes are new at almost every step (100m Llama on an H100, 32 x 8
# rows of 1-135 tokens: 56 masked calls took 265 ms of CPU against 3.3 ms of GPU, most of the update;
# benchmarks/RESULTS.md, "GPU session notes"). Flash attention takes no mask.
MASKED_BACKENDS = (SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH)


def expand_kv(k: torch.Tensor, v: torch.Tensor, n_heads: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Keys and values (B, H_kv, S, d_h) repeated to (B, H, S, d_h): K/V head j serves query heads j r .. j r + r - 1,
    r = H / H_kv, as `enable_gqa` reads them (the memory-efficient kernel takes no `enable_gqa`)."""
    r = n_heads // k.shape[1]
    return k.repeat_interleave(r, dim=1), v.repeat_interleave(r, dim=1)


def masked_sdpa(q, k, v, mask: torch.Tensor, dropout_p: float, **gqa) -> torch.Tensor:
    """`F.scaled_dot_product_attention` with a boolean `mask`; on CUDA kept off cuDNN (MASKED_BACKENDS, those of
    them the process has enabled), grouped-query keys and values expanded to every query head (`expand_kv`)."""
    if q.is_cuda:
        enabled = (torch.backends.cuda.mem_efficient_sdp_enabled(), torch.backends.cuda.math_sdp_enabled())
        allowed = [backend for backend, on in zip(MASKED_BACKENDS, enabled) if on]
        if allowed:
            if gqa.get("enable_gqa"):
                k, v = expand_kv(k, v, q.shape[1])
            with sdpa_kernel(allowed):
                return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)
    # a CPU, or neither kernel enabled: torch's own choice
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p, **gqa)


class Packed(NamedTuple):
    """A full pass over padded rows run on their n real positions (`CausalLM`, `Attention._packed`).

    The rows are laid out in length buckets: bucket b holds `rows` rows, each cut at the bucket's
    longest row's L positions, M = sum rows L positions in all (row-major per bucket). The packed
    order is the layout's order of its real positions."""

    index: torch.Tensor  # (n,) flat index b T + t in the (B, T) batch of each packed position
    gather: torch.Tensor  # (M,) the packed position each slot reads (a padding slot: the last real one before it, or the first)
    scatter: torch.Tensor  # (n,) the layout slot of each packed position
    buckets: tuple[tuple[int, int, torch.Tensor], ...]  # (rows, L, mask (rows, 1, L, L) bool) per bucket


def pack(real: torch.Tensor, buckets: int, saving: float) -> Packed | None:
    """The real positions of `real` (B, T) packed, the rows sorted by their last real token into `buckets` length
    buckets (one when B < 2 buckets), each cut at its longest row; None when over 1 - `saving` of the positions
    are real, or none is."""
    B, T = real.shape
    n = int(real.sum())
    if n == 0 or n > (1 - saving) * B * T:
        return None
    ends = (real.long() * torch.arange(1, T + 1, device=real.device)).amax(-1)  # (B,) last real token + 1
    ends_sorted, order = ends.sort()
    groups = order.chunk(buckets) if B >= 2 * buckets else (order,)
    last = torch.tensor([len(r) for r in groups]).cumsum(0) - 1  # sorted index of each group's longest row
    lengths = [max(int(L), 1) for L in ends_sorted.cpu()[last]]
    layout = torch.cat([(rows[:, None] * T + torch.arange(L, device=real.device)).reshape(-1)
                        for rows, L in zip(groups, lengths)])  # (M,) flat (B, T) index of each slot
    real_slot = real.reshape(-1)[layout]
    scatter, gather = real_slot.nonzero()[:, 0], (real_slot.long().cumsum(0) - 1).clamp(min=0)
    masks = tuple((len(rows), L, attention_mask_4d(real[rows, :L], 0, L)) for rows, L in zip(groups, lengths))
    return Packed(layout[scatter], gather, scatter, masks)


@dataclass
class KVCache:
    """Keys and values of every layer for the slots decoded so far, in buffers sized once.

    Slots are filled left to right in calls of the model; `length` counts the filled ones.
    `key_mask` marks the slots that hold real tokens (left padding and tokens fed after EOS are
    not), and `n_real` counts each row's real tokens, so the next real token's position is
    `n_real` (positions start at 0 at the first real token, whatever the left padding).
    """

    keys: torch.Tensor  # (n_layers, B, H, S, d_h)
    values: torch.Tensor  # (n_layers, B, H, S, d_h)
    key_mask: torch.Tensor  # (B, S) bool, real tokens among the filled slots
    n_real: torch.Tensor  # (B,) int64, real tokens so far
    length: int = 0  # slots filled

    @classmethod
    def allocate(cls, n_layers, batch, n_heads, slots, head_dim, *, dtype, device) -> KVCache:
        shape = (n_layers, batch, n_heads, slots, head_dim)
        return cls(  # zeros: a padding slot a decode step skips (model docstring) stays masked and finite
            keys=torch.zeros(shape, dtype=dtype, device=device),
            values=torch.zeros(shape, dtype=dtype, device=device),
            key_mask=torch.zeros(batch, slots, dtype=torch.bool, device=device),
            n_real=torch.zeros(batch, dtype=torch.long, device=device),
        )

    @property
    def capacity(self) -> int:
        return self.keys.shape[3]


def rope_angles(positions: torch.Tensor, inv_freq: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The rotation tables of positions (B, T), each (B, 1, T, d_h), in float32:
    [cos a, cos a] and [-sin a, sin a], a = p * theta^(-2i/d_h) (d_h / 2 angles), made once per
    forward and shared by every layer's `apply_rope`."""
    angles = positions[:, None, :, None].float() * inv_freq.float()  # (B, 1, T, d_h/2)
    cos, sin = angles.cos(), angles.sin()
    return torch.cat([cos, cos], dim=-1), torch.cat([-sin, sin], dim=-1)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate the pairs (x_i, x_{i+d_h/2}) of x (..., B, H, T, d_h) by the angles of the tables
    (`rope_angles`): [x1, x2] -> [x1 cos - x2 sin, x2 cos + x1 sin], written as
    x * [cos, cos] + roll(x, d_h/2) * [-sin, sin] (roll(x) = [x2, x1]): four kernels instead of
    eight, and the same float32 numbers bit for bit (a - b = a + (-b) exactly). Computed in
    float32, returned in x's dtype (so bf16 autocast keeps its dtype)."""
    xf = x.float()
    return (xf * cos + xf.roll(x.shape[-1] // 2, dims=-1) * sin).to(x.dtype)


def attention_mask_4d(key_valid: torch.Tensor, start: int, n_queries: int) -> torch.Tensor:
    """(B, 1, T, S') bool: query slot start+t sees key slot j iff j <= start+t and (key j is real
    or j is the query's own slot).

    Args:
        key_valid: (B, S') bool, which key slots hold real tokens (S' = start + T).
    """
    S = key_valid.shape[1]
    if n_queries == 1:  # one decode step: every filled slot is causal; the own slot is the last
        visible = key_valid.clone()
        visible[:, -1] = True
        return visible[:, None, None, :]  # (B, 1, 1, S')
    query_slot = start + torch.arange(n_queries, device=key_valid.device)[:, None]  # (T, 1)
    key_slot = torch.arange(S, device=key_valid.device)[None, :]  # (1, S')
    causal = key_slot <= query_slot  # (T, S')
    own = key_slot == query_slot
    return (causal & (key_valid[:, None, :] | own))[:, None]  # (B, 1, T, S')


class Attention(nn.Module):
    """Multi-head (or grouped-query, `n_kv_heads` < `n_heads`) causal self-attention (no biases).

    W_qkv stacks the H query heads, then the H_kv key heads, then the H_kv value heads."""

    def __init__(self, d_model: int, n_heads: int, dropout: float, n_kv_heads: int | None = None) -> None:
        super().__init__()
        self.n_heads, self.head_dim = n_heads, d_model // n_heads
        self.n_kv_heads = n_heads if n_kv_heads is None else n_kv_heads
        self.qkv = nn.Linear(d_model, (n_heads + 2 * self.n_kv_heads) * self.head_dim, bias=False)
        self.proj = nn.Linear(d_model, d_model, bias=False)
        self.dropout = dropout

    def forward(self, x, rope, mask, cache_kv, start: int, packed: Packed | None = None) -> torch.Tensor:
        """x (B, T, d) -> (B, T, d).

        rope: (cos, sin) or None (learned positions); mask: (B, 1, T, S') bool, or None for plain
        causal attention without padding or cache; cache_kv: (keys, values, rows) or None, keys and
        values (B_cache, H_kv, S, d_h) of this layer, written at slots start..start+T-1 of the cache
        rows `rows` (n,) = x's rows (None: x's rows are the cache's, in order). `packed`: x holds
        only the real positions, (1, n, d) (`_packed`).
        """
        if packed is not None:
            return self._packed(x, rope, packed)
        B, T, d = x.shape
        H, H_kv = self.n_heads, self.n_kv_heads
        if H_kv == H:
            qkv = self.qkv(x).view(B, T, 3, H, self.head_dim).permute(2, 0, 3, 1, 4)  # (3, B, H, T, d_h)
            q, k, v = qkv
            if rope is not None:
                q, k = apply_rope(qkv[:2], *rope)  # queries and keys in one rotation: (2, B, H, T, d_h)
        else:
            heads = self.qkv(x).view(B, T, H + 2 * H_kv, self.head_dim).transpose(1, 2)  # (B, H + 2 H_kv, T, d_h)
            qk = heads[:, : H + H_kv] if rope is None else apply_rope(heads[:, : H + H_kv], *rope)  # one rotation
            q, k = qk.split([H, H_kv], dim=1)  # (B, H, T, d_h), (B, H_kv, T, d_h)
            v = heads[:, H + H_kv :]
        if cache_kv is not None and (len(cache_kv) < 3 or cache_kv[2] is None):
            cache_kv[0][:, :, start : start + T] = k
            cache_kv[1][:, :, start : start + T] = v
            # (B, H, S', d_h) the filled prefix, in the queries' dtype (the cache may be wider)
            k = cache_kv[0][:, :, : start + T].to(q.dtype)
            v = cache_kv[1][:, :, : start + T].to(q.dtype)
        elif cache_kv is not None:  # a subset of the cache's rows (a decode step skipping padding rows)
            keys, values, rows = cache_kv
            # index_copy_/index_select: ~3x faster than advanced indexing on these small CPU tensors
            keys[:, :, start : start + T].index_copy_(0, rows, k.to(keys.dtype))
            values[:, :, start : start + T].index_copy_(0, rows, v.to(values.dtype))
            k = keys[:, :, : start + T].index_select(0, rows).to(q.dtype)  # (n, H_kv, S', d_h), gathered copies
            v = values[:, :, : start + T].index_select(0, rows).to(q.dtype)
        p = self.dropout if self.training else 0.0
        gqa = {} if H_kv == H else {"enable_gqa": True}  # query head h reads K/V head h // (H / H_kv)
        if mask is None:
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True, **gqa)
        else:
            y = masked_sdpa(q, k, v, mask, p, **gqa)
        return self.proj(y.transpose(1, 2).reshape(B, T, d))  # (B, T, d)

    def _packed(self, x, rope, packed: Packed) -> torch.Tensor:
        """x (1, n, d), the real positions of a batch in `packed` order -> (1, n, d).

        The projections and RoPE run on the n real positions only; queries, keys and values are
        then gathered into the length buckets' (rows, L) layouts for one attention call per bucket
        (a padding slot holds some real position's values, hidden from every real query by the
        bucket's mask), and the real rows are gathered back."""
        n, d = x.shape[1:]
        H, H_kv, d_h = self.n_heads, self.n_kv_heads, self.head_dim
        heads = self.qkv(x[0]).view(n, H + 2 * H_kv, d_h).transpose(0, 1)  # (H + 2 H_kv, n, d_h)
        if rope is not None:  # tables (1, 1, n, d_h) of the packed positions
            heads = torch.cat([apply_rope(heads[: H + H_kv], rope[0][0], rope[1][0]), heads[H + H_kv :]])
        laid_out = heads.index_select(1, packed.gather).split([rows * L for rows, L, _ in packed.buckets], dim=1)
        p = self.dropout if self.training else 0.0
        gqa = {} if H_kv == H else {"enable_gqa": True}
        outputs = []
        for part, (rows, L, mask) in zip(laid_out, packed.buckets):
            q, k, v = part.view(-1, rows, L, d_h).transpose(0, 1).split([H, H_kv, H_kv], dim=1)  # (rows, heads, L, d_h)
            y = masked_sdpa(q, k, v, mask, p, **gqa)  # (rows, H, L, d_h)
            outputs.append(y.transpose(1, 2).reshape(rows * L, d))
        return self.proj(torch.cat(outputs).index_select(0, packed.scatter))[None]  # (1, n, d)
