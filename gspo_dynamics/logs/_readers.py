"""One reader per log format: text or bytes in, raw rows `(step, {raw_key: value})` out.

Readers only parse; naming, alignment and validation happen once, in `_read.build_log`. A reader
raises `ConfigError` when the input is not its format at all, and otherwise reads what it can,
reporting what it skipped in `RawLog.warnings` (a best-effort read).
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.logs._columns import missing_column
from gspo_dynamics.logs._names import is_summary_row
from gspo_dynamics.logs._runlog import Row, to_step
from gspo_dynamics.logs._tfevents import read_events

try:  # a dependency, but optional at run time (see `_loads`)
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised by the tests with the module hidden
    _orjson = None

# Column names that carry the optimizer step, by priority (W&B's own `_step` counts log calls,
# so a trainer's step wins over it).
STEP_KEYS = ("step", "global_step", "train/global_step", "trainer/global_step", "_step", "Step")
# The step of a row that lacks the step column a column map names (told apart from a bad value).
_NO_STEP_COLUMN = -1
_MAX_LINE = 1_000_000  # longer "lines" are binary junk, not log rows


@dataclass
class RawLog:
    rows: list[Row]
    warnings: list[str] = field(default_factory=list)
    logging_steps: int | None = None  # as recorded by the trainer, when it records it


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


def _split_step(record: dict[str, object], step_key: str | None) -> tuple[int | None, dict]:
    """(step, the other keys); the step from `step_key` when given, else the first of STEP_KEYS."""
    step = None
    for key in (step_key,) if step_key else STEP_KEYS:
        if key in record:
            step = to_step(record[key])
            break
    else:
        if step_key:
            step = _NO_STEP_COLUMN
    rest = dict(record)
    for key in (step_key, *STEP_KEYS):
        rest.pop(key, None)
    return step, rest


def _split_flat(row: dict, step_key: str | None) -> tuple[int | None, dict]:
    """`_split_step(_flatten(row), step_key)` with one copy of the row (this runs once per row)."""
    if step_key is not None:
        return _split_step(_flatten(row), step_key)
    # a copy either way: never modify the caller's rows
    rest = _flatten(row) if dict in map(type, row.values()) else dict(row)
    step, found = None, False
    for key in STEP_KEYS:  # by priority: the first present key gives the step (as `_split_step`)
        if key in rest:
            if not found:
                step, found = to_step(rest[key]), True
            del rest[key]
    return step, rest


def _finish(records: list[tuple[int | None, dict]], what: str, warnings: list[str],
            step_key: str | None = None) -> list[Row]:
    """Drop rows without a usable step; number rows by position when no row has a step.

    step_key: the step column of a column map; an error when no row has it.
    """
    if step_key is not None:
        if records and all(step == _NO_STEP_COLUMN for step, _ in records):
            columns = set().union(*(record for _, record in records))
            raise missing_column("step", step_key, columns, what)
        records = [(None if step == _NO_STEP_COLUMN else step, rec) for step, rec in records]
    if records and all(step is None for step, _ in records):
        warnings.append(f"the {what} has no step numbers; rows were numbered 1, 2, ...")
        return [(i + 1, rec) for i, (_, rec) in enumerate(records)]
    bad = sum(step is None for step, _ in records)
    if bad:
        warnings.append(f"{bad} row(s) without a valid non-negative integer step were skipped")
    return [(step, rec) for step, rec in records if step is not None]


# ---- TRL trainer_state.json -----------------------------------------------------------------


def _unparsed(text: str, what: str, instead: str = "") -> ConfigError:
    """The error for a JSON document that does not parse: where it stops, when it is cut short (a job killed while
    writing it: the parser reaches the end still inside it), else where it is damaged; `instead`: what to read in
    its place."""
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
    (cut short by a killed job, or damaged) is one ConfigError saying where: its rows are not guessed at."""
    state = _loads(text)
    if state is None:
        raise _unparsed(text, "trainer_state.json", "; give an earlier checkpoint's copy, or the run's TensorBoard events")
    if not isinstance(state, dict) or not isinstance(state.get("log_history"), list):
        raise ConfigError("the trainer_state.json has no 'log_history' list of rows")
    return read_trl_history(state["log_history"], step_key, state.get("logging_steps"))


def read_trl_history(history: list, step_key: str | None = None, logging_steps: object = None,
                     warnings: list[str] | None = None) -> RawLog:
    """Rows of a TRL `log_history` list (in memory, e.g. `TrainerState.log_history`)."""
    warnings = [] if warnings is None else warnings
    records = []
    n_bad = 0
    for row in history:  # runs once per logged row: `_split_step` and `is_summary_row` inlined
        if not isinstance(row, dict):
            n_bad += 1
            continue
        if "train_runtime" in row or "train_loss" in row:  # the summary row (`is_summary_row`)
            continue
        records.append(_split_flat(row, step_key))
    if n_bad:
        warnings.append(f"{n_bad} log_history entries were not JSON objects and were skipped")
    interval = logging_steps
    interval = interval if isinstance(interval, int) and not isinstance(interval, bool) else None
    recorded = interval if interval and interval > 0 else None
    return RawLog(_finish(records, "log_history", warnings, step_key), warnings, recorded)


# ---- JSON Lines (generic, W&B, verl file logger) and JSON arrays -----------------------------


def _one_object_per_line(text: str) -> list | None:
    """The objects of a clean JSONL text in one parse (fast), or None to go line by line.

    Clean: the non-blank lines joined as a JSON array parse to exactly one object per line; anything
    else (a bad line, a line with two objects) returns None.
    """
    lines = [line for line in text.splitlines() if line and not line.isspace()]  # no copies
    if not lines or max(map(len, lines)) > _MAX_LINE:
        return None
    objects = _loads("[" + ",".join(lines) + "]")
    if not isinstance(objects, list) or len(objects) != len(lines):
        return None
    return objects if all(isinstance(obj, dict) for obj in objects) else None


def read_jsonl(text: str, step_key: str | None = None) -> RawLog:
    """One JSON object per line (or one JSON array of objects); nested dicts are flattened.

    verl's file logger writes {"step": N, "data": {...}}: `data/` is dropped from the names.
    """
    warnings: list[str] = []
    array = text.lstrip().startswith("[")
    whole = _loads(text) if array else None
    if array and whole is None and text.lstrip()[1:].lstrip()[:1] in ("{", "]", ""):  # a JSON array of rows, broken
        raise _unparsed(text, "JSON log (one array of rows)")
    if isinstance(whole, list):
        objects, n_bad = whole, 0
    else:
        fast, objects, n_bad = _one_object_per_line(text), [], 0
        lines = [] if fast is not None else [line for line in text.splitlines() if line.strip()]
        for line in lines:
            obj = _loads(line) if len(line) <= _MAX_LINE else None
            if obj is None:
                n_bad += 1
            else:
                objects.append(obj)
        objects = objects if fast is None else fast
        if lines and not text.endswith("\n") and lines[-1].lstrip().startswith("{") and _loads(lines[-1]) is None:
            n_bad -= 1  # a last row cut short: a log still being written, or a killed job's; said as such
            warnings.append(f"line {text.count(chr(10)) + 1}, the last, is cut short (a log still being written, or a "
                            "killed job's); the rows before it were read")
    records = []
    for obj in objects:
        if not isinstance(obj, dict):
            n_bad += 1
            continue
        if isinstance(obj.get("data"), dict):  # verl file logger
            obj = {**{k: v for k, v in obj.items() if k != "data"}, **obj["data"]}
        records.append(_split_flat(obj, step_key))
    if n_bad:
        warnings.append(f"{n_bad} line(s) were not JSON objects and were skipped")
    if not records:
        raise ConfigError("no JSON objects were found in the file")
    return RawLog(_finish(records, "JSON log", warnings, step_key), warnings)


# ---- CSV (W&B / generic exports) ------------------------------------------------------------


def read_csv(text: str, step_key: str | None = None) -> RawLog:
    """A table with a header row; the delimiter is the first of `,` tab `;` in the header."""
    warnings: list[str] = []
    lines = text.lstrip("\ufeff").splitlines()
    header = next((line for line in lines if line.strip()), "")
    delimiter = next((d for d in (",", "\t", ";") if d in header), None)
    if delimiter is None:
        raise ConfigError("the CSV has no header row with ',', tab or ';' separated column names")
    try:
        body = "\n".join(line for line in lines if line.strip())
        table = list(csv.reader(io.StringIO(body), delimiter=delimiter))
    except csv.Error as error:
        reason = " ".join(str(error).split())
        raise ConfigError(f"the CSV could not be parsed ({reason})") from None
    names = [name.strip() for name in table[0]]
    if step_key is not None and step_key not in names:
        raise missing_column("step", step_key, names, "CSV")
    if len(set(names)) != len(names):
        warnings.append("the CSV header repeats column names; the last of each was kept")
    records, n_ragged = [], 0
    for cells in table[1:]:
        if len(cells) != len(names):
            n_ragged += 1
        record = {name: cell for name, cell in zip(names, cells) if cell.strip() != ""}
        records.append(_split_step(record, step_key))
    if n_ragged:
        warnings.append(f"{n_ragged} CSV row(s) had a different number of cells than the header")
    if not records:
        raise ConfigError("the CSV has a header but no data rows")
    return RawLog(_finish(records, "CSV", warnings, step_key), warnings)


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
    return RawLog(rows, warnings)
