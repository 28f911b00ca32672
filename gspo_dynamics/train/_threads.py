"""How many CPU threads a training run uses when the user has not said.

PyTorch starts one intra-op thread per core, and every op of a step then waits for all of them. The narrowest
model's ops (width d_model <= NARROW_WIDTH: the preset 100k) are microseconds of work: on 2 idle cores a second
thread saves 10% of a 150-step run, but where another job holds a core each op waits for it and the run takes
2.3x as long (benchmarks/RESULTS.md, "Trainer threads on a CPU", `benchmarks/bench_threads.py`; a many-core
machine's default threads took 52 s against 16 s on one). Such a run takes one thread: a little slower on an
idle machine, never the 2-3x slower run, and its floating-point sums, so its numbers, the same whatever the core
count. Wider models keep torch's default, where threads pay more (16% on the 1m preset, 26% on 10m, idle). The
user's own choice wins: OMP_NUM_THREADS set in the environment leaves torch's thread count as it is.
"""

from __future__ import annotations

import os

import torch

NARROW_WIDTH = 64  # d_model of the 100k preset, whose ops are the smallest and its numbers the README's


def run_threads(width: int | None, device: torch.device) -> int | None:
    """The intra-op thread count for a run of a model of `width` (d_model; None: not a built-in model) on
    `device`: 1 for a narrow model on the CPU, else None (torch's own count, or the user's OMP_NUM_THREADS)."""
    if device.type != "cpu" or os.environ.get("OMP_NUM_THREADS") or width is None or width > NARROW_WIDTH:
        return None
    return 1
