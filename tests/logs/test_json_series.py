"""A JSON document of series (`logs._json_series`): one list of points per metric, as {"step", "value"} objects,
[step, value] pairs or TensorBoard's [wall_time, step, value] triples, read as rows one per step."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gspo_dynamics import ConfigError
from gspo_dynamics.logs import detect_format, read_log
from gspo_dynamics.logs._json_series import series_rows


def curve(n: int = 60) -> list[float]:
    return [round(0.2 + 0.5 * (1 - np.exp(-i / 15)), 4) for i in range(n)]


def test_a_document_of_step_value_objects_reads_its_train_series_and_its_eval_rows_apart(tmp_path):
    """A loop's curves saved for plotting (tahaBerkBeton/improving-a-small-slm-on-gsm8k's training_curves.json shape),
    pretty-printed: train_reward every 5 steps, eval_* every 25."""
    train = [{"step": 5 * (i + 1), "value": r} for i, r in enumerate(curve())]
    evals = [{"step": 25 * (i + 1), "value": 0.5} for i in range(12)]
    path = tmp_path / "training_curves.json"
    path.write_text(json.dumps({"train_reward": train, "eval_reward": evals, "eval_accuracy": evals}, indent=2))
    assert detect_format(path.read_bytes()) == "jsonl"
    log = read_log(path)
    assert log.columns["reward"] == "train_reward" and log.n_points("reward") == 60
    assert np.allclose(log.valid("reward")[1], curve()) and list(log.valid("reward")[0][:2]) == [5, 10]


@pytest.mark.parametrize("point", [lambda s, v: [s, v], lambda s, v: [1.7e9 + s, s, v]])
def test_pairs_and_tensorboards_triples_are_points(point):
    warnings = []
    rows = series_rows({"reward": [point(s, v) for s, v in zip(range(1, 61), curve())], "note": "traced"}, warnings)
    assert [r["step"] for r in rows] == list(range(1, 61)) and [r["reward"] for r in rows] == curve()
    assert "other keys were left out ('note')" in warnings[0]


def test_rows_of_many_metrics_are_no_series_and_a_series_named_otherwise_is_refused_with_its_map(tmp_path):
    assert series_rows({"steps": [{"step": 1, "reward": 0.1, "kl": 0.0}, {"step": 2, "reward": 0.2, "kl": 0.0}]}, []) is None
    assert series_rows({"points": [[0.5, 0.1], [1.5, 0.2]]}, []) is None  # steps not whole: no series
    path = tmp_path / "curves.json"
    path.write_text(json.dumps({"_note": "a traced curve", "points": [[10 * i, r] for i, r in enumerate(curve())],
                                "annotations": [{"step": 170, "reward": 0.26, "label": "inflection"}]}, indent=1))
    with pytest.raises(ConfigError, match="COLUMN one of the log's columns: 'points'"):
        read_log(path)
    assert read_log(path, column_map={"reward": "points"}).n_points("reward") == 60



def test_series_held_one_object_down_are_read_there():
    """audit s42 m10: `{"metadata": {...}, "metrics": {"reward": [{"step": 2, "value": 3.6}, ...], ...}}` was refused
    with "map reward=reward", and that map then failed: a dead end. The series under `metrics` are the rows, said."""
    points = [{"step": 2 * (i + 1), "value": r} for i, r in enumerate(curve())]
    doc = {"metadata": {"run": "x", "seed": 1}, "metrics": {"reward": points, "kl": [{"step": p["step"], "value": 0.01}
                                                                                  for p in points]}}
    log = read_log(json.dumps(doc))
    assert log.columns["reward"] == "reward" and log.n_points("reward") == 60 and "kl_ref" in log
    assert any("the series are those under 'metrics'" in w for w in log.warnings)


def test_of_several_blocks_one_down_the_training_one_is_read_and_two_runs_are_not_guessed_between():
    """Review s42: the first block won, so `{"eval": ..., "train": ...}` read the eval curve as the training reward,
    and a metadata list of pairs hid the metrics. An evaluation block is never the run's; of several blocks, only
    those with a reward-like series count; two runs' blocks are refused, not one picked."""
    points = [{"step": 2 * (i + 1), "value": r} for i, r in enumerate(curve())]
    falling = [{"step": p["step"], "value": 1 - p["value"]} for p in points]
    log = read_log(json.dumps({"eval": {"reward": falling}, "train": {"reward": points}}))
    assert np.allclose(log.valid("reward")[1], curve())
    log = read_log(json.dumps({"metadata": {"seeds": [[1, 2], [3, 4]]}, "metrics": {"reward": points}}))
    assert np.allclose(log.valid("reward")[1], curve())
    with pytest.raises(ConfigError):
        read_log(json.dumps({"run_a": {"reward": points}, "run_b": {"reward": falling}}))
