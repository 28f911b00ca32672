"""simpleRL-reason's own keys (hkust-nlp/simpleRL-reason at cf1c785, a verl 0.1 fork): its `trainer.remove_clip`
masks the responses cut at the length limit out of the loss (ray_trainer.py: the attention mask of every response
whose length reaches the limit zeroed), not the ratio's clip; its sampler chunk and checkpoint housekeeping change no
step. Read as such, not refused as unknown."""

from __future__ import annotations

from gspo_dynamics.predict import read_run_config


def simplerl(remove_clip) -> dict:
    return {"data": {"train_batch_size": 256}, "algorithm": {"adv_estimator": "grpo"},
            "trainer": {"remove_clip": remove_clip, "remove_previous_ckpt": True},
            "actor_rollout_ref": {"actor": {"optim": {"lr": 5e-7}, "ppo_mini_batch_size": 256, "clip_ratio": 0.2},
                                  "rollout": {"n": 8, "micro_rollout_batch_size": 1024}}}


def test_remove_clip_false_changes_nothing_and_the_fork_keys_are_known():
    setup = read_run_config(simplerl(False))
    assert setup.unknown == () and "trainer.remove_clip" not in {k for k, _, _ in setup.unmodelled}
    assert (setup.hparams.clip_low, setup.hparams.clip_high) == (0.2, 0.2)


def test_remove_clip_true_is_named_as_not_modelled_and_keeps_the_ratio_clip():
    setup = read_run_config(simplerl(True))
    named = {k: (v, why) for k, v, why in setup.unmodelled}
    assert named["trainer.remove_clip"][0] is True and "cut at the length limit" in named["trainer.remove_clip"][1]
    assert (setup.hparams.clip_low, setup.hparams.clip_high) == (0.2, 0.2) and setup.unknown == ()
