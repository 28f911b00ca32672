"""scripts/restore_logs.py: each manifest entry written from a snapshot only with its sha256, none dropped unsaid."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def restore():
    spec = importlib.util.spec_from_file_location("restore_logs", ROOT / "scripts" / "restore_logs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def snapshot(tmp_path, restore, monkeypatch):
    """A snapshot of owner/name at /<tmp>/mirror/owner+name/repo holding logs/run.log; (entry, its bytes)."""
    repo = tmp_path / "mirror" / "owner+name" / "repo"
    (repo / "logs").mkdir(parents=True)
    data = b'{"reward": 0.5}\n'
    (repo / "logs" / "run.log").write_bytes(data)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git[:3] + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "log"], check=True)
    commit = subprocess.run(git[:3] + ["rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    monkeypatch.setattr(restore, "MIRROR", tmp_path / "mirror")
    entry = {"file": "owner__name__logs__run.log", "repo": "owner/name", "commit": commit, "path": "logs/run.log",
             "sha256": hashlib.sha256(data).hexdigest()}
    return entry, data


def test_a_file_is_written_with_its_sha256_then_left_alone(restore, snapshot, tmp_path):
    entry, data = snapshot
    out = tmp_path / "wild_logs"
    assert restore._restore(out, entry) == "written"
    assert (out / entry["file"]).read_bytes() == data
    assert restore._restore(out, entry) == "present"


@pytest.mark.parametrize("change, why", [({"sha256": "0" * 64}, "sha256 differs"),
                                         ({"path": "logs/other.log"}, "commit or path not in the snapshot"),
                                         ({"repo": "owner/absent"}, "no snapshot")])
def test_a_file_that_cannot_be_had_as_recorded_is_not_written(restore, snapshot, tmp_path, change, why):
    entry, _ = snapshot
    out = tmp_path / "wild_logs"
    assert restore._restore(out, {**entry, **change}) == why
    assert not out.exists()


def test_every_manifest_entry_is_restored_or_counted(restore):
    paper = ROOT / "paper_repro"
    wild = sum(len(json.loads(p.read_text())) for p in list((paper / "wild_logs").glob("labels_*.json"))
               + list((paper / "wild_logs").glob("heldout*/labels_*.json")))
    runs = sum(len(json.loads((paper / "data" / d / "manifest.json").read_text())["runs"])
               for d in ("public_collapse", "fresh_runs"))
    external = sum(e.get("where") == "external" for e in json.loads((paper / "real_log_labels.json").read_text()))
    manifest = len(json.loads((paper / "real_run_manifest.json").read_text()))
    assert len(restore._entries()) == wild + runs + external + manifest
