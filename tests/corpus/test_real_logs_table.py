"""paper_repro/diagnose_real_logs.py on the copies in tests/data/real_logs: refusals, too-short, cross-format."""

from __future__ import annotations

from pathlib import Path

import pytest

from gspo_dynamics.diagnose import MODES

ROOT = Path(__file__).resolve().parents[2]
REAL_LOGS = ROOT / "tests" / "data" / "real_logs"


@pytest.fixture(scope="module")
def script(load_script):
    return load_script("paper_repro", "diagnose_real_logs")


def _file(prefix: str) -> Path:
    (path,) = [p for p in REAL_LOGS.iterdir() if p.name.startswith(prefix)]
    return path


def test_json_and_tensorboard_copies_are_paired_and_identical(script):
    files = sorted(p for p in REAL_LOGS.iterdir() if p.name != "INDEX.md")
    pairs = script.cross_format_pairs(files)
    assert len(pairs) == 1
    json_copy, tb_copy = pairs[0]
    assert json_copy.name.endswith("trainer_state.json") and ".tfevents." in tb_copy.name
    same, n_series, why = script.compare_copies(json_copy, tb_copy)
    assert same, why
    assert n_series >= 6


def test_preference_run_is_refused_and_smoke_run_is_too_short(script):
    refused = script.summarise(_file("chandlerzuo__"))
    assert refused["status"] == "refused" and "not of GRPO/GSPO-style RL" in refused["evidence"]
    short = script.summarise(_file("terrense__"))
    assert (short["status"], short["primary"], short["reward_points"], short["format"]) == ("too_short", "too_short", 3, "jsonl")


def test_a_readable_log_gets_a_verdict_with_evidence(script):
    row = script.summarise(_file("srinath-manda__"))
    assert (row["status"], row["format"], row["rows"]) == ("read", "trl_state", 50)
    assert row["primary"] in MODES and row["evidence"]
