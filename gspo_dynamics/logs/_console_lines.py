"""The lines of a console text as its writer printed them, before `_console` reads them as metric lines.

    for line in logical_lines(text.splitlines()): ...

Two things a terminal or a pretty-printer does to a printed row are undone here:

  wrapped dicts  a line that opens a printed dict (`{'` or `{"`) and does not close it is joined with the lines after
                 it, as they are, until its braces balance: a terminal capture hard-wrapped at a fixed column width
                 (the break falls anywhere, inside a key or a number) or a dict pretty-printed over lines (the break
                 falls after a comma). Where they do not balance within MAX_JOINED lines, the lines stay as they were.
  box tables     a table drawn with box characters (rich, tabulate's grids: `│ ┃ ║` between cells, `─ ━ ═` rules)
                 becomes one printed JSON dict per record. A table of two columns (`key │ value` rows, as tinker's
                 and rich's metric tables print them) is one record; its first row is its header, left out, when a
                 rule line is drawn under it and its value cell is not a number (`Metric │ Value`); a key folded
                 over two lines (its value cell empty on the second) is joined. A table of more columns is a record
                 per row under the header row's names. A number cell is a number; any other cell is kept as text
                 (a config table is then mostly text, and `_console` does not read it as a metric row). The step of
                 the records is what the lines above say (a `Step 5` title), as for any printed dict.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

_NUM = r"[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|NaN|inf|Inf|-inf|Infinity)"
_NUMBER = re.compile(_NUM)
_DICT_START = re.compile(r"\{\s*['\"]")
MAX_JOINED = 200  # lines one wrapped dict may span
_MAX_JOINED_CHARS = 200_000
_VERTICALS = "│┃║"
_CELL_SPLIT = re.compile(f"[{_VERTICALS}]")
# A rule line: box-drawing characters and spaces only (top, bottom, the line under a header, between rows).
_RULE = re.compile(r"[\u2500-\u257f]+[\u2500-\u257f\s]*\Z")
_MAX_CELL = 200


def logical_lines(lines: list[str]) -> Iterator[str]:
    """The lines of a console text with wrapped dicts joined and box tables made JSON dict lines (the module
    docstring)."""
    table: list[list[str]] = []
    ruled = False  # a rule line right under the table's first row: its header's
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        i += 1
        if table or _VERTICALS[0] in line or _VERTICALS[1] in line or _VERTICALS[2] in line:
            cells = _row_cells(line)
            if cells is not None:
                table.append(cells)
                continue
            if table and _is_rule(line):
                ruled = ruled or len(table) == 1
                continue
            if table:
                yield from _table_records(table, ruled)
                table, ruled = [], False
        if "{" in line and line.count("{") > line.count("}") and _DICT_START.search(line):
            end = _balanced_at(lines, i - 1)
            if end is not None:
                line, i = "".join(lines[i - 1:end + 1]), end + 1
        yield line
    if table:
        yield from _table_records(table, ruled)


def _balanced_at(lines: list[str], start: int) -> int | None:
    """The index of the line where the dict that line `start` opens closes (its braces balance), or None where
    they do not within MAX_JOINED lines (or another dict begins first: not a wrapped one)."""
    depth, size = 0, 0
    for i in range(start, min(start + MAX_JOINED + 1, len(lines))):
        line = lines[i]
        if i > start and _DICT_START.match(line.lstrip()):
            return None
        depth += line.count("{") - line.count("}")
        size += len(line)
        if depth <= 0:
            return i
        if size > _MAX_JOINED_CHARS:
            return None
    return None


def _is_rule(line: str) -> bool:
    start = next((i for i, c in enumerate(line) if "\u2500" <= c <= "\u257f"), None)
    return start is not None and _RULE.match(line, start) is not None


def _row_cells(line: str) -> list[str] | None:
    """The cells of a table row (`│ a │ b │`, anything before the first vertical left out: a logger's prefix), or
    None if the line is not one."""
    first = min((i for i in (line.find(v) for v in _VERTICALS) if i >= 0), default=-1)
    last = max(line.rfind(v) for v in _VERTICALS)
    if first < 0 or last <= first or line[last + 1:].strip():
        return None
    cells = [cell.strip() for cell in _CELL_SPLIT.split(line[first + 1:last])]
    if len(cells) < 2 or any(len(cell) > _MAX_CELL for cell in cells):
        return None
    return cells


def _value(cell: str) -> object:
    return float(cell) if _NUMBER.fullmatch(cell) else cell


def _table_records(table: list[list[str]], ruled: bool) -> Iterator[str]:
    """A table's records as JSON dict lines: one for a table of two columns, one per row below the header for a
    wider one (rows of another width left out). `ruled`: a rule line follows the first row (a header's)."""
    width = len(table[0])
    rows = [row for row in table if len(row) == width]
    if width == 2:
        if ruled and not _NUMBER.fullmatch(rows[0][1]):
            rows = rows[1:]  # the header: `Metric │ Value`
        record: dict[str, object] = {}
        key = None
        for name, cell in rows:
            if not cell and key is not None and name:  # the key's second line (rich folds a long key)
                record[key + name] = record.pop(key)
                key += name
            elif name:
                key = name
                record[key] = _value(cell)
        if record:
            yield json.dumps(record)
        return
    header = rows[0]
    if len(set(header)) < width or any(_NUMBER.fullmatch(cell) or not cell for cell in header):
        return  # no header row of names: not a table of records
    for row in rows[1:]:
        yield json.dumps({name: _value(cell) for name, cell in zip(header, row) if cell})
