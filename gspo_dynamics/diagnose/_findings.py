"""`findings(log, hparams)`: problems that a run's logged metrics show directly, each with its fix in TRL's and
verl's keys. Unlike the verdicts (which read the reward curve's dynamics), each finding is one rule on the logged
series, stated with its thresholds in its function's docstring:

  non_finite                  a NaN / inf in any training series, from its first step (invalidates)
  train_inference_mismatch    sampler vs trainer log-probs: the sequence weight leaves the clip band (`_mismatch`)
  grad_norm_spike, kl_spike,  one row at SPIKE_MULTIPLE times the running median of the rows before (`_spikes`)
  ratio_spike
  clip_zero_on_policy         a clip fraction of 0 on every row of an on-policy run: expected, not a bug
  reward_function_divergence  one reward function rises while another does not
  truncation                  most completions cut at the length cap late in the run (invalidates)
  length_growth               completions grew or ran into the cap while the reward did not move (`_length_growth`)
  length_collapse             the mean completion length fell below 1 / LENGTH_SHRINK of its early value, significantly
                              (a warning while the reward did not rise; a note beside a significant rise)
"""

from __future__ import annotations

import numpy as np

from gspo_dynamics._keys import GRAD_CLIP_KEYS, MAX_LENGTH_KEYS
from gspo_dynamics.diagnose._finding import FINDINGS, NOTE, SEVERITIES, Finding, order
from gspo_dynamics.diagnose._instability import MIN_NON_FINITE
from gspo_dynamics.diagnose._length_growth import length_growth
from gspo_dynamics.diagnose._reference import reference_not_start
from gspo_dynamics.diagnose._mismatch import train_inference_mismatch
from gspo_dynamics.diagnose._spikes import grad_norm_spike, kl_spike, kl_spikes, ratio_spike
from gspo_dynamics.diagnose._trend_stats import MIN_WINDOW, Z_TREND, change, window
from gspo_dynamics.fit import (  # LENGTH_SHRINK: `_hacking`
    LENGTH_SHRINK, TRUNCATION_HIGH, TRUNCATION_SOME, late_truncation, shrank,
)
from gspo_dynamics.diagnose._verdict import evidence
from gspo_dynamics.logs import MIN_ANALYSIS_POINTS, STANDARD_NAMES, RunLog
from gspo_dynamics.theory.hyperparams import Hyperparams

__all__ = ["FINDINGS", "SEVERITIES", "Finding", "findings", "kl_spikes"]

# non_finite: a NaN in the series is read as a logged NaN (not a missing value) where a row-mate has a value:
MATE_COVER = 0.95  # a row-mate has a value on at least 95% of the rows where the series is finite ...
SAME_CADENCE = 0.8  # ... and the series is finite on 80% of the row-mate's rows while it is logged (same cadence)
MIN_MATE_ROWS = 5  # fewer finite rows cannot tell a cadence
# clip_zero_on_policy
CLIP_ZERO = 1e-6  # a clip fraction this small on every row is zero (float noise of a mean of zeros)
KL_ON_POLICY = 1e-4  # nats: an old/new KL this small on every row is the noise of recomputed log-probs (verl
# actor/ppo_kl reads 1e-5 on an on-policy real run, terrense__qwen3-8b-grpo-dapo-lab in ../shared/data/real_logs)
# reward_function_divergence
Z_RISE = Z_TREND  # a reward function rose: Welch z late - early >= 3 (`_trend`)
# another did not: z <= 1 (a one-sigma rise is no evidence of one; one paying row among zeros, 0 -> 0.001 beside
# 0 -> 0.62, has a Welch z of exactly 1: the sample sd of one x among n zeros is x / sqrt(n))
Z_NOT_RISING = 1.0
Z_EXACT = 1e-9  # the float error of that exact 1
SATURATED = 0.95  # ... unless it sits at >= 95% of its largest row (> 0): at its ceiling, not lagging
# one function (or component) carries the gain where its rise is over 90% of the rising ones' together; below that
# the gain is spread over several, which an exploit of one does not give (`_hacking` reads the same share)
DOMINANT_SHARE = 0.9
# truncation: fit.late_truncation's TRUNCATION_HIGH
# length_collapse
# (`_hacking.LENGTH_BLOWUP_RATIO`)


def findings(log: RunLog, hparams: Hyperparams | None = None) -> list[Finding]:
    """Every finding of FINDINGS that the log shows, most severe first (then in FINDINGS order). A truncation warning
    (a share under TRUNCATION_HIGH) is left out where `length_growth` says the share rose while the reward stood
    still: one finding says it, with the advice that fits it."""
    checks = (non_finite, train_inference_mismatch, grad_norm_spike, kl_spike, ratio_spike, clip_zero_on_policy,
              reward_function_divergence, truncation, length_growth, length_collapse, reference_not_start)
    found = [f for f in (check(log, hparams) for check in checks) if f is not None]
    rose = any(f.name == "length_growth" and any(e["signal"] == "truncation rate rise" for e in f.evidence)
               for f in found)
    return order([f for f in found if not (rose and f.name == "truncation" and f.severity == "warning")])


# ---- non_finite -------------------------------------------------------------------------------------------


def _checked(log: RunLog) -> list[str]:
    """The training series: the canonical names and reward functions (not eval/, not keys nobody named)."""
    return [n for n in log.names if n in STANDARD_NAMES or n.startswith("reward/")]


def _mates(log: RunLog, name: str, finite: np.ndarray) -> np.ndarray:
    """Rows where a row-mate of `name` (a training series, `_checked`: MATE_COVER, SAME_CADENCE) has a value: (N,)
    bool."""
    first, last = np.flatnonzero(finite)[[0, -1]]
    rows = np.zeros(finite.shape, bool)
    for other in _checked(log):  # training series only: an eval row is off the training rows' grid
        has = np.isfinite(log[other])
        if other == name or not has.any():
            continue
        span = has[first:last + 1]
        if (has & finite).sum() >= MATE_COVER * finite.sum() and span.any() and \
                (span & finite[first:last + 1]).sum() >= SAME_CADENCE * span.sum():
            rows |= has
    rows[:first] = False  # before the series' first value it was not logged yet
    return rows


def non_finite_rows(log: RunLog, name: str) -> np.ndarray:
    """(N,) bool, the rows where `name` was logged non-finite. A log read from a file says which
    (`RunLog.logged_non_finite`: a NaN or inf as written, verl's file logger's null; a missing value is not one).
    A RunLog built without that record: +-inf; NaN where a row-mate has a value (`_mates`); the trailing run of
    `RunLog.diverged` (reward, loss)."""
    x = log[name]
    if name in log.logged_non_finite:
        return log.logged_non_finite[name] | np.isinf(x)
    bad = np.isinf(x)
    finite = np.isfinite(x)
    if finite.sum() >= MIN_MATE_ROWS:
        bad |= np.isnan(x) & _mates(log, name, finite)
    if name in log.diverged:
        bad |= np.isnan(x) & (log.steps >= log.diverged[name][0])
    return bad


def non_finite(log: RunLog, hparams=None) -> Finding | None:
    """The first step where any training series (`_checked`) is NaN or infinite (`non_finite_rows`), which series,
    how many rows; a run that recovers counts too (one NaN gradient poisons the weights it updates). Where only
    reward series are, each finite again after its last such row (`_reward_rows_only`), the updates were numbers as
    far as the log shows: a warning about the reward function, not a divergence."""
    bad = {name: rows for name in _checked(log) if (rows := non_finite_rows(log, name)).any()}
    if not bad:
        return None
    firsts = {name: int(log.steps[np.argmax(rows)]) for name, rows in bad.items()}
    names = sorted(bad, key=lambda n: (firsts[n], n))
    first = firsts[names[0]]
    ev = [evidence(f"{name} NaN or infinite (rows)", int(bad[name].sum()), (firsts[name], int(log.steps[bad[name]][-1])),
                   threshold=1, first_step=firsts[name], recovered=bool(np.isfinite(log[name][-1])))
          for name in names]
    if _reward_rows_only(log, bad):
        return _reward_not_finite(log, bad, names, ev)
    others = "".join(f", {n} from step {firsts[n]}" for n in names[1:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
    summary = (f"{names[0]} is NaN or infinite from step {first} ({int(bad[names[0]].sum())} rows{others}): the "
               "updates from that step on are not numbers; the numbers after it cannot be trusted")
    lr = f" (now {hparams.lr:g}: try {hparams.lr / 2:g})" if hparams is not None else ""
    advice = [f"restart from a checkpoint before step {first} with a lower learning rate{lr} (TRL learning_rate / verl "
              "actor_rollout_ref.actor.optim.lr)",
              f"clip the gradient norm ({GRAD_CLIP_KEYS}: 1.0), train in bf16 rather than fp16 (TRL bf16: true, fp16: "
              "false), and look at the batch of that step (an empty or very long completion, a reward of inf)"]
    return Finding("non_finite", "invalidates", summary, ev, advice)


UPDATE_READINGS = ("grad_norm", "loss")  # an update's own numbers: finite, the update was one
GRAD_JUMP = 10.0  # ... and a gradient norm within this factor of its median before: no overflow under way


def diverged_updates(log: RunLog) -> dict[str, tuple[int, int]]:
    """`RunLog.diverged` without the reward series whose NaN rows the update readings show finite
    (`updates_finite`): a reward function that stopped returning numbers is no numerical divergence of the run."""
    return {name: (step, count) for name, (step, count) in log.diverged.items()
            if not (name == "reward" or name.startswith("reward/"))
            or updates_finite(log, (log.steps >= step) & ~np.isfinite(log[name])) is None}


def updates_finite(log: RunLog, rows: np.ndarray) -> str | None:
    """The update readings (UPDATE_READINGS) that show the updates on `rows` were numbers, by name ("grad norm and
    loss"), else None: every one the log holds is finite wherever logged on those rows (no NaN or inf written there,
    `non_finite_rows`), at least one is logged on MIN_NON_FINITE of them, and the gradient norm there stays within
    GRAD_JUMP x its median before them. A reward NaN on such rows came from the reward function or its logging, not
    from a diverged update."""
    held = [name for name in UPDATE_READINGS if name in log]
    if not held or any(non_finite_rows(log, name)[rows].any() for name in held):
        return None
    if not any(np.isfinite(log[name][rows]).sum() >= MIN_NON_FINITE for name in held):
        return None
    if "grad_norm" in log:
        before = log["grad_norm"][: int(np.argmax(rows))] if rows.any() else np.array([])
        before, after = before[np.isfinite(before)], log["grad_norm"][rows]
        after = after[np.isfinite(after)]
        if before.size and after.size and np.max(np.abs(after)) > GRAD_JUMP * np.median(np.abs(before)):
            return None
    return " and ".join(name.replace("_", " ") for name in held if np.isfinite(log[name][rows]).any())


def _reward_rows_only(log: RunLog, bad: dict[str, np.ndarray]) -> bool:
    """Whether only reward series (`reward`, `reward/<fn>`) are non-finite, each on rows with finite ones after them
    (its last row finite, and no update reading, the loss or the gradient norm, non-finite), or on rows where an
    update reading is logged finite (`updates_finite`: the rewards stopped being numbers, the updates did not)."""
    if not all(name == "reward" or name.startswith("reward/") for name in bad):
        return False
    return all(np.isfinite(log[name][np.flatnonzero(rows)[-1] + 1:]).any() for name, rows in bad.items()) or \
        updates_finite(log, np.logical_or.reduce(list(bad.values()))) is not None


def _reward_not_finite(log: RunLog, bad: dict[str, np.ndarray], names: list[str], ev: list[dict]) -> Finding:
    """The warning for reward rows that are not numbers between finite ones (`_reward_rows_only`)."""
    rows = bad[names[0]]
    at = log.steps[rows]
    where = f"at step {int(at[0])} only" if at.size == 1 else f"on {at.size} rows, steps {int(at[0])}-{int(at[-1])}"
    others = f" (also {', '.join(names[1:4])})" if len(names) > 1 else ""
    reading = updates_finite(log, rows)
    beside = (f"while the {reading} {'are numbers' if ' and ' in reading else 'is a number'} on those rows"
              if reading is not None else "with finite rows after it")
    summary = (f"{names[0]} is not a number {where}{others}, {beside}: a reward function's value (or a logging "
               "error), not a diverged update; the analysis reads the rows without it")
    advice = ["look at the reward function on that step's batch (a division by zero, an empty completion, a log of "
              "0): a NaN or inf reward makes its group's advantages NaN; return a finite value for such a completion"]
    return Finding("non_finite", "warning", summary, ev, advice)


# ---- clip_zero_on_policy ----------------------------------------------------------------------------------


def _on_policy_reason(log: RunLog, clip: np.ndarray, hparams) -> str | None:
    if hparams is not None:
        return "the refresh interval is 1 (one update per generation)" if hparams.refresh_interval == 1 else None
    if log.n_points("kl_old_new") >= MIN_ANALYSIS_POINTS:
        kl = log.valid("kl_old_new")[1]
        return f"the old/new policy KL is at most {np.max(np.abs(kl)):.1g} on every row" \
            if np.max(np.abs(kl)) <= KL_ON_POLICY else None
    return "it is exactly 0 on every row, which only a ratio of 1 at every token gives" if np.all(clip == 0) else None


def clip_zero_on_policy(log: RunLog, hparams=None) -> Finding | None:
    """A clip fraction at most CLIP_ZERO on every row (MIN_ANALYSIS_POINTS rows at least) of an on-policy run: T = 1
    from the hyperparameters, or else an old/new policy KL at most KL_ON_POLICY on every row, or else (no KL
    logged) a clip fraction exactly 0 on every row. With one update per generation the ratio pi_theta / pi_old is
    1 at every token, so no clip can act: expected, not a bug."""
    if log.n_points("clip_frac") < MIN_ANALYSIS_POINTS:
        return None
    steps, clip = log.valid("clip_frac")
    if np.max(np.abs(clip)) > CLIP_ZERO:
        return None
    why = _on_policy_reason(log, clip, hparams)
    if why is None:
        return None
    summary = (f"the clip fraction is 0 on all {clip.size} rows because the run is on-policy ({why}): the ratio is 1 "
               "at every token, so the clip cannot act; not a bug")
    advice = ["nothing to fix; the clip acts only when a rollout feeds several updates: TRL num_iterations > 1 or "
              "steps_per_generation > gradient_accumulation_steps; verl actor_rollout_ref.actor.ppo_epochs > 1 or "
              "ppo_mini_batch_size < data.train_batch_size"]
    return Finding("clip_zero_on_policy", NOTE, summary,
                   [evidence("largest clip fraction", float(np.max(np.abs(clip))), (steps[0], steps[-1]),
                             threshold=CLIP_ZERO, rows=int(clip.size))], advice)


# ---- reward_function_divergence ---------------------------------------------------------------------------


def _lagging(log: RunLog, name: str, late: float) -> bool:
    """Below its ceiling (late mean under SATURATED x its largest row, or a largest row <= 0), and not constant."""
    x = log.valid(name)[1]
    top = float(np.max(x))
    return float(np.min(x)) < top and not (top > 0 and late >= SATURATED * top)


def reward_function_divergence(log: RunLog, hparams=None) -> Finding | None:
    """TRL's per-function rewards (`reward/<fn>`, 2 MIN_WINDOW rows at least): one rises (Welch z late - early >=
    Z_RISE, `_trend_stats.change`) while another does not (z <= Z_NOT_RISING; beside a lone riser, also short of
    Z_RISE with a rise under 1 - DOMINANT_SHARE of the riser's: two paying rows among zeros, z 1.44) and is not at its
    ceiling (late mean below SATURATED x its largest row, or a largest row <= 0): the gain comes from one function
    while the other stays or falls, the pattern of a format reward learned without the task. A function with the same value on
    every row is left out: it never told completions apart (never met, or always met), so it cannot lag."""
    names = [n for n in log.names if n.startswith("reward/") and log.n_points(n) >= 2 * MIN_WINDOW]
    gains = {n: g for n in names if (g := change(log.steps, log[n]))}
    risers = sorted((n for n, g in gains.items() if g["z"] >= Z_RISE), key=lambda n: -gains[n]["z"])
    if not risers:
        return None
    top = max(gains[risers[0]]["diff"], 0.0) if len(risers) == 1 else 0.0  # a share only beside a lone riser
    laggards = sorted((n for n, g in gains.items() if _lagging(log, n, g["late"]) and (
        g["z"] <= Z_NOT_RISING + Z_EXACT or g["z"] < Z_RISE and 0.0 < top and g["diff"] <= (1.0 - DOMINANT_SHARE) * top)),
        key=lambda n: gains[n]["z"])
    if not laggards:
        return None
    up, down = risers[0], laggards[0]
    g, h = gains[up], gains[down]
    fn_up, fn_down = up.split("/", 1)[1], down.split("/", 1)[1]
    verb = "fell" if h["z"] <= -Z_RISE else "did not rise"
    ev = [evidence(f"{n} change late - early (Welch z)", gains[n]["z"], gains[n]["steps"],
                   threshold=Z_RISE if n == up else Z_NOT_RISING, early=gains[n]["early"], late=gains[n]["late"],
                   marked_at=gains[n]["late_steps"][0]) for n in (up, down)]  # by the late window: apart
    if h["z"] > Z_NOT_RISING + Z_EXACT:  # a rise short of significance, under a tenth of the riser's: by its share
        ev[1] = evidence(f"{down} rise / {up} rise", h["diff"] / top, h["steps"], threshold=1.0 - DOMINANT_SHARE,
                         side="<=", z=h["z"], early=h["early"], late=h["late"], marked_at=h["late_steps"][0])
    rising = sum(max(gains[n]["diff"], 0.0) for n in risers)
    if len(risers) > 1 and not max(g["diff"], 0.0) > DOMINANT_SHARE * rising:  # several learned: no one carrier
        others = ", ".join(n.split("/", 1)[1] for n in risers if n != up)
        return Finding("reward_function_divergence", NOTE, (
            f"reward function {fn_down} {verb} ({h['early']:.3g} -> {h['late']:.3g}, z {h['z']:.1f}) while {len(risers)} "
            f"others rose ({fn_up}, {others}): the gain is spread over them, not one function's"), ev, [
            f"read late completions for what {fn_down} scores: the other functions rose together, so the run learns, "
            f"and {fn_down} is what it gave up"])
    summary = (f"reward function {fn_up} rose {g['early']:.3g} -> {g['late']:.3g} (Welch z {g['z']:.1f}) while {fn_down} "
               f"{verb} ({h['early']:.3g} -> {h['late']:.3g}, z {h['z']:.1f}): the gain is {fn_up}'s alone")
    advice = [f"read completions from the last steps: ones that satisfy {fn_up} without solving the task are the exploit",
              f"re-weight toward {fn_down}: TRL reward_weights (one weight per reward_funcs entry, e.g. 0.1 for {fn_up} "
              f"and 1.0 for {fn_down}) / verl: weight the terms inside the reward function (custom_reward_function.path)",
              f"or cap {fn_up}: give it only to completions that also earn {fn_down}, or at most a tenth of it"]
    return Finding("reward_function_divergence", "warning", summary, ev, advice)


# ---- truncation -------------------------------------------------------------------------------------------


def truncation(log: RunLog, hparams=None) -> Finding | None:
    """More than TRUNCATION_HIGH of the completions cut at the length cap over the late window (`fit.late_truncation`:
    TRL completions/clipped_ratio, verl response_length/clip_ratio): the rewards score unfinished answers; more than
    TRUNCATION_SOME, a warning that a share of them do. Where the lengths bound the share a cap can have cut below it
    (TRL counts every completion without an EOS token, one a stop string ended too), a note that says so instead
    (past TRUNCATION_HIGH; below it such a share is said nowhere). `findings` leaves the warning to `length_growth`
    where the share rose while the reward stood still."""
    t = late_truncation(log)
    if t is not None and t["some"] and not t["share"] > TRUNCATION_HIGH:
        return _some_truncated(t)
    if t is None or t["share"] <= TRUNCATION_HIGH:
        return None
    share, steps, bound = t["share"], t["steps"], t["bound"]
    if not t["cut"]:  # more than the lengths allow: not the cap's cut
        return Finding("truncation", NOTE, (
            f"{log.columns.get('truncation_rate', 'the truncation rate')} reads {share:.0%} late, but the mean "
            f"completion length is {bound:.0%} of the longest: at most that share can have reached a length cap; the "
            "column counts completions that ended without the EOS token (a stop string, a tool call), not truncation"),
            [evidence("share of completions truncated, late window", share, steps, threshold=bound, side="<=",
                      caveat=True, bound_from="mean / longest completion length")], [])
    summary = (f"{share:.0%} of the completions are cut at the length cap late in the run (steps {steps[0]}-"
               f"{steps[1]}; {t['early']:.0%} early): the rewards score unfinished answers")
    return Finding("truncation", "invalidates", summary,
                   [evidence("share of completions truncated, late window", share, steps, threshold=TRUNCATION_HIGH,
                             early=t["early"])], _truncation_advice(t))


def _some_truncated(t: dict) -> Finding:
    """A share past TRUNCATION_SOME but not past TRUNCATION_HIGH cut at the cap: a warning (the verdict stands on the
    rest of the samples; those cut score unfinished answers)."""
    share, steps = t["share"], t["steps"]
    summary = (f"{share:.0%} of the completions are cut at the length cap late in the run (steps {steps[0]}-"
               f"{steps[1]}; {t['early']:.0%} early): their rewards score unfinished answers")
    return Finding("truncation", "warning", summary,
                   [evidence("share of completions truncated, late window", share, steps, threshold=TRUNCATION_SOME,
                             early=t["early"])], _truncation_advice(t))


def _truncation_advice(t: dict) -> list[str]:
    length = t["length"]
    raise_to = f" to about {2 * length:.0f} tokens (twice the late mean length)" if length else " (e.g. double it)"
    return [f"raise the cap{raise_to}: {MAX_LENGTH_KEYS}",
            "or stop truncated completions from training: TRL mask_truncated_completions: true / verl an overlong "
            "penalty (DAPO: reward.reward_manager.name: dapo with reward_kwargs.overlong_buffer_cfg.enable: true; "
            "TRL: trl.rewards.get_soft_overlong_punishment among the reward_funcs)"]


# ---- length_collapse --------------------------------------------------------------------------------------------


def length_collapse(log: RunLog, hparams=None) -> Finding | None:
    """The mean completion length late below 1 / LENGTH_SHRINK of its early value, a significant fall (Welch z <=
    -Z_TREND, `_trend_stats.change`): the policy answers ever shorter. Where the reward rose significantly meanwhile
    it is a note (a verbose start trimmed while the task is learned); otherwise a warning, since a length penalty or a
    reward an empty or short answer earns drives a policy toward empty answers whatever the learning rate, and the
    reward's fall or stall is then read by the verdicts as dynamics."""
    if log.n_points("mean_length") < 2 * MIN_WINDOW:
        return None
    c = shrank(*log.valid("mean_length"), Z_TREND)
    if not c:
        return None
    reward = change(*log.valid("reward")) if log.n_points("reward") >= 2 * MIN_WINDOW else None
    rose, fell = bool(reward) and reward["z"] >= Z_TREND, bool(reward) and reward["z"] <= -Z_TREND
    summary = (f"the completions shrank from {c['early']:.3g} to {c['late']:.3g} tokens on average (steps "
               f"{c['steps'][0]}-{c['steps'][1]})" + (" while the reward rose" if rose else " while the reward fell"
                                                      if fell else ", and the reward did not rise meanwhile"))
    advice = [] if rose else [
        "read completions from the last steps: if they are near-empty, check what the reward gives a short answer (a "
        "length penalty, or a format reward an empty answer earns: TRL reward_funcs / verl "
        "custom_reward_function.path)"]
    return Finding("length_collapse", NOTE if rose else "warning", summary,
                   [evidence("mean completion length late / early", c["late"] / c["early"], c["steps"],
                             threshold=1.0 / LENGTH_SHRINK, side="<", early=c["early"], late=c["late"], z=c["z"],
                             marked_at=c["late_steps"][0])],  # the late window's start: shorter by then
                   advice)
