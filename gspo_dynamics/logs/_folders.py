"""Which file of a run folder is its log, and a log's bytes as read: a folder's trainer_state.json or metrics file,
else its newest TensorBoard events, else its latest TRL checkpoint's state, else a W&B run's console; a folder of run
folders named as a sweep; a gzip-compressed log decompressed."""

from __future__ import annotations

import gzip
import io
import zlib
from pathlib import Path

from gspo_dynamics._errors import ConfigError

MAX_BYTES = 2**31  # a metrics log this large is not a metrics log
_DIR_CANDIDATES = ("trainer_state.json", "metrics.jsonl", "metrics.csv")
# Where a run folder keeps its TensorBoard events when it has no log of its own (TRL's runs/<date>/, verl's
# tensorboard_log/<project>/<experiment>/): the newest is read, as `watch DIR` follows it.
_DIR_EVENTS = ("events.out.tfevents.*", "*/events.out.tfevents.*", "*/*/events.out.tfevents.*")
# W&B's run folder (wandb/run-*/) and its files/: the console W&B captured, told by W&B's own files beside it
_WANDB_LOGS = ("files/output.log", "output.log")
_WANDB_OWN = ("wandb-summary.json", "wandb-metadata.json", "config.yaml")


def gunzipped(content: bytes, source: str) -> bytes:
    """A gzip-compressed log's bytes decompressed (a cluster's rotated `*.jsonl.gz`), others as they are; a corrupt
    or truncated stream, or one past 2 GiB decompressed, is one ConfigError."""
    if content[:2] != b"\x1f\x8b":
        return content
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(content)) as stream:
            out = stream.read(MAX_BYTES + 1)
    except (OSError, EOFError, zlib.error) as error:
        raise ConfigError(f"log file {source!r} is gzip-compressed but cannot be decompressed ({error})") from None
    if len(out) > MAX_BYTES:
        raise ConfigError(f"log file {source!r} is larger than 2 GiB decompressed")
    return out


def log_in(folder: Path, sweep: bool = True) -> Path:
    """The log of a run folder: its trainer_state.json or metrics file, else the newest TensorBoard event file in it
    or two levels below it, else the trainer_state.json of its latest checkpoint-N/ (TRL's output folder; N the
    largest), else the console a W&B run folder (or its files/) captured, output.log."""
    found = [folder / name for name in _DIR_CANDIDATES if (folder / name).is_file()]
    if found:
        return found[0]
    events = [(p.stat().st_mtime_ns, str(p), p) for pattern in _DIR_EVENTS for p in folder.glob(pattern) if p.is_file()]
    if events:
        return max(events)[2]
    checkpoints = [(int(n), str(p), p) for p in folder.glob("checkpoint-*/trainer_state.json")
                   if (n := p.parent.name.removeprefix("checkpoint-")).isdigit() and p.is_file()]
    if checkpoints:  # a TRL output folder: the latest checkpoint's state holds the whole log history to its step
        return max(checkpoints)[2]
    console = [folder / name for name in _WANDB_LOGS if (folder / name).is_file()
               and any((folder / name).with_name(own).is_file() for own in _WANDB_OWN)]
    if console:
        return console[0]
    runs = run_folders(folder) if sweep else []
    if runs:
        names = ", ".join(p.name + "/" for p in runs[:4]) + (", ..." if len(runs) > 4 else "")
        raise ConfigError(f"directory {str(folder)!r} holds {len(runs)} run folders ({names}), not one run's log: "
                          f"diagnose reads one of them ({str(runs[0])!r}); report reads them all as a sweep")
    raise ConfigError(f"directory {str(folder)!r} holds no trainer_state.json (nor checkpoint-N/trainer_state.json), "
                      "metrics file, TensorBoard event file (nor one up to two folders below) or W&B run's output.log: "
                      "give the log file itself")


def holds_log(folder) -> bool:
    """Whether `folder` holds one run's log of its own (what `read_log` of the folder reads, not its subfolders')."""
    try:
        log_in(Path(folder), sweep=False)
    except (ConfigError, OSError):
        return False
    return True


def run_folders(folder) -> list[Path]:
    """The folders directly inside `folder` that each hold a run's log (`_log_in` finds one), by name: a sweep's
    folder of runs; [] where there is none (or `folder` is no folder)."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return [sub for sub in sorted(p for p in folder.iterdir() if p.is_dir()) if holds_log(sub)]
