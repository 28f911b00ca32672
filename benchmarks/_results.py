"""Shared by the benchmark scripts: each owns one `## ...` section of benchmarks/RESULTS.md."""

from __future__ import annotations

import re
from pathlib import Path

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


def failed(label: str, error: Exception) -> str:
    """A benchmark row's label for a variant that raised: the label and the error's first line."""
    return f"{label}: failed ({type(error).__name__}: {(str(error).splitlines() or [''])[0][:120]})"


def run(main) -> None:
    """Call a benchmark's `main`; a ConfigError (no GPU, a bad option) is one line and a non-zero exit."""
    try:
        main()
    except ConfigError as e:
        raise SystemExit(f"error: {e}")
