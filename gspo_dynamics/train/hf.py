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
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from gspo_dynamics._errors import ConfigError

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


def load_hf_model(path_or_config, dtype: torch.dtype | None = None) -> HFCausalLM:
    """A transformers causal LM from a local directory, a transformers config, or a config dict
    (with "model_type"), wrapped as `HFCausalLM`, its parameters cast to `dtype` when given;
    never downloads (module docstring)."""
    model = _load(path_or_config)
    return model if dtype is None else model.to(dtype)


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
