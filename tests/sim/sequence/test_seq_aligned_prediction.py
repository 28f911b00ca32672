"""`simulate.predicted_ratio_metrics` at the sequence level: the reward-aligned GSPO clip prediction
against a per-window loop over `theory.ratio_alignment`, and its window-position inference against
the run's own positions."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.signal import savgol_filter

from gspo_dynamics.sim.sequence import PatternMatch, TinyTransformer, TransformerConfig, run_sequence_rl
from gspo_dynamics.simulate import SLOPE_STEPS, predicted_ratio_metrics
from gspo_dynamics.theory.ratio_alignment import aligned_window_clip
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


def test_sequence_clip_is_the_window_fixed_point_step_by_step(run):
    m, j = run.metrics, run.window_position
    got = predicted_ratio_metrics(m, "gspo", *GSPO_CLIP, window_position=j, group_size=G)["clip_frac"]
    slope = savgol_filter(m["reward"], SLOPE_STEPS, 1, deriv=1, mode="interp")
    for start in range(0, STEPS, T):  # loop reference: one window at a time, its last one partial
        k = np.minimum(np.arange(start, start + T), STEPS - 1)  # (T,) a partial window repeats its last step
        gain = T * slope[start:start + T].mean()
        fr, _ = aligned_window_clip(gain, m["ratios/seq_log_mean"][k], m["ratios/seq_log_var"][k], m["reward_std"][k],
                                    4, G, *GSPO_CLIP, m["advantages/frac_positive"][k], m["advantages/frac_negative"][k])
        n = min(T, STEPS - start)
        assert np.allclose(got[start:start + n], fr.total[:n], atol=1e-8)
    assert np.all(got[j == 0] < 1e-6)  # a refresh step's ratio is 1 up to rounding: nothing clipped


def test_window_positions_are_inferred_from_the_refresh_steps(run):
    m = run.metrics
    given = predicted_ratio_metrics(m, "gspo", *GSPO_CLIP, window_position=run.window_position, group_size=G)
    inferred = predicted_ratio_metrics(m, "gspo", *GSPO_CLIP, group_size=G)
    assert np.array_equal(given["clip_frac"], inferred["clip_frac"])


def test_token_objectives_are_unchanged_by_the_window_arguments(run):
    m = run.metrics
    a = predicted_ratio_metrics(m, "grpo", 0.2, 0.28)
    b = predicted_ratio_metrics(m, "grpo", 0.2, 0.28, window_position=run.window_position, group_size=G)
    assert np.array_equal(a["clip_frac"], b["clip_frac"], equal_nan=True)
