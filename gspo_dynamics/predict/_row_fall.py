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

A drop at the pilot's end (`end_drop`). Both tests compare means of rows after a fall; a pilot whose last row falls
has none after it, so neither can call it a loss, yet the pilot did not keep its reward there. Its last row r_n
against the median m of the n - 1 rows before it, in their scatter s = std(r_{i+1} - r_i) / sqrt 2 over those rows
(the last difference, the drop itself, left out; a difference of two rows has std s sqrt 2):

    z = (m - r_n) / (s sqrt(1 + pi / (2 (n - 1))))   > Z_END(n) = max(Z_FALL, t_{0.999}(n - 3))                   (3)

(a median of n - 1 normal rows has variance ~ pi s^2 / (2 (n - 1))), with the size rule of (2) where the range is
known. s is itself estimated from n - 2 differences, so z has heavier tails than a normal; the Student-t quantile with
n - 3 degrees of freedom (5.9 at n = 8) keeps its chance on pilots of normal rows under 1e-3 at every n (simulated:
9e-4 at 8 rows, 4e-4 at 12, 7e-5 at 20, 0 in 2e5 at 80; tests/predict/test_row_fall.py checks it). It is not a
loss (a single row can be an outlier: nothing after it tells), so the pilot is not said to have kept its reward, and
a verdict that rests on that says unsure (`predict._pilot_headline`).

A fall after the pilot's first row (`start_drop`), the mirror of (3): a pilot whose first row holds the reward and
whose every later row lost it (a step that broke the policy at once) has one high row in its first block, which the
block means dilute, and a flat floor after it, whose scatter is near 0. Its first row r_1 against the median m of the
n - 1 rows after it, in their scatter s (the first difference, the fall itself, left out):

    z = (r_1 - m) / (s sqrt(1 + pi / (2 (n - 1))))   > Z_END(n)                                                  (3')

with the size rule of (2) where the range is known. Reversed in time and sign, a pilot is (3)'s, so its chance on
pilots of normal rows is (3)'s. Unlike (3) it is a loss: the n - 1 rows after the fall all read it."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from gspo_dynamics.fit import BLOCK, COLLAPSE_SHARE, FALL_SHARE, HELD_STEPS, Z_FALL, Fall, reward_fall, row_scatter

RECOVERED_SHARE = 0.5  # a pilot back above half its fall's depth after it (`level_after`) dipped: at risk, not unsafe


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
    row's, or else the fall after the first row where (3') finds one; each said in `measured`."""
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
        start = start_drop(steps, reward, reward_range)
        if start is None or not start.lost:
            return block
        measured.append(f"the pilot's first row, {start.best:.3g} (step {start.best_steps[0]}), is z = {start.z:.3g} above "
                        f"the median {start.after:.3g} of the {len(reward) - 1} rows after it in their own scatter (past "
                        f"{end_threshold(len(reward)):.3g}): a loss after its first row that the block means hid "
                        "(predict._row_fall (3'))")
        return start
    measured.append(f"one row's fall below the best row before it, {row.fall:.3g} (steps {row.best_steps[0]} -> "
                    f"{row.after_steps[0]}), is z = {row.z:.3g} against the rows' largest sampling noise for a reward in "
                    f"[{reward_range[0]:g}, {reward_range[1]:g}] ({prompts:g} prompts a row): a loss the block means hid "
                    "(predict._row_fall (2))")
    return row


def _one_row_drop(rest: np.ndarray, high: float, low: float, reward_range) -> tuple[float, bool]:
    """(z, big) of (3) and (3'): the fall high - low of one row against the median of the `rest`, in the rest's own
    scatter, and the size rule of (2) where the range is known."""
    se = row_scatter(rest) * math.sqrt(1.0 + math.pi / (2.0 * rest.size))
    z = (high - low) / se if se > 0 else math.inf
    if reward_range is None:
        return z, True
    lo, width = reward_range[0], reward_range[1] - reward_range[0]
    return z, bool(high - low > FALL_SHARE * width or (high - low > COLLAPSE_SHARE * (high - lo)
                                                          and high - lo >= FALL_SHARE * width / 2))


def end_drop(steps, reward, reward_range) -> Fall | None:
    """The pilot's last row against the median of the rows before it, (3); None with fewer than 2 BLOCK rows or no
    drop. `lost` where (3) and the size rule hold: a drop at the pilot's end, not a loss (module docstring)."""
    steps, r = np.asarray(steps), np.asarray(reward, dtype=float)
    if r.size < 2 * BLOCK:  # a scatter from at least 5 differences, Student's t then has 5 degrees of freedom
        return None
    before, last = r[:-1], float(r[-1])
    level = float(np.median(before))
    if not level > last:
        return None
    z, big = _one_row_drop(before, level, last, reward_range)
    return Fall(fall=level - last, best=level, best_steps=(int(steps[0]), int(steps[-2])), after=last,
                after_steps=(int(steps[-1]), int(steps[-1])), z=float(z), lost=bool(z > end_threshold(r.size) and big))


def start_drop(steps, reward, reward_range) -> Fall | None:
    """The pilot's first row against the median of the rows after it, (3'); None with fewer than 2 BLOCK rows or no
    fall. `lost` where (3') and the size rule hold: a loss after the first row (module docstring)."""
    steps, r = np.asarray(steps), np.asarray(reward, dtype=float)
    if r.size < 2 * BLOCK:
        return None
    first, after = float(r[0]), r[1:]
    level = float(np.median(after))
    if not first > level:
        return None
    z, big = _one_row_drop(after, first, level, reward_range)
    return Fall(fall=first - level, best=first, best_steps=(int(steps[0]), int(steps[0])), after=level,
                after_steps=(int(steps[1]), int(steps[-1])), z=float(z), lost=bool(z > end_threshold(r.size) and big))


def pilot_end_drop(steps, reward, reward_range, measured: list[str]) -> Fall | None:
    """`end_drop` where it holds (said in `measured`), else None."""
    drop = end_drop(steps, reward, reward_range)
    if drop is None or not drop.lost:
        return None
    measured.append(f"the pilot's last row, {drop.after:.3g} (step {drop.after_steps[0]}), is z = {drop.z:.3g} below the "
                    f"median {drop.best:.3g} of the rows before it in their own scatter (past {end_threshold(len(reward)):.3g}"
                    "): a drop at its end, too new to call a loss (predict._row_fall (3))")
    return drop


def end_threshold(n: int) -> float:
    """Z_END(n) of (3): the larger of Z_FALL and the one-sided 0.999 Student-t quantile with n - 3 degrees of freedom."""
    from scipy.stats import t

    return max(Z_FALL, float(t.ppf(0.999, n - 3)))


def level_after(fall: Fall, steps: np.ndarray, reward: np.ndarray) -> float | None:
    """The level the pilot holds after its fall: the mean of the last HELD_STEPS of its rows past the fallen block
    (the held level of those rows), None where the fall is the pilot's last block. Not the pilot's own held level,
    which in a pilot of HELD_STEPS rows or fewer averages the fall itself and the rows before it."""
    after = np.asarray(reward, dtype=float)[np.asarray(steps) > fall.after_steps[1]]
    return float(np.mean(after[-HELD_STEPS:])) if len(after) else None


def responses_per_row(setup) -> int:
    """The completions one reward row averages: N G of the config times its logging_steps (the optimizer steps a
    row spans; 1 where the config does not say)."""
    hp = setup.hparams
    return hp.num_groups * hp.group_size * (getattr(setup, "logging_steps", None) or 1)


def row_noise_z(fall: Fall, steps: np.ndarray, reward_range, spread: np.ndarray | None,
                responses: int) -> tuple[float, float] | None:
    """(z, n): a block fall against the sampling noise of its rows, n = `responses` completions each. Two block
    means of BLOCK rows at levels b (the best) and a (after the fall) differ by noise of standard error at least

        se = sqrt((v_b + v_a) / (BLOCK n)),    z = (b - a) / se,                                                  (4)

    v the per-response reward variance at the block: for a reward in a known range [lo, hi], (m - lo)(hi - m) at the
    block's mean m (a pass/fail reward's variance, exact for a verifiable reward and the largest any reward of that
    mean has, Bhatia-Davis), else the mean square of the logged reward_std (`spread`) over the block's rows (the
    spread within a group or a batch: a floor). The row mean of N groups of G responses has variance at least
    v / (N G) (prompts of differing difficulty add to it: (1)'s v / P is the other end). `fit._fall` reads the
    scatter off the rows' first differences, which a run that spends most rows near a bound, where a success rate
    barely moves, understates for the rows of a dip near the middle. None where neither variance is known."""
    v = []
    for (first, last), m in ((fall.best_steps, fall.best), (fall.after_steps, fall.after)):
        if reward_range is not None:
            lo, hi = reward_range
            v.append(max(m - lo, 0.0) * max(hi - m, 0.0))
        elif spread is not None and np.isfinite(logged := spread[(steps >= first) & (steps <= last)]).any():
            v.append(float(np.nanmean(logged**2)))
        else:
            return None
    se = math.sqrt(sum(v) / (BLOCK * responses))
    return (fall.fall / se if se > 0 else math.inf), float(responses)


def noise_dip(fall: Fall | None, steps, reward, reward_range, spread, responses: int, measured: list[str]) -> Fall | None:
    """The fall, not a loss where nothing says it was one: its block means fell past `fit._fall`'s test, but by no
    more than the sampling noise of the rows (4) allows even at its smallest (z <= Z_FALL), and the pilot came back
    above RECOVERED_SHARE of the depth (`level_after`). The rows' scatter then understated their noise (a few rows of
    few prompts far below the rest, as a partial-credit reward over 2 prompts a step gives), and the level after
    shows the policy kept its reward; said in `measured`. Any other fall as it is."""
    if fall is None or not fall.lost:
        return fall
    noise, back = row_noise_z(fall, np.asarray(steps), reward_range, spread, responses), level_after(fall, steps, reward)
    if noise is None or noise[0] > Z_FALL or back is None or back < fall.after + RECOVERED_SHARE * (fall.best - fall.after):
        return fall
    measured.append(f"the dip from {fall.best:.3g} (steps {fall.best_steps[0]}-{fall.best_steps[1]}) to {fall.after:.3g} "
                    f"(steps {fall.after_steps[0]}-{fall.after_steps[1]}) is within the sampling noise of its rows "
                    f"({noise[1]:g} completions each: z = {noise[0]:.2g}, not past {Z_FALL:g}) and the pilot came back to "
                    f"{back:.3g}: not a loss (predict._row_fall (4))")
    return dataclasses.replace(fall, lost=False)
