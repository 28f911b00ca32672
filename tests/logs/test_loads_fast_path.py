"""The optional orjson parse (`_readers._loads`) gives what json gives (integers beyond 64 bits
as their nearest float, as `build_series` reads every value), and the RunLog never depends on it."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gspo_dynamics.logs import _readers

orjson = pytest.importorskip("orjson")

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                      max_leaves=20)


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, int) and not isinstance(b, bool) and abs(b) >= 2**63:
        return a == float(b)  # orjson: an integer beyond 64 bits comes back as its nearest float
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@settings(max_examples=300, deadline=None)
@given(VALUES)
def test_fast_parse_equals_json(value):
    text = json.dumps(value)  # Python's dialect: NaN/Infinity literals and big integers included
    assert _same(_readers._loads(text), json.loads(text))


@pytest.mark.parametrize("text", ['{"a": 1, "a": 2}', '{"loss": NaN}', "[1e400]", "9" * 30, '"\\ud800"', "{", "", "nul"])
def test_edge_cases_match_json_with_and_without_orjson(text, monkeypatch):
    fast = _readers._loads(text)
    monkeypatch.setattr(_readers, "_orjson", None)
    slow = _readers._loads(text)
    assert _same(fast, slow)


def test_read_log_is_the_same_with_and_without_orjson(tmp_path, monkeypatch):
    import numpy as np

    from gspo_dynamics.logs import read_log

    rows = [{"step": s, "reward": 0.1 * s, "loss": float("nan") if s == 3 else 1.0 / s, "tokens": 10**25 + s}
            for s in range(1, 13)]
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + json.dumps({"step": 10**30, "reward": 1}) + "\n")
    fast = read_log(path)
    monkeypatch.setattr(_readers, "_orjson", None)
    slow = read_log(path)
    np.testing.assert_array_equal(fast.steps, slow.steps)
    assert fast.series.keys() == slow.series.keys() and fast.warnings == slow.warnings
    for name in fast.series:
        np.testing.assert_array_equal(fast[name], slow[name])
