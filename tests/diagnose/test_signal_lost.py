"""A policy thrown dead by an update (`_signal_lost`): a real TRL GRPOTrainer run at lr 0.1 (its first update leaves
every group zero-std and the reward at 0; entropy at 0 by step ~12) reads as a dynamical instability from its 8th
row, its degeneracy ranked below; a hard task with no signal from the start does not."""

from __future__ import annotations

import numpy as np
import pytest

from gspo_dynamics.diagnose import diagnose
from gspo_dynamics.diagnose._signal_lost import signal_lost
from gspo_dynamics.logs import RunLog

ROWS = 12


def log_of(reward, zero_std) -> RunLog:
    n = len(reward)
    return RunLog(steps=np.arange(1, n + 1), series={"reward": np.asarray(reward, float),
                  "frac_zero_std": np.asarray(zero_std, float)}, format="trl_state", source="<synthetic>",
                  trainer="trl", reward_std_kind="group_mean_std")


def test_a_first_update_that_kills_the_signal_is_an_instability():
    """Row 1 as in the lr 0.1 TRL run (reward 0.23, a quarter of the groups zero-std), then nothing."""
    log = log_of([0.234] + [0.0] * (ROWS - 1), [0.25] + [1.0] * (ROWS - 1))
    lost = signal_lost(log)
    assert lost["step"] == 2 and lost["rows_dead"] == ROWS - 1
    assert lost["confidence"] == pytest.approx(1 - 0.25 ** (ROWS - 1))
    d = diagnose(log)
    assert d.primary == "dynamical_instability"
    deg = next(v for v in d.verdicts if v.mode == "advantage_degeneracy")
    assert deg.confidence < d.verdicts[0].confidence


def test_a_task_too_hard_from_the_start_is_no_lost_signal():
    rng = np.random.default_rng(0)
    reward = np.where(rng.random(60) < 0.1, 1 / 64, 0.0)
    reward[-20:] = 0.0
    zero = np.where(reward > 0, 0.98, 1.0)
    assert signal_lost(log_of(reward, zero)) is None


def test_a_solved_task_is_no_lost_signal():
    """All groups zero-std at the reward's top, not its floor."""
    assert signal_lost(log_of(np.linspace(0.3, 1.0, ROWS), np.r_[np.full(4, 0.2), np.ones(ROWS - 4)])) is None


@pytest.mark.parametrize("seed", [0, 1])
def test_the_real_trl_run_at_lr_0_1_reads_as_an_instability_from_its_tenth_row(seed, tmp_path):
    """trl 1.16 GRPOTrainer, paper_repro/trl_family.py's tiny Llama warmed to ~0.2 success, learning_rate 0.1, 40
    steps (seed 0: entropy 0.78 -> 0.01 by step 11; seed 1: every completion truncated from step 3)."""
    import json
    from pathlib import Path

    from gspo_dynamics.logs import read_log

    rows = json.loads((Path(__file__).parent / "data" / f"trl_lr0.1_seed{seed}.trainer_state.json").read_text())
    for n in (10, len(rows["log_history"])):
        path = tmp_path / f"{n}" / "trainer_state.json"
        path.parent.mkdir()
        path.write_text(json.dumps({"log_history": rows["log_history"][:n]}))
        d = diagnose(read_log(path))
        assert d.primary == "dynamical_instability"
        assert any(e["signal"].startswith("reward fell to its floor") and e["value"] == 2 for e in d.verdicts[0].evidence)
