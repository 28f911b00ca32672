"""The contextual generator family: its optimizer and gradients against references, and each
recipe's physics as read back from the files a user would have.

Oracles: Adam and heavy-ball against a plain loop of Kingma & Ba's Algorithm 1 and against their
closed forms for a constant gradient; the logit gradients against central finite differences;
the physical facts of each recipe (zero-std fraction, period 2T, eval falling while train rises,
entropy collapse below the ceiling, ...) measured on the log `read_log` returns.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from gspo_dynamics import ConfigError
from gspo_dynamics.sim.corpus_contextual import UNREACHABLE, RunConfig, adam_step, sgd_step
from gspo_dynamics.sim.corpus_contextual._engine import Policy, kl_grad, sample_actions, surrogate_grad
from gspo_dynamics.sim.corpus_contextual._optim import init_state
from gspo_dynamics.sim.corpus_contextual._task import log_softmax, softmax
from gspo_dynamics.sim.corpus_contextual._tasks import graded_task
from gspo_dynamics.theory.hyperparams import SGD, Adam, Hyperparams

EXACT = 1e-12  # float64 agreement of two routes through the same arithmetic
FD_STEP, FD_TOL = 1e-6, 1e-7  # central differences: O(h^2) truncation, O(eps / h) rounding


# ---- optimizer and gradients ---------------------------------------------------------------


def adam_loop(theta, grads, lr, b1, b2, eps):
    """Kingma & Ba (2015) Algorithm 1 (ascent), one coordinate at a time, in plain Python."""
    theta, m, v = list(theta), [0.0] * len(theta), [0.0] * len(theta)
    for t, g in enumerate(grads, start=1):
        for i, gi in enumerate(g):
            m[i] = b1 * m[i] + (1 - b1) * gi
            v[i] = b2 * v[i] + (1 - b2) * gi * gi
            theta[i] += lr * (m[i] / (1 - b1**t)) / (math.sqrt(v[i] / (1 - b2**t)) + eps)
    return np.array(theta)


def run_optimizer(step, opt, theta, grads, lr):
    state = init_state(theta)
    for g in grads:
        theta, state = step(theta, g, state, lr, opt)
    return theta, state


def test_adam_matches_the_loop_reference():
    rng = np.random.default_rng(0)
    theta0, grads = rng.normal(size=5), rng.normal(size=(40, 5)) * np.array([1e-3, 0.1, 1.0, 10.0, 0.0])
    opt = Adam(beta1=0.9, beta2=0.99, eps=1e-8)
    theta, state = run_optimizer(adam_step, opt, theta0, grads, 0.05)
    assert state.t == 40
    np.testing.assert_allclose(theta, adam_loop(theta0, grads, 0.05, 0.9, 0.99, 1e-8), rtol=EXACT, atol=EXACT)


def test_adam_with_a_constant_gradient_moves_lr_per_step_whatever_its_size():
    # bias correction makes m_hat = g and v_hat = g^2 exactly: theta_n = theta_0 + n lr g / (|g| + eps)
    g, lr, n, opt = np.array([1e-4, -3.0, 250.0]), 0.01, 30, Adam(eps=1e-8)
    theta, _ = run_optimizer(adam_step, opt, np.zeros(3), [g] * n, lr)
    np.testing.assert_allclose(theta, n * lr * g / (np.abs(g) + opt.eps), rtol=1e-10)


def test_heavy_ball_with_a_constant_gradient_follows_its_closed_form():
    # v_k = g (1 - mu^k) / (1 - mu), theta_n = theta_0 + lr sum_k v_k
    g, lr, n, mu = np.array([0.5, -2.0]), 0.1, 25, 0.9
    theta, _ = run_optimizer(sgd_step, SGD(momentum=mu), np.zeros(2), [g] * n, lr)
    expected = lr * g * sum((1 - mu**k) / (1 - mu) for k in range(1, n + 1))
    np.testing.assert_allclose(theta, expected, rtol=EXACT)


def numeric_grad(f, z):
    out = np.zeros_like(z)
    for idx in np.ndindex(z.shape):
        dz = np.zeros_like(z)
        dz[idx] = FD_STEP
        out[idx] = (f(z + dz) - f(z - dz)) / (2 * FD_STEP)
    return out


def test_surrogate_and_kl_gradients_match_finite_differences():
    rng = np.random.default_rng(1)
    B, K, G = 3, 4, 5
    z, ref = rng.normal(size=(B, K)), rng.normal(size=(B, K))
    actions, coef = rng.integers(K, size=(B, G)), rng.normal(size=(B, G))

    def surrogate(z):  # 1/(B G) sum coef log pi_z(a)
        return (coef * np.take_along_axis(log_softmax(z), actions, 1)).sum() / coef.size

    def kl(z):  # sum_b KL(pi_z(b) || pi_ref(b))
        return (softmax(z) * (log_softmax(z) - log_softmax(ref))).sum()

    pi = softmax(z)
    np.testing.assert_allclose(surrogate_grad(pi, actions, coef), numeric_grad(surrogate, z), atol=FD_TOL)
    np.testing.assert_allclose(kl_grad(pi, log_softmax(z) - log_softmax(ref)), numeric_grad(kl, z), atol=FD_TOL)


def test_the_policy_chain_rule_matches_finite_differences():
    task = graded_task(np.random.default_rng(2), prompts=6, actions=3, types=2, best_prob=(0.2, 0.5))
    policy = Policy(task)
    rng = np.random.default_rng(3)
    theta, prompts, g = rng.normal(size=policy.size), np.array([4, 1]), rng.normal(size=(2, 3))
    np.testing.assert_allclose(policy.grad(prompts, g), numeric_grad(lambda th: (g * policy.logits(th)[prompts]).sum(), theta),
                               atol=FD_TOL)


def test_an_unreachable_action_is_never_drawn_even_at_u_equal_one():
    p = softmax(np.array([[UNREACHABLE, 0.0, UNREACHABLE, 1.0, UNREACHABLE]] * 2))
    u = np.array([[1e-300, 0.5, 1.0], [0.2689, 0.27, 1.0]])
    drawn = sample_actions(p, u)
    assert set(drawn.ravel()) <= {1, 3} and drawn[0, 2] == 3


def test_run_config_rejects_what_it_cannot_run():
    hp = Hyperparams(lr=0.1, group_size=4)
    with pytest.raises(ConfigError, match="group_size"):
        RunConfig(hp=Hyperparams(lr=0.1), steps=10)
    with pytest.raises(ConfigError, match="sequence"):
        RunConfig(hp=Hyperparams(lr=0.1, group_size=4, correction="sequence"), steps=10)
    with pytest.raises(ConfigError, match="warmup"):
        RunConfig(hp=hp, steps=10, warmup_steps=10)
