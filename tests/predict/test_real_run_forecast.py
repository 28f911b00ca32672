"""`predict --config --pilot` on a real TRL run (README, "Before a run"): the Llama-3.1-8B GRPO run of
IMJONEZZ/UnslothGRPO @ e32c3bec. Its GRPOConfig is transcribed here from the repository's
`llama3_1_(8b)_grpo.py` (values only); its log is read from ../shared/data/real_logs (never shipped).
The pilot is the log's first 60 steps; the rest of the log is what the run did later."""

from __future__ import annotations

import json

import numpy as np
import pytest

from _real_logs import ALEX_JSON, IMJONEZZ
from gspo_dynamics.cli.main import main

CONFIG = {"learning_rate": 5e-6, "adam_beta1": 0.9, "adam_beta2": 0.99, "weight_decay": 0.1, "warmup_ratio": 0.1,
          "lr_scheduler_type": "cosine", "optim": "paged_adamw_8bit", "per_device_train_batch_size": 1,
          "gradient_accumulation_steps": 1, "num_generations": 6, "max_prompt_length": 256,
          "max_completion_length": 200, "max_steps": 250, "max_grad_norm": 0.1}
PILOT_STEPS = 60


@pytest.mark.real_logs
def test_a_pilot_in_the_flat_start_withholds_what_it_cannot_know(real_logs, tmp_path, capsys):
    """The first 60 steps sit in the flat start (mean reward ~0.27); the run then climbs past 1.4. The
    forecast must say that the pilot identifies neither the plateau nor the stiffness (no invented
    plateau or learning-rate bound), read T = 1 and N = 1 group of G = 6 with the assumptions said."""
    config = tmp_path / "grpo.json"
    config.write_text(json.dumps(CONFIG))
    log = real_logs / IMJONEZZ
    assert main(["predict", "--config", str(config), "--pilot", str(log), "--pilot-steps", str(PILOT_STEPS), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["config"]["refresh_interval"] == 1 and report["config"]["group_size"] == 6
    assert report["config"]["num_groups"] == 1 and any("0.166667 groups" in n for n in report["config"]["notes"])
    assert report["implications"]["plateau_extrapolated"] and report["max_safe_lr"] is None
    assert "does not identify" in report["lr_note"]
    later = np.array([r["reward"] for r in json.loads(log.read_text())["log_history"] if "reward" in r])
    assert later[:PILOT_STEPS].mean() < 0.4 < 1.2 < later[120:180].mean()  # what the README says the run did


# alexchilton/CAS_NLP_MODULE4_GRPO @ 84f00eca, expert_guy/post_training_project/threestage/stage2_light_grpo.py,
# its GRPOConfig(...) (lines 204-247), the values the theory reads: Qwen2.5-3B-Instruct with the stage-1 LoRA
# adapter on Wordle. The log agrees: train_batch_size 2, 480 = 8 epochs x 60 one-prompt steps, the lr decays
# linearly from 3e-7.
WORDLE_CONFIG = {"learning_rate": 3e-7, "per_device_train_batch_size": 2, "gradient_accumulation_steps": 1,
                 "num_generations": 2, "num_train_epochs": 8, "beta": 0.03, "scale_rewards": "none",
                 "max_grad_norm": 0.5, "temperature": 0.8, "max_completion_length": 256, "logging_steps": 1}
WORDLE_PILOT = 40


@pytest.mark.real_logs
def test_a_flat_pilot_forecasts_the_level_and_withholds_the_stiffness(real_logs, tmp_path, capsys):
    """A run that does not learn (lr 3e-7, one group of G = 2 per step): its 40-step pilot is noise around a
    level. The forecast's plateau must hold what the run did later (steps 41-160 within 2 standard errors
    of it, the two errors combined), with no stiffness, no learning-rate bound, and the fitted time scale
    said to be too short for these hyperparameters."""
    config = tmp_path / "grpo.json"
    config.write_text(json.dumps(WORDLE_CONFIG))
    log = real_logs / ALEX_JSON
    assert main(["predict", "--config", str(config), "--pilot", str(log), "--pilot-steps", str(WORDLE_PILOT), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["config"]["group_size"], report["config"]["num_groups"], report["config"]["refresh_interval"]) == (2, 1, 1)
    assert report["max_safe_lr"] is None and report["implications"]["stiffness_per_step"] is None
    assert any("shorter than the fastest relaxation" in n for n in report["implications"]["notes"])
    later = np.array([r["reward"] for r in json.loads(log.read_text())["log_history"] if "reward" in r])[WORDLE_PILOT:]
    plateau = report["implications"]["plateau"]
    combined = np.hypot(plateau["stderr"], later.std(ddof=1) / np.sqrt(len(later)))
    assert len(later) == 120 and abs(later.mean() - plateau["value"]) < 2 * combined
