"""verl's own key schema: the dotted keys of its shipped `trainer/config/_generated_ppo_*trainer.yaml` (every key of
its PPO trainer with its default, for each engine: FSDP, Megatron, TorchTitan, VeOmni), found through the package's
location without importing verl (its `__init__` needs ray), read once per process.

A key of a user's config is verl's where it is in that set, or below a key whose default is a free-form mapping (an
empty one: `override_config: {}`, `engine_kwargs.vllm: {}`, `reward_kwargs: {}`; any `override_*` mapping, passed
through to the engine's own config: `megatron.override_transformer_config.moe_router_dtype`) or null (`override_optimizer_config:
null`, `custom_reward_function.path: null`), or in a Hydra file's own sections (`defaults`, `hydra`). Where verl is not
installed `schema()` is None and the keys outside `predict._verl_fields`' dynamics subtrees are checked by section only.
"""

from __future__ import annotations

import functools
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gspo_dynamics._config_file import yaml_loader

SCHEMA_FILE = "trainer/config/_generated_ppo_trainer.yaml"  # under verl's package folder; its engines' siblings:
SCHEMA_GLOB = "_generated_ppo*_trainer.yaml"
# verl's `override_*` mappings (override_config, override_transformer_config, override_ddp_config, ...) are passed
# through to the model's or engine's own config class: free-form below, whatever keys the shipped YAML lists
PASS_THROUGH = "override_"
FREE_SECTIONS = ("defaults", "hydra", "ray_init", "model_engine")  # a Hydra file's own; ray_init an older release's
# free-form section; model_engine the config group verl's defaults list chooses, a top-level key of a resolved dump
# free-form mappings verl reads (`config.get("reward_kwargs", {})`) that its shipped YAML does not list
EXTRA_OPEN = ("custom_reward_function.reward_kwargs", "reward.custom_reward_function.reward_kwargs",
              "reward_model.reward_kwargs")  # the last: the reward manager's, free-form in forks and older releases


@dataclass(frozen=True)
class Schema:
    keys: frozenset[str]  # every dotted key of the shipped YAML, sections included
    open: frozenset[str]  # the keys whose default is an empty mapping or null: free-form below

    def knows(self, key: str) -> bool:
        """Whether `key` is verl's: in the schema, below an open key, or in a Hydra file's own sections."""
        if key in self.keys or key.partition(".")[0] in FREE_SECTIONS:
            return True
        parts = key.split(".")
        return any(".".join(parts[:i]) in self.open for i in range(1, len(parts)))


def _walk(tree: dict[str, Any], prefix: str, keys: set[str], open_: set[str]) -> None:
    for name, value in tree.items():
        key = f"{prefix}{name}"
        keys.add(key)
        if isinstance(value, dict) and value:
            _walk(value, key + ".", keys, open_)
        if value is None or isinstance(value, dict) and (not value or name.startswith(PASS_THROUGH)):
            open_.add(key)


def schema_file() -> Path | None:
    """The installed verl's `_generated_ppo_trainer.yaml`, or None (verl not installed, or a release without it)."""
    try:
        spec = importlib.util.find_spec("verl")  # locates the package; runs none of it
    except (ImportError, ValueError):
        return None
    for root in (spec.submodule_search_locations or ()) if spec else ():
        path = Path(root) / SCHEMA_FILE
        if path.is_file():
            return path
    return None


@functools.lru_cache(maxsize=1)
def schema() -> Schema | None:
    """The installed verl's key schema, or None where verl (or its shipped YAML) is not there."""
    path = schema_file()
    if path is None:
        return None
    keys: set[str] = set()
    open_: set[str] = set()
    for each in sorted(path.parent.glob(SCHEMA_GLOB)):
        try:
            tree = yaml.load(each.read_text(encoding="utf-8"), Loader=yaml_loader(fast=True))
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue
        if isinstance(tree, dict):
            _walk(tree, "", keys, open_)
    if not keys:
        return None
    keys |= set(EXTRA_OPEN)
    open_ |= set(EXTRA_OPEN)
    return Schema(keys=frozenset(keys), open=frozenset(open_))
