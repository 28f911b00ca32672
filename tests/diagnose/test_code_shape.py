"""diagnose's functions stay readable: none longer than MAX_LINES (split long ones into named steps)."""

import ast
from pathlib import Path

import pytest

import gspo_dynamics.diagnose as package

MAX_LINES = 80
FILES = sorted(Path(package.__file__).parent.glob("*.py"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_no_function_is_longer_than_max_lines(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    long = [(n.name, n.end_lineno - n.lineno + 1) for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno - n.lineno + 1 > MAX_LINES]
    assert not long, f"{path.name}: {long} longer than {MAX_LINES} lines"
