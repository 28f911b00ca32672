"""A table printed by a hand-written training loop: a header line of column names, then rows whose first fields are
numbers under those names, each optionally followed by key=value pairs:

     step  reward    std      KL  words  cues  (watch: reward up + words/cues up == hacking)
        1   0.375  0.484  0.0000  116.6  2.94 probe=0.597 trunc=0.00
        5   0.750  0.433  0.0008  122.0  3.26 probe=0.707 trunc=0.00

A header: a line whose first MIN_NAMES or more whitespace-separated tokens are names (identifiers: a letter or _, then
letters, digits, _ . / -); what follows them on the line (a comment) is not a column. A row: a line whose first fields,
as many as the header's names, are all numbers; its further `key=value` tokens with a numeric value are columns too.
The file is such a table (`looks_like_text_table`) where a header is followed by at least MIN_ROWS rows before any
other header; a header printed again (every N rows, per epoch) starts the same kind of table, and lines between the
rows (progress bars, samples) are skipped. Steps come from the step-like column (`_readers._step_rows`), as in a CSV.
Read only where no other format matched (`_detect.detect_format`).
"""

from __future__ import annotations

import itertools
import re

from gspo_dynamics.logs._readers import RawLog, _step_rows
from gspo_dynamics.logs._runlog import to_float

MIN_NAMES = 3  # names a header line starts with (fewer is a sentence or a label: "step reward")
MIN_ROWS = 3  # rows under a header for the text to be such a table
_NAME = re.compile(r"^[A-Za-z_][\w./\-]*$")
_DETECT_LINES = 400  # lines of the text's head detection reads


def _names(tokens: list[str]) -> list[str]:
    """The header's column names: its leading tokens that are names, none of them a number."""
    names = list(itertools.takewhile(lambda t: _NAME.match(t) is not None and to_float(t) is None, tokens))
    return names if len(names) >= MIN_NAMES else []


def _row(tokens: list[str], names: list[str]) -> dict[str, str] | None:
    """The record of a row under `names` (its leading numbers, then its numeric key=value tokens), or None."""
    if len(tokens) < len(names) or any(to_float(t) is None for t in tokens[:len(names)]):
        return None
    record = dict(zip(names, tokens[:len(names)]))
    for token in tokens[len(names):]:
        key, equals, value = token.partition("=")
        if equals and key and key not in record and to_float(value) is not None:
            record[key] = value
    return record


def _rows_under_headers(lines):
    """(header number, record) for every row under a header, in order (a header with no row under it is no header)."""
    names: list[str] = []
    headers = 0
    for line in lines:
        tokens = line.split()
        if not tokens:
            continue
        record = _row(tokens, names) if names else None
        if record is not None:
            yield headers, record
        elif header := _names(tokens):
            names, headers = header, headers + 1


def looks_like_text_table(text: str) -> bool:
    """Whether the text's head holds a header with at least MIN_ROWS rows under it (module docstring)."""
    counts: dict[int, int] = {}
    for header, _ in _rows_under_headers(itertools.islice(text.splitlines(), _DETECT_LINES)):
        counts[header] = counts.get(header, 0) + 1
        if counts[header] >= MIN_ROWS:
            return True
    return False


def read_text_table(text: str, step_key: str | None = None) -> RawLog:
    """The rows of a printed table (module docstring), steps from its step-like column."""
    warnings: list[str] = []
    records = [record for _, record in _rows_under_headers(text.splitlines())]
    rows, axis, _ = _step_rows(records, "printed table", warnings, step_key, owned=True)
    return RawLog(rows, warnings, None, axis)
