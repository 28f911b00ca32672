"""Dynamical instability from the reward curve: ringing, a periodic component, an alternation of
rows (a limit cycle of period two rows), a collapse after a peak, a fall from the start, and, with
hyperparameters, the refresh interval against its exact discrete critical value.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from gspo_dynamics._keys import ADAM_BETA1_KEYS, GRAD_CLIP_KEYS, LR_KEYS, REFRESH_INTERVAL_KEYS
from gspo_dynamics.diagnose._fall import COLLAPSE_FRACTION, fall_advice, fall_evidence
from gspo_dynamics.diagnose._trend_stats import R2_NOISE
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
TWICE_T_TOLERANCE = 0.25  # a period within 25% of 2T is the refresh's limit cycle (the policy flips every refresh)
MIN_NON_FINITE = 2  # a reward or loss NaN / inf in its last 2 logged values or more: diverged (one may be a bad batch)
THEORY_STABLE_CAP = 0.45  # with hparams the exact theory says stable: data evidence stays below REPORT_CONFIDENCE


def instability_verdict(steps, reward, fit, imp, hparams, trend, notes: list[str] | None = None,
                        spread: float | None = None, rows: bool = False) -> Verdict | None:
    """Oscillation or divergence of the reward, or the refresh interval past its exact critical value.

    Without hyperparameters the verdict rests on the data: ringing of the fit, a periodic component
    (`oscillation_confidence`), a fall after a peak or from the start (`_fall.fall_evidence`: divergence, e.g. the
    late mean below the early one by Z_TREND standard errors and by COLLAPSE_FRACTION of the early level). With them
    the oscillation items must agree with the exact discrete theory (`theory.linear`): T >= critical T is
    instability (combined with the data's evidence by noisy-OR); below it, where the exact regime is overdamped (no
    ringing possible), the data's oscillation evidence is capped at THEORY_STABLE_CAP (not reported) and a note says
    theory and data disagree; where it is oscillatory the data's ringing is consistent with it and kept, with a
    note. A fall is not capped: the linear theory bounds ringing, and a collapse is the nonlinear regime it does not
    model. A fall the run did not climb back from leads the advice (`_fall.fall_advice`: the checkpoint before it).
    The continuous damping margin is a rule of thumb and is only reported, never a reason on its own.
    """
    notes = notes if notes is not None else []
    ev, confs, advice = [], [], []
    _oscillation_evidence(steps, reward, fit, hparams, reward_span(reward, imp.reward_range if imp else None), ev,
                          confs)
    fall_ev, fall_confs, fell = fall_evidence(steps, reward, trend, spread)
    ev += fall_ev
    theory_conf = _theory_line(imp, ev, confs, advice, notes)  # a stable T caps the oscillation items, not a fall
    confs += fall_confs
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
    if fell is not None and max(fall_confs) >= max(confs):  # the verdict rests on a fall the run did not climb back from
        advice.insert(0, fall_advice(fell, hparams, rows))  # rows: the steps are row numbers
    if hparams is not None:
        mu = hparams.momentum
        momentum = ("the momentum" if isinstance(hparams.optimizer, SGD)
                    else f"Adam's beta1 ({ADAM_BETA1_KEYS})")
        advice.append(f"lower the learning rate (now {hparams.lr:g}; halving it halves the stiffness and the lag "
                      f"erosion of the damping) or {momentum} (now {mu:g})")
    else:
        advice.append(f"lower the learning rate ({LR_KEYS}) or Adam's beta1 ({ADAM_BETA1_KEYS}), or refresh the "
                      f"sampling policy more often, a smaller T ({REFRESH_INTERVAL_KEYS}); --config with the run's "
                      "config gives the critical refresh interval")
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
        if abs(item["period_over_2T"] - 1.0) <= TWICE_T_TOLERANCE and hparams.refresh_interval == 1:
            return (f"the reward flips every step (period {period:.3g} steps) at T = 1, one update per rollout: each "
                    f"step overshoots, no stale update (T cannot go lower); halve the learning rate (now {hparams.lr:g})")
        if abs(item["period_over_2T"] - 1.0) <= TWICE_T_TOLERANCE:
            return (f"the reward flips every refresh (period {period:.3g} steps = 2T, T = {hparams.refresh_interval}): "
                    f"the stale-update limit cycle; lower T ({REFRESH_INTERVAL_KEYS}) or the learning rate (now "
                    f"{hparams.lr:g}) by half")
        return None
    return (f"the reward cycles with a period of {period:.3g} steps: if that is twice your refresh interval T "
            f"({REFRESH_INTERVAL_KEYS}), it is the stale-update limit cycle: halve T or the learning rate")


def _theory_line(imp, ev: list, confs: list, advice: list, notes: list[str]) -> float | None:
    """The exact discrete theory's line (with hyperparameters): the confidence that T is past the largest
    stable T, or None. Where the theory calls T stable it caps the data's oscillation confidences (`confs`, the
    falls' are not passed) in place (overdamped regime: THEORY_STABLE_CAP) or keeps them with a note (oscillatory
    regime); at a plateau on the reward's bound it is not applied."""
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
