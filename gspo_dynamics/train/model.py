"""The built-in causal language model: a pre-norm transformer, dense or mixture-of-experts.

    h_0 = E[x] (+ P[positions] with learned positions);
    h_l = h_{l-1} + Attn(LN(h_{l-1}))  (RoPE inside with rotary positions);
    h_l = h_l + MLP(LN(h_l))           (GELU MLP, or the top-k MoE of `_moe`);
    logits = LN(h_n) W_out^T           (W_out = E when the embeddings are tied)

Options that make it the Llama architecture (so a Hugging Face Llama's weights load into it,
`hf.load_hf_model(..., native=True)`): `norm="rmsnorm"` (LN(h) = g * h / sqrt(mean(h^2) + eps),
Zhang & Sennrich 2019), `mlp="swiglu"` (MLP(h) = W_down (silu(W_gate h) * W_up h), Shazeer 2020),
`n_kv_heads` < `n_heads` (grouped-query attention, `_attention`), `rope_theta`, `tie_embeddings`.

    model = build_model(ModelConfig(vocab_size=16, **MODEL_PRESETS["1m"]))
    logits, aux = model(input_ids, attention_mask=None, kv_cache=None, positions=None, routing=None)

`logits` (B, T, V) are float32 whatever the compute dtype (autocast); `aux["routing"]` is a
tuple with one (B, T, k) int64 expert-set tensor per layer (None for a dense model), and passing
it back as `routing=` replays those choices; `aux["load_balance_loss"]` is the mean over layers
of the Switch load-balance loss (None for a dense model).

Positions start at 0 at each row's first real token: from `positions` when given, else from the
attention mask (cumulative count of real tokens), else from the cache's count of real tokens.

A padding query's logits are garbage but finite. In a one-token decode step with the cache (a
dense model), padding queries (rows that finished) are not computed at all: only the rows with a
real token run, their keys and values are written to their cache rows, and the other rows'
logits are 0 (when at most SKIP_PADDING_ROWS of them are real), so a rollout's late steps cost
what its live rows cost. (`rollout.generate` decodes a dense float32 model through
`_decode.Decoder` instead - the same function in fewer kernels; this forward is its reference.)
Likewise a full pass (no cache) over padded rows (prompts left-padded, completions right-padded
to the longest) runs packed (`_packing`, `_attention.Packed`): the embeddings, norms, projections,
MLPs or experts, RoPE and the output head compute only the n real positions, as one (n, d) matrix,
and attention alone sees rows: the rows sorted by their last real token into PAD_BUCKETS groups,
each group up to its longest row's last real token. Padding positions get logits 0 (and, in an MoE
model, the expert set 0..k-1). Causal attention and the mask make the real positions' logits those
of the unpacked pass (up to summation order).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.train._attention import Attention, KVCache, Packed, attention_mask_4d, pack, rope_angles
from gspo_dynamics.train._mlp import DenseMLP, SwiGLUMLP
from gspo_dynamics.train._moe import MoEMLP

INIT_STD = 0.02  # GPT-2's weight scale: logits start near uniform
POSITIONALS: tuple[str, ...] = ("rope", "learned")
NORMS: tuple[str, ...] = ("layernorm", "rmsnorm")
MLPS: tuple[str, ...] = ("gelu", "swiglu")

MODEL_PRESETS: dict[str, dict] = {
    # name -> ModelConfig keyword arguments without vocab_size (the tokenizer's); the name is the
    # approximate parameter count, checked within 30% by the tests (at vocab_size 16)
    "100k": dict(d_model=64, n_layers=2, n_heads=4, d_ff=256, max_seq_len=128),
    "1m": dict(d_model=128, n_layers=5, n_heads=4, d_ff=512, max_seq_len=256),
    "10m": dict(d_model=384, n_layers=6, n_heads=6, d_ff=1536, max_seq_len=512),
    "100m": dict(d_model=768, n_layers=14, n_heads=12, d_ff=3072, max_seq_len=1024),
    "1b": dict(d_model=2048, n_layers=20, n_heads=16, d_ff=8192, max_seq_len=2048),
}
# A decode step computes only its real rows when at most this fraction of them is real; above it,
# gathering the live rows' cache costs about what skipping the rest saves (CPU, bench_trainer's model).
SKIP_PADDING_ROWS = 0.75
# Full passes run packed, with attention in this many length buckets, when padding is at least
# PAD_SAVING of the positions (bench_trainer's batch, 742 real of 64 x 34: update 25 -> 18 ms against
# the buckets alone; attention in 1, 2, 4, 8 buckets: 21, 19, 18, 19 ms).
PAD_BUCKETS = 4
PAD_SAVING = 0.25
PRESET_SIZES: dict[str, float] = {"100k": 1e5, "1m": 1e6, "10m": 1e7, "100m": 1e8, "1b": 1e9}


def _int(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


@dataclass(frozen=True, kw_only=True)
class ModelConfig:
    """Sizes of a `CausalLM`; validated at construction (ConfigError)."""

    vocab_size: int  # V, token ids
    d_model: int  # residual width d
    n_layers: int  # transformer blocks
    n_heads: int  # attention heads H; d_model must be a multiple, d_h = d / H even (RoPE pairs)
    d_ff: int  # MLP hidden width f (of each expert for MoE)
    max_seq_len: int  # prompt plus completion tokens must fit
    n_experts: int = 0  # E experts per MoE block; 0 = dense MLPs
    top_k: int = 2  # k experts per token (MoE only; must be <= n_experts)
    dropout: float = 0.0  # on attention probabilities and residual branches, in training mode
    positional: str = "rope"  # "rope" (rotary) or "learned" (absolute embeddings)
    tie_embeddings: bool = True  # output projection = token embedding
    rope_theta: float = 10000.0  # RoPE base theta
    norm: str = "layernorm"  # "layernorm" (gain and bias) or "rmsnorm" (gain only, Llama)
    norm_eps: float = 1e-5  # eps inside the norms' square root
    mlp: str = "gelu"  # dense MLP: "gelu" (d -> f -> d) or "swiglu" (gate and up d -> f, down f -> d; Llama)
    n_kv_heads: int | None = None  # H_kv key/value heads (grouped-query attention); None = n_heads

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "n_layers", "n_heads", "d_ff", "max_seq_len"):
            _int(name, getattr(self, name), 1)
        _int("n_experts", self.n_experts, 0)
        if self.n_experts:
            if isinstance(self.top_k, bool) or not isinstance(self.top_k, int) or not 1 <= self.top_k <= self.n_experts:
                raise ConfigError(f"top_k must be an integer in [1, {self.n_experts}] (n_experts), got {self.top_k!r}")
        if self.d_model % self.n_heads:
            raise ConfigError(f"d_model {self.d_model} must be a multiple of n_heads {self.n_heads}")
        if self.positional not in POSITIONALS:
            raise ConfigError(f"positional must be one of {', '.join(POSITIONALS)}; got {self.positional!r}")
        if self.positional == "rope" and self.head_dim % 2:
            raise ConfigError(f"rotary positions need an even head dimension, got d_model/n_heads = {self.head_dim}")
        if not (isinstance(self.dropout, (int, float)) and 0.0 <= self.dropout < 1.0):
            raise ConfigError(f"dropout must be a number in [0, 1), got {self.dropout!r}")
        if not (isinstance(self.rope_theta, (int, float)) and self.rope_theta > 1.0):
            raise ConfigError(f"rope_theta must be a number > 1, got {self.rope_theta!r}")
        if not isinstance(self.tie_embeddings, bool):
            raise ConfigError(f"tie_embeddings must be true or false, got {self.tie_embeddings!r}")
        if self.norm not in NORMS:
            raise ConfigError(f"norm must be one of {', '.join(NORMS)}; got {self.norm!r}")
        if not (isinstance(self.norm_eps, (int, float)) and not isinstance(self.norm_eps, bool) and 0.0 < self.norm_eps < 1.0):
            raise ConfigError(f"norm_eps must be a number in (0, 1), got {self.norm_eps!r}")
        if self.mlp not in MLPS:
            raise ConfigError(f"mlp must be one of {', '.join(MLPS)}; got {self.mlp!r}")
        if self.mlp != "gelu" and self.n_experts:
            raise ConfigError(f"MoE experts are GELU MLPs; mlp={self.mlp!r} needs n_experts = 0")
        if self.n_kv_heads is not None:
            _int("n_kv_heads", self.n_kv_heads, 1)
            if self.n_heads % self.n_kv_heads:
                raise ConfigError(f"n_heads {self.n_heads} must be a multiple of n_kv_heads {self.n_kv_heads}")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def kv_heads(self) -> int:
        """H_kv, the key/value heads (n_heads unless grouped-query)."""
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

    @property
    def is_moe(self) -> bool:
        return self.n_experts > 0

    def parameter_count(self) -> int:
        """Parameters of the model, counted analytically (no allocation):

            V d  [+ S_max d learned positions]  [+ V d untied head]  + n_g d (final norm)
            + n_layers [ 2 n_g d  (two norms)  + ATT  + MLP ],
            ATT = 2 d^2 + 2 d H_kv d_h  (W_qkv, W_o; 4 d^2 without grouped-query attention)
            MLP = 2 d f  (GELU)   or   3 d f  (SwiGLU)   or   d E + 2 E d f  (router and E experts)

        with n_g = 2 gain-and-bias vectors per LayerNorm, 1 gain per RMSNorm.
        """
        d, f, V = self.d_model, self.d_ff, self.vocab_size
        mlp = self._dense_mlp_weights() if not self.is_moe else d * self.n_experts + 2 * self.n_experts * d * f
        n_g = 2 if self.norm == "layernorm" else 1
        per_layer = 2 * n_g * d + self._attention_weights() + mlp
        total = V * d + n_g * d + self.n_layers * per_layer
        if self.positional == "learned":
            total += self.max_seq_len * d
        if not self.tie_embeddings:
            total += V * d
        return total

    def _attention_weights(self) -> int:
        return 2 * self.d_model**2 + 2 * self.d_model * self.kv_heads * self.head_dim

    def _dense_mlp_weights(self) -> int:
        return (2 if self.mlp == "gelu" else 3) * self.d_model * self.d_ff

    def active_parameter_count(self) -> int:
        """Parameters one token uses (MoE: k of the E experts), the N of the 6 N FLOPs/token rule."""
        if not self.is_moe:
            return self.parameter_count()
        idle = self.n_layers * 2 * (self.n_experts - self.top_k) * self.d_model * self.d_ff
        return self.parameter_count() - idle

    def flops_per_token(self, seq_len: int, training: bool = True) -> int:
        """Model FLOPs per token for sequences of `seq_len` tokens (the numerator of MFU):

            forward = 2 N_mm + 4 n_layers d T,    training = 3 x forward = 6 N_mm + 12 n_layers d T

        (PaLM, Chowdhery et al. 2022, appendix B), N_mm the matmul weights one token uses (attention
        4 d^2 (2 d^2 + 2 d H_kv d_h grouped-query), MLP 2 d f (SwiGLU 3 d f) or router d E + 2 k d f
        per layer, and the V d output head; no embedding
        lookup, norms or elementwise work), and attention scores and values counted over the full
        T x T square. Useful work only: MoE dispatch padding is not counted.
        """
        _int("seq_len", seq_len, 1)
        d, f = self.d_model, self.d_ff
        mlp = self._dense_mlp_weights() if not self.is_moe else d * self.n_experts + 2 * self.top_k * d * f
        matmul_weights = self.n_layers * (self._attention_weights() + mlp) + self.vocab_size * d
        forward = 2 * matmul_weights + 4 * self.n_layers * d * seq_len
        return 3 * forward if training else forward


def preset_config(name: str, vocab_size: int, **overrides) -> ModelConfig:
    """`ModelConfig` of preset `name` (MODEL_PRESETS) for a vocabulary, with fields overridden."""
    if name not in MODEL_PRESETS:
        raise ConfigError(f"unknown model preset {name!r}; valid names are {', '.join(MODEL_PRESETS)}")
    return ModelConfig(**{**MODEL_PRESETS[name], "vocab_size": vocab_size, **overrides})


def _norm(config: ModelConfig) -> nn.Module:
    if config.norm == "rmsnorm":
        return nn.RMSNorm(config.d_model, eps=config.norm_eps)
    return nn.LayerNorm(config.d_model, eps=config.norm_eps)


def _dense_mlp(config: ModelConfig) -> nn.Module:
    return SwiGLUMLP(config.d_model, config.d_ff) if config.mlp == "swiglu" else DenseMLP(config.d_model, config.d_ff)


class Block(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        d = config.d_model
        self.ln1, self.ln2 = _norm(config), _norm(config)
        self.attn = Attention(d, config.n_heads, config.dropout, config.kv_heads)
        self.mlp = MoEMLP(d, config.d_ff, config.n_experts, config.top_k) if config.is_moe else _dense_mlp(config)
        self.drop = nn.Dropout(config.dropout)

    def forward(self, x, rope, mask, cache_kv, start, experts, token_mask, packed=None):
        """-> (x, experts (B, T, k) or None, load-balance loss or None)."""
        drop = self.drop if self.training and self.drop.p > 0 else (lambda y: y)  # skip a no-op module call per branch
        x = x + drop(self.attn(self.ln1(x), rope, mask, cache_kv, start, packed))
        if isinstance(self.mlp, MoEMLP):
            out, experts, balance = self.mlp(self.ln2(x), experts, token_mask)
        else:
            out, experts, balance = self.mlp(self.ln2(x)), None, None
        return x + drop(out), experts, balance


class CausalLM(nn.Module):
    """The built-in causal transformer; see the module docstring for the call."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        d = config.d_model
        self.embed = nn.Embedding(config.vocab_size, d)
        self.pos_embed = nn.Embedding(config.max_seq_len, d) if config.positional == "learned" else None
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layers))
        self.ln_f = _norm(config)
        self.head = None if config.tie_embeddings else nn.Linear(d, config.vocab_size, bias=False)

    def num_parameters(self) -> int:
        """Parameters allocated (a tied weight once); equals `config.parameter_count()`."""
        return sum(p.numel() for p in self.parameters())

    @torch.no_grad()
    def init_weights(self, generator: torch.Generator | None = None) -> None:
        """N(0, 0.02) matrices, residual outputs scaled by 1/sqrt(2 n_layers) (GPT-2), unit LN gains."""
        residual_std = INIT_STD / math.sqrt(2 * self.config.n_layers)
        for name, p in self.named_parameters():
            if p.ndim < 2:  # LayerNorm: weight 1, bias 0
                p.fill_(1.0 if name.endswith("weight") else 0.0)
            elif name.endswith(("proj.weight", "down.weight", "w_down")):
                nn.init.normal_(p, 0.0, residual_std, generator=generator)
            else:
                nn.init.normal_(p, 0.0, INIT_STD, generator=generator)

    def new_kv_cache(self, batch: int, slots: int, dtype: torch.dtype | None = None) -> KVCache:
        """A cache for `batch` rows of up to `slots` tokens, allocated once. The dtype is the
        autocast dtype when autocast is on for the model's device, else the parameters'."""
        c = self.config
        device = self.embed.weight.device
        if dtype is None:
            autocast = torch.is_autocast_enabled(device.type)
            dtype = torch.get_autocast_dtype(device.type) if autocast else self.embed.weight.dtype
        return KVCache.allocate(c.n_layers, batch, c.kv_heads, slots, c.head_dim, dtype=dtype, device=device)

    def forward(self, input_ids, attention_mask=None, kv_cache: KVCache | None = None, positions=None, routing=None):
        """Logits (B, T, V) float32 of `input_ids` (B, T) and aux (module docstring).

        attention_mask: (B, T) 1 for real tokens (bool or int), None = all real. With `kv_cache`
        the inputs fill the next T slots and attend to everything cached before them.
        routing: a sequence of one (B, T, k) expert tensor per layer (or a (n_layers, B, T, k)
        tensor) to replay; MoE models only.
        """
        if input_ids.ndim != 2 or input_ids.dtype != torch.long:
            raise ValueError(f"input_ids must be an int64 tensor (B, T), got {input_ids.dtype} {tuple(input_ids.shape)}")
        B, T = input_ids.shape
        c = self.config
        real = torch.ones(B, T, dtype=torch.bool, device=input_ids.device) if attention_mask is None else attention_mask.bool()
        if real.shape != (B, T):
            raise ValueError(f"attention_mask must have shape {(B, T)}, got {tuple(real.shape)}")
        start = 0 if kv_cache is None else kv_cache.length
        if start + T > (c.max_seq_len if kv_cache is None else kv_cache.capacity):
            limit = c.max_seq_len if kv_cache is None else kv_cache.capacity
            raise ValueError(f"{start + T} tokens exceed the {'cache capacity' if kv_cache else 'max_seq_len'} {limit}")
        if positions is None:
            offset = 0 if kv_cache is None else kv_cache.n_real[:, None]
            positions = (offset + real.long().cumsum(-1) - 1).clamp(min=0)  # (B, T) 0 at the first real token
        routing = self._check_routing(routing, B, T)
        packing = None if kv_cache is not None or attention_mask is None else self._packing(real)
        if packing is not None:  # padding skipped (module docstring)
            return self._packed_pass(input_ids, positions, routing, packing)
        if kv_cache is not None:
            kv_cache.key_mask[:, start : start + T] = real
            mask = attention_mask_4d(kv_cache.key_mask[:, : start + T], start, T)
        else:
            mask = None if attention_mask is None else attention_mask_4d(real, 0, T)
        if kv_cache is not None and T == 1 and not c.is_moe and int(real.sum()) <= SKIP_PADDING_ROWS * B:
            rows = real[:, 0].nonzero()[:, 0]  # (n,) the rows with a real token; the rest are not computed
            logits = torch.zeros(B, 1, c.vocab_size, device=input_ids.device)
            if len(rows):
                pick = lambda t: t.index_select(0, rows)  # noqa: E731  (faster than t[rows] on small tensors)
                mask = attention_mask_4d(pick(kv_cache.key_mask[:, : start + 1]), start, 1)  # (n, 1, 1, S')
                logits.index_copy_(0, rows, self._trunk(pick(input_ids), pick(positions), mask, kv_cache, start, None,
                                                        pick(real), rows)[0])
            kv_cache.length = start + 1
            kv_cache.n_real += real[:, 0].long()
            return logits, {"routing": None, "load_balance_loss": None}
        logits, decisions, balances = self._trunk(input_ids, positions, mask, kv_cache, start, routing, real, None)
        if kv_cache is not None:
            kv_cache.length = start + T
            kv_cache.n_real += real.long().sum(-1)
        if not c.is_moe:
            return logits, {"routing": None, "load_balance_loss": None}
        return logits, {"routing": tuple(decisions), "load_balance_loss": torch.stack(balances).mean()}

    @staticmethod
    def _packing(real: torch.Tensor) -> Packed | None:
        """`_attention.pack` of `real` (B, T) at PAD_BUCKETS and PAD_SAVING; None inside torch.compile (its graphs
        would break on the data-dependent shapes)."""
        return None if torch.compiler.is_compiling() else pack(real, PAD_BUCKETS, PAD_SAVING)

    def _packed_pass(self, input_ids, positions, routing, packing: Packed):
        """`forward` on the real positions only: logits 0 at padding, a padding position's expert set 0..k-1."""
        B, T = input_ids.shape
        c = self.config
        pick = lambda t: t.reshape(B * T, *t.shape[2:]).index_select(0, packing.index)[None]  # noqa: E731  (1, n, ...)
        replay = None if routing is None else [pick(layer) for layer in routing]
        out, decisions, balances = self._trunk(pick(input_ids), pick(positions), None, None, 0, replay, None, None, packing)
        logits = out.new_zeros(B * T, c.vocab_size).index_copy(0, packing.index, out[0]).view(B, T, c.vocab_size)
        if not c.is_moe:
            return logits, {"routing": None, "load_balance_loss": None}
        filler = torch.arange(c.top_k, device=input_ids.device).repeat(B * T, 1)  # (B T, k)
        routing = tuple(filler.index_copy(0, packing.index, d[0]).view(B, T, c.top_k) for d in decisions)
        return logits, {"routing": routing, "load_balance_loss": torch.stack(balances).mean()}

    def _trunk(self, input_ids, positions, mask, kv_cache, start, routing, real, rows, packed=None):
        """(logits (B, T, V) float32, per-layer expert sets, per-layer balance losses); `rows` (n,)
        the cache rows of the inputs' rows (None: all rows, in order); `packed`: the inputs are the
        real positions (1, n) of a (B, T) batch (`_attention.Packed`), the logits (1, n, V)."""
        c = self.config
        x = self.embed(input_ids)  # (B, T, d)
        rope = None
        if self.pos_embed is not None:
            x = x + self.pos_embed(positions)
        else:
            # theta^(-2i/d_h), (d_h / 2,), made here in float32 (a buffer would follow model.to(bf16))
            exponents = torch.arange(0, c.head_dim, 2, dtype=torch.float32, device=input_ids.device) / c.head_dim
            rope = rope_angles(positions, c.rope_theta**-exponents)
        decisions, balances = [], []
        for i, block in enumerate(self.blocks):
            kv = None if kv_cache is None else (kv_cache.keys[i], kv_cache.values[i], rows)
            x, experts, balance = block(x, rope, mask, kv, start, None if routing is None else routing[i], real, packed)
            decisions.append(experts)
            balances.append(balance)
        h = self.ln_f(x)
        weight = self.embed.weight if self.head is None else self.head.weight
        return nn.functional.linear(h, weight).float(), decisions, balances  # (B, T, V)

    def _check_routing(self, routing, B: int, T: int):
        if routing is None:
            return None
        c = self.config
        if not c.is_moe:
            raise ValueError("a dense model has no router; routing must be None")
        if len(routing) != c.n_layers:
            raise ValueError(f"routing must hold one expert tensor per layer ({c.n_layers}), got {len(routing)}")
        for layer in routing:
            if tuple(layer.shape) != (B, T, c.top_k):
                raise ValueError(f"each layer's routing must have shape {(B, T, c.top_k)}, got {tuple(layer.shape)}")
        return routing


def build_model(config: ModelConfig, generator: torch.Generator | None = None) -> CausalLM:
    """A `CausalLM` of `config` with initialised weights (`generator` seeds them; None: torch's
    global generator). Built under `torch.device("meta")` it allocates nothing."""
    if not isinstance(config, ModelConfig):
        raise ConfigError(f"build_model needs a ModelConfig, got {type(config).__name__}")
    model = CausalLM(config)
    if model.embed.weight.device.type != "meta":
        model.init_weights(generator)
    return model
