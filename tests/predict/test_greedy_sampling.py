"""A sampler that cannot give a group two different responses is refused, in each framework's own key: a temperature
or top_p of 0 or less samples greedily, under 0.01 all but greedily, every group-relative advantage is then 0 and no
step learns (as num_generations 1 is refused). A small value from 0.01 on is read (not modelled: named as such)."""

from __future__ import annotations

import pytest
from test_openrlhf import GRPO, _script

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.predict import read_run_config

TRL = {"learning_rate": 1e-6, "num_generations": 8, "per_device_train_batch_size": 8, "max_steps": 100}
VERL = {"algorithm": {"adv_estimator": "grpo"}, "data": {"train_batch_size": 256},
        "actor_rollout_ref": {"rollout": {"n": 8}, "actor": {"optim": {"lr": 1e-6}, "ppo_mini_batch_size": 64}},
        "trainer": {"total_training_steps": 100}}


@pytest.mark.parametrize("key", ["temperature", "top_p"])
@pytest.mark.parametrize("value", [0, 0.0, -1, 1e-4, 0.0099])  # 1e-4: an OpenRLHF script's (audit s39c)
def test_greedy_sampling_is_refused_in_each_frameworks_keys(tmp_path, key, value):
    refused = rf"^{key} {value:g} samples (all but )?greedily.*: .*no step learns; set {key} >= 0.01"
    with pytest.raises(ConfigError, match=refused):
        read_run_config({**TRL, key: value})
    verl = {**VERL, "actor_rollout_ref": {**VERL["actor_rollout_ref"], "rollout": {"n": 8, key: value}}}
    with pytest.raises(ConfigError, match=rf"^actor_rollout_ref.rollout.{key} {value:g} samples (all but )?greedily"):
        read_run_config(verl)
    with pytest.raises(ConfigError, match=rf"^(--)?{key} {value:g} samples (all but )?greedily"):
        read_run_config(_script(tmp_path, GRPO.replace("--max_epochs 2", f"--max_epochs 2 --{key} {value}")))


def test_a_small_positive_temperature_is_read_and_named_not_modelled():
    setup = read_run_config({**TRL, "temperature": 0.05})
    assert setup.hparams.group_size == 8 and any(k == "temperature" for k, _, _ in setup.unmodelled)
