"""Hand labels of real GRPO/GSPO training logs, and where each labelled log lives on this machine.

paper_repro/real_log_labels.json holds one object per log: file, source_repo, commit,
path_in_repo, sha256, format, rows, label (a diagnose mode, "refused" or "too_short"), secondary,
reason, diagnose_primary_at_labelling, where ("shared" | "external"). The labels were given by
eye from the curves before diagnose was run; its verdict at that time is kept beside them.

The logs themselves are not in this repository. "shared" logs live in ../shared/data/real_logs
(or $GSPO_DYNAMICS_REAL_LOGS: `gspo_dynamics.real_logs`); "external" logs in $GSPO_DYNAMICS_EXTERNAL_LOGS, else
in ../external_logs next to the repository root. `locate` returns (path, "") for a present file
whose sha256 matches the label, else (None, why) so that callers can skip with that reason.

    from _real_log_labels import load_labels, locate
    for entry in load_labels():
        path, why = locate(entry)
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from gspo_dynamics.real_logs import real_logs_dir

ROOT = Path(__file__).resolve().parents[1]
LABELS_PATH = Path(__file__).with_name("real_log_labels.json")
ENV_VAR = "GSPO_DYNAMICS_EXTERNAL_LOGS"
NON_MODE_LABELS = ("refused", "too_short")


def load_labels(path: Path = LABELS_PATH) -> list[dict]:
    """The labels file as a list of dicts, in file order."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


def external_dir() -> Path:
    """Where external logs are looked for: $GSPO_DYNAMICS_EXTERNAL_LOGS, else ../external_logs."""
    return Path(os.environ.get(ENV_VAR) or ROOT.parent / "external_logs")


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def locate(entry: dict) -> tuple[Path | None, str]:
    """(path, "") when the labelled log is present with the labelled sha256, else (None, why)."""
    shared = real_logs_dir()
    folders = (external_dir(),) if entry["where"] == "external" else ((shared,) if shared else ())
    for folder in folders:
        path = folder / entry["file"]
        if path.is_file():
            if sha256(path) != entry["sha256"]:
                return None, f"{path} differs from the labelled file (sha256 mismatch)"
            return path, ""
    where = " or ".join(str(f) for f in folders) or "the shared real logs (absent)"
    hint = f" (set {ENV_VAR} to the folder holding them)" if entry["where"] == "external" else ""
    return None, f"{entry['file']} is not in {where}{hint}"
