"""The vectorised `build_series` against its row-by-row reference, on fuzzed rows (loop vs vectorised): the values
of one step averaged (micro-batch rows), the logged non-finite values marked.

Equality: both store the same float64 numbers (an average of several values to rounding) (numpy's int/bool/str -> float64 conversion of a
plain-number matrix rounds like Python's float()); warnings must match word for word.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gspo_dynamics.logs._names import canonical_name
from gspo_dynamics.logs._runlog import build_series, to_float

KEYS = ["reward", "train/reward", "kl", "eval_reward", "rewards/fmt/mean", "entropy", "odd key"]
VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.booleans(),
    st.none(),
    st.sampled_from(["0.5", "nan", "np.float64(2.5)", "abc", ""]),
    st.lists(st.integers(), max_size=2),
)
ROW = st.tuples(st.integers(min_value=0, max_value=30), st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=5))
# rows that repeat one key set with plain numbers: the matrix path, with duplicates and unsorted steps
PLAIN_ROW = st.tuples(st.integers(min_value=0, max_value=30),
                      st.fixed_dictionaries({"reward": st.floats(allow_nan=True), "kl": st.integers(-5, 5)}))


def build_series_reference(rows, rename):
    """The row-by-row version of `build_series` (the oracle): same inputs, same outputs."""
    warnings: list[str] = []
    columns: dict[str, dict[int, list[float]]] = {}
    bad_keys: dict[str, int] = {}
    duplicates = 0
    unsorted = False
    previous = -1
    names: dict[str, str] = {}  # raw key -> final name, memoised: rows repeat their keys
    for step, record in rows:
        if step < previous:
            unsorted = True
        previous = max(previous, step)
        seen: set[str] = set()
        for raw_key, raw_value in record.items():
            name = names.get(raw_key)
            if name is None:
                name = names[raw_key] = rename(raw_key)
            if name in seen:
                # Two spellings of one metric in one row (`reward` and `train/reward`): the
                # first takes the canonical name, the other keeps its raw name.
                name = raw_key
            seen.add(name)
            value = to_float(raw_value)
            if value is None:
                if raw_value is not None:
                    bad_keys[name] = bad_keys.get(name, 0) + 1
                continue
            column = columns.setdefault(name, {})
            logged = column.setdefault(step, [])
            if logged and not (logged[-1] == value or (math.isnan(logged[-1]) and math.isnan(value))):
                duplicates += 1
            logged.append(value)
    if unsorted:
        warnings.append("the steps were not in increasing order; they were sorted")
    if duplicates:
        warnings.append(
            f"{duplicates} value(s) were logged again at the same step with a different value (micro-batch rows); "
            "the values of each step were averaged"
        )
    if bad_keys:
        listed = ", ".join(f"{k!r} ({n})" for k, n in sorted(bad_keys.items())[:8])
        more = "" if len(bad_keys) <= 8 else f" and {len(bad_keys) - 8} more"
        warnings.append(f"non-numeric values were ignored in {listed}{more}")
    all_steps = sorted({step for column in columns.values() for step in column})
    steps = np.asarray(all_steps, dtype=np.int64)
    series: dict[str, np.ndarray] = {}
    masks: dict[str, np.ndarray] = {}
    n_inf = 0
    for name, column in columns.items():
        values = np.full(steps.shape, np.nan)
        mask = np.zeros(steps.shape, dtype=bool)
        for step, logged in column.items():
            total = 0.0
            for value in logged:  # in row order, as the vectorised sum adds them
                total += value / len(logged)
            i = int(np.searchsorted(steps, step))
            values[i] = total
            mask[i] = not math.isfinite(values[i])
            n_inf += sum(math.isinf(v) for v in logged)
        values.flags.writeable = False
        series[name] = values
        masks[name] = mask
    if n_inf:
        warnings.append(f"{n_inf} infinite value(s) are in the log (kept as +-inf)")
    steps.flags.writeable = False
    return steps, series, warnings, masks


def _values(rows, name: str) -> list[float]:
    """Every numeric value the rows log under `name` (its keys' canonical name)."""
    found = (to_float(v) for _, row in rows for k, v in row.items() if canonical_name(k) == name)
    return [v for v in found if v is not None]


def _same(rows):
    fast = build_series(rows, canonical_name)
    slow = build_series_reference(rows, canonical_name)
    np.testing.assert_array_equal(fast[0], slow[0])
    assert fast[0].dtype == slow[0].dtype == np.int64
    assert set(fast[1]) == set(slow[1])
    for name in slow[1]:
        # one value per step: the same float64 exactly; an average: to rounding (numpy's sum may add in another order),
        # which is relative to the values summed, not to their mean: +-1e21 cancelling to 6e16 differs by ~1e5
        scale = max([abs(v) for v in _values(rows, name) if math.isfinite(v)], default=0.0)
        np.testing.assert_allclose(fast[1][name], slow[1][name], rtol=1e-12, atol=1e-12 * max(scale, 1.0), err_msg=name)
        assert not fast[1][name].flags.writeable
        np.testing.assert_array_equal(fast[3][name], slow[3][name], err_msg=name)
    assert fast[2] == slow[2]


@settings(max_examples=200, deadline=None)
@given(st.lists(ROW, max_size=25))
def test_matches_the_reference_on_arbitrary_rows(rows):
    _same(rows)


@settings(max_examples=100, deadline=None)
@given(st.lists(PLAIN_ROW, max_size=40), st.lists(ROW, max_size=5))
def test_matches_the_reference_on_repeated_key_sets(plain, mixed):
    _same(plain + mixed + plain[:3])


def test_a_name_twice_in_one_row_and_empty_input():
    _same([(1, {"train/reward": 1.0, "reward": 2.0}), (1, {"reward": 3.0})])
    _same([])
    _same([(1, {}), (2, {})])
