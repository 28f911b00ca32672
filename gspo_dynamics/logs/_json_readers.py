"""JSON Lines and JSON documents as raw rows: one object per line (generic, W&B, verl's file logger), a JSON array of
rows, a document holding its rows in a list (`{"steps": [...]}`: TRL rows re-saved by a callback, ROLL) or its columns
in lists (a hand-written loop's history). Parsed in pieces (`_json_chunks`) where the text allows; the steps and the
rest as every structured reader (`_readers`).
"""

from __future__ import annotations

import collections
import itertools
import math

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.logs._groups import groups_of
from gspo_dynamics.logs._json_chunks import count_bytes, jsonl_objects, objects_of_lines
from gspo_dynamics.logs._json_series import SERIES_DOCUMENT, series_rows
from gspo_dynamics.logs._readers import (
    COLUMNS_DOCUMENT,
    RUNS_DOCUMENT,
    ROW_LISTS,
    ROWS_DOCUMENT,
    _MAX_LINE,
    RawLog,
    _flatten,
    _interval,
    _loads,
    _step_rows,
    _unparsed,
)
from gspo_dynamics.logs._table import RowTable, TableBuilder

def _one_object_per_line(text: str | bytes, chunk: int | None = None) -> list | None:
    """The objects of a clean JSONL text (str, or ASCII bytes: see `_detect._plain_ascii`), or None to go line by line.

    Clean: the non-blank lines joined as a JSON array parse to exactly one object per line; anything
    else (a bad line, a line with two objects) returns None. Parsed in pieces of about `chunk` characters
    (`_json_chunks.jsonl_objects`, no copy of the whole text); where a piece is not clean, the whole text is parsed
    at once, as it always was."""
    objects = jsonl_objects(text, chunk)
    return objects if objects is not None else objects_of_lines(text.splitlines(), _loads) or None


def read_jsonl(text: str | bytes, step_key: str | None = None) -> RawLog:
    """One JSON object per line (or one JSON array of objects, or one object holding them in a list under one of
    ROW_LISTS: `{"steps": [...]}`, or one object of columns: `{"step": [1, 2], "reward": [0.1, 0.3]}`); nested dicts
    are flattened. A JSON `null` is a missing value. Bytes: ASCII text (`_detect._plain_ascii`); clean JSON lines are
    read from them in pieces, the rows kept as columns (`_table.RowTable`).

    verl's file logger writes {"step": N, "data": {...}}: `data/` is dropped from the names, and a null in `data` is a
    NaN or an infinity (orjson writes them so), kept as NaN: a logged non-finite value, not a missing one.
    """
    warnings: list[str] = []
    table = _clean_lines(text) if isinstance(text, bytes) else None
    if table is not None:
        del text  # the rows are parsed: the text is not needed again
        rows, axis, groups = _step_rows(table, "JSON log", warnings, step_key, owned=True,
                                        groups=table.groups if step_key is None else None)
        return RawLog(rows, warnings, None, axis, groups)
    objects, n_bad, logging_steps = _json_objects(text.decode("ascii") if isinstance(text, bytes) else text, warnings)
    groups = None
    if objects and set(map(type, objects)) == {dict}:  # C speed; a key set's rows are flattened (or not) together
        # as many `{` in the text as objects: each holds its own, none holds a dict (each would hold one more)
        nested = count_bytes(text, b"{") != len(objects)
        del text  # before the rows' key tuples are made
        records, groups = _flat_records(objects, nested)
    else:
        records = []
        for obj in objects:
            if not isinstance(obj, dict):
                n_bad += 1
                continue
            records.append(_record(obj))
    if n_bad:
        warnings.append(f"{n_bad} line(s) were not JSON objects and were skipped")
    if not records:
        raise ConfigError(_no_rows(text))
    rows, axis, groups = _step_rows(records, "JSON log", warnings, step_key, owned=True,
                                    groups=groups if step_key is None else None)
    return RawLog(rows, warnings, logging_steps, axis, groups)


# keys of a TRL GRPOConfig that no row of metrics holds: two of them make a file a config, not a log
CONFIG_KEYS = frozenset({"learning_rate", "num_generations", "per_device_train_batch_size", "gradient_accumulation_steps",
                         "max_completion_length", "num_iterations", "steps_per_generation", "lr_scheduler_type",
                         "warmup_steps", "warmup_ratio", "max_steps", "num_train_epochs", "output_dir"})


def config_not_log(keys) -> str | None:
    """The error for a file whose keys are a training config's (two of CONFIG_KEYS, or verl's actor_rollout_ref),
    else None."""
    config = [str(key) for key in keys if key in CONFIG_KEYS or key == "actor_rollout_ref"]
    if len(config) < 2 and "actor_rollout_ref" not in config:
        return None
    return (f"the file is a training config ({', '.join(config[:3])}, ...), not a log of metrics: `predict --config` "
            "reads it; diagnose, report and --pilot read the run's log (trainer_state.json, a metrics JSONL, the "
            "console output)")


def _no_rows(text: str | bytes) -> str:
    """Why a JSON text gave no rows: one document (an object whose row list is empty, a summary of last values) said
    as such with its keys, else that no line held a JSON object."""
    text = text.decode("ascii", "replace") if isinstance(text, bytes) else text  # bytes: ASCII (`read_jsonl`)
    document = _loads(text) if text.lstrip().startswith("{") else None
    if not isinstance(document, dict):
        return "no JSON objects were found in the file"
    keys = list(map(str, document))
    config = config_not_log(keys)
    if config:
        return config
    empty = [key for key in ROW_LISTS if document.get(key) == []]
    said = f"its {' and '.join(map(repr, empty))} {'list is' if len(empty) == 1 else 'lists are'} empty" if empty else (
        "none of them a list of rows (one row per step: " + ", ".join(ROW_LISTS) + ") or of columns")
    summary = ("; a 'summary' holds a run's last values, not its curve (W&B's run history is the curve)"
               if "summary" in document else "")
    return (f"the file is one JSON object of {len(keys)} key(s) ({', '.join(keys[:6])}{', ...' if len(keys) > 6 else ''}) "
            f"with no rows of metrics: {said}{summary}")


def _flat_records(objects: list[dict], nested: bool) -> tuple[list[dict], dict[tuple, list[int]] | None]:
    """(the objects flat, in place: verl's rows by `_record`, other rows holding a dict by `_flatten`; their key
    groups, None where a row's keys changed). nested: whether any object may hold a dict (else none is looked at)."""
    groups = groups_of(map(tuple, objects))
    flattened = False
    for keys, members in groups.items() if nested else ():
        if "data" in keys:  # verl file logger, row by row
            for i in members:
                objects[i] = _record(objects[i])
        elif dict in set(map(type, itertools.chain.from_iterable(map(dict.values, map(objects.__getitem__,
                                                                                      members))))):
            for i in members:
                objects[i] = _flatten(objects[i])
        else:
            continue
        flattened = True
    return objects, None if flattened else groups


def _record(obj: dict) -> dict:
    """One JSON row flat: verl's `{"step": N, "data": {...}}` with its data at the top, a null there kept as NaN."""
    data = obj.get("data")
    if isinstance(data, dict):  # verl file logger
        obj = {**{k: v for k, v in obj.items() if k != "data"},
               **{k: (math.nan if v is None else v) for k, v in data.items()}}
    return _flatten(obj)


def _clean_lines(data: bytes) -> RowTable | None:
    """The rows of ASCII bytes that are clean JSON lines (`_one_object_per_line`) as a table, flat (`_flat_records`),
    else None: a document, an array, or a line that does not parse is read from the text."""
    head = data[:8192].lstrip()
    if len(head) < 4096 < len(data) or not head.startswith(b"{"):
        return None
    head = head[:4096].decode("ascii")
    if any(d.match(head) for d in (ROWS_DOCUMENT, COLUMNS_DOCUMENT, SERIES_DOCUMENT, RUNS_DOCUMENT)):
        return None
    builder = TableBuilder()

    def collect(objects: list, piece: bytes) -> None:  # `{` once per object: none holds a dict
        builder.add(*_flat_records(objects, count_bytes(piece, b"{") != len(objects)))

    if jsonl_objects(data, collect=collect) is None:
        builder = TableBuilder()  # a piece not clean: the lines parsed together, as `_one_object_per_line` does
        objects = objects_of_lines(data.splitlines(), _loads) or None
        if objects is None:
            return None
        collect(objects, data)
    table = builder.table()
    if len(table) == 1 and _row_list(table.records()[0]) is not None:
        return None
    return table


def _row_list(document: object) -> list | None:
    """The rows of a JSON object that holds them in a list under one of ROW_LISTS, else None."""
    if not isinstance(document, dict):
        return None
    for key in ROW_LISTS:
        rows = document.get(key)
        if isinstance(rows, list) and rows and all(isinstance(row, dict) for row in rows[:3]):
            return rows
    return None


def _runs_of_columns(document: object, warnings: list[str]) -> list[dict] | None:
    """The rows of a JSON object whose every value is one run's object of columns (`_column_rows`), one run after
    another in the file's order, said in a warning; None unless it is plainly that (audit s38b R5: three runs as
    columns were flattened into one row of lists, and the map the refusal offered was refused in turn). Plainly: at
    least two runs, none named as a split of one run (`train`, `eval`, ...: SPLIT_NAMES), each with a step column
    (`step`, or its plural) and the reward by its name (its other columns its own), and each run's steps starting at
    or below the run before's first step, where the readers' step counter (`_rows.settle`) tells the runs apart."""
    if not isinstance(document, dict) or len(document) < 2 or not all(isinstance(v, dict) for v in document.values()):
        return None
    if any(str(name).strip().lower() in SPLIT_NAMES for name in document):
        return None
    runs = [_column_rows(run, []) for run in document.values()]
    if any(not rows for rows in runs):
        return None
    # a run's x axis under the plural (`"steps": [0, 1, ...]`): its step column, where it has no `step`
    runs = [[{("step" if key == "steps" and "step" not in row else key): value for key, value in row.items()}
             for row in rows] for rows in runs]
    if any("step" not in rows[0] or "reward" not in rows[0] for rows in runs):
        return None
    firsts = [rows[0]["step"] for rows in runs]
    if not all(isinstance(f, (int, float)) for f in firsts) or any(b > a for a, b in zip(firsts, firsts[1:])):
        return None
    warnings.append(f"the document holds {len(runs)} runs as columns ({', '.join(map(repr, list(document)[:6]))}"
                    f"{', ...' if len(runs) > 6 else ''}): read one after another, each from its first step")
    return [row for rows in runs for row in rows]


# names of one run's splits, not of runs (`_runs_of_columns`)
SPLIT_NAMES = frozenset({"train", "training", "eval", "evaluation", "val", "valid", "validation", "test", "dev"})


def _column_rows(document: object, warnings: list[str]) -> list[dict] | None:
    """The rows of a JSON object of columns (nested objects flattened): one row per position of its lists of the most
    common length (the others, and its single values, left out with a warning); None when it holds no such list."""
    if not isinstance(document, dict):
        return None
    columns = {key: values for key, values in _flatten(document).items()
               if isinstance(values, list) and values and not any(isinstance(v, (list, dict)) for v in values)}
    if not columns:
        return None
    length = collections.Counter(map(len, columns.values())).most_common(1)[0][0]
    other = sorted(key for key, values in columns.items() if len(values) != length)
    if other:
        warnings.append(f"columns of another length than {length} were left out: {', '.join(map(repr, other[:8]))}"
                        + (f" and {len(other) - 8} more" if len(other) > 8 else ""))
    keys = [key for key, values in columns.items() if len(values) == length]
    return [dict(zip(keys, values)) for values in zip(*(columns[key] for key in keys))]


def _json_objects(text: str, warnings: list[str]) -> tuple[list, int, int | None]:
    """(the JSON values of a JSON-lines, JSON-array or row-list text, how many lines were not JSON, the logging
    interval a row-list document records)."""
    stripped = text.lstrip()
    if stripped.startswith("{") and ROWS_DOCUMENT.match(stripped[:4096]):
        document = _loads(text)
        rows = _row_list(document)
        if rows is not None:
            return rows, 0, _interval(document.get("logging_steps"))
    if COLUMNS_DOCUMENT.match(stripped[:4096]):
        rows = _column_rows(_loads(text), warnings)
        if rows is not None:
            return rows, 0, None
    if SERIES_DOCUMENT.match(stripped[:4096]):
        rows = series_rows(_loads(text), warnings)
        if rows is not None:
            return rows, 0, None
    if RUNS_DOCUMENT.match(stripped[:4096]):
        rows = _runs_of_columns(_loads(text), warnings)
        if rows is not None:
            return rows, 0, None
    array = stripped.startswith("[")
    whole = _loads(text) if array else None
    if array and whole is None and stripped[1:].lstrip()[:1] in ("{", "]", ""):  # a JSON array of rows, broken
        raise _unparsed(text, "JSON log (one array of rows)")
    if isinstance(whole, list):
        return whole, 0, None
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
    if len(objects) == 1 and _row_list(objects[0]) is not None:  # {"steps": [...]} on one line
        return _row_list(objects[0]), n_bad, _interval(objects[0].get("logging_steps"))
    return objects, n_bad, None
