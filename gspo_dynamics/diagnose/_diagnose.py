"""`diagnose(runlog, hparams)`: fit the reward curve, run every check, rank the verdicts.

Every mode is scored from its own evidence on one scale (a confidence in [0, 1]); a mode that follows
from another (zero-std groups left by a collapse, entropy collapsed by an exploit) is ranked below
its cause. The primary verdict is the best-supported mode: the highest confidence (a cause wins a
tie with the trend mode, since it explains the curve). Causes below REPORT_CONFIDENCE are not
reported; every analysed run gets exactly one trend mode (healthy, still rising, stalled, noise).
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import replace

import numpy as np

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.diagnose._calibration import calibrate
from gspo_dynamics.diagnose._context import (
    decayed_lr_advice, drift_beside_fall, drift_note, drift_without_progress, mostly_no_signal, no_signal, reward_scale,
    reward_spread, signal_said,
)
from gspo_dynamics.diagnose._ranking import rank_consequences
from gspo_dynamics.diagnose._signal_lost import signal_lost
from gspo_dynamics.diagnose._hacking import hacking
from gspo_dynamics.diagnose._signals import concentration, degeneracy, success_rate, summed_reach
from gspo_dynamics.diagnose._instability import instability_verdict, non_finite_verdict
from gspo_dynamics.diagnose._findings import diverged_updates, findings
from gspo_dynamics.diagnose._kl_pull import kl_pull_note
from gspo_dynamics.diagnose._trend import trend_verdict
from gspo_dynamics.diagnose._trend_advice import DRIFT_STALLED_ADVICE, STALLED_ADVICE
from gspo_dynamics.diagnose._trend_stats import Z_TREND, change
from gspo_dynamics.diagnose._verdict import (CAUSE_MODES, FELL, REPORT_CONFIDENCE, TOO_SHORT, Diagnosis,
                                             Verdict, evidence, inconsistencies, reward_reach)
from gspo_dynamics.fit import check_reward_range, fit_trajectory, implications, within_reach
from gspo_dynamics.logs import MIN_ANALYSIS_POINTS, ROW_NUMBERS, RunLog
from gspo_dynamics.theory.hyperparams import Hyperparams

TIE = 1e-3  # confidences closer than this are equal when ranking (both 1.00 as reported)
STRICT = "GSPO_DYNAMICS_STRICT"  # set to 1 (the tests do): a verdict printed against its evidence raises
# said where every reward lies in [0, 1] and no range was given (`_verdict.reward_reach`): an assumption, not a default
INFERRED_REACH = ("every logged reward lies in [0, 1], so the reward is read as a score that reaches at most [0, 1] (a "
                  "success rate, a judge's score): the plateau is bounded by it; --reward-range LO HI gives another")
FALLING_CAP = 0.3  # a falling reward read as saturating: below REPORT_CONFIDENCE, so a cause outranks it


def _summary(log: RunLog) -> dict:
    return {
        "source": log.source, "format": log.format, "trainer": log.trainer, "version": log.version,
        "rows": int(log.steps.size), "logging_interval": log.logging_interval,
        "reward_std_kind": log.reward_std_kind, "reward_points": log.n_points("reward"),
        "min_points": MIN_ANALYSIS_POINTS, "series": sorted(log.names), "warnings": list(log.warnings),
        "step_axis": log.step_axis, "n_runs": log.n_runs, "run_index": log.run_index,
        "run_name": log.run_name, "eval_points": log.n_eval_points,
        "columns": [{"series": name, "column": key} for name, key in log.columns.items()], "unread": list(log.unread),
        "set_aside": list(log.set_aside), "placeholders": list(log.placeholders),
        "reward_guessed": log.reward_guessed,
    }


def diagnose(runlog: RunLog, hparams: Hyperparams | None = None, *,
             reward_range: tuple[float, float] | None = None) -> Diagnosis:
    """Failure-mode verdicts for one run (see the package docstring for the modes and their signals).

    runlog: a `RunLog` (from `gspo_dynamics.logs.read_log`); only `reward` is required.
    hparams: the run's `Hyperparams`, or None (then the checks that need them say so).
    reward_range: (lo, hi), the least and greatest reward the task can give ((0, 1) for a success
    rate), or None (unknown). A plateau at a bound is saturation, and the refresh-interval thresholds
    are then withheld (`fit.implications`): the reduced model has no restoring force there to
    overshoot, so the theory line of the instability check is skipped (the data's evidence stands).
    Not inferred from the log: an unstable run that swings to a bound fits a plateau there too, and
    reading that as saturation would hide the instability the hyperparameters predict.
    A run with fewer than MIN_ANALYSIS_POINTS reward values gets primary "too_short" and no verdicts.
    """
    if not isinstance(runlog, RunLog):
        raise ConfigError(f"diagnose needs a RunLog (from gspo_dynamics.logs.read_log), got {type(runlog).__name__}")
    if hparams is not None and not isinstance(hparams, Hyperparams):
        raise ConfigError(f"hparams must be a Hyperparams or None, got {type(hparams).__name__}")
    check_reward_range(reward_range)
    summary = _summary(runlog)
    notes = [f"reader: {w}" for w in runlog.warnings]
    if reward_range is None and (reward_range := summed_reach(runlog)) is not None:
        notes.append(f"the reward is the sum of {reward_range[1]:g} reward functions, each logged within [0, 1]: it "
                     f"reaches at most [0, {reward_range[1]:g}], not the [0, 1] its values may lie in so far; "
                     "--reward-range LO HI gives another")
    found = findings(runlog, hparams)
    if "reward" not in runlog or runlog.is_too_short():
        return Diagnosis(TOO_SHORT, [], None, None, summary, notes=notes, hparams=hparams, log=runlog, findings=found)
    if runlog.logging_interval and runlog.logging_interval > 1:
        notes.append(f"rows are {runlog.logging_interval} optimizer steps apart (a trainer's logged row averages them, "
                     "a loop's printed row may be one step's); times are in optimizer steps")
    not_checked: list[str] = []
    fit, imp = _fit(runlog, hparams, reward_range, notes)
    trend = change(runlog.steps, runlog["reward"])
    verdicts = _curve_verdicts(runlog, hparams, fit, imp, trend, notes, not_checked)
    theory: dict = {}
    divergence = next((f for f in found if f.name == "reward_function_divergence"), None)
    silent = _cause_verdicts(runlog, hparams, trend, verdicts, theory, notes, not_checked, divergence)
    rank_consequences(verdicts, reward_scale(runlog, trend, hparams.group_size if hparams else None), runlog,
                       silent, notes)
    pull = kl_pull_note(runlog, hparams, reward_range)
    if pull:
        notes.append(pull)
    if hparams is None:
        not_checked.append("refresh interval vs its critical value: no hyperparameters given (--lr, -T, ... or --config)")
    verdicts = [v for v in verdicts if v.mode not in CAUSE_MODES or v.confidence >= REPORT_CONFIDENCE]
    # best supported first; at equal confidence (to TIE) a cause before the trend mode (it explains the curve)
    verdicts.sort(key=lambda v: (-round(v.confidence / TIE), v.mode not in CAUSE_MODES))
    primary = verdicts[0].mode
    # reported confidences are calibrated (monotone: the ranking above is the raw one, and stays)
    verdicts = [replace(v, confidence=calibrate(v.confidence)) for v in verdicts]
    result = Diagnosis(primary, verdicts, fit, imp, summary, not_checked=not_checked, notes=notes, hparams=hparams,
                       theory=theory, log=runlog, findings=found)
    if os.environ.get(STRICT) == "1":  # the tests' invariant: no verdict printed against its own evidence
        problems = inconsistencies(result)
        if problems:
            raise AssertionError(f"{runlog.source}: verdicts against their evidence: " + "; ".join(problems))
    return result


def _fit(log: RunLog, hparams, reward_range, notes: list[str]):
    """The closed-form fit of the reward and its implications (None, None with a note if it fails)."""
    try:
        fit = fit_trajectory(log.steps, log["reward"])
        imp = implications(fit, hparams, reward_range=reward_range)
    except ConfigError as exc:
        notes.append(f"the closed-form fit failed: {exc}")
        return None, None
    reach = reward_reach(log["reward"], reward_range)
    if reward_range is None and reach is not None:  # a success rate's [0, 1]: no plateau past it is identified
        imp = replace(imp, unidentified=within_reach(imp, fit.t_end, reach, fit.regime == "unstable"))
        notes.append(INFERRED_REACH)
    notes += list(imp.notes)
    return fit, imp


def _curve_verdicts(log: RunLog, hparams, fit, imp, trend: dict, notes: list[str], not_checked: list[str]) -> list[Verdict]:
    """From the reward curve: the trend verdict (always first), its sampling-noise and drift evidence,
    and the instability verdict if any."""
    steps, reward = log.steps, log["reward"]
    spread = reward_spread(log)
    group_size = hparams.group_size if hparams is not None else None
    verdicts = [_not_healthy_if_falling(trend_verdict(steps, reward, fit, imp, trend, spread, group_size), trend)]
    if fit is not None and verdicts[0].mode in ("noise_dominated", "stalled"):
        _sampling_noise_evidence(verdicts[0], fit, log, hparams)
    if fit is not None:
        v = instability_verdict(steps, reward, fit, imp, hparams, trend, notes, _sample_spread(log, spread),
                                rows=log.step_axis.startswith(ROW_NUMBERS))
        if v is not None:
            verdicts.append(v)
            if v.confidence < REPORT_CONFIDENCE:
                notes.append(f"weak signs of dynamical instability (confidence {v.confidence:.2f}, below the "
                             f"{REPORT_CONFIDENCE} reporting level): " + "; ".join(
                                 f"{e['signal']} = {e['value']:.3g}" for e in v.evidence if isinstance(e["value"], float)))
    _signal_lost_evidence(log, verdicts)
    found = next((v for v in verdicts[1:] if v.mode == "dynamical_instability"), None)
    ended = diverged_updates(log)  # a reward NaN beside finite updates is the reward function's (a finding's warning)
    diverged = non_finite_verdict(ended, int(steps[-1]), hparams, found)
    if diverged is not found:
        verdicts[:] = [verdicts[0]] + [v for v in verdicts[1:] if v is not found] + [diverged]
        verdicts[0] = _not_healthy_if_diverged(verdicts[0], ended)
    elif fit is None:
        not_checked.append("dynamical instability: the closed-form fit failed")
    left = drift_beside_fall(log, trend)
    i = next((i for i, v in enumerate(verdicts) if i and v.mode == "dynamical_instability"), None)
    if left is not None and i is not None:  # context of the fall: an item that holds, not a confidence
        verdicts[i] = replace(verdicts[i], evidence=verdicts[i].evidence + [left[0]])
        notes.append(left[1])
    drift = drift_without_progress(log, trend)
    if drift and verdicts[0].mode in ("stalled", "noise_dominated"):
        verdicts[0].evidence.extend(drift)
        notes.append(drift_note(drift, trend["z"]))
        if verdicts[0].mode == "stalled" and verdicts[0].advice == STALLED_ADVICE:  # "raise the lr" on a moving policy
            verdicts[0] = replace(verdicts[0], advice=list(DRIFT_STALLED_ADVICE))
    if verdicts[0].mode == "stalled":  # the groups' signal, where the log measures it, is said, not asked for
        verdicts[0] = replace(verdicts[0], advice=signal_said(log, verdicts[0].advice))
    dead = mostly_no_signal(log) if verdicts[0].mode in ("stalled", "noise_dominated") else None
    if dead:  # rows that trained nothing come before the noise or the lr
        verdicts[0] = replace(verdicts[0], evidence=verdicts[0].evidence + [dead[0]],
                              advice=[dead[1]] + list(verdicts[0].advice))
    decayed = decayed_lr_advice(log) if verdicts[0].mode == "healthy_saturation" and not verdicts[0].unsure else None
    if decayed:  # a flattening under a schedule at its end: not the task's plateau alone
        verdicts[0] = replace(verdicts[0], advice=[decayed] + list(verdicts[0].advice))
    return verdicts


def _signal_lost_evidence(log: RunLog, verdicts: list[Verdict]) -> None:
    """A policy thrown dead by an update (`_signal_lost`): an item of the instability verdict (made if none), at the
    larger of its confidence and the rule's 1 - q^m."""
    lost = signal_lost(log)
    if lost is None:
        return
    item = evidence("reward fell to its floor with every group zero-std from this step on (signal lost)",
                    lost["step"], (lost["step"], int(log.steps[-1])), rows_dead=lost["rows_dead"],
                    rows_before=lost["rows_before"], zero_std_share_before=lost["q"],
                    reward_before=lost["reward_before"], floor=lost["floor"])
    advice = (f"an update at step {lost['step']} left the policy with no reward signal at all: restart from a "
              f"checkpoint before it with a learning rate (TRL: learning_rate; verl: actor_rollout_ref.actor.optim.lr) several times smaller")
    i = next((i for i, v in enumerate(verdicts) if i and v.mode == "dynamical_instability"), None)
    if i is None:
        verdicts.append(Verdict("dynamical_instability", lost["confidence"], [item], [advice]))
    else:
        v = verdicts[i]
        verdicts[i] = replace(v, confidence=max(v.confidence, lost["confidence"]), evidence=v.evidence + [item],
                              advice=[advice] + v.advice)


def _cause_verdicts(log: RunLog, hparams, trend: dict, verdicts: list[Verdict], theory: dict, notes: list[str],
                    not_checked: list[str], divergence=None) -> Verdict | None:
    """From the other series: no signal at all (or else the zero-std check), concentration, hacking (with the
    reward functions' `divergence` finding, or None). Appends to `verdicts`; returns the no-signal verdict (None if
    the groups carry signal)."""
    silent = no_signal(log)
    checks = [lambda: concentration(log, hparams), lambda: hacking(log, trend, notes, divergence)]
    if silent is not None:
        verdicts.append(silent)
    else:
        checks.insert(0, lambda: degeneracy(log, hparams, theory))
    for check in checks:
        v, why = check()
        if v is not None:
            verdicts.append(v)
        if why:
            not_checked.append(why + _map_hint(why, log.unread, log.placeholders))
    return silent


# a check's missing series, the name `--map` gives it, and the unread column names that may hold it
MAP_HINTS = (("no completion length", "mean_length", r"token|length|(^|_)len($|_)|words|chars"),
             ("no entropy series", "entropy", r"entrop"),
             # ROLL's advantage/zero_rate (not read unmapped: `logs._vocabulary`), a loop's zero-reward shares
             ("no zero-std fraction", "frac_zero_std", r"zero_?(std|rate|adv|grad)|(^|/)zero_"))


def _map_hint(why: str, unread: tuple[str, ...], placeholders: tuple[str, ...] = ()) -> str:
    """Where a check was not made for a series the log may hold under a name no reader knows: the unread column that
    looks like it, and the `--map` that reads it (or ""); a column the reader set aside as a placeholder
    (`RunLog.placeholders`: all zeros, `logs._placeholders`) is said to be one, not offered to --map (mapped, it is
    set aside again)."""
    for missing, name, pattern in MAP_HINTS:
        found = [c for c in unread if re.search(pattern, c, re.IGNORECASE)]
        if missing in why and found:
            held = next((c for c in found if c in placeholders), None)
            if held is not None:
                return f" (its column {held!r} holds only zeros: a placeholder the trainer wrote, nothing measured)"
            return f" (the unread column {found[0]!r} may be it: --map {name}={found[0]})"
    return ""


def _sample_spread(log: RunLog, spread: tuple[float, str] | None) -> float | None:
    """The per-sample reward spread a rise must exceed to be one (`_instability._collapse`): the logged
    within-group std, or for a success rate at least its Bernoulli spread sqrt(p (1 - p)) at the mean p (zero-std
    groups pull the logged mean std towards 0 however far the samples spread)."""
    p = success_rate(log)
    mean = float(np.nanmean(p)) if p is not None else None
    bernoulli = math.sqrt(max(mean * (1.0 - mean), 0.0)) if mean is not None else None
    values = [v for v in (spread[0] if spread else None, bernoulli) if v is not None]
    return max(values) if values else None


def _not_healthy_if_diverged(verdict: Verdict, diverged) -> Verdict:
    """The trend of a run that diverged numerically (`RunLog.diverged`) is kept, its confidence capped at
    FALLING_CAP (below the divergence); where the reward itself ended in NaN / inf, with the step its finite
    values stop at (the trend reads the values before it; a loss alone leaves the reward read as logged)."""
    stops = ([{"signal": "the trend stops before the reward's divergence, at step", "value": diverged["reward"][0],
               "steps": None}] if "reward" in diverged else [])
    return replace(verdict, confidence=min(verdict.confidence, FALLING_CAP), evidence=verdict.evidence + stops)


def _not_healthy_if_falling(verdict: Verdict, trend: dict) -> Verdict:
    """A reward that fell significantly (Welch z <= -Z_TREND) and settled is not healthy saturation (nor
    still rising): the trend reading is kept, capped at FALLING_CAP, so that the cause of the fall (a
    collapse, an exploit) ranks first; the fall is named in the evidence, and the reading's own items that the fall
    fails (a reward past its plateau, a late half still falling) are kept as caveats: the reading is context."""
    if verdict.mode not in ("healthy_saturation", "still_rising") or not trend or not trend["z"] <= -Z_TREND:
        return verdict
    fell = evidence(FELL, trend["z"], trend["steps"], threshold=-Z_TREND, side="<=",
                    caveat=True, early=trend["early"], late=trend["late"])
    kept = [dict(e, caveat=True) if e.get("holds") is False else e for e in verdict.evidence]
    return replace(verdict, confidence=min(verdict.confidence, FALLING_CAP), evidence=kept + [fell])


def _sampling_noise_evidence(verdict: Verdict, fit, log: RunLog, hparams: Hyperparams | None) -> None:
    """Compare the fluctuation around the fit with pure sampling noise of a binary reward:

        sd_row = sqrt(p (1 - p) / (G N L))      (G per group, N groups per step, L steps per logged row)

    ~1x: the rows only carry sampling noise (more samples per step fix it); >> 1x: the policy itself
    fluctuates (the reduced-order model's stationary 1/G fluctuation, or unmodelled dynamics).
    """
    p = success_rate(log)
    if p is None or hparams is None or not hparams.group_size:
        return
    mean = float(np.nanmean(p))
    samples = hparams.group_size * hparams.num_groups * (log.logging_interval or 1)
    expected = math.sqrt(mean * (1.0 - mean) / samples)
    if expected > 0:
        verdict.evidence.append({"signal": "fluctuation around the fit / binomial sampling noise", "value": fit.residual_std / expected,
                                 "steps": [int(fit.t_start), int(fit.t_end)], "expected_sd": expected,
                                 "measured_sd": fit.residual_std, "samples_per_row": samples})
