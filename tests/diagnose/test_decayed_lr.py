"""A reward that flattened while the logged learning rate decayed to its schedule's end is not said to have reached
the task's plateau alone: the saturation's first advice names the decay (`_context.decayed_lr_advice`)."""

from __future__ import annotations

import numpy as np

from gspo_dynamics.diagnose import diagnose
from gspo_dynamics.diagnose._context import LR_DECAYED, decayed_lr_advice
from gspo_dynamics.logs import RunLog


def _log(lr):
    n = np.arange(1, 201)
    reward = 0.8 - 0.6 * np.exp(-n / 25) + 0.01 * np.random.default_rng(0).normal(size=n.size)
    return RunLog(steps=n, series={"reward": reward, "learning_rate": lr(n)}, format="jsonl", source="<synthetic>")


def test_a_saturation_under_a_decayed_lr_names_the_schedule():
    cosine = _log(lambda n: 5e-6 * 0.5 * (1 + np.cos(np.pi * n / 200)))
    d = diagnose(cosine)
    assert d.primary == "healthy_saturation"
    assert d.action().startswith("the reward flattened while the learning rate decayed to ")
    assert "a run with a longer schedule (max_steps) or a constant lr" in d.action()


def test_a_constant_or_barely_decayed_lr_says_nothing_of_it():
    assert decayed_lr_advice(_log(lambda n: np.full(n.size, 5e-6))) is None
    linear = _log(lambda n: 5e-6 * (1 - 0.5 * n / 200))  # ends at half its peak, above LR_DECAYED
    assert LR_DECAYED < 0.5 and decayed_lr_advice(linear) is None
    assert decayed_lr_advice(_log(lambda n: 5e-6 * (1 - n / 200.5))) is not None  # linear to ~0
