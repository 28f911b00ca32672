"""One recipe per failure mode: the bandit task, hyperparameters and run length that produce it.

Every recipe is a physical cause, run through the simulator; nothing is drawn by hand:

  healthy_saturation     prompts of mixed difficulty, KL-regularised, overdamped (T = 1): the
                         reward rises and settles at the fixed point; run ~8 time constants
  still_rising           the same configuration stopped after ~1 time constant
  stalled                the same prompts with a learning rate 300x smaller, or a KL weight that
                         pins the policy to pi_ref (fixed point ~ the start); groups stay mixed
  dynamical_instability  heavy-ball momentum 0.9 and a refresh interval one past the exact
                         critical T_c of `predict_bandit` (theory): a sustained oscillation
  advantage_degeneracy   prompts the reference policy solves 0.5-3% of the time with G = 8:
                         most groups are all-zero, p^G + (1-p)^G ~ 0.8-0.96
  policy_concentration   32 arms with graded rewards, Adam at a high learning rate, no KL, a reference
                         that favours a 0.65 arm and almost never samples the 1.0 one: the policy
                         collapses onto the attractor (entropy -> ~0) below the reward's ceiling (a
                         collapse onto a near-best arm at the ceiling would be a solved task)
  reward_hacking         a length bonus (proxy) outweighs correctness on a long wrong answer the
                         reference rarely gives: train reward rises, eval accuracy falls,
                         length grows to the budget
  noise_dominated        one prompt, G = 4, one group per step, a small learning rate: the drift
                         over the run is a fraction of the per-step sampling noise
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gspo_dynamics.predict import predict_bandit
from gspo_dynamics.sim._task import BanditTask
from gspo_dynamics.sim.corpus._logged_bandit import ArmTables, binary_arms
from gspo_dynamics.theory.bandit import TwoArmBandit
from gspo_dynamics.theory.hyperparams import SGD, Adam, Hyperparams

MODES: tuple[str, ...] = (
    "healthy_saturation",
    "still_rising",
    "stalled",
    "dynamical_instability",
    "advantage_degeneracy",
    "policy_concentration",
    "reward_hacking",
    "noise_dominated",
)
MAX_LENGTH = 1024  # generation budget (tokens) of the simulated runs


@dataclass(frozen=True, eq=False)
class Variant:
    """One configuration of a mode: a bandit task, hyperparameters and what its arms stand for."""

    task: BanditTask
    hp: Hyperparams
    arms: ArmTables
    steps: int
    logging_steps: int
    eval_every: int | None
    note: str = ""
    facts: dict = field(default_factory=dict)  # theory numbers that justify the recipe


def _mixed_prompts() -> BanditTask:
    # reference failure rates of 8 prompts, easy to hard: groups stay mixed at the plateau
    return BanditTask.prompts([0.25, 0.35, 0.45, 0.5, 0.55, 0.6, 0.7, 0.8])


# expected-dynamics plateau ~0.84 from 0.475, time constant ~60 steps, overdamped at T = 1
_HEALTHY = dict(lr=0.05, optimizer=SGD(momentum=0.5), group_size=8, num_groups=2, advantage="std", kl_coef=1.0)
HEALTHY_STEPS = 500


def _healthy(steps: int, logging_steps: int, note: str) -> Variant:
    task = _mixed_prompts()
    return Variant(task, Hyperparams(**_HEALTHY), binary_arms(task, 220.0, 300.0, MAX_LENGTH),
                   steps=steps, logging_steps=logging_steps, eval_every=max(steps // 5, 1), note=note)


def healthy_saturation() -> tuple[Variant, ...]:
    return (_healthy(HEALTHY_STEPS, 5, "stable hyperparameters, run until the plateau"),)


def still_rising() -> tuple[Variant, ...]:
    return (_healthy(60, 2, "the healthy configuration stopped after ~1 time constant"),)


def stalled() -> tuple[Variant, ...]:
    task = _mixed_prompts()
    arms = binary_arms(task, 220.0, 300.0, MAX_LENGTH)
    tiny = Hyperparams(**{**_HEALTHY, "lr": _HEALTHY["lr"] / 300})
    pinned = Hyperparams(**{**_HEALTHY, "kl_coef": 20.0})
    return (
        Variant(task, tiny, arms, steps=300, logging_steps=5, eval_every=60, note="learning rate 300x too small"),
        Variant(task, pinned, arms, steps=300, logging_steps=5, eval_every=60, note="KL weight pins pi to pi_ref"),
    )


def dynamical_instability() -> tuple[Variant, ...]:
    bandit = TwoArmBandit(ref_logit=-1.0)
    base = Hyperparams(lr=1.0, optimizer=SGD(momentum=0.9), group_size=16, num_groups=4, kl_coef=0.5)
    t_c = predict_bandit(bandit, base, from_start=False)["critical_refresh_interval"]
    hp = Hyperparams(lr=1.0, optimizer=SGD(momentum=0.9), group_size=16, num_groups=4, kl_coef=0.5,
                     refresh_interval=t_c + 1)
    task = BanditTask.from_theory(bandit)
    return (Variant(task, hp, binary_arms(task, 220.0, 300.0, MAX_LENGTH), steps=400, logging_steps=2,
                    eval_every=80, note=f"refresh interval T = {t_c + 1} > T_c = {t_c} (exact, theory)",
                    facts={"critical_refresh_interval": t_c}),)


def advantage_degeneracy() -> tuple[Variant, ...]:
    task = BanditTask.prompts([0.97, 0.98, 0.985, 0.99, 0.99, 0.995, 0.995, 0.995])
    hp = Hyperparams(**{**_HEALTHY, "lr": 0.02, "kl_coef": 0.5})
    return (Variant(task, hp, binary_arms(task, 700.0, 900.0, MAX_LENGTH), steps=300, logging_steps=5,
                    eval_every=60, note="hard prompts: success rate near 0, most groups all-zero"),)


def policy_concentration() -> tuple[Variant, ...]:
    K, P = 32, 4
    grid = np.random.default_rng(12345).random((P, K))
    rewards = np.round(0.5 * grid, 3)  # graded rewards in [0, 0.5) ...
    rewards[:, 0] = 0.65  # ... an attractor the reference favours ...
    rewards[:, 1] = 1.0  # ... and the best answer, which it almost never gives
    ref = np.zeros((P, K))
    ref[:, 0], ref[:, 1] = 2.5, -4.0
    task = BanditTask.k_arm(rewards, ref_logits=ref)
    lengths = np.round(150.0 + 300.0 * np.random.default_rng(54321).random((P, K)))
    arms = ArmTables(rewards[..., None].copy(), ("quality_reward",), rewards.copy(), lengths, MAX_LENGTH)
    hp = Hyperparams(lr=0.05, optimizer=Adam(beta1=0.9, beta2=0.999), group_size=8, num_groups=2,
                     advantage="std", kl_coef=0.0)
    return (Variant(task, hp, arms, steps=300, logging_steps=5, eval_every=60,
                    note="32 graded arms, the reference favouring a 0.65 arm over the 1.0 one it almost never "
                         "samples (p ~ 4e-4), Adam lr 0.05, no KL: collapse onto the attractor below the ceiling"),)


def reward_hacking() -> tuple[Variant, ...]:
    # arms: correct-short, correct-long, wrong-short, wrong-very-long (at the length budget)
    accuracy = np.array([1.0, 1.0, 0.0, 0.0])
    lengths = np.array([120.0, 400.0, 150.0, float(MAX_LENGTH)])
    bonus = 2.0 * lengths / MAX_LENGTH  # the proxy: a length/"thoroughness" reward
    P = 4
    components = np.broadcast_to(np.stack([accuracy, bonus], -1), (P, 4, 2)).copy()
    ref = np.log(np.array([[0.5, 0.35, 0.12, 0.03]] * P))  # the reference rarely rambles
    ref = ref + np.random.default_rng(777).normal(0.0, 0.2, ref.shape)
    task = BanditTask.k_arm(components.sum(-1), ref_logits=ref)
    arms = ArmTables(components, ("accuracy_reward", "length_reward"), np.broadcast_to(accuracy, (P, 4)).copy(),
                     np.broadcast_to(lengths, (P, 4)).copy(), MAX_LENGTH)
    hp = Hyperparams(lr=0.3, optimizer=SGD(momentum=0.5), group_size=8, num_groups=2, advantage="std", kl_coef=0.0)
    return (Variant(task, hp, arms, steps=300, logging_steps=5, eval_every=30,
                    note="length bonus 2 L / L_max outweighs correctness on a wrong answer at the budget"),)


def noise_dominated() -> tuple[Variant, ...]:
    task = BanditTask.prompts([0.5])
    hp = Hyperparams(lr=0.01, optimizer=SGD(momentum=0.0), group_size=4, num_groups=1, advantage="std", kl_coef=0.0)
    return (Variant(task, hp, binary_arms(task, 220.0, 300.0, MAX_LENGTH), steps=200, logging_steps=1,
                    eval_every=40, note="G = 4, one group per step, small learning rate"),)


RECIPES = {
    "healthy_saturation": healthy_saturation,
    "still_rising": still_rising,
    "stalled": stalled,
    "dynamical_instability": dynamical_instability,
    "advantage_degeneracy": advantage_degeneracy,
    "policy_concentration": policy_concentration,
    "reward_hacking": reward_hacking,
    "noise_dominated": noise_dominated,
}
assert tuple(RECIPES) == MODES
