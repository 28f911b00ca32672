"""Bandit runs behave as they must: ascent on-policy, plateaus below 1 with KL, clear errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gspo_dynamics import ConfigError
from gspo_dynamics.sim import BanditTask, simulate
from gspo_dynamics.theory import bandit as tb
from gspo_dynamics.theory.hyperparams import Adam, Hyperparams, SGD

# Converged expected runs: the distance to the fixed point after CONVERGE_STEPS contracting steps.
PLATEAU_TOL = 1e-9
CONVERGE_STEPS = 1000


def test_on_policy_k_arm_ascent_increases_reward_to_the_best_arm():
    """T = 1, mean baseline, G -> infinity, no KL: g = grad R exactly, so small steps raise R."""
    task = BanditTask.k_arm([[0.0, 0.4, 1.0, 0.7], [0.9, 0.1, 0.2, 0.0]])
    hp = Hyperparams(lr=0.5)
    result = simulate(task, [hp], steps=400, expected=True, record_every=5)
    reward = result.reward[:, 0, 0]  # (n_records, P)
    assert np.all(np.diff(reward, axis=0) >= -1e-15)
    np.testing.assert_allclose(reward[-1], task.max_reward, atol=0.02)


@pytest.mark.parametrize("kl_estimator", ["exact", "k3"])
def test_kl_keeps_every_prompt_below_one_at_the_theory_fixed_point(kl_estimator):
    task = BanditTask.prompts([0.2, 0.5, 0.8, 0.95])
    hps = [Hyperparams(lr=lr, kl_coef=0.5, kl_estimator=kl_estimator) for lr in (2.0, 4.0)]
    result = simulate(task, hps, steps=CONVERGE_STEPS, expected=True, record_every=100)
    for c, hp in enumerate(hps):
        plateau = result.reward[-1, c, 0]  # (P,)
        want = [tb.fixed_point(tb.TwoArmBandit(ref_logit=float(z)), hp).reward for z in task.ref_logits[:, 1]]
        np.testing.assert_allclose(plateau, want, atol=PLATEAU_TOL)
        assert np.all(np.diff(plateau) < 0.0)  # harder prompts plateau lower
        assert result.mean_reward[-1, c, 0] < 1.0


def test_k_arm_plateau_with_kl_stays_below_the_best_arm():
    task = BanditTask.k_arm([0.0, 0.5, 1.0])
    result = simulate(task, [Hyperparams(lr=3.0, kl_coef=0.3)], steps=CONVERGE_STEPS, expected=True, record_every=50)
    reward = result.mean_reward[:, 0, 0]
    assert abs(reward[-1] - reward[-2]) < 1e-8  # converged
    assert 0.5 < reward[-1] < 0.99


def test_records_and_progress():
    seen = []
    result = simulate(BanditTask.two_arm(), [Hyperparams(lr=0.1)], steps=20, expected=True, record_every=7,
                      progress=lambda t, n: seen.append((t, n)))
    np.testing.assert_array_equal(result.steps, [0, 7, 14, 20])
    assert seen == [(0, 20), (7, 20), (14, 20), (20, 20)]
    assert result.reward.shape == (4, 1, 1, 1) and result.final_logits.shape == (1, 1, 1, 2)
    assert result.reward[0, 0, 0, 0] == pytest.approx(0.5)
    assert result.logits is None
    with pytest.raises(ConfigError, match="record_logits"):
        result.logit_gap


def test_float32_and_mixed_optimizers_run():
    hps = [Hyperparams(lr=0.1), Hyperparams(lr=0.01, optimizer=Adam())]
    r64 = simulate(BanditTask.two_arm(), hps, steps=30, expected=True)
    r32 = simulate(BanditTask.two_arm(), hps, steps=30, expected=True, dtype=torch.float32)
    np.testing.assert_allclose(r32.reward, r64.reward, atol=1e-5)


def test_frozen_logit_stays_put_under_both_optimizers():
    hps = [
        Hyperparams(lr=0.5, optimizer=SGD(momentum=0.9), kl_coef=0.1, group_size=4),
        Hyperparams(lr=0.05, optimizer=Adam(), kl_coef=0.1, group_size=4),
    ]
    result = simulate(BanditTask.prompts([0.4, 0.7]), hps, steps=50, seeds=3, record_logits=True)
    assert np.all(result.logits[..., 0] == 0.0)
    assert np.all(result.logits[-1, ..., 1] != result.logits[0, ..., 1])


@pytest.mark.parametrize(
    "task, configs, kwargs, match",
    [
        (BanditTask.k_arm([0.0, 0.5]), [Hyperparams(lr=1.0, group_size=4)], dict(expected=True), r"rewards in \{0, 1\}"),
        (BanditTask.two_arm(), [Hyperparams(lr=1.0)], dict(), "finite group_size"),
        (BanditTask.two_arm(), [Hyperparams(lr=1.0), Hyperparams(lr=1.0, correction="token")], dict(expected=True), "correction"),
        (BanditTask.two_arm(), [Hyperparams(lr=1.0, group_size=4), Hyperparams(lr=1.0, group_size=8)], dict(), "group_size"),
        (BanditTask.two_arm(), [], dict(expected=True), "at least one"),
        (BanditTask.two_arm(), [Hyperparams(lr=1.0)], dict(expected=True, steps=-1), "steps"),
        (BanditTask.two_arm(), [Hyperparams(lr=1.0)], dict(expected=True, record_every=0), "record_every"),
        (BanditTask.two_arm(), [Hyperparams(lr=1.0)], dict(expected=True, seeds=0), "seeds"),
        (BanditTask.two_arm(), [Hyperparams(lr=1.0)], dict(expected=True, dtype=torch.int64), "dtype"),
        (BanditTask.two_arm(), [Hyperparams(lr=1.0)], dict(expected=True, start_logits=np.zeros(3)), "broadcast"),
        ("bandit", [Hyperparams(lr=1.0)], dict(expected=True), "BanditTask"),
    ],
)
def test_bad_input_raises_config_error(task, configs, kwargs, match):
    kwargs.setdefault("steps", 2)
    with pytest.raises(ConfigError, match=match):
        simulate(task, configs, **kwargs)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error raised without CUDA")
def test_cuda_request_without_cuda_is_a_config_error():
    with pytest.raises(ConfigError, match="CUDA"):
        simulate(BanditTask.two_arm(), [Hyperparams(lr=1.0)], steps=1, expected=True, device="cuda")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_cpu():
    task = BanditTask.prompts([0.3, 0.7])
    hps = [Hyperparams(lr=0.5, kl_coef=0.2, refresh_interval=T, correction="token", group_size=4) for T in (1, 3)]
    cpu = simulate(task, hps, steps=50, expected=True)
    gpu = simulate(task, hps, steps=50, expected=True, device="cuda")
    np.testing.assert_allclose(gpu.reward, cpu.reward, atol=1e-10)
    noisy = simulate(task, hps, steps=50, seeds=64, device="cuda")
    assert noisy.reward.shape == (51, 2, 64, 2) and np.all(np.isfinite(noisy.reward))
