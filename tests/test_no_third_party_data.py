"""The repository ships none of the real logs written by others (they stay in ../shared/data/real_logs)."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _tracked_files() -> list[Path]:
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked files cannot be listed")
    return [ROOT / name for name in listed.decode().split("\0") if name and (ROOT / name).is_file()]


def test_no_tracked_file_is_a_copy_of_a_real_log(real_logs):
    from gspo_dynamics.real_logs import real_log_files

    theirs = {_sha256(p): p.name for p in real_log_files(real_logs)}
    assert len(theirs) >= 5  # the folder holds the logs INDEX.md lists
    copies = [f"{p.relative_to(ROOT)} = {theirs[h]}" for p in _tracked_files() if (h := _sha256(p)) in theirs]
    assert not copies, copies


def test_no_tracked_path_holds_real_logs():
    tracked = [p.relative_to(ROOT).as_posix() for p in _tracked_files()]
    data = [name for name in tracked if "real_logs" in name.lower() and not name.endswith(".py")]
    assert not data, data
