"""Rows grouped by their keys: a trainer logs the same keys every row, so what holds for one row of a group holds
for all of it (which keys it has, whether a matrix of its values can be made), and the per-row work is done once.

A group is `{key tuple: row indices}`, in order of each tuple's first row, the indices ascending (`key_groups`).
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter

import numpy as np


def key_groups(rows: Sequence[tuple[int, dict]]) -> dict[tuple, list[int]]:
    """{key tuple: row indices}: rows grouped by their keys (a trainer logs the same keys every row)."""
    return groups_of(map(tuple, map(itemgetter(1), rows)))


class _Numbers(dict):
    """key -> its number, the next one given to a key not seen before (only new keys leave C code)."""

    def __missing__(self, key):
        self[key] = number = len(self)
        return number


def groups_of(keys) -> dict[tuple, list[int]]:
    """{key tuple: the positions holding it, ascending}, in order of first appearance, for an iterable of key tuples:
    the tuples numbered through one dict at C speed (none kept but the distinct ones), the positions of each number
    found by one stable sort."""
    numbers = _Numbers()
    codes = np.fromiter(map(numbers.__getitem__, keys), np.int64)  # (n,)
    if len(numbers) <= 1:
        return {key: list(range(codes.size)) for key in numbers}
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(numbers) + 1))
    return {key: order[bounds[i]:bounds[i + 1]].tolist() for i, key in enumerate(numbers)}


def regroup(groups: dict[tuple, list[int]], kept: np.ndarray, popped: set[str]) -> dict[tuple, list[int]]:
    """`key_groups` of the records' rows from the records' groups: the records `kept` (bool (n,)), renumbered, the
    keys `popped` left out of every one (groups that then hold the same keys merged), in order of first row."""
    position = np.cumsum(kept) - 1  # (n,) each kept record's row
    merged: dict[tuple, list[np.ndarray]] = {}
    for keys, members in groups.items():
        members = np.asarray(members, dtype=np.int64)
        members = members[kept[members]]
        if members.size:
            merged.setdefault(tuple(k for k in keys if k not in popped), []).append(members)
    out = {keys: position[parts[0] if len(parts) == 1 else np.sort(np.concatenate(parts))].tolist()
           for keys, parts in merged.items()}
    return dict(sorted(out.items(), key=lambda item: item[1][0]))
