"""One-token decode steps of a dense built-in `CausalLM` with its weights rearranged once per
rollout: the fast path of `rollout.generate` (float32, no autocast, no dropout).

A step feeds one token to each of n rows and computes the same function as the model's cached
forward (`model`, `_attention`), written with as few kernels as it takes:

    x = E[y] (+ P[pos]);   per layer:
    h = LN1(x);   [q | k | v | q~ | k~] = h W_ext^T,   W_ext = [W_q; W_k; W_v; R W_q; R W_k]
    (an RMSNorm's gain is folded into the matrix that follows it: (h / rms(h)) (g W))
    q <- (q cos + q~ sin) / sqrt(d_h),   k <- k cos + k~ sin        (RoPE; learned: q <- q / sqrt(d_h))
    K[:, :, s] = k,  V[:, :, s] = v                                (in place, at the step's slot s)
    x <- x + softmax(q K^T + M) V W_o^T;   x <- x + MLP(LN2(x));   logits = LN_f(x) E^T

R swaps the halves (x_1, x_2) -> (x_2, x_1) of each head's rows (a permutation, so R W h =
`roll(W h)` up to the matmul's summation order), and the signed table sin = [-sin a, sin a] makes q cos + q~ sin the
reference rotation x [cos, cos] + roll(x) [-sin, sin] (`_attention.apply_rope`) with one matmul
and two elementwise ops instead of a roll, a cast and three ops per layer. The 1/sqrt(d_h) score
scale rides on the queries' tables (or weights), residual adds ride on `addmm`, and the attention
of one query reads the filled prefix of the cache in place (views): scores by a batched matmul,
the weighted sum of values as a product and a sum over slots (~3x faster than a batched matmul
of n H one-row products on CPU).
M is -inf on the prompts' left padding (absent when there is none); completion slots of live
rows are always real. Results equal the model's cached step up to float32 summation order
(tests/train/test_decode.py).

Cost (bench_trainer's tiny Llama, 64 rows, up to 33 tokens; torch.profiler): 69 top-level non-view
aten calls per decoded token against 107 on the reference path (whose rms_norm, SDPA and module
calls each hide several more), and about half its CPU time per rollout.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F


def supports(model, device: torch.device) -> bool:
    """Whether `Decoder` computes `model`'s decode steps: a dense built-in CausalLM in float32,
    autocast off on its device, and no active dropout."""
    from gspo_dynamics.train.model import CausalLM  # model imports _attention only; no cycle at call time

    if not isinstance(model, CausalLM) or model.config.is_moe:
        return False
    if model.embed.weight.dtype != torch.float32 or torch.is_autocast_enabled(device.type):
        return False
    return not (model.training and model.config.dropout > 0)


def padding_bias(prompt_mask: torch.Tensor, slots: int) -> torch.Tensor | None:
    """M (B, 1, 1, slots) float32: -inf on the prompts' padding key slots, 0 elsewhere (every
    completion slot a live row attends holds a real token); None when no prompt is padded."""
    pad = prompt_mask == 0  # (B, P)
    if not bool(pad.any()):
        return None
    bias = torch.zeros(prompt_mask.shape[0], 1, 1, slots, device=prompt_mask.device)
    bias[:, 0, 0, : prompt_mask.shape[1]].masked_fill_(pad, -torch.inf)
    return bias


class _Norm:
    """x -> LN(x) without its gain g when the module is an RMSNorm (`fold` then holds g (d,), to be
    multiplied into the rows of the matrix x meets next: (x / rms(x)) diag(g) W = (x / rms(x)) (g W)),
    as x rsqrt(x^2 [1/d] + eps) with the mean and the eps in one `addmm`: four kernels instead of
    torch.rms_norm's ten on CPU. A LayerNorm stays one fused call."""

    def __init__(self, module: nn.Module) -> None:
        self.rms = isinstance(module, nn.RMSNorm)
        w = module.weight.detach()
        if self.rms:
            self.fold = w  # (d,)
            self.eps = torch.full((1, 1), module.eps, dtype=w.dtype, device=w.device)
            self.mean = torch.full((w.shape[0], 1), 1.0 / w.shape[0], dtype=w.dtype, device=w.device)  # (d, 1)
        else:
            self.fold = None
            self.args = (tuple(module.normalized_shape), module.weight, module.bias, module.eps)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if self.rms:  # x / sqrt(mean(x^2) + eps)
            return x * torch.addmm(self.eps, x * x, self.mean).rsqrt_()
        return torch.layer_norm(x, *self.args)  # the torch.* binding skips F.layer_norm's Python checks

    def into(self, w_t: torch.Tensor) -> torch.Tensor:
        """The (d, D) matrix x meets next, contiguous, with the folded gain in its rows."""
        return (w_t if self.fold is None else w_t * self.fold[:, None]).contiguous()


class Decoder:
    """The decode-step weights of one dense `CausalLM` (module docstring), built from its current
    parameters (detached copies; the model is not changed)."""

    def __init__(self, model) -> None:
        c = model.config
        self.config = c
        H, H_kv, dh = c.n_heads, c.kv_heads, c.head_dim
        self.rope = c.positional == "rope"
        scale = 1.0 / math.sqrt(dh)
        self.embed = model.embed.weight.detach()
        self.pos_embed = None if model.pos_embed is None else model.pos_embed.weight.detach()
        layers = []
        for block in model.blocks:
            w = block.attn.qkv.weight.detach()  # (H dh + 2 H_kv dh, d): [W_q; W_k; W_v]
            qk, v = w[: (H + H_kv) * dh], w[(H + H_kv) * dh :]
            if self.rope:
                swapped = qk.view(H + H_kv, dh, -1).roll(dh // 2, dims=1).reshape(qk.shape)  # R W: rows (2, 1)
                w_ext = torch.cat([qk, v, swapped])
            else:  # the score scale on the query rows (learned positions have no table to carry it)
                w_ext = torch.cat([qk[: H * dh] * scale, qk[H * dh :], v])
            mlp = block.mlp
            swiglu = hasattr(mlp, "gate_up")
            ln1, ln2 = _Norm(block.ln1), _Norm(block.ln2)
            layers.append((
                ln1, ln1.into(w_ext.t()),  # (d, D_ext): x @ w_ext, no transpose per step
                block.attn.proj.weight.detach().t().contiguous(), ln2,
                ln2.into((mlp.gate_up if swiglu else mlp.up).weight.detach().t()), swiglu,
                mlp.down.weight.detach().t().contiguous(),
            ))
        self._weights = tuple(zip(*layers))  # per field, one entry per layer (zipped with the cache in `step`)
        self.ln_f = _Norm(model.ln_f)
        self.head = self.ln_f.into((self.embed if model.head is None else model.head.weight.detach()).t())  # (d, V)
        self.H, self.H_kv, self.dh, self.d_ff = H, H_kv, dh, c.d_ff
        self.D_qk, self.D_v = (H + H_kv) * dh, H_kv * dh
        self.scale = scale

    def position_table(self, n_positions: int, device) -> tuple[torch.Tensor, ...]:
        """What position p = 0 .. n_positions - 1 contributes to a step: the RoPE tables
        (cos, sin), each (n_positions, D_qk) (sin signed [-sin, sin]; the queries' columns times
        1/sqrt(d_h)), or the learned position embeddings ((n_positions, d),).

        Angles as in `_attention.rope_angles`: a = p theta^(-2i/d_h), in float32."""
        if not self.rope:
            return (self.pos_embed[:n_positions],)
        exponents = torch.arange(0, self.dh, 2, dtype=torch.float32, device=device) / self.dh
        angles = torch.arange(n_positions, device=device)[:, None].float() * (self.config.rope_theta**-exponents)
        cos, sin = angles.cos(), angles.sin()  # (n_positions, d_h / 2)
        cos, sin = torch.cat([cos, cos], -1), torch.cat([-sin, sin], -1)  # (n_positions, d_h)
        heads = torch.tensor([self.scale] * self.H + [1.0] * self.H_kv, device=device)[:, None]  # (H + H_kv, 1)
        return (cos[:, None] * heads).flatten(1), (sin[:, None] * heads).flatten(1)  # (n_positions, D_qk)

    def step(self, token, tables, keys, values, slot: int, bias):
        """Logits (n, V) float32 of feeding `token` (n,) at cache slot `slot`.

        tables: this step's rows of `position_table`, each (n, D) or (1, D) (shared by the rows);
        keys, values: per layer (n, H_kv, S, d_h) cache views, written at `slot`;
        bias: (n, 1, 1, S) float, -inf on padding key slots, or None."""
        n = token.shape[0]
        H_kv, dh, g = self.H_kv, self.dh, self.H // self.H_kv
        D_q, D_qk, D_v, f = self.H * dh, self.D_qk, self.D_v, self.d_ff
        L = slot + 1
        x = self.embed.index_select(0, token)  # (n, d)
        if self.rope:
            cos, sin = tables
        else:
            x = x + tables[0]
        for ln1, w_ext, w_o, ln2, w_up, swiglu, w_down, K, V in zip(*self._weights, keys, values):
            out = torch.mm(ln1(x), w_ext)  # (n, D_ext)
            qk = (out[:, :D_qk] * cos).addcmul_(out[:, D_qk + D_v :], sin) if self.rope else out[:, :D_qk]
            K.select(2, slot).copy_(qk[:, D_q:].view(n, H_kv, dh))
            V.select(2, slot).copy_(out[:, D_qk : D_qk + D_v].view(n, H_kv, dh))
            q = qk[:, :D_q].view(n, H_kv, g, dh)  # query head h reads kv head h // g, as in GQA
            scores = torch.matmul(q, K[:, :, :L].transpose(-1, -2))  # (n, H_kv, g, L)
            if bias is not None:
                scores = scores + bias[..., :L]
            # softmax(scores) V as a product and a sum over L: ~3x faster than a batched matmul of
            # n H one-row products on CPU
            attn = (scores.softmax(-1)[..., None] * V[:, :, None, :L]).sum(-2)  # (n, H_kv, g, d_h)
            x = torch.addmm(x, attn.view(n, -1), w_o)  # x + a W_o^T
            up = torch.mm(ln2(x), w_up)  # (n, f) or (n, 2 f) = [gate | up]
            hidden = F.silu(up[:, :f]) * up[:, f:] if swiglu else F.gelu(up)
            x = torch.addmm(x, hidden, w_down)
        return torch.mm(self.ln_f(x), self.head)  # (n, V)
