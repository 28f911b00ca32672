"""A log's format from its content: `detect_format`, and the text of its bytes (`_as_text`).

Detection rules, first match wins (the content decides, never the file name):

  tensorboard    bytes start with a valid TFRecord header (length + its masked CRC-32C)
  trl_state      a JSON object (possibly truncated) with a "log_history" key
  jsonl          a JSON array of objects, or lines that are JSON objects
                 (verl's file logger {"step": N, "data": {...}} included)
  console        metric lines in the first 200k characters (or, where none, in the 200k from a later line that looks
                 like one), after any prefix (`_console.py`): printed dicts, or key: value / key=value lists with a
                 step counter or two numbers; named
    verl_console   where most are verl's `step:N - key:value` lines
    hf_console     where most are dicts printed by Python `{'key': value, ...}` (transformers' Trainer)
  csv            a header of names split by `,`, tab or `;`, the lines below it (most of them) as many fields,
                 mostly numbers; a banner with commas is not a header; an empty first name is a row index (pandas'
                 `to_csv`)
  notebook       a Jupyter notebook's JSON (`_notebook`): its training table, else what its cells printed; before
                 the JSON rules
  text_table     a table a hand-written loop prints: a header line of names over rows of as many leading numbers
                 (`_text_table`), where nothing above matched
"""

from __future__ import annotations

import csv
import itertools
import re

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.logs._console import DETECT_CHARS, console_kind
from gspo_dynamics.logs._json_series import SERIES_DOCUMENT
from gspo_dynamics.logs._readers import COLUMNS_DOCUMENT, ROWS_DOCUMENT, _loads
from gspo_dynamics.logs._runlog import to_float
from gspo_dynamics.logs._notebook import looks_like_notebook
from gspo_dynamics.logs._text_table import looks_like_text_table
from gspo_dynamics.logs._tfevents import looks_like_tfrecord

# the formats `read_log` reads (`_read.READERS` maps each to its reader)
FORMATS: tuple[str, ...] = ("trl_state", "console", "hf_console", "tensorboard", "csv", "jsonl", "verl_console",
                            "text_table", "notebook")


def _as_text(content: bytes | str) -> tuple[str, list[str]]:
    if isinstance(content, str):
        return content.lstrip("\ufeff"), []
    if b"\x00" in content[:4096]:
        raise ConfigError(
            "the input is binary but not a TensorBoard event file; expected a text log "
            "(JSON, JSONL, CSV, console output) or an events.out.tfevents file"
        )
    text = content.decode("utf-8", errors="replace")
    warnings = []
    n_bad = text.count("\ufffd")
    if n_bad:
        if n_bad > max(16, len(text) // 100):
            raise ConfigError(
                "the input is neither UTF-8 text nor a TensorBoard event file "
                f"({n_bad} undecodable bytes)"
            )
        warnings.append(f"{n_bad} byte(s) that are not UTF-8 were replaced")
    return text.lstrip("\ufeff"), warnings


_CSV_LINES = 50  # the lines under a CSV header that detection checks


def _is_name(cell: str, spaced: bool) -> bool:
    """A header cell: a name (not a number, not empty); `spaced`: names may hold spaces."""
    cell = cell.strip().strip('"')
    return 0 < len(cell) <= 200 and to_float(cell) is None and (spaced or " " not in cell)


def _looks_like_csv(text: str) -> bool:
    """A header of names and, under it, lines (most of them) of as many fields, a third of them numbers or more; a
    header alone only where its names hold no spaces (a banner line with a comma is not a CSV)."""
    lines = list(itertools.islice((line for line in text.splitlines() if line.strip()), _CSV_LINES + 1))
    if not lines:
        return False
    delimiter = next((d for d in (",", "\t", ";") if d in lines[0]), None)
    if delimiter is None:
        return False
    header = next(csv.reader([lines[0]], delimiter=delimiter))
    if len(lines) > 1 and len(header) > 1 and not header[0].strip():  # pandas' to_csv: its row index, unnamed
        header = ["index"] + header[1:]
    if not all(_is_name(cell, spaced=len(lines) > 1) for cell in header):
        return False
    body = list(csv.reader(lines[1:], delimiter=delimiter))
    if not body:
        return True
    same = [cells for cells in body if len(cells) == len(header)]
    cells = [cell for row in same for cell in row if cell.strip()]
    numeric = sum(to_float(cell) is not None for cell in cells)
    return 2 * len(same) > len(body) and 3 * numeric >= len(cells)


_PROGRESS = re.compile(r"\|\s*(\d+)/(\d+)\s*\[")  # a tqdm bar: "  3%|▏   | 87/2196 [02:10<..., 1.5s/it]"


def detect_format(content: bytes | str) -> str:
    """The format name of a log's content (see the module docstring for the rules)."""
    if isinstance(content, bytes) and looks_like_tfrecord(content[:12]):
        return "tensorboard"
    text, _ = _as_text(content)
    stripped = text.lstrip()
    if not stripped:
        raise ConfigError("the log is empty")
    json_format = _json_rules(stripped)
    if json_format is not None:
        return json_format
    console = console_kind(stripped)
    if console is not None:
        return console
    if _looks_like_csv(stripped[:DETECT_CHARS]):
        return "csv"
    if looks_like_text_table(stripped[:DETECT_CHARS]):
        return "text_table"
    if stripped.startswith("{") and isinstance(_loads(stripped), dict):  # one JSON object over many lines: its
        return "jsonl"  # reader says what it holds instead of rows (`_json_readers._no_rows`)
    bars = _PROGRESS.findall(stripped[-DETECT_CHARS:])
    if bars:  # a trainer's console with its progress bars and not one metric line
        done, total = bars[-1]
        raise ConfigError(f"the log holds progress bars (step {done} of {total}) but no metric rows: the trainer "
                          "logged no metrics to it (TRL/transformers: logging_steps, and a console or file logger "
                          "in report_to); the run's trainer_state.json (its output folder's checkpoint-N/) holds "
                          "them")
    raise ConfigError(
        "could not recognise the log format; tried a TensorBoard event file, a trainer_state.json, a Jupyter notebook, "
        "JSON/JSONL rows, "
        "console output (printed metric dicts, or key: value / key=value lists with a step counter or two numbers), "
        "CSV (a header of names over rows of as many fields) and a printed table (a header line of names over rows of "
        "numbers); in Python, read_log(path, format=...) forces one of "
        f"{', '.join(FORMATS)}"
    )


def _json_rules(stripped: str) -> str | None:
    """The first rules of `detect_format`, on the text without its leading whitespace: "trl_state", "jsonl", or None
    (they read only the first `DETECT_CHARS` characters, the first line and the first character after it)."""
    if looks_like_notebook(stripped):
        return "notebook"
    newline = stripped.find("\n")  # not split(): that would copy the whole rest of a large log
    first_line = (stripped if newline < 0 else stripped[:newline]).strip()
    one_json_object = first_line.startswith("{") and first_line.endswith("}") and '"' in first_line
    # a JSONL log whose later line holds a log_history (ms-swift's logging.jsonl ends with one) is not a trainer_state
    rows_follow = one_json_object and newline >= 0 and stripped[newline:].lstrip()[:1] == "{"
    if stripped.startswith("{") and '"log_history"' in stripped[:DETECT_CHARS] and not rows_follow:
        return "trl_state"
    json_array = stripped.startswith("[") and stripped[1:].lstrip()[:1] in ("{", "]", "")  # not `[rank0]: ...`
    return "jsonl" if json_array or one_json_object else None


_JSON_FORMATS = ("trl_state", "jsonl", "notebook")  # formats whose readers take ASCII bytes as they are (`_plain_ascii`)
_TEXT_SPACE = re.compile(rb"[^ \t\n\r\x0b\x0c\x1c-\x1f]")  # a character that is not whitespace to `str.isspace`


def _plain_ascii(content: bytes | str) -> bool:
    """Whether `content` is bytes whose text (`_as_text`) is their ASCII decoding: a JSON reader may then read the
    bytes (orjson parses them as they are; what it refuses, or what `bytes` and `str` split into lines differently,
    is read from the text: `_json_readers._clean_lines`), and the whole decoded copy is never made. NUL in the head is
    left to `_as_text`'s error."""
    return isinstance(content, bytes) and content.isascii() and b"\x00" not in content[:4096]


def _is_blank(text: bytes | str) -> bool:
    """Whether a log's text (or its ASCII bytes) is empty or whitespace only, as `str.isspace` says."""
    return not text or (text.isspace() if isinstance(text, str) else _TEXT_SPACE.search(text) is None)


def _json_format(content: bytes | str) -> str | None:
    """"trl_state" or "jsonl" where `_plain_ascii` bytes are one by the detection rules (`_row_list_format`, then
    `detect_format`'s first, `_json_rules`) read off their head; None to decode them and detect on the whole text."""
    if not _plain_ascii(content):
        return None
    head = content[: DETECT_CHARS + 8192].decode("ascii")
    stripped = head.lstrip()
    whole = len(head) == len(content)
    if not whole and len(stripped) < DETECT_CHARS + 4096:
        return None
    found = _row_list_format(head)
    if found is not None:
        return found
    if not stripped:
        return None
    found = _json_rules(stripped)  # not the whole `detect_format`: a console log's scan is done once, on its text
    newline = stripped.find("\n")  # the rules read the first line and the first character after it
    read_in_head = whole or (newline >= 0 and not stripped[newline:].isspace())
    return found if read_in_head else None


def _row_list_format(text: str) -> str | None:
    """"jsonl" for one JSON object that holds the rows in a list (`{"steps": [...]}`, TRL rows re-saved by a
    callback, ROLL) or its columns in lists (`{"step": [...], "reward": [...]}`), which `read_jsonl` reads; None for
    anything else (left to `detect_format`)."""
    head = text[:4096]
    rows = ROWS_DOCUMENT.match(head) or COLUMNS_DOCUMENT.match(head) or SERIES_DOCUMENT.match(head)
    return "jsonl" if '"log_history"' not in head and rows else None
