"""paper_repro's claims: RESULTS.md and its appendix are rendered from data/claims.jsonl, one row per claim.

The committed tables must equal their rendering from the committed data (they cannot go stale), the
claims table stays short, every recorded row belongs to exactly one claim of `_claims.CLAIMS`, and a row
recorded for a family changes that family's pooled row."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]  # (not `from conftest import ROOT`: under pytest-xdist another conftest answers)
PAPER_REPRO = ROOT / "paper_repro"
MAX_BYTES = 100_000
MAX_CLAIMS = 43  # 40 until issue 49 (public-collapse, trl-atlas-v2) and issue 50 (diagnose-vs-peers) added a row each


@pytest.fixture(scope="module")
def results(load_script):
    return load_script("paper_repro", "_results")


@pytest.fixture(scope="module")
def claims(load_script):
    return load_script("paper_repro", "_claims")


@pytest.fixture(scope="module")
def committed(results):
    return results.load(PAPER_REPRO / "data" / "claims.jsonl")


def test_committed_tables_are_their_rendering(results, committed):
    table, appendix = results.render(*committed)
    assert (PAPER_REPRO / "RESULTS.md").read_text() == table, "run `python paper_repro/_results.py`"
    assert (PAPER_REPRO / "RESULTS_APPENDIX.md").read_text() == appendix, "run `python paper_repro/_results.py`"


def test_the_claims_table_is_short(results, committed):
    table, _ = results.render(*committed)
    rows = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| id |")]
    assert len(table.encode()) < MAX_BYTES
    assert 0 < len(rows) <= MAX_CLAIMS
    assert len(rows) == len({line.split(" | ")[0] for line in rows})  # one row per claim


def test_every_row_belongs_to_exactly_one_named_claim(claims, committed):
    rows, _ = committed
    named = {c.id for c in claims.CLAIMS}
    assert len(named) == len(claims.CLAIMS)
    for row_id in rows:
        matches = [c.id for c in claims.CLAIMS if re.fullmatch(c.members, row_id)]
        assert len(matches) == 1, f"{row_id}: claims {matches}"
    unused = [c.id for c in claims.CLAIMS if not any(re.fullmatch(c.members, i) for i in rows)]
    assert not unused, f"claims with no recorded row: {unused}"


def test_every_verdict_is_stated_and_failures_stay_visible(results, committed):
    table, appendix = results.render(*committed)
    rows, _ = committed
    assert all(f"| {r['verdict']} |" in appendix for r in rows.values())
    failing = [r["id"] for r in rows.values() if r["verdict"] == "FAIL"]
    assert all(f"| {i} |" in appendix for i in failing)
    assert "**Does not hold" in table or not failing


def _pooled_line(table: str, claim_id: str) -> str:
    return next(line for line in table.splitlines() if line.startswith(f"| {claim_id} |"))


def test_recording_a_family_row_updates_its_pooled_row(results, committed, tmp_path, monkeypatch):
    """A new held-out grid recorded for the pilot forecast: the pooled row counts it, the appendix keeps it."""
    (tmp_path / "data").mkdir()
    shutil.copy(PAPER_REPRO / "data" / "claims.jsonl", tmp_path / "data" / "claims.jsonl")
    monkeypatch.setattr(results, "RESULTS", tmp_path / "RESULTS.md")
    monkeypatch.setattr(results, "DATA", tmp_path / "data" / "claims.jsonl")
    monkeypatch.setattr(results, "APPENDIX", tmp_path / "RESULTS_APPENDIX.md")
    rows, _ = committed
    grids = [r for i, r in rows.items() if re.fullmatch(r"pilot-forecast-(addition|count|pattern)-.+", i)
             and "(develop)" not in r["claim"]]
    members = sum(bool(re.fullmatch(r"pilot-forecast-(addition|count|pattern)-.+", i)) for i in rows)
    before = _pooled_line(results.render(*committed)[0], "pilot-forecast")
    assert f"{len(grids)} held-out grids" in before and f"[{members} rows]" in before
    template = grids[0]
    results.record(results.Claim("pilot-forecast-count-new", template["claim"].replace(template["claim"].split("(")[1]
                   .split(")")[0], "confirm-99"), template["source"]), predicted=template["predicted"],
                   measured=template["measured"], passed=False, quick=True, started=0.0, command="c")
    after = _pooled_line((tmp_path / "RESULTS.md").read_text(), "pilot-forecast")
    assert f"{len(grids) + 1} held-out grids" in after and f"[{members + 1} rows]" in after
    assert "| pilot-forecast-count-new |" in (tmp_path / "RESULTS_APPENDIX.md").read_text()
    assert (PAPER_REPRO / "RESULTS.md").read_text() != (tmp_path / "RESULTS.md").read_text()


def test_pooling_a_family(claims):
    rows = [dict(id=f"x-{k}", claim="c", predicted="p", measured=str(k), verdict=v)
            for k, v in enumerate(("PASS", "PENDING", "FAIL"))]
    assert claims.pool_all(rows[:2]).verdict == "PASS"  # a pending row is shown, not counted
    assert claims.pool_all(rows).verdict == "FAIL"
    assert claims.pool_all(rows).measured.startswith("1 of 3 rows PASS")
    assert claims.pool_all(rows[:1]).measured == "0"  # one row: its own figures
    with pytest.raises(ValueError, match="no longer reads"):
        claims.pool_pilot_grids([dict(id="pilot-forecast-count-x", claim="(confirm-1)", measured="?", verdict="PASS")])
