"""Where the real training logs written by others live: beside the checkout, never inside it.

    folder = real_logs_dir()          # Path, or None when absent
    why = real_logs_missing_reason()  # the sentence a skipped test or figure prints

Those logs (TRL, verl, TensorBoard files from public repositories; `INDEX.md` there says which)
are not ours to redistribute, so the repository ships none of them. Development machines and CI
keep them in `../shared/data/real_logs/` next to the clone; `GSPO_DYNAMICS_REAL_LOGS` points
elsewhere. Tests, `paper_repro/diagnose_real_logs.py`, the quick start and the gallery figures
drawn from a real log all resolve the folder here, and skip with `real_logs_missing_reason()`
when it is absent.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "GSPO_DYNAMICS_REAL_LOGS"
REPO = Path(__file__).resolve().parents[1]
DEFAULT = REPO.parent / "shared" / "data" / "real_logs"
INDEX = "INDEX.md"  # the folder's description, not a log


def real_logs_dir() -> Path | None:
    """The folder of real logs: $GSPO_DYNAMICS_REAL_LOGS if set, else ../shared/data/real_logs; None if absent."""
    folder = Path(os.environ[ENV_VAR]) if os.environ.get(ENV_VAR) else DEFAULT
    return folder if folder.is_dir() else None


def real_logs_missing_reason() -> str:
    """Why the real logs are not available (for skip messages)."""
    if os.environ.get(ENV_VAR):
        return f"{ENV_VAR}={os.environ[ENV_VAR]} is not a folder of real logs"
    return (f"no real logs beside the checkout ({DEFAULT} is absent; set {ENV_VAR} to a copy of "
            "../shared/data/real_logs to run these checks)")


def real_log_files(folder: Path | None = None) -> list[Path]:
    """Every log file in the folder (sorted; INDEX.md and hidden files left out); [] when absent."""
    folder = real_logs_dir() if folder is None else folder
    if folder is None:
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and p.name != INDEX and not p.name.startswith("."))
