"""The pilot-calibrated forecast's answer first (`predict._headline` states the verdict's rules): the verdict at the
config's settings, the changes the pilot's evidence gives values for, and the forecast in the reward's units with
only what the pilot identifies (a plateau it does not reach is said not identified, with the rise it saw in noise
units, never a number)."""

from __future__ import annotations

import math

import numpy as np

from gspo_dynamics.fit import HELD_STEPS, MIN_CYCLES, PERIODIC_P, alternation, oscillation_confidence, reward_span
from gspo_dynamics.predict._end_reward import end_window, held_reward, reward_reach
from gspo_dynamics.predict._fall_chance import config_fall_chance
from gspo_dynamics.predict._headline import (
    AT_RISK_CHANCE, AT_RISK_SHARE, MARGIN_FACTOR, Change, Headline, lr_change, refresh_change,
)

RECOVERED_SHARE = 0.5  # a pilot whose held level is back above half its fall's depth dipped: at risk, not unsafe
SWING_REPORTED = 0.5  # a swing whose `fit.oscillation_confidence` reaches diagnose's reporting level is a risk


def plateau_identified(f) -> bool:
    """Whether the pilot identifies the plateau: a fit that does not extrapolate it, whose standard error is below
    its size, inside the reward's reach (`predict._end_reward.reward_reach`), reached at a finite step."""
    imp = f.implications
    plateau, t = imp.plateau, imp.time_to_plateau
    if imp.plateau_extrapolated or plateau.stderr is None or not plateau.stderr < abs(plateau.value):
        return False
    if f.pilot is None or not math.isfinite(t.value):
        return False
    lo, hi = reward_reach(f.pilot[1], f.reward_range)
    return lo <= plateau.value <= hi


def rise_in_noise(f) -> float | None:
    """The pilot's rise in noise units: |mean of its last HELD_STEPS rewards - mean of its first| / the fit's residual
    std; None where it has no noise to measure in."""
    if f.pilot is None or f.fit is None or not f.fit.residual_std > 0:
        return None
    r = f.pilot[1]
    return float(abs(held_reward(r) - np.mean(r[:HELD_STEPS])) / f.fit.residual_std)


def reward_swings(f) -> str | None:
    """Whether the pilot's reward swings around its trend, said as a risk (None if not): a periodic component of the
    residual around the fit (Fisher's g, p < PERIODIC_P, at least MIN_CYCLES cycles) or an alternation of consecutive
    rows (`fit.alternation`), each as strong as `diagnose` needs to report it as dynamical instability
    (`fit.oscillation_confidence` >= SWING_REPORTED: significant, and its swing large against the rows' noise and
    against what the reward can span). Such a limit cycle keeps the reward's level and so passes the fall test, but
    is not a safe margin; a significant wiggle small against the noise is a detail of the curve, not a risk."""
    if f.fit is None or f.pilot is None:
        return None
    span = reward_span(f.pilot[1], None)
    pg = f.fit.selection.get("periodogram", {})
    p, cycles = pg.get("p_value", 1.0), pg.get("cycles", 0.0)
    if p < PERIODIC_P and cycles >= MIN_CYCLES and _strength(p, pg.get("amplitude"), pg.get("noise_std"), span, cycles):
        return f"the pilot's reward swings with a period of {pg['period']:.0f} steps around its trend (a limit cycle)"
    alt = alternation(f.pilot[0], f.pilot[1], f.fit)
    if alt is not None and alt["rho1"] < 0 and alt["p_value"] < PERIODIC_P and \
            _strength(alt["p_value"], alt["amplitude"], alt["noise_std"], span, alt["cycles"]):
        return "the pilot's reward alternates from one logged row to the next (a limit cycle of two rows)"
    return None


def _strength(p: float, amplitude, noise, span: float, cycles: float) -> bool:
    """Whether a periodic item is one `diagnose` reports: `oscillation_confidence` of its swing (2 x amplitude)
    against the noise and the span >= SWING_REPORTED."""
    if amplitude is None or noise is None or not noise > 0 or not span > 0:
        return False
    swing = 2.0 * amplitude
    return oscillation_confidence(p, swing / noise, swing / span, cycles) >= SWING_REPORTED


def _verdict(f, chance: dict | None) -> tuple[str, str, list[Change]]:
    setup, hp = f.config.setup, f.config.setup.hparams
    lr, T, n = hp.lr, hp.refresh_interval, f.pilot_steps
    linear = f.max_safe_lr if f.max_safe_lr is not None and not f.lost else None
    limit = f.collapse_limit if f.displacement is not None else None
    recovered = f.lost and f.held is not None and f.held >= f.fall.after + RECOVERED_SHARE * (f.fall.best - f.fall.after)
    if recovered:
        fall = f.fall
        return "at risk", (f"the pilot dipped from {fall.best:.3g} (steps {fall.best_steps[0]}-{fall.best_steps[1]}) to "
                           f"{fall.after:.3g} (steps {fall.after_steps[0]}-{fall.after_steps[1]}) and came back to "
                           f"{f.held:.3g} by its end: a dip, not yet a collapse; watch the reward"), []
    if f.lost:
        fall = f.fall
        candidates = [v for v in (f.collapse_max_lr, None if f.max_safe_lr is None else f.max_safe_lr / MARGIN_FACTOR)
                      if v is not None and v < lr]
        change = (lr_change(setup, min(candidates), "the pilot's evidence puts the stable lr here") if candidates
                  else lr_change(setup, lr / 2, "a halving to re-test with a pilot: this pilot does not identify the "
                                  "stable lr"))
        return "unsafe", (f"the pilot lost reward it had: its mean fell from {fall.best:.3g} (steps {fall.best_steps[0]}-"
                          f"{fall.best_steps[1]}) to {fall.after:.3g} (steps {fall.after_steps[0]}-{fall.after_steps[1]})"), [change]
    changes: list[Change] = []
    if limit is not None and (f.overshoot or f.displacement > limit):
        if f.collapse_max_lr is not None and f.collapse_max_lr < lr:
            changes.append(lr_change(setup, f.collapse_max_lr, "the policy's move between refreshes within the limit"))
        if f.collapse_max_refresh and f.collapse_max_refresh < T:
            change = refresh_change(setup, f.collapse_max_refresh, "the move within the limit at this lr")
            changes += [change] if change else []
        why = ("the pilot's entropy rose on its first updates: its step overshoots" if f.overshoot else
               f"the policy moves D = {f.displacement:.3g} between sampler refreshes, past the collapse limit {limit:.3g}")
        return "unsafe", why, changes
    if linear is not None and lr > linear:
        return "unsafe", (f"{_key(setup)} {lr:g} is above the largest stable {linear:.3g} at T = {T} (the pilot's curve "
                          "read by the linear model)"), [lr_change(setup, linear / MARGIN_FACTOR,
                                                                   f"a {MARGIN_FACTOR:g}x margin below the bound")]
    # a swing is a risk unless the exact theory calls T stable and overdamped, where diagnose caps such data evidence
    # below its reporting level too (`Implications.theory_calls_stable`)
    swing = reward_swings(f)
    risks = [swing] if swing and not (f.implications is not None and f.implications.theory_calls_stable()) else []
    if limit is not None and f.displacement > AT_RISK_SHARE * limit:
        risks.append(f"the policy's move between refreshes is {f.displacement / limit:.0%} of the collapse limit")
    if chance is not None and chance["chance"] >= AT_RISK_CHANCE:
        risks.append(f"a run falls with chance {chance['chance']:.0%} at these settings")
    if linear is not None and lr > linear / MARGIN_FACTOR:
        risks.append(f"{_key(setup)} is within {MARGIN_FACTOR:g}x of the largest stable {linear:.3g}")
        changes.append(lr_change(setup, linear / MARGIN_FACTOR, f"a {MARGIN_FACTOR:g}x margin below the bound"))
    if f.kl_pull:
        risks.append("the KL term pulls a solved policy back between refreshes (beta > 0, most groups flat)")
    if risks:
        return "at risk", "; ".join(risks), changes
    margins = [f"the pilot kept its reward over {n} points"]
    if linear is not None:
        margins.append(f"{_key(setup)} can rise {linear / lr:.2g}x before the linear bound")
    if limit is not None:
        margins.append(f"the move between refreshes is {f.displacement / limit:.0%} of the collapse limit")
    if linear is None and limit is None:
        margins.append("its margin to instability is not identified (the rise has not bent, and the collapse rule has "
                       "nothing to read: below)")
    return "safe", "; ".join(margins), changes


def _key(setup) -> str:
    return setup.keys.lr if getattr(setup, "keys", None) else "lr"


def _forecast(f, chance: dict | None) -> dict:
    """The end reward with its interval, the plateau and its time (or why not identified), the collapse risk."""
    setup = f.config.setup
    out: dict = {"text": []}
    keys = getattr(setup, "keys", None)
    if f.end is not None:
        first = int(end_window(f.end.run_steps)[0])
        length = f"{keys.run_length} {f.end.run_steps}" if keys else f"{f.end.run_steps} steps"
        out["end_reward"] = {"value": f.end.value, "interval": None if f.end.interval is None else list(f.end.interval),
                             "interval_is_reach": f.end.spans_reach, "steps": [first, f.end.run_steps]}
        out["text"].append(f"reward over steps {first}-{f.end.run_steps} (the run's last sixth, {length}): "
                           f"{f.end.value:.3g}{f.end.band_text()}")
    else:
        out["end_reward"] = None
        out["text"].append("reward at the run's end: not forecast (its length is unknown: "
                           f"{keys.run_length if keys else 'steps'} in the config, or --run-steps)")
    imp = f.implications
    if plateau_identified(f):
        out["plateau"] = {"value": imp.plateau.value, "step": imp.time_to_plateau.value}
        out["text"].append(f"plateau {imp.plateau.value:.3g}, within 5% of it from step {imp.time_to_plateau.value:.3g}")
    else:
        rise = rise_in_noise(f)
        out["plateau"] = None
        out["text"].append("plateau and its time: not identified (" + (
            "" if rise is None else f"the pilot's rise is {rise:.2g} noise std and ") + "its fit does not bend within "
            "the pilot; a longer pilot tells)")
    if chance is not None:
        out["collapse_chance"] = chance["chance"]
        out["text"].append(f"collapse risk at these settings: {chance['chance']:.0%} that a run falls")
    else:
        out["collapse_chance"] = None
        why = ("at T = 1 the sampler is refreshed every step, so no drift between samplers exists to measure"
               if setup.hparams.refresh_interval == 1 else
               "the pilot logs no token entropy or no per-step drift: clip ratio, log-ratio spread")
        out["text"].append(f"collapse risk: not assessed ({why})")
    return out


def pilot_headline(f, zero_std=None) -> Headline:
    """The verdict, the changes and the forecast of a `predict.PilotForecast` (`predict._headline` for the rules);
    `zero_std`: the pass rates' mixture (`predict.zero_std_answer`), whose G change and share are added."""
    chance = config_fall_chance(f)  # a scan over lr and T: read once for the verdict and the forecast
    verdict, reason, changes = _verdict(f, chance)
    settled = ()
    if zero_std is not None:
        changes = changes + zero_std.changes(f.config.setup)
        settled = tuple(zero_std.settled_lines())
    return Headline(verdict, reason, tuple(changes), forecast=_forecast(f, chance), settled=settled)
