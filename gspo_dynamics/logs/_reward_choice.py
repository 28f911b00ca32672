"""Which column of a log is the reward, where the name tables alone would choose wrongly, and in what units.

Two rules, each said in a warning where it acts, neither where a column map names the reward (a mapped reward only on
rows without a training reading, while more rows carry one, is read as mapped and said: `_mapped_apart`):

1. The reward is logged on the training rows. A hand-written loop may print, beside its per-step rows (a loss, an
   entropy, a grad norm, ... and a batch total), a few per-sample records (`reward: {'format_reward': 1.0,
   'reward': 0.0}` for 20 sampled answers) whose key is the reward by name. Where the key named the reward is on no
   row carrying a training reading (`_algorithms.TRAINING_READINGS`) and the rows that carry one, more numerous than
   those holding the named key, hold a reward-like key (`_names.reward_like`: a total reward, a score), that key is
   the reward: the named one's rows are then set apart from the training rows (`_rows.eval_rows`), not read as the
   run's curve.
2. A sum over a step's samples beside their count is read as their mean. `total_reward` (or `reward_total`,
   `sum_reward`, `reward_sum`) logged on the same rows as a count of what it sums (`total_num`, `num_samples`,
   `count`, ...; an integer >= 1 on every row the sum is on) is N x the mean reward of the step's N samples, the
   quantity `diagnose` reads (`STANDARD_NAMES`: the mean reward of the sampled completions): the reward is
   sum / count. Batches of different sizes (runs of 32 and of 256 samples) then read on one scale. A mapped column is
   read as it is (a map says which column is the reward, in its own units).
3. A running mean of another column is not the step's reward. Where the column read as the reward equals, on every
   row (at least MIN_SMOOTHED), the mean of the last k values of an unread reward-like column X,

       R_t = mean(X_{max(1, t-k+1)}, ..., X_t)   for one k in 2 .. min(n, MAX_WINDOW), or for k = t (the mean so far),

   within SMOOTH_TOL of X's range plus half the unit of the last decimal each column is printed to (`printed_step`:
   a loop printing `f"{avg:.2f}"` rounds by up to 0.005), that tolerance under SMOOTH_NOISE of X's row-to-row
   scatter (coarser, a column merely trending like X's running mean could pass by chance), X is the per-step reward
   and R its smoothing
   (audit s38b: `avg_reward = np.mean(episode_rewards[-20:])` beside `episode_reward` was read as the reward, which
   lags a break by ~k/2 steps and shrinks its noise by sqrt(k), so every z read from it is too large). R is kept
   under its own name; a map is read as given.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

import numpy as np

from gspo_dynamics.logs._algorithms import TRAINING_READINGS
from gspo_dynamics.logs._names import canonical_name, is_eval_key, reward_like

_SUM = re.compile(r"(?i)^(?:total|sum)[_/\-.](?P<q1>.+)$|^(?P<q2>.+?)[_/\-.](?:total|sum)$")
# a count of the samples a sum runs over: `total_num`, `num_samples`, `count`, `n_samples`, `batch_count`, ...
_COUNT = re.compile(r"(?i)^(?:(?:total|batch|sample|samples)[_\-.])?(?:num|count|n)(?:[_\-.](?:samples?|items?))?$"
                    r"|^(?:num|n)[_\-.](?:samples?|items?|responses?|completions?)$|^(?:sample|batch)[_\-.]count$")


def _trains(keys: Iterable[str]) -> bool:
    """Whether a row of these keys carries a training step's own reading."""
    return any(canonical_name(key) in TRAINING_READINGS for key in keys if not is_eval_key(key))


def training_reward(groups: dict[tuple, list[int]], chosen: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """({column: "reward"}, warnings) under rule 1 of the module docstring, else ({}, []).

    groups: the rows' indices by key tuple; chosen: a column map's {column: name}."""
    trained = {keys: members for keys, members in groups.items() if _trains(keys)}
    if "reward" in chosen.values():
        return {}, _mapped_apart(groups, trained, next(c for c, name in chosen.items() if name == "reward"))
    if not trained or len(trained) == len(groups):
        return {}, []
    named_rows = {keys: members for keys, members in groups.items()
                  if any(canonical_name(key) == "reward" for key in keys)}
    if not named_rows or any(keys in trained for keys in named_rows):
        return {}, []
    on_trained = set().union(*trained)
    ranked = [key for key in reward_like(on_trained) if key not in chosen]
    if not ranked:
        return {}, []
    n_trained = sum(len(members) for keys, members in trained.items() if ranked[0] in keys)
    n_named = sum(map(len, named_rows.values()))
    if n_trained <= n_named:
        return {}, []
    named = sorted({key for keys in named_rows for key in keys if canonical_name(key) == "reward"})
    return {ranked[0]: "reward"}, [
        f"{', '.join(map(repr, named))}, the reward by name, is only on {n_named} row(s) without a training reading "
        f"(per-sample or evaluation records): {ranked[0]!r}, on the {n_trained} rows that carry one, is read as the "
        "reward; map another column to 'reward' if it is not"]


def _mapped_apart(groups: dict[tuple, list[int]], trained: dict[tuple, list[int]], column: str) -> list[str]:
    """The warning where a column mapped to the reward is only on rows without a training reading while more rows
    carry one: read as the user mapped it, but said (per-sample or evaluation records are not the run's curve)."""
    on = sum(len(members) for keys, members in groups.items() if column in keys)
    n_trained = sum(map(len, trained.values()))
    if not on or any(column in keys for keys in trained) or n_trained <= on:
        return []
    return [f"the mapped reward {column!r} is only on {on} row(s) without a training reading, while {n_trained} rows "
            "carry one (loss, grad norm, entropy, ...): per-sample or evaluation records, read as mapped; the run's "
            "curve is on the training rows"]


def count_of(column: str, names: Iterable[str]) -> str | None:
    """The column among `names` that counts the samples `column` sums over (rule 2), or None where `column` is no
    sum or none is found (the first by name of several)."""
    if _SUM.match(column) is None:
        return None
    counts = sorted(name for name in names if name != column and _COUNT.match(name))
    return counts[0] if counts else None


def per_sample_mean(built, mapped: bool):
    """(built, warnings): `built` (`_rows.series_of`'s) with its reward a sum read as its mean (rule 2), or as it
    was (the reward mapped, no sum, no count on every row the sum is on, a count not an integer >= 1)."""
    column = built.columns.get("reward")
    count = None if mapped or column is None else count_of(column, built.series)
    if count is None or count not in built.unread:  # a count the analysis reads under a name of its own is none
        return built, []
    reward, n = built.series["reward"], built.series[count]  # (steps,) each
    held = np.isfinite(reward)
    if not held.any() or not np.isfinite(n[held]).all() or (n[held] < 1).any() or (n[held] % 1).any():
        return built, []
    mean = np.where(held, reward / np.where(held, n, 1.0), reward)
    mean.flags.writeable = False
    series = {**built.series, "reward": mean}
    unread = tuple(key for key in built.unread if key != count)
    return dataclasses.replace(built, series=series, unread=unread), [
        f"the reward column {column!r} is a sum over each step's samples, counted in {count!r}: the reward read is "
        f"{column!r} / {count!r}, the mean reward of a sample"]


# rule 3's constants are stated, fitted to no log:
MIN_SMOOTHED = 8  # rows both columns must hold for a running mean to be told from chance
MAX_WINDOW = 256  # the longest trailing window tried (beside the mean so far)
SMOOTH_TOL = 1e-3  # |R - mean| within this share of X's range on every row: a printed rounding of the same mean
SMOOTH_NOISE = 0.25  # ... and that tolerance under a quarter of X's row-to-row scatter: coarser, a column that merely
# trends like a running mean of X could pass it by chance (stated, fitted to no log)


def running_mean_window(smoothed: np.ndarray, raw: np.ndarray) -> int | None:
    """k where `smoothed` is the trailing k-row mean of `raw` on every row (rule 3; 0 for the mean so far), else None.
    Both arrays on the same rows; rows where either is missing are not compared, and `raw` must be held wherever
    `smoothed` is (its mean needs every value)."""
    held = np.isfinite(smoothed)
    if held.sum() < MIN_SMOOTHED or not np.isfinite(raw[held]).all():
        return None
    first = int(np.argmax(held))
    x = raw[first:]
    if not np.isfinite(x).all():
        return None
    r, n = smoothed[first:], x.size
    if not np.ptp(x) > 0:  # a constant column is every running mean of any other constant one
        return None
    tol = SMOOTH_TOL * float(np.ptp(x)) + (printed_step(r[np.isfinite(r)]) + printed_step(x)) / 2
    if not tol <= SMOOTH_NOISE * float(np.std(np.diff(x))):  # printed too coarsely to tell a mean from chance
        return None
    c = np.concatenate(([0.0], np.cumsum(x)))
    t = np.arange(1, n + 1)
    if np.nanmax(np.abs(r - c[1:] / t)) <= tol:  # the mean so far
        return 0
    for k in range(2, min(n, MAX_WINDOW) + 1):
        lo = np.maximum(t - k, 0)
        if np.nanmax(np.abs(r - (c[t] - c[lo]) / (t - lo))) <= tol:
            return k
    return None


def printed_step(values: np.ndarray) -> float:
    """The unit of the last decimal the values were printed to (10^-d for the fewest d in 0..9 that holds every
    value), 0 where they hold more: half of it is the rounding a printed mean carries."""
    for d in range(10):
        if np.all(np.abs(values - np.round(values, d)) <= 1e-9 * np.maximum(1.0, np.abs(values))):
            return 10.0 ** -d
    return 0.0


def raw_beside_smoothed(built, mapped: bool):
    """(built, warnings): `built` with its reward the per-step column a running mean was read in place of (rule 3),
    or as it was (mapped, or no unread reward-like column it is a running mean of)."""
    column = built.columns.get("reward")
    if mapped or column is None:
        return built, []
    reward = built.series["reward"]
    for raw in reward_like([key for key in built.unread if key in built.series]):
        k = running_mean_window(reward, built.series[raw])
        if k is None:
            continue
        series = {name: values for name, values in built.series.items() if name != raw}
        series["reward"], series[column] = built.series[raw], reward
        logged = {name: mask for name, mask in built.logged.items() if name not in ("reward", raw)}
        if raw in built.logged:
            logged["reward"] = built.logged[raw]
        if "reward" in built.logged:
            logged[column] = built.logged["reward"]
        unread = tuple(sorted({key for key in built.unread if key != raw} | {column}))
        window = "the mean so far" if k == 0 else f"the mean of the last {k} rows"
        return dataclasses.replace(built, series=series, logged=logged, columns={**built.columns, "reward": raw},
                                   unread=unread), [
            f"{column!r} is a running mean of {raw!r} ({window} on every row): {raw!r}, the step's own reward, is read "
            f"as the reward ({column!r} lags a change and hides the rows' noise; --map reward={column} reads it)"]
    return built, []
