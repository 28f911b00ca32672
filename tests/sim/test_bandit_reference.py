"""The batched simulator against a plain per-run Python reference (scalar floats, no torch).

The reference writes the expected-mode update from the equations: for each action a with
weight pi_s(a), the gradient of its loss term w.r.t. logit j is A_a times
  "none":              pi_s(a) (1[a=j] - pi_s(j))                      (gradient at pi_s)
  "token"/"sequence":  pi_s(a) w_a (1[a=j] - pi(j)) if the clip is inactive, else 0,
                       w_a = pi(a) / pi_s(a)
the KL gradients are  exact: pi_j (log pi_j/q_j - KL);  k3 (ratio-weighted): pi_j - q_j,
and the optimizers are written out per logit. Stochastic mode is checked by the same loop idea
the other way round: each config simulated alone equals its slice of the batch, because the
random numbers are common across configs.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from gspo_dynamics.sim import BanditTask, simulate
from gspo_dynamics.theory.hyperparams import Adam, Hyperparams, SGD

# float64 with the same equations in another order, over STEPS steps of contracting dynamics.
LOOP_TOL = 1e-11
STEPS = 25


def _softmax(logits):
    top = max(logits)
    e = [math.exp(x - top) for x in logits]
    total = sum(e)
    return [x / total for x in e]


def _group_coefficient(k, G, advantage, estimator, eps):
    """g_k = (k/G)(1 - k/G) / s_k for a group of G binary rewards with k successes."""
    spread = (k / G) * (1.0 - k / G)
    if advantage == "mean" or spread == 0.0:
        return spread
    denom = G * (G - 1) if estimator == "unbiased" else G * G
    return spread / (math.sqrt(k * (G - k) / denom) + eps)


def _advantages(r, ps, hp):
    R = sum(p * x for p, x in zip(ps, r))
    if max(r) == min(r):
        return [0.0] * len(r)
    if hp.group_size is None:
        scale = 1.0
        if hp.advantage == "std":
            scale = math.sqrt(sum(p * (x - R) ** 2 for p, x in zip(ps, r))) + hp.std_eps
        return [(x - R) / scale for x in r]
    G = hp.group_size
    m = sum(
        math.comb(G, k) * R**k * (1.0 - R) ** (G - k) * _group_coefficient(k, G, hp.advantage, hp.std_estimator, hp.std_eps)
        for k in range(G + 1)
    )
    return [m / R if x == 1.0 else -m / (1.0 - R) for x in r]


def _ascent(l, ls, r, ref, trainable, hp):
    K = len(l)
    pi, ps, q = _softmax(l), _softmax(ls), _softmax(ref)
    A = _advantages(r, ps, hp)
    g = [0.0] * K
    for a in range(K):
        if hp.correction == "none":
            for j in range(K):
                g[j] += ps[a] * A[a] * ((a == j) - ps[j])
            continue
        w = pi[a] / ps[a]
        active = (A[a] > 0 and w <= 1.0 + hp.clip_high) or (A[a] < 0 and w >= 1.0 - hp.clip_low)
        if active:
            for j in range(K):
                g[j] += ps[a] * A[a] * w * ((a == j) - pi[j])
    if hp.kl_estimator == "exact":
        kl = sum(p * (math.log(p) - math.log(x)) for p, x in zip(pi, q))
        kl_grad = [pi[j] * (math.log(pi[j]) - math.log(q[j]) - kl) for j in range(K)]
    else:
        kl_grad = [pi[j] - q[j] for j in range(K)]
    return [(g[j] - hp.kl_coef * kl_grad[j]) * trainable[j] for j in range(K)]


def _reference_run(task: BanditTask, hp: Hyperparams, steps: int):
    """Logits trajectory of each prompt, (steps + 1, P, K), one scalar at a time."""
    out = np.zeros((steps + 1, task.num_prompts, task.num_arms))
    for p in range(task.num_prompts):
        l = list(task.start_logits[p])
        r, ref, trainable = list(task.rewards[p]), list(task.ref_logits[p]), list(task.trainable[p])
        K = len(l)
        m, s, ls = [0.0] * K, [0.0] * K, list(l)
        out[0, p] = l
        for t in range(steps):
            if t % hp.refresh_interval == 0:
                ls = list(l)
            g = _ascent(l, ls, r, ref, trainable, hp)
            for j in range(K):
                if isinstance(hp.optimizer, SGD):
                    m[j] = hp.optimizer.momentum * m[j] + g[j]
                    l[j] += hp.lr * m[j]
                else:
                    b1, b2, eps = hp.optimizer.beta1, hp.optimizer.beta2, hp.optimizer.eps
                    m[j] = b1 * m[j] + (1.0 - b1) * g[j]
                    s[j] = b2 * s[j] + (1.0 - b2) * g[j] ** 2
                    m_hat, s_hat = m[j] / (1.0 - b1 ** (t + 1)), s[j] / (1.0 - b2 ** (t + 1))
                    l[j] += hp.lr * m_hat / (math.sqrt(s_hat) + eps)
            out[t + 1, p] = l
    return out


def _configs(**shared):
    return [
        Hyperparams(lr=0.5, optimizer=SGD(momentum=0.0), refresh_interval=1, kl_coef=0.2, **shared),
        Hyperparams(lr=1.5, optimizer=SGD(momentum=0.6), refresh_interval=2, kl_coef=0.5, clip_low=0.1, clip_high=0.1, **shared),
        Hyperparams(lr=0.05, optimizer=Adam(beta1=0.9, beta2=0.99), refresh_interval=3, kl_coef=0.3, **shared),
        Hyperparams(lr=0.02, optimizer=Adam(beta1=0.0, beta2=0.9, eps=1e-3), refresh_interval=1, kl_coef=0.0, **shared),
    ]


TASKS = {
    "k_arm": BanditTask.k_arm([[0.0, 0.3, 1.0], [1.0, 0.2, 0.5]], ref_logits=[[0.5, 0.0, -0.5], [0.0, 0.0, 0.0]]),
    "binary_k_arm": BanditTask.k_arm([[0.0, 1.0, 1.0], [0.0, 0.0, 1.0]], ref_logits=[[1.0, 0.0, -1.0], [0.2, 0.0, -0.3]]),
    "prompts": BanditTask.prompts([0.2, 0.7]),
}
CASES = [
    ("k_arm", dict(correction="none", advantage="std", kl_estimator="exact")),
    ("k_arm", dict(correction="token", advantage="mean", kl_estimator="k3")),
    ("k_arm", dict(correction="sequence", advantage="std", kl_estimator="k3")),
    ("binary_k_arm", dict(correction="token", advantage="std", kl_estimator="exact", group_size=4)),
    ("binary_k_arm", dict(correction="none", advantage="mean", kl_estimator="k3", group_size=3)),
    ("prompts", dict(correction="sequence", advantage="std", kl_estimator="exact", group_size=6, std_estimator="biased")),
]


@pytest.mark.parametrize("task_name, shared", CASES)
def test_batched_expected_mode_equals_scalar_loop(task_name, shared):
    task = TASKS[task_name]
    hps = _configs(**shared)
    result = simulate(task, hps, steps=STEPS, seeds=2, expected=True, record_logits=True)
    for c, hp in enumerate(hps):
        want = _reference_run(task, hp, STEPS)
        for s in range(2):
            np.testing.assert_allclose(result.logits[:, c, s], want, atol=LOOP_TOL, rtol=0, err_msg=f"config {c}")


def test_stochastic_config_alone_equals_its_slice_of_the_batch():
    """Common random numbers: a config's runs do not depend on the rest of the batch."""
    task = TASKS["binary_k_arm"]
    hps = _configs(correction="token", group_size=4, num_groups=2)
    together = simulate(task, hps, steps=15, seeds=5, seed=7, record_logits=True)
    for c, hp in enumerate(hps):
        alone = simulate(task, [hp], steps=15, seeds=5, seed=7, record_logits=True)
        np.testing.assert_array_equal(alone.logits[:, 0], together.logits[:, c])
    again = simulate(task, hps, steps=15, seeds=5, seed=7)
    np.testing.assert_array_equal(again.reward, together.reward)
    other = simulate(task, hps, steps=15, seeds=5, seed=8)
    assert not np.array_equal(other.reward, together.reward)
