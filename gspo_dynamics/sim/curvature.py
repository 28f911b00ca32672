"""Curvature of the simulator's own expected update, by finite differences (`theory.curvature`).

This is the route for tasks without an analytic answer (K arms, several prompts): the engine's
expected ascent direction F(z, z_s) is differentiated numerically at its fixed point.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from gspo_dynamics.sim._engine import BanditEngine
from gspo_dynamics.sim._task import BanditTask
from gspo_dynamics.sim.stability import fixed_points
from gspo_dynamics.theory.curvature import stiffness_by_finite_differences
from gspo_dynamics.theory.hyperparams import Hyperparams


def expected_force(task: BanditTask, hp: Hyperparams):
    """F(z, z_s) of the expected dynamics as a numpy function of the (P*K,) logit vector."""
    engine = BanditEngine(task, [dataclasses.replace(hp, refresh_interval=1)], expected=True)
    shape = engine.shape  # (1, 1, P, K)

    def force(z, z_s):
        as_t = lambda x: torch.as_tensor(np.asarray(x, dtype=float)).reshape(shape)  # noqa: E731
        return engine.ascent(as_t(z), as_t(z_s)).reshape(-1).numpy()

    return force


def two_arm_stiffness(task: BanditTask, hp: Hyperparams) -> tuple[float, float]:
    """(a, b) of a two-armed task in the theory's one-logit coordinate z = l1 - l0 (l0 fixed at 0)."""
    force_k = expected_force(task, hp)
    z_star = float(fixed_points(task, [hp])[0])

    def force(z, z_s):
        return force_k([0.0, z], [0.0, z_s])[1]

    return stiffness_by_finite_differences(force, z_star)
