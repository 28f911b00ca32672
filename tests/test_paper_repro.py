"""Every paper_repro claim, in its --quick mode (slow: run with `bash scripts/test.sh --full`)."""

import subprocess
import sys
from pathlib import Path

import pytest

# Claims known to fail, with the reason recorded in paper_repro/RESULTS.md; they still must run.
KNOWN_FAILING = {
    "ratio_statistics": "the lognormal ratio theory ignores that the clip caps the drift beyond j ~ 2 (rows ratio-var, ratio-clip)",
    "objectives_transformer": "sequence-level clip fractions and T-robustness miss their tolerances (rows transformer-*)",
    "moe_routing": "routing replay raises the stale ratio variance at T >= 4; GRPO without replay is not less stable (null result)",
}
SCRIPTS = [
    pytest.param(p, marks=pytest.mark.xfail(reason=KNOWN_FAILING[p.stem], strict=False)) if p.stem in KNOWN_FAILING else p
    for p in sorted((Path(__file__).parents[1] / "paper_repro").glob("*.py")) if not p.name.startswith("_")
]


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_claim_passes_in_quick_mode(script):
    proc = subprocess.run([sys.executable, str(script), "--quick", "--no-record"], capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "[FAIL]" not in proc.stdout and "[PASS]" in proc.stdout, proc.stdout[-2000:]
