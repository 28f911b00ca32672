"""A pilot that is no evidence about its config: one whose updates were not finite, one that barely trained, or one
whose completions were mostly cut at the length cap.

    not finite   a training reading (the gradient norm, the loss) logged as NaN or +-inf on at least half of the
                 pilot's rows (INVALID_SHARE): its updates are not finite numbers, so whatever its reward did is not the
                 config's dynamics (a single non-finite row is a mixed-precision step the loss scaler skipped)
    no signal    most of the pilot's steps (more than DEAD_SHARE) with no group carrying a learning signal: every
                 completion of the step scored alike (`logs.flat_rows`: reward_std 0, frac_zero_std 1 or reward_min =
                 reward_max on that row; not a success rate at a bound, which a pilot that fell to 0 shows too: that is
                 the fall rule's), so GRPO's advantages (r - mean) / std are all 0 and the step changed nothing; a
                 pilot that trained on fewer than half its steps bounds no lr
    truncated    most completions cut at the length cap over the pilot's last quarter (`fit.late_truncation`, diagnose's
                 truncation rule, which calls such a run invalid) and over its first quarter too: its rewards score
                 unfinished answers from its start (audit s38: a TRL pilot cut at 512 tokens on every row was called
                 safe, change none); a share that rose as the pilot went is its course, not its premise (a collapse
                 whose answers ran to the cap, public-collapse's Sunshine535 rho 0.3: the fall rule reads it)

Either answers `predict`'s verdict with "unsure" and the reason; `diagnose` on the same log says how to fix it.

A pilot whose completions shrink below half their early length (`length_fall`) vouches for no run either: predict's
verdict is unsure and no end reward is forecast.
"""

from __future__ import annotations

import numpy as np

from gspo_dynamics._keys import MAX_LENGTH_KEYS
from gspo_dynamics.fit import TRUNCATION_HIGH, change, late_truncation, shrank
from gspo_dynamics.logs import RunLog, flat_rows
from gspo_dynamics.predict._pilot_log import pilot_rows

INVALID_SHARE = 0.5  # a training reading non-finite on at least this share of the pilot's rows: not finite updates
DEAD_SHARE = 0.5  # steps without any signal on more than this share of the pilot's rows (most): it barely trained
TRAINING_READINGS = ("grad_norm", "loss")  # finite wherever an update was a number
Z_SHRINK = 3.0  # ... a fall of at least 3 standard errors (Welch's z over quarter windows), diagnose's Z_TREND
CEILING = 0.9  # a reward whose late mean is past this share of its range stands at its ceiling: it cannot rise
# (stated, fitted to no run: the review's counterexample, a pilot holding 0.9 of [0, 1], is what it spares)


def length_fall(log: RunLog, n: int, reward_range: tuple[float, float] | None = None) -> str | None:
    """The pilot's mean completion length over its first n reward points fallen below half its early value,
    significantly (`fit.shrank` at Welch z <= -Z_SHRINK), while the reward did not rise significantly (z <
    Z_SHRINK: a verbose start trimmed as the task is learned is no fall) and does not stand at its ceiling (its late
    mean past CEILING of `reward_range`), said; None otherwise or where not logged. Answers that keep shrinking end
    empty, whatever the lr (audit s37's collapsed verl run: 351 -> 129 tokens over a 12-step pilot that kept its
    reward, 5 tokens and reward 0.03 by step 47), so a pilot showing it vouches for no run: not safe."""
    if "mean_length" not in log:
        return None
    rows = pilot_rows(log, n)
    steps = log.steps[rows].astype(float)
    c = shrank(steps, log["mean_length"][rows], Z_SHRINK)  # diagnose's length collapse, over the pilot
    if not c:
        return None
    reward = change(steps, log["reward"][rows])
    if reward.get("z", 0.0) >= Z_SHRINK:  # a verbose start trimmed while the task is learned (diagnose's note, not its
        return None  # warning): audit s36's textcraft run, 2180 -> 786 tokens, held
    if reward_range is not None and reward and reward["late"] >= reward_range[0] + CEILING * np.ptp(reward_range):
        return None  # at its ceiling the reward cannot rise: a trimmed answer there is no sign of a fall
    return (f"its completions shrank from {c['early']:.3g} to {c['late']:.3g} tokens on average over the pilot (below "
            f"half, z = {c['z']:.2g}), a course that ends in empty answers if it goes on (runs that collapse often show "
            "it first)")


def pilot_invalid(log: RunLog, n: int, group_key: str, masked: bool | None = None) -> str | None:
    """Why the pilot's first n reward points are no evidence about its config (module docstring), or None. `masked`:
    the config already keeps truncated completions out of the loss (`RunSetup.masks_truncated`), so that is not
    advised again."""
    rows = pilot_rows(log, n)
    for name in TRAINING_READINGS:
        mask = log.logged_non_finite.get(name)
        bad = int(mask[rows].sum()) if mask is not None else 0
        if rows.size and bad >= INVALID_SHARE * rows.size:
            return (f"its {name} is NaN or infinite on {bad} of its {rows.size} rows: its updates were not finite "
                    "numbers, so its reward says nothing of this config's dynamics; fix that first (gspo-dynamics "
                    "diagnose on the pilot says how)")
    dead, seen = dead_steps(log, rows)
    if seen and dead > DEAD_SHARE * seen:
        return (f"on {dead} of its {seen} steps no group carried a learning signal (every completion of the step "
                "scored alike, so every advantage was 0): it barely trained, and bounds no lr; raise "
                f"{group_key} or use prompts the model sometimes solves, then run a pilot again")
    cut = _cut_from_start(late_truncation(log, rows))
    if cut is not None:
        cap = _cap(cut)
        to = f"about {cap} tokens, twice the mean length" if cap else "e.g. double it"
        return (f"{cut['share']:.0%} of its completions are cut at the length cap over its last quarter (steps "
                f"{cut['steps'][0]}-{cut['steps'][1]}), so its rewards score unfinished answers and its curve is not "
                f"the run's once the cap is raised; raise it first ({MAX_LENGTH_KEYS}: {to})"
                + ("" if masked else ", or keep truncated completions out of training (TRL mask_truncated_completions: "
                   "true)") + ", then run a pilot again")
    return None


def cap_tokens(log: RunLog, n: int) -> int | None:
    """Where most of the pilot's completions are cut at the length cap from its start (`fit.late_truncation`, early and
    late), the cap to raise it to: twice the late mean completion length, in tokens, as diagnose's truncation advice;
    None otherwise or unlogged."""
    cut = _cut_from_start(late_truncation(log, pilot_rows(log, n)))
    return None if cut is None else _cap(cut)


def _cut_from_start(cut: dict | None) -> dict | None:
    """`late_truncation`'s reading where most completions were cut over the first quarter too, else None."""
    return cut if cut is not None and cut["cut"] and cut["early"] > TRUNCATION_HIGH else None


def _cap(cut: dict) -> int | None:
    """Twice the late mean completion length, in tokens (None where no length is logged)."""
    return int(round(2 * cut["length"])) if cut["length"] else None


def dead_steps(log: RunLog, rows: np.ndarray) -> tuple[int, int]:
    """(rows where no group carries signal, rows where that can be read) among `rows` (`logs.flat_rows`: reward_std
    0, frac_zero_std 1 or reward_min = reward_max on the row)."""
    dead = np.zeros(rows.size, dtype=bool)
    seen = np.zeros(rows.size, dtype=bool)
    for read, flat in flat_rows(log, success_bounds=False).values():
        seen |= read[rows]
        dead |= flat[rows]
    return int(dead.sum()), int(seen.sum())
