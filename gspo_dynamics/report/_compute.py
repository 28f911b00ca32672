"""Compute accounting: the share, the hours and the GPU-hours of a run's rollouts that carried no learning signal.

Each logged row i covers d_i optimizer steps (the gap to the row before; the first row the log's median gap) and took

    s_i = tau_i d_i  seconds,  tau_i the row's logged seconds per step (TIME_KEYS: TRL `step_time`, verl
    `timing_s/step` / `perf/time_per_step`); a row without one takes the run's median tau (counted in the notes);
    a log without any takes the user's tau where given (--seconds-per-step).

A share is a weighted mean over rows, weights w_i = s_i where step times are logged (a share of the run's time),
else w_i = d_i (a share of its steps). Hours are the share times sum_i s_i / 3600; GPU-hours those times --gpus;
the cost those times --gpu-hour-rate. Each row's completions split into:

  zero-std groups   z_i = `frac_zero_std`, the share of groups whose G rewards are all equal. Their group-relative
                    advantage A = r - mean(r) is 0 for every completion (divided by std + eps: still 0), so their
                    whole policy-gradient term is 0: exact, whatever the objective (a KL term still acts).
  truncated         t_i = `truncation_rate`, the share of completions cut at the length cap. No signal only where
                    the trainer masks them out of the loss (`masked`: the config sets TRL's
                    mask_truncated_completions); unmasked, they are trained on (their reward scores an unfinished
                    answer: a signal, if a poor one), so they are shown but not counted as without signal, and where
                    the masking is unknown (no config) neither. A truncated completion is the longest there is, so
                    its share of the tokens, and of the compute, is at least its share of the completions.
  after stopping    every completion of a row past the step at which the run stopped learning by diagnose's own
                    reading: healthy saturation's plateau step (the fit's, within 5% of the rise for good), a
                    stalled run's first step (no measurable change over the whole log), or where a fall the run did
                    not climb back from left the peak (dynamical instability's last step at the peak, the one its
                    advice resumes from); none for any other verdict.

The share of a row without signal is u_i = 1 past the stop step, else within the bounds that hold whatever the
overlap of zero-std groups and masked truncated completions (Frechet): max(z_i, t_i) <= u_i <= min(1, z_i + t_i),
t_i = 0 where they are not masked. A row missing z_i or t_i counts 0 for it (a lower bound, said). The total is the range [sum w_i lo_i, sum w_i hi_i] / sum w_i.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from gspo_dynamics.report._entropy_floor import EntropyFloor, entropy_floor

# raw keys of seconds per optimizer step (the readers keep them under their own names), in the order tried
TIME_KEYS: tuple[str, ...] = ("step_time", "timing_s/step", "perf/time_per_step", "time/step", "train/step_time")
GIVEN_TIME = "--seconds-per-step"  # `Accounting.time_key` where the step time is the user's


@dataclass(frozen=True, kw_only=True)
class Waste:
    """One reason a rollout carried no signal."""

    name: str  # "zero-std groups" | "truncated completions" | "steps after the run stopped learning"
    share: float | None  # of the run's weight (time, else steps); None: not logged
    why: str  # where the number comes from, or why it is missing
    counted: bool = True  # in the total without signal (truncated completions: only where masked)


@dataclass(frozen=True, kw_only=True)
class Accounting:
    """A run's compute and the part of it that carried no learning signal (module docstring)."""

    basis: str  # "time" (shares of logged step time) | "steps" (shares of steps)
    time_key: str | None  # the column the step times were read from
    hours: float | None  # wall-clock hours logged (sum of s_i / 3600); None without step times
    gpus: int | None  # as given (--gpus)
    rate: float | None  # $ per GPU-hour, as given (--gpu-hour-rate)
    wastes: tuple[Waste, ...]
    total: tuple[float, float]  # the share without signal, [lower, upper] (Frechet bounds of the overlap)
    stop_step: float | None  # the step the run stopped learning at (diagnose's reading); None: not read
    entropy: EntropyFloor | None  # the entropy floor (None: no entropy logged)
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def given_time(self) -> bool:
        """The step time is the user's (--seconds-per-step), not the log's."""
        return self.time_key == GIVEN_TIME

    @property
    def gpu_hours(self) -> float | None:
        return None if self.hours is None or self.gpus is None else self.hours * self.gpus

    def amount(self, share: float) -> str:
        """A share in the user's units: the GPU-hours (and dollars) where known, else the hours, else nothing."""
        if self.gpu_hours is not None:
            text = f"{share * self.gpu_hours:.3g} GPU-hours"
            return text + (f" = ${share * self.gpu_hours * self.rate:,.2f}" if self.rate is not None else "")
        return f"{share * self.hours:.3g} h of wall-clock" if self.hours is not None else ""

    def total_text(self) -> str:
        """The share without signal: one percentage, or its Frechet range where the bounds differ."""
        lo, hi = self.total
        return f"{lo:.0%}" if f"{lo:.0%}" == f"{hi:.0%}" else f"{lo:.0%}-{hi:.0%}"

    def lines(self) -> list[str]:
        """The answer first (the total without signal), then each reason, the entropy floor and the notes."""
        lo, hi = self.total
        of = "of the run's steps" if self.basis == "steps" else "of the run's time" if self.given_time else \
            "of the run's logged time"
        span = self.total_text()
        amounts = [a for a in (self.amount(lo), self.amount(hi)) if a]
        amount = "" if not amounts else f" ({amounts[0]})" if amounts[0] == amounts[-1] else f" ({amounts[0]} to {amounts[1]})"
        missing = [w.name for w in self.wastes if w.share is None and w.counted]
        least = f"at least {span} {of}{amount} ({' and '.join(missing)} not logged)" if missing else f"{span} {of}{amount}"
        lines = [f"no learning signal: {least}"]
        lines.append(self._total_line())
        for w in self.wastes:
            value = "not logged" if w.share is None else f"{w.share:.1%}" + (f" ({self.amount(w.share)})"
                                                                             if self.amount(w.share) else "")
            lines.append(f"  {w.name}: {value}: {w.why}")
        if self.entropy is not None:
            lines.append(self.entropy.text())
        return lines + [f"note: {n}" for n in self.notes]

    def _total_line(self) -> str:
        if self.hours is None:
            return "compute: no step times logged (TRL step_time, verl timing_s/step): shares are of steps, no hours"
        gpus = f" x {self.gpus} GPU{'s' if self.gpus != 1 else ''} = {self.gpu_hours:.3g} GPU-hours" if self.gpus else \
            " (--gpus N gives GPU-hours)"
        rate = f" = ${self.gpu_hours * self.rate:,.2f} at ${self.rate:g}/GPU-hour" if self.rate is not None and \
            self.gpus is not None else ""
        source = "at --seconds-per-step" if self.given_time else f"logged ({self.time_key!r})"
        return f"compute: {self.hours:.3g} h of wall-clock {source}{gpus}{rate}"


def row_steps(steps: np.ndarray) -> np.ndarray:
    """d_i: optimizer steps each row covers (the gap to the row before; the first row the median gap, at least 1)."""
    steps = np.asarray(steps, float)
    gaps = np.diff(steps)
    first = float(np.median(gaps)) if gaps.size else 1.0
    return np.concatenate(([max(first, 1.0)], gaps))


def row_seconds(log, d: np.ndarray, notes: list[str]) -> tuple[np.ndarray | None, str | None]:
    """(s_i, the key) from the first TIME_KEYS column with a positive value; a missing row takes the median."""
    for key in TIME_KEYS:
        if key not in log:
            continue
        tau = np.asarray(log[key], float)
        ok = np.isfinite(tau) & (tau > 0)
        if not ok.any():
            continue
        if not ok.all():
            notes.append(f"{int((~ok).sum())} of {tau.size} rows have no {key!r}: they took its median, "
                         f"{float(np.median(tau[ok])):.3g} s per step")
            tau = np.where(ok, tau, float(np.median(tau[ok])))
        return tau * d, key
    return None, None


def _share(values: np.ndarray | None, w: np.ndarray) -> float | None:
    """sum w_i v_i / sum w_i over all rows, a missing v_i counted 0; None where no row has one."""
    if values is None or not np.isfinite(values).any():
        return None
    return float(np.sum(w * np.nan_to_num(np.clip(values, 0.0, 1.0), nan=0.0)) / np.sum(w))


def _series(log, name: str, notes: list[str]) -> np.ndarray | None:
    if name not in log:
        return None
    v = np.asarray(log[name], float)
    missing = int((~np.isfinite(v)).sum())
    if missing and np.isfinite(v).any():
        notes.append(f"{missing} of {v.size} rows have no {name}: counted as 0 there (a lower bound)")
    return v


def account(log, diagnosis, *, gpus: int | None = None, rate: float | None = None,
            seconds_per_step: float | None = None, masked: bool | None = None) -> Accounting:
    """The accounting of one run (module docstring): `log` a RunLog, `diagnosis` its `diagnose` result (the stop step
    is read from it, never re-derived), `gpus` and `rate` (dollars per GPU-hour) as the user gave them;
    `seconds_per_step`, the user's tau for a log without step times (a logged time wins); `masked`: whether the
    trainer drops truncated completions from the loss (True: the config says so; False: it does not; None: unknown)."""
    notes: list[str] = []
    d = row_steps(log.steps)
    seconds, key = row_seconds(log, d, notes)
    if seconds is None and seconds_per_step is not None:
        seconds, key = seconds_per_step * d, GIVEN_TIME
    w = seconds if seconds is not None else d
    z, t = _series(log, "frac_zero_std", notes), _series(log, "truncation_rate", notes)
    stop, stop_why = stop_step(diagnosis)
    after = (np.asarray(log.steps, float) > stop) if stop is not None else np.zeros(len(d), bool)
    zz, tt = (np.zeros(len(d)) if v is None else np.nan_to_num(np.clip(v, 0, 1), nan=0.0) for v in (z, t))
    tt = tt if masked else np.zeros(len(d))  # unmasked (or unknown): trained on, a signal of unfinished answers
    lo = np.where(after, 1.0, np.maximum(zz, tt))
    hi = np.where(after, 1.0, np.minimum(1.0, zz + tt))
    total = (float(np.sum(w * lo) / np.sum(w)), float(np.sum(w * hi) / np.sum(w)))
    wastes = (
        Waste(name="zero-std groups", share=_share(z, w),
              why="frac_reward_zero_std: equal rewards in a group give every completion zero advantage (exact)"
              if z is not None else "no zero-std share logged (TRL frac_reward_zero_std)"),
        Waste(name="truncated completions", share=_share(t, w), counted=bool(masked),
              why=_truncation_why(masked) if t is not None else
              "no truncation share logged (TRL completions/clipped_ratio, verl response_length/clip_ratio)"),
        Waste(name="steps after the run stopped learning", share=float(np.sum(w * after) / np.sum(w)), why=stop_why),
    )
    floor = entropy_floor(log.steps, log["entropy"]) if "entropy" in log and log.n_points("entropy") else None
    return Accounting(basis="time" if seconds is not None else "steps", time_key=key,
                      hours=None if seconds is None else float(np.sum(seconds)) / 3600.0, gpus=gpus, rate=rate,
                      wastes=wastes, total=total, stop_step=stop, entropy=floor, notes=tuple(notes))


def _truncation_why(masked: bool | None) -> str:
    """Where the truncated share comes from and whether it counts as without signal (module docstring)."""
    if masked:
        return ("cut at the length cap and masked out of the loss (mask_truncated_completions: true): no signal; a "
                "lower bound on their compute")
    state = ("the config trains on them (TRL mask_truncated_completions: false)" if masked is False else
             "whether the trainer masks them is not known (--config tells)")
    return f"cut at the length cap: {state}, so their rewards score unfinished answers; not counted as without signal"


def stop_step(diagnosis) -> tuple[float | None, str]:
    """(the step the run stopped learning at, why) from diagnose's reading: a sure healthy saturation's plateau
    step where the fit identifies it and the log reached it; a sure stall's first step; else (None, why not)."""
    primary = diagnosis.primary
    if diagnosis.unsure:
        return None, f"diagnose is unsure ({' or '.join(m.replace('_', ' ') for m in diagnosis.unsure)}): not counted"
    imp = diagnosis.implications
    if primary == "healthy_saturation" and imp is not None:
        if "time_to_plateau" in imp.unidentified or not imp.plateau_reached:
            return None, "diagnose reads a plateau, but not the step it came at: not counted"
        est = imp.time_to_plateau
        se = f" +- {est.stderr:.0f}" if est.stderr is not None and math.isfinite(est.stderr) else ""
        return float(est.value), f"past the plateau diagnose fits, reached at step {est.value:.0f}{se} (healthy saturation)"
    if primary == "stalled" and diagnosis.log is not None:
        first = float(diagnosis.log.steps[0])
        return first, "diagnose reads the run as stalled (no measurable change over the log): every step after the first"
    items = diagnosis.verdicts[0].evidence if primary == "dynamical_instability" else []
    fell = next((e for e in items if e.get("holds") and e.get("last_at_peak") is not None), None)  # not climbed back
    if fell is not None:  # a fall the run did not climb back from: learning stopped where the reward left its peak
        step = float(fell["last_at_peak"])
        return step, (f"past step {step:.0f}, the last still at the reward's peak {fell['peak']:.3g}, after which it "
                      "fell and did not climb back (dynamical instability; diagnose's step to resume from)")
    return None, f"diagnose reads no plateau, stall or fall (verdict: {primary.replace('_', ' ')})"
