"""Whether a pilot's reward swings around its trend (a limit cycle), and how surely: the risk `predict`'s verdict reads
(`_pilot_headline`). A periodic component of the residual around the fit (Fisher's g) or an alternation of
consecutive rows (`fit.alternation`), each as strong as `diagnose` needs to report it as dynamical instability
(`fit.oscillation_confidence` >= SWING_REPORTED); a risk from SWING_SURE on, under it a reason to stay unsure."""

from __future__ import annotations

from gspo_dynamics.fit import MIN_CYCLES, PERIODIC_P, alternation, oscillation_confidence, reward_span

SWING_REPORTED = 0.5  # a swing whose `fit.oscillation_confidence` reaches diagnose's reporting level is read ...
SWING_SURE = 0.9  # ... and a risk from this confidence on, the band checked on real runs (`diagnose`'s
# CHECKED_CONFIDENCE, a test holds them equal); under it the verdict is unsure (audit s38 D2: a 0.55 swing on 25-40
# rows of a run that held 300 steps made "at risk" at K = 25, 30, 40 and not at 20, 35)


def reward_swings(f) -> tuple[str, float] | None:
    """Whether the pilot's reward swings around its trend, and how surely (None if not): a periodic component of the
    residual around the fit (Fisher's g, p < PERIODIC_P, at least MIN_CYCLES cycles) or an alternation of consecutive
    rows (`fit.alternation`), each as strong as `diagnose` needs to report it as dynamical instability
    (`fit.oscillation_confidence` >= SWING_REPORTED: significant, and its swing large against the rows' noise and
    against what the reward can span), with the larger confidence of the two. Such a limit cycle keeps the reward's
    level and so passes the fall test, but is not a safe margin; a significant wiggle small against the noise is a
    detail of the curve, not a risk."""
    if f.fit is None or f.pilot is None:
        return None
    span = reward_span(f.pilot[1], None)
    pg = f.fit.selection.get("periodogram", {})
    p, cycles = pg.get("p_value", 1.0), pg.get("cycles", 0.0)
    found = []
    if p < PERIODIC_P and cycles >= MIN_CYCLES:
        c = _strength(p, pg.get("amplitude"), pg.get("noise_std"), span, cycles)
        if c >= SWING_REPORTED:
            found.append((f"the pilot's reward swings with a period of {pg['period']:.0f} steps around its trend (a "
                          "limit cycle)", c))
    alt = alternation(f.pilot[0], f.pilot[1], f.fit)
    if alt is not None and alt["rho1"] < 0 and alt["p_value"] < PERIODIC_P:
        c = _strength(alt["p_value"], alt["amplitude"], alt["noise_std"], span, alt["cycles"])
        if c >= SWING_REPORTED:
            found.append(("the pilot's reward alternates from one logged row to the next (a limit cycle of two rows)", c))
    return (found[0][0], max(c for _, c in found)) if found else None


def _strength(p: float, amplitude, noise, span: float, cycles: float) -> float:
    """A periodic item's `oscillation_confidence`, as `diagnose` reports it: its swing (2 x amplitude) against the
    noise and the span (0 where either is unknown)."""
    if amplitude is None or noise is None or not noise > 0 or not span > 0:
        return 0.0
    swing = 2.0 * amplitude
    return oscillation_confidence(p, swing / noise, swing / span, cycles)


def weak_swing(f) -> str | None:
    """A swing diagnose would report (`reward_swings`) but under SWING_SURE, said as what keeps the verdict unsure (a
    swing the exact theory caps, `Implications.theory_calls_stable`, is none); None otherwise."""
    swing = reward_swings(f)
    if swing is None or swing[1] >= SWING_SURE or (f.implications is not None and f.implications.theory_calls_stable()):
        return None
    return (f"{swing[0]}, at confidence {swing[1]:.2f}, under the {SWING_SURE:g} a risk needs (a swing this weak came "
            "and went with the pilot's length on a real run that held)")
