"""paper_repro/public_collapse.py: its committed manifest's invariants and its scoring, on no third-party log."""

import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "paper_repro"))
import public_collapse as pc  # noqa: E402

RUNS = pc.load_manifest()


def test_manifest_entries_name_their_source_and_label():
    ids = [r["id"] for r in RUNS]
    assert len(ids) == len(set(ids))
    for r in RUNS:
        assert re.fullmatch(r"[0-9a-f]{40}", r["commit"]) and re.fullmatch(r"[0-9a-f]{40}", r["config"]["commit"])
        assert re.fullmatch(r"[0-9a-f]{64}", r["sha256"]) and r["bytes"] > 0
        assert r["label"] in pc.LABELS and r["strength"] in ("clear", "weak")
        assert (r["fall_step"] is not None) == (r["label"] == "fell")
        assert r["pilot_points"] == pc.pilot_points(r["reward_points"]) >= 8
        assert r["fall_in_pilot"] == (r["fall_step"] is not None and r["fall_step"] <= r["pilot_last_step"])
        assert r["step_first"] <= r["pilot_last_step"] <= r["step_last"]
        assert r["config"]["framework"] in ("trl", "verl") and r["config"]["values"]
        assert isinstance(r["T"], int) and r["T"] >= 1 and r["clip"] in ("on", "off")


def test_manifest_holds_the_collapses_the_issue_asks_for():
    fell = [r for r in RUNS if r["label"] == "fell"]
    held_repos = {r["repo"] for r in RUNS if r["label"] == "held"}
    assert len(fell) >= 8 and len({r["repo"] for r in fell}) >= 4
    assert len(held_repos & {r["repo"] for r in fell}) >= 3  # held runs beside the collapses, in the same repositories


def test_pilot_is_a_fifth_of_the_points_and_at_least_eight():
    assert [pc.pilot_points(n) for n in (10, 40, 41, 45, 235)] == [8, 8, 8, 9, 47]


@pytest.mark.parametrize("verdict", ["unsafe", "at risk", "unknown until a pilot", "error: a refusal"])
def test_every_verdict_but_safe_is_right_on_a_fall_and_wrong_on_a_hold(verdict):
    assert pc.right(verdict, "fell") is True and pc.right(verdict, "held") is False
    assert pc.right("safe", "fell") is False and pc.right("safe", "held") is True
    assert pc.right(verdict, "never rose") is None


def test_an_altered_or_absent_log_is_skipped(tmp_path):
    run = {**RUNS[0]}
    assert pc.present(run, tmp_path) is None
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / run["file"]).write_bytes(b"not the log")
    assert pc.present(run, tmp_path) is None


@pytest.mark.parametrize("framework", ["trl", "verl"])
def test_config_is_written_outside_the_repository_with_the_manifest_values(tmp_path, framework):
    yaml = pytest.importorskip("yaml")
    run = next(r for r in RUNS if r["config"]["framework"] == framework)
    path = pc.write_config(run, tmp_path)
    assert tmp_path in path.parents
    text = path.read_text()
    assert (json.loads(text) if framework == "trl" else yaml.safe_load(text)) == run["config"]["values"]


def test_score_counts_baselines_on_the_same_runs():
    runs = [{**RUNS[0], "id": f"r{i}", "repo": "a/b", "label": lab, "clip": clip, "T": T, "fall_in_pilot": False,
             "strength": "clear"}
            for i, (lab, clip, T) in enumerate([("fell", "off", 2), ("fell", "on", 1), ("held", "on", 1), ("held", "off", 4)])]
    rows = {"r0": {"verdict": "at risk"}, "r1": {"verdict": "safe"}, "r2": {"verdict": "safe"}, "r3": {"verdict": "unsafe"}}
    s = pc.score(runs, rows)
    assert s["acc"]["predict"] == (2, 4) and s["acc"]["always safe"] == (2, 4)
    assert s["acc"]["not safe iff no clip and T > 1"] == (2, 4)
    assert s["by_group"]["fell"] == (1, 2) and s["by_group"]["held"] == (1, 2)
    assert not s["passed"]  # 50% is below the target and not above always safe
