"""`diagnose(runlog, hparams)`: fit the reward curve, run every check, rank the verdicts.

Every mode is scored from its own evidence on one scale (a confidence in [0, 1]); a mode that follows
from another (zero-std groups left by a collapse, entropy collapsed by an exploit) is ranked below
its cause. The primary verdict is the best-supported mode: the highest confidence (a cause wins a
tie with the trend mode, since it explains the curve). Causes below REPORT_CONFIDENCE are not
reported; every analysed run gets exactly one trend mode (healthy, still rising, stalled, noise).
"""

from __future__ import annotations

import math

import numpy as np

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.diagnose._calibration import calibrate
from gspo_dynamics.diagnose._context import drift_note, drift_without_progress, no_signal, reward_scale
from gspo_dynamics.diagnose._signals import DEGENERATE_FRACTION, concentration, degeneracy, hacking, success_rate
from gspo_dynamics.diagnose._instability import instability_verdict
from gspo_dynamics.diagnose._trend import (MEANINGFUL_CHANGE, MIN_WINDOW, Z_STILL_RISING, Z_TREND, change, late_slope,
                                           trend_verdict)
from gspo_dynamics.diagnose._verdict import CAUSE_MODES, REPORT_CONFIDENCE, TOO_SHORT, Diagnosis, Verdict
from gspo_dynamics.fit import check_reward_range, fit_trajectory, implications
from gspo_dynamics.logs import MIN_ANALYSIS_POINTS, RunLog
from gspo_dynamics.theory.hyperparams import Hyperparams

KL_START_HIGH = 0.1  # nats; the policy starts as the reference, so its KL is ~0 at the first steps
DERIVED_DISCOUNT = 0.9  # a verdict explained by another is ranked this fraction of the other's confidence
EXPLAINS = 0.7  # a cause this confident explains a stalled or noisy reward (`_explained_symptom`)
TIE = 1e-3  # confidences closer than this are equal when ranking (both 1.00 as reported)
FALLING_CAP = 0.3  # a falling reward read as saturating: below REPORT_CONFIDENCE, so a cause outranks it
DEGENERACY_CAUSES = ("policy_concentration", "dynamical_instability")  # collapses that empty the groups


def _spread(log: RunLog) -> tuple[float, str] | None:
    """Per-sample reward spread: the mean logged reward std, or sqrt(p(1-p)) for a success rate."""
    if "reward_std" in log and log.n_points("reward_std") >= 3:
        values = log["reward_std"]
        return float(np.nanmean(values)), f"mean logged reward_std ({log.reward_std_kind})"
    p = success_rate(log)
    if p is not None:
        mean = float(np.nanmean(p))
        return math.sqrt(mean * (1.0 - mean)), "sqrt(p(1-p)) at the mean success rate"
    return None


def _summary(log: RunLog) -> dict:
    return {
        "source": log.source, "format": log.format, "trainer": log.trainer, "version": log.version,
        "rows": int(log.steps.size), "logging_interval": log.logging_interval,
        "reward_std_kind": log.reward_std_kind, "reward_points": log.n_points("reward"),
        "min_points": MIN_ANALYSIS_POINTS, "series": sorted(log.names), "warnings": list(log.warnings),
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
    if "reward" not in runlog or runlog.is_too_short():
        return Diagnosis(TOO_SHORT, [], None, None, summary, notes=notes, hparams=hparams, log=runlog)
    if runlog.logging_interval and runlog.logging_interval > 1:
        notes.append(f"each row averages {runlog.logging_interval} optimizer steps; times are in optimizer steps")
    not_checked: list[str] = []
    fit, imp = _fit(runlog, hparams, reward_range, notes)
    trend = change(runlog.steps, runlog["reward"])
    verdicts = _curve_verdicts(runlog, hparams, fit, imp, trend, notes, not_checked)
    theory: dict = {}
    silent = _cause_verdicts(runlog, hparams, trend, verdicts, theory, notes, not_checked)
    _rank_consequences(verdicts, reward_scale(runlog, trend, hparams.group_size if hparams else None), runlog,
                       silent, notes)
    _reference_note(runlog, notes)
    if hparams is None:
        not_checked.append("refresh interval vs its critical value: no hyperparameters given (--lr, -T, ... or --config)")
    verdicts = [v for v in verdicts if v.mode not in CAUSE_MODES or v.confidence >= REPORT_CONFIDENCE]
    # best supported first; at equal confidence (to TIE) a cause before the trend mode (it explains the curve)
    verdicts.sort(key=lambda v: (-round(v.confidence / TIE), v.mode not in CAUSE_MODES))
    primary = verdicts[0].mode
    # reported confidences are calibrated (monotone: the ranking above is the raw one, and stays)
    verdicts = [Verdict(v.mode, calibrate(v.confidence), v.evidence, v.advice) for v in verdicts]
    return Diagnosis(primary, verdicts, fit, imp, summary, not_checked=not_checked, notes=notes, hparams=hparams,
                     theory=theory, log=runlog)


def _fit(log: RunLog, hparams, reward_range, notes: list[str]):
    """The closed-form fit of the reward and its implications (None, None with a note if it fails)."""
    try:
        fit = fit_trajectory(log.steps, log["reward"])
        imp = implications(fit, hparams, reward_range=reward_range)
    except ConfigError as exc:
        notes.append(f"the closed-form fit failed: {exc}")
        return None, None
    notes += list(imp.notes)
    return fit, imp


def _curve_verdicts(log: RunLog, hparams, fit, imp, trend: dict, notes: list[str], not_checked: list[str]) -> list[Verdict]:
    """From the reward curve: the trend verdict (always first), its sampling-noise and drift evidence,
    and the instability verdict if any."""
    steps, reward = log.steps, log["reward"]
    spread = _spread(log)
    group_size = hparams.group_size if hparams is not None else None
    verdicts = [_not_healthy_if_falling(trend_verdict(steps, reward, fit, imp, trend, spread, group_size), trend)]
    if fit is not None and verdicts[0].mode in ("noise_dominated", "stalled"):
        _sampling_noise_evidence(verdicts[0], fit, log, hparams)
    if fit is not None:
        v = instability_verdict(steps, reward, fit, imp, hparams, trend, notes, spread[0] if spread else None)
        if v is not None:
            verdicts.append(v)
            if v.confidence < REPORT_CONFIDENCE:
                notes.append(f"weak signs of dynamical instability (confidence {v.confidence:.2f}, below the "
                             f"{REPORT_CONFIDENCE} reporting level): " + "; ".join(
                                 f"{e['signal']} = {e['value']:.3g}" for e in v.evidence if isinstance(e["value"], float)))
    else:
        not_checked.append("dynamical instability: the closed-form fit failed")
    drift = drift_without_progress(log, trend)
    if drift and verdicts[0].mode in ("stalled", "noise_dominated"):
        verdicts[0].evidence.extend(drift)
        notes.append(drift_note(drift))
    return verdicts


def _cause_verdicts(log: RunLog, hparams, trend: dict, verdicts: list[Verdict], theory: dict, notes: list[str],
                    not_checked: list[str]) -> Verdict | None:
    """From the other series: no signal at all (or else the zero-std check), concentration, hacking.
    Appends to `verdicts`; returns the no-signal verdict (None if the groups carry signal)."""
    silent = no_signal(log)
    checks = [lambda: concentration(log, hparams), lambda: hacking(log, trend, notes)]
    if silent is not None:
        verdicts.append(silent)
    else:
        checks.insert(0, lambda: degeneracy(log, hparams, theory))
    for check in checks:
        v, why = check()
        if v is not None:
            verdicts.append(v)
        if why:
            not_checked.append(why)
    return silent


def _rank_consequences(verdicts: list[Verdict], scale, log: RunLog, silent: Verdict | None, notes: list[str]) -> None:
    """Rank what follows from another mode below it (each rule in its own function)."""
    _solved_task(verdicts, scale, log, notes)
    _hard_task(verdicts, scale, log)
    _attribute_degeneracy(verdicts, log)
    _attribute_to_hacking(verdicts, log)
    _attribute_to_silence(verdicts, silent)
    _explained_symptom(verdicts)


def _explained_symptom(verdicts: list[Verdict]) -> None:
    """A stalled or noise-dominated reward with a cause at EXPLAINS or above is that cause's symptom: no
    signal in the groups, a limit cycle around a flat mean, a collapsed policy, an exploit all leave the
    mean reward flat or noisy. The trend verdict is then ranked below the cause (DERIVED_DISCOUNT x its
    confidence). A healthy or rising reward is not a symptom and keeps its rank."""
    t = next(i for i, v in enumerate(verdicts) if v.mode not in CAUSE_MODES)
    trend = verdicts[t]
    causes = [v for v in verdicts if v.mode in CAUSE_MODES and v.confidence >= EXPLAINS]
    if trend.mode not in ("stalled", "noise_dominated") or not causes:
        return
    cause = max(causes, key=lambda v: v.confidence)
    _rank_below(verdicts, t, cause.confidence, f"this follows from the {cause.mode.replace('_', ' ')}: treat that first")


def _not_healthy_if_falling(verdict: Verdict, trend: dict) -> Verdict:
    """A reward that fell significantly (Welch z <= -Z_TREND) and settled is not healthy saturation (nor
    still rising): the trend reading is kept, capped at FALLING_CAP, so that the cause of the fall (a
    collapse, an exploit) ranks first; the fall is named in the evidence."""
    if verdict.mode not in ("healthy_saturation", "still_rising") or not trend or not trend["z"] <= -Z_TREND:
        return verdict
    fell = {"signal": "the reward fell (Welch z, late - early)", "value": trend["z"], "threshold": -Z_TREND,
            "steps": [int(trend["steps"][0]), int(trend["steps"][1])], "early": trend["early"], "late": trend["late"]}
    return Verdict(verdict.mode, min(verdict.confidence, FALLING_CAP), verdict.evidence + [fell], verdict.advice)


def _solved_task(verdicts: list[Verdict], scale, log: RunLog, notes: list[str]) -> None:
    """A solved task, or one being solved, concentrates the policy and empties the groups: not a failure.

    Concentration at the ceiling: with the reward a [0, 1] score (`_context.reward_scale`) that has
    reached its ceiling (`_at_ceiling`), a policy that answers every prompt the same way answers it right:
    the concentration verdict is dropped and its evidence goes to the trend verdict.

    All-correct groups: for binary rewards with success probability p per sample, a group of G is
    all-correct with probability p^G and all-wrong with (1 - p)^G, so at a late success rate p > 1/2 the
    zero-std groups are mostly all-correct, for every G (prompts of one difficulty). Zero-std groups that
    appeared as the reward rose (early fraction below DEGENERATE_FRACTION) at such a p are prompts the
    run has learned to solve: the degeneracy verdict is ranked below the healthy or rising trend verdict
    (DERIVED_DISCOUNT x its confidence). Zero-std groups from the first steps (a task too easy from the
    start), or at p <= 1/2 (all-wrong groups), stay advantage degeneracy; with a collapse reported
    (concentration below the ceiling, instability) they are its consequence (`_attribute_degeneracy`).
    """
    trend = next(v for v in verdicts if v.mode not in CAUSE_MODES)
    if _at_ceiling(scale, trend, log):
        i = _index(verdicts, "policy_concentration")
        if i is not None:
            conc = verdicts.pop(i)
            entropy = next(e for e in conc.evidence if e["signal"] == "entropy late / early")
            trend.evidence.append(dict(entropy, signal="entropy late / early, at the reward's ceiling (a solved task)",
                                       late_reward=scale.late, ceiling=scale.ceiling))
            notes.append(f"the entropy fell to {entropy['value']:.2g} of its start while the reward reached "
                         f"{scale.late:.3g}, at its ceiling {scale.ceiling:g}: a solved task concentrates on the right "
                         "answers; not policy concentration")
    j = _index(verdicts, "advantage_degeneracy")
    collapse = any(v.mode in DEGENERACY_CAUSES and v.confidence >= REPORT_CONFIDENCE for v in verdicts)
    if (j is None or collapse or not scale.bounded or not scale.late > 0.5
            or trend.mode not in ("healthy_saturation", "still_rising") or not _early_zero_std(log) < DEGENERATE_FRACTION):
        return
    _rank_below(verdicts, j, trend.confidence, f"at success rate {scale.late:.2f} the zero-std groups are mostly "
                                               "all-correct (p^G > (1-p)^G): the run is solving its prompts; harder "
                                               "prompts (or a curriculum) will give it signal again")


def _hard_task(verdicts: list[Verdict], scale, log: RunLog) -> None:
    """A rise made while most groups carried no signal from the first steps on is the degeneracy's story.

    At a late success rate p < 1/2 a zero-std group is all-wrong with probability (1 - p)^G > p^G (the
    mirror of `_solved_task`'s all-correct groups); present from the start (early fraction at or above
    DEGENERATE_FRACTION) they say the task is too hard for the policy, and only the few groups with
    signal drive whatever rise the reward makes. The healthy or rising trend verdict is then ranked below
    the degeneracy (DERIVED_DISCOUNT x its confidence): the degeneracy is what limits the run.
    """
    j = _index(verdicts, "advantage_degeneracy")
    t = next(i for i, v in enumerate(verdicts) if v.mode not in CAUSE_MODES)
    if (j is None or verdicts[j].confidence < REPORT_CONFIDENCE or not scale.bounded or not scale.late < 0.5
            or verdicts[t].mode not in ("healthy_saturation", "still_rising")
            or not _early_zero_std(log) >= DEGENERATE_FRACTION):
        return
    _rank_below(verdicts, t, verdicts[j].confidence, "the rise is made by the few groups with signal: most groups "
                                                     "are all-wrong from the start; treat the degeneracy first")


def _at_ceiling(scale, trend: Verdict, log: RunLog) -> bool:
    """The reward has reached the ceiling of a [0, 1] score: its late mean is within CEILING_GAP of it and
    it has stopped rising. Still rising means the trend verdict says so, or the late half climbs both
    significantly and meaningfully (`_trend.late_slope`):

        slope / se(slope) >= Z_STILL_RISING   and   slope (t_last - t_first) >= MEANINGFUL_CHANGE x spread

    over the late half (spread: `_spread`, the per-sample reward std), the same effect size that makes a
    change meaningful elsewhere (a precisely logged run creeping 0.99 -> 0.999 has not stopped at its
    ceiling only in the statistical sense). A reward still climbing has not reached its ceiling: an
    entropy collapse ahead of it is the policy concentrating before the task is solved."""
    if not scale.at_ceiling or trend.mode == "still_rising":
        return False
    slope, slope_z, used = late_slope(log.steps, log["reward"])
    spread = _spread(log)
    climb = slope * (used[1] - used[0]) if used else math.nan
    meaningful = spread is None or climb >= MEANINGFUL_CHANGE * spread[0]
    return not (slope_z >= Z_STILL_RISING and meaningful)


def _early_zero_std(log: RunLog) -> float:
    """The zero-std fraction at the start: the lower of the early window's mean and the first MIN_WINDOW
    rows' (a collapse within the first refresh fills the early window with the zero-std groups it makes).
    NaN without a zero-std series."""
    if "frac_zero_std" not in log or log.n_points("frac_zero_std") < MIN_WINDOW:
        return math.nan
    _, frac = log.valid("frac_zero_std")
    return min(change(log.steps, log["frac_zero_std"]).get("early", math.nan), float(np.mean(frac[:MIN_WINDOW])))


def _rank_below(verdicts: list[Verdict], i: int, cause_confidence: float, advice: str) -> None:
    """Rank verdicts[i] below a cause it follows from: DERIVED_DISCOUNT x the cause's confidence at most."""
    v = verdicts[i]
    verdicts[i] = Verdict(v.mode, min(v.confidence, DERIVED_DISCOUNT * cause_confidence), v.evidence, v.advice + [advice])


def _index(verdicts: list[Verdict], mode: str) -> int | None:
    return next((i for i, v in enumerate(verdicts) if v.mode == mode), None)


def _eval_hack(verdicts: list[Verdict]) -> Verdict | None:
    """The reward hacking verdict when it rests on the eval reward leaving the train reward."""
    return next((v for v in verdicts if v.mode == "reward_hacking" and v.confidence >= REPORT_CONFIDENCE
                 and any(e["signal"].startswith("eval reward drop") for e in v.evidence)), None)


def _attribute_to_hacking(verdicts: list[Verdict], log: RunLog) -> None:
    """While the eval reward falls from its peak, the train reward's rise is the exploit's, not progress,
    an entropy collapse is the policy concentrating on the exploit, and zero-std groups that appeared
    during the run (early fraction below DEGENERATE_FRACTION) are groups the exploit pays in full: all
    three rank below the hacking."""
    hack = _eval_hack(verdicts)
    if hack is None:
        return
    t = next(i for i, v in enumerate(verdicts) if v.mode not in CAUSE_MODES)
    if verdicts[t].mode in ("healthy_saturation", "still_rising"):
        _rank_below(verdicts, t, hack.confidence, "the train reward's rise is the reward hacking's: the eval reward "
                                                  "fell meanwhile")
    i = _index(verdicts, "policy_concentration")
    if i is not None:
        _rank_below(verdicts, i, hack.confidence, "this follows from the reward hacking: the policy concentrates on "
                                                  "the exploit")
    j = _index(verdicts, "advantage_degeneracy")
    if j is not None and _early_zero_std(log) < DEGENERATE_FRACTION:
        _rank_below(verdicts, j, hack.confidence, "this follows from the reward hacking: the exploit pays every "
                                                  "response of these groups alike")


def _attribute_to_silence(verdicts: list[Verdict], silent: Verdict | None) -> None:
    """With no reward signal in any group (and no eval divergence), an entropy collapse moves for another
    reason (a KL or auxiliary term) and length or truncation growth exploits nothing: both rank below
    the degeneracy."""
    if silent is None or _eval_hack(verdicts) is not None:
        return
    i = _index(verdicts, "policy_concentration")
    if i is not None:
        _rank_below(verdicts, i, silent.confidence, "this follows from no group carrying any reward signal: the "
                                                    "reward does not drive this collapse")
    j = _index(verdicts, "reward_hacking")
    if j is not None:
        _rank_below(verdicts, j, silent.confidence, "no group carries any reward signal: the length change is not "
                                                    "reward-driven")


def _attribute_degeneracy(verdicts: list[Verdict], log: RunLog) -> None:
    """Zero-std groups that appeared during the run with a collapse are its consequence, not the data's.

    A concentrated policy answers every prompt the same way, and a diverged one (dynamical
    instability: a stale update driving the reward to the floor) fails every sample, so either
    leaves groups with zero reward variance. When the zero-std fraction started below
    DEGENERATE_FRACTION and one of those causes is reported, the degeneracy verdict is kept as
    evidence but ranked below that cause (DERIVED_DISCOUNT x its confidence). A task too hard from
    the start (zero-std groups from the first steps) stays advantage degeneracy.
    """
    causes = [v for v in verdicts if v.mode in DEGENERACY_CAUSES and v.confidence >= REPORT_CONFIDENCE]
    i = next((i for i, v in enumerate(verdicts) if v.mode == "advantage_degeneracy"), None)
    if not causes or i is None or "frac_zero_std" not in log:
        return
    early = _early_zero_std(log)
    if not early < DEGENERATE_FRACTION:
        return
    cause = max(causes, key=lambda v: v.confidence)
    name = cause.mode.replace("_", " ")
    deg = verdicts[i]
    note = {"signal": f"zero-std groups appeared with the {name} (early fraction)", "value": early,
            "steps": None, "threshold": DEGENERATE_FRACTION}
    verdicts[i] = Verdict(deg.mode, min(deg.confidence, DERIVED_DISCOUNT * cause.confidence), deg.evidence + [note],
                          deg.advice + [f"this follows from the {name}: treat that first"])


def _reference_note(log: RunLog, notes: list[str]) -> None:
    """Say so when the KL to the reference is already large at the first logged steps."""
    if "kl_ref" not in log or log.n_points("kl_ref") < MIN_WINDOW:
        return
    s, kl = log.valid("kl_ref")
    start = float(np.mean(kl[:MIN_WINDOW]))
    if start > KL_START_HIGH:
        notes.append(f"the KL to the reference is {start:.2g} nats at the first logged steps ({s[0]}-{s[MIN_WINDOW - 1]}): "
                     "the reference is not the starting policy (e.g. a reference from before SFT); with beta > 0 "
                     "it pulls the policy back from the start: use the starting checkpoint as the reference")


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
