"""paper_repro/wild_logs.py, the scorer of the logs-from-the-wild protocol, on planted logs and labels (no fetched log
needed), and the labels files' form."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

PAPER_REPRO = Path(__file__).parents[1] / "paper_repro"
sys.path.insert(0, str(PAPER_REPRO))
import wild_logs as wl  # noqa: E402

from gspo_dynamics.diagnose import MODES  # noqa: E402

EXCLUDED = {"Caitlyn-Yin/grpo_norm", "IMJONEZZ/UnslothGRPO", "Rusheel86/Chaos-Economy", "Sunshine535/nips-grpo-dynamics",
            "abdo-ashraf/Gemma-3-RL-Finetuning", "alexchilton/CAS_NLP_MODULE4_GRPO", "chandlerzuo/rlhf_recsys",
            "microsoft/post-training-toolkit", "srinath-manda/IITD_Feb26_AAIPL", "terrense/qwen3-8b-grpo-dapo-lab",
            "wallacexuhanxiao/FinQA-tool-calling-GRPO-GSPO", "qhy991/GRPO-Clean-2", "beingamanforever/RDAN-GRPO",
            "liqiuling1/GRPO-B", "NKU-LITI/Scaf-GRPO-verl", "beibeizzz/countdown_post_train",
            "Th3CtrLKeY/Enhancing-SLMs-via-GRPO-and-Physics-based-RL"}


def _planted(tmp_path: Path) -> tuple[Path, dict]:
    """A 60-step JSONL log whose reward rises and flattens, and its label."""
    steps = np.arange(1, 61)
    reward = 0.8 - 0.6 * np.exp(-steps / 10) + 0.01 * np.sin(steps)
    text = "".join(json.dumps({"step": int(s), "reward": float(r), "entropy": 0.5}) + "\n" for s, r in zip(steps, reward))
    path = tmp_path / "owner__repo__metrics.jsonl"
    path.write_text(text)
    entry = {"file": path.name, "repo": "owner/repo", "commit": "0" * 40, "path": "metrics.jsonl",
             "sha256": hashlib.sha256(text.encode()).hexdigest(), "bytes": len(text), "format": "jsonl",
             "writer": "hand-written", "runs": 1, "non_finite": False, "label": "healthy_saturation", "also_ok": [],
             "reading": {"reward_column": "reward", "step_first": 1, "step_last": 60, "n_reward": 60,
                         "reward_first": float(reward[0]), "reward_last": float(reward[-1]), "entropy_column": "entropy",
                         "length_column": None, "kl_ref_column": None, "grad_norm_column": None, "eval_points": 0}}
    return path, entry


def test_a_log_read_as_labelled_has_no_misses_and_a_wrong_label_is_named(tmp_path):
    path, entry = _planted(tmp_path)
    assert wl.locate(entry, tmp_path) == (path, "")
    row = wl.score(entry, path)
    assert row["outcome"] == "read" and row["misses"] == []
    entry["reading"] = {**entry["reading"], "step_last": 61, "reward_last": 0.5}
    misses = wl.score(entry, path)["misses"]
    assert any(m.startswith("steps 1-60") for m in misses) and any(m.startswith("reward_last") for m in misses)


def test_a_changed_file_is_not_scored(tmp_path):
    path, entry = _planted(tmp_path)
    path.write_text(path.read_text() + "\n")
    assert wl.locate(entry, tmp_path) == (None, "sha256 differs from the label's")


def test_a_refusal_is_right_only_for_a_refused_label(tmp_path):
    path = tmp_path / "x__y__sft.jsonl"
    path.write_text("".join(json.dumps({"step": s, "loss": 1.0 / s, "learning_rate": 1e-5}) + "\n" for s in range(1, 30)))
    entry = {"file": path.name, "repo": "x/y", "label": "refused", "reading": None}
    assert wl.score(entry, path)["misses"] == []
    assert wl.score({**entry, "label": "stalled"}, path)["misses"][0].startswith("refused")


def test_the_summary_counts_unsure_apart_and_refits_the_map_without_the_repository():
    rows = [{"file": f"f{i}", "repo": f"r{i % 3}", "label": "stalled", "also_ok": [], "outcome": "read", "misses": [],
             "primary": "stalled" if i % 4 else "still_rising", "confidence": 0.95, "unsure": [] if i < 10 else
             ["still_rising", "healthy_saturation"], "non_finite": False, "label_non_finite": False, "file_non_finite": False} for i in range(12)]
    s = wl.summarise(rows, 12)
    assert s["unsure"] == (2, 12) and s["right"] == (7, 10)
    held = wl.held_out_confidences(rows)
    assert set(held) == {f"f{i}" for i in range(10)} and all(0 < q <= 0.95 for q in held.values())


def _labels() -> list[dict]:
    return wl.load_entries()


@pytest.mark.skipif(not list(wl.LABELS.glob("labels_*.json")), reason="no labels written yet")
def test_every_label_has_the_protocols_fields_and_no_used_repository():
    entries = _labels()
    files = [e["file"] for e in entries]
    assert len(files) == len(set(files)), "a log is labelled twice"
    for e in entries:
        assert e["repo"] not in EXCLUDED, e["file"]
        assert len(e["commit"]) == 40 and len(e["sha256"]) == 64, e["file"]
        assert e["label"] in (*MODES, "too_short", "refused"), e["file"]
        assert all(m in (*MODES, "too_short", "refused") for m in e.get("also_ok") or []), e["file"]
        assert e["label"] == "refused" or {"step_first", "step_last", "n_reward", "reward_column"} <= set(e["reading"])
        assert e.get("reason"), e["file"]


@pytest.mark.parametrize("text, has", [(b'{"loss": NaN}', True), (b"{'grad_norm': nan, 'x': 1}", True),
                                       (b"step:3 - reward:-inf - kl:0.1", True), (b"grad_norm='inf'", True),
                                       (b'{"reward": 0.5, "name": "infinite_loop"}', False), (b"nano: 3", False)])
def test_a_non_finite_value_is_found_in_a_values_place_only(tmp_path, text, has):
    path = tmp_path / "log.txt"
    path.write_bytes(text)
    assert wl.file_has_non_finite(path, False) is has


@pytest.mark.parametrize("described, kind", [("TRL trainer_state.json, logging_steps=5", "trainer_state.json"),
                                             ("TensorBoard event file, train/ tags", "TensorBoard"),
                                             ("verl file logger JSONL", "JSONL"), ("W&B history CSV", "CSV"),
                                             ("one JSON object of parallel lists", "JSON document"),
                                             ("console stdout of python-dict lines", "console"),
                                             ("console, values printed as JSON dicts", "console")])
def test_a_labels_format_words_give_the_kind_of_file(described, kind):
    assert wl.format_class(described) == kind
