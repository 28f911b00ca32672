"""Softmax-bandit tasks: P independent prompts, each a K-armed bandit with fixed rewards."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.theory.bandit import SATURATION_LOGIT, TwoArmBandit


def _matrix(name: str, value, shape: tuple[int, int] | None = None) -> np.ndarray:
    """A read-only float64 (P, K) copy; a (K,) vector is one prompt."""
    try:
        array = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be an array of numbers, got {value!r}") from None
    if array.ndim == 1:
        array = array[None, :]
    if array.ndim != 2:
        raise ConfigError(f"{name} must have shape (prompts, arms), got shape {array.shape}")
    if shape is not None and array.shape != shape:
        raise ConfigError(f"{name} must have shape {shape} like the rewards, got {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ConfigError(f"{name} must be finite, got {array.tolist()}")
    array.setflags(write=False)
    return array


@dataclass(frozen=True, eq=False)
class BanditTask:
    """P independent softmax bandits ("prompts") with K arms each; shapes (P, K).

    pi_p = softmax(logits_p); the expected reward of prompt p is R_p = sum_a pi_p(a) r_pa.
    Logits where `trainable` is False stay fixed: the two-arm task keeps logits (0, z) and trains
    only z, so pi(1) = sigmoid(z) is the one-logit bandit of `gspo_dynamics.theory.bandit`
    exactly (training both logits would move z = l1 - l0 twice as fast).
    """

    rewards: np.ndarray  # r_pa, (P, K) reward of arm a on prompt p
    ref_logits: np.ndarray  # logits of pi_ref, (P, K)
    init_logits: np.ndarray | None = None  # starting logits, (P, K); None starts at pi_ref
    trainable: np.ndarray | None = None  # (P, K) bool, which logits the optimizer moves; None = all

    def __post_init__(self) -> None:
        rewards = _matrix("rewards", self.rewards)
        P, K = rewards.shape
        if K < 2:
            raise ConfigError(f"a bandit needs at least 2 arms, got {K}")
        object.__setattr__(self, "rewards", rewards)
        object.__setattr__(self, "ref_logits", _matrix("ref_logits", self.ref_logits, (P, K)))
        if self.init_logits is not None:
            object.__setattr__(self, "init_logits", _matrix("init_logits", self.init_logits, (P, K)))
        trainable = np.ones((P, K), dtype=bool) if self.trainable is None else np.array(self.trainable, dtype=bool)
        if trainable.ndim == 1:
            trainable = np.broadcast_to(trainable, (P, K)).copy()
        if trainable.shape != (P, K):
            raise ConfigError(f"trainable must have shape {(P, K)}, got {trainable.shape}")
        if not trainable.any(axis=1).all():
            raise ConfigError("every prompt needs at least one trainable logit")
        trainable.setflags(write=False)
        object.__setattr__(self, "trainable", trainable)

    # ---- constructors --------------------------------------------------------------------------

    @classmethod
    def two_arm(cls, ref_logit: float = 0.0, init_logit: float | None = None) -> BanditTask:
        """The theory's bandit: logits (0, z), rewards (0, 1), only z trained: R = sigmoid(z)."""
        bandit = TwoArmBandit(ref_logit=ref_logit, init_logit=init_logit)  # validates
        return cls.from_theory(bandit)

    @classmethod
    def from_theory(cls, bandit: TwoArmBandit) -> BanditTask:
        """The simulation twin of a `theory.bandit.TwoArmBandit`."""
        init = None if bandit.init_logit is None else [[0.0, bandit.init_logit]]
        return cls(
            rewards=[[0.0, 1.0]],
            ref_logits=[[0.0, bandit.ref_logit]],
            init_logits=init,
            trainable=[False, True],
        )

    @classmethod
    def k_arm(cls, rewards, ref_logits=None, init_logits=None) -> BanditTask:
        """K arms with arbitrary rewards, all logits trained; rewards (K,) or (P, K).

        ref_logits defaults to zeros (uniform pi_ref)."""
        r = _matrix("rewards", rewards)
        ref = np.zeros_like(r) if ref_logits is None else ref_logits
        return cls(rewards=r, ref_logits=ref, init_logits=init_logits)

    @classmethod
    def prompts(cls, difficulties) -> BanditTask:
        """Independent two-arm prompts; difficulty d_p in (0, 1) is the reference policy's failure rate.

        Prompt p has pi_ref(correct) = 1 - d_p, i.e. ref logit z_p = log((1 - d_p) / d_p), starts at
        pi_ref and trains only z_p (as `two_arm`). With a KL penalty every prompt plateaus below
        1, at a level that falls with its difficulty.
        """
        d = np.atleast_1d(np.array(difficulties, dtype=float))
        if d.ndim != 1 or d.size == 0 or not np.all((d > 0.0) & (d < 1.0)):
            raise ConfigError(f"difficulties must be a non-empty list of numbers in (0, 1), got {difficulties!r}")
        z = np.log1p(-d) - np.log(d)
        limit = SATURATION_LOGIT / 2
        if np.any(np.abs(z) > limit):
            raise ConfigError(f"difficulties must give reference logits within +-{limit:g}, got {z.tolist()}")
        P = d.size
        return cls(
            rewards=np.tile([0.0, 1.0], (P, 1)),
            ref_logits=np.stack([np.zeros(P), z], axis=1),
            trainable=[False, True],
        )

    # ---- derived ---------------------------------------------------------------------------------

    @property
    def num_prompts(self) -> int:
        return self.rewards.shape[0]

    @property
    def num_arms(self) -> int:
        return self.rewards.shape[1]

    @property
    def start_logits(self) -> np.ndarray:
        return self.ref_logits if self.init_logits is None else self.init_logits

    @property
    def is_binary(self) -> bool:
        """Every reward is 0 or 1 (verifiable rewards): finite-G expectations are then exact."""
        return bool(np.all((self.rewards == 0.0) | (self.rewards == 1.0)))

    @property
    def is_two_arm(self) -> bool:
        """Each prompt is the theory's one-logit bandit: logits (0, z), rewards (0, 1), z trained."""
        return (
            self.num_arms == 2
            and bool(np.all(self.rewards == [0.0, 1.0]))
            and bool(np.all(self.trainable == [False, True]))
            and bool(np.all(self.start_logits[:, 0] == 0.0))
            and bool(np.all(self.ref_logits[:, 0] == 0.0))
        )

    @property
    def max_reward(self) -> np.ndarray:
        """(P,) best arm's reward per prompt."""
        return self.rewards.max(axis=1)
