"""A fall of single logged rows against their known sampling noise, for pilots whose block means hide it.

`fit._fall` compares means of BLOCK rows against a scatter read off the rows themselves. A pilot of few, precise
rows (TRL at steps_per_generation = 8 logs one reward row per rollout: 10 rows in a 20% pilot of 400 steps, each the
mean of 512 completions) can lose nearly all its reward in one row and regain it in the next; its block means do not
fall, and its scatter, read from ten differences, is dominated by the fall itself. Where the reward's range [lo, hi]
is known, one row's noise is bounded without reading the rows: a row averages P prompts (N per optimizer step times
the steps it spans, the reward rows' step spacing) of G responses each, and whatever the prompts' difficulty
(responses of one prompt share its success chance, and the chances differ between prompts),

    Var(row mean) <= v(m) / P,    v(m) = (m - lo)(hi - m)                                                       (1)

(Bhatia-Davis: no reward of mean m in [lo, hi] has a larger variance; a group mean's variance reaches v(m) when its G
responses agree, so P prompts bound it by v / P, the bound that makes no assumption on the within-group spread). Row
k's fall below the best row j before it is real when

    z = (r_j - r_k) / sqrt(v(r_j) / P + v(r_k) / P) > Z_FALL    and the fall is large in the range (`fit._fall` (2)) (2)

with the same Z_FALL = 5 as the block test. Under (1) a z above 5 among the ~n^2/2 ordered pairs of an n-row pilot
has chance below n^2/2 x 2.9e-7 (one-sided normal tail; 1.4e-5 at 10 rows, 2.3e-3 at 125); with the bound's slack
it is smaller still. Only where the range is known and the block test found no loss.
"""

from __future__ import annotations

import math

import numpy as np

from gspo_dynamics.fit import BLOCK, COLLAPSE_SHARE, FALL_SHARE, Z_FALL, Fall, reward_fall


def prompts_per_row(steps: np.ndarray, prompts_per_step: int | None) -> float | None:
    """P of (1): the prompts one row averages, N per optimizer step times the median spacing of the rows' steps
    (a row logged once per rollout of T steps spans T steps; one logged every k steps, k). None without N or with
    fewer than two rows."""
    steps = np.asarray(steps, dtype=float)
    if prompts_per_step is None or prompts_per_step < 1 or len(steps) < 2:
        return None
    spacing = float(np.median(np.diff(steps)))
    return prompts_per_step * max(spacing, 1.0)


def row_fall(steps, reward, reward_range, prompts: float | None) -> Fall | None:
    """The largest fall (2) of one row below the best row before it, z by the bound (1); None without a known range
    or P, or with fewer than two rows. `lost` where (2) holds."""
    steps, r = np.asarray(steps), np.asarray(reward, dtype=float)
    if reward_range is None or prompts is None or len(r) < 2:
        return None
    lo, hi = reward_range

    def v(m: np.ndarray) -> np.ndarray:  # v(m) of (1)
        return np.clip(m - lo, 0.0, None) * np.clip(hi - m, 0.0, None)

    best = np.maximum.accumulate(r)  # (n,) the best row so far
    fall = best - r
    se = np.sqrt((v(best) + v(r)) / prompts)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(fall > 0, fall / se, 0.0)  # a fall with se 0 (both rows at a bound) is inf
    k = int(np.argmax(z))
    j = int(np.flatnonzero(r[: k + 1] == best[k])[0])  # the row that set the best
    width, top = hi - lo, float(r[j]) - lo
    big = fall[k] > FALL_SHARE * width or (fall[k] > COLLAPSE_SHARE * top and top >= FALL_SHARE * width / 2)
    return Fall(fall=float(fall[k]), best=float(r[j]), best_steps=(int(steps[j]), int(steps[j])), after=float(r[k]),
                after_steps=(int(steps[k]), int(steps[k])), z=float(z[k]), lost=bool(z[k] > Z_FALL and big))


def pilot_fall(steps, reward, reward_range, prompts_per_step: int | None, measured: list[str]) -> Fall | None:
    """The block test's fall (`fit._fall`), or where it found no loss and a single row's fall is one by (2), that
    row's; each said in `measured`."""
    block = reward_fall(steps, reward, reward_range)
    if block is not None:
        measured.append(f"the reward's largest fall below its running best over {BLOCK}-step means, {block.fall:.3g} "
                        f"(z = {block.z:.3g}: {'a loss' if block.lost else 'not a loss'}; a loss needs z > {Z_FALL:g}, the "
                        "largest of many block pairs, and where the reward's range is known a size that matters in it: "
                        "fit._fall (2))")
    if block is not None and block.lost:
        return block
    prompts = prompts_per_row(steps, prompts_per_step)
    row = row_fall(steps, reward, reward_range, prompts)
    if row is None or not row.lost:
        return block
    measured.append(f"one row's fall below the best row before it, {row.fall:.3g} (steps {row.best_steps[0]} -> "
                    f"{row.after_steps[0]}), is z = {row.z:.3g} against the rows' largest sampling noise for a reward in "
                    f"[{reward_range[0]:g}, {reward_range[1]:g}] ({prompts:g} prompts a row): a loss the block means hid "
                    "(predict._row_fall (2))")
    return row
