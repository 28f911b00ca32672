"""`diagnose(runlog, hparams)`: fit the reward curve, run every check, rank the verdicts.

Primary verdict: the most confident cause (instability, degeneracy, concentration, hacking) at or
above REPORT_CONFIDENCE, since it explains the curve; otherwise the trend mode (healthy, still rising,
stalled, noise-dominated), which every analysed run gets exactly one of.
"""

from __future__ import annotations

import math

import numpy as np

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.diagnose._signals import DEGENERATE_FRACTION, concentration, degeneracy, hacking, success_rate
from gspo_dynamics.diagnose._trend import MIN_WINDOW, change, instability_verdict, trend_verdict
from gspo_dynamics.diagnose._verdict import CAUSE_MODES, REPORT_CONFIDENCE, TOO_SHORT, Diagnosis, Verdict
from gspo_dynamics.fit import check_reward_range, fit_trajectory, implications
from gspo_dynamics.logs import MIN_ANALYSIS_POINTS, RunLog
from gspo_dynamics.theory.hyperparams import Hyperparams

KL_START_HIGH = 0.1  # nats; the policy starts as the reference, so its KL is ~0 at the first steps
DERIVED_DISCOUNT = 0.9  # a verdict explained by another is ranked this fraction of the other's confidence
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
    steps = runlog.steps
    reward = runlog["reward"]
    if runlog.logging_interval and runlog.logging_interval > 1:
        notes.append(f"each row averages {runlog.logging_interval} optimizer steps; times are in optimizer steps")
    not_checked: list[str] = []
    try:
        fit = fit_trajectory(steps, reward)
        imp = implications(fit, hparams, reward_range=reward_range)
    except ConfigError as exc:
        fit = imp = None
        notes.append(f"the closed-form fit failed: {exc}")
    if imp is not None:
        notes += [n for n in imp.notes]
    trend = change(steps, reward)
    group_size = hparams.group_size if hparams is not None else None
    verdicts: list[Verdict] = [trend_verdict(steps, reward, fit, imp, trend, _spread(runlog), group_size)]
    if fit is not None and verdicts[0].mode in ("noise_dominated", "stalled"):
        _sampling_noise_evidence(verdicts[0], fit, runlog, hparams)
    if fit is not None:
        v = instability_verdict(steps, reward, fit, imp, hparams, trend, notes)
        if v is not None:
            verdicts.append(v)
            if v.confidence < REPORT_CONFIDENCE:
                notes.append(f"weak signs of dynamical instability (confidence {v.confidence:.2f}, below the "
                             f"{REPORT_CONFIDENCE} reporting level): " + "; ".join(
                                 f"{e['signal']} = {e['value']:.3g}" for e in v.evidence if isinstance(e["value"], float)))
    else:
        not_checked.append("dynamical instability: the closed-form fit failed")
    theory: dict = {}
    for check in (lambda: degeneracy(runlog, hparams, theory), lambda: concentration(runlog, hparams),
                  lambda: hacking(runlog, trend, notes)):
        v, why = check()
        if v is not None:
            verdicts.append(v)
        if why:
            not_checked.append(why)
    _attribute_degeneracy(verdicts, runlog)
    _reference_note(runlog, notes)
    if hparams is None:
        not_checked.append("refresh interval vs its critical value: no hyperparameters given (--lr, -T, ... or --config)")
    verdicts = [v for v in verdicts if v.mode not in CAUSE_MODES or v.confidence >= REPORT_CONFIDENCE]
    verdicts.sort(key=lambda v: -v.confidence)
    causes = [v for v in verdicts if v.mode in CAUSE_MODES]
    primary = causes[0].mode if causes else next(v.mode for v in verdicts if v.mode not in CAUSE_MODES)
    return Diagnosis(primary, verdicts, fit, imp, summary, not_checked=not_checked, notes=notes, hparams=hparams,
                     theory=theory, log=runlog)


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
    # "started below": over the early window, or over the first MIN_WINDOW rows (a divergence within
    # the first refresh fills most of the early window with the zero-std groups it causes)
    _, frac = log.valid("frac_zero_std")
    early = min(change(log.steps, log["frac_zero_std"]).get("early", math.nan), float(np.mean(frac[:MIN_WINDOW])))
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
