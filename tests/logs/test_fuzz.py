"""Fuzzing every reader: malformed input never raises anything but ConfigError, and a
best-effort read of damaged input says what it skipped in `warnings`."""

from __future__ import annotations

import json
import os
import struct

import numpy as np
import pytest
from _log_fixtures import event_file, trainer_state
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from gspo_dynamics import ConfigError
from gspo_dynamics.logs import FORMATS, RunLog, read_log
from gspo_dynamics.real_logs import real_log_files

# GSPO_FUZZ_EXAMPLES=5000 for a long hunt; the default keeps tests/logs well under 30 s.
EXAMPLES = int(os.environ.get("GSPO_FUZZ_EXAMPLES", "60"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
KEYS = ["reward", "reward_std", "kl", "loss", "entropy", "train/reward", "eval_reward",
        "rewards/f/mean", "critic/score/mean", "actor/ppo_kl", "epoch", "x y", ""]

steps = st.one_of(
    st.integers(-5, 50), st.integers(2**53, 2**70), st.floats(allow_nan=True),
    st.text(max_size=5), st.none(), st.booleans(),
)
values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.floats(-1e308, 1e308),
    st.integers(-(2**80), 2**80), st.text(max_size=8), st.none(), st.booleans(),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.sampled_from(KEYS), st.floats(), max_size=2),
)
rows = st.lists(
    st.fixed_dictionaries({"step": steps}, optional={"reward": values}).flatmap(
        lambda base: st.dictionaries(st.sampled_from(KEYS), values, max_size=5).map(
            lambda extra: {**base, **extra}
        )
    ),
    max_size=15,
)


def _check(content, format="auto", damaged=False):
    """Read; only ConfigError may escape; a successful read is a well-formed RunLog."""
    try:
        log = read_log(content, format=format)
    except ConfigError as error:
        assert str(error) and "\n" not in str(error)
        return None
    assert isinstance(log, RunLog)
    assert log.steps.dtype == np.int64 and np.all(np.diff(log.steps) > 0)
    assert all(v.shape == log.steps.shape and v.dtype == np.float64 for v in log.series.values())
    assert "reward" in log.series
    if damaged:
        assert log.warnings, "a best-effort read of damaged input must carry warnings"
    return log


def _serialise(fmt: str, records: list[dict]) -> str | bytes:
    if fmt == "trl_state":
        return trainer_state(records)
    if fmt == "jsonl":
        return "\n".join(json.dumps(r) for r in records)
    if fmt == "verl_jsonl":
        return "\n".join(json.dumps({"step": r.get("step"), "data": r}) for r in records)
    if fmt == "hf_console":
        printed = (repr({k: str(v) for k, v in r.items()}) for r in records)
        return "\n".join(["noise line", *printed])
    if fmt == "verl_console":
        return "\n".join(
            f"step:{r.get('step')} - " + " - ".join(f"{k}:{v}" for k, v in r.items() if k != "step")
            for r in records
        )
    if fmt == "csv":
        names = sorted({k for r in records for k in r}, key=str)
        lines = [",".join(names)] + [",".join(str(r.get(k, "")) for k in names) for r in records]
        return "\n".join(lines)
    if fmt == "tensorboard":
        scalars = []
        for r in records:
            step = r.get("step")
            if isinstance(step, int) and not isinstance(step, bool) and -(2**63) <= step < 2**63:
                scalars += [(step, k, v) for k, v in r.items()
                            if isinstance(v, float) and k != "step"]
        return event_file(scalars, as_tensor=True)  # float64: huge values survive
    raise AssertionError(fmt)


WRITERS = ["trl_state", "jsonl", "verl_jsonl", "hf_console", "verl_console", "csv", "tensorboard"]


@FUZZ
@given(fmt=st.sampled_from(WRITERS), records=rows)
def test_wrong_types_nan_inf_huge_and_unordered_steps(fmt, records):
    _check(_serialise(fmt, records))


@FUZZ
@given(fmt=st.sampled_from(WRITERS), records=rows, cut=st.floats(0, 1))
def test_truncated_input(fmt, records, cut):
    content = _serialise(fmt, records)
    _check(content[: int(len(content) * cut)])


@FUZZ
@given(data=st.binary(max_size=300), fmt=st.sampled_from(("auto", *FORMATS)))
def test_binary_garbage(data, fmt):
    _check(data, fmt)


@FUZZ
@given(text=st.text(max_size=300), fmt=st.sampled_from(("auto", *FORMATS)))
def test_random_text(text, fmt):
    _check(text, fmt)


# other people's logs, beside the checkout (empty when absent: the two tests below are then skipped)
REAL_BYTES = {p.name: p.read_bytes() for p in real_log_files()}


@pytest.mark.real_logs
@settings(max_examples=EXAMPLES, deadline=None)
@given(name=st.sampled_from(sorted(REAL_BYTES)), start=st.floats(0, 1), size=st.integers(1, 64),
       junk=st.binary(min_size=1, max_size=64))
def test_damaged_real_logs(name, start, size, junk):
    data = REAL_BYTES[name]
    at = int(start * (len(data) - size))
    _check(data[:at] + junk + data[at + size :])


def _record_ends(data: bytes) -> set[int]:
    """Byte offsets at which a TFRecord ends (cutting there leaves a valid, shorter file)."""
    ends, pos = set(), 0
    while pos + 8 <= len(data):
        pos += 16 + struct.unpack("<Q", data[pos : pos + 8])[0]
        ends.add(pos)
    return ends


@pytest.mark.real_logs
@settings(max_examples=EXAMPLES, deadline=None)
@given(name=st.sampled_from(sorted(REAL_BYTES)), cut=st.floats(0.05, 0.95))
def test_truncated_real_logs_are_read_with_warnings(name, cut):
    data = REAL_BYTES[name]
    at = int(len(data) * cut)
    content = data[:at]
    # Cut exactly at a line end (JSONL) or a record end (TensorBoard), a log is valid and shorter.
    assume(not content.endswith(b"\n") and at not in _record_ends(data))
    # A console log's torn last line is just more console noise: no damage to report.
    damaged = not name.endswith(".log") and "chandlerzuo" not in name
    _check(content, damaged=damaged)


def _settled_reference(records: list[tuple[int, float]]) -> dict[int, list[float]]:
    """The last run's values per step, row by row: a step at or below the first, after the counter went past it (in
    a log of micro-batches: at least half of the rows at the step of the row before; else after any row), starts a
    new run; a step below the one before drops the kept rows at that step or later (a resumed run). At least 8 rows
    of distinct steps, a quarter of them below the one before: one run, in step order."""
    steps = [s for s, _ in records]
    backs = sum(b < a for a, b in zip(steps, steps[1:]))
    if len(steps) >= 8 and len(set(steps)) == len(steps) and backs >= 0.25 * (len(steps) - 1):
        return {s: [v] for s, v in sorted(records)}  # distinct steps out of order: a table in another order (`_order`)
    first, past, kept = records[0][0], False, []
    repeats = sum(a[0] == b[0] for a, b in zip(records, records[1:]))
    micro = len(records) > 1 and repeats >= 0.5 * (len(records) - 1)
    for i, (step, value) in enumerate(records):
        if i and step <= first and (past or not micro):
            kept, past = [], False  # a new run
        past = past or step > first
        kept = [(s, v) for s, v in kept if s < step] if kept and step < kept[-1][0] else kept
        kept.append((step, value))
    out: dict[int, list[float]] = {}
    for step, value in kept:
        out.setdefault(step, []).append(value)
    return out


@FUZZ
@given(records=st.lists(st.tuples(st.integers(0, 20), st.floats(-1, 1)), min_size=1, max_size=30))
def test_runs_resumed_steps_and_micro_batch_rows_are_settled(records):
    text = "\n".join(json.dumps({"step": s, "reward": r}) for s, r in records)
    log = _check(text)
    values = _settled_reference(records)
    np.testing.assert_array_equal(log.steps, sorted(values))
    np.testing.assert_allclose(log["reward"], [sum(v / len(vs) for v in vs) for vs in (values[s] for s in sorted(values))],
                               rtol=1e-12, atol=1e-15)
    conflicting = any(len(set(vs)) > 1 for vs in values.values())
    assert any("averaged" in w for w in log.warnings) == conflicting
    assert not any("sorted" in w for w in log.warnings)  # the kept rows' steps never go down


def test_empty_files(tmp_path):
    for name in ("trainer_state.json", "m.jsonl", "m.csv", "events.out.tfevents.1"):
        (tmp_path / name).write_bytes(b"")
        _check(tmp_path / name)
