"""The one integer check of the package: counts (refresh interval, group size, steps, lengths)."""

from __future__ import annotations

import numbers

from gspo_dynamics._errors import ConfigError


def positive_int(name: str, value, minimum: int = 1, *, hint: str = "") -> int:
    """`value` as an int >= minimum (a Python or numpy integer, not a bool), else ConfigError
    naming it: "{name} must be an integer >= {minimum}{hint}, got {value!r}"."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}{hint}, got {value!r}")
    return int(value)
