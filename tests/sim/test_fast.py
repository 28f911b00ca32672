"""The fused two-arm engine (`sim._fast`) against the general engine, and `simulate`'s dispatch.

Both consume the same uniforms, so stochastic runs are compared path by path, not in distribution.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.sim import BanditTask, simulate
from gspo_dynamics.sim._engine import BanditEngine
from gspo_dynamics.sim._fast import TwoArmEngine
from gspo_dynamics.sim.bandit import engine_class
from gspo_dynamics.theory.hyperparams import Hyperparams

# the same equations in another order (closed forms vs autograd), float64, over STEPS contracting steps
ENGINE_TOL = 1e-12
STEPS = 12
# same uniforms: paths differ by rounding only (a uniform within ~1e-16 of pi_s(0) would flip an action),
# which the Adam runs amplify by lr / eps where g is near 0 (flat groups at z = z_ref)
PATH_TOL = 1e-10

TASKS = {
    "two_arm": BanditTask.two_arm(ref_logit=-1.0, init_logit=0.5),
    "prompts": BanditTask.prompts([0.2, 0.5, 0.9]),
}




def _both(task, configs, **kwargs):
    general = simulate(task, configs, engine="general", record_logits=True, **kwargs)
    fast = simulate(task, configs, engine="fast", record_logits=True, **kwargs)
    return general, fast


@pytest.mark.parametrize(
    "correction, advantage, kl_estimator, group_size, refresh",
    list(itertools.product(["none", "token", "sequence"], ["mean", "std"], ["exact", "k3"], [None, 4], [1, 3])),
)
def test_expected_mode_equals_general_engine(correction, advantage, kl_estimator, group_size, refresh, mixed_configs):
    base = Hyperparams(
        lr=1.0, refresh_interval=refresh, group_size=group_size, advantage=advantage,
        correction=correction, kl_estimator=kl_estimator,
    )
    for task in TASKS.values():
        general, fast = _both(task, mixed_configs(base), steps=STEPS, expected=True)
        np.testing.assert_allclose(fast.logits, general.logits, rtol=0, atol=ENGINE_TOL)
        np.testing.assert_allclose(fast.reward, general.reward, rtol=0, atol=ENGINE_TOL)


@pytest.mark.parametrize(
    "correction, advantage, kl_estimator",
    list(itertools.product(["none", "token", "sequence"], ["mean", "std"], ["exact", "k3"])),
)
def test_stochastic_mode_same_uniforms_same_paths(correction, advantage, kl_estimator, mixed_configs):
    base = Hyperparams(
        lr=1.0, refresh_interval=3, group_size=4, num_groups=2, advantage=advantage,
        correction=correction, kl_estimator=kl_estimator,
    )
    general, fast = _both(TASKS["prompts"], mixed_configs(base), steps=STEPS, seeds=16, seed=7)
    np.testing.assert_allclose(fast.logits, general.logits, rtol=0, atol=PATH_TOL)
    assert np.ptp(fast.logits[-1, ..., 1], axis=1).min() > 0.0  # the seeds really differ


def test_stochastic_engines_draw_the_same_random_numbers():
    """After the same steps both generators are in the same state: the next uniforms agree."""
    hp = Hyperparams(lr=1.0, group_size=8, num_groups=3, kl_coef=0.1)
    engines = [cls(TASKS["prompts"], [hp], seeds=5, seed=3) for cls in (BanditEngine, TwoArmEngine)]
    for engine in engines:
        for _ in range(4):
            engine.step()
    draws = [torch.rand(3, generator=e.generator, dtype=torch.float64) for e in engines]
    assert torch.equal(draws[0], draws[1])


def test_auto_dispatch_uses_the_fast_engine_where_it_applies():
    assert engine_class(TASKS["two_arm"]) is TwoArmEngine
    assert engine_class(TASKS["prompts"], "auto") is TwoArmEngine
    assert engine_class(TASKS["two_arm"], "general") is BanditEngine


@pytest.mark.parametrize(
    "task",
    [
        BanditTask.k_arm([0.0, 1.0, 0.5]),  # K > 2
        BanditTask.k_arm([0.0, 0.7]),  # non-binary reward
        BanditTask.k_arm([0.0, 1.0]),  # both logits trained
        BanditTask(rewards=[[1.0, 0.0]], ref_logits=[[0.0, 0.0]], trainable=[False, True]),  # arm 0 pays
    ],
    ids=["three_arms", "non_binary", "all_trained", "swapped_rewards"],
)
def test_dispatch_falls_back_to_the_general_engine(task):
    assert engine_class(task) is BanditEngine
    hp = Hyperparams(lr=1.0, group_size=4)
    with pytest.raises(ConfigError, match="two-arm"):
        simulate(task, [hp], steps=1, engine="fast")
    auto = simulate(task, [hp], steps=3, seeds=2, seed=1)
    general = simulate(task, [hp], steps=3, seeds=2, seed=1, engine="general")
    np.testing.assert_array_equal(auto.final_logits, general.final_logits)


def test_unknown_engine_is_a_config_error():
    with pytest.raises(ConfigError, match="engine must be one of"):
        simulate(TASKS["two_arm"], [Hyperparams(lr=1.0)], steps=1, expected=True, engine="turbo")
