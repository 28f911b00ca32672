"""The contextual task and one run's schedule, as validated frozen dataclasses.

A task is P prompts with K actions each ("answers" a language model could give). Action a of prompt
p earns reward components r_f(p, a) in [0, 1] (partial credit allowed); the training reward is
the weighted sum r(p, a) = sum_f w_f r_f(p, a) (TRL's `reward_weights`), and `true_reward` is what
an evaluation scores (the same as r unless the recipe studies a proxy). The policy is

    logits(p, .) = ref_logits(p, .) + W[p, .] + features[p] @ V          (W: (P, K), V: (R, K))

so the tabular part W learns each prompt alone and the shared low-rank part V generalises across
prompts (R = 0: no shared part; `tabular=False`: only the shared part).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gspo_dynamics._checks import positive_int
from gspo_dynamics._errors import ConfigError
from gspo_dynamics.theory.hyperparams import Hyperparams

UNREACHABLE = -1e9  # logit of an action the model never emits: exp() underflows to exactly 0 in
# float64, yet it stays finite, so 0 * logit = 0 in entropies and KLs (no NaN) and training never revives it


@dataclass(frozen=True, eq=False)
class ContextualTask:
    """P prompts x K actions: rewards, lengths, the reference policy and the parameterisation."""

    components: np.ndarray  # (P, K, F) reward components r_f(p, a), each in [0, 1]
    component_names: tuple[str, ...]  # the F reward-function names (TRL `rewards/<fn>/mean`)
    weights: np.ndarray  # (F,) w_f, the training reward is r = sum_f w_f r_f
    true_reward: np.ndarray  # (P, K) what an evaluation scores
    lengths: np.ndarray  # (P, K) mean response length of each action, tokens
    max_length: int  # generation budget; a response this long is truncated
    ref_logits: np.ndarray  # (P, K) reference policy = initial policy; UNREACHABLE: never emitted
    features: np.ndarray  # (P, R) prompt features of the shared part (R may be 0)
    tabular: bool = True  # train the per-prompt logits W as well as the shared V

    def __post_init__(self) -> None:
        P, K, F = np.shape(self.components)
        if len(self.component_names) != F or np.shape(self.weights) != (F,):
            raise ConfigError(f"{F} reward components need {F} names and weights, got "
                              f"{len(self.component_names)} names and weights of shape {np.shape(self.weights)}")
        if not (np.all(self.components >= 0.0) and np.all(self.components <= 1.0)):
            raise ConfigError("reward components must lie in [0, 1]")
        for name in ("true_reward", "lengths", "ref_logits"):
            if np.shape(getattr(self, name)) != (P, K):
                raise ConfigError(f"{name} must have shape {(P, K)}, got {np.shape(getattr(self, name))}")
        if np.shape(self.features)[0] != P or np.ndim(self.features) != 2:
            raise ConfigError(f"features must have shape (P, R) = ({P}, R), got {np.shape(self.features)}")
        if not np.all(self.reachable.any(-1)):
            raise ConfigError("every prompt needs at least one reachable action")
        if not (self.tabular or self.features.shape[1] > 0):
            raise ConfigError("a task without tabular logits needs shared features (R >= 1)")

    @property
    def shape(self) -> tuple[int, int]:
        return self.true_reward.shape  # (P, K)

    @property
    def reward(self) -> np.ndarray:
        """(P, K) the training reward r = sum_f w_f r_f."""
        return self.components @ self.weights

    @property
    def reachable(self) -> np.ndarray:
        return self.ref_logits > UNREACHABLE / 2

    def ceiling(self, table: np.ndarray | None = None) -> float:
        """mean_p max over reachable a of `table` (default: the training reward): the best policy's reward."""
        table = self.reward if table is None else table
        return float(np.where(self.reachable, table, -np.inf).max(-1).mean())

    def expected(self, logits: np.ndarray, table: np.ndarray | None = None) -> float:
        """mean_p sum_a pi(a|p) table(p, a) under `logits` (P, K)."""
        table = self.reward if table is None else table
        return float((softmax(logits) * table).sum(-1).mean())


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """One run's optimizer schedule and logging, around the algorithm's `Hyperparams`.

    `hp` carries lr, the optimizer, T = refresh_interval, G = group_size, B = num_groups (prompts
    drawn per step without replacement, one group each; at most P), the advantage, the off-policy
    correction (token: clipped ratios; none: the stale gradient as is), the clip range and beta = kl_coef.
    """

    hp: Hyperparams
    steps: int  # optimizer steps
    kl_in_reward: bool = False  # beta KL enters the reward at rollout time (verl use_kl_in_reward), not the loss
    warmup_steps: int = 0  # linear warmup of the learning rate over this many steps (TRL warmup_steps)
    eval_every: int | None = None  # optimizer steps between evaluations (None: no eval rows)
    eval_prompts: int = 64  # evaluation scores the first min(P, eval_prompts) prompts ...
    eval_samples: int = 8  # ... with this many fresh responses each
    length_jitter: float = 0.15  # sd of log(response length) around the action's mean length

    def __post_init__(self) -> None:
        if self.hp.group_size is None:
            raise ConfigError("a contextual run samples finite groups: group_size must be an integer >= 2")
        if self.hp.correction == "sequence":
            raise ConfigError("one response is one decision here: use correction 'token' (equal to 'sequence') or 'none'")
        for name in ("steps", "eval_prompts", "eval_samples"):
            positive_int(name, getattr(self, name))
        if not (isinstance(self.warmup_steps, int) and 0 <= self.warmup_steps < self.steps):
            raise ConfigError(f"warmup_steps must be an integer in [0, steps), got {self.warmup_steps!r}")
        if self.eval_every is not None and not (isinstance(self.eval_every, int) and self.eval_every >= 1):
            raise ConfigError(f"eval_every must be None or an integer >= 1, got {self.eval_every!r}")
        if not self.length_jitter >= 0.0:
            raise ConfigError(f"length_jitter must be >= 0, got {self.length_jitter}")

    def lr_at(self, step: int) -> float:
        """Learning rate of optimizer step `step` (1-based): linear warmup, then constant."""
        if step <= self.warmup_steps:
            return self.hp.lr * step / self.warmup_steps
        return self.hp.lr


def softmax(logits: np.ndarray) -> np.ndarray:
    z = logits - logits.max(-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(-1, keepdims=True)


def log_softmax(logits: np.ndarray) -> np.ndarray:
    z = logits - logits.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))
