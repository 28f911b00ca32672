"""The JSON readers' fast paths give what the plain text path gives: JSONL parsed in chunks equals one parse of
the whole, ASCII bytes read as they are equal their decoded text, and the key groups a reader carries equal
`key_groups` of its rows (fuzzed JSONL and trainer_state.json, small chunks included)."""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np
import pytest
from _log_fixtures import trainer_state
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gspo_dynamics import ConfigError
from gspo_dynamics.logs import _json_chunks, _json_readers, _read, _readers, read_log
from gspo_dynamics.logs._rows import key_groups

FUZZ = settings(max_examples=int(os.environ.get("GSPO_FUZZ_EXAMPLES", "150")), deadline=None, suppress_health_check=[HealthCheck.too_slow])
KEYS = ["step", "reward", "loss", "kl", "eval_reward", "epoch", "train_runtime", "data", "iteration"]
SCALARS = st.one_of(st.integers(-3, 40), st.floats(-2, 2), st.floats(allow_nan=True, allow_infinity=True),
                    st.none(), st.booleans(), st.text(max_size=3))
VALUES = st.one_of(SCALARS, st.dictionaries(st.sampled_from(KEYS), SCALARS, max_size=3))
ROW = st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=6)
# a line of a JSONL file: a row (a plain training row most often), or what a damaged or odd file holds
LINE = st.one_of(
    st.builds(lambda s, r: json.dumps({"step": s, "reward": r, "loss": 0.5}), st.integers(0, 30), st.floats(0, 1)),
    ROW.map(json.dumps),
    st.sampled_from(["", "  ", "\x0c", " \x1c ", "\x0b\x0b", "[1, 2]", "{\"step\": 3", "nul", "{\"a\": 1}{\"b\": 2}",
                     "{\"a\": 1},{\"step\": 9}", "{\"step\": 4, \"reward\": 0.5}\x1e", "{\"steps\": [{\"step\": 1}]}",
                     "{\"step\": 2, \"data\": {\"reward\": null}}", "\t{\"step\": 7, \"reward\": NaN}"]),
)
ENDS = st.sampled_from(["\n", "\r\n", "\r"])


@st.composite
def jsonl_texts(draw) -> str:
    lines = draw(st.lists(LINE, max_size=12))
    ends = draw(st.lists(ENDS, min_size=len(lines), max_size=len(lines)))
    text = "".join(line + end for line, end in zip(lines, ends))
    return text[: len(text) - draw(st.integers(0, 3))]  # the last line cut short now and then


def _one_shot(text):
    """The whole text's lines joined into one parse (what `_one_object_per_line` did before chunks)."""
    return _json_chunks.objects_of_lines(text.splitlines(), _readers._loads) or None


@FUZZ
@given(text=jsonl_texts(), chunk=st.sampled_from([1, 2, 7, 40, 1 << 20]))
def test_chunks_parse_to_what_one_parse_gives(text, chunk):
    expected = _one_shot(text)
    assert _json_readers._one_object_per_line(text, chunk) == expected
    data = text.encode("ascii")
    assert _json_readers._one_object_per_line(data, chunk) == _one_shot(data)


def _same_log(a, b) -> None:
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if f.name in ("series", "logged_non_finite"):
            assert x.keys() == y.keys()
            for k in x:
                np.testing.assert_array_equal(x[k], y[k])
        elif isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y)
        else:
            assert x == y, f.name


def _read_both(content: bytes, format: str, chunk: int, monkeypatch):
    """(read with the fast paths, read from the decoded text), each a RunLog or the ConfigError's message."""
    def read():
        try:
            return read_log(content, format=format)
        except ConfigError as error:
            return str(error)

    with monkeypatch.context() as patch:
        patch.setattr(_json_chunks, "JSONL_CHUNK", chunk)
        patch.setattr(_json_chunks, "DOCUMENT_CHUNK", chunk)
        fast = read()
    with monkeypatch.context() as patch:
        patch.setattr(_read, "_plain_ascii", lambda content: False)  # decode first, as before
        slow = read()
    return fast, slow


@FUZZ
@given(text=jsonl_texts(), chunk=st.sampled_from([1, 3, 64]), format=st.sampled_from(["auto", "jsonl"]))
def test_jsonl_bytes_read_as_their_text(text, chunk, format):
    with pytest.MonkeyPatch.context() as monkeypatch:
        fast, slow = _read_both(text.encode("ascii"), format, chunk, monkeypatch)
    if isinstance(slow, str) or isinstance(fast, str):
        assert fast == slow
    else:
        _same_log(fast, slow)


@FUZZ
@given(rows=st.lists(ROW, max_size=12), cut=st.integers(0, 2), format=st.sampled_from(["auto", "trl_state"]),
       chunk=st.sampled_from([1, 20, 1 << 20]))
def test_trainer_state_bytes_read_as_their_text(rows, cut, format, chunk):
    content = trainer_state(rows).encode("ascii")
    content = content[: len(content) - cut]  # a file cut short now and then
    with pytest.MonkeyPatch.context() as monkeypatch:
        fast, slow = _read_both(content, format, chunk, monkeypatch)
    if isinstance(slow, str) or isinstance(fast, str):
        assert fast == slow
    else:
        _same_log(fast, slow)


# what a trainer_state.json may hold around and inside its rows: lists of objects (a cut there is not between rows),
# keys after log_history, a second log_history, NaN literals, strings that look like a row boundary
PLAIN = st.builds(lambda s, r: {"step": s, "reward": r, "loss": 0.5}, st.integers(0, 30), st.floats(0, 1))
ELEMENT = st.one_of(*[PLAIN] * 12, ROW, PLAIN.map(lambda row: {**row, "hist": [{"a": 1}, {"b": 2}]}), st.just("x"),
                    st.just([1]))  # mostly clean rows: a document in pieces now and then
EXTRA = st.sampled_from(['', ', "logging_steps": 5', ', "best": {"a": [{"x": 1}, {"y": 2}]}', ', "note": "}, {"',
                         ', "log_history": [{"step": 1, "reward": 0.5}, {"step": 2, "reward": 0.6}]',
                         ', "loss": NaN'])


@FUZZ
@given(rows=st.lists(ELEMENT, max_size=14), before=EXTRA, after=EXTRA, indent=st.sampled_from([None, 2]),
       chunk=st.sampled_from([1, 8, 30, 100]))
def test_a_document_in_pieces_parses_to_what_one_parse_gives(rows, before, after, indent, chunk):
    history = json.dumps(rows, indent=indent)
    data = ('{"global_step": 3' + before + ', "log_history": ' + history + after + "}").encode("ascii")
    pieces = _json_chunks.trl_document(data, chunk)
    if pieces is not None:
        state, flat = pieces
        assert state == json.loads(data)  # json's NaN is not equal to itself: such files are never in pieces
        assert not any(isinstance(v, dict) for i in flat for v in state["log_history"][i].values())
    assert _readers.read_trl_state(data) == _readers.read_trl_state(data.decode("ascii"))


@FUZZ
@given(text=jsonl_texts())
def test_the_groups_a_reader_carries_are_its_rows_groups(text):
    try:
        raw = _json_readers.read_jsonl(text.encode("ascii"))
    except ConfigError:
        return
    if raw.groups is not None:
        assert raw.groups == key_groups(raw.rows)


def test_a_large_log_in_many_chunks(tmp_path):
    rows = [{"step": s, "reward": s / 1000, "kl": {"ref": 0.1}} if s % 97 == 0 else {"step": s, "reward": s / 1000}
            for s in range(1, 3001)]
    text = "".join(json.dumps(r) + "\n" for r in rows)
    assert _json_readers._one_object_per_line(text.encode(), 4096) == rows
    log = read_log(text.encode())
    assert np.array_equal(log.steps, np.arange(1, 3001)) and log.n_runs == 1
    state = trainer_state(rows).encode()
    for chunk in (1, 50, 4096):
        parsed, flat = _json_chunks.trl_document(state, chunk)
        assert parsed == json.loads(state)
        assert not any(isinstance(v, dict) for i in flat for v in parsed["log_history"][i].values())
    plain = trainer_state([{"step": s, "reward": s / 1000} for s in range(1, 3001)]).encode()
    parsed, flat = _json_chunks.trl_document(plain, 4096)
    assert parsed == json.loads(plain) and len(flat) > 2000  # the middle pieces' rows, known to hold no object
    # a cut inside a row (a list of objects in it) is found out: the whole is parsed instead
    rows[1500]["hist"] = [{"a": 1}] * 2000
    state = trainer_state(rows).encode()
    assert _json_chunks.trl_document(state, 1) is None
    assert _readers.read_trl_state(state) == _readers.read_trl_state(state.decode())


@settings(max_examples=50, deadline=None)
@given(data=st.binary(max_size=300), size=st.integers(1, 64))
def test_bytes_are_counted_as_bytes_count_them(data, size):
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(_json_chunks, "COUNT_SLICE", size)
        assert _json_chunks.count_bytes(data, b"{") == data.count(b"{")
        assert _json_chunks.count_bytes(data.decode("latin-1"), b"{") == data.count(b"{")
