"""The shell's reading of a launch script's text, for `_launch_script`: its logical lines (comments dropped, a
backslash-newline joined, an array or a quoted string that spans lines joined), its commands (split at `;` outside
quotes), the expansion of its variables, arrays and `$(( ))` integer arithmetic, and its words (quotes removed), as
`_launch_script`'s module docstring states them."""

from __future__ import annotations

import ast
import re
import shlex

_ELEMENTS = re.compile(r'"?\$\{([A-Za-z_]\w*)\[[@*]\]\}"?')
_ARITHMETIC = re.compile(r"\$\(\(((?:[^()]|\([^()]*\))*)\)\)")  # $(( ... )), one level of parentheses inside
_OPERATORS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
              ast.Div: lambda a, b: _truncated(a, b), ast.FloorDiv: lambda a, b: _truncated(a, b),
              ast.Mod: lambda a, b: a - b * _truncated(a, b)}  # the shell's / and % truncate toward 0
_VARIABLE = re.compile(r"\$\{([A-Za-z_]\w*)(?:(:?)-((?:[^{}]|\$\{[^{}]*\})*))?\}|\$([A-Za-z_]\w*)")  # a default may


def logical_lines(text: str) -> list[str]:
    """The script's lines as the shell reads its commands: comments dropped (from a `#` that starts a word), a
    backslash-newline joined, and a line that opens an array `NAME=(` or a quoted string it does not close
    joined with the lines up to the one that does (newlines as spaces); `overrides_of` splits each at `;`."""
    physical = [re.sub(r"(^|\s)#.*$", "", line) for line in re.sub(r"\\\r?\n", " ", text).splitlines()]
    lines: list[str] = []
    i = 0
    while i < len(physical):
        line = physical[i]
        while i + 1 < len(physical) and _open(line):
            i += 1
            line += " " + physical[i]
        lines.append(line)
        i += 1
    return lines


def commands(line: str) -> list[str]:
    """`line` split at each `;` outside quotes (the shell's command separator: `a=1; b=2`)."""
    parts, start, quote = [], 0, None
    for i, ch in enumerate(line):
        if quote is None and ch in "\"'":
            quote = ch
        elif ch == quote:
            quote = None
        elif ch == ";" and quote is None:
            parts.append(line[start:i])
            start = i + 1
    return parts + [line[start:]]


def _open(line: str) -> bool:
    """Whether `line` leaves an array `NAME=(` or a quote open."""
    if re.match(r"^\s*(?:export\s+)?[A-Za-z_]\w*=\(", line) and ")" not in line.partition("=(")[2]:
        return True
    return _unclosed_quote(line)


def _unclosed_quote(line: str) -> bool:
    """Whether a quote opened in `line` (double, or single: `--runtime-env-json='{` over several lines) is not closed
    there."""
    quote = None
    for ch in line:
        if quote is None and ch in "\"'":
            quote = ch
        elif ch == quote:
            quote = None
    return quote is not None


def expanded(text: str, values: dict[str, str], arrays: dict[str, list[str]] | None = None) -> str:
    """`text` with the arrays and variables the script set replaced and its integer arithmetic done (module
    docstring); the others as written."""
    arrays = arrays or {}

    def elements(match: re.Match) -> str:
        name = match.group(1)
        return " ".join(shlex.quote(w) for w in arrays[name]) if name in arrays else match.group(0)

    def value(match: re.Match) -> str:
        name, colon, default = match.group(1) or match.group(4), match.group(2), match.group(3)
        if name in values and not (colon and default is not None and values[name] == ""):  # `:-`: unset or empty
            return values[name]
        return _VARIABLE.sub(value, default) if default is not None else match.group(0)

    return _ARITHMETIC.sub(lambda m: _arithmetic(m, values), _VARIABLE.sub(value, _ELEMENTS.sub(elements, text)))


def _arithmetic(match: re.Match, values: dict[str, str]) -> str:
    """The integer value of `$(( expression ))` (names read as the script's integer variables), or the match as
    written where the expression holds anything else."""
    expression = re.sub(r"[A-Za-z_]\w*", lambda m: values.get(m.group(0), m.group(0)), match.group(1))
    try:
        tree = ast.parse(expression.strip(), mode="eval")
        return str(_integer(tree.body))
    except (SyntaxError, ValueError, ZeroDivisionError, RecursionError):
        return match.group(0)


def _integer(node: ast.AST) -> int:
    """An integer expression's value: int literals, unary -, and + - * / % (the shell's / truncates toward 0)."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _integer(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        a, b = _integer(node.left), _integer(node.right)
        if isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod)) and b == 0:
            raise ZeroDivisionError
        return _OPERATORS[type(node.op)](a, b)
    raise ValueError("not an integer expression")


def words(text: str) -> list[str]:
    """`text` split as the shell splits it (quotes removed); a line it cannot split (an open quote) gives none."""
    try:
        return shlex.split(text, posix=True)
    except ValueError:
        return []


def _truncated(a: int, b: int) -> int:
    """a / b truncated toward 0, as the shell's integer division."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q
