"""A TRL log whose keys date it before 0.18 and that logs a KL, with a config that leaves beta out: the case
`predict.beta_from_logged_kl` reads as beta 0.04, which every command taking --config reads alike."""

from __future__ import annotations

import json
from pathlib import Path


def kl_log_without_beta(folder: Path, **config) -> tuple[Path, Path]:
    """(the log, the config) written in `folder`; `config`: keys added to the config."""
    rows = [{"step": s, "reward": 0.3 + 0.5 * (1 - 0.97 ** s), "kl": 0.001 * s, "completion_length": 50.0,
             "learning_rate": 1e-6, "epoch": s / 100} for s in range(1, 101)]
    log = folder / "trl.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    path = folder / "grpo.json"
    path.write_text(json.dumps({"learning_rate": 1e-6, "num_generations": 8, "per_device_train_batch_size": 8,
                                **config}))
    return log, path
