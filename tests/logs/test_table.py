"""`_table.RowTable`: rows kept as columns read back as the dicts they were built from, and its column operations
give what the same operations on a list of rows give (fuzzed rows of mixed value types, built in pieces)."""

from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gspo_dynamics.logs._groups import key_groups
from gspo_dynamics.logs._runlog import to_float
from gspo_dynamics.logs._table import RowTable, TableBuilder, column_values, take_rows

FUZZ = settings(max_examples=int(os.environ.get("GSPO_FUZZ_EXAMPLES", "150")), deadline=None,
                suppress_health_check=[HealthCheck.too_slow])
KEYS = ["step", "reward", "loss", "kl", "eval_reward", "epoch"]
VALUES = st.one_of(st.floats(allow_nan=False), st.integers(-3, 40), st.integers(2**63, 2**70), st.none(),
                   st.booleans(), st.text(max_size=2), st.lists(st.integers(), max_size=2))
# mostly rows of a trainer (the same keys, floats), now and then anything
PLAIN = st.builds(lambda s, r: {"step": s, "reward": r, "loss": 0.5}, st.integers(0, 9), st.floats(0, 1))
ROWS = st.lists(st.one_of(PLAIN, PLAIN, st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=4)), max_size=14)


def _table(rows: list[dict], cuts: list[int]) -> RowTable:
    builder = TableBuilder()
    bounds = [0, *sorted(c % (len(rows) + 1) for c in cuts), len(rows)]
    for start, end in zip(bounds, bounds[1:]):
        builder.add([dict(r) for r in rows[start:end]])
    return builder.table()


def _same(a, b) -> bool:
    """Equal values of the same types (1 == 1.0 == True is not enough: a column must give back what it was built
    from)."""
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and (a == b or (a != a and b != b))


@FUZZ
@given(rows=ROWS, cuts=st.lists(st.integers(0, 20), max_size=3))
def test_a_table_reads_back_the_rows_it_was_built_from_in_any_pieces(rows, cuts):
    table = _table(rows, cuts)
    assert len(table) == len(rows) and table.groups == key_groups([(None, r) for r in rows])
    assert all(_same(a, b) for a, b in zip(table.records(), rows))
    assert all(_same(table[i][1], rows[i]) for i in range(-len(rows), len(rows)))
    for key in KEYS:
        assert column_values(table, key) == column_values(rows, key)


@FUZZ
@given(rows=ROWS, cuts=st.lists(st.integers(0, 20), max_size=3), data=st.data())
def test_take_without_and_float_columns_agree_with_the_rows(rows, cuts, data):
    table = _table(rows, cuts).with_steps(np.arange(len(rows)))
    kept = np.array(data.draw(st.lists(st.booleans(), min_size=len(rows), max_size=len(rows))), dtype=bool)
    listed = [(i, dict(r)) for i, r in enumerate(rows)]
    assert take_rows(table, kept) == take_rows(listed, kept)
    popped = set(data.draw(st.lists(st.sampled_from(KEYS), max_size=3)))
    without = [(i, {k: v for k, v in r.items() if k not in popped}) for i, r in listed]
    assert table.without(popped) == without
    for keys, members in key_groups(without).items():
        for key, column in zip(keys, table.without(popped).float_columns(keys)):
            if column is not None:  # a column of floats or ints: float() of each value
                assert column.tolist() == [to_float(without[i][1][key]) for i in members]
