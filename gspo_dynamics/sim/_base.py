"""What the three bandit engines share: the checks of a batch of configs and a run, the per-config
tensors, the start logits, the group tables, and `BanditEngineBase`, the constructor and interface
that `simulate` drives (`_engine.BanditEngine`, `_fast.TwoArmEngine`, `_numba.NumbaEngine`)."""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
from scipy.special import gammaln

from gspo_dynamics._checks import positive_int
from gspo_dynamics._errors import ConfigError
from gspo_dynamics.sim._task import BanditTask
from gspo_dynamics.theory import finite_group
from gspo_dynamics.theory.hyperparams import Adam, Hyperparams

# Fields that shape the computation graph (sample counts, which loss, which estimator) must be
# equal across the configs of one batch; everything else is a per-config tensor.
SHARED_FIELDS: tuple[str, ...] = (
    "group_size",
    "num_groups",
    "advantage",
    "std_estimator",
    "std_eps",
    "correction",
    "kl_estimator",
)


@dataclass(frozen=True)
class ConfigTensors:
    """Per-config hyperparameters as (C, 1, 1, 1) tensors, broadcastable over (C, S, P, K)."""

    lr: torch.Tensor  # eta
    momentum: torch.Tensor  # SGD mu, or Adam b1
    gain: torch.Tensor  # weight of g in the first moment: 1 (SGD) or 1 - b1 (Adam)
    beta2: torch.Tensor  # Adam b2 (0 for SGD, unused)
    adam_eps: torch.Tensor  # Adam eps (1 for SGD, unused)
    is_adam: torch.Tensor  # bool
    refresh_interval: torch.Tensor  # T, int64
    clip_low: torch.Tensor
    clip_high: torch.Tensor
    kl_coef: torch.Tensor  # beta
    any_adam: bool
    any_kl: bool


def check_configs(configs: Sequence[Hyperparams]) -> tuple[Hyperparams, ...]:
    configs = tuple(configs)
    if not configs:
        raise ConfigError("configs must hold at least one Hyperparams, got none")
    for i, hp in enumerate(configs):
        if not isinstance(hp, Hyperparams):
            raise ConfigError(f"configs[{i}] must be a Hyperparams, got {type(hp).__name__}")
        if hp.clip_mode != "stop":
            raise ConfigError(f"configs[{i}] has clip_mode {hp.clip_mode!r}: the bandit simulator implements PPO's clip "
                              "(a clipped token's gradient off, 'stop'), not CISPO's capped weight")
    for name in SHARED_FIELDS:
        values = [getattr(hp, name) for hp in configs]
        if any(v != values[0] for v in values):
            raise ConfigError(
                f"{name} must be equal across the configs of one simulation, got {sorted(set(map(repr, values)))}; "
                "run one simulation per value"
            )
    return configs



def check_run(hp: Hyperparams, seeds, expected: bool, dtype) -> None:
    """Checks shared by both engines (ConfigError naming the bad value)."""
    positive_int("seeds", seeds)
    if dtype not in (torch.float32, torch.float64):
        raise ConfigError(f"dtype must be torch.float32 or torch.float64, got {dtype}")
    if not expected and hp.group_size is None:
        raise ConfigError("stochastic simulation needs a finite group_size, got None (G -> infinity); use expected=True")


def initial_logits(task: BanditTask, start_logits, shape: tuple[int, ...], tensor) -> torch.Tensor:
    """The task's start logits (or the override) broadcast to `shape` (C, S, P, K), checked finite."""
    start = task.start_logits if start_logits is None else start_logits
    try:
        logits = tensor(start).expand(shape).clone()
    except RuntimeError:
        raise ConfigError(f"start logits of shape {np.shape(start)} do not broadcast to {shape}") from None
    if not torch.isfinite(logits).all():
        raise ConfigError("start logits must be finite")
    return logits

def pack_configs(configs: Sequence[Hyperparams], device, dtype) -> ConfigTensors:
    def column(values, kind=dtype):
        return torch.tensor(values, dtype=kind, device=device).reshape(-1, 1, 1, 1)

    adam = [isinstance(hp.optimizer, Adam) for hp in configs]
    return ConfigTensors(
        lr=column([hp.lr for hp in configs]),
        momentum=column([hp.momentum for hp in configs]),
        gain=column([1.0 - hp.optimizer.beta1 if a else 1.0 for hp, a in zip(configs, adam)]),
        beta2=column([hp.optimizer.beta2 if a else 0.0 for hp, a in zip(configs, adam)]),
        adam_eps=column([hp.optimizer.eps if a else 1.0 for hp, a in zip(configs, adam)]),
        is_adam=column(adam, torch.bool),
        refresh_interval=column([hp.refresh_interval for hp in configs], torch.int64),
        clip_low=column([hp.clip_low for hp in configs]),
        clip_high=column([hp.clip_high for hp in configs]),
        kl_coef=column([hp.kl_coef for hp in configs]),
        any_adam=any(adam),
        any_kl=any(hp.kl_coef > 0.0 for hp in configs),
    )


def resolve_device(device) -> torch.device:
    device = torch.device(device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"device {str(device)!r} was requested but CUDA is not available")
    return device



def group_tables(hp: Hyperparams) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(k, c_k, log C(G, k)) for k = 0..G, each (G + 1,): the successes of a group, their gradient
    coefficients (`finite_group.group_gradient_coefficients`) and binomial weights; None for G -> inf."""
    if hp.group_size is None:
        return None
    G = hp.group_size
    k = np.arange(G + 1, dtype=float)
    coef = finite_group.group_gradient_coefficients(G, hp.advantage, hp.std_estimator, hp.std_eps)
    return k, coef, gammaln(G + 1) - gammaln(k + 1) - gammaln(G - k + 1)


class BanditEngineBase(abc.ABC):
    """State of C configs x S seeds of the bandit on P prompts with K arms, and its optimizer step.

    Interface (what `simulate` uses): `configs`, `shape` (C, S, P, K), `t` (steps taken), `logits`
    (C, S, P, K), `reward()` (C, S, P), `step()`, `advance(n)`. The constructor checks the batch and
    the run once (`_check_task` before the shared checks, `_check_run` after them), then builds the
    engine's own state (`_build`).
    """

    def __init__(
        self,
        task: BanditTask,
        configs: Sequence[Hyperparams],
        *,
        seeds: int = 1,
        expected: bool = False,
        device="cpu",
        dtype: torch.dtype = torch.float64,
        seed: int = 0,
        start_logits=None,
    ) -> None:
        self.configs = check_configs(configs)
        hp = self.configs[0]
        self._check_task(task)
        check_run(hp, seeds, expected, dtype)
        self._check_run(hp, task, expected, device, dtype)
        self.task, self.expected, self.hp = task, expected, hp
        self.t = 0
        self._build(task, seeds=seeds, device=device, dtype=dtype, seed=seed, start_logits=start_logits)

    def _check_task(self, task: BanditTask) -> None:
        """ConfigError unless this engine runs `task`."""
        if not isinstance(task, BanditTask):
            raise ConfigError(f"task must be a BanditTask, got {type(task).__name__}")

    def _check_run(self, hp: Hyperparams, task: BanditTask, expected: bool, device, dtype) -> None:
        """ConfigError for a run this engine cannot do (beyond `check_run`)."""

    @abc.abstractmethod
    def _build(self, task: BanditTask, *, seeds: int, device, dtype, seed: int, start_logits) -> None:
        """The engine's state: `shape`, `logits`, moments, sampling logits, random generator."""

    @abc.abstractmethod
    def reward(self) -> torch.Tensor:
        """(C, S, P) expected reward of the current policy."""

    @abc.abstractmethod
    def step(self) -> None:
        """One optimizer step of every run."""

    def advance(self, n: int) -> None:
        """n optimizer steps (the numba engine runs them in one kernel call)."""
        for _ in range(n):
            self.step()
