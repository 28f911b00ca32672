"""One-row spikes against the running median: the gradient norm, the KL to the reference, the old/new
policy KL and the clip fraction.

Rule (one for all four): row i of a series x is a spike when, with m_i the median of the WINDOW finite
rows before it,

    x_i >= MULTIPLE * m_i    and    x_i - m_i >= JUMP    and    x_i >= STEP_MULTIPLE * x_(i-1),

(the second keeps a jump from 0.001 to 0.01 nats from counting; for the gradient norm, whose scale is the
model's, JUMP = 0 and m_i > 0 is required instead, and m_i is the median of the window's rows that moved the policy:
a step whose groups are all flat has no gradient, and rows of such steps between moving ones are no baseline; the third keeps a steady climb out: a KL growing from 0 as the
policy leaves the reference passes 10x the median of its earlier rows while rising a few percent a row). Rows before the WINDOW-th have no baseline and are
never spikes. The multiple reported is x_i / m_i.

Severity of a gradient-norm or KL spike: what the run did after it. With r the reward's rows, a the mean of the
AFTER_ROWS rows logged after the spike's step and b the mean of as many (up to AFTER_ROWS) before it, and sigma the
reward's row scatter (`fit.row_scatter`: std(r_{i+1} - r_i) / sqrt 2),

    z = (a - b) / (sigma sqrt(1 / n_a + 1 / n_b)),

a spike is a warning where z < -FALL_Z (the reward fell after it: under row noise alone, a one-sided 2.3% per
spike) or fewer than AFTER_ROWS reward rows follow it (too soon to tell: a live run's last rows); a note where every
spike was followed by a reward that did not fall, one batch the run absorbed.
"""

from __future__ import annotations

import math

import numpy as np

from gspo_dynamics._keys import GRAD_CLIP_KEYS
from gspo_dynamics.diagnose._finding import NOTE, WARNING, Finding
from gspo_dynamics.diagnose._verdict import evidence
from gspo_dynamics.fit import row_scatter
from gspo_dynamics.logs import RunLog

SPIKE_WINDOW = 20  # rows before a row whose median is its baseline (as `kl_spikes`)
SPIKE_MULTIPLE = 10.0  # a spike is at least 10x its baseline: an order of magnitude, not noise of a heavy tail
MOVED_SHARE = 1e-3  # a step whose gradient norm is below this share of a typical one (`moved_rows`, the spike's
# baseline) or of the largest (the clip advised: a run flat but for its spike advises none) moved nothing
STEP_MULTIPLE = 2.0  # ... and at least doubles from the row before it: a jump, not a climb
# `kl_spikes`: the thresholds were set after reading the shared real logs, where the two spikes their INDEX names
# read 23x and 15x, and no other row passes 7x (a row at 0.005 nats) or 2.1x
KL_SPIKE_RATIO = SPIKE_MULTIPLE  # a row's KL at least this times the median of the rows before ...
KL_SPIKE_JUMP = 0.1  # ... and this many nats above it (a jump from 0.001 to 0.01 is no spike)
KL_SPIKE_WINDOW = SPIKE_WINDOW
KL_OLD_NEW_JUMP = 0.01  # nats: verl's actor/ppo_kl sits at 1e-4..1e-3 per update; 0.01 is a policy that moved far
CLIP_FRAC_JUMP = 0.05  # five points of tokens clipped more than the baseline: a batch the ratio left the band on
AFTER_ROWS = SPIKE_WINDOW // 2  # reward rows after a spike (and before it) whose means tell whether the run absorbed it
FALL_Z = 2.0  # the reward fell after a spike: its mean after below the mean before by this many standard errors


def moved_rows(norms: np.ndarray) -> np.ndarray:
    """(N,) bool: the steps whose gradient norm moved the policy, at least MOVED_SHARE of the norms' 90th percentile
    (a typical moving step's, whatever a few spikes or many flat steps do to the extremes and the median)."""
    return norms >= MOVED_SHARE * np.percentile(norms, 90)


def spike_rows(values: np.ndarray, multiple: float = SPIKE_MULTIPLE, jump: float = 0.0,
               window: int = SPIKE_WINDOW, moved_only: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(indices of the spikes in `values`, their baselines): the rows i >= window with x_i >= multiple m_i,
    x_i - m_i >= jump and x_i >= STEP_MULTIPLE x_(i-1), m_i the median of the `window` values before; with jump = 0
    also m_i > 0. `moved_only` (the gradient norm): m_i is the median of the window's rows that moved the policy
    (x >= MOVED_SHARE x the series' 90th percentile; a step whose groups are all flat has no policy gradient), else,
    where fewer than half of them moved, the median of every row that moved: a row of steps that moved between flat
    ones is measured against moving steps, not against the zeros, nor against two or three of them.
    values: (N,) finite."""
    if values.size <= window:
        return np.zeros(0, np.int64), np.zeros(0)
    windows = np.lib.stride_tricks.sliding_window_view(values, window)[:-1]  # (N - window, window)
    if moved_only:
        moved = moved_rows(values)  # (N,)
        in_window = np.lib.stride_tricks.sliding_window_view(moved, window)[:-1]
        enough = in_window.sum(axis=1) >= window // 2
        masked = np.where(in_window[enough], windows[enough], np.nan)  # the windows with enough moved rows
        before = np.full(windows.shape[0], float(np.median(values[moved])))  # (N - window,)
        before[enough] = np.nanmedian(masked, axis=1) if masked.size else before[enough]
    else:
        before = np.median(windows, axis=1)  # (N - window,)
    x, previous = values[window:], values[window - 1:-1]  # (N - window,) each
    hit = (x >= multiple * before) & (x - before >= jump) & (x >= STEP_MULTIPLE * previous)
    if jump <= 0:
        hit &= before > 0
    rows = np.flatnonzero(hit)
    return window + rows, before[rows]


def kl_spikes(log: RunLog) -> list[dict]:
    """The rows whose KL to the reference jumps to at least KL_SPIKE_RATIO times the median of the KL_SPIKE_WINDOW
    rows before and by at least KL_SPIKE_JUMP nats, each {"step", "kl", "before", "reward_change"} (the reward's mean
    over the KL_SPIKE_WINDOW / 2 rows after minus over as many before; nan where one side has none). The thresholds
    were set after reading the shared real logs, where the two spikes their INDEX names read 23x and 15x, and no
    other row passes 7x (a row at 0.005 nats) or 2.1x."""
    if "kl_ref" not in log or log.n_points("kl_ref") <= KL_SPIKE_WINDOW:
        return []
    steps, kl = log.valid("kl_ref")
    reward = np.interp(steps, *log.valid("reward")) if log.n_points("reward") else np.full(kl.shape, np.nan)
    rows, before = spike_rows(kl, KL_SPIKE_RATIO, KL_SPIKE_JUMP, KL_SPIKE_WINDOW)
    half, out = KL_SPIKE_WINDOW // 2, []
    for i, base in zip(rows, before):
        after = reward[i + 1:i + 1 + half]
        change = float(np.mean(after) - np.mean(reward[i - half:i])) if len(after) else math.nan
        out.append({"step": int(steps[i]), "kl": float(kl[i]), "before": float(base), "reward_change": change})
    return out


def after_spike(log: RunLog, step: float) -> tuple[float, float]:
    """(a - b, z) of the module's severity rule for a spike at `step`: the reward's mean over the AFTER_ROWS rows
    logged after it minus over as many before it, and that change in standard errors; z = nan where fewer than
    AFTER_ROWS rows follow (too soon to tell), none precede, or the reward's rows do not scatter."""
    if not log.n_points("reward"):
        return math.nan, math.nan
    steps, reward = log.valid("reward")
    i = int(np.searchsorted(steps, step, side="right"))  # the first reward row after the spike's step
    after, before = reward[i:i + AFTER_ROWS], reward[max(0, i - AFTER_ROWS):i]
    if after.size == 0 or before.size == 0:
        return math.nan, math.nan
    change, sigma = float(np.mean(after) - np.mean(before)), row_scatter(reward)
    if after.size < AFTER_ROWS or sigma <= 0:
        return change, math.nan
    return change, change / (sigma * math.sqrt(1 / after.size + 1 / before.size))


def spike_severity(log: RunLog, steps) -> tuple[str, str]:
    """(severity, the clause that says why) for spikes at `steps` (module rule): a warning where the reward fell
    after one (the first such) or one is too near the log's end to tell, else a note."""
    moves = [(s, *after_spike(log, s)) for s in steps]
    fell = next(((s, c, z) for s, c, z in moves if z < -FALL_Z), None)
    if fell is not None:
        return WARNING, (f"; the reward fell by {-fell[1]:.3g} over the {AFTER_ROWS} rows after step {fell[0]:g} "
                         f"(z = {fell[2]:.2g})")
    soon = next((s for s, _, z in moves if math.isnan(z)), None)
    if soon is not None:
        return WARNING, (f"; the one at step {soon:g} has fewer than {AFTER_ROWS} reward rows after it (the log's end): "
                         "too soon to tell whether the reward falls after it")
    if len(moves) > 1:
        return NOTE, f"; the reward did not fall past its row noise in the {AFTER_ROWS} rows after any of them"
    _, change, z = moves[0]
    return NOTE, (f"; the reward's {AFTER_ROWS} rows after it moved {change:+.3g} from the {AFTER_ROWS} before, within "
                  f"its row noise (z = {z:.2g}; a fall is z < {-FALL_Z:g})")


def _spikes(log: RunLog, name: str, jump: float) -> list[dict]:
    """{"step", "value", "before", "multiple"} per spike of one series (`spike_rows`)."""
    if name not in log or log.n_points(name) <= SPIKE_WINDOW:
        return []
    steps, x = log.valid(name)
    rows, before = spike_rows(x, SPIKE_MULTIPLE, jump, moved_only=name == "grad_norm")
    return [{"step": int(steps[i]), "value": float(x[i]), "before": float(b),
             "multiple": float(x[i] / b) if b > 0 else math.inf} for i, b in zip(rows, before)]


def _top_evidence(signal: str, spikes: list[dict], threshold: float, **extra) -> dict:
    top = max(spikes, key=lambda s: s["multiple"])
    return evidence(signal, top["multiple"], (top["step"], top["step"]), threshold=threshold, value_at_step=top["value"],
                    median_before=top["before"], rows=len(spikes), **extra)


def _lr_text(hparams) -> str:
    return f"{hparams.lr / 2:g} (half of {hparams.lr:g})" if hparams is not None else "half its value"


def grad_norm_spike(log: RunLog, hparams=None) -> Finding | None:
    """The gradient norm against its running median (module rule, JUMP = 0): one row at SPIKE_MULTIPLE times the
    norm of the rows before is a batch whose update the clip alone bounds."""
    spikes = _spikes(log, "grad_norm", 0.0)
    if not spikes:
        return None
    top = max(spikes, key=lambda s: s["multiple"])
    at, norms = log.valid("grad_norm")
    # the typical norm of the steps that moved the policy, the spikes aside (a norm past MOVED_SHARE of the largest):
    # a step whose every group is flat has no gradient, and a median of those zeros would advise max_grad_norm 0,
    # which turns the clip off in TRL and verl
    calm = norms[~np.isin(at, [s["step"] for s in spikes])]
    moved = calm[calm > MOVED_SHARE * norms.max()]
    more = f" ({len(spikes)} rows past {SPIKE_MULTIPLE:g}x)" if len(spikes) > 1 else ""
    severity, after = spike_severity(log, [s["step"] for s in spikes])
    summary = (f"the gradient norm spiked to {top['multiple']:.3g}x its median of the {SPIKE_WINDOW} rows before at "
               f"step {top['step']}: {top['value']:.3g} against {top['before']:.3g}{more}{after}")
    advice = []
    if moved.size:
        typical = float(np.median(moved))
        clip = f"{2 * typical:.2g}"
        advice.append(f"clip the gradient norm near twice its typical value ({typical:.3g}): TRL max_grad_norm: {clip} / "
                      f"verl actor_rollout_ref.actor.grad_clip: {clip}")
    advice.append(f"if spikes recur, lower the learning rate to {_lr_text(hparams)} (TRL learning_rate / verl "
                  "actor_rollout_ref.actor.optim.lr), and look at the batch of the spike (an outlier prompt, a long completion)")
    return Finding("grad_norm_spike", severity, summary,
                   [_top_evidence("gradient norm / median of the rows before", spikes, SPIKE_MULTIPLE)], advice)


def kl_spike(log: RunLog, hparams=None) -> Finding | None:
    """`kl_spikes` as a finding: the largest jump (in nats above its baseline), with the reward's move around it."""
    spikes = kl_spikes(log)
    if not spikes:
        return None
    top = max(spikes, key=lambda s: s["kl"] - s["before"])
    severity, after = spike_severity(log, [s["step"] for s in spikes])
    more = f" ({len(spikes)} such rows)" if len(spikes) > 1 else ""
    summary = (f"the KL to the reference spiked at step {top['step']}: {top['kl']:.3g} nats against a median "
               f"{top['before']:.3g} over the {KL_SPIKE_WINDOW} rows before{more}{after}")
    ev = evidence("KL to the reference / median of the rows before", top["kl"] / top["before"] if top["before"] > 0
                  else math.inf, (top["step"], top["step"]), threshold=KL_SPIKE_RATIO, kl=top["kl"],
                  median_before=top["before"], jump_threshold=KL_SPIKE_JUMP, rows=len(spikes),
                  reward_change=top["reward_change"])
    advice = ["a one-row jump is a batch the policy moved far on (an outlier prompt, a long completion, a large step): "
              f"check that batch, and the gradient-norm clip ({GRAD_CLIP_KEYS}: 1.0)",
              f"if spikes recur, lower the learning rate to {_lr_text(hparams)}"]
    return Finding("kl_spike", severity, summary, [ev], advice)


def ratio_spike(log: RunLog, hparams=None) -> Finding | None:
    """The old/new policy KL (verl actor/ppo_kl; KL_OLD_NEW_JUMP) and the clip fraction (CLIP_FRAC_JUMP) against
    their running medians: an update that moved the policy an order of magnitude further than the ones before."""
    found = {name: _spikes(log, name, jump) for name, jump in (("kl_old_new", KL_OLD_NEW_JUMP),
                                                                ("clip_frac", CLIP_FRAC_JUMP))}
    found = {name: s for name, s in found.items() if s}
    if not found:
        return None
    what = {"kl_old_new": "the old/new policy KL", "clip_frac": "the clip fraction"}
    parts, ev = [], []
    for name, spikes in found.items():
        top = max(spikes, key=lambda s: s["value"] - s["before"])
        parts.append(f"{what[name]} jumped to {top['value']:.3g} at step {top['step']} against a median {top['before']:.3g}"
                     + (f" ({len(spikes)} such rows)" if len(spikes) > 1 else ""))
        ev.append(_top_evidence(f"{what[name]} / median of the rows before", spikes, SPIKE_MULTIPLE,
                                jump_threshold=KL_OLD_NEW_JUMP if name == "kl_old_new" else CLIP_FRAC_JUMP))
    advice = [f"one update moved the policy far from the one that sampled: lower the learning rate to {_lr_text(hparams)}, "
              "or take fewer updates per rollout (TRL num_iterations: 1, steps_per_generation: 1 / verl "
              "actor_rollout_ref.actor.ppo_epochs: 1, a larger actor_rollout_ref.actor.ppo_mini_batch_size)",
              f"check the gradient-norm clip ({GRAD_CLIP_KEYS}: 1.0)"]
    return Finding("ratio_spike", "warning", "; ".join(parts), ev, advice)
