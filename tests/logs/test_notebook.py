"""A Jupyter notebook read as the log its cells printed (`logs/_notebook.py`): the trainer's HTML table (transformers'
notebook callback as TRL and Unsloth extend it), else its printed outputs as console output. Every notebook here is
written by the test."""

from __future__ import annotations

import json
import math

import pytest

from gspo_dynamics import ConfigError
from gspo_dynamics.logs import read_log

N = 30
REWARD = [round(0.1 + 0.6 * (1 - math.exp(-i / 8)), 6) for i in range(N)]


def _table(steps, extra_head: str = "") -> str:
    head = "".join(f"<th>{h}</th>" for h in ("Step", "Training Loss", "reward", "reward_std",
                                             "rewards / correctness_reward_func")) + extra_head
    rows = "".join(f"<tr><td>{s}</td><td>{'No log' if s == 1 else '0.001'}</td><td>{REWARD[s - 1]:.6f}</td>"
                   f"<td>0.3</td><td>{REWARD[s - 1] / 2:.6f}</td></tr>" for s in steps)
    return (f"<div><progress value='{N}' max='{N}'></progress> [{N}/{N} 1:00, Epoch 0/1]</div>"
            f"<table border=\"1\" class=\"dataframe\"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")


def _notebook(outputs: list[dict], indent: int | None = 1) -> str:
    cells = [{"cell_type": "code", "source": ["trainer.train()"], "outputs": outputs}]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=indent)


@pytest.mark.parametrize("indent", [1, None])
def test_the_last_training_table_of_a_notebook_is_read_with_the_trainers_names(indent):
    first = {"output_type": "display_data", "data": {"text/html": _table(range(1, 6))}}
    last = {"output_type": "display_data", "data": {"text/html": [_table(range(1, N + 1))]}}
    log = read_log(_notebook([first, last], indent))
    assert log.format == "notebook" and log.steps.tolist() == list(range(1, N + 1))
    assert log["reward"].tolist() == REWARD and "reward/correctness_reward_func" in log.series
    assert log.columns["loss"] == "loss" and math.isnan(log["loss"][0])  # "No log" is no number
    assert "the notebook's training table" in log.step_axis


def test_a_notebook_without_a_table_is_read_from_what_its_cells_printed():
    printed = "".join(f"{{'loss': 0.01, 'reward': {r}, 'reward_std': 0.3, 'epoch': {i / N:.3f}}}\n"
                      for i, r in enumerate(REWARD))
    log = read_log(_notebook([{"output_type": "stream", "name": "stdout", "text": printed.splitlines(True)}]))
    assert log.format == "notebook" and log.n_points("reward") == N
    assert any("printed outputs were read as console output" in w for w in log.warnings)


def test_a_notebook_with_neither_is_one_clear_error():
    with pytest.raises(ConfigError, match="holds no training table .* what its cells printed holds no metric rows"):
        read_log(_notebook([{"output_type": "stream", "name": "stdout", "text": ["hello\n"]}]))
    with pytest.raises(ConfigError, match="holds no training table .* and its cells printed nothing:"):
        read_log(_notebook([]))
