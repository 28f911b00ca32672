"""Declarative sweeps: a JSON file in sims/ that names a testbed, a base configuration and a grid.

    {
      "description": "...",
      "bandit": {"ref_logit": -1.0},
      "base": {"kl_coef": 0.5, "optimizer": "sgd"},
      "grid": {"momentum": [0.0, 0.5, 0.9],
               "lr": {"geomspace": [0.5, 5.0], "quick": 3, "full": 7}},
      "settings": {"t_max": 64}
    }

`base` and `grid` keys are `Hyperparams` fields, plus `optimizer` ("sgd" | "adam") and the
optimizer's own fields (`momentum`; `beta1`, `beta2`, `eps`). A grid axis is a list, or
{"geomspace" | "linspace": [lo, hi], "quick": n, "full": n}. The grid is the Cartesian product
in the order the axes are written (the last axis varies fastest).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.theory.bandit import TwoArmBandit
from gspo_dynamics.theory.hyperparams import SGD, Adam, Hyperparams

OPTIMIZER_FIELDS = {"sgd": ("momentum",), "adam": ("beta1", "beta2", "eps")}


@dataclass(frozen=True)
class Sweep:
    bandit: TwoArmBandit
    configs: tuple[Hyperparams, ...]
    points: tuple[dict[str, Any], ...]  # the grid values of each config, in order
    settings: dict[str, Any] = field(default_factory=dict)
    description: str = ""


def _axis(name: str, spec, quick: bool) -> list:
    if isinstance(spec, list) and spec:
        return spec
    if isinstance(spec, dict) and len(spec.get("geomspace", spec.get("linspace", []))) == 2:
        kind = "geomspace" if "geomspace" in spec else "linspace"
        n = spec.get("quick" if quick else "full")
        if not isinstance(n, int) or n < 1:
            raise ConfigError(f"grid axis {name!r} needs an integer '{'quick' if quick else 'full'}' count, got {n!r}")
        return [float(x) for x in getattr(np, kind)(*spec[kind], n)]
    raise ConfigError(f"grid axis {name!r} must be a non-empty list or a geomspace/linspace spec, got {spec!r}")


def make_hyperparams(values: dict[str, Any]) -> Hyperparams:
    """Hyperparams from a flat dict that may carry `optimizer` and the optimizer's fields."""
    values = dict(values)
    name = values.pop("optimizer", "sgd")
    if name not in OPTIMIZER_FIELDS:
        raise ConfigError(f"optimizer must be one of {', '.join(OPTIMIZER_FIELDS)}; got {name!r}")
    opt_kwargs = {k: values.pop(k) for k in OPTIMIZER_FIELDS[name] if k in values}
    optimizer = SGD(**opt_kwargs) if name == "sgd" else Adam(**opt_kwargs)
    try:
        return Hyperparams(optimizer=optimizer, **values)
    except TypeError as exc:  # an unknown field name
        raise ConfigError(f"unknown hyperparameter in {sorted(values)}: {exc}") from None


def load_sweep(path: str | Path, *, quick: bool = False) -> Sweep:
    path = Path(path)
    try:
        spec = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read sweep {path}: {exc}") from None
    if not isinstance(spec, dict):
        raise ConfigError(f"sweep {path} must hold a JSON object")
    bandit = TwoArmBandit(**spec.get("bandit", {}))
    grid = spec.get("grid", {})
    axes = {name: _axis(name, axis, quick) for name, axis in grid.items()}
    points = [dict(zip(axes, combo)) for combo in itertools.product(*axes.values())]
    configs = tuple(make_hyperparams({**spec.get("base", {}), **point}) for point in points)
    return Sweep(bandit, configs, tuple(points), spec.get("settings", {}), spec.get("description", ""))
