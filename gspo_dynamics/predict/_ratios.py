"""The ratio theory's per-step predictions for a sequence RL run's logged metrics: what
`simulate --testbed sequence`, the `ratios` figure and paper_repro/objectives_transformer.py set
next to the measured clip fractions and ratio statistics (`predicted_ratio_metrics`).

Token ratios: the memoryless lognormal of `theory.ratios` at the measured log-ratio spread.
Sequence ratio (GSPO): the reward-aligned law of `theory.ratio_alignment`, whose sign shift is the
reward gained since the refresh (the importance-sampling identity L Cov(log s, r) = Delta R_j).
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from gspo_dynamics.theory.hyperparams import SGD, Adam
from gspo_dynamics.theory.ratio_alignment import aligned_clip_fractions, momentum_window_gains
from gspo_dynamics.theory.ratios import ratio_statistics

SEQUENCE_RATIO = ("gspo", "gspo_token")  # objectives whose clip acts on GSPO's sequence ratio
SIGN_BLIND_CLIP = ("cispo",)  # caps the weight whatever the advantage's sign (its metrics say so)
NO_CLIP = ("pg",)  # no ratio is clipped: predicted clip fraction 0
# the lower clip bound 1 - eps_low <= 0 of eps_low >= 1 is never crossed; the theory takes eps_low
# in (0, 1), and this one puts the bound at a log-ratio of -28, unreachable at any measured spread
UNREACHABLE_CLIP_LOW = 1.0 - 1e-12
# a refresh step's token log-ratio variance is rounding (<~ 1e-13), a stale step's >~ 1e-9
REFRESH_LOG_VAR = 1e-11
SLOPE_STEPS = 17  # the reward slope's least-squares window (steps, odd): ~16 minibatch means
# without a config, the group size and optimizer of `sim.sequence.SequenceRLConfig`'s defaults
# (a test pins them to it: this layer sits below the testbeds and cannot import them)
DEFAULT_GROUP_SIZE = 8
DEFAULT_OPTIMIZER = Adam()


class RatioRunConfig(Protocol):
    """What the prediction reads of a run's config (`SequenceRLConfig`, the trainer's config)."""

    refresh_interval: int  # T, optimizer steps per rollout
    group_size: int  # G, responses per prompt
    optimizer: SGD | Adam  # its momentum (SGD mu, Adam beta1) spreads the window's gain


def _refresh_interval(m: dict[str, np.ndarray]) -> int:
    """T inferred from the metrics. A refresh makes the current policy the sampler, so its step's
    token log-ratio variance is float32 rounding of the cached vs the teacher-forced log-probs
    (measured <~ 1e-13 on the tiny transformer, while one stale step at a learning rate that learns
    gives >~ 1e-9): REFRESH_LOG_VAR splits the two; T is the most common spacing of the refresh
    steps (a saturated policy's stale step can look fresh too)."""
    fresh = np.nan_to_num(m["ratios/token_log_var"], nan=np.inf) <= REFRESH_LOG_VAR  # (steps,)
    starts = np.flatnonzero(fresh)
    return int(np.bincount(np.diff(starts)).argmax()) if len(starts) > 1 else len(fresh)


def _window_gain(reward: np.ndarray, T: int) -> np.ndarray:
    """Gamma per step: T x the reward curve's slope averaged over the step's refresh window.

    The slope is the least-squares line through a centred window of the logged minibatch rewards
    (Savitzky-Golay, order 1, max(SLOPE_STEPS, 2T + 1) steps; the first and last windows use the
    end segments), so it is unbiased for a linear trend and averages the minibatch noise of ~16
    minibatches. The logged reward at step t is the sampler's (t - j steps old); the lag does not
    change the slope."""
    from scipy.signal import savgol_filter  # here, not at the top: scipy.signal costs ~0.5 s to import

    steps = len(reward)
    width = min(max(SLOPE_STEPS, 2 * T + 1), steps - (steps + 1) % 2)  # odd, at most the run
    slope = np.zeros(steps) if width < 3 else savgol_filter(reward, width, 1, deriv=1, mode="interp")
    window = np.arange(steps) // T  # (steps,) which window each step belongs to
    return T * (np.bincount(window, slope) / np.bincount(window))[window]


def _sequence_reward_gain(m: dict[str, np.ndarray], config: RatioRunConfig | None, expected_reward) -> np.ndarray:
    """Delta R_j per step (`theory.ratio_alignment`, eq. 5): E[r](t) - E[r](t - j) where the exact
    expected reward is known, else the smoothed reward curve's window gain spread by the momentum."""
    steps = len(m["reward"])
    T = _refresh_interval(m) if config is None else config.refresh_interval
    j = np.arange(steps) % T  # (steps,) window position: run_sequence_rl refreshes at t = 0, T, 2T, ...
    if expected_reward is not None:
        expected = np.asarray(expected_reward, dtype=float)  # (steps + 1,) E[r] after t steps
        return expected[:steps] - expected[np.arange(steps) - j]
    optimizer = DEFAULT_OPTIMIZER if config is None else config.optimizer
    mu = optimizer.beta1 if isinstance(optimizer, Adam) else optimizer.momentum
    share = momentum_window_gains(1.0, mu, T)  # (T,) Delta R_j / Gamma
    return _window_gain(m["reward"], T) * share[j]


def predicted_ratio_metrics(m: dict[str, np.ndarray], objective: str, clip_low: float, clip_high: float, *,
                            config: RatioRunConfig | None = None, expected_reward=None) -> dict[str, Any]:
    """Per step, the theory's ratio statistics at the measured token log-ratio spread sigma^2 and
    length L: log rho ~ N(-sigma^2 / 2, sigma^2) (token) or N(-sigma^2 / 2, sigma^2 / L) (sequence),
    each (steps,), NaN at a step without an update. pg clips nothing: its clip fraction is 0.

    Clip fraction. Token ratios: the lognormal's tails on the side the PPO min acts on for the
    measured advantage-sign shares (CISPO: both sides, sign-blind). Sequence ratio (GSPO): the
    reward-aligned law of `theory.ratio_alignment` - log s leans towards the sign of A by
    m+- = M sqrt(q-+ / q+-), M = Delta R_j sqrt((G - 1) / G) / (L sigma_r), Delta R_j the reward
    gained since the refresh - with inputs: the reward curve's slope (smoothed, `_window_gain`)
    spread over the window by the optimizer's momentum, the measured E[log s] and Var[log s], the
    advantage-sign shares and reward_std (the mean within-group std).
    config: the run's SequenceRLConfig, for T, G and the momentum (None: T inferred from the
    refresh steps' rounding-level ratios, G and the optimizer SequenceRLConfig's defaults);
    expected_reward: (steps + 1,) exact E[r] after t steps (`SequenceRun.expected_reward`, tabular
    policies), which gives Delta R_j exactly instead."""
    sigma2 = m["ratios/token_log_var"]  # (steps,)
    updated = np.isfinite(sigma2)
    sigma2 = np.where(updated, sigma2, 0.0)
    length = np.maximum(np.rint(np.nan_to_num(m["completions/mean_length"], nan=1.0)), 1).astype(int)
    level = "sequence" if objective in SEQUENCE_RATIO else "token"
    # sigma^2(j = 1) = drift^2: the theory's moments at the measured spread
    stats = ratio_statistics(level, np.sqrt(sigma2), 1, length, clip_low=min(clip_low, UNREACHABLE_CLIP_LOW),
                             clip_high=clip_high)
    if objective in NO_CLIP:
        clip = np.zeros_like(sigma2)
    elif objective in SIGN_BLIND_CLIP:
        clip = stats.clip.region
    elif level == "sequence":
        G = DEFAULT_GROUP_SIZE if config is None else config.group_size
        on = {k: np.where(updated, np.nan_to_num(m[k]), 0.0) for k in (
            "ratios/seq_log_mean", "ratios/seq_log_var", "reward_std", "advantages/frac_positive",
            "advantages/frac_negative")}
        clip = aligned_clip_fractions(
            on["ratios/seq_log_mean"], on["ratios/seq_log_var"], _sequence_reward_gain(m, config, expected_reward),
            on["reward_std"], length, G, min(clip_low, UNREACHABLE_CLIP_LOW), clip_high,
            on["advantages/frac_positive"], on["advantages/frac_negative"]).total
    else:  # a side is clipped only for the advantage sign the PPO min acts on; A = 0 is never clipped
        clip = m["advantages/frac_negative"] * stats.clip.below + m["advantages/frac_positive"] * stats.clip.above
    predicted = {"clip_frac": clip, "ratio_std": np.sqrt(stats.variance), "token_log_mean": -0.5 * sigma2,
                 "seq_log_var": sigma2 / length}
    return {"level": level, **{k: np.where(updated, v, np.nan) for k, v in predicted.items()}}
