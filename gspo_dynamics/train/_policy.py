"""The trainer's policy model from `TrainConfig.model`: a preset, a JSON file of ModelConfig fields,
or hf:DIR (a local Hugging Face causal LM, run natively when its architecture allows).

    policy = build_policy("100k", vocab_size, init_seed)
    policy = build_policy("hf:path/to/llama", vocab_size, init_seed, hf_backend="auto")
    policy.model, policy.config, policy.backend, policy.description

backend: "builtin" (a preset or ModelConfig file), "native" (hf:DIR rebuilt as the built-in
`CausalLM` holding the transformers weights, `hf.load_hf_policy`) or "wrapper" (transformers'
own forward behind the `CausalLM` call, `hf.HFCausalLM`). `description` is what a checkpoint
records and a resume compares: the ModelConfig fields, or for hf:DIR the backend, the transformers
config (`hf.<key>`, everything but its path and library version, so a changed config.json is a
named difference) and, when native, the built-in config (`native.<key>`).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.train.config import HF_PREFIX
from gspo_dynamics.train.model import MODEL_PRESETS, ModelConfig, build_model, preset_config

# transformers config keys that do not describe the model: where it was read from, which release wrote it
_HF_UNRECORDED = ("_name_or_path", "transformers_version")


@dataclass(frozen=True, eq=False)
class Policy:
    model: torch.nn.Module  # on the CPU, fresh (built-in init) or holding the hf:DIR weights
    config: Any  # ModelConfig (builtin, native) or hf.HFConfigView (wrapper)
    backend: str  # "builtin" | "native" | "wrapper"
    description: dict[str, Any]  # recorded in checkpoints, compared on resume (module docstring)
    hf_config: Any = None  # the transformers config of an hf:DIR model
    why_not_native: str = ""  # wrapper: the unsupported feature (or that the wrapper was asked for)


def resolve_model_config(spec: str, vocab_size: int) -> ModelConfig:
    """A preset name (`MODEL_PRESETS`), or a JSON file of ModelConfig fields, optionally with
    "preset": name to start from that preset (e.g. {"preset": "100k", "n_experts": 4})."""
    if spec in MODEL_PRESETS:
        return preset_config(spec, vocab_size)
    path = Path(spec)
    if not path.is_file():
        raise ConfigError(f"model {spec!r} is neither a preset ({', '.join(MODEL_PRESETS)}) nor a JSON file of ModelConfig fields")
    try:
        fields = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read the model config {spec!r}: {exc}") from None
    if not isinstance(fields, dict):
        raise ConfigError(f"the model config {spec!r} must be one JSON object of ModelConfig fields")
    if fields.pop("vocab_size", vocab_size) != vocab_size:
        raise ConfigError(f"the model config {spec!r} has a vocab_size other than the tokenizer's {vocab_size}")
    preset = fields.pop("preset", None)
    known = {f.name for f in dataclasses.fields(ModelConfig)} - {"vocab_size"}
    unknown = sorted(set(fields) - known)
    if unknown:
        raise ConfigError(f"unknown model setting {unknown[0]!r} in {spec!r}; valid settings are preset, {', '.join(sorted(known))}")
    if preset is not None:
        return preset_config(preset, vocab_size, **fields)
    return ModelConfig(vocab_size=vocab_size, **fields)


def build_policy(spec: str, vocab_size: int, init_seed: int, hf_backend: str = "auto") -> Policy:
    """The policy of `spec` (module docstring). A fresh model's init draws from `init_seed` (an
    hf:DIR holding only a config.json draws transformers' init from torch's RNG seeded with it);
    torch's global RNG is left as it was."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(init_seed)
        if not spec.startswith(HF_PREFIX):
            config = resolve_model_config(spec, vocab_size)
            model = build_model(config, torch.Generator().manual_seed(init_seed))
            return Policy(model, config, "builtin", dataclasses.asdict(config))
        from gspo_dynamics.train.hf import load_hf_policy

        model, hf_config, why_not = load_hf_policy(spec[len(HF_PREFIX):], hf_backend)
    if model.config.vocab_size != vocab_size:
        raise ConfigError(f"the Hugging Face model has vocab_size {model.config.vocab_size}; the tasks' tokenizer needs {vocab_size}")
    backend = "wrapper" if why_not else "native"
    recorded = {k: v for k, v in json.loads(hf_config.to_json_string(use_diff=False)).items() if k not in _HF_UNRECORDED}
    description = {"backend": backend, **{f"hf.{k}": v for k, v in recorded.items()}}
    if backend == "native":
        description.update({f"native.{k}": v for k, v in dataclasses.asdict(model.config).items()})
    return Policy(model, model.config, backend, description, hf_config, why_not)


def check_save_hf(spec: str, directory) -> Path:
    """The directory to write the trained hf:DIR policy into (`hf.save_hf`); ConfigError, before any
    training, for a model that is not hf:DIR or a directory that already holds files."""
    if not spec.startswith(HF_PREFIX):
        raise ConfigError(f"save_hf writes Hugging Face models; model {spec!r} is not hf:DIR")
    path = Path(directory)
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise ConfigError(f"save_hf directory {str(path)!r} already exists and is not empty; choose a new one")
    return path
