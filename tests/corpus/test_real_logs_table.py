"""paper_repro/diagnose_real_logs.py on ../shared/data/real_logs: refusals, too-short, cross-format."""

from __future__ import annotations

import pytest
from _real_logs import DPO, SRINATH, VERL_SMOKE

from gspo_dynamics.diagnose import MODES
from gspo_dynamics.real_logs import real_log_files


@pytest.fixture(scope="module")
def script(load_script):
    return load_script("paper_repro", "diagnose_real_logs")


def test_the_script_finds_the_shared_folder(script, real_logs):
    assert script.logs_dir() == real_logs


def test_json_and_tensorboard_copies_are_paired_and_identical(script, real_logs):
    pairs = script.cross_format_pairs(real_log_files(real_logs))
    assert len(pairs) == 1
    json_copy, tb_copy = pairs[0]
    assert json_copy.name.endswith("trainer_state.json") and ".tfevents." in tb_copy.name
    same, n_series, why = script.compare_copies(json_copy, tb_copy)
    assert same, why
    assert n_series >= 6


def test_preference_run_is_refused_and_smoke_run_is_too_short(script, real_logs):
    refused = script.summarise(real_logs / DPO)
    assert refused["status"] == "refused" and "not of GRPO/GSPO-style RL" in refused["evidence"]
    short = script.summarise(real_logs / VERL_SMOKE)
    assert (short["status"], short["primary"], short["reward_points"], short["format"]) == ("too_short", "too_short", 3, "jsonl")


def test_a_readable_log_gets_a_verdict_with_evidence(script, real_logs):
    row = script.summarise(real_logs / SRINATH)
    assert (row["status"], row["format"], row["rows"]) == ("read", "trl_state", 50)
    assert row["primary"] in MODES and row["evidence"]
