"""Hyperparameters of one GRPO/GSPO training configuration, as validated frozen dataclasses.

Every field names its paper symbol. Values that cannot describe a real run (a negative learning
rate, momentum >= 1, a group of one response) raise `ConfigError` at construction, with one
sentence naming the value and what was expected. Sweeps use `dataclasses.replace`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from gspo_dynamics._checks import positive_int
from gspo_dynamics._errors import ConfigError

Advantage = Literal["mean", "std"]
StdEstimator = Literal["unbiased", "biased"]
Correction = Literal["none", "token", "sequence"]
KLEstimator = Literal["exact", "k3"]
ClipMode = Literal["stop", "cap"]

ADVANTAGES: tuple[str, ...] = ("mean", "std")
STD_ESTIMATORS: tuple[str, ...] = ("unbiased", "biased")
CORRECTIONS: tuple[str, ...] = ("none", "token", "sequence")
KL_ESTIMATORS: tuple[str, ...] = ("exact", "k3")
CLIP_MODES: tuple[str, ...] = ("stop", "cap")


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(message)


def _finite(name: str, value: float) -> None:
    _require(
        isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value),
        f"{name} must be a finite number, got {value!r}",
    )


def _choice(name: str, value: str, options: tuple[str, ...]) -> None:
    _require(value in options, f"{name} must be one of {', '.join(options)}; got {value!r}")


@dataclass(frozen=True, kw_only=True)
class SGD:
    """Heavy-ball SGD:  v <- mu v + g,  z <- z + lr v  (g is the ascent direction)."""

    momentum: float = 0.0  # mu, heavy-ball coefficient, 0 <= mu < 1

    def __post_init__(self) -> None:
        _finite("momentum", self.momentum)
        _require(0.0 <= self.momentum < 1.0, f"momentum must be in [0, 1), got {self.momentum}")

    @property
    def name(self) -> str:
        return "sgd"


@dataclass(frozen=True, kw_only=True)
class Adam:
    """Adam:  m <- b1 m + (1-b1) g,  s <- b2 s + (1-b2) g^2,  z <- z + lr m_hat / (sqrt(s_hat) + eps).

    In its linear regime (second moment s frozen at s_bar by gradient noise) Adam is heavy-ball
    SGD with mu = b1 and lr_hb = lr (1 - b1) / (sqrt(s_bar) + eps); see `effective_sgd`.
    """

    beta1: float = 0.9  # b1, first-moment decay
    beta2: float = 0.999  # b2, second-moment decay
    eps: float = 1e-8  # epsilon in the denominator

    def __post_init__(self) -> None:
        for name in ("beta1", "beta2", "eps"):
            _finite(name, getattr(self, name))
        _require(0.0 <= self.beta1 < 1.0, f"beta1 must be in [0, 1), got {self.beta1}")
        _require(0.0 <= self.beta2 < 1.0, f"beta2 must be in [0, 1), got {self.beta2}")
        _require(self.eps > 0.0, f"eps must be positive, got {self.eps}")

    @property
    def name(self) -> str:
        return "adam"


Optimizer = SGD | Adam


@dataclass(frozen=True, kw_only=True)
class Hyperparams:
    """One training configuration of group-based policy-gradient RL (GRPO/GSPO family).

    Schedule: every `refresh_interval` optimizer steps the sampling policy is refreshed; each
    step draws `num_prompts` groups of `group_size` responses from the sampling policy.
    """

    lr: float  # eta, learning rate (> 0)
    optimizer: Optimizer = field(default_factory=SGD)  # SGD(momentum) or Adam(beta1, beta2, eps)
    refresh_interval: int = 1  # T, optimizer steps between sampling-policy refreshes (1 = on-policy)
    group_size: int | None = None  # G, responses per prompt; None = G -> infinity (expected dynamics)
    num_groups: int = 1  # groups per optimizer step (per prompt); gradient noise scales as 1/(num_groups G)
    advantage: Advantage = "mean"  # "mean": A = r - mean(r);  "std": A = (r - mean(r)) / (std(r) + std_eps)
    std_estimator: StdEstimator = "unbiased"  # group std with Bessel's correction (torch.std, TRL) or without
    std_eps: float = 1e-4  # eps added to the group std (TRL's value)
    correction: Correction = "none"  # off-policy correction: none | token-level | sequence-level ratio
    clip_low: float = 0.2  # eps_low: ratios below 1 - eps_low stop pushing down (PPO clip)
    clip_high: float = 0.2  # eps_high: ratios above 1 + eps_high stop pushing up
    kl_coef: float = 0.0  # beta, weight of KL(pi || pi_ref) in the objective
    kl_estimator: KLEstimator = "exact"  # exact KL, or the k3 estimator (Schulman)
    clip_mode: ClipMode = "stop"  # "stop": PPO's min switches a clipped token's gradient off (grpo, dapo, gspo, ...);
    # "cap": the clip caps a detached importance weight and the gradient stays (CISPO)
    ratio_cap: float | None = None  # c, the dual clip (verl's clip_ratio_c, TRL's delta): a token with a negative
    # advantage whose ratio passes c gets no gradient (`theory.dual_clip`); None: no such bound

    def __post_init__(self) -> None:
        _finite("lr", self.lr)
        _require(self.lr > 0.0, f"learning rate must be positive, got {self.lr}")
        _require(
            isinstance(self.optimizer, (SGD, Adam)),
            f"optimizer must be SGD(...) or Adam(...), got {self.optimizer!r}",
        )
        positive_int("refresh interval", self.refresh_interval)
        if self.group_size is not None:
            positive_int("group size", self.group_size, minimum=2, hint=" (or None for G -> infinity)")
        positive_int("number of groups per step", self.num_groups)
        _choice("advantage", self.advantage, ADVANTAGES)
        _choice("std estimator", self.std_estimator, STD_ESTIMATORS)
        _choice("correction", self.correction, CORRECTIONS)
        _choice("KL estimator", self.kl_estimator, KL_ESTIMATORS)
        _choice("clip mode", self.clip_mode, CLIP_MODES)
        for name in ("std_eps", "clip_low", "clip_high", "kl_coef"):
            _finite(name, getattr(self, name))
        _require(self.std_eps >= 0.0, f"std eps must be >= 0, got {self.std_eps}")
        _require(0.0 < self.clip_low < 1.0, f"clip_low must be in (0, 1), got {self.clip_low}")
        _require(self.clip_high > 0.0, f"clip_high must be positive, got {self.clip_high}")
        _require(self.kl_coef >= 0.0, f"KL coefficient must be >= 0, got {self.kl_coef}")
        if self.ratio_cap is not None:
            _finite("ratio_cap", self.ratio_cap)
            _require(self.ratio_cap > 1.0, f"the dual clip's ratio cap must be > 1, got {self.ratio_cap}")

    @property
    def momentum(self) -> float:
        """mu of the heavy-ball form (Adam's b1 in its linear regime)."""
        return self.optimizer.momentum if isinstance(self.optimizer, SGD) else self.optimizer.beta1

    @property
    def is_on_policy(self) -> bool:
        return self.refresh_interval == 1


def effective_sgd(hp: Hyperparams, second_moment: float) -> tuple[float, float]:
    """Heavy-ball (lr, mu) equivalent to `hp.optimizer` in its linear regime.

    SGD maps to itself. Adam with its second moment frozen at s_bar (set by gradient noise near
    the fixed point) is   v <- b1 v + g,  z <- z + lr (1 - b1) / (sqrt(s_bar) + eps) v,
    i.e. heavy-ball with mu = b1 and lr_hb = lr (1 - b1) / (sqrt(s_bar) + eps)
    (v = m / (1 - b1); bias corrections -> 1 after ~1/(1-b2) steps).
    """
    if isinstance(hp.optimizer, SGD):
        return hp.lr, hp.optimizer.momentum
    _require(second_moment >= 0.0, f"Adam second moment must be >= 0, got {second_moment}")
    opt = hp.optimizer
    return hp.lr * (1.0 - opt.beta1) / (math.sqrt(second_moment) + opt.eps), opt.beta1
