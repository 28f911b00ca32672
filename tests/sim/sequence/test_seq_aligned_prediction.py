"""`predict.predicted_ratio_metrics` at the sequence level: the reward-aligned GSPO clip prediction
against a per-step loop over `theory.ratio_alignment`, and its refresh-interval inference against
the run's own config; the law itself against a stale tabular policy's logged GSPO clip fractions at
the exact reward gain."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.signal import savgol_filter

from gspo_dynamics.predict import SLOPE_STEPS, predicted_ratio_metrics
from gspo_dynamics.predict._ratios import DEFAULT_GROUP_SIZE, DEFAULT_OPTIMIZER
from gspo_dynamics.sim.sequence import (
    PatternMatch, SequenceRLConfig, TinyTransformer, TransformerConfig, run_sequence_rl,
)
from gspo_dynamics.theory.ratio_alignment import aligned_clip_fractions
from gspo_dynamics.theory.ratios import GSPO_CLIP

T, STEPS, G = 4, 30, 8


@pytest.fixture(scope="module")
def run():
    torch.manual_seed(0)
    task = PatternMatch(length=4, partial_credit=True)
    config = TransformerConfig(vocab_size=task.vocab_size, max_len=task.prompt_len + task.response_len)
    policy = TinyTransformer(config, generator=torch.Generator().manual_seed(0))
    return run_sequence_rl(task, policy, objective="gspo", refresh_interval=T, lr=3e-3, steps=STEPS, seed=1,
                           group_size=G)


def test_sequence_clip_step_by_step(run):
    """The vectorised prediction against a loop: per step, the window gain from the smoothed reward
    slope, spread by Adam's beta1 (eq. 5), into the reward-aligned law at that step's measurements."""
    m, cfg = run.metrics, run.config
    got = predicted_ratio_metrics(m, "gspo", *GSPO_CLIP, config=cfg)["clip_frac"]
    slope = savgol_filter(m["reward"], SLOPE_STEPS, 1, deriv=1, mode="interp")
    beta1 = cfg.optimizer.beta1
    for t in range(STEPS):
        start, j = t - t % T, t % T
        gain = T * slope[start:start + T].mean() * sum(beta1**k for k in range(j)) / sum(beta1**k for k in range(T))
        fr = aligned_clip_fractions(m["ratios/seq_log_mean"][t], m["ratios/seq_log_var"][t], gain, m["reward_std"][t],
                                    4, G, *GSPO_CLIP, m["advantages/frac_positive"][t], m["advantages/frac_negative"][t])
        assert got[t] == pytest.approx(float(fr.total), abs=1e-10)
    assert np.all(got[run.window_position == 0] < 1e-6)  # a refresh step's ratio is 1 up to rounding


def test_refresh_interval_is_inferred_from_the_refresh_steps(run):
    m = run.metrics
    given = predicted_ratio_metrics(m, "gspo", *GSPO_CLIP, config=run.config)
    inferred = predicted_ratio_metrics(m, "gspo", *GSPO_CLIP)  # the config's G and optimizer are the defaults
    assert np.array_equal(given["clip_frac"], inferred["clip_frac"])


def test_token_objectives_are_unchanged_by_the_config(run):
    m = run.metrics
    a = predicted_ratio_metrics(m, "grpo", 0.2, 0.28)
    b = predicted_ratio_metrics(m, "grpo", 0.2, 0.28, config=run.config)
    assert np.array_equal(a["clip_frac"], b["clip_frac"], equal_nan=True)


# A tabular policy away from saturation (random logits) trained by SGD on fresh minibatches of its own
# sampler, as paper_repro/ratio_statistics.py does, where the exact gain E_j[r] - E_s[r] is known.
# Model error allowed: the two-point overshoot of the alignment plus the within-sign spreads the law
# takes equal (measured below at j = 1 and 4: +0.015 to +0.026, each side); the statistical s.e. of a
# fraction over 8192 responses is < 0.006. The sign-blind lognormal misses the total by 0.09-0.14.
TABULAR_CLIP_ATOL = 0.04


def test_exact_gain_predicts_a_tabular_policys_gspo_clip_fractions():
    from gspo_dynamics.objectives import get_loss, group_advantages
    from gspo_dynamics.sim.sequence import TabularPolicy, log_probs, sample

    L, V, N, eval_size = 64, 15, 64, 8192
    lr = 100.0  # token log-ratio variance 0.004 after one step, 0.015 after four: inside the small-drift regime
    task = PatternMatch(length=L, partial_credit=True)
    gen = torch.Generator().manual_seed(3)
    with torch.no_grad():
        sampler = TabularPolicy(L, V, torch.randn(L, V, generator=gen, dtype=torch.float64))
    policy = TabularPolicy(L, V, sampler.logits.detach().clone())
    optimizer = torch.optim.SGD(policy.parameters(), lr=lr)
    prompts = task.prompts(eval_size)
    tokens, logp_s, mask, _ = sample(sampler, prompts, L, gen)  # the evaluation sample, from pi_s
    rewards = task.reward(prompts, tokens, mask)
    adv = group_advantages(rewards.view(-1, G))
    with torch.no_grad():
        r0 = float(task.expected_reward(sampler.probs()))
    for j in range(1, 5):
        batch_prompts = task.prompts(N)
        y, lp, msk, _ = sample(sampler, batch_prompts, L, gen)  # a fresh minibatch from pi_s
        a = group_advantages(task.reward(batch_prompts, y, msk).view(-1, G)).view(-1)
        loss, _ = get_loss("grpo")(log_probs(policy, batch_prompts, y, msk), lp, a, msk, clip_low=0.2, clip_high=0.28)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if j not in (1, 4):
            continue
        with torch.no_grad():
            logp = log_probs(policy, prompts, tokens, mask)
            _, logged = get_loss("gspo")(logp, logp_s, adv.view(-1), mask, clip_low=GSPO_CLIP[0], clip_high=GSPO_CLIP[1])
            log_s = ((logp - logp_s) * mask).sum(-1) / mask.sum(-1)
            gain = float(task.expected_reward(policy.probs())) - r0
        fr = aligned_clip_fractions(float(log_s.mean()), float(log_s.var(unbiased=False)), gain,
                                    float(rewards.view(-1, G).std(dim=1).mean()), L, G, *GSPO_CLIP,
                                    float((adv > 0).double().mean()), float((adv < 0).double().mean()))
        blind = aligned_clip_fractions(float(log_s.mean()), float(log_s.var(unbiased=False)), 0.0, 0.1, L, G, *GSPO_CLIP,
                                       float((adv > 0).double().mean()), float((adv < 0).double().mean()))
        assert abs(float(blind.total) - float(logged["losses/clip_frac"])) > 2 * TABULAR_CLIP_ATOL  # alignment matters
        assert gain > 0.0
        assert float(fr.low) == pytest.approx(float(logged["losses/clip_frac_low"]), abs=TABULAR_CLIP_ATOL)
        assert float(fr.high) == pytest.approx(float(logged["losses/clip_frac_high"]), abs=TABULAR_CLIP_ATOL)


def test_the_configless_defaults_are_the_sequence_configs():
    """Without a config the prediction takes SequenceRLConfig's G and optimizer; it sits below the
    testbeds, so it states them itself and this test keeps the two the same."""
    default = SequenceRLConfig(objective="gspo")
    assert (DEFAULT_GROUP_SIZE, DEFAULT_OPTIMIZER) == (default.group_size, default.optimizer)
