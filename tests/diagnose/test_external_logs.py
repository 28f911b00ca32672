"""Real GRPO/GSPO logs labelled by eye (paper_repro/real_log_labels.json): the labels file is
well-formed, and every labelled external log present on this machine is read without a traceback
and gets a primary verdict among the modes. The external logs are not in the repository (see
paper_repro/_real_log_labels.py for where they are looked for); absent ones are skipped with the
reason. Whether diagnose agrees with the labels is reported in a table, not asserted here."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from gspo_dynamics.diagnose import MODES, diagnose
from gspo_dynamics.logs import read_log

_HELPER = Path(__file__).resolve().parents[2] / "paper_repro" / "_real_log_labels.py"
_spec = importlib.util.spec_from_file_location("gspo_real_log_labels", _HELPER)
labels = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(labels)

ENTRIES = labels.load_labels()
EXTERNAL = [e for e in ENTRIES if e["where"] == "external"]
HEX40 = re.compile(r"[0-9a-f]{40}")
HEX64 = re.compile(r"[0-9a-f]{64}")


def test_the_labels_file_is_well_formed():
    assert ENTRIES and EXTERNAL
    names = [e["file"] for e in ENTRIES]
    assert len(set(names)) == len(names), "a file is labelled twice"
    for e in ENTRIES:
        name = e["file"]
        assert e["label"] in MODES + labels.NON_MODE_LABELS, name
        assert e["secondary"] is None or (e["secondary"] in MODES and e["secondary"] != e["label"]), name
        assert isinstance(e["reason"], str) and len(e["reason"]) >= 40, name
        assert HEX64.fullmatch(e["sha256"]), name
        assert e["commit"] is None or HEX40.fullmatch(e["commit"]), name
        assert e["where"] in ("shared", "external"), name
        assert isinstance(e["rows"], int) and e["rows"] > 0, name
        owner, repo = e["source_repo"].split("/")
        assert name == f"{owner}__{repo}__{e['path_in_repo'].replace('/', '__')}", name
        assert e["diagnose_primary_at_labelling"] in MODES + labels.NON_MODE_LABELS, name


def test_the_labelled_shared_logs_are_the_ones_beside_the_checkout(real_logs):
    # ../shared/data/real_logs holds them (the fixture skips where it is absent): same files, same bytes
    for e in ENTRIES:
        if e["where"] == "shared":
            path, why = labels.locate(e)
            assert path is not None, why


@pytest.mark.parametrize("entry", EXTERNAL, ids=lambda e: e["file"][:60])
def test_every_present_external_log_is_read_and_diagnosed(entry):
    if not labels.external_dir().is_dir():
        pytest.skip(
            f"no external logs folder at {labels.external_dir()} "
            f"(set {labels.ENV_VAR} to the folder holding them)"
        )
    path, why = labels.locate(entry)
    if path is None:
        pytest.skip(why)
    d = diagnose(read_log(path))
    assert d.primary in MODES
    json.dumps(d.to_json(), allow_nan=False)
    assert d.report_lines()
