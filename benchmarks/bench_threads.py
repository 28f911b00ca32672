"""Benchmark: seconds of a `gspo-dynamics train` command on a CPU at one thread against torch's default (one
per core), per model preset: the measurement behind `gspo_dynamics.train._threads` (a narrow model trains on
one thread unless OMP_NUM_THREADS says otherwise).

Each run is the whole command a user types (import, model build, supervised warm-up, --steps GSPO steps with
4 optimizer steps per rollout, logs written), the thread count pinned by OMP_NUM_THREADS so the trainer's own
rule does not apply; best of --repeats, the sides alternating so both see the same load.

    cd /work/main && .venv/bin/python benchmarks/bench_threads.py            # ~3 min on 2 cores
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from _results import cpu_model, publish, table

SECTION = "## Trainer threads on a CPU"
PRESETS = {"100k": 150, "1m": 40, "10m": 8}  # preset -> GSPO steps timed (the 10m model's steps are ~50x the 100k's)


def _seconds(preset: str, steps: int, threads: int) -> float:
    """Wall seconds of one train command at `threads` intra-op threads."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    exe = Path(sys.executable).with_name("gspo-dynamics")
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        subprocess.run([str(exe), "train", "--task", "pattern", "--model", preset, "--objective", "gspo",
                        "--steps", str(steps), "--steps-per-generation", "4", "--no-progress", "--out", out],
                       env=env, check=True, capture_output=True)
        return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--no-write", dest="write", action="store_false", help="print, do not write benchmarks/RESULTS.md")
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    load = os.getloadavg()[0]
    rows = []
    for preset, steps in PRESETS.items():
        best = {1: float("inf"), cores: float("inf")}
        for _ in range(args.repeats):
            for threads in best:
                best[threads] = min(best[threads], _seconds(preset, steps, threads))
        rows.append([preset, str(steps), f"{best[1]:.1f}", f"{best[cores]:.1f}", f"{best[cores] / best[1]:.2f}x"])
        print(rows[-1], flush=True)
    lines = [SECTION, "",
             "`gspo-dynamics train --task pattern --model PRESET --objective gspo --steps S --steps-per-generation 4`, "
             "whole command (import, warm-up, training, logs), best of "
             f"{args.repeats}; one thread against one per core ({cores}). `train` picks one thread itself for the "
             "narrow presets (d_model <= 128: 100k, 1m) unless OMP_NUM_THREADS is set (`train/_threads.py`).", "",
             *table(["preset", "steps", "1 thread (s)", f"{cores} threads (s)", f"{cores} threads / 1"], rows), "",
             f"Machine: {cpu_model()}, {cores} cores, torch {torch.__version__}, 1-min load average {load:.1f} at the "
             "start (other work shared the machine: the ratios, not the seconds, are the result).", "",
             "Command:", "", "    cd /work/main && .venv/bin/python benchmarks/bench_threads.py"]
    publish(SECTION, lines, args.write)


if __name__ == "__main__":
    main()
