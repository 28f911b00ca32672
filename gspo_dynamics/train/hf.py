"""Hugging Face causal LMs behind the built-in model's call (optional extra: `gspo-dynamics[hf]`).

    model = load_hf_model("path/to/local/model")            # weights from local files only
    model = load_hf_model(transformers.LlamaConfig(...))    # a fresh model of a config
    model = load_hf_model({"model_type": "llama", ...})     # the same from a plain dict
    logits, aux = model(input_ids, attention_mask=None, kv_cache=None, positions=None)

Nothing is ever downloaded: paths are read with `local_files_only=True`, and a path that is not
a local directory is an error. A directory holding only a `config.json` builds a fresh model of
that config (the benchmarks compare trainers on one config that way).

The wrapper speaks the `CausalLM` protocol (`generate` and `completion_log_probs` take it):
`config.vocab_size`, `config.max_seq_len`, `new_kv_cache`, float32 logits, positions counted
from each row's first real token. Its cache wraps transformers' own (`DynamicCache`, which grows
by concatenation rather than being preallocated). Routing replay is not supported: `aux` is
{"routing": None, "load_balance_loss": None}.

Native path: `load_hf_model(..., native=True)` builds the built-in `CausalLM` of the same
architecture and copies the weights into it, so rollouts use the preallocated KV cache and the
fused projections (W_q, W_k, W_v stacked into W_qkv; W_gate, W_up into one matmul) instead of
transformers' code. Supported: Llama-family configs (`model_type` "llama", "mistral" without a
sliding window shorter than the context) with SiLU, no biases, default RoPE, head_dim = hidden /
heads; `native_config` names the reason for anything else. `native="auto"` takes that path when
supported and the wrapper otherwise; `native=False` (the default) always wraps. The native model
computes the same logits as transformers' forward up to float32 summation order (tests).
`hf_state_dict(model, hf_config)` maps the native weights back to transformers' names, and
`save_hf(model, hf_config, directory)` writes either kind of model as a directory that
`transformers.AutoModelForCausalLM.from_pretrained` loads.

The trainer (`--model hf:DIR`) calls `load_hf_policy(DIR, backend)`: backend "auto" (native when
supported, else the wrapper), "native" (an error naming the reason when unsupported) or "wrapper".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.train.config import HF_BACKENDS
from gspo_dynamics.train.model import CausalLM, ModelConfig, build_model

INSTALL_HINT = "install the optional extra: pip install 'gspo-dynamics[hf]'"


def _transformers():
    try:
        import transformers
    except ImportError:
        raise ConfigError(f"Hugging Face models need the transformers package; {INSTALL_HINT}") from None
    return transformers


@dataclass(frozen=True)
class HFConfigView:
    """What the trainer reads from a model's config; `hf` is the transformers config."""

    vocab_size: int
    max_seq_len: int
    hf: object
    is_moe: bool = False


@dataclass
class HFCache:
    """transformers' cache plus the attention mask of the slots filled so far."""

    capacity: int
    past: object = None  # transformers' cache object, created by the first forward
    mask: torch.Tensor | None = None  # (B, length) int64
    n_real: torch.Tensor | None = None  # (B,) real tokens so far
    length: int = 0


class HFCausalLM(nn.Module):
    """A transformers causal LM with the `(logits, aux)` call of `CausalLM`."""

    def __init__(self, hf_model: nn.Module) -> None:
        super().__init__()
        self.hf_model = hf_model
        c = hf_model.config
        max_len = getattr(c, "max_position_embeddings", None) or getattr(c, "n_positions", None) or 2**31 - 1
        self.config = HFConfigView(vocab_size=int(c.vocab_size), max_seq_len=int(max_len), hf=c)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def new_kv_cache(self, batch: int, slots: int, dtype=None) -> HFCache:
        return HFCache(capacity=slots)

    def forward(self, input_ids, attention_mask=None, kv_cache: HFCache | None = None, positions=None, routing=None):
        if routing is not None:
            raise ValueError("routing replay is not supported for Hugging Face models; routing must be None")
        B, T = input_ids.shape
        mask = torch.ones_like(input_ids) if attention_mask is None else attention_mask.to(torch.long)
        if kv_cache is None:
            if positions is None:
                positions = (mask.cumsum(-1) - 1).clamp(min=0)
            out = self.hf_model(input_ids=input_ids, attention_mask=mask, position_ids=positions, use_cache=False)
            return out.logits.float(), {"routing": None, "load_balance_loss": None}
        if kv_cache.length + T > kv_cache.capacity:
            raise ValueError(f"{kv_cache.length + T} tokens exceed the cache capacity {kv_cache.capacity}")
        n_real = torch.zeros(B, dtype=torch.long, device=input_ids.device) if kv_cache.n_real is None else kv_cache.n_real
        if positions is None:
            positions = (n_real[:, None] + mask.cumsum(-1) - 1).clamp(min=0)
        full_mask = mask if kv_cache.mask is None else torch.cat([kv_cache.mask, mask], dim=1)
        out = self.hf_model(
            input_ids=input_ids, attention_mask=full_mask, position_ids=positions,
            past_key_values=kv_cache.past, use_cache=True,
        )
        kv_cache.past, kv_cache.mask = out.past_key_values, full_mask
        kv_cache.n_real, kv_cache.length = n_real + mask.sum(-1), kv_cache.length + T
        return out.logits.float(), {"routing": None, "load_balance_loss": None}


NATIVE_TYPES: tuple[str, ...] = ("llama", "mistral")  # Llama-architecture model_types the native path builds
NATIVE_MODES = (False, True, "auto")


def load_hf_model(path_or_config, dtype: torch.dtype | None = None, native=False) -> HFCausalLM | CausalLM:
    """A transformers causal LM from a local directory, a transformers config, or a config dict
    (with "model_type"), its parameters cast to `dtype` when given; never downloads.

    native: False wraps it as `HFCausalLM`; True returns the built-in `CausalLM` holding its
    weights (ConfigError naming the reason when the architecture is not supported); "auto" the
    built-in model when supported, else the wrapper (module docstring).
    """
    if not any(native is mode for mode in NATIVE_MODES):
        raise ConfigError(f"native must be False, True or 'auto', got {native!r}")
    model = _load(path_or_config)
    if native is not False:
        config, reason = _native_config(model.hf_model.config)
        if config is not None:
            model = native_from_hf(model.hf_model)
        elif native is True:
            raise ConfigError(f"no native built-in model for this Hugging Face config: {reason}")
    return model if dtype is None else model.to(dtype)


def load_hf_policy(path_or_config, backend: str = "auto") -> tuple[HFCausalLM | CausalLM, object, str]:
    """(model, its transformers config, why it is not native: "" when it is) for the trainer.

    backend: "auto" the built-in model when `native_config` supports the config, else the wrapper;
    "native" the built-in model or a ConfigError naming the reason; "wrapper" always `HFCausalLM`.
    The built-in model holds copies of the transformers weights (`native_from_hf`).
    """
    if backend not in HF_BACKENDS:
        raise ConfigError(f"hf_backend must be one of {', '.join(HF_BACKENDS)}; got {backend!r}")
    wrapped = _load(path_or_config)
    hf_config = wrapped.hf_model.config
    if backend == "wrapper":
        return wrapped, hf_config, "hf_backend 'wrapper' was asked for"
    config, reason = _native_config(hf_config)
    if config is None:
        if backend == "native":
            raise ConfigError(f"no native built-in model for this Hugging Face config: {reason}")
        return wrapped, hf_config, reason
    return native_from_hf(wrapped.hf_model), hf_config, ""


def save_hf(model: HFCausalLM | CausalLM, hf_config, directory) -> Path:
    """Write `model` (the wrapper, or a native model of `hf_config`) as a transformers model
    directory (config.json and weights) for `AutoModelForCausalLM.from_pretrained`; the native
    weights go through `hf_state_dict` (a strict load: every transformers name, right shapes)."""
    transformers = _transformers()
    if isinstance(model, HFCausalLM):
        hf_model = model.hf_model
    else:
        hf_model = transformers.AutoModelForCausalLM.from_config(hf_config)
        hf_model.load_state_dict({k: v.detach().cpu() for k, v in hf_state_dict(model, hf_config).items()})
    hf_model.save_pretrained(directory)
    return Path(directory)


def native_config(hf_config) -> ModelConfig:
    """The `ModelConfig` of the built-in model with the architecture of a transformers config;
    ConfigError naming the unsupported feature otherwise."""
    config, reason = _native_config(hf_config)
    if config is None:
        raise ConfigError(f"no native built-in model for this Hugging Face config: {reason}")
    return config


def _native_config(c) -> tuple[ModelConfig | None, str]:
    """(config, "") when supported, else (None, the reason)."""
    model_type = getattr(c, "model_type", None)
    if model_type not in NATIVE_TYPES:
        return None, f"model_type {model_type!r} (supported: {', '.join(NATIVE_TYPES)})"
    rope = getattr(c, "rope_parameters", None) or getattr(c, "rope_scaling", None) or {}
    theta = rope.get("rope_theta", getattr(c, "rope_theta", None))
    heads = c.num_attention_heads
    checks = [
        (getattr(c, "hidden_act", None) == "silu", f"hidden_act {getattr(c, 'hidden_act', None)!r} (needs 'silu')"),
        (not getattr(c, "attention_bias", False) and not getattr(c, "mlp_bias", False), "biases in attention or MLP"),
        (rope.get("rope_type", "default") == "default", f"rope_type {rope.get('rope_type')!r} (needs 'default')"),
        (isinstance(theta, (int, float)), "no rope_theta"),
        (getattr(c, "pretraining_tp", 1) == 1, "pretraining_tp != 1"),
        (not getattr(c, "attention_dropout", 0.0), "attention_dropout != 0"),
        (c.hidden_size % heads == 0 and (getattr(c, "head_dim", None) or c.hidden_size // heads) == c.hidden_size // heads,
         "head_dim != hidden_size / num_attention_heads"),
        ((getattr(c, "sliding_window", None) or 2**62) >= c.max_position_embeddings, "a sliding window shorter than the context"),
    ]
    for ok, reason in checks:
        if not ok:
            return None, reason
    kv = getattr(c, "num_key_value_heads", None) or heads
    try:
        return ModelConfig(
            vocab_size=c.vocab_size, d_model=c.hidden_size, n_layers=c.num_hidden_layers, n_heads=heads,
            d_ff=c.intermediate_size, max_seq_len=c.max_position_embeddings, positional="rope",
            tie_embeddings=bool(c.tie_word_embeddings), rope_theta=float(theta), norm="rmsnorm",
            norm_eps=float(c.rms_norm_eps), mlp="swiglu", n_kv_heads=None if kv == heads else kv,
        ), ""
    except ConfigError as err:
        return None, str(err)


def _weight_map(config: ModelConfig) -> list[tuple[str, tuple[str, ...]]]:
    """(built-in parameter name, the transformers names it stacks along dim 0), Llama family."""
    pairs = [("embed.weight", ("model.embed_tokens.weight",)), ("ln_f.weight", ("model.norm.weight",))]
    for i in range(config.n_layers):
        hf, ours = f"model.layers.{i}.", f"blocks.{i}."
        pairs += [
            (ours + "ln1.weight", (hf + "input_layernorm.weight",)),
            (ours + "attn.qkv.weight", tuple(hf + f"self_attn.{x}_proj.weight" for x in "qkv")),
            (ours + "attn.proj.weight", (hf + "self_attn.o_proj.weight",)),
            (ours + "ln2.weight", (hf + "post_attention_layernorm.weight",)),
            (ours + "mlp.gate_up.weight", (hf + "mlp.gate_proj.weight", hf + "mlp.up_proj.weight")),
            (ours + "mlp.down.weight", (hf + "mlp.down_proj.weight",)),
        ]
    if not config.tie_embeddings:
        pairs.append(("head.weight", ("lm_head.weight",)))
    return pairs


@torch.no_grad()
def native_from_hf(hf_model: nn.Module) -> CausalLM:
    """The built-in `CausalLM` of `hf_model`'s architecture (`native_config`) holding copies of its
    weights, in their dtype and on their device, in eval mode if `hf_model` is."""
    config = native_config(hf_model.config)
    state = hf_model.state_dict()
    weight = state["model.embed_tokens.weight"]
    with torch.device("meta"):
        model = build_model(config)
    model = model.to_empty(device=weight.device).to(weight.dtype)
    for name, sources in _weight_map(config):
        model.get_parameter(name).copy_(torch.cat([state[s] for s in sources], dim=0))
    return model.train(hf_model.training)


def hf_state_dict(model: CausalLM, hf_config) -> dict[str, torch.Tensor]:
    """The weights of a native model under transformers' names (the inverse of `native_from_hf`),
    for `transformers.AutoModelForCausalLM.from_config(hf_config).load_state_dict(...)`."""
    config = native_config(hf_config)
    if config != model.config:
        raise ConfigError("the model's config is not the native config of hf_config")
    head_dim, heads = config.head_dim, config.n_heads
    splits = {"attn.qkv.weight": [heads * head_dim] + 2 * [config.kv_heads * head_dim], "mlp.gate_up.weight": 2 * [config.d_ff]}
    out = {}
    for name, sources in _weight_map(config):
        tensor = model.get_parameter(name).detach()
        parts = tensor.split(next(v for k, v in splits.items() if name.endswith(k)), dim=0) if len(sources) > 1 else (tensor,)
        out.update(zip(sources, parts))
    if config.tie_embeddings:
        out["lm_head.weight"] = out["model.embed_tokens.weight"]
    return out


def _load(path_or_config) -> HFCausalLM:
    transformers = _transformers()
    auto = transformers.AutoModelForCausalLM
    if isinstance(path_or_config, transformers.PretrainedConfig):
        return HFCausalLM(auto.from_config(path_or_config))
    if isinstance(path_or_config, dict):
        options = dict(path_or_config)
        model_type = options.pop("model_type", None)
        if not isinstance(model_type, str):
            raise ConfigError("a Hugging Face config dict needs a 'model_type' string (e.g. 'llama', 'gpt2')")
        try:
            config = transformers.AutoConfig.for_model(model_type, **options)
        except ValueError as err:
            raise ConfigError(f"bad Hugging Face config: {err}") from None
        return HFCausalLM(auto.from_config(config))
    if not isinstance(path_or_config, (str, Path)):
        raise ConfigError(f"load_hf_model needs a local path, a transformers config or a dict, got {type(path_or_config).__name__}")
    path = Path(path_or_config)
    if not path.is_dir():
        raise ConfigError(f"no local model directory at {str(path)!r} (models are never downloaded)")
    if not (path / "config.json").is_file():
        raise ConfigError(f"{str(path)!r} has no config.json: not a Hugging Face model directory")
    weights = [p for p in path.iterdir() if p.suffix in (".safetensors", ".bin") or p.name.endswith(".index.json")]
    try:
        if not weights:  # a config alone: a fresh model of it
            config = transformers.AutoConfig.from_pretrained(path, local_files_only=True)
            return HFCausalLM(auto.from_config(config))
        return HFCausalLM(auto.from_pretrained(path, local_files_only=True))
    except (OSError, ValueError, KeyError) as err:
        raise ConfigError(f"cannot load the Hugging Face model at {str(path)!r}: {err}") from None
