"""`simulate.predicted_ratio_metrics` at the sequence level: the reward-aligned GSPO clip prediction
against a per-step loop over `theory.ratio_alignment`, and its refresh-interval inference against
the run's own config."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.signal import savgol_filter

from gspo_dynamics.sim.sequence import PatternMatch, TinyTransformer, TransformerConfig, run_sequence_rl
from gspo_dynamics.simulate import SLOPE_STEPS, predicted_ratio_metrics
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
