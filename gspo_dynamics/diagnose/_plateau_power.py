"""Whether a noisy run's late half could have seen its rise go on: the power check behind a saturation reading
(`_trend._saturation_verdict`)."""

from __future__ import annotations

import math

from gspo_dynamics.diagnose._trend_stats import Z_POWER, Z_TREND, late_slope
from gspo_dynamics.diagnose._verdict import confidence, evidence


def plateau_resolution(steps, reward, fit, imp, shown: float, ev: list) -> float:
    """Whether a noisy run's late half could have seen the rise go on: saturation claims the rise stopped,
    which the data support only where a continued climb would have shown. By the power calculation of
    `trend_verdict`, applied to the late half's least-squares climb (`late_slope`),

        MDC_late = (Z_TREND + Z_POWER) se(slope) (t_last - t_first),     ratio = MDC_late / rise,

    rise = max(|r_inf - r0|, |late - early|): the fitted rise, or the rise the quarter windows show where a noisy fit
    (R^2 < R2_NOISE, its r0 and r_inf loose) puts it lower; only the windows' where the fit does not identify R_inf
    or R_0 (`TrajectoryFit.unidentified_params`: an absurd fitted rise would pass any late half). The late half
    resolves the stop when it could see a climb as large as the whole rise (ratio < 1): the confidence is
    L(log(1 / ratio) / 0.5) (0.5 at ratio 1, 0.88 at 1/2.7). Beyond it the noise hides whether the reward saturates
    or keeps rising. Appends the evidence; 1.0 if unmeasurable, 0.5 (cannot tell) where no rise is identified."""
    slope, slope_z, used = late_slope(steps, reward)
    fitted = not {"r_inf", "r0"} & set(fit.unidentified_params(plateau_why=imp.unidentified.get("plateau")
                                                                if imp is not None else None))
    rise = max(abs(fit.params["r_inf"] - fit.params["r0"]) if fitted else 0.0, abs(shown))
    if not used or not slope_z or not math.isfinite(slope_z):
        return 1.0
    if not rise > 0:
        if not fitted:
            ev.append(evidence("whether the late half could have seen the rise go on", "cannot tell: the fit does "
                               "not identify the rise and the quarter windows show none", used))
            return 0.5
        return 1.0
    mdc = (Z_TREND + Z_POWER) * abs(slope / slope_z) * (used[1] - used[0])
    ratio = mdc / rise
    ev.append(evidence("late-half climb detectable with 80% power / rise", ratio, used, threshold=1.0, side="<",
                       detectable_climb=mdc, rise=rise))
    return confidence(-math.log(ratio), 0.5) if ratio > 0 else 1.0
