"""A log's rows before they become series: evaluation rows apart, the step axis, the runs of a file.

A reader gives rows `(step, {raw key: value})` in the order the file holds them; `_read.build_log` settles here,
on the rows, what a series cannot tell afterwards:

  eval rows     a row with a `split`/`mode`/`type`/`phase` field saying eval/val/validation/test (a row whose field
                says anything else is a training row, whatever its keys), a row whose keys are all evaluation keys
                (EVAL_PREFIXES), or, where the training rows log a reward, a row holding none of the training-only
                keys most rows share (loss, grad norm, lr, KL, clipping, reward std: an evaluation loop's row among
                the training rows). Their metrics become `eval/<name>` series; nothing missing from them is missing
                from training.
  numbering     rows without a step are numbered by training row (x the logging interval, when known); an
                eval row takes the step of the training row before it.
  runs          a training step at or below the file's first training step, after the counter went past it (or,
                in a file of one row per step, after any training row), starts a new run (runs appended to one
                file, concatenated logs); the last is read unless `run` picks another.
  epochs        a step counter that restarts where the epoch column rises counts on across the epochs
                (`_epochs`): one run, not one per epoch.
  resumed       a training step below one logged before it, within a run: the rows logged before it at that step
                or later are dropped (a resumed job logs them again: the later values are kept).
  in turn       runs whose rows alternate in one file (two processes appending to it) are told apart first
                (`_interleaved`); the last is read unless `run` picks another.
"""

from __future__ import annotations

import dataclasses

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.logs._epochs import across_epochs
from gspo_dynamics.logs._groups import key_groups, regroup
from gspo_dynamics.logs._interleaved import in_turn_said, interleaved_runs
from gspo_dynamics.logs._merge_series import merge_series
from gspo_dynamics.logs._names import STANDARD_NAMES, canonical_name, resolve_names, signed_kl
from gspo_dynamics.logs._order import step_order
from gspo_dynamics.logs._readers import ROW_NUMBERS
from gspo_dynamics.logs._runlog import Row, build_series, trailing_non_finite
from gspo_dynamics.logs._table import row_steps, take_rows, with_steps

# Keys (prefixes) of evaluation metrics: TRL `eval_`, W&B/TensorBoard `eval/`, verl `val-core/`, `val-aux/`, ...
EVAL_PREFIXES = ("eval_", "eval/", "val/", "val-core/", "val-aux/", "test/", "validation/")
# A row's own label of what it is (a row holding one is of the kind it says), and the labels of an evaluation row.
SPLIT_FIELDS = ("split", "mode", "type", "phase")
LABELLED = frozenset(SPLIT_FIELDS)
EVAL_LABELS = frozenset({"eval", "evaluation", "val", "valid", "validation", "test", "testing"})
# Keys that say when, not what: no evidence of a row's kind, and not an evaluation metric.
META_KEYS = frozenset({"epoch", "_runtime", "_timestamp", "timestamp", "time", "wall_time"})
COVERAGE = 0.5  # a row with under this share of the keys most rows share is not a training row
MICRO_BATCHED = 0.5  # the share of training rows at the step of the row before, from which a file logs micro-batches
# Series only a training step logs (an evaluation loop has no loss, gradient, learning rate, KL or clipping): a row
# holding none of the ones the rows share is not a training row.
TRAINING_ONLY = frozenset({"reward_std", "frac_zero_std", "kl_ref", "kl_old_new", "clip_frac", "grad_norm",
                           "learning_rate", "loss"})


def _labelled_eval(rows: list[Row], members: list[int], fields: list[str]) -> list[int]:
    """The rows of `members` whose split field (`fields`) names an evaluation."""
    return [i for i in members if any(str(rows[i][1][f]).strip().lower() in EVAL_LABELS for f in fields)]


def eval_rows(rows: list[Row], groups: dict[tuple, list[int]], reward_like: Callable[[str], bool]) -> np.ndarray:
    """(n,) bool: the evaluation rows (see the module docstring). `reward_like(key)`: whether a key is a reward."""
    is_eval = np.zeros(len(rows), dtype=bool)
    rest: dict[tuple, list[int]] = {}
    said_training: list[int] = []  # rows whose split field names something else (`"type": "rollout"`): not eval
    for keys, members in groups.items():
        fields = [k for k in keys if k in SPLIT_FIELDS]
        if fields:
            labelled = _labelled_eval(rows, members, fields)
            is_eval[labelled] = True
            members = [i for i in members if not is_eval[i]]
            said_training += members
        metrics = [k for k in keys if k not in META_KEYS and k not in SPLIT_FIELDS]
        if metrics and all(k.startswith(EVAL_PREFIXES) for k in metrics):
            is_eval[members] = True
        elif members:
            rest[keys] = members
    _apart_rows(rest, reward_like, is_eval)
    is_eval[said_training] = False  # the writer's own word wins over the guess by keys
    return is_eval


def _apart_rows(groups: dict[tuple, list[int]], reward_like, is_eval: np.ndarray) -> None:
    """Mark the rows that hold none of the training keys the rows share (keys more than half of the rows hold: of
    them, those of a training-only series, TRAINING_ONLY, where there are any, else any of them, a row then being
    apart when it holds under COVERAGE of them), where the rows that do hold them log a reward and outnumber them.
    A group of rows without a reward, about as frequent as the training rows, is kept (a trainer that logs its
    metrics in two calls per step), and so are rows that come only after the last training row."""
    total = sum(map(len, groups.values()))
    counts: dict[str, int] = {}
    for keys, members in groups.items():
        for key in keys:
            if key not in META_KEYS and key not in SPLIT_FIELDS and not key.startswith(EVAL_PREFIXES):
                counts[key] = counts.get(key, 0) + len(members)
    shared = {key for key, count in counts.items() if 2 * count > total}
    training = {key for key in shared if canonical_name(key) in TRAINING_ONLY}
    if not shared:
        return
    main, apart = [], []
    for keys, members in groups.items():
        held = len((training or shared).intersection(keys))
        is_main = held > 0 if training else held >= COVERAGE * len(shared)
        (main if is_main else apart).append((keys, members))
    n_main = sum(len(m) for _, m in main)
    if not apart or n_main <= total - n_main or not any(reward_like(k) for keys, _ in main for k in keys):
        return
    last_main = max(members[-1] for _, members in main)
    for keys, members in apart:
        if members[0] > last_main:  # only after every training row: the run's last rows, whatever they lack
            continue
        if any(reward_like(k) for k in keys) or len(members) < COVERAGE * n_main:
            is_eval[members] = True


def split_eval_keys(rows: list[Row], groups: dict[tuple, list[int]], is_eval: np.ndarray
                    ) -> tuple[list[Row], dict[tuple, list[int]], np.ndarray]:
    """(rows, groups, is_eval) with an evaluation's metrics taken out of the training rows that also hold them: a key
    of the evaluation rows (not an evaluation key by name, which is named so anyway) held by under half of the
    training rows is an evaluation metric there too (a loop that merges its evaluation into that step's row), and
    goes into an evaluation row of the same step right after it; a row whose writer labels its kind keeps its keys."""
    counts: dict[str, int] = {}
    eval_keys: set[str] = set()
    for keys, members in groups.items():
        marked = int(is_eval[members].sum())
        if marked:
            eval_keys.update(k for k in keys if k not in META_KEYS and k not in SPLIT_FIELDS
                             and not k.startswith(EVAL_PREFIXES))
        for key in keys:
            counts[key] = counts.get(key, 0) + len(members) - marked
    n_train = int((~is_eval).sum())
    move = {key for key in eval_keys if 0 < counts.get(key, 0) and 2 * counts[key] < n_train}
    if not move:
        return rows, groups, is_eval
    out: list[Row] = []
    flags: list[bool] = []
    for (step, record), evaluation in zip(rows, is_eval.tolist()):
        if evaluation or move.isdisjoint(record) or not LABELLED.isdisjoint(record):
            out.append((step, record))
            flags.append(evaluation)
            continue
        out += [(step, {k: v for k, v in record.items() if k not in move}),
                (step, {k: v for k, v in record.items() if k in move})]
        flags += [False, True]
    return out, key_groups(out), np.asarray(flags, dtype=bool)


def eval_key(key: str) -> str:
    """An evaluation row's key as an evaluation key: `eval/<key>` unless it has an evaluation prefix already."""
    return key if key.startswith(EVAL_PREFIXES) else "eval/" + key


def eval_record(record: dict) -> dict:
    """An evaluation row's metrics under `eval_key`s; the split field and the META_KEYS left out."""
    return {eval_key(key): value for key, value in record.items() if key not in META_KEYS and key not in SPLIT_FIELDS}


def without_split_fields(rows: list[Row], groups: dict[tuple, list[int]]) -> list[Row]:
    """The rows with their split fields (text labels, not metrics) left out; the rows themselves when none has one."""
    labelled = [i for keys, members in groups.items() if any(k in SPLIT_FIELDS for k in keys) for i in members]
    if not labelled:
        return rows
    out = list(rows)
    for i in labelled:
        step, record = rows[i]
        out[i] = (step, {k: v for k, v in record.items() if k not in SPLIT_FIELDS})
    return out


def number_rows(rows: list[Row], is_eval: np.ndarray, every: int) -> list[Row]:
    """Rows numbered by training row: the k-th at step k * every; an eval row at its training row's before (or 0)."""
    return with_steps(rows, np.cumsum(~is_eval) * every)  # (n,) training rows up to and including each row


def run_starts(steps: np.ndarray, is_eval: np.ndarray) -> np.ndarray:
    """Row indices where a run begins (the first is 0): a training step at or below the file's first training step,
    after a training step above it (where a step has several rows, MICRO_BATCHED; else after any training row: a run
    that stopped at its first step is one). An eval row between two runs goes with the next one when its step is below the
    training step before it (a new run's evaluation before training), else with the run before."""
    train = np.flatnonzero(~is_eval)
    if train.size == 0:
        return np.zeros(1, dtype=np.int64)
    s = steps[train]  # (T,)
    first = s[0]
    past = np.cumsum(s > first)  # training rows above the first step, up to each
    candidates = np.flatnonzero(s <= first)  # (C,) positions in `train`; the first is 0
    if s.size > 1 and np.mean(s[1:] == s[:-1]) >= MICRO_BATCHED:  # several rows per step: the first step's too
        new = candidates[1:][past[candidates[1:]] > past[candidates[:-1]]]
    else:  # one row per step: a row at or below the first step starts a run (one that stopped there included)
        new = candidates[1:]
    starts = [0]
    for k in new:
        at, before = train[k], train[k - 1]
        while at - 1 > before and is_eval[at - 1] and steps[at - 1] < steps[before]:
            at -= 1  # the new run's own evaluation rows, logged before its training rows
        starts.append(int(at))
    return np.asarray(starts, dtype=np.int64)


def pick_run(n_rows: int, starts: np.ndarray, run: int | None) -> tuple[slice, int]:
    """(the rows of the chosen run, its 1-based index): the last when `run` is None."""
    n_runs = starts.size
    if run is None:
        run = n_runs
    if isinstance(run, bool) or not isinstance(run, (int, np.integer)) or not 1 <= run <= n_runs:
        there = "is 1 run" if n_runs == 1 else f"are {n_runs} runs"
        raise ConfigError(f"run {run!r} is not in the log: there {there} in it (run 1 to {n_runs})")
    end = starts[run] if run < n_runs else n_rows
    return slice(int(starts[run - 1]), int(end)), int(run)


def resumed_rows(steps: np.ndarray, is_eval: np.ndarray) -> tuple[np.ndarray, int]:
    """(n,) bool of the rows to keep, and how many times the training counter went back: at each training step
    below the training step before it, the rows before it at that step or later are dropped. The kept rows' steps never
    go down (each step's rows together)."""
    last_train = np.maximum.accumulate(np.where(is_eval, -1, np.arange(steps.size)))  # (n,) -1 before the first
    previous = np.concatenate(([-1], last_train[:-1]))  # the training row before each row
    before = np.where(previous >= 0, steps[np.maximum(previous, 0)], np.iinfo(np.int64).min)
    back = ~is_eval & (steps < before)  # resume points: below the training step before (the kept ones end there)
    if not back.any():
        return np.ones(steps.size, dtype=bool), 0
    lowest_after = np.full(steps.size, np.iinfo(np.int64).max)
    at = np.where(back, steps, np.iinfo(np.int64).max)
    lowest_after[:-1] = np.minimum.accumulate(at[::-1])[::-1][1:]  # the lowest resume step after each row
    return steps < lowest_after, int(back.sum())


@dataclass(frozen=True)
class Settled:
    """The rows of the run read, told apart: training rows (raw keys) and evaluation rows (`eval_record` keys), each
    in file order with steps that never go down within the training rows."""

    train: list[Row]  # or a `_table.RowTable` of them (a large JSON log's rows, read as columns)
    evals: list[Row]
    eval_keys: dict[str, str]  # an evaluation row's key -> the raw key it came from
    n_runs: int
    run_index: int
    step_axis: str
    interval: int | None  # the logging interval the rows were numbered by (None: the rows have steps)
    warnings: list[str]
    dropped: int  # rows dropped where the step counter went back (`resumed_rows`)
    train_groups: dict[tuple, list[int]]  # `train`'s row indices by key tuple


def settle(rows: list[Row], groups: dict[tuple, list[int]], reward_like: Callable[[str], bool], *,
           step_axis: str, numbered: bool, every: int | None, run: int | None, ordered: bool = True,
           marked: tuple[int, ...] = ()) -> Settled:
    """The rows of the run `run` (1-based; None: the last), eval rows apart, resumed steps dropped (see the module
    docstring). `numbered`: the rows have no steps of their own (numbered 1, 2, ... by the reader); `every`: the
    logging interval to number them by (None: 1); `ordered`: the file's order is the order of its steps (not for
    TensorBoard, whose scalars of several tags each follow their own clock: one run, nothing dropped); `marked`: row
    indices where runs begin by the file's own markers (`RawLog.run_starts`), read beside the steps' where the rows
    keep their places (no row split or reordered below)."""
    warnings: list[str] = []
    n_raw = len(rows)
    is_eval = eval_rows(rows, groups, reward_like)
    if is_eval.any():
        rows, groups, is_eval = split_eval_keys(rows, groups, is_eval)
    split = without_split_fields(rows, groups)
    if split is not rows:
        rows, groups = split, key_groups(split)
    if numbered:
        rows = number_rows(rows, is_eval, every or 1)
        if every and every > 1:
            step_axis = f"logging_steps {every} x row"
    steps = row_steps(rows)  # (n,)
    if ordered and not numbered and not step_axis.startswith(ROW_NUMBERS):  # the log's own steps only
        steps, joined = across_epochs(rows, groups, steps, is_eval)
        if joined:
            rows = with_steps(rows, steps)
            step_axis += f", counted on where it restarts with the epoch ({joined} time(s))"
    order, said = step_order(steps, is_eval) if ordered else (None, "")
    if order is not None:  # a table sorted newest first, or shuffled (`_order`)
        rows, steps, is_eval = [rows[i] for i in order.tolist()], steps[order], is_eval[order]
        groups, step_axis = key_groups(rows), f"{step_axis}, {said}"
    starts = run_starts(steps, is_eval) if ordered else np.zeros(1, dtype=np.int64)
    if marked and ordered and order is None and len(rows) == n_raw:
        starts = np.union1d(starts, np.asarray(marked, dtype=np.int64))
    turns = interleaved_runs(steps, is_eval) if ordered and starts.size == 1 else None
    if turns is not None:  # runs written into one file in turn (`_interleaved`): one of them
        _, run_index = pick_run(len(turns), np.arange(len(turns)), run)
        index, n_runs = turns[run_index - 1], len(turns)
        warnings.append(in_turn_said(turns, steps, run_index))
    else:
        chosen, run_index = pick_run(len(rows), starts, run)
        index, n_runs = np.arange(chosen.start, chosen.stop), int(starts.size)
    if starts.size > 1:
        warnings.append(f"the step counter starts again {starts.size - 1} time(s): the file holds {starts.size} runs, "
                        f"of which run {run_index} was read")
    keep, n_back = resumed_rows(steps[index], is_eval[index]) if ordered else (np.ones(len(rows), bool), 0)
    dropped = int((~keep).sum())
    if n_back:
        warnings.append(f"the step counter goes back {n_back} time(s) (a resumed run logging its steps again, or runs "
                        f"written into one file in turn): the later rows were kept and {dropped} earlier row(s) dropped")
    index = index[keep]
    evals = index[is_eval[index]]
    eval_keys: dict[str, str] = {}
    eval_list = []
    for i in evals.tolist():
        step, record = rows[i]
        eval_list.append((step, eval_record(record)))
        eval_keys.update((eval_key(k), k) for k in record if k not in META_KEYS and k not in SPLIT_FIELDS)
    kept = np.zeros(len(rows), dtype=bool)
    kept[index[~is_eval[index]]] = True
    return Settled(take_rows(rows, kept), eval_list, eval_keys, n_runs, run_index, step_axis,
                   every if numbered else None, warnings, dropped,
                   groups if kept.all() else regroup(groups, kept, set()))


@dataclass(frozen=True)
class _Built:
    steps: np.ndarray
    series: dict[str, np.ndarray]
    logged: dict[str, np.ndarray]
    diverged: dict[str, tuple[int, int]]
    columns: dict[str, str]
    unread: tuple[str, ...]
    from_training: frozenset[str]  # the names of series the training rows gave (an eval/ one: a key of their own)


def series_of(settled: Settled, chosen: dict[str, str], warnings: list[str]) -> _Built:
    """The training rows' series and the evaluation rows' `eval/<name>` ones on one step axis, which column each came
    from, the training columns the analysis has no name for; warnings appended to `warnings`."""
    train_keys = sorted(set().union(*settled.train_groups))  # one order on every run, whatever the hash seed
    names, name_warnings = resolve_names(train_keys, chosen, settled.eval_keys.values(), settled.train_groups)
    warnings += name_warnings
    steps, series, build_warnings, logged = build_series(settled.train, names.__getitem__, settled.train_groups)
    warnings += build_warnings + signed_kl(names, series, logged)
    diverged = trailing_non_finite(settled.train, names.__getitem__)
    warnings += [f"{name} is NaN or infinite in its last {count} logged value(s), from step {step} on"
                 + (" (the analysis reads the reward before it)" if name == "reward" else "")
                 for name, (step, count) in diverged.items()]
    columns = {name: key for key, name in names.items() if name in series}
    unread = tuple(sorted(key for key, name in names.items() if name in series and not _used(name)))
    if settled.evals:
        eval_names, eval_warnings = resolve_names(settled.eval_keys)
        warnings += eval_warnings
        eval_names = {key: name if name.startswith("eval/") else "eval/" + name for key, name in eval_names.items()}
        e_steps, e_series, e_warnings, e_logged = build_series(settled.evals, eval_names.__getitem__)
        warnings += [f"evaluation rows: {w}" for w in e_warnings]
        columns.update({name: settled.eval_keys[key] for key, name in eval_names.items() if name in e_series})
        steps, series, logged = merge_series((steps, series, logged), (e_steps, e_series, e_logged))
    return _Built(steps, series, logged, diverged, columns, unread, frozenset(names.values()))


def without_rows(built: _Built, keep: np.ndarray) -> _Built:
    """`built` with only the rows where `keep` holds (every series and logged mask cut alike)."""
    return dataclasses.replace(built, steps=built.steps[keep], series={n: a[keep] for n, a in built.series.items()},
                               logged={n: m[keep] for n, m in built.logged.items()})


def _used(name: str) -> bool:
    """Whether the analysis reads a series of this name."""
    return name in STANDARD_NAMES or name.startswith(("reward/", "eval/"))


def eval_points(built: _Built, settled: Settled) -> int:
    """Steps with an evaluation: those of the evaluation rows, and those where a training row holds an `eval/` value
    (verl's validation inside its step's row); of a series written on nearly every reward row (EVERY_ROW) with one
    value on most of them (a placeholder, 0.0 between evaluations), only the steps where it holds another."""
    steps = {step for step, _ in settled.evals}
    reward_rows = int(np.isfinite(built.series["reward"]).sum())
    for name, values in built.series.items():
        if not name.startswith("eval/") or name not in built.from_training:
            continue
        at = np.isfinite(values) | built.logged[name]
        if at.sum() >= EVERY_ROW * reward_rows:
            kinds, counts = np.unique(values[at], return_counts=True)
            if counts.size and counts.max() * 2 > at.sum():
                at &= values != kinds[np.argmax(counts)]
        steps.update(built.steps[at].tolist())
    return len(steps)


EVERY_ROW = 0.9  # an eval/ series on at least this share of the reward rows may be a placeholder
