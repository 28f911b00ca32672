"""Hyperparameters of a run from a config file: our own field names, or a TRL `GRPOConfig` dict.

TRL -> `Hyperparams` (TRL defaults where a key is absent, each one said in a note):

  learning_rate                          -> lr                     (default 1e-6)
  num_generations                        -> group_size G           (default 8)
  steps_per_generation x num_iterations  -> refresh_interval T     (defaults gradient_accumulation_steps (1) x 1)
  beta                                   -> kl_coef                (default 0.0)
  epsilon, epsilon_high                  -> clip_low, clip_high    (default 0.2, epsilon_high = epsilon)
  importance_sampling_level              -> correction token | sequence (default token)
  scale_rewards                          -> advantage std (group/batch/true) | mean (none/false)
  adam_beta1, adam_beta2, adam_epsilon   -> Adam(beta1, beta2, eps) (TRL trains with AdamW)

Our own names are the `Hyperparams` fields (lr, refresh_interval, group_size, kl_coef, momentum,
optimizer "sgd"|"adam", beta1, ...). Unknown keys are ignored, with a note naming them.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.theory.hyperparams import SGD, Adam, Hyperparams

TRL_KEYS = {
    "learning_rate", "num_generations", "steps_per_generation", "num_iterations", "beta", "epsilon",
    "epsilon_high", "importance_sampling_level", "scale_rewards", "adam_beta1", "adam_beta2", "adam_epsilon",
    "gradient_accumulation_steps",
}
OWN_KEYS = {
    "lr", "refresh_interval", "group_size", "num_groups", "advantage", "std_estimator", "std_eps", "correction",
    "clip_low", "clip_high", "kl_coef", "kl_estimator", "optimizer", "momentum", "beta1", "beta2", "eps",
}
# TRL GRPOConfig defaults (TRL >= 0.20) for the keys above.
TRL_DEFAULTS = {"learning_rate": 1e-6, "num_generations": 8, "num_iterations": 1, "beta": 0.0, "epsilon": 0.2,
                "importance_sampling_level": "token", "scale_rewards": "group", "adam_beta1": 0.9,
                "adam_beta2": 0.999, "adam_epsilon": 1e-8, "gradient_accumulation_steps": 1}


def _number(key: str, value, integer: bool = False):
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if integer:
        ok = ok and float(value) == int(value)
    if not ok:
        raise ConfigError(f"config key {key!r} must be a finite {'integer' if integer else 'number'}, got {value!r}")
    return int(value) if integer else float(value)


def _from_trl(cfg: dict, notes: list[str]) -> Hyperparams:
    def get(key):
        if key in cfg and cfg[key] is not None:
            return cfg[key]
        if key in TRL_DEFAULTS:
            notes.append(f"config: {key} not given, TRL's default {TRL_DEFAULTS[key]!r} assumed")
            return TRL_DEFAULTS[key]
        return None

    spg = cfg.get("steps_per_generation")
    if spg is None:
        spg = get("gradient_accumulation_steps")
        notes.append("config: steps_per_generation not given, gradient_accumulation_steps used (TRL's default)")
    T = _number("steps_per_generation", spg, integer=True) * _number("num_iterations", get("num_iterations"), integer=True)
    eps = _number("epsilon", get("epsilon"))
    eps_high = cfg.get("epsilon_high")
    level = get("importance_sampling_level")
    if level not in ("token", "sequence"):
        raise ConfigError(f"importance_sampling_level must be 'token' or 'sequence', got {level!r}")
    scale = get("scale_rewards")
    if scale in (True, "group", "batch", "true"):
        advantage = "std"
    elif scale in (False, "none", "false"):
        advantage = "mean"
    else:
        raise ConfigError(f"scale_rewards must be group, batch, none, true or false; got {scale!r}")
    optimizer = Adam(beta1=_number("adam_beta1", get("adam_beta1")), beta2=_number("adam_beta2", get("adam_beta2")),
                     eps=_number("adam_epsilon", get("adam_epsilon")))
    return Hyperparams(
        lr=_number("learning_rate", get("learning_rate")), optimizer=optimizer, refresh_interval=T,
        group_size=_number("num_generations", get("num_generations"), integer=True), advantage=advantage,
        correction=level, clip_low=eps, clip_high=eps if eps_high is None else _number("epsilon_high", eps_high),
        kl_coef=_number("beta", get("beta")),
    )


def _from_own(cfg: dict) -> Hyperparams:
    fields = {k: cfg[k] for k in OWN_KEYS - {"optimizer", "momentum", "beta1", "beta2", "eps"} if k in cfg}
    if "lr" not in fields:
        raise ConfigError("the config needs lr (or TRL's learning_rate)")
    name = cfg.get("optimizer", "sgd")
    if isinstance(name, dict):  # {"name": "adam", "beta1": ...} as `Diagnosis.to_json` writes it
        opt = dict(name)
        name = opt.pop("name", "sgd")
    else:
        opt = {k: cfg[k] for k in ("momentum", "beta1", "beta2", "eps") if k in cfg}
    try:
        if name == "sgd":
            optimizer = SGD(**{k: v for k, v in opt.items() if k == "momentum"})
        elif name == "adam":
            optimizer = Adam(**{k: v for k, v in opt.items() if k in ("beta1", "beta2", "eps")})
        else:
            raise ConfigError(f"optimizer must be sgd or adam, got {name!r}")
        return Hyperparams(optimizer=optimizer, **fields)
    except TypeError as exc:
        raise ConfigError(f"bad config value: {exc}") from None


def hyperparams_from_config(config: dict | str | Path) -> tuple[Hyperparams, list[str]]:
    """(Hyperparams, notes) from a dict or a JSON file (TRL GRPOConfig keys or our own field names)."""
    if not isinstance(config, dict):
        path = Path(config)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read the config file {str(path)!r}: {exc}") from None
        try:
            config = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"the config file {str(path)!r} is not valid JSON ({exc.msg} at line {exc.lineno})") from None
        if not isinstance(config, dict):
            raise ConfigError(f"the config file {str(path)!r} must hold a JSON object, got {type(config).__name__}")
    if isinstance(config.get("hparams"), dict):  # a corpus label.json or a diagnose --json output
        config = config["hparams"]
    notes: list[str] = []
    trl = set(config) & TRL_KEYS
    own = set(config) & OWN_KEYS
    unknown = sorted(set(config) - TRL_KEYS - OWN_KEYS)
    if unknown:
        shown = ", ".join(unknown[:10]) + (f" and {len(unknown) - 10} more" if len(unknown) > 10 else "")
        notes.append(f"config: ignored keys not used by the theory: {shown}")
    if trl and own - {"optimizer"}:
        raise ConfigError(f"the config mixes TRL keys ({', '.join(sorted(trl))}) with our own "
                          f"({', '.join(sorted(own))}); use one vocabulary")
    if trl:
        notes.insert(0, "config: read as a TRL GRPOConfig")
        return _from_trl(config, notes), notes
    if not own:
        raise ConfigError("the config has no hyperparameter this tool knows (TRL: learning_rate, num_generations, ...; "
                          "ours: lr, refresh_interval, group_size, ...)")
    return _from_own(config), notes
