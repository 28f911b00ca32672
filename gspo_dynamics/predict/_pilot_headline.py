"""The pilot-calibrated forecast's answer first (`predict._headline` states the verdict's rules): the verdict at the
config's settings, the changes the pilot's evidence gives values for, and the forecast in the reward's units with
only what the pilot identifies (a plateau it does not reach is said not identified, with the rise it saw in noise
units, never a number)."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from gspo_dynamics.fit import HELD_STEPS, Z_FALL
from gspo_dynamics.predict._collapse_risk import KL_PULL_MIN_REFRESH
from gspo_dynamics.predict._config_keys import trainer_keys
from gspo_dynamics.predict._end_reward import end_window, not_identified_text, reward_reach
from gspo_dynamics.predict._fall_chance import LR_REACH, by_construction, config_fall_chance, ran_and_held
from gspo_dynamics.predict._row_fall import RECOVERED_SHARE, level_after, responses_per_row, row_noise_z
from gspo_dynamics.predict._swing import SWING_SURE, reward_swings, weak_swing
from gspo_dynamics.predict._headline import (
    AT_RISK_CHANCE, AT_RISK_SHARE, MARGIN_FACTOR, Change, Headline, clip_answer, length_cap_change, lower_lr, lr_change,
    refresh_changes, with_fixes,
)
from gspo_dynamics.theory import collapse

def plateau_identified(f) -> bool:
    """Whether the pilot identifies the plateau: a fit that does not extrapolate it, whose standard error is below
    its size, inside the reward's reach (`predict._end_reward.reward_reach`), reached at a finite step."""
    imp = f.implications
    plateau, t = imp.plateau, imp.time_to_plateau
    if imp.unidentified.keys() & {"plateau", "time_to_plateau"} or imp.plateau_extrapolated or plateau.stderr is None \
            or not plateau.stderr < abs(plateau.value):
        return False
    if f.pilot is None or not math.isfinite(t.value):
        return False
    lo, hi = reward_reach(f.pilot[1], f.reward_range)
    return lo <= plateau.value <= hi


UNTIMED = "the step it comes by is not identified (its standard error exceeds it)"


def plateau_timed(imp) -> bool:
    """Whether the pilot times its plateau: the step within 5% of it has a standard error below the step itself (a
    step of 4 +- 13 is no reading of when; where no standard error was computed, the step stands)."""
    t = imp.time_to_plateau
    return t.stderr is None or (math.isfinite(t.stderr) and t.stderr <= t.value)


# the columns the collapse rule reads, per framework: the token entropy (T = 1) and the move between refreshes (T > 1)
COLLAPSE_COLUMNS = {"trl": ("entropy (TRL >= 0.20 logs it)", "clip_ratio/* (TRL logs it)"),
                    "verl": ("actor/entropy", "actor/pg_clipfrac and actor/ppo_kl"),
                    "trainer": ("entropy", "the clip ratios"),
                    "openrlhf": ("entropy_loss (OpenRLHF's entropy)", "ppo_clip_ratio")}
ROUNDING_SHARE = 1e-9  # a residual std below this share of the rewards' scale is float rounding, not noise


def rise_in_noise(f) -> float | None:
    """The pilot's rise in noise units (negative: a fall): (mean of its last k rewards - mean of its first k) / the
    fit's residual std, k = min(HELD_STEPS, n // 2) (two windows that do not overlap: an 8-point pilot's first and
    last 8 are one); None
    where it has no noise to measure in (a residual std at rounding level, below ROUNDING_SHARE x the rewards' scale:
    a pilot pinned at one value, whose rise in such units would be ~1e15)."""
    if f.pilot is None or f.fit is None:
        return None
    r = f.pilot[1]
    if not f.fit.residual_std > ROUNDING_SHARE * max(1.0, float(np.max(np.abs(r)))):
        return None
    k = min(HELD_STEPS, r.size // 2)
    return float((np.mean(r[-k:]) - np.mean(r[:k])) / f.fit.residual_std)


class PilotVerdict(NamedTuple):
    """A pilot's verdict, its one reason and its changes; an unsure verdict's `tell` (what would decide it) and a safe
    one's `margin` (how far the lr may rise) apart from the reason, each on its own line (`Headline`)."""

    verdict: str
    reason: str
    changes: list[Change]
    tell: str | None = None
    margin: str | None = None


def _verdict(f, chance: dict | None) -> PilotVerdict:
    setup, hp = f.config.setup, f.config.setup.hparams
    lr, T, n = hp.lr, hp.refresh_interval, f.pilot_steps
    linear = f.max_safe_lr if f.max_safe_lr is not None and not f.lost else None
    limit = f.collapse_limit if f.displacement is not None else None
    if f.invalid:  # a pilot whose updates were not finite, that barely trained, or whose answers were cut: nothing
        cap = [length_cap_change(setup, f.cap_tokens, "twice the pilot's mean completion length: answers end, not cut")
               ] if f.cap_tokens else []
        return PilotVerdict("unsure", f"the pilot is no evidence about this config: {f.invalid}", cap)
    if f.mismatch:  # a pilot run at another lr vouches for its own lr, not the config's
        return PilotVerdict("unsure", "the pilot ran at another learning rate than the config's (below), so it vouches for "
                            "neither", [], tell="the pilot's own config")
    if f.lost:
        return _fall_verdict(f)
    changes: list[Change] = []
    if f.overshoot or (limit is not None and f.displacement > limit):
        if f.collapse_max_lr is not None and f.collapse_max_lr < lr:
            changes.append(lr_change(setup, f.collapse_max_lr, f"the first updates' entropy rise within {collapse.OVERSHOOT_RISE:.0%} "
                                     "(theory.collapse (6))" if f.overshoot else "the policy's move between refreshes within the limit"))
        if f.collapse_max_refresh and f.collapse_max_refresh < T:
            changes += refresh_changes(setup, f.collapse_max_refresh, "the move within the limit at this lr")
        why = ("the pilot's entropy rose on its first updates: its step overshoots" if f.overshoot else
               f"the policy moves D = {f.displacement:.3g} between sampler refreshes, past the collapse limit {limit:.3g}")
        return PilotVerdict("unsafe", why, changes or [lower_lr(setup, lr, (), "the collapse rule says this lr is too large")])
    if linear is not None and lr > linear:
        return PilotVerdict("unsafe", f"{_key(setup)} {lr:g} is above the largest stable {linear:.3g} at T = {T} (the "
                            "pilot's curve read by the linear model)",
                            [lr_change(setup, linear / MARGIN_FACTOR, f"a {MARGIN_FACTOR:g}x margin below the bound")])
    risks = _risks(f, chance, linear, limit, changes)
    if risks:
        return PilotVerdict("at risk", "; ".join(risks),
                            _merged(changes, _key(setup)) or [lower_lr(setup, lr, (), "; ".join(risks))])
    if f.end_drop is not None:  # no row after it: neither a loss nor a kept reward (predict._row_fall (3))
        d = f.end_drop
        return PilotVerdict("unsure", f"the pilot's last reward row, {d.after:.3g} (step {d.after_steps[0]}), fell far below "
                            f"its level before it, {d.best:.3g} (z = {d.z:.2g} in the pilot's own scatter): a drop at its end, "
                            "which no row after it tells from a collapse or one bad row", changes,
                            tell="a few more rows (a longer --pilot-steps)")
    if f.length_fall is not None:  # a shrinking answer vouches for no run (`predict._pilot_validity.length_fall`)
        return PilotVerdict("unsure", f"the pilot kept its reward over {n} points, but {f.length_fall}", changes,
                            tell="the completions of its last steps (near-empty ones: a length penalty, or a reward a short "
                            "answer earns), or a longer pilot")
    weak = weak_swing(f)
    if weak is not None:  # a limit cycle not shown surely enough for a risk: no margin either
        return PilotVerdict("unsure", f"the pilot kept its reward over {n} points, but {weak}", changes,
                            tell="a longer pilot (--pilot-steps)")
    margins = [f"the pilot kept its reward over {n} points"]
    if limit is not None:
        margins.append(f"it ran at this move between refreshes (D = {f.displacement:.3g}) and held" if ran_and_held(f)
                       else f"the move between refreshes is {f.displacement / limit:.0%} of the collapse limit")
    if limit is None and (T > 1 or f.entropy_rise is None):  # the linear bound alone never vouches for a run
        reason, tell = _unread(f, linear)
        return PilotVerdict("unsure", reason, changes, tell=tell)
    if limit is None:
        margins.append("its entropy did not overshoot on the first updates, the one collapse route on-policy "
                       "(theory.collapse (6))")
    margin = _lr_margin(setup, lr, linear) if linear is not None else (
        f"not identified ({f.lr_note})" if limit is None else None)
    return PilotVerdict("safe", "; ".join(margins), changes, margin=margin)


def _unread(f, linear: float | None = None) -> tuple[str, str]:
    """Why a pilot that kept its reward does not decide: the collapse rule, the route real runs fall by, read nothing
    (it needs the entropy's first updates at T = 1, the move between refreshes at T > 1), and the linear model's
    bound on the reward's oscillation (`linear`, where it gives one; else `lr_note` says why not) cannot vouch for
    the run alone; and what would tell, in the framework's own columns (COLLAPSE_COLUMNS)."""
    setup, n, imp = f.config.setup, f.pilot_steps, f.implications
    keys = getattr(setup, "keys", None)
    entropy, drift = COLLAPSE_COLUMNS[keys.framework if keys else "trainer"]
    on_policy = setup.hparams.refresh_interval == 1
    no_entropy = not on_policy and f.drift_per_step is not None and f.entropy is None  # the move read, not its scale
    missing = ("token entropy, the collapse rule's one reading at a refresh interval T = 1" if on_policy else
               "token entropy, by which the collapse limit on its move between sampler refreshes is scaled"
               if no_entropy else "move between sampler refreshes, the collapse rule's reading at a refresh interval T > 1")
    if on_policy and f.rise_unread:  # logged, but too scattered to read the first updates by
        return (f"the pilot kept its reward over {n} points, but nothing in it bounds the lr against collapse: "
                f"{f.rise_unread}", "more completions a step (the entropy's mean over more of them scatters less) or "
                "the step's token entropy over its whole batch")
    longer = ", run until its rise bends" if imp is None or imp.plateau_extrapolated else ""
    oscillation = (f"the linear model gives none: {f.lr_note}" if linear is None else
                   f"the linear model bounds only the reward's oscillation: "
                   f"{_oscillation_bound(setup, setup.hparams.lr, linear)}")
    return (f"the pilot kept its reward over {n} points, but nothing in it bounds the lr against collapse: it logs no "
            f"{missing}, and {oscillation}", f"a pilot that logs {entropy if on_policy or no_entropy else drift}{longer}")


def _fall_verdict(f) -> PilotVerdict:
    """A pilot that lost reward it had (`fit._fall`): at risk where it came back above RECOVERED_SHARE of the fall's
    depth (a dip) or where the fall does not clear the sampling noise of its rows (`fall_in_row_noise`), else unsafe;
    each with the lr the evidence gives (`lower_lr`) and, for the noisy fall, the group size whose rows would tell."""
    setup, fall, lr = f.config.setup, f.fall, f.config.setup.hparams.lr
    bounds = (f.collapse_max_lr, None if f.max_safe_lr is None else f.max_safe_lr / MARGIN_FACTOR)
    where = f"from {fall.best:.3g} ({_span(fall.best_steps)}) to {fall.after:.3g} ({_span(fall.after_steps)})"
    back = came_back(f)
    if back is not None and back >= fall.after + RECOVERED_SHARE * (fall.best - fall.after):
        return PilotVerdict("at risk", f"the pilot dipped {where} and came back to {back:.3g} by its end: a dip, not yet a "
                            "collapse; watch the reward", [lower_lr(setup, lr, bounds, "the pilot dipped at this lr")])
    noise = fall_in_row_noise(f)
    if noise is not None and noise[0] <= Z_FALL:
        z, per_row = noise
        hp, keys = setup.hparams, getattr(setup, "keys", None)
        needed = (Z_FALL / z) ** 2 if z > 0 else None
        changes = []  # no lr cut on a fall that may be noise: what would tell, rows of more completions
        if needed is not None and math.ceil(hp.group_size * needed - 1e-9) > hp.group_size:
            keys = keys or trainer_keys(1)  # the theory's own names: group_size
            factor, edits = keys.more_completions(needed, hp.group_size)
            for key, value in edits:  # a joint edit says so on each of its keys: one alone moves T
                together = [keys.setting(k, v) for k, v in edits if k != key]
                changes.append(Change(key, value, keys.setting(key, value), f"rows of {factor:.3g}x the completions"
                                      + (f", with {' and '.join(together)} (together they keep T)" if together else "")
                                      + f": a fall this size clears their sampling noise (z > {Z_FALL:g})"))
        return PilotVerdict("unsure", f"the pilot's reward fell {where}, but its rows average {per_row:g} completions each: "
                            f"against their sampling noise the fall is z = {z:.2g}, not past {Z_FALL:g}: it may be noise",
                            changes, tell="a longer pilot, or rows of more completions (below)")
    return PilotVerdict("unsafe", f"the pilot lost reward it had: its mean fell {where}",
                        [lower_lr(setup, lr, bounds, "the pilot lost reward at this lr")])


def came_back(f) -> float | None:
    """The level the pilot holds after its fall (`_row_fall.level_after`)."""
    return level_after(f.fall, *f.pilot)


def _span(steps: tuple[int, int]) -> str:
    return f"step {steps[0]}" if steps[0] == steps[1] else f"steps {steps[0]}-{steps[1]}"


def fall_in_row_noise(f) -> tuple[float, float] | None:
    """(z, n): the pilot's fall against the sampling noise of its rows (`_row_fall.row_noise_z`), n completions each
    (N G of the config times its logging_steps)."""
    return row_noise_z(f.fall, f.pilot[0], f.reward_range, getattr(f, "reward_spread", None), responses_per_row(f.config.setup))


def _risks(f, chance: dict | None, linear: float | None, limit: float | None, changes: list[Change]) -> list[str]:
    """The at-risk rules (`predict._headline`), each appending its change to `changes`."""
    setup, hp = f.config.setup, f.config.setup.hparams
    lr, T = hp.lr, hp.refresh_interval
    risks = []
    # a swing is a risk unless the exact theory calls T stable and overdamped, where diagnose caps such data evidence
    # below its reporting level too (`Implications.theory_calls_stable`)
    swing = reward_swings(f)
    if swing and swing[1] >= SWING_SURE and not (f.implications is not None and f.implications.theory_calls_stable()):
        risks.append(swing[0])
        changes += refresh_changes(setup, 1, "on-policy: no stale lag erodes the damping (docs/theory.md 2)") if T > 1 \
            else [lower_lr(setup, lr, (), "the pilot's reward swings at this lr")]
    if limit is not None and f.displacement > AT_RISK_SHARE * limit and not ran_and_held(f):
        risks.append(f"the policy's move between refreshes is {f.displacement / limit:.0%} of the collapse limit")
        s, target = f.drift_per_step / lr, AT_RISK_SHARE * limit
        to_lr = collapse.max_safe_learning_rate(s, T, target, f.band_edge)
        changes += [lr_change(setup, to_lr, f"the move at {AT_RISK_SHARE:.0%} of the limit")] if to_lr < lr else []
        to_T = collapse.max_safe_refresh_interval(s, lr, target, f.band_edge)
        changes += refresh_changes(setup, to_T, f"the move at {AT_RISK_SHARE:.0%} of the limit") if to_T and to_T < T else []
    if chance is not None and chance["chance"] >= AT_RISK_CHANCE and not ran_and_held(f):
        risks.append(f"a run falls with chance {chance['chance']:.0%} at these settings")
        bounds, level = chance["bounds"] or {}, f"a fall chance at most {AT_RISK_CHANCE:.0%}"
        if bounds.get("max_lr") is not None and bounds["max_lr"] < lr:
            changes.append(lr_change(setup, bounds["max_lr"], level))
        if bounds.get("max_refresh_interval") and bounds["max_refresh_interval"] < T:
            changes += refresh_changes(setup, bounds["max_refresh_interval"], level)
    if linear is not None and lr > linear / MARGIN_FACTOR:
        risks.append(f"{_key(setup)} is within {MARGIN_FACTOR:g}x of the largest stable {linear:.3g}")
        changes.append(lr_change(setup, linear / MARGIN_FACTOR, f"a {MARGIN_FACTOR:g}x margin below the bound"))
    if f.kl_pull:
        risks.append("the KL term pulls a solved policy back between refreshes (beta > 0, most groups flat)")
        below = next((c for t in range(KL_PULL_MIN_REFRESH - 1, 0, -1) if (c := refresh_changes(
            setup, t, f"below T = {KL_PULL_MIN_REFRESH}, where the KL pull felled runs (predict._collapse_risk)"))), [])
        changes += below
    unclip = clip_answer(setup) if f.displacement is None else None
    if unclip is not None:  # the collapse rule could not be read, and no clip bounds the move it would have read
        risks.append(unclip[0] + "; this pilot logs no drift or entropy to read it from")
        changes += unclip[1]
    return risks


def _merged(changes: list[Change], lr_key: str) -> list[Change]:
    """One change per key: the smallest lr (every rule's risk rises with lr), else the first given."""
    out: dict[str, Change] = {}
    for c in changes:
        if c.key not in out or (c.key == lr_key and c.value < out[c.key].value):
            out[c.key] = c
    return list(out.values())


def _lr_margin(setup, lr: float, linear: float) -> str:
    """What the safe verdict says of raising the lr: nothing measured. The linear model's bound (`linear`, quoted
    by `_oscillation_bound`) bounds the reward's oscillation, not collapse, and real runs fell far below it (the
    TRL atlas: 15-66x below it in 4 of its 5 cells that gave one; public runs of haxiaww at 1x a bound 30x away)."""
    return (f"how far {_key(setup)} can rise is not measured: the linear model's bound "
            f"({_oscillation_bound(setup, lr, linear)}) is on the reward's oscillation, not collapse, and real runs fell "
            "far below it (paper_repro/RESULTS.md, trl-atlas-v3)")


def _oscillation_bound(setup, lr: float, linear: float) -> str:
    """The linear bound as a factor over the config's lr, only as far as the evidence reaches: up to LR_REACH (the
    largest factor over a pilot's own lr that our trainer's grids put the forecast to: beyond it the stiffness's
    scaling with lr, Adam's linear regime and the collapse limit are untested), else that none is shown below
    LR_REACH x lr, and none is known above it."""
    if linear / lr <= LR_REACH:
        return f"{linear / lr:.2g}x {_key(setup)}"
    return (f"none below {LR_REACH:g}x {_key(setup)} = {lr * LR_REACH:.3g}, as far as a pilot's reading was "
            "checked to reach")


def _key(setup) -> str:
    return setup.keys.lr if getattr(setup, "keys", None) else "lr"


def _forecast(f, chance: dict | None, verdict: str) -> dict:
    """The end reward with its interval, the plateau and its time (or why not identified), the collapse risk. Under
    an `unsafe` verdict no end reward: its forecast extends the pilot's course, the course the verdict says falls."""
    setup = f.config.setup
    out: dict = {"text": []}
    keys = getattr(setup, "keys", None)
    if f.end is not None and (verdict == "unsafe" or f.length_fall is not None):
        out["end_reward"] = None
        out["text"].append("reward at the run's end: not forecast (" + (
            "the verdict is unsafe" if verdict == "unsafe" else "the pilot's completions are shrinking") + ": a "
            "forecast extends the pilot's course, which may fall, down to the reward's floor)")
    elif f.end is not None:
        first = int(end_window(f.end.run_steps)[0])
        length = (f"--run-steps {f.end.run_steps}" if setup.run_given else f"{keys.run_length} {f.end.run_steps}" if keys
                  else f"{f.end.run_steps} steps")
        out["end_reward"] = {"value": f.end.value if f.end.identified else None, "held": f.end.held,
                             "interval": None if f.end.interval is None else list(f.end.interval),
                             "interval_is_reach": f.end.spans_reach, "steps": [first, f.end.run_steps],
                             "interval_withheld": f.end.withheld or None}
        value = (f"{f.end.value:.3g}{f.end.band_text()}{_unbounded(f)}" if f.end.identified
                 else not_identified_text(f.end))
        out["text"].append(f"reward over steps {first}-{f.end.run_steps} (the run's last sixth, {length}): {value}")
    else:
        out["end_reward"] = None
        where = ("--set max_steps=N (OpenRLHF's trainer counts its steps from the dataset)"
                 if keys is not None and keys.framework == "openrlhf" else
                 f"{keys.run_length if keys else 'steps'} in the config")
        out["text"].append(f"reward at the run's end: not forecast (its length is unknown: {where}, or --run-steps)")
    imp = f.implications
    if plateau_identified(f):
        timed = plateau_timed(imp)
        out["plateau"] = {"value": imp.plateau.value, "step": imp.time_to_plateau.value if timed else None}
        if out["end_reward"] is not None and out["end_reward"]["value"] is not None:  # one level per answer: the end's
            out["text"].append("plateau: the pilot's fitted curve " + (
                f"comes within 5% of its own plateau from step {imp.time_to_plateau.value:.0f} (that plateau in "
                "--explain; a later rise is not ruled out)" if timed else f"bends; {UNTIMED}")
                + "; the level the run ends at is the reward above, calibrated on finished runs")
        else:
            out["text"].append(f"plateau {imp.plateau.value:.3g} (the pilot's curve: a later rise is not ruled out), "
                               + (f"within 5% of it from step {imp.time_to_plateau.value:.0f}" if timed else UNTIMED))
    else:
        rise = rise_in_noise(f)
        out["plateau"] = None
        moved = ("" if rise is None else f"the pilot's change, {rise:+.2g} noise std, is within its noise and "
                 if abs(rise) < 1 else f"the pilot's {'rise' if rise > 0 else 'fall'} is {abs(rise):.2g} noise std and ")
        out["text"].append("plateau and its time: not identified (" + moved
                           + "its fit does not bend within the pilot; a longer pilot tells)")
    if chance is not None and by_construction(f, chance):  # the chance at a rule's threshold: for settings no pilot ran
        out["collapse_chance"] = None
        out["text"].append(f"collapse risk at these settings: not identified (the pilot ran at them, a move of "
                           f"{f.displacement:.3g} between refreshes, and kept its reward: the limit lies at least "
                           "there, how far above is not known; a longer pilot tells)")
    elif chance is not None:
        out["collapse_chance"] = chance["chance"]
        out["text"].append(f"collapse risk at these settings: {chance['chance']:.0%} that a run falls")
    else:
        out["collapse_chance"] = None
        why = ("at T = 1 the sampler is refreshed every step, so no drift between samplers exists to measure"
               if setup.hparams.refresh_interval == 1 else _unassessed(f))
        out["text"].append(f"collapse risk: not assessed ({why})")
    return out


def _unassessed(f) -> str:
    """Which of the two readings the collapse limit needs the pilot lacks: its token entropy (the limit is relative to
    it) or its per-step drift (the move between refreshes: a clip ratio, a log-ratio spread); the one read is said."""
    drift = f.drift_per_step is not None and f.drift_per_step > 0
    entropy = f.entropy is not None or f.overshoot is not None or f.rise_unread is not None
    if drift and not entropy:
        return ("the pilot logs no token entropy, by which the collapse limit on the move between refreshes is "
                "scaled; its drift per step is read")
    if entropy and not drift:
        return ("the pilot logs no per-step drift (a clip ratio, a log-ratio spread), by which the move between "
                "refreshes is measured; its token entropy is read")
    return "the pilot logs neither token entropy nor a per-step drift (a clip ratio, a log-ratio spread)"


def _unbounded(f) -> str:
    """Where the reward's bounds are unknown (neither given nor inferred) and the interval reaches past the rewards
    the pilot saw, that the interval may hold values the reward cannot take, and the flag that bounds it."""
    if f.reward_range is not None or f.end is None or f.end.interval is None or f.pilot is None:
        return ""
    low, high = f.end.interval
    seen = f.pilot[1][np.isfinite(f.pilot[1])]
    if not seen.size or (low >= seen.min() and high <= seen.max()):
        return ""
    return " (the reward's bounds are unknown: --reward-range LO HI keeps the interval within them)"


def pilot_headline(f, zero_std=None) -> Headline:
    """The verdict, the changes and the forecast of a `predict.PilotForecast` (`predict._headline` for the rules);
    `zero_std`: the pass rates' mixture (`predict.zero_std_answer`), whose G change and share are added."""
    chance = config_fall_chance(f)  # a scan over lr and T: read once for the verdict and the forecast
    verdict, reason, changes, tell, margin = _verdict(f, chance)
    changes = with_fixes(f.config.setup, changes)
    settled = ()
    if zero_std is not None:
        changes = changes + zero_std.changes(f.config.setup)
        settled = tuple(zero_std.settled_lines())
    return Headline(verdict, reason, tuple(changes), forecast=_forecast(f, chance, verdict), settled=settled, tell=tell,
                    margin=margin)
