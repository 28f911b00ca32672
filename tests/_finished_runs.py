"""Three finished 96-step runs of one task (ends 0.9, 0.93, 0.91), written as JSONL: `predict --prior`'s input in
the CLI tests."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

ENDS = (0.9, 0.93, 0.91)


def finished_runs(folder: Path) -> list[Path]:
    """The runs' paths under `folder`: reward = end - 0.7 exp(-t / 10) + 0.01 noise over steps 1-96."""
    runs = []
    for i, end in enumerate(ENDS):
        t = np.arange(1, 97)
        reward = end - 0.7 * np.exp(-t / 10) + 0.01 * np.random.default_rng(i).standard_normal(96)
        runs.append(folder / f"done{i}.jsonl")
        runs[-1].write_text("".join(json.dumps({"step": int(s), "reward": float(r)}) + "\n" for s, r in zip(t, reward)))
    return runs
