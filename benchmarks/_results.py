"""Shared by the benchmark scripts: each owns one `## ...` section of benchmarks/RESULTS.md."""

from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import re
import time
from pathlib import Path

import torch

from gspo_dynamics._errors import ConfigError

RESULTS = Path(__file__).with_name("RESULTS.md")


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo ("unknown CPU" where there is none)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def replace_section(section: str, body: str) -> None:
    """Replace the section headed `section` (up to the next `## `) with `body`, or append it."""
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n\n"
    pattern = re.compile(rf"^{re.escape(section)}\n.*?(?=^## |\Z)", re.S | re.M)
    text = pattern.sub(lambda _: body + "\n", text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + body
    RESULTS.write_text(text.rstrip("\n") + "\n")
    print(f"wrote section {section!r} of {RESULTS}")


def timing_options(parser, repeats: int) -> None:
    """The options every timed benchmark takes: --device, --repeats, --warmup, --threads, --no-write."""
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--repeats", type=int, default=repeats)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=_positive, default=torch.get_num_threads())
    parser.add_argument("--no-write", dest="write", action="store_false", help="print, do not write benchmarks/RESULTS.md")


def _positive(text: str) -> int:
    """An integer >= 1 (argparse type: anything else is one line and exit 2)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}")
    return value


def device_tools(device: str):
    """(autocast, sync) for timing on `device`: bf16 autocast and a synchronize on CUDA (the GPU's work inside
    the clock), no-ops on a CPU; ConfigError for CUDA where there is none."""
    if device != "cuda":
        return contextlib.nullcontext, lambda: None
    if not torch.cuda.is_available():
        raise ConfigError("--device cuda: no CUDA device here")
    return (lambda: torch.autocast("cuda", dtype=torch.bfloat16)), torch.cuda.synchronize


def best_time(step, sync, repeats: int, warmup: int) -> float:
    """Best seconds of `step()` over `repeats` calls after `warmup` untimed ones, `sync()` (the device's queue
    drained) before the clock starts and before it stops."""
    best = float("inf")
    for i in range(warmup + repeats):
        sync()
        t0 = time.perf_counter()
        step()
        sync()
        if i >= warmup:
            best = min(best, time.perf_counter() - t0)
    return best


def setting(device: str, threads: int) -> str:
    """A timed section's setting: "(date, the GPU or the CPU and its threads, torch, precision; load average)"."""
    where = torch.cuda.get_device_name(0) if device == "cuda" else f"{cpu_model()}, {threads} thread(s)"
    precision = "bf16 autocast" if device == "cuda" else "float32"
    return (f"({datetime.date.today()}, {where}, torch {torch.__version__}, {precision}; "
            f"load average {os.getloadavg()[0]:.1f})")


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table's lines: the header, its rule, one line per row of cells."""
    return ["| " + " | ".join(header) + " |", "|---" * len(header) + "|"] + ["| " + " | ".join(r) + " |" for r in rows]


def publish(section: str, lines: list[str], write: bool) -> None:
    """Print a benchmark's section, and write it into RESULTS.md unless `write` is False (--no-write)."""
    print("\n".join(lines))
    if write:
        replace_section(section, "\n".join(lines))


def failed(label: str, error: Exception) -> str:
    """A benchmark row's label for a variant that raised: the label and the error's first line."""
    return f"{label}: failed ({type(error).__name__}: {(str(error).splitlines() or [''])[0][:120]})"


def run(main) -> None:
    """Call a benchmark's `main`; a ConfigError (no GPU, a bad option) is one line and a non-zero exit."""
    try:
        main()
    except ConfigError as e:
        raise SystemExit(f"error: {e}")
