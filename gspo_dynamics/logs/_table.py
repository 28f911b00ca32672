"""Rows stored by key tuple as columns: the rows of a large JSON log in a fraction of the memory of their dicts.

A log's rows `(step, {key: value})` are mostly alike: a trainer logs the same keys on every row, as floats. A
`RowTable` holds the rows of each key tuple (a group, `_groups`) as one column per key, each column

    float64 (m,)   where every value of it is a float
    int64 (m,)     where every value is an int within int64's range
    list (m,)      otherwise (strings, None, bools, nested values, mixed types): the values themselves

so 100k rows of 22 floats take 18 MB instead of the ~180 MB of their dicts (a dict of 22 keys is ~1.2 kB, each
float object 24 bytes). float64 and int64 hold a float and an int of their range exactly, so a row read back from
the table (`table[i]`, iteration) equals the dict it was built from, key order included: the table is a sequence
of rows, and code that reads rows one at a time reads it as it reads a list. Work on whole columns (`take`,
`without`, `column`, `float_columns`) goes through the columns; `row_steps`, `with_steps`, `take_rows`,
`attach_steps` and `column_values` do it for a list of rows or a table alike. A table is built a piece of the file
at a time (`TableBuilder`), so the dicts of one piece are alive at once, never those of the whole file.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from operator import itemgetter

import numpy as np

from gspo_dynamics.logs._groups import groups_of

Column = np.ndarray | list


def _column(values: Sequence) -> Column:
    """The values as a float64 or int64 array where they are all floats, or all ints within int64, else a list."""
    kinds = set(map(type, values))
    try:
        if kinds == {float}:
            return np.fromiter(values, np.float64, len(values))
        if kinds == {int}:
            return np.fromiter(values, np.int64, len(values))
    except OverflowError:  # an int beyond int64
        pass
    return list(values)


def _values(column: Column) -> list:
    """A column's values as Python objects (the values it was built from)."""
    return column.tolist() if isinstance(column, np.ndarray) else column


def _join(parts: list[Column]) -> Column:
    """Columns one after another as one column, of the kind its values make (`_column`)."""
    if len(parts) == 1:
        return parts[0]
    if all(isinstance(p, np.ndarray) for p in parts) and len({p.dtype for p in parts}) == 1:
        return np.concatenate(parts)
    return _column(list(itertools.chain.from_iterable(map(_values, parts))))


def _merge(blocks: list[tuple[np.ndarray, list[Column]]]) -> tuple[np.ndarray, list[Column]]:
    """Blocks of one key tuple (row indices, columns) as one, in row order."""
    members = np.concatenate([m for m, _ in blocks]) if len(blocks) > 1 else blocks[0][0]
    columns = [_join(list(parts)) for parts in zip(*(c for _, c in blocks))]
    if len(blocks) > 1 and bool(np.any(members[1:] < members[:-1])):
        order = np.argsort(members, kind="stable")
        members = members[order]
        columns = [c[order] if isinstance(c, np.ndarray) else list(map(c.__getitem__, order.tolist()))
                   for c in columns]
    return members, columns


class RowTable(Sequence):
    """Rows `(step, record)` stored by key tuple: `blocks` maps each key tuple to (the ascending indices of its rows
    (m,), one column (m,) per key); `steps` int64 (n,), or None before the reader chose the step column (rows then
    read `(None, record)`)."""

    __hash__ = None  # equal to a list of rows (mutable), so not hashable

    def __init__(self, blocks: dict[tuple, tuple[np.ndarray, list[Column]]], n: int, steps: np.ndarray | None = None):
        self.blocks = blocks
        self.n = n
        self.steps = steps
        self._where: tuple[list, np.ndarray, np.ndarray] | None = None  # (blocks, block of each row, slot in it)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return list(self)[i]
        i = range(self.n)[i]  # IndexError as a list's
        if self._where is None:
            block, slot = np.empty(self.n, np.int64), np.empty(self.n, np.int64)  # (n,) each
            for b, (members, _) in enumerate(self.blocks.values()):
                block[members], slot[members] = b, np.arange(members.size)
            self._where = list(self.blocks.items()), block, slot
        items, block, slot = self._where
        keys, (_, columns) = items[block[i]]
        j = int(slot[i])
        record = {k: (c[j].item() if isinstance(c, np.ndarray) else c[j]) for k, c in zip(keys, columns)}
        return (None if self.steps is None else int(self.steps[i])), record

    def records(self) -> list[dict]:
        """Every row's record, in row order (the dicts of the whole table at once: for the rare paths)."""
        out: list = [None] * self.n
        for keys, (members, columns) in self.blocks.items():
            values = zip(*map(_values, columns)) if keys else itertools.repeat((), members.size)
            for i, row in zip(members.tolist(), values):
                out[i] = dict(zip(keys, row))
        return out

    def __iter__(self):
        steps = itertools.repeat(None) if self.steps is None else self.steps.tolist()
        return zip(steps, self.records())

    def __eq__(self, other) -> bool:
        if not isinstance(other, (RowTable, list)):
            return NotImplemented
        return len(self) == len(other) and list(self) == list(other)

    @property
    def groups(self) -> dict[tuple, list[int]]:
        """`_groups.key_groups` of the rows: {key tuple: row indices}, in order of each tuple's first row."""
        ordered = sorted(self.blocks.items(), key=lambda item: int(item[1][0][0]) if item[1][0].size else -1)
        return {keys: members.tolist() for keys, (members, _) in ordered}

    def take(self, kept: np.ndarray) -> RowTable:
        """The rows where `kept` (bool (n,)) is True, renumbered."""
        if kept.all():
            return self
        position = np.cumsum(kept) - 1  # (n,) each kept row's index among the kept
        blocks = {}
        for keys, (members, columns) in self.blocks.items():
            inside = kept[members]
            if inside.any():
                flags = inside.tolist()
                blocks[keys] = (position[members[inside]], [c[inside] if isinstance(c, np.ndarray)
                                                            else list(itertools.compress(c, flags)) for c in columns])
        return RowTable(blocks, int(kept.sum()), None if self.steps is None else self.steps[kept])

    def without(self, popped: set[str]) -> RowTable:
        """The rows with the keys `popped` left out (key tuples that then agree merged)."""
        merged: dict[tuple, list] = {}
        for keys, (members, columns) in self.blocks.items():
            kept = [(k, c) for k, c in zip(keys, columns) if k not in popped]
            merged.setdefault(tuple(map(itemgetter(0), kept)), []).append((members, [c for _, c in kept]))
        return RowTable({keys: _merge(blocks) for keys, blocks in merged.items()}, self.n, self.steps)

    def with_steps(self, steps) -> RowTable:
        """The rows at the given steps (n,)."""
        return RowTable(self.blocks, self.n, np.asarray(steps, dtype=np.int64))

    def column(self, key: str) -> list:
        """Each row's value of `key`, None where the row lacks it (as `dict.get`)."""
        out: list = [None] * self.n
        for keys, (members, columns) in self.blocks.items():
            if key in keys:
                for i, value in zip(members.tolist(), _values(columns[keys.index(key)])):
                    out[i] = value
        return out

    def values(self, keys: tuple, key: str) -> list:
        """The values of `key` in the rows of key tuple `keys`, in row order."""
        return _values(self.blocks[keys][1][keys.index(key)])

    def float_columns(self, keys: tuple) -> list[np.ndarray | None]:
        """Per key of the rows of key tuple `keys`: its values as float64 (m,) (`float(value)` of each) where it is a
        float or int column, else None (values to read one by one)."""
        return [c.astype(np.float64, copy=False) if isinstance(c, np.ndarray) else None for c in self.blocks[keys][1]]


class TableBuilder:
    """A RowTable built a piece of rows at a time: `add` each piece's records in file order, then `table()`."""

    def __init__(self) -> None:
        self.parts: dict[tuple, list[tuple[np.ndarray, list[Column]]]] = {}
        self.n = 0

    def add(self, records: list[dict], groups: dict[tuple, list[int]] | None = None) -> None:
        """Append the records (flat dicts); `groups`: their `groups_of` key tuples where the caller has them."""
        groups = groups_of(map(tuple, records)) if groups is None else groups
        for keys, members in groups.items():
            rows = records if len(members) == len(records) else list(map(records.__getitem__, members))
            columns = [_column(values) for values in zip(*map(dict.values, rows))] if keys else []
            self.parts.setdefault(keys, []).append((np.asarray(members, dtype=np.int64) + self.n, columns))
        self.n += len(records)

    def table(self) -> RowTable:
        """The rows added, as one table (the pieces' columns joined)."""
        blocks = {keys: _merge(self.parts.pop(keys)) for keys in list(self.parts)}
        return RowTable(blocks, self.n)


def row_steps(rows) -> np.ndarray:
    """int64 (n,): the step of each row of a list of rows or a RowTable."""
    if isinstance(rows, RowTable):
        return rows.steps
    return np.fromiter(map(itemgetter(0), rows), np.int64, len(rows))


def with_steps(rows, steps: np.ndarray):
    """The rows (a list or a RowTable) at the given steps (n,)."""
    if isinstance(rows, RowTable):
        return rows.with_steps(steps)
    return [(step, record) for step, (_, record) in zip(steps.tolist(), rows)]


def take_rows(rows, index):
    """rows[i] for each i of `index` (ascending indices or a bool mask (n,)), of a list of rows or a RowTable."""
    index = np.asarray(index)
    if isinstance(rows, RowTable):
        if index.dtype != np.bool_:
            mask = np.zeros(len(rows), dtype=bool)
            mask[index] = True
            index = mask
        return rows.take(index)
    if index.dtype == np.bool_:
        if index.all():
            return list(rows)
        index = np.flatnonzero(index)
    return [rows[i] for i in index.tolist()]


def attach_steps(records, steps: list):
    """The rows (step, record) of `records` (a list or a `RowTable`) at `steps`, those whose step is None left out."""
    if isinstance(records, RowTable):
        if None in steps:
            records = records.take(np.fromiter((step is not None for step in steps), bool, len(steps)))
            steps = [step for step in steps if step is not None]
        return records.with_steps(steps)
    return [(step, record) for step, record in zip(steps, records) if step is not None]


def column_values(objects, key: str) -> list:
    """Each record's value of `key` (None where it has none), of a list of records or a `RowTable`."""
    if isinstance(objects, RowTable):
        return objects.column(key)
    try:
        return list(map(itemgetter(key), objects))  # C speed where every row holds it
    except KeyError:
        return [o.get(key) for o in objects]
