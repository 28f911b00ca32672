"""diagnose --config beside a log that cannot be the config's run (audit s43u D3): said first, never silent."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gspo_dynamics.cli.main import main


def _log(tmp_path, lr: float, steps: int = 150):
    rng = np.random.default_rng(0)
    rows = [{"step": s, "reward": float(0.2 + 0.5 * s / steps + rng.normal(0, 0.03)), "learning_rate": lr}
            for s in range(1, steps + 1)]
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


@pytest.mark.parametrize("config_lr, max_steps, said", [
    (1e-6, 300, ["the log's learning_rate reaches 0.0005, 500x above the config's 1e-06"]),
    (5e-4, 100, ["the log runs to step 150, past the config's max_steps 100"]),
    (1e-6, 100, ["500x above", "past the config's max_steps 100"]),
    (5e-4, 300, []),  # the log's own run: nothing said
])
def test_a_config_that_cannot_be_the_logs_run_is_said_first(tmp_path, capsys, config_lr, max_steps, said):
    config = tmp_path / "grpo.json"
    config.write_text(json.dumps({"learning_rate": config_lr, "num_generations": 8, "per_device_train_batch_size": 8,
                                  "max_steps": max_steps, "lr_scheduler_type": "constant"}))
    assert main(["diagnose", str(_log(tmp_path, 5e-4)), "--config", str(config)]) == 0
    lines = capsys.readouterr().out.splitlines()
    disagree = [line for line in lines if line.startswith("config     config and log disagree: ")]
    assert len(disagree) == len(said) and all(any(s in line for line in disagree) for s in said)
    if disagree:  # before every other config line
        assert lines.index(disagree[0]) == next(i for i, line in enumerate(lines) if line.startswith("config "))
