"""Columns a trainer fills with a placeholder: verl with `actor.calculate_entropy` off, or a loop that never computes
the entropy, writes `entropy: 0.0` on every row. A sampling policy's token entropy is above 0 wherever its completions
differ, and they differ where a group's rewards do (`frac_zero_std` < 1 on some row), so an entropy of exact zeros
from its first row to its last beside such a group is not a measurement: it is set aside (its key unread, a warning
said), and nothing reads it as a collapsed entropy. Without that evidence (a policy that may indeed answer each prompt
the same way every time) the column is read as logged."""

from __future__ import annotations

import dataclasses

import numpy as np

from gspo_dynamics.logs._rows import _Built

NEVER_ZERO = ("entropy",)  # series a trainer cannot measure as exactly 0 on every row


def without_placeholders(built: _Built) -> tuple[_Built, list[str], tuple[str, ...]]:
    """(`built` without each NEVER_ZERO series logged as exact zeros on every row it holds where some group's rewards
    differ, the warnings saying so, the raw keys so set aside)."""
    spread = built.series.get("frac_zero_std")
    if spread is None or not np.any(spread[np.isfinite(spread)] < 1.0):  # no group's completions shown to differ
        return built, [], ()
    gone = [name for name in NEVER_ZERO if name in built.series and _all_zero(built.series[name])]
    if not gone:
        return built, [], ()
    keys = {name: built.columns[name] for name in gone}
    built = dataclasses.replace(
        built, series={n: a for n, a in built.series.items() if n not in gone},
        logged={n: m for n, m in built.logged.items() if n not in gone},
        columns={n: k for n, k in built.columns.items() if n not in gone},
        unread=tuple(sorted(set(built.unread) | set(keys.values()))))
    return built, [f"{name} '{key}' is exactly 0 on every row while groups' rewards differ: a placeholder (the "
                   "trainer did not compute it), not read" for name, key in keys.items()], tuple(keys.values())


def _all_zero(values: np.ndarray) -> bool:
    """Whether every finite value is exactly 0 (and at least two are)."""
    seen = values[np.isfinite(values)]
    return seen.size >= 2 and not np.any(seen)
