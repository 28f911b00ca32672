"""Follow a growing training log: read only what was appended, and keep a half-written last line for later.

    follower = Follower("train.log")          # a file, or a run folder (its newest log)
    run = follower.poll()                     # a RunLog when new rows arrived, else None

Each poll stats the file and reads from the last offset to its end. What it holds:

  * a line log (JSONL, a verl or HF console log, CSV): the complete lines read so far; a trailing piece without its
    newline waits for the rest (a writer mid-line is never an error, and no byte is lost);
  * a TensorBoard event file: the whole records read so far; a truncated last record waits;
  * a document rewritten in place (trainer_state.json at each checkpoint): re-read whole when its size or time
    changes, the last good reading kept while a rewrite is half done.

A file that shrank or was replaced (another inode: a rotated log) is read again from its start; in a folder, a newer
log (a new checkpoint's trainer_state.json, a new event file) takes over. A file that does not exist yet is waited
for. The rows are parsed by `read_log`, the same readers as `diagnose`.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.logs._read import read_log
from gspo_dynamics.logs._runlog import RunLog
from gspo_dynamics.logs._tfevents import looks_like_tfrecord

# the logs a run folder may hold, most specific first (newest file of the first pattern that matches wins)
FOLDER_PATTERNS = ("**/trainer_state.json", "**/events.out.tfevents.*", "*.jsonl", "*.log", "*.csv", "*.json")


@dataclass
class _State:
    path: Path | None = None
    inode: int | None = None
    offset: int = 0  # bytes consumed from the file
    mtime: float = -1.0
    whole: bool = False  # a document re-read whole (JSON), not appended to
    tfrecord: bool = False
    content: bytearray = field(default_factory=bytearray)  # the complete lines / records read so far
    pending: bytes = b""  # a trailing part not yet complete


class Follower:
    """The log at `path` (a file or a run folder), read incrementally (module docstring)."""

    def __init__(self, path: str | os.PathLike, column_map: dict[str, str] | None = None, format: str = "auto"):
        self.path = Path(path)
        if not self.path.parent.exists():
            raise ConfigError(f"cannot watch {str(self.path)!r}: its folder {str(self.path.parent)!r} does not exist")
        self.column_map = column_map
        self.format = format
        self.state = _State()
        self.rows = 0  # reward rows of the last RunLog returned
        self.waiting = False  # the file does not exist (yet)

    # ---- the file ------------------------------------------------------------------------------
    def _target(self) -> Path | None:
        if not self.path.is_dir():
            return self.path if self.path.is_file() else None
        for pattern in FOLDER_PATTERNS:
            found = [p for p in self.path.glob(pattern) if p.is_file()]
            if found:
                return max(found, key=lambda p: (p.stat().st_mtime, str(p)))
        return None

    def read_new(self) -> bool:
        """Read what was appended since the last call; whether the held content changed."""
        target = self._target()
        self.waiting = target is None
        if target is None:
            return False
        try:
            stat = target.stat()
        except OSError:  # gone or unreadable for a moment: try again at the next poll
            return False
        s = self.state
        if target != s.path or stat.st_ino != s.inode or stat.st_size < s.offset:
            self.state = s = _State(path=target, inode=stat.st_ino)  # a new file, or rotated / truncated
        if s.whole or (s.offset == 0 and target.suffix == ".json"):
            return self._reread(target, stat, s)
        if stat.st_size == s.offset:
            return False
        try:
            with open(target, "rb") as handle:
                handle.seek(s.offset)
                chunk = handle.read(stat.st_size - s.offset)
        except OSError:
            return False
        s.offset += len(chunk)
        if s.offset == len(chunk) and looks_like_tfrecord(chunk[:12]):
            s.tfrecord = True
        return self._append(s, s.pending + chunk)

    def _append(self, s: _State, data: bytes) -> bool:
        complete = _complete_records(data) if s.tfrecord else data.rfind(b"\n") + 1
        s.content += data[:complete]
        s.pending = data[complete:]
        return complete > 0

    def _reread(self, target: Path, stat, s: _State) -> bool:
        s.whole = True
        if stat.st_mtime == s.mtime and stat.st_size == s.offset:
            return False
        try:
            data = target.read_bytes()
        except OSError:
            return False
        try:
            read_log(data, self.format, self.column_map)
        except ConfigError:  # half rewritten: keep the last good reading, look again next poll
            return False
        s.content, s.offset, s.mtime = bytearray(data), stat.st_size, stat.st_mtime
        return True

    # ---- the rows ------------------------------------------------------------------------------
    def poll(self) -> RunLog | None:
        """The whole run read so far when new reward rows arrived since the last RunLog returned, else None."""
        if not self.read_new() or not self.state.content.strip():
            return None
        run = read_log(bytes(self.state.content), self.format, self.column_map)
        rows = len(run.valid("reward")[0]) if "reward" in run else 0
        if rows == self.rows:
            return None
        self.rows = rows
        return run


def _complete_records(data: bytes) -> int:
    """The length of the whole TFRecords at the start of `data` (8-byte length, 4-byte crc, body, 4-byte crc)."""
    pos = 0
    while len(data) - pos >= 12:
        (length,) = struct.unpack("<Q", data[pos:pos + 8])
        if len(data) - pos < 16 + length:
            break
        pos += 16 + length
    return pos
