"""Every paper_repro claim, in its --quick mode (slow: run with `bash scripts/test.sh --full`)."""

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = sorted(p for p in (Path(__file__).parents[1] / "paper_repro").glob("*.py") if not p.name.startswith("_"))


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_claim_passes_in_quick_mode(script):
    proc = subprocess.run([sys.executable, str(script), "--quick", "--no-record"], capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "[FAIL]" not in proc.stdout and "[PASS]" in proc.stdout, proc.stdout[-2000:]
