"""The changes of the reward that the early-vs-late Welch test of `_trend_stats.change` misses: a rise completed
within the early window (`fitted_rise_test`, read by the closed-form fit) and a rise that starts late
(`late_rise_test`, read by the late half's slope). `_trend.trend_verdict` reads either where the windows see none."""

from __future__ import annotations

import math

from gspo_dynamics.diagnose._trend_advice import MEANINGFUL_CHANGE
from gspo_dynamics.diagnose._trend_stats import R2_NOISE, Z_TREND, late_climb


def late_rise_test(steps, reward, spread: float | None) -> tuple[float, str] | None:
    """A significant, meaningful climb of the late half (`late_climb` at slope z >= Z_TREND): a rise the quarter
    windows miss (a run that starts learning late). Returns (slope z, which test), else None."""
    late = late_climb(steps, reward, spread)
    if late["climbing"] and late["slope_z"] >= Z_TREND:
        return late["slope_z"], "late-half slope of the reward, a rise the quarter windows miss (z)"
    return None


def fitted_rise_test(steps, reward, fit, spread: float | None = None) -> tuple[float, str] | None:
    """The early-vs-late Welch test misses a rise completed within the early window (a fast relaxation
    to a plateau). The closed-form fit sees it: the fitted rise is a change of the reward when

        z = (r_inf - r0) / sqrt(se(r_inf)^2 + se(r0)^2) >= Z_TREND          (fit without oscillation, with
                                                                          R^2 >= R2_NOISE or se(tau) < tau)

    and, where the per-sample spread is known, the rise is meaningful (MEANINGFUL_CHANGE x spread): a
    precisely logged flat run has significant but negligible wiggles. (A whole-run slope test was tried
    as well and dropped: it read the slow real drift under heavy noise of the noise-dominated recipes
    of two families as a rise.) Returns (z, which test), else None."""
    if fit is None or fit.oscillation:  # a ringing fit's r0 is not a start level
        return None
    # the relaxation must be resolved (tau at least one standard error from 0), or r0 is one noisy point
    if not (fit.r_squared >= R2_NOISE or fit.stderr.get("tau", math.inf) < fit.params.get("tau", 0.0)):
        return None
    se = math.hypot(fit.stderr.get("r_inf", math.inf), fit.stderr.get("r0", math.inf))
    rise = fit.params["r_inf"] - fit.params["r0"]
    meaningful = spread is None or not spread > 0 or abs(rise) >= MEANINGFUL_CHANGE * spread
    if se > 0 and math.isfinite(se) and abs(rise) / se >= Z_TREND and meaningful:
        return rise / se, "fitted rise r_inf - r0 / its standard error (z)"
    return None
