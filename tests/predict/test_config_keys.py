"""`ConfigKeys.group_edits`: a change of G, with the edits each framework needs beside it, read back through the
mapping: G as asked, T unchanged (OpenRLHF's n_samples_per_prompt and Search-R1's n_agent are factors of T), and none
where no integer value of the refresh key keeps T."""

from __future__ import annotations

import copy

import pytest

from gspo_dynamics.predict import read_run_config

OPENRLHF = {"actor_learning_rate": 1e-6, "n_samples_per_prompt": 8, "rollout_batch_size": 32, "train_batch_size": 128,
            "max_epochs": 1, "advantage_estimator": "group_norm"}
VERL = {"data": {"train_batch_size": 512}, "algorithm": {"adv_estimator": "grpo"},
        "actor_rollout_ref": {"actor": {"optim": {"lr": 1e-6}, "ppo_mini_batch_size": 128, "ppo_epochs": 1},
                              "rollout": {"n": 8}}}
SEARCH_R1 = {"data": {"train_batch_size": 512}, "algorithm": {"adv_estimator": "grpo"},
             "actor_rollout_ref": {"actor": {"optim": {"lr": 1e-6}, "ppo_mini_batch_size": 256, "ppo_epochs": 1},
                                   "rollout": {"n_agent": 4, "temperature": 1}}}


def _edited(config: dict, edits) -> dict:
    """A copy of the config with each (dotted) key set."""
    config = copy.deepcopy(config)
    for key, value in edits:
        *path, last = key.split(".")
        node = config
        for part in path:
            node = node.setdefault(part, {})
        node[last] = value
    return config


@pytest.mark.parametrize("config, new", [(OPENRLHF, 12), (OPENRLHF, 16), (VERL, 24), (SEARCH_R1, 6)])
def test_a_change_of_g_reads_back_as_g_at_the_same_t(config, new):
    setup = read_run_config(copy.deepcopy(config))
    edits = setup.keys.group_edits(setup.hparams.group_size, new)
    after = read_run_config(_edited(config, edits))
    assert after.hparams.group_size == new
    assert after.refresh_exact == pytest.approx(setup.refresh_exact)
    assert len(edits) == (1 if config is VERL else 2)


def test_no_integer_refresh_key_keeping_t_is_none():
    setup = read_run_config(OPENRLHF | {"rollout_batch_size": 15, "train_batch_size": 60})  # 60 x 9 / 8: no integer
    assert setup.hparams.refresh_interval == 2 and setup.keys.group_edits(8, 9) is None
