"""One reader per log format: text or bytes in, raw rows `(step, {raw_key: value})` out.

Readers only parse; naming, alignment and validation happen once, in `_read.build_log`. A reader
raises `ConfigError` when the input is not its format at all, and otherwise reads what it can,
reporting what it skipped in `RawLog.warnings` (a best-effort read).
"""

from __future__ import annotations

import bisect
import collections
import itertools
import json
import operator
import re
from dataclasses import dataclass, field

import numpy as np

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.logs._columns import missing_column
from gspo_dynamics.logs._counters import COUNTER_KEYS, repeats
from gspo_dynamics.logs._groups import groups_of, regroup
from gspo_dynamics.logs._json_chunks import MAX_LINE, trl_document
from gspo_dynamics.logs._runlog import _MAX_STEP, Row, to_step
from gspo_dynamics.logs._table import RowTable, TableBuilder, attach_steps, column_values
from gspo_dynamics.logs._tfevents import read_events

try:  # a dependency, but optional at run time (see `_loads`)
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised by the tests with the module hidden
    _orjson = None

# Column names that carry the optimizer step, by priority: a trainer's step first, W&B's own `_step` (it counts log
# calls) last. `epoch` is none of them: a file without one of these is read on `epoch` only where every row has a
# whole-number epoch (a loop that logs once per epoch), else numbered by row.
STEP_KEYS = ("step", "global_step", "train/step", "train/global_step", "trainer/global_step", "iteration", "iter",
             "it", "update", "updates", "train_step", "optimizer_step", "grpo_step", "Step", "system/step",
             "global_step/max_steps", "_step")
_STEP_ORDER = (*STEP_KEYS[:-1], *COUNTER_KEYS, STEP_KEYS[-1])  # a loop's counters before W&B's `_step`
_OF_TOTAL = "global_step/max_steps"  # ms-swift's logging.jsonl: "5/300", the step before the slash
# A JSON document that holds its rows in a list (TRL rows re-saved by a callback, ROLL): {"steps": [{...}, ...]}.
ROW_LISTS = ("steps", "history", "rows", "records", "metrics", "logs")
# A JSON document of columns: {"step": [1, 2, ...], "reward": [0.1, 0.2, ...]} (a hand-written loop's history).
COLUMNS_DOCUMENT = re.compile(r'\A\s*\{\s*"[^"\n]{1,200}"\s*:\s*\[\s*(?:[-+\d.]|null|NaN|-?Infinity)')
# {"run A": {"steps": [...], "reward": [...]}, "run B": {...}}: several runs, each an object of columns
RUNS_DOCUMENT = re.compile(r'\A\s*\{\s*"[^"\n]{1,200}"\s*:\s*\{\s*"[^"\n]{1,200}"\s*:\s*\[')
ROWS_DOCUMENT = re.compile(r'\A\s*\{[^\[\]]{0,2000}?"(?:' + "|".join(ROW_LISTS) + r')"\s*:\s*\[\s*[{\]]')
NUMBERED = "rows were numbered 1, 2, ..."  # the end of `_finish`'s warning for rows without steps (`_follow` reads it)
# The step of a row that lacks the step column a column map names (told apart from a bad value).
_NO_STEP_COLUMN = -1
_MAX_LINE = MAX_LINE  # longer "lines" are binary junk, not log rows


@dataclass
class RawLog:
    rows: list[Row]
    warnings: list[str] = field(default_factory=list)
    logging_steps: int | None = None  # as recorded by the trainer, when it records it
    step_axis: str | None = None  # how the steps were found ("column 'iteration'"); None: said by the format
    groups: dict[tuple, list[int]] | None = None  # `_rows.key_groups(rows)` where the reader has them, else None
    run_names: list[str] | None = None  # the file's own names of its runs, in order (W&B's chart export), else None
    empty_columns: tuple[str, ...] = ()  # a table's columns without a value on any row (named where one was wanted)
    # row indices where a run begins that the steps alone do not show (a fresh run logging from its interval after a
    # run numbered from 1), known to the reader from the file's run markers (transformers' banner, its summary)
    run_starts: tuple[int, ...] = ()
    set_aside: tuple[str, ...] = ()  # rows the reader left out, each in a few words (`RunLog.set_aside`: said)


def cut_tail(text: str, warnings: list[str], row: str = "row") -> tuple[str, ...]:
    """Where `text` ends without a line end, its last `row` ("row", "line") was cut while written (a job killed, a
    copy taken while it ran): its last cell may be a number's first digits (`0.` of `0.4801`, a reward of 0 at the
    last step), so the reader leaves it out and this says so: the warning, and the `RunLog.set_aside` words it
    returns; () where the text ends its last line."""
    if not text or text.endswith(("\n", "\r")):
        return ()
    warnings.append(f"the last {row} has no line end: cut while being written, not read")
    return (f"the last {row}, cut mid-write, not read",)


def _loads(text: str):
    """json.loads, or None for text that is not JSON. Through orjson first when it is installed (a
    dependency; the readers work without it): the same values for standard JSON, about 2x faster on large logs; whatever
    orjson refuses (Python's NaN/Infinity literals, integers beyond 64 bits, deep nesting) is
    parsed by json. One difference is left: orjson returns an integer beyond 64 bits as the
    nearest float, which is what `build_series` makes of every value anyway (float64 series;
    steps beyond 2^53 are refused either way), so the `RunLog` never depends on the extra."""
    if _orjson is not None:
        try:
            return _orjson.loads(text)
        except _orjson.JSONDecodeError:
            pass
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _flatten(record: dict, prefix: str = "") -> dict[str, object]:
    """Nested dicts (W&B JSON exports) -> "a/b" keys."""
    if dict not in map(type, record.values()):  # readers build plain dicts; C-speed check per row
        return record
    flat: dict[str, object] = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and len(prefix) < 200:
            flat.update(_flatten(value, name + "/"))
        else:
            flat[name] = value
    return flat


def _step_value(key: str, value: object) -> object:
    """A step column's value as a step: ms-swift's "5/300" (`_OF_TOTAL`) is the step before the slash."""
    return value.partition("/")[0] if key == _OF_TOTAL and isinstance(value, str) else value


def _split_step(record: dict[str, object], step_key: str | None) -> tuple[int | None, dict]:
    """(step, the other keys); the step from `step_key` when given, else the first of STEP_KEYS."""
    step = None
    for key in (step_key,) if step_key else STEP_KEYS:
        if key in record:
            step = to_step(_step_value(key, record[key]))
            break
    else:
        if step_key:
            step = _NO_STEP_COLUMN
    rest = dict(record)
    for key in (step_key, *STEP_KEYS):
        rest.pop(key, None)
    return step, rest


def _finish(records: list[tuple[int | None, dict]], what: str, warnings: list[str],
            step_key: str | None = None) -> list[Row]:
    """Drop rows without a usable step; number rows by position when no row has a step (`_valid_steps`).

    step_key: the step column of a column map; an error when no row has it.
    """
    if step_key is not None:
        if records and all(step == _NO_STEP_COLUMN for step, _ in records):
            columns = set().union(*(record for _, record in records))
            raise missing_column("step", step_key, columns, what)
        records = [(None if step == _NO_STEP_COLUMN else step, rec) for step, rec in records]
    return attach_steps([rec for _, rec in records], _valid_steps([step for step, _ in records], what, warnings))


def _valid_steps(steps: list, what: str, warnings: list[str]) -> list:
    """The rows' steps (None: no usable step, a row to leave out, said in a warning); 1, 2, ... when no row has one."""
    if steps and all(step is None for step in steps):
        warnings.append(f"the {what} has no step numbers; {NUMBERED}")
        return list(range(1, len(steps) + 1))
    bad = steps.count(None)
    if bad:
        warnings.append(f"{bad} row(s) without a valid non-negative integer step were skipped")
    return steps


ROW_NUMBERS = "row numbers"  # how every step axis a reader numbered itself begins (not the log's own steps)
NUMBERED_AXIS = f"{ROW_NUMBERS} (no step found)"


def _step_column(objects, present: list[str]) -> tuple[str | None, list]:
    """(the step column, each row's step or None): of `present` (STEP_KEYS in the file, by priority), those held by
    at least half of the rows whose values are steps in most rows that hold it (a loop's counter, `COUNTER_KEYS`, where
    no row repeats the step of the row before), the one giving the most rows a step (a loop's `grpo_step` on every row
    before its `optimizer_step` on the update rows only), the first by priority among equals, W&B's `_step` only where
    no other qualifies; then `epoch` where it is a whole number in every row.
    objects: flat records, a list or a `RowTable`."""
    best: tuple[int, str, list] | None = None
    for key in present:
        if best is not None and key == "_step":
            break
        values = column_values(objects, key)
        if key == _OF_TOTAL:
            values = [_step_value(key, v) for v in values]
        held = len(values) - values.count(None)
        if 2 * held < len(values):  # a step column is on most rows (a summary row's global_step is no axis)
            continue
        steps = _steps_of(values)
        valid = len(steps) - steps.count(None)
        if key in COUNTER_KEYS and repeats(steps):
            continue
        if 2 * valid > held and (best is None or valid > best[0]):
            best = (valid, key, steps)
            if valid == len(objects):  # every row has its step: no later key can give more
                break
    if best is not None:
        return best[1], best[2]
    epochs = _steps_of(column_values(objects, "epoch"))
    if len(objects) and None not in epochs:
        return "epoch", epochs
    return None, [None] * len(objects)


def _steps_of(values: list) -> list:
    """`to_step` of each value: the values themselves where all are ints in range (checked at C speed)."""
    if values and set(map(type, values)) == {int} and min(values) >= 0 and max(values) <= _MAX_STEP:
        return values
    return list(map(to_step, values))


def _step_rows(objects, what: str, warnings: list[str], step_key: str | None, owned: bool = False,
               groups: dict[tuple, list[int]] | None = None) -> tuple[list[Row], str, dict[tuple, list[int]] | None]:
    """(rows, step axis, their `key_groups`) of flat records (a list, or a `RowTable` without steps: rows of a table
    then): the step from one column for the whole file (`step_key`, else `_step_column`), every step column left out
    of the rows; rows numbered 1, 2, ... when no column gives steps. owned: the records are the reader's own (parsed
    here), changed in place; else copied (a caller's rows). groups: the records' `key_groups` where the reader has
    them, carried over to the rows (else None)."""
    if isinstance(objects, RowTable) and step_key is not None:
        objects = objects.records()  # a column map's step column: read row by row
    keys = set().union(*(groups if groups is not None else objects)) if len(objects) else set()
    kept = np.ones(len(objects), dtype=bool) if groups is not None else None  # (n,) the records that become rows
    if "train_runtime" in keys:  # transformers' end-of-training summary row (`is_summary_row`): not a metric row
        if kept is not None:
            kept[[i for k, members in groups.items() if "train_runtime" in k for i in members]] = False
        objects = objects.take(kept) if isinstance(objects, RowTable) else [o for o in objects
                                                                            if "train_runtime" not in o]
    if step_key is not None:
        if objects and step_key not in keys:
            raise missing_column("step", step_key, keys, what)
        rows = _finish([_split_step(o, step_key) for o in objects], what, warnings, step_key)
        return rows, f"column {step_key!r}", None
    present = [key for key in _STEP_ORDER if key in keys]
    column, steps = _step_column(objects, present)
    records = objects if owned or isinstance(objects, RowTable) else [dict(o) for o in objects]
    popped = [key for key in present if key not in COUNTER_KEYS or key == column] + ["epoch"] * (column == "epoch")
    if isinstance(records, RowTable):
        records = records.without(set(popped))
    else:
        for key in popped:
            collections.deque(map(operator.methodcaller("pop", key, None), records), maxlen=0)  # C speed, per key
    steps = _valid_steps(steps, what, warnings)
    if kept is not None and None in steps:
        kept[np.flatnonzero(kept)[[i for i, step in enumerate(steps) if step is None]]] = False
    rows = attach_steps(records, steps)
    axis = NUMBERED_AXIS if column is None else f"column {column!r}" + (" (no step column)" if column == "epoch"
                                                                        else "")
    return rows, axis, None if kept is None else regroup(groups, kept, set(popped))


# ---- TRL trainer_state.json -----------------------------------------------------------------


def _unparsed(text: str, what: str, instead: str = "") -> ConfigError:
    """The error for a JSON document that does not parse: where it stops, when it is cut short (a job killed while
    writing it: the parser reaches the end still inside it), else where it is damaged; `instead`: what to read in
    its place."""
    text = text.decode("ascii") if isinstance(text, bytes) else text
    try:
        json.loads(text)
        return ConfigError(f"the {what} could not be read as JSON")  # orjson and json disagree: not expected
    except RecursionError:
        return ConfigError(f"the {what} nests too deeply to be read as JSON")
    except json.JSONDecodeError as exc:
        end = len(text.rstrip())
        if exc.pos < end and not exc.msg.startswith("Unterminated string"):
            return ConfigError(f"the {what} is not valid JSON: line {exc.lineno}, column {exc.colno}: {exc.msg}")
        line = text.count("\n", 0, end) + 1
        column = end - text.rfind("\n", 0, end) - 1
        return ConfigError(f"the {what} is cut short: it ends at line {line}, column {column} (character {end}) before "
                           f"its JSON is complete, as a job killed while writing it leaves it{instead}")


def read_trl_state(text: str, step_key: str | None = None) -> RawLog:
    """TRL/transformers `trainer_state.json`: rows of `log_history`, summary row skipped. A file that does not parse
    (cut short by a killed job, or damaged) is one ConfigError saying where: its rows are not guessed at. Bytes: read
    in pieces where they allow (`_json_chunks.trl_document`), the rows kept as columns (`_table.RowTable`)."""
    if isinstance(text, bytes):
        builder, n_bad = TableBuilder(), []

        def collect(rows: list, flat: bool) -> None:  # a piece's rows, as `read_trl_history` takes them
            objects, groups, bad = _history_objects(rows, range(len(rows)) if flat else range(0))
            builder.add(objects, groups)
            n_bad.append(bad)

        pieces = trl_document(text, collect=collect)
        if pieces is not None:
            del text  # the rows are parsed: the text is not needed again
            return _history_log(builder.table(), None, step_key, pieces[0].get("logging_steps"),
                                _not_objects(sum(n_bad)), True)
    state = _loads(text)
    if state is None:
        raise _unparsed(text, "trainer_state.json", "; give an earlier checkpoint's copy, or the run's TensorBoard events")
    del text
    if not isinstance(state, dict) or not isinstance(state.get("log_history"), list):
        raise ConfigError("the trainer_state.json has no 'log_history' list of rows")
    return read_trl_history(state["log_history"], step_key, state.get("logging_steps"), owned=True)


def read_trl_history(history: list, step_key: str | None = None, logging_steps: object = None,
                     warnings: list[str] | None = None, owned: bool = False, flat: range = range(0)) -> RawLog:
    """Rows of a TRL `log_history` list (in memory, e.g. `TrainerState.log_history`); owned: the rows are the
    reader's own (parsed from a file), not a caller's, and may be changed in place; flat: the rows known to hold no
    object (nothing to flatten)."""
    objects, groups, n_bad = _history_objects(history, flat)
    warnings = ([] if warnings is None else warnings) + _not_objects(n_bad)
    return _history_log(objects, groups, step_key, logging_steps, warnings, owned)


def _not_objects(n_bad: int) -> list[str]:
    """The warning for `log_history` entries that are not JSON objects, where there are any."""
    return [f"{n_bad} log_history entries were not JSON objects and were skipped"] if n_bad else []


def _history_log(objects, groups: dict[tuple, list[int]] | None, step_key: str | None, logging_steps: object,
                 warnings: list[str], owned: bool) -> RawLog:
    """The RawLog of a `log_history`'s flat records (a list or a `RowTable`) and their key groups (None: not known)."""
    if groups is None and step_key is None:
        groups = objects.groups if isinstance(objects, RowTable) else groups_of(map(tuple, objects))
    rows, axis, groups = _step_rows(objects, "log_history", warnings, step_key, owned,
                                    groups if step_key is None else None)
    return RawLog(rows, warnings, _interval(logging_steps), axis, groups)


def _history_objects(history: list, flat: range) -> tuple[list[dict], dict[tuple, list[int]] | None, int]:
    """(the records of a `log_history` list: its objects that are not summary rows (`is_summary_row`), flattened;
    their key groups where known, else None; how many entries were not objects)."""
    if history and set(map(type, history)) == {dict}:  # C speed; the summary rows found by their keys
        return (*_history_rows(history, flat), 0)
    objects, n_bad = [], 0
    for row in history:
        if not isinstance(row, dict):
            n_bad += 1
        elif "train_runtime" not in row and "train_loss" not in row:  # the summary row (`is_summary_row`)
            objects.append(row if dict not in map(type, row.values()) else _flatten(row))
    return objects, None, n_bad


def _history_rows(history: list[dict], flat: range) -> tuple[list[dict], dict[tuple, list[int]] | None]:
    """(the rows of `history` that are not summary rows (`is_summary_row`), flattened, and their key groups where
    no row needed flattening, else None); `flat`: rows known to need none (the others are looked at)."""
    groups = groups_of(map(tuple, history))
    kept = np.ones(len(history), dtype=bool)  # (n,)
    objects = list(history)  # a new list: a caller's is left as it is
    flattened = False
    for keys, members in groups.items():
        if "train_runtime" in keys or "train_loss" in keys:  # the summary row
            kept[members] = False
            continue
        inside = bisect.bisect_left(members, flat.start), bisect.bisect_left(members, flat.stop)
        for i in itertools.chain(members[:inside[0]], members[inside[1]:]):  # `_flatten`, its check inlined
            if dict in map(type, objects[i].values()):
                objects[i] = _flatten(objects[i])
                flattened = True
    objects = list(itertools.compress(objects, kept.tolist()))
    return objects, None if flattened else regroup(groups, kept, set())


def _interval(logging_steps: object) -> int | None:
    """A recorded logging interval: a positive int, else None."""
    ok = isinstance(logging_steps, int) and not isinstance(logging_steps, bool) and logging_steps > 0
    return logging_steps if ok else None


# ---- TensorBoard ----------------------------------------------------------------------------


def read_tensorboard(data: bytes, step_key: str | None = None) -> RawLog:
    """Scalars of a TensorBoard event file, one row per (step, tag)."""
    scalars, warnings = read_events(data)
    rows: list[Row] = []
    n_bad = 0
    for step, tag, value in scalars:
        if step < 0:
            n_bad += 1
            continue
        rows.append((step, {tag: value}))
    if n_bad:
        warnings.append(f"{n_bad} scalar(s) with a negative step were skipped")
    if not rows:
        raise ConfigError("the TensorBoard event file holds no scalar summaries")
    return RawLog(rows, warnings, None, "TensorBoard steps")
