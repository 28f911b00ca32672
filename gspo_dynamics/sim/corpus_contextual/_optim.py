"""The optimizers of the contextual family, in numpy: bias-corrected Adam and heavy-ball SGD.

Both take the *ascent* direction g (the gradient of the objective to maximise) and return the new
parameters and state; nothing is updated in place, so a step can be checked against a loop.

    Adam (Kingma & Ba 2015, Algorithm 1), step t = 1, 2, ...:
        m_t = b1 m_{t-1} + (1 - b1) g_t            v_t = b2 v_{t-1} + (1 - b2) g_t^2
        m_hat = m_t / (1 - b1^t)                   v_hat = v_t / (1 - b2^t)
        theta_t = theta_{t-1} + lr m_hat / (sqrt(v_hat) + eps)
    SGD with heavy-ball momentum mu:
        v_t = mu v_{t-1} + g_t                     theta_t = theta_{t-1} + lr v_t

Adam's step is lr g / (|g| + eps) for a constant gradient (m_hat = g, v_hat = g^2 exactly): each
coordinate moves by about lr per step whatever the size of its gradient. That sign-like behaviour
is what the instability and concentration recipes rely on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gspo_dynamics.theory.hyperparams import SGD, Adam


@dataclass(frozen=True)
class OptimizerState:
    """First and second moments (Adam) or the velocity (SGD, `second` unused), and the step count."""

    first: np.ndarray  # m (Adam) or v (SGD), shape of theta
    second: np.ndarray  # v (Adam); zeros for SGD
    t: int  # steps taken so far


def init_state(theta: np.ndarray) -> OptimizerState:
    return OptimizerState(np.zeros_like(theta), np.zeros_like(theta), 0)


def adam_step(theta: np.ndarray, g: np.ndarray, state: OptimizerState, lr: float,
              opt: Adam) -> tuple[np.ndarray, OptimizerState]:
    """One bias-corrected Adam ascent step (equations in the module docstring)."""
    t = state.t + 1
    m = opt.beta1 * state.first + (1.0 - opt.beta1) * g
    v = opt.beta2 * state.second + (1.0 - opt.beta2) * g * g
    m_hat = m / (1.0 - opt.beta1**t)
    v_hat = v / (1.0 - opt.beta2**t)
    return theta + lr * m_hat / (np.sqrt(v_hat) + opt.eps), OptimizerState(m, v, t)


def sgd_step(theta: np.ndarray, g: np.ndarray, state: OptimizerState, lr: float,
             opt: SGD) -> tuple[np.ndarray, OptimizerState]:
    """One heavy-ball ascent step v <- mu v + g, theta <- theta + lr v."""
    v = opt.momentum * state.first + g
    return theta + lr * v, OptimizerState(v, state.second, state.t + 1)


def optimizer_step(theta: np.ndarray, g: np.ndarray, state: OptimizerState, lr: float,
                   opt: Adam | SGD) -> tuple[np.ndarray, OptimizerState]:
    """Dispatch on the optimizer dataclass of `Hyperparams.optimizer`."""
    step = adam_step if isinstance(opt, Adam) else sgd_step
    return step(theta, g, state, lr, opt)
