"""A tiny causal transformer (GPT-2 style, pre-LayerNorm) with a preallocated KV cache.

    h_0 = E[x] + P[positions];   h_l = h_{l-1} + Attn(LN(h_{l-1})),  h_l += MLP(LN(h_l));
    logits = W LN(h_n)

Built from a config in code; the MLP is a module argument, so the mixture-of-experts variant
(`_moe.py`) reuses everything else. Decoding writes keys and values into cache tensors allocated
once for the whole rollout and attends over the filled prefix, so a cached step computes the
same numbers as the full teacher-forced pass, up to summation order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch
from torch import nn

from gspo_dynamics._checks import positive_int
from gspo_dynamics._errors import ConfigError
from gspo_dynamics.sim.sequence._policy import Routing, check_max_len, check_prompts, check_tokens, no_routing

INIT_STD = 0.02  # GPT-2's weight scale: logits start near uniform


@dataclass(frozen=True, kw_only=True)
class TransformerConfig:
    """Sizes of a `TinyTransformer`."""

    vocab_size: int = 15  # V, token ids (the shared tokenizer's 15)
    d_model: int = 32  # residual width
    n_layers: int = 2  # blocks
    n_heads: int = 2  # attention heads; d_model must be a multiple
    max_len: int = 64  # positions: prompt plus response tokens must fit
    d_ff: int | None = None  # MLP hidden width; None = 4 d_model

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "n_layers", "n_heads", "max_len"):
            positive_int(name, getattr(self, name))
        if self.d_ff is not None and (isinstance(self.d_ff, bool) or not isinstance(self.d_ff, int) or self.d_ff < 1):
            raise ConfigError(f"d_ff must be an integer >= 1 or None, got {self.d_ff!r}")
        if self.d_model % self.n_heads:
            raise ConfigError(f"d_model {self.d_model} must be a multiple of n_heads {self.n_heads}")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def ff_dim(self) -> int:
        return 4 * self.d_model if self.d_ff is None else self.d_ff


@dataclass
class KVCache:
    """Keys and values of every layer for the positions decoded so far, in buffers sized for the
    whole rollout: S = P + max_len - 1 input positions."""

    keys: torch.Tensor  # (n_layers, B, H, S, head_dim)
    values: torch.Tensor  # (n_layers, B, H, S, head_dim)
    length: int = 0  # positions filled
    routing: Routing | None = None  # (n_layers, B, S, k) buffers of a MoE model, else None


class _Attention(nn.Module):
    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.n_heads, self.head_dim = config.n_heads, config.head_dim
        self.qkv = nn.Linear(config.d_model, 3 * config.d_model)
        self.proj = nn.Linear(config.d_model, config.d_model)

    def forward(self, x: torch.Tensor, start: int, cache: tuple[torch.Tensor, torch.Tensor] | None) -> torch.Tensor:
        """x (B, T, d) at positions start..start+T-1; `cache` (keys, values) (B, H, S, hd) of one layer."""
        B, T, d = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)  # each (B, H, T, hd)
        if cache is not None:
            cache[0][:, :, start : start + T] = k
            cache[1][:, :, start : start + T] = v
            k, v = cache[0][:, :, : start + T], cache[1][:, :, : start + T]  # (B, H, S', hd) the filled prefix
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(self.head_dim)  # (B, H, T, S')
        query_pos = start + torch.arange(T, device=x.device)
        causal = torch.arange(k.shape[2], device=x.device)[None, :] <= query_pos[:, None]  # (T, S')
        scores = scores.masked_fill(~causal, -torch.inf)
        y = torch.softmax(scores, dim=-1) @ v  # (B, H, T, hd)
        return self.proj(y.transpose(1, 2).reshape(B, T, d))


class DenseMLP(nn.Module):
    """Linear -> GELU -> Linear; routes nothing."""

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.up = nn.Linear(config.d_model, config.ff_dim)
        self.down = nn.Linear(config.ff_dim, config.d_model)

    def forward(self, x: torch.Tensor, replay: None = None) -> tuple[torch.Tensor, None]:
        """x (B, T, d) -> (output (B, T, d), None); `replay` is always None (the model's forward
        refuses a routing), the slot exists so blocks call every MLP alike."""
        return self.down(nn.functional.gelu(self.up(x))), None


class _Block(nn.Module):
    def __init__(self, config: TransformerConfig, mlp: nn.Module) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(config.d_model), nn.LayerNorm(config.d_model)
        self.attn = _Attention(config)
        self.mlp = mlp

    def forward(self, x, start, cache, routing):
        x = x + self.attn(self.ln1(x), start, cache)
        out, decisions = self.mlp(self.ln2(x), routing)
        return x + out, decisions


class CausalTransformer(nn.Module):
    """The shared body of `TinyTransformer` and `TinyMoETransformer`; `make_mlp(config)` builds
    each block's MLP, which returns (output, routing decisions or None)."""

    def __init__(self, config: TransformerConfig, make_mlp: Callable, generator: torch.Generator | None = None):
        super().__init__()
        self.config = config
        self.vocab_size = config.vocab_size
        self.token_embedding = nn.Embedding(config.vocab_size, config.d_model)
        self.position_embedding = nn.Embedding(config.max_len, config.d_model)
        self.blocks = nn.ModuleList(_Block(config, make_mlp(config)) for _ in range(config.n_layers))
        self.ln_f = nn.LayerNorm(config.d_model)
        self.head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self._init_weights(generator)

    @torch.no_grad()
    def _init_weights(self, generator) -> None:
        for name, p in self.named_parameters():
            if name.rsplit(".", 1)[-1] in ("bias", "b_up", "b_down"):
                p.zero_()
            elif p.ndim >= 2:  # LayerNorm gains keep their 1
                nn.init.normal_(p, 0.0, INIT_STD, generator=generator)

    # ---- the one computation both paths share --------------------------------------------------

    def _run(self, idx: torch.Tensor, start: int, cache: KVCache | None, routing: Routing | None):
        """Logits (B, T, V) of inputs idx (B, T) at positions start..start+T-1, and the routing
        decisions made there (n_layers, B, T, k) or None."""
        T = idx.shape[1]
        positions = torch.arange(start, start + T, device=idx.device)
        x = self.token_embedding(idx) + self.position_embedding(positions)  # (B, T, d)
        decisions = []
        for layer, block in enumerate(self.blocks):
            kv = None if cache is None else (cache.keys[layer], cache.values[layer])
            x, made = block(x, start, kv, None if routing is None else routing.layer(layer))
            decisions.append(made)
        logits = self.head(self.ln_f(x))  # (B, T, V)
        if decisions[0] is None:
            return logits, None
        experts, gates = (torch.stack(parts) for parts in zip(*decisions))  # each (n_layers, B, T, k)
        return logits, Routing(experts, gates)

    def _check_fits(self, prompt_len: int, response_len: int) -> None:
        if prompt_len + response_len > self.config.max_len:
            raise ConfigError(
                f"prompt ({prompt_len}) plus response ({response_len}) tokens exceed max_len {self.config.max_len}"
            )

    # ---- teacher forcing -----------------------------------------------------------------------

    def forward(self, prompts: torch.Tensor, tokens: torch.Tensor, routing: Routing | None = None):
        """Logits (B, L, V) of responses `tokens` (B, L) to `prompts` (B, P), and the routing used.

        The inputs are the prompt and all response tokens but the last (T = P + L - 1 positions);
        the output at input position P - 1 + t predicts response token t.
        """
        check_tokens(prompts, tokens)
        P, L = prompts.shape[1], tokens.shape[1]
        self._check_fits(P, L)
        self._check_routing(routing, prompts.shape[0], P + L - 1)
        idx = torch.cat([prompts, tokens[:, :-1]], dim=1)  # (B, T)
        logits, used = self._run(idx, 0, None, routing)
        return logits[:, P - 1 :], used  # (B, L, V)

    def _check_routing(self, routing: Routing | None, batch: int, positions: int) -> None:
        no_routing(self, routing)

    # ---- incremental decoding ------------------------------------------------------------------

    def _new_cache(self, batch: int, positions: int, like: torch.Tensor) -> KVCache:
        c = self.config
        shape = (c.n_layers, batch, c.n_heads, positions, c.head_dim)
        return KVCache(keys=like.new_empty(shape), values=like.new_empty(shape))

    def begin(self, prompts: torch.Tensor, max_len: int) -> tuple[torch.Tensor, KVCache]:
        """Run the prompt into a fresh cache; logits (B, V) of response token 0."""
        check_prompts(prompts)
        P = prompts.shape[1]
        self._check_fits(P, check_max_len(max_len))
        cache = self._new_cache(prompts.shape[0], P + max_len - 1, self.head.weight)
        return self._step(cache, prompts), cache

    def extend(self, cache: KVCache, token: torch.Tensor) -> torch.Tensor:
        """Append `token` (B,) to every sequence; logits (B, V) of the next response token."""
        return self._step(cache, token[:, None])

    def _step(self, cache: KVCache, idx: torch.Tensor) -> torch.Tensor:
        start, T = cache.length, idx.shape[1]
        if start + T > cache.keys.shape[3]:
            raise ValueError(f"the cache holds {cache.keys.shape[3]} positions; extend was called past max_len")
        logits, made = self._run(idx, start, cache, None)
        if made is not None:
            cache.routing.experts[:, :, start : start + T] = made.experts
            cache.routing.gates[:, :, start : start + T] = made.gates
        cache.length = start + T
        return logits[:, -1]


class TinyTransformer(CausalTransformer):
    """A dense tiny causal transformer: `TinyTransformer(TransformerConfig(...))`."""

    def __init__(self, config: TransformerConfig, generator: torch.Generator | None = None) -> None:
        """`generator` seeds the initial weights (None: torch's global generator)."""
        super().__init__(config, DenseMLP, generator)
