"""gspo_dynamics.predict: TRL, verl and our trainer's configs in the theory's terms.

The refresh interval and the groups per step are checked against an independent route: loops that
replay each framework's schedule (TRL's micro-batch counter in `GRPOTrainer._prepare_inputs`, verl's
epochs over minibatches) and count optimizer steps between rollouts and completions per step."""

from __future__ import annotations

import json
import math
import re

import pytest

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.predict import read_run_config
from gspo_dynamics.theory.hyperparams import SGD, Adam


def trl_schedule(spg: int, mu: int, ga: int, batch: int, devices: int):
    """Replay TRL's counter: a rollout every spg x mu micro-batches (each per_device_train_batch_size
    completions per process), an optimizer step every ga micro-batches. Returns (optimizer steps per
    rollout, completions per optimizer step) averaged over ten whole cycles of both counters."""
    micro_steps = 10 * math.lcm(spg * mu, ga)
    rollouts = optimizer_steps = 0
    for step in range(micro_steps):
        if step % (spg * mu) == 0:
            rollouts += 1
        if (step + 1) % ga == 0:
            optimizer_steps += 1
    return optimizer_steps / rollouts, micro_steps * batch * devices / optimizer_steps


@pytest.mark.parametrize("spg, mu, ga, batch, devices", [(None, 1, 1, 8, 1), (None, 1, 8, 4, 1), (16, 2, 4, 8, 1),
                                                          (8, 1, 2, 16, 4), (4, 3, 6, 8, 2)])
def test_trl_refresh_interval_and_groups_replay_trls_counter(spg, mu, ga, batch, devices):
    """T = spg mu / GA and N = batch D GA / G equal the replayed schedule's averages (exact over whole
    cycles: 1e-12); steps_per_generation defaults to GA (on-policy)."""
    cfg = {"learning_rate": 1e-6, "num_generations": 8, "num_iterations": mu, "gradient_accumulation_steps": ga,
           "per_device_train_batch_size": batch}
    if spg is not None:
        cfg["steps_per_generation"] = spg
    setup = read_run_config(cfg, devices=devices)
    per_rollout, completions = trl_schedule(spg or ga, mu, ga, batch, devices)
    assert setup.refresh_exact == pytest.approx(per_rollout, rel=1e-12)
    assert setup.hparams.refresh_interval == max(1, round(per_rollout))
    assert setup.hparams.num_groups == round(completions / 8)
    assert setup.hparams.group_size == 8 and setup.framework == "TRL GRPOConfig"


def test_trl_defaults_and_assumptions_are_said():
    setup = read_run_config({"learning_rate": 5e-7, "per_device_train_batch_size": 4, "gradient_accumulation_steps": 8})
    hp = setup.hparams
    assert (hp.refresh_interval, hp.group_size, hp.num_groups) == (1, 8, 4)  # 4 x 8 / 8 prompts per step
    assert isinstance(hp.optimizer, Adam) and hp.optimizer.beta1 == 0.9 and hp.lr == 5e-7
    assert (hp.clip_low, hp.clip_high, hp.correction, hp.advantage) == (0.2, 0.2, "token", "std")
    text = " ".join(setup.notes)
    assert "devices not given" in text and "1 assumed" in text
    assert "num_generations not given: TRL's default 8" in text
    assert "steps_per_generation not given" in text


@pytest.mark.parametrize("gbs, batch, devices, ga", [(64, 8, 1, 2), (256, 4, 8, 1), (32, 16, 2, 1)])
def test_trl_generation_batch_size_sets_steps_per_generation_as_trl_does(gbs, batch, devices, ga):
    """generation_batch_size instead of steps_per_generation: spg = gbs / (batch D), then T = spg mu / GA, the same
    as the config giving that spg (the replayed schedule); the derivation is said."""
    base = {"learning_rate": 1e-6, "per_device_train_batch_size": batch, "gradient_accumulation_steps": ga}
    setup = read_run_config({**base, "generation_batch_size": gbs}, devices=devices)
    spg = gbs // (batch * devices)
    per_rollout, _ = trl_schedule(spg, 1, ga, batch, devices)
    assert setup.refresh_exact == pytest.approx(per_rollout, rel=1e-12)
    assert setup.hparams == read_run_config({**base, "steps_per_generation": spg}, devices=devices).hparams
    assert any(f"= {gbs} / {batch * devices} = {spg}" in n for n in setup.notes)
    assert "generation_batch_size" not in setup.ignored


@pytest.mark.parametrize("cfg, needle", [
    ({"learning_rate": 1e-6, "generation_batch_size": 60, "steps_per_generation": 4}, "TRL refuses a config that sets both"),
    ({"learning_rate": 1e-6, "generation_batch_size": 60, "per_device_train_batch_size": 8}, "divisible by"),
    ({"learning_rate": 1e-6, "generation_batch_size": 0}, "generation_batch_size"),
])
def test_trl_generation_batch_size_trl_would_refuse_is_one_config_error(cfg, needle):
    with pytest.raises(ConfigError, match=needle):
        read_run_config(cfg)


def test_a_trl_config_saved_from_a_run_holds_both_generation_keys():
    """GRPOConfig.__post_init__ fills in steps_per_generation and generation_batch_size, so a dumped config has both:
    read when generation_batch_size = spg x batch x devices, which gives the device count where none is (128 / (4 x
    8) = 4, said); refused when the device count given makes them disagree, or none divides."""
    saved = {"learning_rate": 1e-6, "per_device_train_batch_size": 8, "gradient_accumulation_steps": 2,
             "steps_per_generation": 4, "generation_batch_size": 128}
    setup = read_run_config(saved)
    assert setup.hparams == read_run_config({**saved, "generation_batch_size": None}, devices=4).hparams
    assert setup.refresh_exact == 2.0 and "generation_batch_size" not in setup.ignored
    assert any("= 128 / (4 x 8) = 4, from the saved config" in n for n in setup.notes)
    with pytest.raises(ConfigError, match="is not steps_per_generation x per_device_train_batch_size x devices"):
        read_run_config(saved, devices=2)  # 4 x 8 x 2 = 64, not 128
    with pytest.raises(ConfigError, match="is not steps_per_generation x per_device_train_batch_size x devices"):
        read_run_config({**saved, "generation_batch_size": 100})  # no device count gives 100


def test_trl_fractional_and_sub_step_refreshes_are_rounded_with_a_note():
    half = read_run_config({"learning_rate": 1e-6, "steps_per_generation": 2, "gradient_accumulation_steps": 4})
    assert half.refresh_exact == 0.5 and half.hparams.refresh_interval == 1
    assert any("more than one rollout per optimizer step" in n for n in half.notes)
    odd = read_run_config({"learning_rate": 1e-6, "steps_per_generation": 6, "gradient_accumulation_steps": 4})
    assert odd.refresh_exact == 1.5 and odd.hparams.refresh_interval == 2
    assert any("falls inside an optimizer step" in n for n in odd.notes)


def test_trl_gspo_options_and_unmodelled_keys():
    setup = read_run_config({"learning_rate": 1e-6, "num_generations": 16, "importance_sampling_level": "sequence",
                             "epsilon": 3e-4, "epsilon_high": 4e-4, "beta": 0.04, "loss_type": "dr_grpo",
                             "scale_rewards": "none", "output_dir": "x", "bf16": True}, devices=8)
    hp = setup.hparams
    assert (hp.correction, hp.clip_low, hp.clip_high, hp.kl_coef, hp.advantage) == ("sequence", 3e-4, 4e-4, 0.04, "mean")
    assert hp.num_groups == 8 * 8 // 16  # TRL's default per-device batch 8, 8 devices, no accumulation
    assert setup.unmodelled == ()  # bf16 without vLLM: the trainer's own model samples, in its precision
    vllm = read_run_config({"learning_rate": 1e-6, "bf16": True, "use_vllm": True}, devices=1)
    assert [u[0] for u in vllm.unmodelled] == ["use_vllm", "bf16"]  # beside vLLM: a train-inference mismatch
    cold = read_run_config({"learning_rate": 1e-6, "temperature": 0.02}, devices=1)  # every framework alike
    assert [u[:2] for u in cold.unmodelled] == [("temperature", 0.02)] and "alike" in cold.unmodelled[0][2]
    assert any("importance_sampling_level sequence under loss_type dr_grpo" in n for n in setup.notes)
    assert any("2 keys change no training step" in n for n in setup.notes)  # output_dir, bf16: counted, not named


def test_trl_yaml_reads_exponent_floats(tmp_path):
    """YAML 1.1 reads `1e-6` (no dot) as a string; TRL's parser and ours read a number."""
    path = tmp_path / "grpo.yaml"
    path.write_text("learning_rate: 1e-6\nnum_generations: 4\nper_device_train_batch_size: 8\n"
                    "gradient_accumulation_steps: 2\nsteps_per_generation: 8\nnum_iterations: 1\n")
    setup = read_run_config(path)
    assert setup.hparams.lr == 1e-6 and setup.hparams.refresh_interval == 4 and setup.hparams.num_groups == 4


def verl_tree(**actor) -> dict:
    return {"data": {"train_batch_size": 1024},
            "algorithm": {"adv_estimator": "grpo"},
            "actor_rollout_ref": {
                "actor": {"optim": {"lr": 1e-6}, "ppo_mini_batch_size": 256, "ppo_epochs": 1,
                          "ppo_micro_batch_size_per_gpu": "${actor_rollout_ref.actor.ppo_mini_batch_size}", **actor},
                "rollout": {"n": 8, "name": "vllm"}}}


def verl_schedule(rollout_prompts: int, mini: int, epochs: int) -> float:
    """verl's update loop: for each epoch, for each minibatch of the rollout, one optimizer step."""
    steps = 0
    for _ in range(epochs):
        for _ in range(0, rollout_prompts, mini):
            steps += 1
    return steps


@pytest.mark.parametrize("mini, epochs", [(256, 1), (128, 2), (1024, 1), (64, 4)])
def test_verl_refresh_interval_replays_the_update_loop(mini, epochs):
    setup = read_run_config(verl_tree(ppo_mini_batch_size=mini, ppo_epochs=epochs))
    assert setup.hparams.refresh_interval == verl_schedule(1024, mini, epochs)
    assert setup.hparams.num_groups == mini and setup.hparams.group_size == 8 and setup.framework == "verl"


def test_verl_gspo_yaml(tmp_path):
    tree = verl_tree(clip_ratio_low=3e-4, clip_ratio_high=4e-4, use_kl_loss=True, kl_loss_coef=0.001,
                     policy_loss={"loss_mode": "gspo"})
    path = tmp_path / "ppo_trainer.yaml"
    import yaml

    path.write_text(yaml.safe_dump(tree))
    hp = read_run_config(path).hparams
    assert (hp.correction, hp.clip_low, hp.clip_high, hp.kl_coef, hp.refresh_interval) == ("sequence", 3e-4, 4e-4, 0.001, 4)
    plain = read_run_config(verl_tree()).hparams
    assert (plain.correction, plain.clip_low, plain.clip_high, plain.kl_coef) == ("token", 0.2, 0.2, 0.0)


def test_our_trainer_config_maps_its_schedule():
    setup = read_run_config({"task": "count", "model": "100k", "objective": "gspo", "steps_per_generation": 4,
                             "num_iterations": 2, "prompts_per_step": 8, "group_size": 4, "lr": 1e-3})
    hp = setup.hparams
    assert (hp.refresh_interval, hp.num_groups, hp.group_size, hp.correction) == (8, 8, 4, "sequence")
    assert (hp.clip_low, hp.clip_high) == (3e-4, 4e-4)  # GSPO's defaults
    sgd = read_run_config({"task": "count", "model": "100k", "objective": "pg", "optimizer": "sgd", "momentum": 0.9,
                           "lr": 0.1}).hparams
    assert isinstance(sgd.optimizer, SGD) and sgd.momentum == 0.9 and sgd.correction == "none"


def test_theory_field_names_read_as_they_are():
    hp = read_run_config({"lr": 0.5, "refresh_interval": 4, "group_size": 8, "optimizer": "sgd", "momentum": 0.5}).hparams
    assert (hp.lr, hp.refresh_interval, hp.group_size, hp.momentum) == (0.5, 4, 8, 0.5)


def test_the_run_length_is_read_where_the_config_holds_it():
    assert read_run_config({"learning_rate": 1e-6, "max_steps": 500}).run_steps == 500
    assert read_run_config({"learning_rate": 1e-6, "max_steps": -1}).run_steps is None  # TRL's default: epochs decide
    assert read_run_config({"learning_rate": 1e-6}).run_steps is None
    assert read_run_config(verl_tree() | {"trainer": {"total_training_steps": 300}}).run_steps == 300
    assert read_run_config(verl_tree()).run_steps is None
    ours = read_run_config({"task": "count", "model": "100k", "objective": "grpo", "steps": 96})
    assert ours.run_steps == 96 and "steps" not in ours.ignored and ours.to_json()["run_steps"] == 96
    assert "max_steps" not in read_run_config({"learning_rate": 1e-6, "max_steps": 500}).ignored


@pytest.mark.parametrize("cfg, needle", [
    ({"learning_rate": 1e-6, "max_steps": 0}, "max_steps"),
    ({"learning_rate": 1e-6, "max_steps": 12.5}, "max_steps"),
    (verl_tree() | {"trainer": {"total_training_steps": "many"}}, "total_training_steps"),
    ({"task": "count", "model": "100k", "objective": "grpo", "steps": -3}, "steps"),
    ({"task": "count", "model": "100k", "objective": "grpo", "steps": -1}, "steps"),  # -1 means unset for TRL only
    ({"learning_rate": 1e-6, "steps_per_generation": 0}, "steps_per_generation"),
    ({"learning_rate": -1e-6}, "learning_rate"),
    ({"learning_rate": "fast"}, "learning_rate"),
    ({"learning_rate": 1e-6, "num_generations": 1}, "num_generations must be >= 2"),
    ({"learning_rate": 1e-6, "importance_sampling_level": "word"}, "importance_sampling_level"),
    ({"beta": 0.1, "loss_type": "sigmoid", "max_length": 512}, "preference-optimisation"),
    ({"learning_rate": 1e-6, "rpo_alpha": 1.0}, "preference-optimisation"),
    ({"learning_rate": 1e-6, "group_size": 8}, r"the config's group_size is no field of TRL's GRPOConfig, beside TRL keys \(learning_rate\)"),
    ({"output_dir": "x"}, "no hyperparameter"),
    ({"model": {"name": "m"}, "optimizer": {"lr": 1e-6}, "dpo": {"beta": 0.1}},  # an optimizer section is any framework's
     r"^not a GRPO config of TRL, verl, OpenRLHF or ours: its keys are model, optimizer, dpo, and it has no"),
    ({"learning_rate": 1e-6, "num_generations": 8, "actor_rollout_ref": {"rollout": {"n": 8}}},
     r"mixes TRL keys \(learning_rate, num_generations\) with verl's \(actor_rollout_ref\)"),
    (verl_tree() | {"algorithm": {"adv_estimator": "gae"}}, "a critic.s value baseline"),
    (verl_tree(ppo_mini_batch_size=2048), "exceeds data.train_batch_size"),
    ({"actor_rollout_ref": {"rollout": {"n": 8}}, "algorithm": {"adv_estimator": "grpo"}}, "needs data.train_batch_size"),
])
def test_impossible_or_foreign_configs_are_one_config_error(cfg, needle):
    with pytest.raises(ConfigError, match=needle):
        read_run_config(cfg)


@pytest.mark.parametrize("epochs", [1, 2])
def test_a_mini_batch_past_the_rollout_under_dynamic_batching_is_one_mini_batch(epochs):
    """verl refuses ppo_mini_batch_size > data.train_batch_size only without use_dynamic_bsz (ActorConfig.validate,
    verl 0.9.1; audit s39c: a run its authors made was refused): with it, the rollout is one mini-batch, so T is
    ppo_epochs, as verl's update loop (`verl_schedule` with the mini-batch capped at the rollout) counts, and said."""
    setup = read_run_config(verl_tree(ppo_mini_batch_size=2048, use_dynamic_bsz=True, ppo_epochs=epochs))
    assert setup.hparams.refresh_interval == verl_schedule(1024, 1024, epochs) == epochs
    assert any("under use_dynamic_bsz, which verl allows" in n for n in setup.notes)


def test_unreadable_files_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        read_run_config(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        read_run_config(bad)
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing here\n")
    with pytest.raises(ConfigError, match="is empty"):
        read_run_config(empty)
    for name in ("empty.json", "empty.toml", "blank.yaml"):  # one message whatever the format
        (tmp_path / name).write_text(" \n")
        with pytest.raises(ConfigError, match="is empty"):
            read_run_config(tmp_path / name)
    listed = tmp_path / "list.yaml"
    listed.write_text("- 1\n- 2\n")
    with pytest.raises(ConfigError, match="one mapping"):
        read_run_config(listed)
    (tmp_path / "c.json").write_text(json.dumps({"hparams": {"lr": 0.1}}))  # a diagnose --json output
    assert read_run_config(tmp_path / "c.json").hparams.lr == 0.1


def test_the_restated_trainer_defaults_are_the_trainers():
    """The prediction layer restates `TrainConfig`'s defaults and the objectives' clips (it sits below
    `train/` and beside `objectives/`): they must stay equal."""
    import dataclasses

    from gspo_dynamics.objectives import OBJECTIVE_CLIPS
    from gspo_dynamics.predict import _frameworks as _configs
    from gspo_dynamics.train.config import TrainConfig

    defaults = {f.name: f.default for f in dataclasses.fields(TrainConfig)}
    assert {k: defaults[k] for k in _configs.TRAINER_DEFAULTS} == _configs.TRAINER_DEFAULTS
    assert set(defaults) == _configs.TRAINER_FIELDS  # a key outside them is refused, as `train --config` refuses it
    assert dict(OBJECTIVE_CLIPS) == _configs.OBJECTIVE_CLIPS


def test_hydra_style_overrides_on_a_verl_config(tmp_path):
    """verl's defaults are a critic run (gae, n = 1); a GRPO run script overrides them on its command
    line: the same overrides turn the file into the group run they describe."""
    import yaml

    tree = verl_tree()
    tree["algorithm"]["adv_estimator"] = "gae"
    tree["actor_rollout_ref"]["rollout"]["n"] = 1
    path = tmp_path / "ppo_trainer.yaml"
    path.write_text(yaml.safe_dump(tree))
    with pytest.raises(ConfigError, match="a critic.s value baseline"):
        read_run_config(path)
    hp = read_run_config(path, overrides=["algorithm.adv_estimator=grpo", "actor_rollout_ref.rollout.n=8",
                                          "actor_rollout_ref.actor.optim.lr=3e-6", "+actor_rollout_ref.actor.ppo_epochs=2"]).hparams
    assert (hp.group_size, hp.lr, hp.refresh_interval) == (8, 3e-6, 8)


@pytest.mark.parametrize("override, needle", [("lr", "key=value"), ("a..b=1", "key=value"), ("data.train_batch_size.x=1", "holds a value"),
                                               ("data.train_batch_size=[1", "not valid YAML")])
def test_bad_overrides_are_config_errors(override, needle):
    with pytest.raises(ConfigError, match=needle):
        read_run_config(verl_tree(), overrides=[override])


@pytest.mark.parametrize("name, text, needle", [
    ("trainer_state.json", json.dumps({"global_step": 30, "max_steps": 30, "train_batch_size": 8,
                                       "log_history": [{"step": 1, "reward": 0.1}]}), "trainer_state.json, a training log"),
    ("metrics.jsonl", '{"step": 1, "reward": 0.1}\n{"step": 2, "reward": 0.2}\n', "one JSON object per line: a training log"),
    ("size.json", json.dumps({"max_steps": 100, "num_processes": 4}), "no GRPO hyperparameter, only max_steps, num_processes"),
])
def test_a_training_log_given_as_a_config_is_one_config_error(tmp_path, name, text, needle):
    """A TRL trainer_state.json holds max_steps and train_batch_size beside its log_history: a log, not a config of
    defaults; a JSONL log is named as one; a dict of run-size keys alone has no hyperparameter."""
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ConfigError, match=needle):
        read_run_config(path)


def test_a_device_count_for_a_config_whose_batch_is_global_is_one_config_error():
    for cfg in (verl_tree(), {"task": "count", "model": "100k", "objective": "grpo"}, {"lr": 0.1, "group_size": 8}):
        with pytest.raises(ConfigError, match="--devices counts the processes of a TRL config"):
            read_run_config(cfg, devices=4)


def test_verl_clip_ratio_low_and_high_given_leave_clip_ratio_unread():
    """With both bounds given, clip_ratio is not read: no note of its default; with one bound, the other is
    clip_ratio's (its default said)."""
    both = read_run_config(verl_tree(clip_ratio_low=0.2, clip_ratio_high=0.28))
    assert (both.hparams.clip_low, both.hparams.clip_high) == (0.2, 0.28)
    assert not any("clip_ratio not given" in n for n in both.notes)
    one = read_run_config(verl_tree(clip_ratio_high=0.28))
    assert (one.hparams.clip_low, one.hparams.clip_high) == (0.2, 0.28)
    assert any("clip_ratio not given" in n for n in one.notes)


def test_an_override_of_a_key_no_framework_has_is_refused_and_one_it_does_not_read_is_named():
    """--set of a key the framework does not have is refused, as a key of the file is, naming the --set and the
    nearest known key; one the framework has but the mapping does not read is applied and named; a read key is not."""
    with pytest.raises(ConfigError, match=r"verl's config has no key --set actor_rollout_ref\.actor\.ppo_epoch "
                                          r"\(did you mean actor_rollout_ref\.actor\.ppo_epochs\?\)"):
        read_run_config(verl_tree(), overrides=["actor_rollout_ref.actor.ppo_epoch=4"])
    with pytest.raises(ConfigError, match=r"no field --set learnig_rate \(did you mean learning_rate\?\)"):
        read_run_config({"learning_rate": 1e-6}, overrides=["learnig_rate=3e-6"])
    with pytest.raises(ConfigError, match=r"our trainer's config has no field --set optim: "):
        read_run_config({"task": "count", "model": "100k", "objective": "grpo"}, overrides=["optim.foo=3"])
    setup = read_run_config(verl_tree(), overrides=["trainer.logger=console", "actor_rollout_ref.rollout.n=16"])
    assert setup.hparams.group_size == 16
    assert "--set trainer.logger: not read by the verl mapping (a key the theory does not use)" in setup.notes
    assert not any("rollout.n: not read" in n for n in setup.notes)
    allowed = read_run_config({"learning_rate": 1e-6}, overrides=["learnig_rate=3e-6"], allow_unknown=True)
    assert allowed.hparams.lr == 1e-6 and allowed.unknown == ("learnig_rate",) and allowed.nearest == ("learning_rate",)


def test_a_misspelt_key_is_refused_naming_the_nearest_key_of_its_framework(tmp_path):
    """TRL's GRPOConfig refuses a field it does not have, and so does the mapping: `learnig_rate: 1e-3` read on would
    be a run at TRL's default 1e-6. Each framework's vocabulary: TRL's tables, verl's dotted keys (a dynamics
    subtree's, or a section no verl config has), our trainer's fields, the theory's own names."""
    cases = [({"learnig_rate": 1e-3, "num_generations": 8}, "TRL's GRPOConfig has no field", "learnig_rate",
              "learning_rate"),
             (verl_tree() | {"actor_rollout_ref": {**verl_tree()["actor_rollout_ref"], "actr": {"optim": {"lr": 1e-5}}}},
              "verl's config has no key", "actor_rollout_ref.actr.optim.lr", "actor_rollout_ref.actor.optim.lr"),
             ({"task": "count", "model": "100k", "objective": "grpo", "group_sise": 4},
              "our trainer's config has no field", "group_sise", "group_size"),
             ({"lr": 0.1, "refresh_intervall": 4}, r"the theory's names \(.*\) hold no key", "refresh_intervall",
              "refresh_interval")]
    for cfg, framework, key, near in cases:
        with pytest.raises(ConfigError, match=rf"^{framework} {re.escape(key)} \(did you mean "
                                              rf"{re.escape(near)}\?\): .* give --allow-unknown"):
            read_run_config(cfg)
        setup = read_run_config(cfg, allow_unknown=True)
        assert setup.unknown == (key,) and setup.nearest == (near,)
        assert setup.brief_lines()[0] == f"unknown keys (not read, --allow-unknown): {key} (did you mean {near}?)"
    allowed = read_run_config(cases[0][0], allow_unknown=True)
    assert allowed.hparams.lr == 1e-6  # read on: the key meant keeps its default, which the first lines say
    assert allowed.brief_lines()[1].startswith("assumed, not in the config (TRL's defaults): learning_rate 1e-06, ")
    with pytest.raises(ConfigError, match=r"no hyperparameter this tool knows .*learnig_rate \(did you mean learning_rate"):
        read_run_config({"learnig_rate": 1e-3})  # no key of any framework: the nearest named all the same


def test_the_refusal_says_what_a_typo_costs_not_that_the_key_was_meant():
    with pytest.raises(ConfigError, match=r"has no field learnig_rate \(did you mean learning_rate\?\): a misspelt key "
                                          r"leaves the one meant at its default, and a fork's own key is not read; "
                                          r"correct it, or give --allow-unknown"):
        read_run_config({"learnig_rate": 1e-3, "num_generations": 8})


def test_the_defaults_taken_for_the_keys_the_verdict_rests_on_are_kept_apart():
    """lr, G, T's keys and the run's length, where the config leaves them to the framework's default: each named
    with its value (steps_per_generation's default is the accumulation; a generation_batch_size gives it)."""
    trl = read_run_config({"learning_rate": 1e-6, "gradient_accumulation_steps": 4})
    assert trl.assumed == (("num_generations", 8), ("steps_per_generation", 4), ("num_iterations", 1),
                           ("max_steps", -1), ("beta", 0.0), ("processes", 1))  # N rests on the process count
    assert "beta 0 (older TRL releases 0.04)" in trl.brief_lines()[0]  # a default that moved is said so
    assert read_run_config({"learning_rate": 1e-6, "num_generations": 8, "generation_batch_size": 16, "num_iterations": 1,
                            "gradient_accumulation_steps": 1, "max_steps": 10, "beta": 0.0}, devices=1).assumed == ()
    tree = verl_tree()
    del tree["actor_rollout_ref"]["actor"]["optim"], tree["actor_rollout_ref"]["actor"]["ppo_epochs"]
    verl = read_run_config(tree)
    assert [k for k, _ in verl.assumed] == ["actor_rollout_ref.actor.optim.lr", "actor_rollout_ref.actor.ppo_epochs",
                                           "trainer.total_training_steps"]
    assert verl.brief_lines()[0] == ("assumed, not in the config (verl's defaults): actor_rollout_ref.actor.optim.lr "
                                     "1e-06, actor_rollout_ref.actor.ppo_epochs 1, trainer.total_training_steps unset "
                                     "(the run's length unknown)")
    # the keys in force that change the dynamics and are not modelled are named next (verl's optimizer defaults here)
    assert len(verl.brief_lines()) == 1 and verl.unmodelled_lines() == [
        "not modelled, each changes the dynamics (--explain says how): "
        + ", ".join(f"{k} {v:g} (verl's default)" for k, v, _ in verl.unmodelled)]  # the config gives neither
    given = verl_tree(grad_clip=0.5)
    assert read_run_config(given).unmodelled_lines()[0].endswith("actor_rollout_ref.actor.grad_clip 0.5")
    assert read_run_config(tree).brief_lines(skip=("trainer.total_training_steps",))[0].endswith("ppo_epochs 1")
    assert read_run_config({"lr": 0.1, "refresh_interval": 2, "group_size": 8}).brief_lines() == []


def test_our_trainers_toml_config_is_read_as_train_reads_it(tmp_path):
    """`train --config run.toml` takes TOML, so predict --config does: the same setup as the JSON; a broken TOML
    file is one ConfigError."""
    fields = {"task": "count", "model": "100k", "objective": "grpo", "lr": 3e-3, "steps_per_generation": 4}
    toml = tmp_path / "run.toml"
    toml.write_text('task = "count"\nmodel = "100k"\nobjective = "grpo"\nlr = 3e-3\nsteps_per_generation = 4\n')
    assert read_run_config(toml).hparams == read_run_config(fields).hparams
    toml.write_text("task = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        read_run_config(toml)


def test_the_loss_is_named_as_the_config_names_it():
    """RunSetup.loss (predict._prior (4) matches runs on it): our objective; TRL's loss_type with its ratio level, none
    without a loss_type (its default moved between releases); verl's loss_mode and loss_agg_mode, defaults where
    unset; none for the theory's field names. In --json's config."""
    assert read_run_config({"task": "count", "model": "100k", "objective": "dr_grpo"}).loss == "dr_grpo"
    trl = {"learning_rate": 1e-6, "num_generations": 8, "loss_type": "dapo", "importance_sampling_level": "sequence"}
    assert read_run_config(trl).loss == "dapo (sequence-level ratio)"
    assert read_run_config({**trl, "importance_sampling_level": None}).loss == "dapo (token-level ratio)"
    assert read_run_config({"learning_rate": 1e-6, "num_generations": 8}).loss is None
    verl = {"actor_rollout_ref": {"actor": {"optim": {"lr": 1e-6}, "ppo_mini_batch_size": 4,
                                            "policy_loss": {"loss_mode": "gspo"}}, "rollout": {"n": 8}},
            "data": {"train_batch_size": 4}, "algorithm": {"adv_estimator": "grpo"}}
    assert read_run_config(verl).loss == "gspo (token-mean)"
    verl["actor_rollout_ref"]["actor"]["policy_loss"]["loss_mode"] = "${trainer.experiment_name}"  # followed
    verl["trainer"], verl["actor_rollout_ref"]["actor"]["loss_agg_mode"] = {"experiment_name": "vanilla"}, "seq-mean-token-sum"
    assert read_run_config(verl).loss == "vanilla (seq-mean-token-sum)"
    with pytest.raises(ConfigError, match="loss_type must be a name"):
        read_run_config({**trl, "loss_type": ["dapo"]})
    with pytest.raises(ConfigError, match="adv_estimator"):
        read_run_config({**verl, "algorithm": {"adv_estimator": ["grpo"]}})
    assert read_run_config({"lr": 0.1, "group_size": 8}).loss is None
    assert read_run_config({**trl}).to_json()["loss"] == "dapo (sequence-level ratio)"


def test_our_trainer_corpus_label_reads_as_its_config():
    """train.corpus writes label.json = {mode, note, config: the TrainConfig}: read as the config it holds."""
    config = {"task": "count", "model": "100k", "objective": "gspo", "lr": 1e-3, "steps_per_generation": 4}
    setup = read_run_config({"mode": "stable", "note": "a healthy run", "config": config})
    assert setup.framework == "gspo-dynamics trainer" and setup.loss == "gspo" and setup.hparams.refresh_interval == 4


def test_cispo_is_a_clip_that_keeps_the_gradient_in_every_framework():
    """Hyperparams.clip_mode "cap" for CISPO (our objective, TRL's loss_type, verl's loss_mode), "stop" for PPO-style
    losses; theory.collapse.band_edge caps the displacement under "stop" with a correction, and under "cap" only with a
    held success rate (equation (10), tested in tests/theory/test_collapse.py): none without one; a bad clip_mode is
    one ConfigError."""
    from gspo_dynamics.theory import collapse
    from gspo_dynamics.theory.hyperparams import Hyperparams

    ours = {"task": "count", "model": "100k", "lr": 1e-3}
    trl = {"learning_rate": 1e-6, "num_generations": 8}
    verl = {"actor_rollout_ref": {"actor": {"optim": {"lr": 1e-6}, "ppo_mini_batch_size": 4,
                                            "policy_loss": {"loss_mode": "cispo"}}, "rollout": {"n": 8}},
            "data": {"train_batch_size": 4}, "algorithm": {"adv_estimator": "grpo"}}
    capped = [read_run_config({**ours, "objective": "cispo"}), read_run_config({**trl, "loss_type": "cispo"}),
              read_run_config(verl)]
    assert all(s.hparams.clip_mode == "cap" and collapse.band_edge(s.hparams) is None for s in capped)
    grpo = read_run_config({**ours, "objective": "grpo"}).hparams
    assert grpo.clip_mode == "stop" and collapse.band_edge(grpo) == grpo.clip_high
    assert collapse.band_edge(read_run_config({**ours, "objective": "pg"}).hparams) is None  # no correction
    assert read_run_config({**trl, "loss_type": "dapo"}).hparams.clip_mode == "stop"
    assert read_run_config({"lr": 0.1, "clip_mode": "cap"}).hparams.clip_mode == "cap"
    with pytest.raises(ConfigError, match="clip mode"):
        Hyperparams(lr=0.1, clip_mode="soft")


def test_the_bandit_refuses_a_clip_it_does_not_implement():
    """The simulator and the bandit's drive implement PPO's clip only: a "cap" config is one ConfigError, never a
    silent run under "stop"."""
    from gspo_dynamics.sim._base import check_configs
    from gspo_dynamics.theory.bandit import reward_drive
    from gspo_dynamics.theory.hyperparams import Hyperparams

    cap = Hyperparams(lr=0.1, refresh_interval=2, group_size=8, correction="token", clip_mode="cap")
    with pytest.raises(ConfigError, match="clip"):
        reward_drive(0.0, 0.0, cap)
    with pytest.raises(ConfigError, match="clip_mode"):
        check_configs([cap])  # every simulator engine checks its configs here


@pytest.mark.parametrize("epsilon_high, correction, eps_high", [(5.0, "token", 4.0), (1.28, "token", 0.28),
                                                                  (None, "none", 0.2), (1.0, "none", 1.0)])
def test_trls_cispo_caps_the_weight_at_epsilon_high_itself(epsilon_high, correction, eps_high):
    """TRL's CISPO weight is sg[min(w, epsilon_high)] with no lower bound: the theory's eps_high is epsilon_high - 1,
    its eps_low the no-floor limit (so theory.collapse (10) can cap an absorbed run); at epsilon_high <= 1 (unset: TRL
    takes epsilon, 0.2) every token's weight is capped from the first step, read as pg; each said in a note."""
    from gspo_dynamics.theory import collapse

    cfg = {"learning_rate": 1e-6, "num_generations": 8, "loss_type": "cispo"}
    setup = read_run_config(cfg if epsilon_high is None else {**cfg, "epsilon_high": epsilon_high})
    hp = setup.hparams
    assert (hp.correction, hp.clip_mode) == (correction, "cap")
    assert hp.clip_high == pytest.approx(eps_high) and 1 - hp.clip_low <= collapse.WEIGHT_FLOOR_MAX
    assert any("loss_type cispo" in n for n in setup.notes)
    assert (collapse.band_edge(hp, 0.99) is None) is (correction == "none")


def test_a_config_of_another_release_is_refused_in_one_line_naming_five_keys_and_the_count():
    """A dump with dozens of keys this tool's tables lack (a Hydra dump of another verl release): one line naming the
    first UNKNOWN_SHOWN and the count, saying what --allow-unknown does; read past, the first lines name five and say
    the JSON lists all."""
    from gspo_dynamics.predict._config_checks import UNKNOWN_SHOWN

    cfg = {"learning_rate": 1e-6, "num_generations": 8, **{f"release_field_{i}": i for i in range(12)}}
    with pytest.raises(ConfigError) as err:
        read_run_config(cfg)
    text = str(err.value)
    assert "\n" not in text and f"and {12 - UNKNOWN_SHOWN} more" in text and "--allow-unknown to read on" in text
    assert sum(f"release_field_{i}" in text.split(" and ")[0] for i in range(12)) == UNKNOWN_SHOWN
    setup = read_run_config(cfg, allow_unknown=True)
    assert len(setup.unknown) == 12
    line = next(line for line in setup.brief_lines() if line.startswith("unknown keys"))
    assert f"and {12 - UNKNOWN_SHOWN} more (--json lists them)" in line


def test_trls_refusal_rests_on_the_process_count_so_a_given_count_decides_it():
    """open-r1's code recipe: 16 x 4 = 64 completions per generation on one process, not whole groups of 14; it runs
    on 7 processes (448 = 32 x 14). With the count assumed the refusal says so; given, it decides."""
    from gspo_dynamics.predict import read_run_config

    cfg = {"learning_rate": 5e-6, "num_generations": 14, "per_device_train_batch_size": 16,
           "gradient_accumulation_steps": 4, "max_steps": 100}
    assert read_run_config(cfg).refused[0].startswith("TRL refuses this config on 1 process (the count assumed: "
                                                       "--devices N gives yours; 7 processes, or a multiple")
    assert not read_run_config(cfg, devices=7).refused
    assert read_run_config(cfg, devices=2).refused[0].startswith("TRL refuses this config: its generation batch")
    saved = dict(cfg, steps_per_generation=4, generation_batch_size=64)  # a saved config: the batch is fixed
    assert "processes, or a multiple" not in read_run_config(saved).refused[0]


def test_a_generation_batch_that_is_not_whole_groups_is_said_first_as_trl_refuses_it(tmp_path):
    """per_device_train_batch_size 1, accumulation 1, num_generations 6 (the Unsloth notebooks', audit H): TRL's
    GRPOConfig raises on it, Unsloth raises the batch to 6. The answer's first lines say so, and read whole groups."""
    from gspo_dynamics.predict import read_run_config

    setup = read_run_config({"learning_rate": 5e-6, "num_generations": 6, "per_device_train_batch_size": 1,
                             "gradient_accumulation_steps": 1, "max_steps": 250})
    assert setup.refused and setup.refused[0].startswith("TRL refuses this config on 1 process (the count assumed: "
                                                         "--devices N gives yours; 6 processes, or a multiple, hold whole "
                                                         "groups)")
    assert "= 1, is not a multiple of num_generations 6" in setup.refused[0]
    assert setup.brief_lines()[0] == setup.refused[0] and setup.brief_json()["refused"] == list(setup.refused)
    assert setup.hparams.num_groups == 1
    whole = read_run_config({"learning_rate": 5e-6, "num_generations": 6, "per_device_train_batch_size": 6,
                             "max_steps": 250})
    assert whole.refused == () and whole.brief_json()["refused"] == []


def test_no_lower_clip_reads_none_not_the_theorys_stand_in():
    """TRL's cispo (or epsilon >= 1) sets no lower clip: the theory stands in eps_low just below 1; the config line says
    'clip [none, 0.2]', not 'clip [0.999999, 0.2]' (audit H F8)."""
    from gspo_dynamics.predict import hparams_text
    from gspo_dynamics.predict._config_forecast import _low_clip

    setup = read_run_config({"learning_rate": 1e-6, "num_generations": 8, "per_device_train_batch_size": 8,
                             "epsilon": 1.0, "epsilon_high": 0.2})
    assert setup.hparams.clip_low > 0.9999 and _low_clip(setup.hparams.clip_low) == "none"
    assert "clip [none, 0.2]" in hparams_text(setup.hparams)


def test_a_verl_config_without_rollout_n_says_what_verls_default_means():
    tree = verl_tree()
    del tree["actor_rollout_ref"]["rollout"]["n"]
    with pytest.raises(ConfigError, match=r"leaves actor_rollout_ref.rollout.n unset, whose default in verl is 1: one "
                                          r"response per prompt, no group"):
        read_run_config(tree)


def test_a_forks_key_named_as_ours_is_read_past_with_allow_unknown():
    """A TRL fork's own `advantage:` is one of gspo-dynamics' names: refused as a mix, saying --allow-unknown reads
    the TRL config without it; with it, the config reads as TRL's and the key is named as unknown."""
    cfg = {"learning_rate": 1e-6, "num_generations": 8, "advantage": "gopo"}
    with pytest.raises(ConfigError, match="--allow-unknown reads the TRL config without it"):
        read_run_config(cfg)
    setup = read_run_config(cfg, allow_unknown=True)
    assert setup.framework == "TRL GRPOConfig" and "advantage" in setup.unknown and setup.hparams.group_size == 8


def test_the_process_count_a_generation_batch_rests_on_is_said_where_assumed():
    """T = generation_batch_size / (per_device_train_batch_size x processes x gradient_accumulation_steps), and the
    groups per step N: where --devices is not given, the 1 process assumed is in the first lines."""
    cfg = {"learning_rate": 1e-6, "num_generations": 8, "per_device_train_batch_size": 8, "beta": 0.0,
           "gradient_accumulation_steps": 4, "generation_batch_size": 1024, "num_iterations": 1, "max_steps": 300}
    one, four = read_run_config(cfg), read_run_config(cfg, devices=4)
    assert (one.hparams.refresh_interval, four.hparams.refresh_interval) == (32, 8)
    assert one.assumed == (("processes", 1),) and four.assumed == ()
    assert "processes 1 (--devices N gives yours" in one.brief_lines()[0]
    del cfg["generation_batch_size"]  # T does not rest on the count; the groups per step still do
    assert read_run_config(cfg).assumed == (("steps_per_generation", 4), ("processes", 1))


def test_a_hydra_config_composing_files_of_its_own_is_refused_saying_so():
    """`defaults: [gspo_shared, _self_]`: the file holds only what it overrides; read alone, the rest would be verl's
    defaults unsaid (vero's GSPO config: 'adv_estimator not given: gae'). verl's own bases and groups compose fine."""
    tree = verl_tree()
    with pytest.raises(ConfigError, match=r"composes other files through Hydra's defaults list \(gspo_shared\)"):
        read_run_config(tree | {"defaults": ["gspo_shared", "_self_"]})
    ok = tree | {"defaults": ["ppo_trainer", {"actor@actor_rollout_ref.actor": "dp_actor"}, "_self_"]}
    assert read_run_config(ok).hparams.group_size == 8


def test_an_unread_lr_schedule_is_said_in_the_first_lines():
    """max_steps -1 (the epochs over the dataset) with a decaying schedule: every number rests on the peak lr, said
    first; with max_steps absent the assumed line says the length is unknown, and the schedule line is not repeated."""
    cfg = {"learning_rate": 1e-6, "num_generations": 8, "steps_per_generation": 1, "num_iterations": 1,
           "gradient_accumulation_steps": 1, "beta": 0.0, "max_steps": -1, "lr_scheduler_type": "cosine"}
    lines = read_run_config(cfg, devices=1).brief_lines()
    assert lines == ["lr schedule not read: lr_scheduler_type cosine decays the lr to its end over the run, whose length "
                     "is unknown here (max_steps -1 follows the epochs and the dataset): the forecasts read the lr at its "
                     "peak (give --set max_steps=N)"]
    del cfg["max_steps"]
    assert not any(line.startswith("lr schedule not read") for line in read_run_config(cfg).brief_lines())


def test_a_composed_hydra_config_reads_the_keys_its_run_added_as_added(tmp_path):
    """A run's `.hydra/config.yaml` holds the keys its launch added with `+key=`; the `overrides.yaml` Hydra wrote
    beside it records them so: read as added (named, not refused as typos), as the launch script's are."""
    import yaml

    folder = tmp_path / "outputs" / ".hydra"
    folder.mkdir(parents=True)
    tree = verl_tree()
    tree["data"]["with_experience_replay"] = True
    (folder / "config.yaml").write_text(yaml.safe_dump(tree))
    with pytest.raises(ConfigError, match="with_experience_replay"):
        read_run_config(folder / "config.yaml")
    (folder / "overrides.yaml").write_text("- algorithm.adv_estimator=grpo\n- +data.with_experience_replay=True\n")
    setup = read_run_config(folder / "config.yaml")
    assert setup.added == ("data.with_experience_replay",) and setup.unknown == ()


def test_gspo_without_a_loss_type_says_first_that_trls_default_weighs_by_length():
    setup = read_run_config({"learning_rate": 1e-6, "num_generations": 8, "importance_sampling_level": "sequence"},
                            devices=1)
    assert ("loss_type", "dapo") in setup.assumed and "not GSPO's per-sequence objective" in setup.brief_lines()[0]
    given = read_run_config({"learning_rate": 1e-6, "importance_sampling_level": "sequence", "loss_type": "grpo"}, devices=1)
    assert not any(k == "loss_type" for k, _ in given.assumed)


def test_an_adam_lr_no_llm_trains_with_is_said_first_and_read_as_given():
    """TRL learning_rate 5 (an exponent lost): the first line says so; the theory's own names (a bandit's logits
    train at lr 1) are left alone."""
    setup = read_run_config({"learning_rate": 5, "num_generations": 8})
    assert setup.hparams.lr == 5 and setup.brief_lines()[0].startswith(
        "learning_rate 5 with Adam moves every weight by about 5 a step: no LLM trains so")
    assert setup.brief_json()["implausible"] == [setup.brief_lines()[0]]
    assert read_run_config({"learning_rate": 5, "num_generations": 8}, run_steps=100).implausible  # mapped again
    assert read_run_config({"learning_rate": 5e-6, "num_generations": 8}).implausible == ()
    assert read_run_config({"lr": 1.0, "group_size": 8, "optimizer": "adam"}).implausible == ()
