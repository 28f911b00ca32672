"""Large JSON logs parsed a piece at a time: the same values as one parse of the whole, a fraction of the memory.

One parse of a 64 MiB JSONL file joined into an array, or of a 77 MiB trainer_state.json, holds the text, the
parser's copy and document and every row at once (about 5x the file). Here the text is cut into pieces of about
`chunk` characters at places that may lie between two rows, and each piece is parsed on its own:

  JSONL               cut after a newline; a piece's non-blank lines joined as one array must give one object each
  trainer_state.json  cut at a comma between two objects (`}, {`); each middle piece must parse as an array of
                      objects, and the document with the middle replaced by one sentinel string must parse with
                      that sentinel once in its `log_history` list, where the middle's rows then go

A piece that does not parse so means a cut that is not between rows (or a file that is not clean): None is
returned and the caller parses the whole at once, as before. Where every piece parses, the grammar makes the whole
parse to exactly the same values (a list of elements split at commas between elements is those lists joined).
Pieces are parsed by orjson alone (json where orjson is not installed), so that no piece is read by the other
parser than the whole would be. Small pieces also parse faster (they fit a cache), and rows whose piece holds one `{`
per row are known to hold no object (nothing to flatten).
"""

from __future__ import annotations

import json
import re

import numpy as np

try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised by the tests with the module hidden
    _orjson = None

JSONL_CHUNK = 1 << 19  # characters of JSONL per piece (about 2.5k rows of 200 characters; under MAX_LINE)
DOCUMENT_CHUNK = 1 << 19  # characters of a trainer_state.json per piece (pieces that fit a cache parse faster)
_BETWEEN_OBJECTS = re.compile(rb"\}\s*,\s*\{")  # `},` + whitespace + `{`: the comma may lie between two rows
_SENTINEL = b'"\\u0000gspo-dynamics: the middle rows\\u0000"'  # a string holding NUL, which a file with no
# `\u0000` in it cannot hold
_SENTINEL_VALUE = json.loads(_SENTINEL)


def strict_loads(text: str | bytes):
    """orjson.loads (json.loads where orjson is not installed), or None for anything it refuses."""
    try:
        return _orjson.loads(text) if _orjson is not None else json.loads(text)
    except (ValueError, RecursionError):  # orjson.JSONDecodeError is a ValueError
        return None


def objects_of_lines(lines: list, loads=strict_loads) -> list | None:
    """One dict per non-blank line of `lines` from one parse (`loads`) of them joined as a JSON array, else None;
    [] for no such line. Lines over `max_line` characters are not rows (None)."""
    lines = [line for line in lines if line and not line.isspace()]
    if not lines:
        return []
    if max(map(len, lines)) > MAX_LINE:
        return None
    n_lines = len(lines)
    joined = ("[" + ",".join(lines) + "]") if isinstance(lines[0], str) else (b"[" + b",".join(lines) + b"]")
    del lines  # the lines' text, before the parse's objects are made
    objects = loads(joined)
    del joined
    if not isinstance(objects, list) or len(objects) != n_lines:
        return None
    return objects if all(isinstance(obj, dict) for obj in objects) else None


MAX_LINE = 1_000_000  # longer "lines" are binary junk, not log rows


def jsonl_objects(text: str | bytes, chunk: int | None = None, collect=None) -> list | None:
    """The objects of a clean JSONL text (`objects_of_lines` of all its lines) parsed a piece of about `chunk`
    (None: JSONL_CHUNK) characters at a time, each piece cut after a newline; None where a piece is not clean (the
    caller then parses the whole at once) or no line is. collect(objects, piece): where given, each piece's objects
    and text are handed to it in order instead of being kept (a `_table.TableBuilder` keeps them as columns: the
    dicts of one piece alive at a time), and [] is returned for a clean text."""
    chunk = chunk or JSONL_CHUNK
    newline = "\n" if isinstance(text, str) else b"\n"
    objects: list = []
    collect = collect or (lambda part, piece: objects.extend(part))
    start = n_objects = 0
    while start < len(text):
        end = text.find(newline, start + max(chunk, 1) - 1)
        end = len(text) if end < 0 else end + 1
        piece = text[start:end]
        part = _lines_of_objects(piece) if isinstance(piece, bytes) else None
        part = objects_of_lines(piece.splitlines()) if part is None else part
        if part is None:
            return None
        collect(part, piece)
        n_objects += len(part)
        del piece, part
        start = end
    return objects if n_objects else None


def _lines_of_objects(piece: bytes) -> list | None:
    """`objects_of_lines` of a piece of JSONL bytes without splitting it into lines, where it can tell: the piece's
    newlines turned into commas are its lines joined by commas, and parse to one object per line only where no line
    is blank (an empty element is not JSON) and none holds two; None where it cannot tell (a `\r`, a piece longer
    than a line may be, a parse that fails or gives another count: `objects_of_lines` then reads the lines)."""
    if len(piece) > MAX_LINE or b"\r" in piece:
        return None
    body = piece[:-1] if piece.endswith(b"\n") else piece
    n_lines = count_bytes(body, b"\n") + 1
    objects = strict_loads(b"".join((b"[", body.replace(b"\n", b","), b"]")))
    if not isinstance(objects, list) or len(objects) != n_lines or set(map(type, objects)) - {dict}:
        return None
    return objects


def count_bytes(data: bytes | str, char: bytes) -> int:
    """How many times one byte `char` is in `data` (vectorised, in slices of COUNT_SLICE bytes: bytes.count goes
    a byte at a time); `str.count` for text."""
    if isinstance(data, str):
        return data.count(char.decode("ascii"))
    view, code = memoryview(data), char[0]
    return sum(int(np.count_nonzero(np.frombuffer(view[i:i + COUNT_SLICE], np.uint8) == code))
               for i in range(0, len(data), COUNT_SLICE))


COUNT_SLICE = 1 << 20  # bytes compared at once by `count_bytes` (a bool array of this size at a time)


def trl_document(data: bytes, chunk: int | None = None, collect=None) -> tuple[dict, range] | None:
    """A trainer_state.json's document parsed in pieces of about `chunk` (None: DOCUMENT_CHUNK) bytes (see the
    module docstring), and the rows of its `log_history` known to hold no object (their pieces hold one `{` per row);
    None to parse it whole (a file under three pieces, a cut that is not between two rows of `log_history`, a file
    that is not clean). collect(rows, flat): where given, the rows of `log_history` are handed to it in order a list
    at a time (the rows before the middle, each middle piece's, the rows after it; flat: the list is known to hold
    no object) instead of being put in the document, whose `log_history` is then None."""
    if b"\\" in data and b"\\u0000" in data:  # a string holding NUL: the sentinel's value could be in the file
        return None
    cuts = _cuts(data, chunk or DOCUMENT_CHUNK)
    if len(cuts) < 2:
        return None
    state = strict_loads(data[:cuts[0]] + b"," + _SENTINEL + data[cuts[-1]:])  # the document around the middle
    rows = state.get("log_history") if isinstance(state, dict) else None
    if not isinstance(rows, list):
        return None
    at = [i for i, row in enumerate(rows) if type(row) is str and row == _SENTINEL_VALUE]
    if len(at) != 1:
        return None
    history = [] if collect is None else None  # by default the rows in one list, as one parse gives them
    collect = collect or (lambda part, flat: history.extend(part))
    collect(rows[:at[0]], False)
    flat, n_middle = True, 0
    view = memoryview(data)
    for start, end in zip(cuts, cuts[1:]):
        piece = b"".join((b"[", view[start + 1:end], b"]"))  # one copy of the piece
        part = strict_loads(piece)
        if not isinstance(part, list) or set(map(type, part)) - {dict}:
            return None
        part_flat = count_bytes(piece, b"{") == len(part)  # each row holds its own `{`, an object in it one more
        del piece
        collect(part, part_flat)
        flat, n_middle = flat and part_flat, n_middle + len(part)
        del part
    collect(rows[at[0] + 1:], False)
    state["log_history"] = history
    return state, range(at[0], at[0] + n_middle) if flat else range(0)


def _cuts(data: bytes, chunk: int) -> list[int]:
    """Positions of commas between two objects (`}, {`), the first about `chunk` bytes in, then about every `chunk`
    bytes, none in the last `chunk` bytes."""
    cuts = []
    position = max(chunk, 1)
    while position < len(data) - chunk:
        found = _BETWEEN_OBJECTS.search(data, position)
        if found is None:
            break
        cuts.append(data.index(b",", found.start()))
        position = cuts[-1] + max(chunk, 1)
    return cuts
