"""The canonical run log, and its construction from raw (step, {key: value}) rows.

Every reader produces a list of rows `(step, {raw_key: raw_value})`; `build_series` turns them
into step-aligned float arrays:

  steps          sorted unique optimizer steps                              (N,)
  series[name]   float64, NaN where the log has no value at that step        (N,)

Merging is per (step, key): rows logged at the same step with different keys both land on that
step; the same key logged in several rows of one step (micro-batch rows) is averaged, with a
warning. Which rows are evaluation rows, which run of the file is read, and a resumed run's
re-logged steps are settled before, on the rows (`_rows.py`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from operator import itemgetter
from types import MappingProxyType

import numpy as np

from gspo_dynamics.logs._groups import key_groups
from gspo_dynamics.logs._table import RowTable, row_steps as steps_of

# The closed-form fit has up to 5 parameters (R_inf, R_0, c, k, v_0): fewer reward points than
# this cannot separate them from noise, so such a run is reported as too short, not fitted.
MIN_ANALYSIS_POINTS = 8
# Steps beyond this do not fit an int64 array safely (and no run is that long).
_MAX_STEP = 2**53


@dataclass(frozen=True, kw_only=True)
class RunLog:
    """One training run, whatever it was read from.

    steps: int64 (N,), strictly increasing optimizer steps.
    series: name -> float64 (N,), NaN where missing; names are `STANDARD_NAMES`,
        `eval/<name>`, `reward/<fn>` or a raw key the readers did not recognise. Read-only.
    """

    steps: np.ndarray
    series: Mapping[str, np.ndarray]
    format: str  # the reader used, one of `FORMATS`
    source: str  # file path, or "<text>"
    trainer: str = "unknown"  # "trl" | "verl" | "roll" | "openrlhf" | "unknown"
    version: str | None = None  # a version range guessed from the key set, e.g. ">=0.20"
    algorithm: str = "grpo"  # "grpo" (group policy gradient, GSPO included) | "rl" (OpenRLHF: the estimator unknown)
    reward_std_kind: str = "unknown"  # "group_mean_std" | "batch_std" | "unknown"
    logging_interval: int | None = None  # optimizer steps averaged into one row
    warnings: tuple[str, ...] = field(default_factory=tuple)
    # DIVERGENCE_SERIES whose logged values turned non-finite (NaN or +-inf) after finite ones and stayed so to
    # their last row: name -> (the first such step, how many values); `trailing_non_finite`
    diverged: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    # name -> bool (N,): True where the log wrote a non-finite value (NaN, +-inf; verl's file logger writes them as
    # null), False where the value is finite or missing. A NaN in `series` is missing where this is False. A series
    # absent here (a RunLog built by hand) has no record: NaN there may be either.
    logged_non_finite: Mapping[str, np.ndarray] = field(default_factory=dict)
    step_axis: str = "unknown"  # how the steps were found: "column 'iteration'", "logging_steps 5 x row", ...
    n_runs: int = 1  # runs found in the file (a step counter that restarts starts a new one)
    run_index: int = 1  # which of them this is, 1-based (the last by default; `read_log(run=K)`)
    run_name: str | None = None  # its name where the file names its runs (W&B's chart export), else None
    columns: Mapping[str, str] = field(default_factory=dict)  # series name -> the raw key it was read from
    unread: tuple[str, ...] = ()  # raw keys of training series the analysis has no name for (kept, not used)
    n_eval_points: int = 0  # steps with evaluation rows (their metrics are the `eval/<name>` series)
    set_aside: tuple[str, ...] = ()  # rows of the run the reader did not read as points, each in a few words (a
    # resumed run's earlier rows, a logger's repeated rows): said where the rows are counted, not only in `warnings`
    # True where no column is the reward by its name and none was mapped: the reward is the reader's pick (the log's
    # only success rate, or its most reward-like column; a warning says which), which the answer says first
    reward_guessed: bool = False
    placeholders: tuple[str, ...] = ()  # raw keys (among `unread`) holding a placeholder, not a measurement: exact
    # zeros where a trainer cannot measure 0 (`logs._placeholders`)

    def __post_init__(self) -> None:
        n = self.steps.shape[0]
        for name, values in self.series.items():
            if values.shape != (n,):
                raise ValueError(f"series {name!r} has shape {values.shape}, expected ({n},)")
        if self.reward_std_kind not in ("group_mean_std", "batch_std", "unknown"):
            raise ValueError(f"unknown reward_std_kind {self.reward_std_kind!r}")
        for name, mask in self.logged_non_finite.items():
            if mask.shape != (n,) or mask.dtype != np.bool_:
                raise ValueError(f"logged_non_finite[{name!r}] must be bool ({n},), got {mask.dtype} {mask.shape}")
        if not 1 <= self.run_index <= self.n_runs:
            raise ValueError(f"run_index {self.run_index} is not in 1..{self.n_runs}")

    def __getitem__(self, name: str) -> np.ndarray:
        try:
            return self.series[name]
        except KeyError:
            raise KeyError(f"{name!r} is not in this log; it has {sorted(self.series)}") from None

    def __contains__(self, name: object) -> bool:
        return name in self.series

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.series)

    def n_points(self, name: str = "reward") -> int:
        """Number of finite values of one series (0 when absent)."""
        values = self.series.get(name)
        return 0 if values is None else int(np.isfinite(values).sum())

    def valid(self, name: str = "reward") -> tuple[np.ndarray, np.ndarray]:
        """(steps, values) of one series with the missing points dropped."""
        values = self[name]
        keep = np.isfinite(values)
        return self.steps[keep], values[keep]

    def is_too_short(self, min_points: int = MIN_ANALYSIS_POINTS) -> bool:
        """True when the reward series has fewer than `min_points` finite values."""
        return self.n_points("reward") < min_points

    @property
    def too_short(self) -> bool:
        return self.is_too_short()


DIVERGENCE_SERIES = ("reward", "loss")  # a run whose reward or loss ends in NaN / inf diverged numerically


def trailing_non_finite(rows: list[Row], rename, names: tuple[str, ...] = DIVERGENCE_SERIES) -> dict[str, tuple[int, int]]:
    """Per name of `names`: (first step, count) of the run of logged non-finite values (NaN, +-inf) that ends its
    series, where a finite value comes before it; names that end finite, or were never finite, are left out.
    A missing value is not a logged one: rows without the name are skipped. Read from the last row back, so it
    stops at each name's last finite value."""
    out: dict[str, tuple[int, int]] = {}
    for name in names:
        run_start, count = None, 0
        for step, record in reversed(rows):
            values = [to_float(v) for key, v in record.items() if rename(key) == name]
            values = [v for v in values if v is not None]
            if not values:
                continue
            if math.isfinite(values[-1]):
                if count:
                    out[name] = (run_start, count)
                break
            run_start, count = step, count + 1
    return out


def is_too_short(log: RunLog, min_points: int = MIN_ANALYSIS_POINTS) -> bool:
    """True when `log` has fewer than `min_points` finite reward values to analyse."""
    return log.is_too_short(min_points)


def to_float(value: object) -> float | None:
    """A metric value as a float, or None when it is not a number.

    Accepts numbers, bools (and the words True / False, 1 / 0), numeric strings ("9.825e-06", "nan", "inf") and verl's
    "np.float64(0.5)" reprs; integers too large for a float become +-inf.
    """
    if type(value) is float:  # the common case first: this runs once per logged value
        return value
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:
            return math.copysign(math.inf, value)
    if isinstance(value, str):
        text = value.strip()
        if text.startswith(("np.float", "np.int", "tensor(")) and text.endswith(")"):
            text = text[text.index("(") + 1 : -1].split(",")[0]
        if len(text) > 64:  # no number is written with more characters
            return None
        if text in _BOOL_WORDS:  # a CSV's or a printed dict's True / False, as a JSON true / false reads: 1 / 0
            return _BOOL_WORDS[text]
        try:
            return float(text)
        except ValueError:
            return None
    return None


_BOOL_WORDS = {"True": 1.0, "False": 0.0, "true": 1.0, "false": 0.0}


def to_step(value: object) -> int | None:
    """An optimizer step as an int, or None when it is not a non-negative integer."""
    if type(value) is int and 0 <= value <= _MAX_STEP:  # the common case, once per row
        return value
    number = to_float(value)
    if number is None or not math.isfinite(number) or number < 0 or number > _MAX_STEP:
        return None
    if number != int(number):
        return None
    return int(number)


Row = tuple[int, dict[str, object]]


def build_series(rows: list[Row], rename, groups: dict[tuple, list[int]] | None = None
                 ) -> tuple[np.ndarray, dict[str, np.ndarray], list[str], dict[str, np.ndarray]]:
    """Steps, aligned float series, warnings and the logged non-finite masks from raw rows; `rename` maps raw ->
    final keys.

    Non-numeric values are dropped (a warning names the keys); a key logged in several rows of one step (micro-batch
    rows, 4 per step) is averaged (one warning with the count of values that differ); unsorted steps are sorted.
    A value the log writes as NaN or +-inf is marked True in the mask of its name (a missing one stays False).
    groups: the rows' indices by key tuple (`_rows.key_groups`) where the caller has them already.

    Vectorised: rows are grouped by their key tuple (a trainer logs the same keys every row), a
    group whose values are all plain numbers becomes one float matrix, other groups go value by
    value through `to_float`; a stable sort by (step, row) brings each step's values together. Same result and
    warnings as a row-by-row loop (tests/logs/test_build_series_fast.py, on fuzzed rows).
    Steps: read the values per name (`_read_values`), average them per step (`_mean_per_step`),
    align every name on the log's steps (`_align`).
    """
    warnings: list[str] = []
    n = len(rows)
    row_steps = steps_of(rows)  # (n,)
    if n > 1 and bool(np.any(row_steps[1:] < np.maximum.accumulate(row_steps)[:-1])):
        warnings.append("the steps were not in increasing order; they were sorted")
    chunks, bad_keys = _read_values(rows, rename, groups)
    columns, duplicates, n_inf = _mean_per_step(chunks, row_steps)
    if duplicates:
        warnings.append(
            f"{duplicates} value(s) were logged again at the same step with a different value (micro-batch rows); "
            "the values of each step were averaged"
        )
    if bad_keys:
        listed = ", ".join(f"{k!r} ({n})" for k, n in sorted(bad_keys.items())[:8])
        more = "" if len(bad_keys) <= 8 else f" and {len(bad_keys) - 8} more"
        warnings.append(f"non-numeric values were ignored in {listed}{more}")
    steps, series, logged = _align(chunks, columns, row_steps)
    if n_inf:
        warnings.append(f"{n_inf} infinite value(s) are in the log (kept as +-inf)")
    return steps, series, warnings, logged


_Chunks = dict[str, list[tuple[np.ndarray, np.ndarray]]]  # name -> [(row indices, float values)]


def _read_values(rows, rename, groups: dict[tuple, list[int]] | None = None) -> tuple[_Chunks, dict[str, int]]:
    """(chunks, bad keys): each final name's (row indices, values), and per name the count of non-numeric values
    dropped. Rows (a list or a `RowTable`) are grouped by their key tuple; a column of plain numbers is read at once
    (`_group_columns`), the others value by value."""
    if groups is None:
        groups = rows.groups if isinstance(rows, RowTable) else key_groups(rows)
    memo: dict[str, str] = {}
    chunks: _Chunks = {}
    bad_keys: dict[str, int] = {}
    for keys, members in groups.items():
        names = _row_names(keys, rename, memo)
        index = np.asarray(members, dtype=np.int64)
        for key, name, column in zip(keys, names, _group_columns(rows, keys, members)):
            if column is not None:
                chunks.setdefault(name, []).append((index, column))
                continue
            raw = rows.values(keys, key) if isinstance(rows, RowTable) else [rows[i][1][key] for i in members]
            at, values = _one_by_one(raw, members, name, bad_keys)
            if at:
                chunks.setdefault(name, []).append((np.asarray(at, np.int64), np.asarray(values, np.float64)))
    return chunks, bad_keys


def _group_columns(rows, keys: tuple, members: list[int]) -> list[np.ndarray | None]:
    """Per key of the rows `members` (key tuple `keys`): its values as float64 where they are all plain numbers, else
    None. A list's group is one matrix (`_numeric_matrix`: every column or none); a table's, column by column."""
    if isinstance(rows, RowTable):
        return rows.float_columns(keys)
    records = list(map(itemgetter(1), rows if len(members) == len(rows) else map(rows.__getitem__, members)))
    matrix = _numeric_matrix(records, len(keys))  # (rows, keys) or None
    return [None] * len(keys) if matrix is None else list(matrix.T)


def _one_by_one(raw: list, members: list[int], name: str, bad_keys: dict[str, int]):
    """(row indices, floats) of the raw values `raw` of the rows `members` through `to_float`; counts the bad ones."""
    at, values = [], []
    for i, raw_value in zip(members, raw):
        value = to_float(raw_value)
        if value is None:
            if raw_value is not None:
                bad_keys[name] = bad_keys.get(name, 0) + 1
            continue
        at.append(i)
        values.append(value)
    return at, values


def _mean_per_step(chunks: _Chunks, row_steps: np.ndarray
                   ) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], int, int]:
    """(name -> (steps, values) sorted by step with the mean of each step's values, the number of values that
    differ from the one logged before them at their step, the number of infinite values logged).

    The mean of a step's n values is the sum of value / n in row order (no overflow where the values are large)."""
    duplicates = n_inf = 0
    columns: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name, parts in chunks.items():
        if len(parts) == 1:  # one key set logs this name: its rows are already in row order
            at, values = parts[0]
        else:
            at = np.concatenate([p[0] for p in parts])
            order = np.argsort(at, kind="stable")  # row order; a name twice in one row keeps key order
            at, values = at[order], np.concatenate([p[1] for p in parts])[order]
        n_inf += int(np.isinf(values).sum())
        steps_of = row_steps[at]
        if steps_of.size > 1 and bool(np.any(steps_of[1:] < steps_of[:-1])):
            order = np.argsort(steps_of, kind="stable")  # by step, rows of one step in row order
            steps_of, values = steps_of[order], values[order]
        repeat = steps_of[1:] == steps_of[:-1]
        if not repeat.any():
            columns[name] = (steps_of, values)
            continue
        a, b = values[:-1][repeat], values[1:][repeat]
        duplicates += int(np.sum(~((a == b) | (np.isnan(a) & np.isnan(b)))))
        starts = np.flatnonzero(np.append(True, ~repeat))  # (S,) the first value of each step
        counts = np.diff(np.append(starts, values.size))  # (S,)
        with np.errstate(invalid="ignore"):  # inf - inf: a NaN, as the mean of those values is
            means = np.add.reduceat(values / np.repeat(counts, counts), starts)
        columns[name] = (steps_of[starts], means)
    return columns, duplicates, n_inf


def _align(chunks: _Chunks, columns: dict[str, tuple[np.ndarray, np.ndarray]], row_steps: np.ndarray
           ) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(steps, series, logged non-finite masks): every name on the log's steps (those of the rows
    that gave a value), NaN where it has none; read-only arrays."""
    used = np.zeros(row_steps.size, dtype=bool)  # rows that gave a value: their steps are the log's steps
    for parts in chunks.values():
        for at, _ in parts:
            used[at] = True
    steps = row_steps[used]
    if steps.size > 1 and not bool(np.all(steps[1:] > steps[:-1])):
        steps = np.unique(steps)  # (N,) sorted unique; rows in step order need no sort
    series: dict[str, np.ndarray] = {}
    logged: dict[str, np.ndarray] = {}
    for name, (at_steps, values) in columns.items():
        bad = ~np.isfinite(values)
        if at_steps.size == steps.size:  # a sorted unique subset of `steps` as long as it: all of it
            column, mask = values.copy(), bad
        else:
            column = np.full(steps.shape, np.nan)
            mask = np.zeros(steps.shape, dtype=bool)
            at = np.searchsorted(steps, at_steps)
            column[at] = values
            mask[at] = bad
        column.flags.writeable = False
        mask.flags.writeable = False
        series[name] = column
        logged[name] = mask
    steps.flags.writeable = False
    return steps, series, logged


def _row_names(keys: tuple, rename, memo: dict[str, str]) -> list[str]:
    """Final names of one row's keys: a second spelling of a name in one row keeps its raw key."""
    seen: set[str] = set()
    names = []
    for key in keys:
        name = memo.get(key)
        if name is None:
            name = memo[key] = rename(key)
        if name in seen:
            name = key
        seen.add(name)
        names.append(name)
    return names


_PLAIN_NUMBERS = frozenset({float, int, bool})


def _numeric_matrix(records: list[dict], width: int) -> np.ndarray | None:
    """float64 (rows, width) of the records' values if every value is a float, int or bool, else None.

    Python ints beyond float range go the `to_float` way (it maps them to +-inf); the others
    convert exactly as float() does.
    """
    values = itertools.chain.from_iterable(map(dict.values, records))
    if not set(map(type, values)) <= _PLAIN_NUMBERS:
        return None
    try:
        flat = np.fromiter(itertools.chain.from_iterable(map(dict.values, records)), np.float64,
                           len(records) * width)
    except (OverflowError, ValueError):
        return None
    return flat.reshape(len(records), width)  # (rows, width)


def freeze(series: dict[str, np.ndarray]) -> Mapping[str, np.ndarray]:
    return MappingProxyType(dict(series))

