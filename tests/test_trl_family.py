"""The TRL log family (paper_repro/trl_family.py): the committed logs read with TRL's keys, every label a mode.

Reading needs no TRL; generating a run does (slow, skipped without trl)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gspo_dynamics.diagnose import MODES
from gspo_dynamics.logs import read_log

ROOT = Path(__file__).parents[1]
DATA = ROOT / "paper_repro" / "data" / "trl_family"
RUNS = sorted(p.parent for p in DATA.glob("*/label.json"))
# TRL's own keys every GRPOTrainer log carries (read under our names: frac_reward_zero_std -> frac_zero_std, ...)
TRL_SERIES = ("reward", "reward_std", "frac_zero_std", "entropy", "mean_length", "truncation_rate", "clip_ratio/low_mean")
MAX_BYTES = 400_000  # a log, not a checkpoint: no weights or optimizer states in the family's folder


def test_family_has_every_mode_twice():
    labels = [json.loads((run / "label.json").read_text())["mode"] for run in RUNS]
    assert sorted(set(labels)) == sorted(MODES)
    assert all(labels.count(m) >= 2 for m in MODES)


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_committed_log_reads_as_trl(run):
    label = json.loads((run / "label.json").read_text())
    assert label["mode"] in MODES
    assert run.name == f"{label['mode']}-{label['seed']}"
    assert {"mode", "recipe", "seed", "note"} <= set(label)
    raw = json.loads((run / "trainer_state.json").read_text())["log_history"]
    assert any("frac_reward_zero_std" in row and "rewards/correct/mean" in row for row in raw)  # TRL's names, as written
    log = read_log(run / "trainer_state.json")
    assert log.trainer == "trl"
    for name in TRL_SERIES:
        assert name in log.series, name
    assert "reward/correct" in log.series
    assert log.steps.size >= 20
    assert all(p.suffix == ".json" and p.stat().st_size < MAX_BYTES for p in run.iterdir())


def test_hacking_logs_have_both_rewards_and_an_eval_reward():
    for run in (r for r in RUNS if r.name.startswith("reward_hacking")):
        log = read_log(run / "trainer_state.json")
        assert {"reward/correct", "reward/length", "eval/reward"} <= set(log.series)


def test_recipes_cover_every_mode():
    sys.path.insert(0, str(ROOT / "paper_repro"))
    try:
        import trl_family
    finally:
        sys.path.remove(str(ROOT / "paper_repro"))
    assert sorted(trl_family.RECIPES) == sorted(MODES)
    labels = {r.name: json.loads((r / "label.json").read_text()) for r in RUNS}
    kept = [(label["mode"], name) for name, label in labels.items() if "excluded" not in label]
    assert [(label, path.parent.name) for label, path in trl_family.family(DATA)] == kept
    assert all(len(label["excluded"]) > 40 for label in labels.values() if "excluded" in label)  # a reason, said
    assert {mode for mode, _ in kept} == set(MODES)


@pytest.mark.slow
def test_a_short_run_writes_a_trl_log(tmp_path):
    pytest.importorskip("trl")
    proc = subprocess.run([sys.executable, str(ROOT / "paper_repro" / "trl_family.py"), "--quick", "--no-record"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "log rows written by TRL" in proc.stdout
