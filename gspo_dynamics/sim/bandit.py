"""The softmax-bandit testbed: many GRPO/GSPO runs on bandit tasks as one tensor program.

    result = simulate(BanditTask.two_arm(ref_logit=-1.0), [hp_a, hp_b], steps=500, seeds=64)
    result.reward          # (n_records, C, S, P) expected reward of the current policy
    result.mean_reward     # (n_records, C, S)    mean over prompts

Step semantics (refresh, sampling, loss, KL, optimizer) are those of `_engine.BanditEngine`;
DESIGN.md "The canonical testbed" states them. In expected mode the two-arm runs reproduce
`gspo_dynamics.theory.bandit.expected_map` step for step: z <- z + lr (mu v + F(z, z_s)).

KL estimators, both evaluated at the current policy pi (the theory's "always fresh" KL):
  exact: beta KL(pi || pi_ref) of the full categorical;
  k3:    beta k3(a) at the sampled actions, each weighted by the detached ratio pi(a) / pi_s(a).
         At T = 1 the ratio is 1 and this is the trainers' k3 term; off-policy the weight makes its
         gradient an unbiased estimate of E_pi[(1 - pi_ref/pi) grad log pi], the current-policy
         k3 gradient that the theory's force K = -beta (p - q) is, whichever policy sampled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch

from gspo_dynamics._checks import positive_int
from gspo_dynamics._errors import ConfigError
from gspo_dynamics.sim._base import BanditEngineBase
from gspo_dynamics.sim._engine import BanditEngine
from gspo_dynamics.sim._fast import TwoArmEngine, fast_path_applies
from gspo_dynamics.sim import _numba
from gspo_dynamics.sim._task import BanditTask
from gspo_dynamics.theory.hyperparams import Hyperparams

__all__ = ["BanditTask", "SimulationResult", "simulate"]


@dataclass(frozen=True, eq=False)
class SimulationResult:
    """Recorded observables of a batch of bandit runs (numpy float64 arrays, on the host)."""

    configs: tuple[Hyperparams, ...]  # the C configs, in order
    steps: np.ndarray  # (n_records,) int, optimizer steps completed at each record (0 = start)
    reward: np.ndarray  # (n_records, C, S, P) expected reward sum_a pi(a) r_a of the current policy
    final_logits: np.ndarray  # (C, S, P, K) logits after the last step
    logits: np.ndarray | None = None  # (n_records, C, S, P, K) if recorded (record_logits=True)

    @property
    def mean_reward(self) -> np.ndarray:
        """(n_records, C, S): reward averaged over prompts."""
        return self.reward.mean(axis=-1)

    @property
    def logit_gap(self) -> np.ndarray:
        """(n_records, C, S, P) z = l1 - l0 of a two-arm task: the theory's logit (l0 stays 0)."""
        if self.logits is None or self.logits.shape[-1] != 2:
            raise ConfigError("logit_gap needs a two-arm task simulated with record_logits=True")
        return self.logits[..., 1] - self.logits[..., 0]


def record_steps(steps: int, record_every: int) -> list[int]:
    """0, record_every, 2 record_every, ..., and always the last step."""
    recorded = list(range(0, steps + 1, record_every))
    return recorded if recorded[-1] == steps else recorded + [steps]


ENGINES = ("auto", "general", "fast", "numba")


def engine_class(task: BanditTask, engine: str = "auto") -> type[BanditEngineBase]:
    """The engine `simulate` runs for `task` (the one factory of the `_base.BanditEngineBase` engines).

    "auto": TwoArmEngine where the fast path applies, else BanditEngine. The compiled
    NumbaEngine ("numba", the "fast" extra) is opt-in: it is ~1.3x the fused torch path on large
    batches (benchmarks/RESULTS.md) but compiles for seconds on first use, which short runs never
    win back.
    """
    if engine not in ENGINES:
        raise ConfigError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    if engine == "numba":
        return _numba.NumbaEngine
    if engine == "general" or (engine == "auto" and not fast_path_applies(task)):
        return BanditEngine
    return TwoArmEngine


def simulate(
    task: BanditTask,
    configs: Sequence[Hyperparams],
    *,
    steps: int,
    seeds: int = 1,
    expected: bool = False,
    device="cpu",
    dtype: torch.dtype = torch.float64,
    record_every: int = 1,
    seed: int = 0,
    record_logits: bool = False,
    start_logits=None,
    progress: Callable[[int, int], None] | None = None,
    engine: str = "auto",
) -> SimulationResult:
    """Run every config x seed on every prompt of `task` for `steps` optimizer steps, batched.

    Args:
        task: the bandit (`BanditTask.two_arm`, `.k_arm`, `.prompts`).
        configs: C Hyperparams. lr, optimizer (SGD/Adam, mixed allowed), refresh_interval,
            clip_low/high and kl_coef may differ; group_size, num_groups, advantage,
            std_estimator, std_eps, correction and kl_estimator must be equal (ConfigError).
        steps: optimizer steps (>= 0).
        seeds: S independent runs per config (all identical in expected mode).
        expected: exact expected dynamics (no sampling) instead of finite samples. Finite
            group_size in expected mode needs rewards in {0, 1} (the exact Binomial average);
            group_size=None is G -> infinity.
        device, dtype: where and in what precision to compute (CUDA works; float64 default).
        record_every: record every this many steps (plus step 0 and the last step).
        seed: seeds the sampler. Random numbers are shared across configs (common random
            numbers), so config c's runs do not depend on the other configs in the batch.
        record_logits: also keep the logits at every record.
        start_logits: override the task's starting logits; broadcastable to (C, S, P, K).
        progress: called as progress(step, steps) at every record.
        engine: "general" (`_engine.BanditEngine`, any task), "fast" (`_fast.TwoArmEngine`: two-arm
            prompts with rewards (0, 1) and only the arm-1 logit trained, same runs up to float64
            rounding), "numba" (`_numba.NumbaEngine`: the same tasks compiled, CPU float64, needs the
            "fast" extra; same runs up to rounding) or "auto" (fast where it applies, else general).
    """
    positive_int("steps", steps, minimum=0)
    positive_int("record_every", record_every)
    engine = engine_class(task, engine)(
        task, configs, seeds=seeds, expected=expected, device=device, dtype=dtype, seed=seed, start_logits=start_logits
    )
    wanted = record_steps(steps, record_every)
    rewards, logits = [], []

    def record() -> None:
        rewards.append(engine.reward())
        if record_logits:
            logits.append(engine.logits)
        if progress is not None:
            progress(engine.t, steps)

    record()
    for t in wanted[1:]:
        engine.advance(t - engine.t)  # numba: one kernel call between records
        record()

    def host(tensors):
        return torch.stack(tensors).to("cpu", torch.float64).numpy()

    return SimulationResult(
        configs=engine.configs,
        steps=np.asarray(wanted, dtype=np.int64),
        reward=host(rewards),
        final_logits=engine.logits.to("cpu", torch.float64).numpy(),
        logits=host(logits) if record_logits else None,
    )
