"""Per-prompt pass rates of the starting model, read from an eval's output (`load_pass_rates`).

The formats, told apart by content: a JSON list of numbers (the text starts with '['); otherwise
text with one number per line, or several separated by commas (a CSV column or row). Blank lines
and lines starting with '#' are skipped, and so is a first line holding no number at all (a CSV
header). Every value must be a finite number in [0, 1]; anything else is one ConfigError that names
the file and the line (the item, for JSON). The rates feed `theory.zero_std.zero_std_share_pass_rates`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from gspo_dynamics._errors import ConfigError


def _number(token: str) -> float | None:
    try:
        return float(token)
    except ValueError:
        return None


def _check_rate(value, where: str, path: Path) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise ConfigError(f"the pass-rates file {str(path)!r}, {where}: {value!r} is not a pass rate in [0, 1]")
    return float(value)


def _from_json(text: str, path: Path) -> list[float]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"the pass-rates file {str(path)!r} is not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, list):
        raise ConfigError(f"the pass-rates file {str(path)!r} must hold one JSON list of numbers, got {type(data).__name__}")
    return [_check_rate(value, f"item {i}", path) for i, value in enumerate(data)]


def _from_lines(text: str, path: Path) -> list[float]:
    rates: list[float] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        tokens = [token.strip() for token in line.split(",")]
        values = [_number(token) for token in tokens]
        if not rates and lineno == 1 and all(v is None for v in values):  # a CSV header
            continue
        for token, value in zip(tokens, values):
            _check_rate(token if value is None else value, f"line {lineno}", path)
        rates.extend(values)
    return rates


def load_pass_rates(path: str | Path) -> np.ndarray:
    """The pass rates held by `path` (module docstring for the formats), shape (n_prompts,), float64;
    or one ConfigError naming the file and the bad line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the pass-rates file {str(path)!r}: {exc}") from None
    rates = _from_json(text, path) if text.lstrip().startswith("[") else _from_lines(text, path)
    if not rates:
        raise ConfigError(f"the pass-rates file {str(path)!r} is empty: expected one pass rate in [0, 1] per prompt")
    return np.asarray(rates, dtype=float)
