"""The README: short, its links alive, its quick start the commands it shows, and every output it shows what
the command prints now (`scripts/readme.py --check` runs them all)."""

from __future__ import annotations

import ast
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from gspo_dynamics.integrations.trl import DiagnosticsCallback

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
MAX_LINES = 200


@pytest.fixture(scope="module")
def readme(load_script):
    """scripts/readme.py, which reads the README's console blocks and regenerates them."""
    return load_script("scripts", "readme")


def _quickstart_commands() -> list[str]:
    """The `run ...` commands of scripts/quickstart.sh, continuation lines joined, its variables as the README
    spells the paths."""
    text = (ROOT / "scripts" / "quickstart.sh").read_text().replace("\\\n", " ")
    llama = re.search(r'^llama="\$real_logs/(.*)"$', text, flags=re.M).group(1)
    found = re.findall(r"^\s*run (gspo-dynamics .*)$", text, flags=re.M)
    return [" ".join(shlex.split(c.replace('"$llama"', f"../shared/data/real_logs/{llama}"))) for c in found]


def test_the_readme_is_short():
    assert len(README.splitlines()) <= MAX_LINES


def test_the_quick_start_runs_the_commands_the_readme_shows_first(readme):
    quickstart = _quickstart_commands()
    assert quickstart and readme.commands(README)[:len(quickstart)] == quickstart


def test_every_relative_link_resolves():
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    relative = [link for link in links if not link.startswith(("http://", "https://"))]
    assert relative and all((ROOT / link).exists() for link in relative), [l for l in relative if not (ROOT / l).exists()]


def test_the_python_snippet_uses_names_that_exist():
    (snippet,) = re.findall(r"^```python\n(.*?)^```$", README, flags=re.S | re.M)
    tree = ast.parse(snippet)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = __import__(node.module, fromlist=[a.name for a in node.names])
            assert all(hasattr(module, a.name) for a in node.names)
        if isinstance(node, ast.keyword) and node.arg == "stop_on":  # names the callback accepts
            DiagnosticsCallback(stop_on=ast.literal_eval(node.value))


def test_the_output_shown_is_what_the_commands_print():
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "readme.py"), "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_the_quick_start_prints_at_most_60_lines(readme):
    """Its lines: the set-up's one, each section's header, each command with the output the README shows, a blank."""
    shown = readme.shown(README)
    quickstart = _quickstart_commands()
    headers = len(re.findall(r'^\s*echo "== ', (ROOT / "scripts" / "quickstart.sh").read_text(), flags=re.M))
    lines = 1 + headers + sum(len(chunk.splitlines()) + 1 for chunk in shown[:len(quickstart)])
    assert lines <= 60
