"""Dynamical instability from the reward curve: ringing, a periodic component, an alternation of
rows (a limit cycle of period two rows), a collapse after a peak, a fall from the start, and, with
hyperparameters, the refresh interval against its exact discrete critical value.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from gspo_dynamics._keys import ADAM_BETA1_KEYS, GRAD_CLIP_KEYS, REFRESH_INTERVAL_KEYS
from gspo_dynamics.diagnose._changepoint import change_point
from gspo_dynamics.diagnose._dip import short_dip
from gspo_dynamics.diagnose._trend_advice import MEANINGFUL_CHANGE
from gspo_dynamics.diagnose._trend_stats import MIN_WINDOW, R2_NOISE, WINDOW_FRACTION, Z_TREND, mean_se, window
from gspo_dynamics.diagnose._verdict import Verdict, confidence, evidence
from gspo_dynamics.fit import (
    MIN_CYCLES,
    PERIODIC_P,
    SWING_NOISE,
    SWING_RANGE,
    alternation,
    oscillation_confidence,
    reward_span,
)
from gspo_dynamics.theory.hyperparams import SGD

ZETA_LOW = 0.3  # damping ratio below this rings visibly (first overshoot exp(-pi zeta/sqrt(1-zeta^2)) > 37%)
MARGIN_LOW = 0.25  # T within 25% of the exact critical T: stable, but noted as close
COLLAPSE_FRACTION = 0.3  # late mean below the peak by 30% of the rise (peak - early): a collapse
TWICE_T_TOLERANCE = 0.25  # a period within 25% of 2T is the refresh's limit cycle (the policy flips every refresh)
MIN_NON_FINITE = 2  # a reward or loss NaN / inf in its last 2 logged values or more: diverged (one may be a bad batch)
THEORY_STABLE_CAP = 0.45  # with hparams the exact theory says stable: data evidence stays below REPORT_CONFIDENCE


def instability_verdict(steps, reward, fit, imp, hparams, trend, notes: list[str] | None = None,
                        spread: float | None = None) -> Verdict | None:
    """Oscillation or divergence of the reward, or the refresh interval past its exact critical value.

    Without hyperparameters the verdict rests on the data: ringing of the fit, a periodic component
    (`oscillation_confidence`), a collapse after a peak, a significant fall from the start
    (divergence: late mean below the early one by Z_TREND standard errors and by COLLAPSE_FRACTION of
    the early level). With them it must agree with the exact
    discrete theory (`theory.linear`): T >= critical T is instability (combined with the data's evidence
    by noisy-OR); below it, where the exact regime is overdamped (no ringing possible), the data's
    evidence is capped at THEORY_STABLE_CAP (not reported) and a note says theory and data disagree;
    where it is oscillatory the data's ringing is consistent with it and kept, with a note. The continuous
    damping margin is a rule of thumb and is only reported, never a reason on its own.
    """
    notes = notes if notes is not None else []
    ev, confs, advice = [], [], []
    _oscillation_evidence(steps, reward, fit, hparams, reward_span(reward, imp.reward_range if imp else None), ev,
                          confs)
    _divergence_evidence(steps, reward, trend, spread, ev, confs)
    theory_conf = _theory_line(imp, ev, confs, advice, notes)
    if not confs and theory_conf is None:
        return None
    # The data's items (ringing, periodic residual, collapse) see one oscillation: their max counts. The
    # theory (T vs critical T) is an independent line: combined by noisy-OR, 1 - (1 - c_data)(1 - c_theory).
    conf = max(confs, default=0.0)
    if theory_conf is not None:
        conf = 1.0 - (1.0 - conf) * (1.0 - theory_conf)
    cycle = limit_cycle_advice(ev, hparams)
    if cycle:
        advice.insert(0, cycle)
    if hparams is not None:
        mu = hparams.momentum
        momentum = ("the momentum" if isinstance(hparams.optimizer, SGD)
                    else f"Adam's beta1 ({ADAM_BETA1_KEYS})")
        advice.append(f"lower the learning rate (now {hparams.lr:g}; halving it halves the stiffness and the lag "
                      f"erosion of the damping) or {momentum} (now {mu:g})")
    else:
        advice.append("lower the learning rate or the momentum (Adam beta1), or refresh the sampling policy more "
                      "often; give the hyperparameters (--lr, -T, ...) for the critical refresh interval")
    return Verdict("dynamical_instability", conf, ev, advice)


def non_finite_verdict(diverged, last_step: int, hparams, found: Verdict | None) -> Verdict | None:
    """A reward or loss that ends in NaN / inf (`RunLog.diverged`, at least MIN_NON_FINITE values) is a numerical
    divergence: dynamical instability at confidence 1 whatever the theory says (the exact model has no overflow),
    with the data's other items kept (`found`, the curve's verdict); `found` itself (None or the curve's verdict)
    where neither ends so."""
    ends = {name: v for name, v in diverged.items() if v[1] >= MIN_NON_FINITE}
    if not ends:
        return found
    ev = [evidence(f"logged {name} values NaN or infinite to the log's end", count, (step, last_step),
                   threshold=MIN_NON_FINITE, side=">=") for name, (step, count) in ends.items()]
    first = min(step for step, _ in ends.values())
    lr = f" (now {hparams.lr:g})" if hparams is not None else ""
    advice = [f"the run diverged numerically at step {first}: restart from a checkpoint before it with a lower learning "
              f"rate{lr}, and check the gradient-norm clip ({GRAD_CLIP_KEYS}) and fp16/bf16 overflow"]
    if found is None:
        return Verdict("dynamical_instability", 1.0, ev, advice)
    return Verdict("dynamical_instability", 1.0, ev + found.evidence, advice + found.advice)


def _oscillation_evidence(steps, reward, fit, hparams, reach: float, ev: list, confs: list) -> None:
    """The data's oscillation items, appended to `ev` with their confidences to `confs`: ringing of a good fit
    (R^2 >= R2_NOISE; damping ratio below ZETA_LOW by 2 standard errors), a periodic residual (Fisher's g, at
    least MIN_CYCLES cycles), an alternation of consecutive rows (`alternation`); each periodic item scored by
    `oscillation_confidence` against the rows' noise and the reward's reach, its period set beside 2T."""
    span = (fit.t_start, fit.t_end)
    pg = fit.selection["periodogram"]  # Fisher g test around the trend-only (exponential) fit
    p, period, cycles = pg["p_value"], pg["period"], pg.get("cycles", 0.0)
    swing, noise = 2.0 * pg.get("amplitude", math.nan), pg.get("noise_std", math.nan)
    strength = oscillation_confidence(p, _ratio(swing, noise), _ratio(swing, reach), cycles)
    zeta, se = fit.damping_ratio, fit.damping_ratio_stderr
    if fit.oscillation and zeta < ZETA_LOW and fit.r_squared >= R2_NOISE:  # a noisy fit's roots decide nothing
        ev.append(evidence("damping ratio of the fit (complex roots)", zeta, span, threshold=ZETA_LOW, side="<", stderr=se,
                           periods_seen=fit.selection.get("periods_seen")))
        confs.append(min(confidence((ZETA_LOW - zeta) / max(se, 1e-12) - 2.0, 1.0), strength))
    if cycles >= MIN_CYCLES and p < PERIODIC_P:
        ev.append(evidence("periodic component around the trend (Fisher g test p-value)", p, span, threshold=PERIODIC_P,
                           side="<", **_swing_extra(period, swing, noise, reach, cycles, hparams)))
        confs.append(strength)
    alt = alternation(steps, reward, fit)
    if alt is not None and alt["rho1"] < 0 and alt["p_value"] < PERIODIC_P:
        row = float(np.median(np.diff(steps))) if steps.size > 1 else 1.0
        swing, noise = 2.0 * alt["amplitude"], alt["noise_std"]
        ev.append(evidence("alternation of consecutive rows (lag-1 autocorrelation z; a cycle of period 2 rows)",
                           alt["z"], span, threshold=NormalDist().inv_cdf(PERIODIC_P), side="<",
                           rho1=alt["rho1"], **_swing_extra(2.0 * row, swing, noise, reach, alt["cycles"], hparams)))
        confs.append(oscillation_confidence(alt["p_value"], _ratio(swing, noise), _ratio(swing, reach), alt["cycles"]))


def _ratio(a: float, b: float) -> float:
    return a / b if b > 0 else (math.inf if a > 0 else math.nan)


def _swing_extra(period: float, swing: float, noise: float, reach: float, cycles: float, hparams) -> dict:
    """The periodic item's numbers: period, swing against the noise and the reach, cycles, and with hyperparameters
    the period over 2T (the refresh's limit cycle flips the policy every refresh: period 2T)."""
    extra = {"period_steps": period, "swing": swing, "swing_to_noise": _ratio(swing, noise),
             "swing_to_reach": _ratio(swing, reach), "cycles": cycles}
    if hparams is not None:
        extra["period_over_2T"] = period / (2.0 * hparams.refresh_interval)
    return extra


def limit_cycle_advice(ev: list, hparams) -> str | None:
    """What to change for a periodic reward: the refresh interval, where the period is (or may be) 2T."""
    item = next((e for e in ev if "period_steps" in e), None)
    if item is None:
        return None
    period = item["period_steps"]
    if hparams is not None:
        if abs(item["period_over_2T"] - 1.0) <= TWICE_T_TOLERANCE:
            return (f"the reward flips every refresh (period {period:.3g} steps = 2T, T = {hparams.refresh_interval}): "
                    f"the stale-update limit cycle; lower T ({REFRESH_INTERVAL_KEYS}) or the learning rate (now "
                    f"{hparams.lr:g}) by half")
        return None
    return (f"the reward cycles with a period of {period:.3g} steps: if that is twice your refresh interval T "
            f"({REFRESH_INTERVAL_KEYS}), it is the stale-update limit cycle: halve T or the learning rate")


def _divergence_evidence(steps, reward, trend: dict, spread: float | None, ev: list, confs: list) -> None:
    """The data's divergence items: a collapse after a real peak (`_collapse`), else a fall the run climbed back from
    (`_trough`, or a dip of a few rows, `_dip.short_dip`), and a fall from the start
    (the late mean below the early one by Z_TREND standard errors and by COLLAPSE_FRACTION of |early|)."""
    keep = np.isfinite(reward)
    s, r = steps[keep].astype(float), reward[keep]
    peak, collapse, z_weakest = _collapse(s, r, trend, spread)
    if collapse is not None and collapse > COLLAPSE_FRACTION:
        ev.append(evidence("late drop below the peak / rise to the peak", collapse, (s[0], s[-1]),
                           threshold=COLLAPSE_FRACTION, side=">", peak=peak, late=trend["late"], weakest_z=z_weakest))
        # the size of the drop, and how far the rise and the drop stand out of the noise: the weaker limits
        confs.append(min(confidence(collapse - COLLAPSE_FRACTION, 0.1), confidence(z_weakest - Z_TREND, 1.0)))
    else:
        trough = _trough(s, r, trend, spread) or short_dip(s, r, trend, spread)  # a dip of a few rows: `_dip`
        if trough is not None and trough["drop"] > COLLAPSE_FRACTION:
            # climbed back: the late window above the trough by Z_TREND of its standard errors (a fall within the
            # first quarter, which `_collapse` cannot see for want of a rise before it, may end at its floor)
            back = trend["late"] - trough["trough"] > Z_TREND * mean_se(r[window(r, True)])[1]
            then = "then a recovery" if back else "not climbed back"
            ev.append(evidence(f"sustained drop below the peak, {then} / rise to the peak", trough["drop"],
                               (trough["peak_step"], trough["trough_step"]), threshold=COLLAPSE_FRACTION, side=">",
                               peak=trough["peak"], trough=trough["trough"], weakest_z=trough["z"],
                               broke_at_step=trough["broke_at_step"], break_p_value=trough["break_p_value"]))
            confs.append(min(confidence(trough["drop"] - COLLAPSE_FRACTION, 0.1), confidence(trough["z"] - Z_TREND, 1.0),
                             confidence(-math.log10(max(trough["break_p_value"], 1e-300)) - 2.0, 1.0)))
    if trend and trend["z"] <= -Z_TREND and -trend["diff"] > COLLAPSE_FRACTION * abs(trend["early"]):
        ev.append(evidence("reward fell from the start (Welch z, late - early)", trend["z"], trend["steps"],
                           threshold=-Z_TREND, side="<=", early=trend["early"], late=trend["late"]))
        confs.append(confidence(-trend["z"] - Z_TREND, 1.0))


def _theory_line(imp, ev: list, confs: list, advice: list, notes: list[str]) -> float | None:
    """The exact discrete theory's line (with hyperparameters): the confidence that T is past the largest
    stable T, or None. Where the theory calls T stable it caps the data's confidences in place (overdamped
    regime: THEORY_STABLE_CAP) or keeps them with a note (oscillatory regime); at a plateau on the
    reward's bound it is not applied."""
    if imp is not None and imp.interior_plateau is False:
        if confs:
            notes.append("the refresh-interval theory is not applied: the plateau cannot be told from the reward's "
                         "bound (saturation, no threshold); the instability evidence here is the data's alone")
        return None
    if imp is None or imp.damping_margin is None:
        return None
    T, safe = imp.refresh_interval, imp.max_safe_refresh_interval
    margin = imp.damping_margin.value
    if safe is not None and T > safe:
        ev.append(evidence("refresh interval T vs the largest stable T (exact discrete theory)", T, None,
                           threshold=safe, side=">", critical_exact=imp.critical_refresh_interval,
                           critical_continuous=imp.critical_refresh_interval_continuous,
                           damping_margin_rule_of_thumb=margin))
        advice.append(f"refresh interval {T} is past the critical {safe + 1}: use T <= {safe} ({REFRESH_INTERVAL_KEYS})")
        return confidence(T - safe, 1.0)
    if confs and any(abs(e.get("period_over_2T", math.inf) - 1.0) <= TWICE_T_TOLERANCE for e in ev):
        notes.append(f"the reward cycles with period 2T (T = {T}): the refresh's own limit cycle, although the exact "
                     f"discrete theory at the fitted stiffness calls T stable (critical T "
                     f"{imp.critical_refresh_interval or '> scan'}); the period is measured, the stiffness estimated")
        return None
    if confs and imp.exact_regime == "oscillatory":
        notes.append(f"the exact discrete theory calls T = {T} stable but oscillatory at the fitted stiffness "
                     f"(critical T {imp.critical_refresh_interval or '> scan'}): the ringing in the data is that "
                     "regime's; the threshold estimate rests on the fitted stiffness and the assumed stale fraction")
        return None
    if confs:
        confs[:] = [min(c, THEORY_STABLE_CAP) for c in confs]
        notes.append(f"the reward shows oscillation-like evidence, but the exact discrete theory calls T = {T} "
                     f"{imp.exact_regime or 'stable'} (critical T {imp.critical_refresh_interval or '> scan'}) at "
                     "the fitted stiffness: check the hyperparameters given, or look for a cause outside the "
                     "optimizer (data order, reward schedule)")
    if safe is not None and T > (1.0 - MARGIN_LOW) * safe:
        notes.append(f"refresh interval {T} is within {MARGIN_LOW:.0%} of the exact critical {safe + 1}: "
                     f"stable, but a larger T, lr or momentum would cross it")
    return None


def _collapse(s: np.ndarray, r: np.ndarray, trend: dict, spread: float | None = None) -> tuple[float, float | None, float]:
    """Peak of the running mean (window = the late window's length), the late drop relative to the rise,
    and the smaller of rise / se(early) and drop / se(late) (how far both stand out of the noise).

    The rise to the peak must be significant (Z_TREND standard errors of the early mean) and, with the
    per-sample reward spread known, meaningful (MEANINGFUL_CHANGE x spread, as for a stall): a flat run
    logged with tiny noise has significant but negligible wiggles, which are not a rise and a collapse."""
    w = max(MIN_WINDOW, int(round(WINDOW_FRACTION * r.size)))
    if r.size < 2 * w:
        return math.nan, None, math.nan
    a = float(np.max(np.abs(r))) or 1.0  # scaled: a cumulative sum of huge rewards would overflow
    c = np.concatenate(([0.0], np.cumsum(r / a)))
    run = a * (c[w:] - c[:-w]) / w  # running mean over w rows, O(n)
    peak = float(run.max())
    rise = peak - trend["early"]
    # a collapse needs a real rise first: a peak within Z_TREND standard errors of the early mean is
    # noise, and dividing the drop by such a rise would make any small drop look like a collapse
    _, se_e = mean_se(r[:w])
    if not rise > Z_TREND * max(se_e, 1e-12) or (spread is not None and not rise > MEANINGFUL_CHANGE * spread):
        return peak, None, math.nan
    # only a peak that is significant against the late window's noise counts
    _, se_l = mean_se(r[-w:])
    drop = peak - trend["late"]
    if not drop > Z_TREND * max(se_l, 1e-12):
        return peak, 0.0, math.nan
    return peak, drop / rise, min(rise / max(se_e, 1e-12), drop / max(se_l, 1e-12))



def _trough(s: np.ndarray, r: np.ndarray, trend: dict, spread: float | None = None) -> dict | None:
    """A fall after a peak that the run climbed back from (the late mean recovered, so `_collapse` sees none): the
    deepest drawdown of the running mean (window w, as `_collapse`; the trough window after the peak's), its drop below the peak relative to the
    peak's height over the lower of the early mean and the trough, and how far the drop stands out of the noise
    (z against the peak and trough windows' standard errors, at least Z_TREND; with the per-sample spread known, at
    least MEANINGFUL_CHANGE of it).
    The fall must also be a level break of the rows from the start to the trough's end (`change_point`, CUSUM with
    its Brownian-bridge null, at p < ALPHA), which names the step it broke at."""
    w = max(MIN_WINDOW, int(round(WINDOW_FRACTION * r.size)))
    if r.size < 3 * w:
        return None
    a = float(np.max(np.abs(r))) or 1.0
    c = np.concatenate(([0.0], np.cumsum(r / a)))
    run = a * (c[w:] - c[:-w]) / w  # (n - w + 1,) running mean; run[i] averages r[i:i + w]
    if run.size <= w:
        return None
    # the deepest drawdown: for each trough window j, the highest window ending before it starts (j - w)
    best_before = np.maximum.accumulate(run[:-w])  # (n - 2w + 1,): best_before[j - w] = max run[:j - w + 1]
    i_trough = w + int(np.argmax(best_before - run[w:]))
    i_peak = int(np.argmax(run[:i_trough - w + 1]))
    peak, trough = float(run[i_peak]), float(run[i_trough])
    _, se_t = mean_se(r[i_trough:i_trough + w])
    _, se_p = mean_se(r[i_peak:i_peak + w])
    drop, level = peak - trough, peak - min(trend["early"], trough)
    se = max(math.hypot(se_t, se_p), 1e-12)
    if not level > 0 or not drop > Z_TREND * se or (spread is not None and not drop > MEANINGFUL_CHANGE * spread):
        return None
    cp = change_point(s[i_peak:i_trough + w], r[i_peak:i_trough + w])
    if cp is None or not cp.significant or not cp.after < cp.before:
        return None
    return {"peak": peak, "trough": trough, "drop": drop / level, "peak_step": int(s[i_peak]),
            "trough_step": int(s[min(i_trough + w, s.size) - 1]), "z": drop / se,
            "broke_at_step": cp.step, "break_p_value": cp.p_value}
