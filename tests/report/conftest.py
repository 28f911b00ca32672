"""The report's tests: `run_file(name, **kw)` writes a generated log (`_report_logs.saturating_rows`) as JSONL."""

import pytest
from _report_logs import saturating_rows, write_jsonl


@pytest.fixture
def run_file(tmp_path):
    """run_file(name, **saturating_rows kwargs) -> the path of a JSONL log."""
    return lambda name="run.jsonl", **kw: write_jsonl(tmp_path / name, saturating_rows(**kw))
