"""Follow a growing training log: parse only what was appended, keep the parsed rows, never lose a half-written line.

    follower = Follower("train.log")          # a file, or a run folder (its newest log)
    update = follower.poll()                  # what this poll read: update.rows new rows, update.messages
    run = follower.run_log()                  # the RunLog of every row read so far (built in memory)

The rows come from the readers of `read_log` (`_readers.py`); only where a log is cut into pieces does this module
decide anything. How each kind of log is read after the first poll:

  lines      JSONL, console (verl, HF, any), CSV: from the saved byte offset to the last complete line; the rest
             waits (a writer mid-line). A JSONL tail without its newline is taken once it parses as a JSON object. CSV
             pieces are read under the file's header line. Rows a reader numbered by position (a log without steps:
             1, 2, ..., or k, 2k, ... at the logging interval k the first piece showed) are numbered on from the rows
             before, at that interval; an eval dict at the start of a piece takes the last step of the piece before.
  records    TensorBoard event files: from the saved offset to the end of the last whole TFRecord; a record cut
             short waits.
  document   trainer_state.json (rewritten at each checkpoint), a JSON array: read again whole when its size,
             time or inode changes, and only once it parses (the last good reading stays meanwhile).

The log's format is fixed the first time its content builds a RunLog (a reward column found): until then a poll
reads the file from its start again, so a banner before the first metric line, or a file still empty, is waited
for, not refused. A file that shrank or was replaced (another inode: a rotated log) is read again from its start,
as is a newer log in a folder; the rows read before are dropped. A file that does not exist yet, or that cannot be
read for a moment, is waited for; the reason is said once (`Update.waiting`).
"""

from __future__ import annotations

import os
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.logs._columns import ColumnMapError, check_column_map
from gspo_dynamics.logs._detect import FORMATS, _as_text, detect_format
from gspo_dynamics.logs._read import _STEPS_BUILT_IN, READERS, build_log
from gspo_dynamics.logs._readers import COLUMNS_DOCUMENT, ROWS_DOCUMENT, RUNS_DOCUMENT, RawLog, _loads
from gspo_dynamics.logs._runlog import Row, RunLog
from gspo_dynamics.logs._tfevents import looks_like_tfrecord

LINE_FORMATS = ("jsonl", "console", "verl_console", "hf_console", "csv")
CONSOLE_FORMATS = ("console", "verl_console", "hf_console")  # a console also ends a line with "\r" (progress bars)
# A run folder's logs, by preference: TensorBoard is written at every logging step (TRL's runs/, verl's
# tensorboard_log/<project>/<experiment>), a trainer_state.json only at a checkpoint. The newest file of the first
# kind found is followed.
FOLDER_LOGS = (("events.out.tfevents.*", "*/events.out.tfevents.*", "*/*/events.out.tfevents.*"),
               ("trainer_state.json", "checkpoint-*/trainer_state.json"),
               ("metrics.jsonl", "metrics.csv"))
# `_readers._finish`'s warning for a log without step numbers (its rows numbered by position)
_NUMBERED = "rows were numbered 1, 2, ..."
_TFRECORD_FRAME = 16  # uint64 length, uint32 crc of it, the data, uint32 crc of the data


class _MapConflict(ColumnMapError):
    """A --map step=COLUMN for a format whose steps are not a column: bad input, not something to wait out."""


@dataclass(frozen=True)
class Update:
    """What one poll read."""

    rows: int = 0  # rows new at this poll (a document read again: those past the rows it held before)
    restarted: bool = False  # the rows read before were dropped: a new, rotated, truncated or newer log
    grew: bool = False  # the followed file changed (bytes appended, even half a line; rewritten; replaced)
    messages: tuple[str, ...] = ()  # what changed worth saying: a rotation, a newer log in the folder
    waiting: ConfigError | None = None  # why nothing could be read, the first poll it is so (said once)


@dataclass
class _File:
    """The file followed now, and how far it was read."""

    path: Path
    identity: tuple[int, int]  # (st_dev, st_ino)
    format: str | None = None  # fixed once its content built a RunLog
    kind: str | None = None  # "lines" | "records" | "document"
    offset: int = 0  # bytes parsed (lines, records); the size read (document)
    signature: tuple = ()  # (size, mtime_ns) when last seen
    header: str = ""  # a CSV's header line, read above every later piece
    rows: list[Row] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    logging_steps: int | None = None
    numbered: int = 0  # rows numbered by position so far (a log without steps)


class Follower:
    """The training log at `path` (a file, or a run folder whose newest log is followed), read as it grows.

    format: "auto" (detected from the content, as `read_log` does) or one of `FORMATS`.
    column_map: as `read_log`'s (the CLI's --map); run: as `read_log`'s (None: the last run, as the file grows). Raises ConfigError for an unknown format, a bad map, or a path
    whose folder does not exist; a file that does not exist yet is waited for.
    """

    def __init__(self, path: str | os.PathLike, format: str = "auto", column_map: dict[str, str] | None = None,
                 run: int | None = None):
        if format != "auto" and format not in FORMATS:
            raise ConfigError(f"unknown log format {format!r}; expected 'auto' or one of {', '.join(FORMATS)}")
        self.path = Path(path)
        if not self.path.exists() and not self.path.parent.is_dir():
            raise ConfigError(f"cannot watch {str(self.path)!r}: its folder {str(self.path.parent)!r} does not exist")
        self.format = format
        self.column_map = check_column_map(column_map)
        self.run = run  # which run of the file (`read_log`'s run): None follows the last
        self.file: _File | None = None
        self.waiting: ConfigError | None = ConfigError(f"{str(self.path)!r} has not been read yet")
        self._said: set[str] = set()  # messages said since the last successful read
        self._replaced = False  # this poll's document was rewritten with another log's rows

    @property
    def rows(self) -> list[Row]:
        """Every (step, {raw key: value}) row read so far from the file followed now."""
        return [] if self.file is None else self.file.rows

    @property
    def offset(self) -> int:
        """Bytes of the followed file read and parsed so far (a document: its size when last read)."""
        return 0 if self.file is None else self.file.offset

    @property
    def pending(self) -> int:
        """Bytes at the end of the followed file not read yet: a line (or TensorBoard record) still being written."""
        f = self.file
        return 0 if f is None or f.kind in (None, "document") or not f.signature else max(0, f.signature[0] - f.offset)

    def run_log(self, start: int = 0) -> RunLog:
        """The RunLog of the rows read so far from row `start` on (`build_log`; the live guard builds only the rows
        a poll added); ConfigError with the reason while none can be built."""
        f = self.file
        if f is None or f.format is None:
            raise self.waiting or ConfigError(f"{str(self.path)!r} has not been read yet")
        raw = RawLog(list(f.rows[start:]), list(f.warnings), f.logging_steps)
        return build_log(raw, f.format, str(f.path), self.column_map, run=self.run)

    def poll(self) -> Update:
        """Read what the log gained since the last poll (see the module docstring); never sleeps."""
        messages: list[str] = []
        target = self._target()
        if target is None:
            return self._wait(ConfigError(f"{str(self.path)!r} holds no trainer_state.json, metrics file or "
                                          "TensorBoard event file yet"), messages)
        try:
            stat = target.stat()
        except FileNotFoundError:
            return self._wait(ConfigError(f"log file {str(target)!r} does not exist yet"), messages)
        except OSError as error:
            return self._wait(ConfigError(f"log file {str(target)!r} cannot be read ({error.strerror})"), messages)
        restarted = self._check_identity(target, stat, messages)
        self._replaced = False
        f = self.file
        signature = (stat.st_size, stat.st_mtime_ns)
        grew = restarted or signature != f.signature
        if not grew:
            return Update(messages=tuple(messages))
        try:
            n_rows = self._read(f, stat.st_size)
        except OSError as error:
            return self._wait(ConfigError(f"log file {str(target)!r} cannot be read ({error.strerror})"), messages)
        except _MapConflict:
            raise
        except ConfigError as error:  # not a log yet (empty, a banner, no reward column): read it again next time
            f.signature = signature
            return self._wait(error, messages, restarted, grew)
        if self._replaced:  # a document rewritten with another log's rows (`_reread`)
            restarted = True
            messages.append(f"{str(target)!r} was truncated or replaced; reading it again from its start")
        if self.file is not f:  # its format was fixed at this read
            messages.append(f"reading {str(target)!r} ({self.file.format})")
        self.file.signature = signature
        self.waiting = None
        self._said.clear()
        return Update(n_rows, restarted, grew, tuple(messages))

    # ---- which file -----------------------------------------------------------------------------

    def _target(self) -> Path | None:
        """The file to follow: `path` itself, or in a folder the newest log of the first kind of FOLDER_LOGS."""
        if not self.path.is_dir():
            return self.path
        for patterns in FOLDER_LOGS:
            found = []
            for pattern in patterns:
                for candidate in self.path.glob(pattern):
                    try:
                        if candidate.is_file():
                            found.append((candidate.stat().st_mtime_ns, str(candidate), candidate))
                    except OSError:  # removed between the listing and the stat
                        continue
            if found:
                return max(found)[2]
        return None

    def _check_identity(self, target: Path, stat, messages: list[str]) -> bool:
        """Start the file afresh when it is another file, a replaced one or a shrunk one; whether rows were dropped."""
        identity = (stat.st_dev, stat.st_ino)
        f = self.file
        if f is not None and f.path == target and f.identity == identity and (
                f.kind == "document" or stat.st_size >= f.offset):
            return False
        if f is not None and f.path == target and f.kind == "document":
            f.identity = identity  # moved over itself (an atomic save): whether it continues is `_reread`'s, one parse
            return False
        had_rows = f is not None and bool(f.rows)
        if f is not None and f.path != target:
            messages.append(f"following {str(target)!r}, the newest log in {str(self.path)!r}")
        elif f is not None:
            messages.append(f"{str(target)!r} was truncated or replaced; reading it again from its start")
        self.file = _File(target, identity, format=None if self.format == "auto" else self.format)
        return had_rows

    def _wait(self, reason: ConfigError, messages: list[str], restarted: bool = False, grew: bool = False) -> Update:
        """An update that read nothing, with `reason` the first time it is the reason (until a read succeeds);
        `waiting` keeps it while no row was read (a log read before stays readable: its rows are kept)."""
        if self.file is None or self.file.format is None:
            self.waiting = reason
        new = str(reason) not in self._said
        self._said.add(str(reason))
        return Update(0, restarted, grew, tuple(messages), reason if new else None)

    # ---- reading --------------------------------------------------------------------------------

    def _read(self, f: _File, size: int) -> int:
        """Read and parse what is new in `f` (its size now `size`); the number of rows parsed."""
        if f.kind is None:
            return self._start(f)
        if f.kind == "document":
            return self._reread(f)
        if size <= f.offset:
            return 0
        with open(f.path, "rb") as handle:
            handle.seek(f.offset)
            data = handle.read(size - f.offset)
        end = _complete_records(data) if f.kind == "records" else _complete_lines(data, f.format)
        rows = self._parse(f, data[:end]) if end else []
        f.offset += end
        f.rows += rows
        return len(rows)

    def _start(self, f: _File) -> int:
        """Read the whole file, fix its format once it builds a RunLog; ConfigError (to wait) until it does."""
        data = f.path.read_bytes()
        if not data.strip():
            raise ConfigError(f"log file {str(f.path)!r} is empty")
        fmt = f.format or ("tensorboard" if looks_like_tfrecord(data[:12]) else detect_format(_as_text(data)[0]))
        if "step" in self.column_map and fmt in _STEPS_BUILT_IN:
            raise _MapConflict(("step", self.column_map["step"]),
                               f": the steps of a {fmt} log are part of its format, not a column")
        trial = _File(f.path, f.identity, format=fmt, kind=_kind(fmt, data))
        if trial.kind == "document":
            trial.rows = self._parse_document(trial, data)
            trial.offset = len(data)
        else:
            end = _complete_records(data) if trial.kind == "records" else _complete_lines(data, fmt)
            if fmt == "csv":
                trial.header = next(line for line in _as_text(data[:end])[0].splitlines() if line.strip())
            trial.rows = self._parse(trial, data[:end], first=True)
            trial.offset = end
        self.file = trial
        try:
            self.run_log()  # a reward column, not another algorithm's log: else wait and read it again from its start
        except ConfigError:
            self.file = f
            raise
        return len(trial.rows)

    def _reread(self, f: _File) -> int:
        """A document read again whole, its rows replacing the old ones once it parses as JSON; the rows past those it
        held before where it begins with them (a save of a longer version of itself), else all of them, another log's
        (`_replaced`: the poll says the log restarted)."""
        data = f.path.read_bytes()
        if _loads(_as_text(data)[0]) is None:  # a rewrite half done: keep the last good reading
            return 0
        old, f.rows, f.offset = f.rows, self._parse_document(f, data), len(data)
        if len(f.rows) >= len(old) and f.rows[:len(old)] == old:
            return len(f.rows) - len(old)
        self._replaced = bool(old)
        return len(f.rows)

    def _parse_document(self, f: _File, data: bytes) -> list[Row]:
        text, decode_warnings = _as_text(data)
        raw = READERS[f.format](text, self.column_map.get("step"))
        f.warnings, f.logging_steps = decode_warnings + raw.warnings, raw.logging_steps
        return raw.rows

    def _parse(self, f: _File, data: bytes, first: bool = False) -> list[Row]:
        """The rows of a piece of `f` (whole lines or records); a piece that holds no metric row gives []."""
        try:
            if f.kind == "records":
                raw = READERS["tensorboard"](data, None)
            else:
                text, decode_warnings = _as_text(data)
                raw = READERS[f.format](text if first or not f.header else f"{f.header}\n{text}",
                                        self.column_map.get("step"))
                raw.warnings[:0] = decode_warnings
        except ConfigError:
            if first:
                raise
            return []  # a piece of other output between metric lines: no row
        _add_warnings(f, raw.warnings)
        return _number_on(f, raw, first)


def _kind(fmt: str, data: bytes) -> str:
    """How a log of format `fmt` grows: "records" (TensorBoard), "lines", or "document" (rewritten whole: a TRL state,
    a Jupyter notebook (saved whole, often without a final newline), a JSON list, or one JSON object of the rows,
    {"steps": [...]}, or of columns, over many lines or on one: the reader's ROWS_DOCUMENT, COLUMNS_DOCUMENT)."""
    if fmt == "tensorboard":
        return "records"
    if fmt in ("trl_state", "notebook") or (fmt == "jsonl" and data.lstrip().startswith(b"[")):
        return "document"
    head = data[:4096].decode("utf-8", errors="replace")  # one JSON object of rows or of columns, as the reader knows
    if fmt == "jsonl" and any(d.match(head) for d in (ROWS_DOCUMENT, COLUMNS_DOCUMENT, RUNS_DOCUMENT)):
        return "document"
    return "lines"


def _complete_lines(data: bytes, fmt: str) -> int:
    """The length of the whole lines at the start of `data`: up to its last newline (a console's "\\r" too); a
    JSONL tail without its newline counts once it parses as a JSON object."""
    end = data.rfind(b"\n") + 1
    if fmt in CONSOLE_FORMATS:
        end = max(end, data.rfind(b"\r") + 1)
    tail = data[end:]
    if fmt == "jsonl" and tail.strip() and isinstance(_loads(tail.decode("utf-8", errors="replace")), dict):
        end = len(data)
    return end


def _complete_records(data: bytes) -> int:
    """The length of the whole TFRecords at the start of `data` (their framing only; `read_events` checks them)."""
    pos = 0
    while len(data) - pos >= 12 and looks_like_tfrecord(data[pos:pos + 12]):
        (length,) = struct.unpack("<Q", data[pos:pos + 8])
        if len(data) - pos < _TFRECORD_FRAME + length:
            break
        pos += _TFRECORD_FRAME + length
    return pos


def _number_on(f: _File, raw: RawLog, first: bool) -> list[Row]:
    """The reader's rows; rows it numbered by position (1, 2, ..., or k, 2k, ... for a console log whose interval k
    it found, an eval row before any train row at 0) are numbered on from the rows read before, at the interval the
    first piece gave (a later piece holds no banner to find it)."""
    console = f.format in CONSOLE_FORMATS
    if first and console:
        f.logging_steps = raw.logging_steps
    every = raw.logging_steps if console and raw.logging_steps else None
    if every is None and any(w.endswith(_NUMBERED) for w in raw.warnings):
        every = 1
    if every is None:
        if console and raw.rows:  # steps of their own (a counter, the progress bar): rows numbered later go on after
            f.numbered = max(f.numbered, max(step for step, _ in raw.rows))
        return raw.rows
    scale = f.logging_steps or 1
    rows = [(f.numbered + step // every * scale, record) for step, record in raw.rows]
    f.numbered = max([f.numbered] + [step for step, _ in rows])
    return rows


_COUNT = re.compile(r"^\d+ ")


def _add_warnings(f: _File, warnings: list[str]) -> None:
    """Add a piece's reader warnings once each (a count that differs from piece to piece does not repeat one)."""
    seen = {_COUNT.sub("N ", w) for w in f.warnings}
    for warning in warnings:
        if _COUNT.sub("N ", warning) not in seen:
            f.warnings.append(warning)
            seen.add(_COUNT.sub("N ", warning))
