"""Benchmark: seconds of a `gspo-dynamics train` command on a CPU at one thread against torch's default (one
per core), per model preset: the measurement behind `gspo_dynamics.train._threads` (a narrow model trains on
one thread unless OMP_NUM_THREADS says otherwise) and the numbers in its docstring.

Each run is the whole command a user types (import, model build, supervised warm-up, --steps GSPO steps with
4 optimizer steps per rollout, logs written), the thread count pinned by OMP_NUM_THREADS so the trainer's own
rule does not apply; best of --repeats, the sides alternating so both see the same load. Each preset is timed
on the idle machine and again with one core busy (a process spinning on it, as another job or a test run would):
threads that wait on a busy core are where a small model loses most.

    cd /work/main && .venv/bin/python benchmarks/bench_threads.py            # ~8 min on 2 cores
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from _results import cpu_model, publish, table

from gspo_dynamics.train._threads import NARROW_WIDTH

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


@contextlib.contextmanager
def _busy_core(busy: bool):
    """A process spinning on one core for the duration (nothing where `busy` is False)."""
    if not busy:
        yield
        return
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        spinner.kill()
        spinner.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--no-write", dest="write", action="store_false", help="print, do not write benchmarks/RESULTS.md")
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    load = os.getloadavg()[0]
    rows = []
    for preset, steps in PRESETS.items():
        for busy in (False, True):
            best = {1: float("inf"), cores: float("inf")}
            with _busy_core(busy):
                for _ in range(args.repeats):
                    for threads in best:
                        best[threads] = min(best[threads], _seconds(preset, steps, threads))
            rows.append([preset, str(steps), "one core busy" if busy else "idle", f"{best[1]:.1f}", f"{best[cores]:.1f}",
                         f"{best[cores] / best[1]:.2f}x"])
            print(rows[-1], flush=True)
    lines = [SECTION, "",
             "`gspo-dynamics train --task pattern --model PRESET --objective gspo --steps S --steps-per-generation 4`, "
             "whole command (import, warm-up, training, logs), best of "
             f"{args.repeats}; one thread against one per core ({cores}). `train` picks one thread itself for a "
             f"model of d_model <= {NARROW_WIDTH} (the 100k preset) unless OMP_NUM_THREADS is set "
             "(`train/_threads.py`).", "",
             *table(["preset", "steps", "machine", "1 thread (s)", f"{cores} threads (s)", f"{cores} threads / 1"], rows),
             "",
             f"Machine: {cpu_model()}, {cores} cores, torch {torch.__version__}, {datetime.date.today()}; 1-min load "
             f"average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end.", "",
             "Command:", "", "    cd /work/main && .venv/bin/python benchmarks/bench_threads.py"]
    publish(SECTION, lines, args.write)


if __name__ == "__main__":
    main()
