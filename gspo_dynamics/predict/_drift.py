"""The policy's drift between samplers, measured on a pilot log, and the clip fractions it implies by T.

A stale window's log-ratios spread as the policy moves away from its sampler: at window position j (j = 0
is on-policy) log r_j ~ N(0, (j delta)^2), the drift coherent over a window (Var_j = (j delta)^2). Measured:

  token drift delta      delta^2 = the mean over stale steps of Var_j / j^2, from our trainer's
                         window/position and ratios/token_log_var; else, for a token-level run at T > 1 that
                         logs a clip fraction (TRL's clip_ratio/region_mean, verl's pg_clipfrac), the delta
                         whose `clip_region_share` equals it;
  sequence drift delta_s of log s = (1/L) sum_t log w_t (GSPO's ratio): the same from ratios/seq_log_var, or
                         inverted from the clip fraction of a sequence-level run (TRL's importance_sampling_level
                         "sequence", verl's GSPO loss: what they log is the sequences' clip fraction); else
                         delta / sqrt(L), L the pilot's mean completion length (a response's tokens drifting
                         independently: assumed, said; a response drifting as one would keep delta).

The clip fraction at refresh interval T' is `clip_region_share` of the drift at the run's clip range: the
window mean of the share clipped in its advantage's direction, the quantity TRL and verl log, for the
token ratio and, under a sequence-level correction, for the sequence ratio. Log-ratios are taken independent
of the advantage's sign; for GSPO's ratio that is known to fall short at larger T, where log s leans toward the
sign of A as the reward rises (`theory.ratio_alignment`; on the tiny transformer at T = 8, 0.60 measured against
0.40 for signs blind to the advantage: paper_repro row transformer-clip-sequence). The two token routes measure
different things where log-ratios are heavy-tailed: on a trainer run the variance's delta is ~11x the
clip fraction's (tests/predict/test_pilot.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.special import erfc

from gspo_dynamics.logs import RunLog

REFRESH_INTERVALS = (1, 2, 4, 8, 16, 32)


@dataclass(frozen=True)
class Drift:
    """The pilot's drift per stale step and the clip fractions by T it implies (module docstring)."""

    token: float | None  # delta (None: not measured)
    sequence: float | None  # delta_s, under a sequence-level correction (None: not measured or not that run)
    token_clips: dict[int, float] = field(default_factory=dict)  # clip fraction of the token ratio per T'
    sequence_clips: dict[int, float] = field(default_factory=dict)  # of the sequence ratio per T'

    @property
    def per_step(self) -> float | None:
        """The drift the collapse model reads (`theory.collapse`): the token drift, else the sequence one."""
        return self.token if self.token is not None else self.sequence


def clip_region_share(delta: float, refresh_interval: int, clip_low: float, clip_high: float) -> float:
    """The window mean of the share of ratios clipped in their advantage's direction (TRL's
    clip_ratio/region_mean, verl's pg_clipfrac) when log r_j ~ N(0, (j delta)^2) independently of the
    advantage's sign (each sign half the samples):

        c = (1/T) sum_{j=1}^{T-1} [P(log r_j > log(1 + eps_high)) + P(log r_j < log(1 - eps_low))] / 2,

    P(N(0, s^2) > b) = erfc(b / (s sqrt 2)) / 2. Increasing in delta from 0 (delta = 0: no drift) to
    (T - 1) / (2 T) (with eps_low < 1; (T - 1) / (4 T) without a lower edge)."""
    if delta <= 0:
        return 0.0
    j = np.arange(1, refresh_interval) * delta
    high = erfc(math.log1p(clip_high) / (j * math.sqrt(2.0))) / 2
    low = erfc(-math.log1p(-clip_low) / (j * math.sqrt(2.0))) / 2 if clip_low < 1 else np.zeros_like(j)
    return float(((high + low) / 2).sum() / refresh_interval)


def measure_drift(log: RunLog, n: int, hp, measured: list[str], assumed: list[str]) -> Drift:
    """The drift of the pilot's first n rows under the run's hyperparameters `hp` (module docstring)."""
    sequence_run = hp.correction == "sequence"
    token = _from_variance(log, n, "ratios/token_log_var", "token", measured)
    sequence = _from_variance(log, n, "ratios/seq_log_var", "sequence", measured) if sequence_run else None
    if token is None and not sequence_run:
        token = _from_clip_fraction(log, n, hp, "token", measured)
    if sequence_run and sequence is None:
        sequence = _from_clip_fraction(log, n, hp, "sequence", measured)
        if sequence is None and token is not None and "mean_length" in log:
            _, length = log.valid("mean_length")
            L = float(np.mean(length[:n])) if len(length) else math.nan
            if math.isfinite(L) and L >= 1:
                sequence = token / math.sqrt(L)
                assumed.append(f"the sequence drift is the token drift over sqrt(L), L = {L:.3g} tokens: the tokens of a "
                               "response drift independently (one drifting as a whole would keep the token drift)")
    if token is None and sequence is None:
        assumed.append("the per-step policy drift is not in this log (it needs stale steps: the window position and "
                       "the log-ratio variance, or a clip fraction at T > 1): no clip-fraction forecast")
    elif token is None:
        assumed.append("the collapse model reads the sequence ratio's drift (this log has no token drift); its limit S "
                       "was set with token drifts from the log-ratio variance, so that forecast is on another scale")
    return Drift(token=token, sequence=sequence, token_clips=_clips(token, hp) if not sequence_run else {},
                 sequence_clips=_clips(sequence, hp) if sequence_run else {})


def _clips(delta: float | None, hp) -> dict[int, float]:
    if delta is None:
        return {}
    return {T: clip_region_share(delta, T, hp.clip_low, hp.clip_high) for T in REFRESH_INTERVALS}


def _from_variance(log: RunLog, n: int, column: str, level: str, measured: list[str]) -> float | None:
    """delta^2 = mean over stale steps of Var_j / j^2 (our trainer's window/position and `column`)."""
    if "window/position" not in log or column not in log:
        return None
    j, var = (np.asarray(log[name][:n], dtype=float) for name in ("window/position", column))
    stale = np.isfinite(j) & np.isfinite(var) & (j > 0)
    if not stale.any():
        return None
    delta = float(math.sqrt(np.mean(var[stale] / j[stale] ** 2)))
    measured.append(f"the {level} log-ratio drift per stale step, {delta:.3g}, from {int(stale.sum())} stale steps")
    return delta


def _from_clip_fraction(log: RunLog, n: int, hp, level: str, measured: list[str]) -> float | None:
    """delta solving clip_region_share(delta) = the pilot's mean clip fraction (bisection in log delta),
    for a pilot at the config's T > 1; None where the fraction is not logged or cannot be inverted."""
    T = hp.refresh_interval
    if T < 2 or "clip_frac" not in log or hp.correction == "none":
        return None
    _, c = log.valid("clip_frac")
    c = float(np.mean(c[:n])) if len(c) else math.nan
    if not (0.0 < c < clip_region_share(1e3, T, hp.clip_low, hp.clip_high)):
        return None
    lo, hi = 1e-8, 1e3
    for _ in range(80):  # 80 halvings of a 1e11 ratio: relative precision ~1e-12
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if clip_region_share(mid, T, hp.clip_low, hp.clip_high) < c else (lo, mid)
    delta = math.sqrt(lo * hi)
    measured.append(f"the {level} log-ratio drift per stale step, {delta:.3g}, inverted from the mean clip fraction "
                    f"{c:.3g} at T = {T} (log-ratios normal, independent of the advantage's sign)")
    return delta
