"""Checks on the reward curve itself: the trend modes (instability: `_instability`; whether a significant rise is
settled: `_settled`), on the statistics of `_trend_stats` (early and late windows, Welch's z, the late half's slope
and climb)."""

from __future__ import annotations

import math

from gspo_dynamics._keys import EVAL_KEYS, GROUP_SIZE_KEYS
from gspo_dynamics.diagnose._change_tests import fitted_rise_test, late_rise_test, shift_rise_test
from gspo_dynamics.diagnose._plateau_power import plateau_resolution
from gspo_dynamics.diagnose._settled import UNSURE_CONFIDENCE, identified_plateau, sure_or_unsure
from gspo_dynamics.diagnose._trend_advice import MAX_SAMPLE_FACTOR, MEANINGFUL_CHANGE, STALLED_ADVICE, noise_advice
from gspo_dynamics.diagnose._trend_advice import r2_factor as _r2_factor
from gspo_dynamics.diagnose._trend_stats import (
    R2_NOISE,
    STILL_RISING_FRACTION,
    TAIL_FRACTION,
    ar1_inflation,
    Z_POWER,
    Z_STILL_RISING,
    Z_TREND,
    late_climb,
    recent_level,
    stall_probability,
)
from gspo_dynamics.diagnose._verdict import REPORT_CONFIDENCE, Verdict, confidence, evidence, reward_reach
from gspo_dynamics.fit import EXTRAPOLATION_LIMIT, row_scatter


def _missed_change(steps, reward, fit, z: float, spread: float | None) -> tuple[float, str, dict] | None:
    """A change the quarter windows miss (|z| < Z_TREND): a rise the closed-form fit sees, else, on a rising side
    (0 <= z: a late rise after a fall from the start is a recovery, not a rise), a late rise or a level shift up
    (`_change_tests`); None where none is found or the windows already see one."""
    if abs(z) >= Z_TREND:
        return None
    found = fitted_rise_test(steps, reward, fit, spread)
    if found is None and z >= 0:
        found = late_rise_test(steps, reward, spread) or shift_rise_test(steps, reward, spread)
    return found


def _remaining(fit, imp) -> tuple[float, float, float]:
    """(rem_dir, rem_z, frac): the fit's remaining rise signed along the rise (r_inf - r0), its z, and its share of
    the rise; NaN for an unstable fit, whose r_inf is no plateau (`fit._identified.unidentified`)."""
    if fit.regime == "unstable":
        return math.nan, math.nan, math.nan
    rem, rise = imp.remaining_rise, fit.params["r_inf"] - fit.params["r0"]
    rem_dir = rem.value * math.copysign(1.0, rise) if rise != 0 else 0.0
    rem_z = rem_dir / rem.stderr if rem.stderr else math.inf
    return rem_dir, rem_z, (rem_dir / abs(rise) if rise != 0 else 0.0)


def trend_verdict(steps, reward, fit, imp, trend: dict, scale: tuple[float, str] | None,
                  group_size: int | None = None) -> Verdict:
    """Exactly one of healthy_saturation, still_rising, stalled, noise_dominated.

    No significant change (|z| < Z_TREND) is "stalled" only when the data could have seen one, by a
    power calculation: the Welch test detects a change D with power 80% at its level Z_TREND when

        D >= (Z_TREND + Z_POWER) se(late - early)        (the minimum detectable change, MDC),

    and a run that learns changes its reward by at least MEANINGFUL_CHANGE x the per-sample reward
    spread `scale` (within-group reward std, or sqrt(p(1-p)) for a success rate). MDC <= that: the
    flat reward is a stall; MDC above it: the run is too noisy to tell ("noise_dominated"). Without a
    scale, the MDC is set against the rows' own scatter (`_unspread_verdict`).
    A significant change (|z| >= Z_TREND) with a low R^2 (< R2_NOISE) is read as healthy or still rising
    with the noise as a caveat (`_shape_confidence`): the run demonstrably learns. Only when that reading
    itself falls below REPORT_CONFIDENCE (the plateau an extrapolation, the remaining rise unresolved) is
    it noise-dominated: the noise then hides what the run is doing.
    """
    z = trend["z"]
    span = (trend["steps"][0], trend["steps"][1])
    other = _missed_change(steps, reward, fit, z, scale[0] if scale else None)
    if other is None and not abs(z) >= Z_TREND:
        return _flat_verdict(z, trend, span, scale, group_size, ar1_inflation(reward), row_scatter(reward))
    if other is not None:  # a change the quarter windows miss (a rise done within the first quarter, a slow ramp)
        z, ev_trend = other[0], _change_evidence(other[1], other[0], span, welch_z=trend["z"], early=trend["early"],
                                                 late=trend["late"], **other[2])
    else:
        ev_trend = _change_evidence("reward change late - early (Welch z)", z, span, early=trend["early"],
                                    late=trend["late"])
    if fit is None:
        return Verdict("still_rising" if z > 0 else "stalled", 0.5, [ev_trend], [])
    ev_r2 = evidence("R^2 of the closed-form fit", fit.r_squared, span, threshold=R2_NOISE, side=">=",
                     caveat=fit.r_squared < R2_NOISE)
    # |z| >= Z_TREND: the run demonstrably changed, so the noise does not hide whether it learns. A low
    # R^2 then only says the per-step reward is noisy around the trend: the shape (plateau, time to it) is
    # uncertain, which caps the confidence at the trend's own significance and adds the noise advice.
    noisy = fit.r_squared < R2_NOISE
    rem_dir, rem_z, frac = _remaining(fit, imp)
    # Still rising: the late half still climbs (its slope z >= Z_STILL_RISING); where the late half is too short
    # for a slope, or the fit is good (R^2 >= R2_NOISE) and puts the plateau well above the last value (> 10% of
    # the rise, > 2 s.e.), the fit decides (with a slope, also a plateau not yet reached with a positive remaining
    # rise). A noisy fit (R^2 < R2_NOISE) decides nothing against the data's own slope.
    big = frac > STILL_RISING_FRACTION and rem_z > Z_STILL_RISING
    late = late_climb(steps, reward, scale[0] if scale else None)
    slope_z, climbing = late["slope_z"], late["rising"]
    # "still rising" is a rise still ahead: a plateau at or below the recent rewards (`recent_level`) is none, whatever
    # the fitted curve's end says (a fit bent by a fall and recovery, or an unstable fit's equilibrium the data left)
    recent = recent_level(steps, reward)
    ahead = fit.params["r_inf"] > recent[0]
    by_fit = ((big or (not imp.plateau_reached and rem_dir > 0)) and (not math.isfinite(slope_z) or (big and not noisy))
              and ahead)
    rising = climbing or by_fit
    # a plateau is two-sided: neither a rise left (frac > 10%) nor the reward past the plateau by as much (an
    # overshoot, frac < -10%: the fit's reward returns to it), each decisive at 2 s.e. (`big`, `past`)
    past = frac < -STILL_RISING_FRACTION and rem_z < -Z_STILL_RISING
    ev = [ev_trend, ev_r2, evidence("remaining rise / total rise", frac, (fit.t_start, fit.t_end),
                                    threshold=STILL_RISING_FRACTION, side=">" if rising else "|<=",
                                    caveat=(rising and not by_fit) or (not rising and (noisy or not (big or past))),
                                    remaining=None if "remaining_rise" in imp.unidentified else imp.remaining_rise.value,
                                    z=rem_z, plateau=identified_plateau(fit, imp))]
    if math.isfinite(slope_z):
        # the slope decides where it is significant and the climb (or fall) a share of the rise; a significant creep
        # (or sag) below that share is a caveat on a stopped rise
        ev.append(evidence("late-half slope of the reward (z)", slope_z, late["steps"], threshold=Z_STILL_RISING,
                           side=">=" if rising else "|<", caveat=(rising and not climbing) or (
                               not rising and abs(slope_z) >= Z_STILL_RISING and not late["falling"]),
                           climb=late["climb"], climb_share_of_rise=late["share"], meaningful=late["meaningful"]))
    if rising:
        bounds = reward_reach(reward, imp.reward_range if imp is not None else None)
        verdict = _rising_verdict(fit, imp, z, noisy, ev, frac, rem_z, big, slope_z, group_size, bounds, ahead, recent)
    else:
        verdict = _saturation_verdict(steps, reward, fit, imp, z, noisy, ev, frac, rem_z, group_size, trend["diff"],
                                      slope_z if late["falling"] else math.nan)
        creep_advice(verdict, late, slope_z)
    if z >= Z_TREND:  # a significant rise: never noise-dominated; rising or saturated only where that is established
        tail = late_climb(steps, reward, scale[0] if scale else None, TAIL_FRACTION)
        return sure_or_unsure(verdict, late, tail, fit, imp, steps)
    return _unless_unreadable(verdict, fit, noisy, group_size)


UNSURE_FLAT = ("stalled", "noise_dominated")  # no change, and no telling whether the data could have seen one
RISE_OR_STALL = ("still_rising", "stalled")  # a rise short of significance that the data favour over no change
RISE_ODDS = 0.5  # P(no change) below this: the data favour a meaningful rise over none (`_rise_or_stall`)
FLAT_SURE = 0.6  # a stalled or noise-dominated reading below this confidence is unsure between the two
# without a per-sample spread, a change this many times the rows' own scatter is one a plot shows at a glance: a
# flat log that could not have detected it is too short or noisy to call a stall (`_unspread_verdict`). Set by that
# argument, not fitted (on our grids or real logs); measured after: 2 of the 7 wild dev logs with no spread turn
# unsure (9 and 34 rows), the 150-9751-row ones stay stalled (paper_repro/wild_logs.py, 2026-12-02)
VISIBLE_CHANGE = 1.0
# a flat reward's change estimate within this many standard errors of 0 gives no hint of a change the noise hides:
# noise-dominated (blind to a small change) and stalled (no change) are then told apart by nothing in the reward
NOISE_HINT_Z = 1.0


def _change_evidence(signal: str, z: float, span: tuple, **extra) -> dict:
    """A significant change of the reward: z at or past +-Z_TREND on its own side."""
    return evidence(signal, z, span, threshold=Z_TREND if z >= 0 else -Z_TREND, side=">=" if z >= 0 else "<=", **extra)


def _flat_verdict(z: float, trend: dict, span: tuple, scale: tuple[float, str] | None,
                  group_size: int | None, inflation: float, scatter: float) -> Verdict:
    """No significant change (|z| < Z_TREND): stalled or noise-dominated; stalled by z alone without a spread.

    Two readings, each with its confidence, the larger given (unsure between them below FLAT_SURE, named by the
    power calculation's reading):
      stalled, where the data could have seen a meaningful change (the power calculation of `trend_verdict`:
        resolution = MDC / spread <= MEANINGFUL_CHANGE) or where they favour no change over one
        (`_trend_stats.stall_probability`, the posterior share of "no change" against a change of MEANINGFUL_CHANGE
        spreads, its standard error widened for correlated rows by `ar1_inflation`: a slow swing is not the
        precise zero that favours a stall): min(L(Z_TREND - |z|), max(power, P(no change)));
      noise-dominated, as sure as the data are blind to a meaningful change (resolution above MEANINGFUL_CHANGE)
        and as the change's estimate is off 0 (NOISE_HINT_Z): a flat reward at 0 with no power is either.
    Neither where the data could have seen a meaningful change and favour a rise over none: `_rise_or_stall`.
    Without a spread, `_unspread_verdict` (`scatter`: the rows' own, `fit.row_scatter`).
    """
    ev_trend = evidence("reward change late - early (Welch |z|)", abs(z), span, threshold=Z_TREND, side="<", z=z,
                        early=trend["early"], late=trend["late"])
    se = trend["se"]
    resolution = (Z_TREND + Z_POWER) * se / scale[0] if scale is not None and scale[0] > 0 else math.nan
    if not resolution >= 0 or not math.isfinite(resolution):  # no spread or no standard error
        return _unspread_verdict(z, se * inflation, scatter, ev_trend, span)
    noisy = resolution > MEANINGFUL_CHANGE
    ev_res = evidence("change detectable with 80% power / per-sample reward spread", resolution, span,
                      threshold=MEANINGFUL_CHANGE, side=">" if noisy else "<=", spread=scale[0], spread_from=scale[1])
    p_stall = stall_probability(trend["diff"], se * inflation, MEANINGFUL_CHANGE * scale[0])
    p_stall = p_stall if math.isfinite(p_stall) else 1.0  # se 0: any change would have shown
    powered = 1.0 if resolution == 0 else confidence(math.log(MEANINGFUL_CHANGE / resolution), 0.5)
    stalled = min(confidence(Z_TREND - abs(z), 1.0), max(powered, p_stall))
    blind = 0.0 if resolution == 0 else min(confidence(math.log(resolution / MEANINGFUL_CHANGE), 0.5),
                                            confidence(abs(z) - NOISE_HINT_Z, 0.5))
    ev_bf = evidence("no change against a meaningful one: posterior share of no change", p_stall, span,
                     threshold=FLAT_SURE, side=">=" if stalled >= FLAT_SURE else "<",
                     meaningful_change=MEANINGFUL_CHANGE * scale[0])
    if not noisy and trend["diff"] > 0 and p_stall < RISE_ODDS:
        return _rise_or_stall(trend, scale[0], p_stall, [ev_trend, ev_res])
    # the surer reading; where neither is sure (below FLAT_SURE), the power calculation's names the unsure answer
    if stalled >= FLAT_SURE and stalled >= blind or blind < FLAT_SURE and not noisy:
        verdict = Verdict("stalled", stalled, [ev_trend, dict(ev_res, caveat=noisy), ev_bf], STALLED_ADVICE)
    else:
        verdict = Verdict("noise_dominated", blind, [ev_trend, ev_res, ev_bf],
                          noise_advice(group_size, resolution / MEANINGFUL_CHANGE))
    if verdict.confidence >= FLAT_SURE:
        return verdict
    # near the power threshold (or a change near Z_TREND): stalled and noise-dominated are not told apart
    # the detectable change scales as 1/sqrt(samples per row): (resolution / MEANINGFUL_CHANGE)^2 the samples reach it
    factor = (resolution / MEANINGFUL_CHANGE) ** 2
    more = (f" ({factor:.2g}x the samples per step bring it to {MEANINGFUL_CHANGE:g})"
            if noisy and factor <= MAX_SAMPLE_FACTOR else "")
    samples = (f"G {group_size} -> {math.ceil(group_size * factor)} ({GROUP_SIZE_KEYS}), or {factor:.2g}x the prompts "
               "per step" if noisy and group_size and math.isfinite(factor)
               else f"G ({GROUP_SIZE_KEYS}), or the prompts per step")
    lever = (f"more samples per step ({samples}) or a longer run tell" if not (noisy and factor > MAX_SAMPLE_FACTOR)
             else f"an eval set of fixed prompts ({EVAL_KEYS}) or a longer run tells (more samples per step would need "
                  f"{factor:.2g}x, more than the {MAX_SAMPLE_FACTOR:g}x advised)")
    tell = (f"{lever}: a change of {resolution:.2g} reward stds is detectable here with 80% power{more}; at or below "
            f"{MEANINGFUL_CHANGE:g} a flat reward is a stall, above it the noise hides the change")
    ev = [dict(e, caveat=True) if e.get("holds") is False else e for e in verdict.evidence]
    return Verdict(verdict.mode, min(verdict.confidence, UNSURE_CONFIDENCE), ev, [tell], unsure=UNSURE_FLAT)


def _unspread_verdict(z: float, se: float, scatter: float, ev_trend: dict, span: tuple) -> Verdict:
    """A flat reward (|z| < Z_TREND) with no per-sample spread: no meaningful change to aim the power calculation
    at, so it aims at a visible one, VISIBLE_CHANGE times the rows' own scatter sigma_row (`fit.row_scatter`):

        visible = (Z_TREND + Z_POWER) se / sigma_row,   se the Welch standard error widened for correlated rows.

    visible <= VISIBLE_CHANGE (or se = 0: any change would have shown): a change a plot of the rows shows at a
    glance would have been detected, so no change reads "stalled", as sure as z is short of Z_TREND; above it the
    log is too short or too noisy to have seen even that (a 9-row log needs a change of ~3 row scatters): unsure
    between noise-dominated and stalled, at UNSURE_CONFIDENCE, saying what would tell."""
    visible = (Z_TREND + Z_POWER) * se / scatter if scatter > 0 else (0.0 if se == 0 else math.inf)
    visible = visible if visible >= 0 else math.inf  # an overflowing scatter measures nothing
    if visible <= VISIBLE_CHANGE:
        return Verdict("stalled", confidence(Z_TREND - abs(z), 1.0), [ev_trend], STALLED_ADVICE)
    ev = evidence("change detectable with 80% power / the rows' own scatter (no per-sample spread logged)", visible,
                  span, threshold=VISIBLE_CHANGE, side=">", scatter=scatter)
    tell = (f"a longer log, or one that logs the per-group reward std (reward_std), tells: a change of {visible:.2g} "
            "times the rows' own scatter is the least this log detects with 80% power, so even a change a plot shows "
            "at a glance could hide here")
    return Verdict("noise_dominated", UNSURE_CONFIDENCE, [dict(ev_trend, caveat=True), ev], [tell],
                   unsure=("noise_dominated", "stalled"))


def _rise_or_stall(trend: dict, spread: float, p_stall: float, ev: list) -> Verdict:
    """A rise short of significance (0 < z < Z_TREND) where the data could have seen a meaningful change (resolution
    <= MEANINGFUL_CHANGE: noise-dominated is not a reading) and favour a meaningful rise over none: a stall claims no
    change, so neither it nor noise is the answer alone. By `_trend_stats.stall_probability` (log BF = u (u - 2 z) / 2,
    u = MEANINGFUL_CHANGE spread / se), whatever the standard error,

        P(no change | d) < RISE_ODDS = 1/2   <=>   d > MEANINGFUL_CHANGE x spread / 2:

    the observed rise lies nearer a meaningful rise than none. The answer is "unsure: still rising or stalled"
    (RISE_OR_STALL, the rise first: the likelier reading) at UNSURE_CONFIDENCE, advising what tells: a longer run."""
    d, z = trend["diff"], trend["z"]
    ev = ev + [evidence("no change against a meaningful rise: posterior share of no change", p_stall,
                        (trend["steps"][0], trend["steps"][1]), threshold=RISE_ODDS, side="<",
                        rise_in_spreads=d / spread, meaningful_change=MEANINGFUL_CHANGE * spread)]
    tell = (f"train longer and diagnose again: the reward rose {d:.3g} ({d / spread:.2g} per-sample reward stds, "
            f"Welch z {z:.2f} < {Z_TREND:g}), nearer a meaningful rise ({MEANINGFUL_CHANGE:g} stds) than none; a rise "
            f"past z {Z_TREND:g} says still rising, a flat continuation a stall")
    return Verdict("still_rising", UNSURE_CONFIDENCE, ev, [tell], unsure=RISE_OR_STALL)


def _rising_verdict(fit, imp, z: float, noisy: bool, ev: list, frac: float, rem_z: float, big: bool, slope_z: float,
                    group_size, bounds: tuple[float, float] | None, ahead: bool = True,
                    recent: tuple[float, int] | None = None) -> Verdict:
    """still_rising: confidence from the late half's slope z (`late_slope`) and, for a good fit, the remaining
    rise (its share of the total rise and its z), then lowered for an uncertain shape (`_shape_confidence`). A
    noisy fit (R^2 < R2_NOISE) gives no plateau or time in the advice, nor a plateau past what the reward can reach
    (`bounds`, `_verdict.reward_reach`): there the advice says the curve does not level off below the bound. Nor does a fitted plateau the recent
    rewards already reached (not `ahead` of `recent_level`, e.g. a fit bent by a fall and recovery): the advice
    never calls a plateau above the last values that lies below them; the late half's slope alone then decides."""
    conf = confidence(slope_z - Z_STILL_RISING, 1.0) if math.isfinite(slope_z) else 0.0
    if ahead and (not noisy or not math.isfinite(slope_z)):
        fitted = max(confidence(frac - STILL_RISING_FRACTION, 0.05), confidence(rem_z, 1.0)) if big else confidence(rem_z, 1.0)
        conf = max(conf, fitted)
    r_inf = fit.params["r_inf"]  # rising: only the upper bound is one it rises toward
    top = bounds is not None and (r_inf > bounds[1] or (imp.interior_plateau is False and r_inf >= sum(bounds) / 2))
    t_p = imp.time_to_plateau.value
    if (noisy or not ahead) and not math.isfinite(slope_z):  # too few rows for the late half's own slope
        advice = [f"the reward rose from the log's early rows to its late ones (Welch z {z:.1f}); too few rows to read "
                  "whether its last half still climbs; train longer"]
    elif noisy or not ahead:
        advice = [f"the reward still climbs over the last half of the log (slope z {slope_z:.1f}); train longer"]
    elif top:  # at or past the top of the range: no plateau to count steps to
        advice = [f"the reward still rises at the log's end, and its fitted curve does not level off below the bound "
                  f"{bounds[1]:g}: where it levels off is not identified; train longer and diagnose again"]
    elif "plateau" in imp.unidentified:
        advice = [f"the reward is still rising, toward a plateau the data do not identify ({imp.unidentified['plateau']}); "
                  "train longer"]
    else:
        # a plateau more than one observed range beyond the data gives no usable time to reach it
        timed = "time_to_plateau" not in imp.unidentified and fit.plateau_extrapolation <= 1.0
        more = ("" if not timed else f": about {t_p - fit.t_end:.0f} more steps to come within 5% of it (step "
                f"{t_p:.0f})" if t_p > fit.t_end else f": within 5% of it since step {t_p:.0f}, a slow climb since")
        level = "" if recent is None else f" (mean {recent[0]:.4g} over the last {recent[1]} rows)"
        longer = "train longer" if recent is None or t_p > fit.t_end or not timed else \
            f"train longer if {r_inf - recent[0]:.2g} more is worth it"
        advice = [f"the fitted plateau {r_inf:.4g} is above the recent rewards{level}{more}; {longer}"]
    # a late half climbing at Z_TREND is still rising however far ahead (or unresolved) the plateau is
    climbing = math.isfinite(slope_z) and slope_z >= Z_TREND
    conf = _shape_confidence(conf, fit, imp, z, noisy, ev, advice, group_size, saturating=False, climbing=climbing)
    return Verdict("still_rising", conf, ev, advice)


def creep_advice(verdict: Verdict, late: dict, slope_z: float) -> None:
    """A saturation whose late half still climbs significantly by less than a meaningful change (`_settled`: "a
    significant but negligible creep is a stop") and that advises nothing else: the creep stated as its advice, so
    whether it is worth the compute is the user's call, not a bare "stop"."""
    if not (slope_z >= Z_STILL_RISING and late["climb"] > 0) or verdict.advice:
        return
    first, last = late["steps"]
    verdict.advice.append(f"nothing to fix: the rise is done, but the reward still creeps up ({late['climb']:+.3g} over "
                          f"steps {first:.0f}-{last:.0f}, slope z {slope_z:.1f}, under a meaningful change of "
                          f"{MEANINGFUL_CHANGE:g} per-sample stds): stop unless that much more is worth the compute; "
                          "harder prompts go further")


def _saturation_verdict(steps, reward, fit, imp, z: float, noisy: bool, ev: list, frac: float, rem_z: float,
                        group_size, shown: float, fall_z: float = math.nan) -> Verdict:
    """healthy_saturation: confidence from how little of the rise remains, on either side of the plateau (|frac|,
    |rem_z|: a reward past its plateau is no more at it than one short of it), and R^2 when the fit is not
    noisy; when it is, from whether the late half resolves the stop: `_plateau_power.plateau_resolution`), capped
    where the late half falls (`fall_z`, its slope z where `_trend_stats.late_climb` finds it falling, else NaN) at
    L(fall_z + Z_STILL_RISING) (0.5 at the slope's significance) and where the exact discrete theory calls the
    hyperparameters unstable, then lowered for an uncertain shape (`_shape_confidence`)."""
    if not noisy:  # a good fit: how little of the rise it leaves, or how insignificant what it leaves is
        conf = max(confidence(STILL_RISING_FRACTION - abs(frac), 0.05), confidence(Z_STILL_RISING - abs(rem_z), 1.0))
        conf = min(conf, confidence(fit.r_squared - R2_NOISE, 0.1))
    else:  # a noisy fit's remaining rise decides nothing: whether the late half could have seen a climb does
        conf = plateau_resolution(steps, reward, fit, imp, shown, ev)
    if math.isfinite(fall_z):  # a late half falling significantly, meaningfully, by a share of the run: no plateau
        conf = min(conf, confidence(fall_z + Z_STILL_RISING, 1.0))
    advice = []
    if imp.damping_margin is not None:
        ev.append(evidence("damping margin c/(1-mu) (continuous rule of thumb)", imp.damping_margin.value, None,
                           threshold=0.0, side=">", caveat=True, exact_regime=imp.exact_regime))
        if imp.exact_regime == "unstable":  # the exact discrete theory, not the rule of thumb, decides
            conf = min(conf, 0.3)
    conf = _shape_confidence(conf, fit, imp, z, noisy, ev, advice, group_size, saturating=True)
    return Verdict("healthy_saturation", conf, ev, advice)


def _unless_unreadable(verdict: Verdict, fit, noisy: bool, group_size) -> Verdict:
    """A noisy run (R^2 < R2_NOISE) whose trend reading falls below REPORT_CONFIDENCE (e.g. its plateau is
    an extrapolation) is noise-dominated after all: it changed, but the noise hides what it is doing.

    Its confidence, L((R2_NOISE - R^2) / 0.1), is capped by the evidence left for the reading it replaces:
    a still-rising reading dropped for an unresolved plateau keeps the late half's slope, and the noise
    hides the run only as far as that slope does not show the climb, 1 - L(slope_z - Z_STILL_RISING)
    (0.5 at Z_STILL_RISING: two readings that close are a coin toss, not a confident noise verdict)."""
    if not noisy or verdict.confidence >= REPORT_CONFIDENCE:
        return verdict
    # the replaced reading's items stay as context: what held for it, or failed against it, says nothing of the noise
    context = [{k: v for k, v in e.items() if k not in ("side", "holds", "caveat")} for e in verdict.evidence]
    ev = context + [evidence(f"confidence of the {verdict.mode.replace('_', ' ')} reading", verdict.confidence, None,
                             threshold=REPORT_CONFIDENCE, side="<")]
    conf = confidence(R2_NOISE - fit.r_squared, 0.1)
    slope_z = next((e["value"] for e in verdict.evidence if e["signal"] == "late-half slope of the reward (z)"), math.nan)
    if math.isfinite(slope_z):
        conf = min(conf, 1.0 - confidence(slope_z - Z_STILL_RISING, 1.0))
    return Verdict("noise_dominated", conf, ev, noise_advice(group_size, _r2_factor(fit.r_squared)))


def _shape_confidence(conf: float, fit, imp, z: float, noisy: bool, ev: list, advice: list, group_size,
                      saturating: bool, climbing: bool = False) -> float:
    """Lower a healthy/still-rising confidence for what makes the fitted shape uncertain:

      noisy (R^2 < R2_NOISE, significant change):  min(conf, L((|z| - Z_TREND) / 1))
      plateau extrapolated (x > EXTRAPOLATION_LIMIT):  min(conf, L((1 - x) / 0.25))
                                                        (0.5 when the plateau lies one observed range outside)
    and say why in the evidence and advice. The extrapolation caps a saturation reading (a plateau
    outside the data contradicts "saturated") and any noisy reading, but not a well-fitted rise
    (R^2 >= R2_NOISE): its plateau far ahead is what "still rising" means (an early, near-linear rise).
    """
    if noisy:  # said by the R^2 item (a caveat); a noisy fit feeds no advice
        conf = min(conf, confidence(abs(z) - Z_TREND, 1.0))
    if imp is not None and imp.plateau_extrapolated:
        x = fit.plateau_extrapolation
        plateau = identified_plateau(fit, imp)  # an unidentified plateau's distance is no measurement: shown as n/a
        ev.append(evidence("plateau outside the observed rewards / their range", x if plateau is not None else None,
                           (fit.t_start, fit.t_end), threshold=EXTRAPOLATION_LIMIT, side="<=", caveat=True,
                           plateau=plateau, observed=list(fit.r_range)))
        if (saturating or noisy) and not climbing:  # a rise whose plateau lies far ahead is still rising
            conf = min(conf, confidence(1.0 - x, 0.25))
    return conf
