"""The trainer corpus recipes: each run writes a TRL-format log with the series diagnose reads,
labelled before the run, and the recipe's cause is visible in the log (not checked: diagnose)."""

import json

import numpy as np
import pytest

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.diagnose import MODES
from gspo_dynamics.logs import read_log
from gspo_dynamics.train.config import TrainConfig
from gspo_dynamics.train.corpus import LABEL_NAME, RECIPES, generate_trainer_corpus, recipe_config

DEGENERATE = 0.5  # diagnose's threshold for "most groups all-equal"


def test_recipes_are_diagnose_modes_and_valid_configs():
    assert set(RECIPES) <= set(MODES)
    assert "reward_hacking" not in RECIPES  # exact task rewards: no proxy, so no honest recipe
    for mode in RECIPES:
        config = recipe_config(mode, seed=3)
        assert isinstance(config, TrainConfig) and config.seed == 3 and config.model == "100k"
    # still_rising is healthy_saturation stopped early: same configuration but the run length
    healthy, rising = recipe_config("healthy_saturation"), recipe_config("still_rising")
    assert rising.steps < healthy.steps
    assert {k: v for k, v in rising.to_dict().items() if k != "steps"} == \
           {k: v for k, v in healthy.to_dict().items() if k != "steps"}
    # the instability recipe's cause is the stale refresh interval of the uncorrected objective
    unstable = recipe_config("dynamical_instability")
    assert unstable.objective == "pg" and unstable.refresh_interval > 1


def test_unknown_mode_and_bad_seeds_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="no trainer recipe"):
        recipe_config("reward_hacking")
    with pytest.raises(ConfigError, match="seeds"):
        generate_trainer_corpus(tmp_path, modes=["stalled"], seeds=0)
    assert not any(tmp_path.iterdir())  # nothing run or written


def test_degeneracy_recipe_writes_a_trl_log_whose_groups_are_mostly_all_zero(tmp_path):
    """~4 s: the advantage_degeneracy run (60 steps of the 100k model)."""
    (entry,) = generate_trainer_corpus(tmp_path, modes=["advantage_degeneracy"], seeds=1, base_seed=0)
    label = json.loads((entry.path.parent / LABEL_NAME).read_text())
    assert label["mode"] == "advantage_degeneracy" and label["config"]["task"] == "addition"
    log = read_log(entry.path)
    assert log.format == "trl_state"
    for name in ("reward", "reward_std", "entropy", "frac_zero_std"):
        assert name in log and log.n_points(name) == entry.config.steps
    # the cause: a success rate of a few percent makes p^G + (1-p)^G ~ 1, so most groups are all-zero
    late = np.asarray(log["frac_zero_std"])[-entry.config.steps // 2:]
    assert entry.warmup_success < 0.1 and late.mean() > DEGENERATE
