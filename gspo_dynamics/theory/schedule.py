"""The learning-rate schedule of a run: the factor m(k) in lr_k = lr m(k), and what it does to the stiffness.

The reduced model's per-step stiffness is x = eta K (`theory.linear`); a schedule makes it x_k = x m(k). Each shape is
the factor TRL (transformers' `get_scheduler`) and verl (`verl.utils.torch_functional`) apply at 0-indexed optimizer
step k of a run of N steps with W warm-up steps (p = (k - W) / (N - W), the decay's progress):

    warm-up            m(k) = k / W                                    k < W (every shape but constant)
    constant           m = 1
    linear             m = max(0, (N - k) / (N - W))
    cosine             m = max(r, r + (1 - r) (1 + cos(2 pi c p)) / 2)   c cycles (1/2: one half-wave), floor r
    polynomial         m = ((1 - e) (1 - p)^a + e)                      e = lr_end / lr, power a; e past N
    inverse_sqrt       m = 1 / sqrt((k + s - W) / s)                   timescale s (W, else 10 000)

(transformers' cosine has r = 0 unless it is `cosine_with_min_lr`; verl's cosine takes min_lr_ratio r and, with
zero_indexed_step false, evaluates m(k + 1).) The schedule's consequences for the model:

    peak stiffness      x max_k m(k): the stability bound applies there                                      (1)
    lr-weighted length  tau(n) = sum_{k < n} m(k): a relaxation at rate x m(k) after n steps has
                        moved as far as one at rate x after tau(n) steps (first order, exact)               (2)

so a pilot measured at a mean factor m_p reads the stiffness x m_p, and a run's end at N steps is tau(N) / m_p of
the pilot's steps on the pilot's clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gspo_dynamics._errors import ConfigError

SHAPES = ("constant", "linear", "cosine", "polynomial", "inverse_sqrt")
TAIL_SUM = 10_000_000  # steps summed one by one before the factor is held


@dataclass(frozen=True, kw_only=True)
class LRSchedule:
    """m(k) of the module docstring: `shape` after `warmup` steps of a run of `total` steps (None: unknown length,
    only constant and inverse_sqrt need none)."""

    shape: str = "constant"
    warmup: int = 0  # W
    total: int | None = None  # N
    floor: float = 0.0  # r (cosine) or e (polynomial): the factor the decay ends at
    cycles: float = 0.5  # c (cosine)
    power: float = 1.0  # a (polynomial)
    timescale: int | None = None  # s (inverse_sqrt); None: W, else 10 000
    offset: int = 0  # 1 where the lambda is evaluated at k + 1 (verl's zero_indexed_step false)
    warmup_share: float | None = None  # a warm-up given as this share of the run (W follows N), else None

    def __post_init__(self) -> None:
        if self.shape not in SHAPES:
            raise ConfigError(f"lr schedule shape must be one of {', '.join(SHAPES)}, got {self.shape!r}")
        if self.warmup < 0 or (self.total is not None and self.total < 1):
            raise ConfigError(f"the warm-up ({self.warmup}) must be >= 0 and the run's steps ({self.total}) >= 1")
        if not 0.0 <= self.floor <= 1.0:
            raise ConfigError(f"the schedule's final lr ratio must be in [0, 1], got {self.floor!r}")
        if self.decays and self.total is None:
            raise ConfigError(f"a {self.shape} schedule needs the run's length (max_steps / total_training_steps)")

    @property
    def decays(self) -> bool:
        """Whether the factor falls after the warm-up on a horizon of `total` steps."""
        return self.shape in ("linear", "cosine", "polynomial")

    @property
    def follows_length(self) -> bool:
        """Whether a run of another length N has another schedule over its first steps: a decay over N, or a warm-up
        that is a share of N (a shorter run stopped at step n is not the same as a run of n steps)."""
        return self.decays or self.warmup_share is not None

    def factor(self, k) -> np.ndarray:
        """m(k) at 0-indexed optimizer steps k (vectorised; module docstring)."""
        k = np.asarray(k, dtype=float) + self.offset
        W = self.warmup
        warm = k / max(1, W)
        out = np.where(k < W, warm, self._after_warmup(k))
        return np.clip(out, 0.0, None)

    def _after_warmup(self, k: np.ndarray) -> np.ndarray:
        W, N = self.warmup, self.total
        if self.shape == "constant":
            return np.ones_like(k)
        if self.shape == "inverse_sqrt":
            s = self.timescale or (W or 10_000)
            return 1.0 / np.sqrt(np.maximum(k + s - W, 1e-12) / s)
        p = (k - W) / max(1, N - W)
        if self.shape == "linear":
            return np.maximum(0.0, (N - k) / max(1, N - W))
        if self.shape == "cosine":
            r = self.floor
            return np.maximum(r, r + (1.0 - r) * 0.5 * (1.0 + np.cos(2.0 * math.pi * self.cycles * p)))
        e = self.floor  # polynomial
        return np.where(k > N, e, (1.0 - e) * np.clip(1.0 - p, 0.0, None) ** self.power + e)

    def peak_step(self) -> int:
        """The first 0-indexed step where m reaches its maximum (the warm-up's end), equation (1)."""
        return self.warmup

    def weighted_length(self, n: int) -> float:
        """tau(n) = sum_{k < n} m(k), equation (2): summed up to the decay's end (or TAIL_SUM steps), then the last
        factor held (exact for every shape but inverse_sqrt, whose tail past TAIL_SUM steps it overstates)."""
        n = int(n)
        head = min(n, max(self.total or 0, self.warmup) + 1, TAIL_SUM)
        return float(self.factor(np.arange(head)).sum() + (n - head) * self.factor(head))

    def describe(self) -> str:
        """One phrase: the warm-up and the decay."""
        warm = f"linear warm-up over {self.warmup} steps, then " if self.warmup else ""
        if self.shape == "constant":
            return warm + "constant"
        if self.shape == "inverse_sqrt":
            return warm + "1 / sqrt(step) decay"
        end = f"{self.floor:g} of the peak" if self.floor else "0"
        shape = {"linear": "linear", "cosine": "cosine", "polynomial": f"polynomial (power {self.power:g})"}[self.shape]
        return warm + f"{shape} decay to {end} at step {self.total}"
