"""Whether a significant rise is settled: still rising (a climb that goes on) or saturated (a plateau seen held), each
only where nothing it needs is lacking (`saturation_shown`, `rise_shown`); else unsure between the two, with a longer
run as what tells (`sure_or_unsure`). The trend reading itself is `_trend`'s."""

from __future__ import annotations

import math

import numpy as np

from gspo_dynamics.diagnose._trend_advice import MEANINGFUL_CHANGE
from gspo_dynamics.diagnose._trend_stats import (
    MIN_WINDOW,
    R2_NOISE,
    STILL_RISING_FRACTION,
    TAIL_FRACTION,
    Z_STILL_RISING,
)
from gspo_dynamics.diagnose._verdict import REPORT_CONFIDENCE, Verdict, evidence, failing_evidence

UNSURE_RISE = ("still_rising", "healthy_saturation")  # a significant rise whose end the evidence does not settle
UNSURE_CONFIDENCE = 0.5  # an unsure answer's confidence: a coin toss between its modes (a cause at it ranks first)
BOUND_SLACK = 0.05  # plateau within the observed rewards: at most this share of their range outside them
SLOPE_NOISE = 1.0  # a late climb within one standard error of 0 is the noise's, whatever share of the rise it is
# the z of a steady climb over the last TAIL_FRACTION where it is SLOPE_NOISE over the late half: a slope's standard
# error grows as n^(-3/2) (sum (t - t_bar)^2 ~ n^3 / 12 for evenly spaced steps)
TAIL_NOISE = SLOPE_NOISE * (TAIL_FRACTION / 0.5) ** 1.5


def saturation_shown(late: dict, tail: dict, fit, imp, steps) -> list[str]:
    """What a significant rise lacks to be called saturated ([] when saturation is established):

        the late half's climb consistent with 0: no significant, meaningful climb (slope z < Z_STILL_RISING, or a
        climb below MEANINGFUL_CHANGE per-sample stds: `late_climb`); no climb of STILL_RISING_FRACTION of the rise
        or more at least SLOPE_NOISE standard errors above 0 (below that the share is the noise's) over the late
        half while its last TAIL_FRACTION (`tail`, the window whose climb is the remaining rise at the still-rising
        boundary) still climbs (slope z >= TAIL_NOISE, what the same steady climb shows over the shorter window): a
        late half's climb that stops in the tail was the knee of the rise; nor a late half falling (`late_climb`'s
        "falling": a plateau is two-sided);
        for a fit that decides anything (R^2 >= R2_NOISE), its plateau inside the observed rewards (at most
        BOUND_SLACK of their range outside them) and reached within the log, at least MIN_WINDOW of the rows (`steps`)
        at or after the step it comes within 5% of it (a level seen held, not reached at the last row). A noisy
        fit's plateau decides nothing: whether its late half could have seen the rise go on sets the saturation
        reading's confidence (`_plateau_power.plateau_resolution`), which must clear REPORT_CONFIDENCE too
        (`sure_or_unsure`)."""
    lacks = []
    if late["falling"]:  # a significant, meaningful fall of a share of the run is no plateau either
        lacks.append(f"the late half falls (slope z {late['slope_z']:.1f} <= {-Z_STILL_RISING:g})")
    elif late["slope_z"] >= Z_STILL_RISING and late["meaningful"]:  # a significant but negligible creep is a stop
        lacks.append(f"the late half still climbs (slope z {late['slope_z']:.1f} >= {Z_STILL_RISING:g})")
    elif late["share"] >= STILL_RISING_FRACTION and late["slope_z"] >= SLOPE_NOISE and tail["slope_z"] >= TAIL_NOISE:
        lacks.append(f"the late half climbed {late['share']:.0%} of the rise (>= {STILL_RISING_FRACTION:.0%}) at slope z "
                     f"{late['slope_z']:.2f} (>= {SLOPE_NOISE:g}, < {Z_STILL_RISING:g}) and its last {TAIL_FRACTION:.0%} "
                     f"still climbs (slope z {tail['slope_z']:.2f} >= {TAIL_NOISE:.2f})")  # 1.984 is no "2.0 (>= 2)"
    if fit.r_squared >= R2_NOISE and fit.plateau_extrapolation > BOUND_SLACK:
        shown = identified_plateau(fit, imp)
        lacks.append(f"the fitted plateau{'' if shown is None else f' {shown:.4g}'} lies outside the rewards seen")
    if fit.r_squared >= R2_NOISE and (imp is None or not imp.plateau_reached):
        lacks.append("the fit does not reach its plateau within the log")
    elif fit.r_squared >= R2_NOISE and "time_to_plateau" not in imp.unidentified:
        t_p = imp.time_to_plateau.value
        held = int(np.sum(np.asarray(steps, dtype=float) >= t_p))
        if held < MIN_WINDOW:  # a plateau is a level seen held, on at least as many rows as give it an error
            lacks.append(f"the fit reaches its plateau only at step {t_p:.0f}, {held} row(s) before the log ends "
                         f"(< {MIN_WINDOW}): not seen held")
    return lacks


def rise_shown(late: dict, fit) -> list[str]:
    """What a still-rising reading lacks where the late half's slope decides it (a noisy fit, R^2 < R2_NOISE): a
    meaningful climb, MEANINGFUL_CHANGE per-sample stds (`late_climb`'s "meaningful"), the mirror of saturation's
    "a significant but negligible creep is a stop" ([] where the climb is meaningful or the fit decides); and a
    late half too short for its own slope, where neither it nor the noisy fit reads the rise's course."""
    if fit.r_squared >= R2_NOISE:
        return []
    if not math.isfinite(late["slope_z"]):
        return [f"the fit is noisy (R^2 {_below(fit.r_squared, R2_NOISE)} < {R2_NOISE:g}) and the last half too short "
                "for a slope of its own"]
    if late["meaningful"]:
        return []
    return [f"the late half's climb, {late['climb']:.3g}, is below a meaningful change ({MEANINGFUL_CHANGE:g} "
            "per-sample reward stds)"]


def sure_or_unsure(verdict: Verdict, late: dict, tail: dict, fit, imp, steps) -> Verdict:
    """A significant rise (z >= Z_TREND) is still rising or saturated, never noise-dominated or stalled: still rising
    where that reading clears REPORT_CONFIDENCE and `rise_shown` finds nothing lacking, saturated where it does and
    `saturation_shown` finds nothing lacking, each with none of its own evidence failing (a rise read off a fit whose
    remaining rise is under STILL_RISING_FRACTION of the total is no sure rise);
    otherwise unsure between the two (UNSURE_RISE) at UNSURE_CONFIDENCE, its failing evidence kept as caveats and its
    advice only what would tell: a longer run."""
    lacks = saturation_shown(late, tail, fit, imp, steps) if verdict.mode == "healthy_saturation" else rise_shown(late, fit)
    if verdict.confidence >= REPORT_CONFIDENCE and not lacks:
        lacks = failing_evidence(verdict)
        if not lacks:
            return verdict
    ev = [dict(e, caveat=True) if e.get("holds") is False else e for e in verdict.evidence]
    why = "; ".join(lacks) or _why_unsettled(verdict, late)
    ev.append(evidence("the rise is significant; still rising or saturated not established", why, None))
    tell = (f"train longer and diagnose again ({why}): a late climb under {Z_STILL_RISING:g} s.e. and "
            f"{STILL_RISING_FRACTION:.0%} of the rise says saturated, above both still rising")
    return Verdict(verdict.mode, min(verdict.confidence, UNSURE_CONFIDENCE), ev, [tell], unsure=UNSURE_RISE)


def _why_unsettled(verdict: Verdict, late: dict) -> str:
    """Why a reading below REPORT_CONFIDENCE is not settled, from its own evidence: a late half too noisy to have
    seen the rise go on (`_plateau_power.plateau_resolution`), else the late half's climb as measured."""
    res = next((e for e in verdict.evidence if e["signal"].startswith("late-half climb detectable")), None)
    if res is not None and res["value"] >= 1.0:
        return (f"the last half could not have seen the rise go on: a climb it detects with 80% power, "
                f"{res['detectable_climb']:.3g}, exceeds the rise {res['rise']:.3g}")
    if math.isfinite(late["slope_z"]) and math.isfinite(late["share"]):
        return f"the last half climbed {late['share']:.0%} of the rise, slope z {late['slope_z']:.1f}"
    return "too short for a late-half slope"


def identified_plateau(fit, imp) -> float | None:
    """R_inf where the data identify it (`fit._identified`), else None: evidence gives no number the data do not."""
    return None if imp is not None and "plateau" in imp.unidentified else fit.params["r_inf"]


def _below(value: float, threshold: float) -> str:
    """`value` (< threshold) with as few decimals (2 to 6) as show it below the threshold: 0.496 is not "0.50 < 0.5"."""
    return next((f"{value:.{d}f}" for d in range(2, 7) if float(f"{value:.{d}f}") < threshold), f"{value:.6g}")
