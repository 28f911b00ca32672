"""No function in the package (or a paper_repro script) over MAX_LINES lines: a longer one is split
into named steps. A compiled kernel, kept whole so it compiles to one function, says so in its
docstring ("compiled kernel"). Read from the syntax tree; a function's length runs from its `def`
to its last line."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 80
FOLDERS = ("gspo_dynamics", "paper_repro")
# (file, function) allowed over the limit, each with its reason (none left: every long function is split)
KNOWN_LONG: set[tuple[str, str]] = set()
SOURCES = sorted(p for folder in FOLDERS for p in (ROOT / folder).rglob("*.py"))


def _long_functions(path: Path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            if length > MAX_LINES and "compiled kernel" not in (ast.get_docstring(node) or ""):
                yield node.name, length


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_function_is_too_long_to_read_at_once(path):
    relative = str(path.relative_to(ROOT))
    long = [f"{name} ({n} lines)" for name, n in _long_functions(path) if (relative, name) not in KNOWN_LONG]
    assert not long, f"{relative}: over {MAX_LINES} lines, split into named steps: {', '.join(long)}"
