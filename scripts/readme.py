"""Regenerate the output shown in README.md, or check that it is current (`tests/test_readme.py`).

Every ```console block of the README holds `$ command` lines, each followed by that command's output. This
script runs the commands in order, in the repository root with the virtual environment's `gspo-dynamics` first
on PATH and one thread (as the quick start does), and writes each one's standard output under it: the README
shows nothing copied by hand. The runs the commands make go to out/ (removed first, so a rerun starts afresh).
A command that reads a file absent here (the real logs of other people's runs beside the checkout,
../shared/data/real_logs) keeps its output as it is, and says so.

    python scripts/readme.py            rewrite README.md
    python scripts/readme.py --check    exit 1 with a diff where README.md differs from what the commands print
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BLOCK = re.compile(r"^```console\n(.*?)^```$", re.S | re.M)
RUNS = ROOT / "out" / "quickstart"  # where the README's train command writes (removed before a rerun)
TIMEOUT_S = 300
# as scripts/quickstart.sh runs: one thread, so the training run's floating-point sums, and so its numbers, do not
# depend on the machine's cores or load
THREADS = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def shown(text: str) -> list[str]:
    """Every `$ command` of the README's console blocks with the output shown under it, in order."""
    return [chunk for block in BLOCK.findall(text) for chunk in _chunks(block) if chunk.startswith("$ ")]


def commands(text: str) -> list[str]:
    """Every `$ command` of the README's console blocks, in order."""
    return [chunk.partition("\n")[0][2:] for chunk in shown(text)]


def _chunks(body: str) -> list[str]:
    """A console block cut before each `$ command` line (a first piece without one: text before it)."""
    return re.split(r"^(?=\$ )", body, flags=re.M)


def _absent_input(command: str) -> str | None:
    """The first path the command names under ../ that is not there (a real log not beside this checkout)."""
    for word in shlex.split(command):
        if word.startswith("../") and not (ROOT / word).exists():
            return word
    return None


def _run(command: str) -> str:
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}", **THREADS)
    proc = subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT_S)
    if proc.returncode != 0:
        raise SystemExit(f"readme: `{command}` exited {proc.returncode}:\n{proc.stderr.strip()}")
    return proc.stdout.rstrip("\n")


def _block(body: str, skipped: list[str]) -> str:
    """The console block with each command's output regenerated."""
    out: list[str] = []
    for chunk in _chunks(body):
        if not chunk.startswith("$ "):  # text before the block's first command
            if chunk.strip():
                out.append(chunk.rstrip("\n"))
            continue
        command = chunk.partition("\n")[0]
        missing = _absent_input(command[2:])
        if missing is not None:
            skipped.append(f"{command[2:]} (no {missing})")
            out.append(chunk.rstrip("\n"))
            continue
        output = _run(command[2:])
        out.append(command + ("\n" + output if output else ""))
    return "\n".join(out) + "\n"


def regenerate(text: str) -> tuple[str, list[str]]:
    """(the README with every command's output as the command prints it now, the commands skipped)."""
    shutil.rmtree(RUNS, ignore_errors=True)
    skipped: list[str] = []
    return BLOCK.sub(lambda m: "```console\n" + _block(m.group(1), skipped) + "```", text), skipped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 with a diff where it differs")
    args = parser.parse_args(argv)
    text = README.read_text(encoding="utf-8")
    new, skipped = regenerate(text)
    for command in skipped:
        print(f"readme: kept the shown output of `{command}`", file=sys.stderr)
    if args.check:
        if new != text:
            sys.stdout.writelines(difflib.unified_diff(text.splitlines(True), new.splitlines(True),
                                                       "README.md", "regenerated"))
            return 1
        return 0
    README.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
