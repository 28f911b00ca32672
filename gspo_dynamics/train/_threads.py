"""How many CPU threads a training run uses when the user has not said.

PyTorch starts one intra-op thread per core. The matrices of a narrow model (width d_model <= NARROW_WIDTH:
the presets 100k and 1m) are too small to share: each op is microseconds of work, and handing it to a second
thread costs more than it saves, so such a run is fastest on one thread (benchmarks/RESULTS.md, "Trainer
threads on a CPU": `benchmarks/bench_threads.py`). One thread also makes a CPU run's floating-point sums, and so
its numbers, independent of the machine's core count. A wider model keeps torch's default. The user's own
choice wins: OMP_NUM_THREADS set in the environment leaves torch's thread count as it is.
"""

from __future__ import annotations

import os

import torch

NARROW_WIDTH = 128  # d_model of the 1m preset, the widest measured to run fastest on one thread


def run_threads(width: int | None, device: torch.device) -> int | None:
    """The intra-op thread count for a run of a model of `width` (d_model; None: not a built-in model) on
    `device`: 1 for a narrow model on the CPU, else None (torch's own count, or the user's OMP_NUM_THREADS)."""
    if device.type != "cpu" or os.environ.get("OMP_NUM_THREADS") or width is None or width > NARROW_WIDTH:
        return None
    return 1
