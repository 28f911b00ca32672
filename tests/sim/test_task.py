"""Bandit tasks: constructors build the theory's bandit, validation names the bad value."""

from __future__ import annotations

import numpy as np
import pytest

from gspo_dynamics import ConfigError
from gspo_dynamics.sim import BanditTask
from gspo_dynamics.theory.bandit import TwoArmBandit, sigmoid


def test_two_arm_is_the_theory_bandit():
    task = BanditTask.two_arm(ref_logit=-1.5, init_logit=0.25)
    assert task.is_two_arm and task.is_binary and task.num_prompts == 1 and task.num_arms == 2
    np.testing.assert_array_equal(task.ref_logits, [[0.0, -1.5]])
    np.testing.assert_array_equal(task.start_logits, [[0.0, 0.25]])
    np.testing.assert_array_equal(task.trainable, [[False, True]])
    same = BanditTask.from_theory(TwoArmBandit(ref_logit=-1.5, init_logit=0.25))
    np.testing.assert_array_equal(same.start_logits, task.start_logits)


def test_prompts_have_the_requested_reference_failure_rates():
    d = [0.1, 0.5, 0.9]
    task = BanditTask.prompts(d)
    assert task.is_two_arm and task.num_prompts == 3
    np.testing.assert_allclose(1.0 - sigmoid(task.ref_logits[:, 1]), d, rtol=1e-14)


def test_k_arm_trains_every_logit_and_defaults_to_uniform_reference():
    task = BanditTask.k_arm([0.0, 0.3, 1.0])
    assert task.rewards.shape == (1, 3) and task.trainable.all() and not task.is_two_arm
    assert not task.is_binary
    np.testing.assert_array_equal(task.ref_logits, np.zeros((1, 3)))


def test_arrays_are_read_only_copies():
    rewards = np.array([[0.0, 1.0]])
    task = BanditTask(rewards=rewards, ref_logits=[[0.0, 0.0]])
    rewards[0, 0] = 5.0
    assert task.rewards[0, 0] == 0.0
    with pytest.raises(ValueError):
        task.rewards[0, 0] = 1.0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(rewards=[[1.0]], ref_logits=[[0.0]]), "at least 2 arms"),
        (dict(rewards=[[0.0, 1.0]], ref_logits=[[0.0, 0.0, 0.0]]), "ref_logits must have shape"),
        (dict(rewards=[[0.0, np.nan]], ref_logits=[[0.0, 0.0]]), "finite"),
        (dict(rewards=[[0.0, 1.0]], ref_logits=[[0.0, 0.0]], trainable=[False, False]), "trainable logit"),
        (dict(rewards=[[[0.0, 1.0]]], ref_logits=[[0.0, 0.0]]), r"shape \(prompts, arms\)"),
    ],
)
def test_bad_tasks_raise(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        BanditTask(**kwargs)


@pytest.mark.parametrize("d", [[0.0], [1.2], [], [1e-12]])
def test_bad_difficulties_raise(d):
    with pytest.raises(ConfigError, match="difficulties"):
        BanditTask.prompts(d)
