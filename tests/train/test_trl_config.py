"""The trainer's run in TRL's keys (`train._trl_config`): read by `predict` as the same run, and a real GRPOConfig."""

from __future__ import annotations

import dataclasses

import pytest

from gspo_dynamics.predict import read_run_config
from gspo_dynamics.train._trl_config import TRL_LOSSES, trl_config
from gspo_dynamics.train.config import TrainConfig

BASE = TrainConfig(task="pattern", model="100k", objective="grpo", steps=120)
VARIANTS = [
    {}, {"steps_per_generation": 4, "num_iterations": 2}, {"optimizer": "sgd", "momentum": 0.9, "lr": 0.5},
    {"kl_coef": 0.04, "lr_schedule": "linear"}, {"group_size": 4, "prompts_per_step": 16, "advantage_scale": "none"},
    {"clip_low": 0.1, "clip_high": 0.3, "max_grad_norm": None},
]
CASES = [(objective, variant) for objective in TRL_LOSSES for variant in VARIANTS]


@pytest.mark.parametrize("objective,variant", CASES, ids=[f"{o}-{i}" for o in TRL_LOSSES for i in range(len(VARIANTS))])
def test_predict_reads_the_trl_keys_as_the_same_run(objective, variant):
    config = dataclasses.replace(BASE, objective=objective, **variant)
    own, trl = read_run_config(config.to_dict()), read_run_config(trl_config(config, 16))
    assert trl.framework == "TRL GRPOConfig" and own.framework == "gspo-dynamics trainer"
    hp, expected = trl.hparams, own.hparams
    if objective == "cispo":  # no lower bound either way (ours reads eps_low just below 1, TRL ignores epsilon);
        # the cap 1 + eps_high is read back as epsilon_high - 1, equal to rounding
        assert hp.clip_high == pytest.approx(expected.clip_high, abs=1e-12)
        hp, expected = (dataclasses.replace(p, clip_low=0.5, clip_high=0.5) for p in (hp, expected))
    assert hp == expected
    assert (trl.run_steps, trl.refresh_exact) == (own.run_steps, own.refresh_exact)
    assert _decay(trl.schedule) == _decay(own.schedule) == (None if config.lr_schedule == "constant" else ("linear", 120))


def _decay(schedule):
    """(shape, horizon) of a decaying schedule, None for a constant lr."""
    return None if schedule is None or schedule.shape == "constant" else (schedule.shape, schedule.total)


@pytest.mark.parametrize("objective", ["pg", "gspo_token"])
def test_objectives_without_a_trl_loss_have_no_grpo_config(objective):
    assert trl_config(dataclasses.replace(BASE, objective=objective), 16) is None


@pytest.mark.parametrize("objective", list(TRL_LOSSES))
def test_a_real_grpo_config_takes_every_key(objective, tmp_path):
    trl = pytest.importorskip("trl")
    keys = trl_config(dataclasses.replace(BASE, objective=objective, steps_per_generation=2), 16)
    config = trl.GRPOConfig(output_dir=str(tmp_path), report_to=[], use_cpu=True, bf16=False, **keys)
    for key, value in keys.items():
        assert getattr(config, key) == value, key
