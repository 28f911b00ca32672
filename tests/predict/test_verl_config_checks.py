"""A verl config as verl writes it: OmegaConf interpolations resolved (${a.b}, ${.sibling}, ${oc.select:path,default},
${oc.env:NAME,default}) or refused in one sentence naming the key; numeric strings read as numbers; every key checked
against the installed verl's own schema (`predict._verl_schema`), a typo named with its nearest key; an unset
adv_estimator said as verl's default. Through the library and the CLI (exit 2, one line, no traceback)."""

from __future__ import annotations

import json

import pytest
import yaml

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.cli.main import main
from gspo_dynamics.predict import _verl_schema
from gspo_dynamics.predict._config_checks import nearest
from gspo_dynamics.predict._configs import read_run_config

BASE = {"algorithm": {"adv_estimator": "grpo"}, "data": {"train_batch_size": 64},
        "trainer": {"total_training_steps": 100},
        "actor_rollout_ref": {"actor": {"ppo_mini_batch_size": 16, "optim": {"lr": 1e-6}}, "rollout": {"n": 8}}}
ACTOR = "actor_rollout_ref.actor."
needs_verl = pytest.mark.skipif(_verl_schema.schema() is None, reason="verl is not installed: its schema is not there")


def with_(**dotted) -> dict:
    """BASE with dotted keys set (values as YAML would give them)."""
    cfg = json.loads(json.dumps(BASE))
    for key, value in dotted.items():
        *path, last = key.split("__")
        node = cfg
        for part in path:
            node = node.setdefault(part, {})
        node[last] = value
    return cfg


def cli(tmp_path, capsys, cfg: dict, *args: str, command: str = "predict") -> tuple[int, str]:
    path = tmp_path / "ppo_trainer.yaml"
    path.write_text(yaml.safe_dump(cfg))
    if command == "diagnose":
        log = tmp_path / "log.jsonl"
        log.write_text("".join(json.dumps({"step": s, "reward": 0.1 + 0.01 * s}) + "\n" for s in range(1, 41)))
        code = main(["diagnose", str(log), "--config", str(path), *args])
    else:
        code = main(["predict", "--config", str(path), *args])
    return code, capsys.readouterr().err.strip()


# ---- 1. interpolations and numeric strings ------------------------------------------------------
def test_oc_select_of_itself_takes_its_default_as_verls_yaml_writes_it():
    cfg = with_(actor_rollout_ref__actor__ppo_epochs="${oc.select:actor_rollout_ref.actor.ppo_epochs,1}")
    assert read_run_config(cfg).hparams.refresh_interval == 64 // 16
    cfg = with_(actor_rollout_ref__actor__ppo_epochs="${oc.select:trainer.total_training_steps,1}")  # the path's value
    assert read_run_config(cfg).hparams.refresh_interval == 100 * 64 // 16


def test_oc_env_reads_the_variable_else_its_default(monkeypatch):
    cfg = with_(actor_rollout_ref__rollout__n="${oc.env:GSPO_TEST_N,8}")
    monkeypatch.delenv("GSPO_TEST_N", raising=False)
    assert read_run_config(cfg).hparams.group_size == 8
    monkeypatch.setenv("GSPO_TEST_N", "4")
    assert read_run_config(cfg).hparams.group_size == 4


def test_references_absolute_and_relative_are_followed():
    cfg = with_(actor_rollout_ref__actor__ppo_epochs="${.ppo_epochs_src}", actor_rollout_ref__actor__ppo_epochs_src=2)
    with pytest.raises(ConfigError, match="ppo_epochs_src"):  # not a verl key: refused before anything is read
        read_run_config(cfg)
    cfg = with_(actor_rollout_ref__actor__optim__lr="${..clip_ratio}", actor_rollout_ref__actor__clip_ratio=0.001)
    assert read_run_config(cfg).hparams.lr == 0.001
    cfg = with_(actor_rollout_ref__rollout__n="${trainer.total_training_steps}")
    assert read_run_config(cfg).hparams.group_size == 100


def test_numeric_strings_are_their_numbers_and_other_strings_one_error():
    assert read_run_config(with_(actor_rollout_ref__actor__ppo_epochs="2")).hparams.refresh_interval == 8
    assert read_run_config(with_(actor_rollout_ref__actor__optim__lr="1e-5")).hparams.lr == 1e-5
    with pytest.raises(ConfigError, match=r"ppo_epochs' must be a positive integer, got 'two'"):
        read_run_config(with_(actor_rollout_ref__actor__ppo_epochs="two"))


def test_an_unresolvable_interpolation_is_one_error_naming_the_key(monkeypatch):
    monkeypatch.delenv("GSPO_TEST_UNSET", raising=False)
    for value in ("${oc.env:GSPO_TEST_UNSET}", "${data.not_there}", "${oc.create:{}}"):
        with pytest.raises(ConfigError, match=r"^actor_rollout_ref\.rollout\.n: .* cannot resolve"):
            read_run_config(with_(actor_rollout_ref__rollout__n=value))


@pytest.mark.parametrize("command", ["predict", "diagnose"])
@pytest.mark.parametrize("key, value, ok", [
    ("ppo_epochs", "${oc.select:actor_rollout_ref.actor.ppo_epochs,1}", True),
    ("ppo_epochs", "2", True),
    ("ppo_epochs", "two", False),
    ("ppo_epochs", "${oc.env:GSPO_TEST_UNSET}", False),
])
def test_the_cli_reads_them_or_says_one_line(tmp_path, capsys, monkeypatch, command, key, value, ok):
    monkeypatch.delenv("GSPO_TEST_UNSET", raising=False)
    code, err = cli(tmp_path, capsys, with_(**{"actor_rollout_ref__actor__" + key: value}), command=command)
    if ok:
        assert code == 0 and "Traceback" not in err
    else:
        assert code == 2 and len(err.splitlines()) == 1 and err.startswith("gspo-dynamics: error: ")
        assert ACTOR + key in err and value in err


def test_the_cli_reads_oc_env_rollout_n(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("GSPO_TEST_N", "4")
    code, _ = cli(tmp_path, capsys, with_(actor_rollout_ref__rollout__n="${oc.env:GSPO_TEST_N,8}"), "--json")
    assert code == 0


# ---- 2. every key against verl's schema ---------------------------------------------------------
TYPOS = [("actor_rollout_ref.rollout.nn", 8, "actor_rollout_ref.rollout.n"),
         ("trainer.total_training_step", 5, "trainer.total_training_steps"),
         ("actor_rollout_ref.rollout.temprature", 0.7, "actor_rollout_ref.rollout.temperature"),
         ("actor_rollout_ref.rollout.gpu_memory_utilisation", 0.5, "actor_rollout_ref.rollout.gpu_memory_utilization"),
         ("data.max_prompt_lenght", 512, "data.max_prompt_length"),
         ("trainner.critic_warmup", 0, "trainer.critic_warmup"),
         (ACTOR + "optim.learning_rate", 1e-5, ACTOR + "optim.lr")]


@needs_verl
@pytest.mark.parametrize("key, value, meant", TYPOS)
def test_a_typo_anywhere_is_refused_with_its_nearest_key(tmp_path, capsys, key, value, meant):
    code, err = cli(tmp_path, capsys, BASE, "--set", f"{key}={value}")
    assert code == 2 and len(err.splitlines()) == 1 and f"--set {key} (did you mean {meant}?)" in err
    cfg = with_(**{key.replace(".", "__"): value})
    with pytest.raises(ConfigError, match=rf"no key {key} \(did you mean {meant}\?\)"):
        read_run_config(cfg)
    assert key in read_run_config(cfg, allow_unknown=True).unknown  # read on past it


# an older verl's key for the train-inference importance weights (verl 0.5's actor.tis_imp_ratio_cap, 0.6's
# algorithm.rollout_is_*): refused, naming where 0.9.1 reads it, never its nearest spelling (tis_imp_ratio_cap's is
# the unrelated clip_ratio_c)
MOVED_KEYS = [(ACTOR + "tis_imp_ratio_cap", 2.0, "algorithm.rollout_correction.rollout_is_threshold, with rollout_is: token"),
              ("algorithm.rollout_is_level", "token", "algorithm.rollout_correction.rollout_is, token or sequence"),
              ("algorithm.rollout_is_threshold", 2.0, "algorithm.rollout_correction.rollout_is_threshold, the same value")]


@needs_verl
@pytest.mark.parametrize("key, value, where", MOVED_KEYS)
def test_an_older_releases_key_is_refused_naming_where_verl_reads_it_now(tmp_path, capsys, key, value, where):
    code, err = cli(tmp_path, capsys, with_(**{key.replace(".", "__"): value}))
    assert code == 2 and len(err.splitlines()) == 1
    assert f"{key} (an older verl's key: verl 0.9.1 reads {where})" in err and "did you mean" not in err
    assert where.split(",")[0] in _verl_schema.schema().keys  # the key named is one 0.9.1 has
    setup = read_run_config(with_(**{key.replace(".", "__"): value}), allow_unknown=True)
    assert setup.unknown == (key,) and setup.nearest == (where.split(",")[0],)


@needs_verl
def test_the_old_release_table_holds_only_keys_verl_0_9_1_does_not_have():
    """`_verl_history.OLD_KEYS` (scripts/verl_history.py, from verl's release tags): none is 0.9.1's or sorted by this
    tool's tables, each names a release (Search-R1 and TinyZero pin verl 0.1, whose FSDP config had grad_offload)."""
    from gspo_dynamics.predict._verl_fields import KNOWN
    from gspo_dynamics.predict._verl_history import OLD_KEYS

    schema = _verl_schema.schema()
    assert OLD_KEYS and not [k for k in OLD_KEYS if schema.knows(k) or k in KNOWN]
    assert all(v[0].isdigit() and v.count(".") >= 1 for v in OLD_KEYS.values())
    assert OLD_KEYS[ACTOR + "fsdp_config.grad_offload"] == "0.2.0.post2"  # removed by verl PR 284, before 0.3.0


@needs_verl
def test_an_older_releases_key_that_changes_no_step_is_named_so_not_refused(tmp_path, capsys):
    """verl 0.1's actor.fsdp_config.grad_offload is no typo of param_offload: read past without --allow-unknown, named
    once with the last release that has it, and not counted again among the keys that change no step."""
    cfg = with_(actor_rollout_ref__actor__fsdp_config__grad_offload=True, trainer__logger="console")
    setup = read_run_config(cfg)
    assert setup.unknown == () and ACTOR + "fsdp_config.grad_offload" in setup.ignored
    line = ("keys of older verl releases, removed since, not read (none changes a training step): "
            "actor_rollout_ref.actor.fsdp_config.grad_offload (a key of verl <= 0.2.0.post2)")
    assert line in setup.notes and not any("did you mean" in n for n in setup.notes)
    assert "1 keys change no training step" in " ".join(setup.notes)  # trainer.logger only
    code, err = cli(tmp_path, capsys, cfg)
    assert code == 0 and err == ""


@needs_verl
def test_an_older_actor_key_that_loads_weights_is_read_past_as_old():
    """verl <= 0.7.0's Megatron actor.load_weight loads the model at start: in the actor's subtree, yet no step."""
    setup = read_run_config(with_(actor_rollout_ref__actor__load_weight=True))
    assert setup.unknown == () and ACTOR + "load_weight" in setup.ignored
    assert any("actor_rollout_ref.actor.load_weight (a key of verl <= 0.7.0)" in n for n in setup.notes)


@needs_verl
def test_an_older_releases_key_in_the_dynamics_is_refused_as_old_not_as_a_typo(tmp_path, capsys):
    """verl 0.6's algorithm.rollout_is_veto_threshold acted on the loss: refused as a key of that release (read on, a
    run under 0.6 would differ unsaid), never with the nearest spelling of a 0.9.1 key."""
    key = "algorithm.rollout_is_veto_threshold"
    code, err = cli(tmp_path, capsys, with_(algorithm__rollout_is_veto_threshold=1e-4))
    assert code == 2 and f"{key} (a key of verl <= 0.6.0, removed since; not read)" in err and "did you mean" not in err
    setup = read_run_config(with_(algorithm__rollout_is_veto_threshold=1e-4), allow_unknown=True)
    assert setup.unknown == (key,) and setup.nearest == (None,)


@pytest.mark.parametrize("key, near", [(ACTOR + "chunk_noreduce", None), (ACTOR + "mask_adaptive", None),
                                       ("trainner.critic_warmup", "trainer.critic_warmup")])
def test_a_long_shared_prefix_alone_offers_no_nearest_key(key, near):
    known = {ACTOR + "tau_neg", ACTOR + "optim", "trainer.critic_warmup"}
    assert nearest(key, known) == near


@needs_verl
def test_an_unknown_sibling_is_said_before_the_missing_key():
    cfg = with_()
    cfg["actor_rollout_ref"]["rollout"] = {"nn": 8}
    with pytest.raises(ConfigError, match=r"rollout\.nn \(did you mean actor_rollout_ref\.rollout\.n\?\)"):
        read_run_config(cfg)


@needs_verl
@pytest.mark.parametrize("key", ["actor_rollout_ref.model.override_config.attn_implementation",
                                 "actor_rollout_ref.rollout.engine_kwargs.vllm.swap_space",
                                 "custom_reward_function.reward_kwargs.scale",
                                 ACTOR + "optim.override_optimizer_config.foreach",
                                 "data.apply_chat_template_kwargs.enable_thinking",
                                 "trainer.logger", "hydra.run.dir"])
def test_free_form_mappings_and_schema_keys_pass(key):
    assert read_run_config(with_(**{key.replace(".", "__"): 1})).unknown == ()


@needs_verl
def test_a_key_below_a_filled_mapping_is_checked():
    with pytest.raises(ConfigError, match="engine_kwargs.vlm"):
        read_run_config(with_(actor_rollout_ref__rollout__engine_kwargs__vlm={"swap_space": 4}))


def test_without_verl_the_notes_say_the_check_is_by_section(monkeypatch):
    monkeypatch.setattr(_verl_schema, "schema", lambda: None)
    setup = read_run_config(with_(trainer__total_training_step=5))  # read past: no schema to check it by
    assert any("install verl" in note for note in setup.notes)


def test_aliases_come_before_spelling():
    assert nearest(ACTOR + "optim.learning_rate", {ACTOR + "optim.lr", ACTOR + "optim.clip_grad"}) == ACTOR + "optim.lr"
    assert nearest("G", {"group_size", "lr"}) == "group_size" and nearest("T", {"refresh_interval"}) == "refresh_interval"
    assert nearest("learning_rate", {"lr", "group_size"}) == "lr"
    assert nearest("G", {"lr"}) is None  # an alias only where the framework has it


# ---- 3. an unset adv_estimator ------------------------------------------------------------------
def test_an_unset_adv_estimator_is_said_as_verls_default(tmp_path, capsys):
    cfg = with_()
    del cfg["algorithm"]
    code, err = cli(tmp_path, capsys, cfg)
    assert code == 2 and len(err.splitlines()) == 1
    assert "algorithm.adv_estimator not given: verl's default is gae, a critic's value baseline (PPO)" in err
    assert "set algorithm.adv_estimator=grpo" in err


SHIPPED = sorted(p.name for p in _verl_schema.schema_file().parent.glob("*ppo*trainer.yaml")) if _verl_schema.schema() else []
SIZES = ["algorithm.adv_estimator=grpo", ACTOR + "ppo_mini_batch_size=16", "data.train_batch_size=64",
         "actor_rollout_ref.rollout.n=8"]


@needs_verl
@pytest.mark.parametrize("name", SHIPPED)
def test_verls_own_shipped_trainer_yamls_pass(name):
    """Each engine's generated file (FSDP, Megatron, TorchTitan, VeOmni) and the Hydra files: no key refused; an
    engine's own optim keys, verl's though unsorted by this tool's tables, are named in a note."""
    setup = read_run_config(_verl_schema.schema_file().parent / name, overrides=SIZES)
    assert setup.unknown == ()


@needs_verl
def test_keys_below_an_override_mapping_pass_through_to_the_engine_and_are_verls():
    """verl's `override_*` mappings go to the engine's own config class (Megatron's TransformerConfig): a key below
    one is not a typo whatever keys the shipped YAML happens to list there (verl's GSPO example sets
    megatron.override_transformer_config.moe_router_dtype)."""
    schema = _verl_schema.schema()
    assert schema.knows(ACTOR + "megatron.override_transformer_config.moe_router_dtype")
    assert schema.knows(ACTOR + "megatron.override_transformer_config.recompute_granularity")
    assert not schema.knows(ACTOR + "megatron.no_such_setting")


def test_a_critic_run_is_said_before_a_forks_own_keys():
    """verl's gae with a fork's data.max_extrapolation_length: the estimator decides, so it is said first."""
    cfg = with_(algorithm__adv_estimator="gae", data__max_extrapolation_length=4096)
    with pytest.raises(ConfigError, match="algorithm.adv_estimator gae: a critic's value baseline"):
        read_run_config(cfg)
    with pytest.raises(ConfigError, match="max_extrapolation_length"):  # a group estimator: the key is the refusal
        read_run_config(with_(data__max_extrapolation_length=4096))


@needs_verl
def test_a_config_of_verl_before_0_4_is_read_on_that_trainer():
    """A key whose last release was before 0.4 (verl 0.1's fsdp_config.grad_offload, as TinyZero and Logic-RL pass it)
    marks a config of verl before 0.4: no dual clip (clip_ratio_c came in 0.4.0), the KL in the reward where
    use_kl_loss is false, entropy_coeff 0.001; a 0.9.1 config keeps c = 3."""
    old = read_run_config(with_(actor_rollout_ref__actor__fsdp_config__grad_offload=True))
    notes = " | ".join(old.notes)
    assert old.hparams.ratio_cap is None and "no dual clip: verl <= 0.2.0.post2's trainer" in notes
    assert "0.001, the default of verl <= 0.2.0.post2's trainer" in notes
    named = {k: v for k, v, _ in old.unmodelled}
    assert named.get("algorithm.kl_ctrl.kl_coef") == 0.001  # the in-reward KL, in the first lines
    none = read_run_config(with_(actor_rollout_ref__actor__fsdp_config__grad_offload=True, algorithm__kl_ctrl__kl_coef=0))
    assert "algorithm.kl_ctrl.kl_coef" not in {k for k, _, _ in none.unmodelled}  # a weight of 0: no penalty
    assert read_run_config(with_()).hparams.ratio_cap == 3.0


@needs_verl
def test_a_forks_validation_keys_and_reward_kwargs_are_read_past():
    """A fork's validation rollout keys (DeepScaleR's rollout.n_val, rollout.val_temperature: a word `val`, as verl's
    own val_kwargs.*) change no step; reward_model.reward_kwargs is the reward manager's free-form mapping."""
    from gspo_dynamics.predict._verl_fields import validation_only

    setup = read_run_config(with_(actor_rollout_ref__rollout__n_val=16, actor_rollout_ref__rollout__val_temperature=0.6,
                                  reward_model__reward_kwargs__overlong_buffer_cfg__len=512))
    assert setup.unknown == ()
    assert validation_only(ACTOR.replace("actor.", "rollout.") + "n_val") and not validation_only(ACTOR + "n_val")
    assert not validation_only("actor_rollout_ref.rollout.interval")
    with pytest.raises(ConfigError, match="rollout.nn"):
        read_run_config(with_(actor_rollout_ref__rollout__nn=8))


def test_a_mini_batch_that_does_not_divide_the_rollout_is_said_as_verls_refusal():
    """ppo_mini_batch_size 30 of a 100-prompt rollout: verl 0.9.1's update asserts whole mini-batches (its
    make_iterator), so the run stops at its first update; said first, T read as the ratio rounded (audit s37c)."""
    config = {"algorithm": {"adv_estimator": "grpo"}, "data": {"train_batch_size": 100},
              "actor_rollout_ref": {"rollout": {"n": 8}, "actor": {"ppo_mini_batch_size": 30, "optim": {"lr": 1e-6}}}}
    setup = read_run_config(config)
    assert setup.hparams.refresh_interval == 3 and setup.refused[0].startswith("verl 0.9.1 refuses this config")
    config["actor_rollout_ref"]["actor"]["ppo_mini_batch_size"] = 25
    assert read_run_config(config).refused == ()


@pytest.mark.parametrize("schema", [True, False])
def test_a_resolved_dumps_model_engine_choice_is_verls_own(tmp_path, capsys, monkeypatch, schema):
    """A run's resolved Hydra dump writes the config group its defaults list chose (`- model_engine: dp`) as a
    top-level key (audit s38 D8: the run's own dump refused); it is no typo, with or without verl's schema."""
    if not schema:
        monkeypatch.setattr(_verl_schema, "schema", lambda: None)
    cfg = {**with_(), "model_engine": "dp"}
    setup = read_run_config(cfg)
    assert setup.unknown == () and "model_engine" in setup.ignored
    code, err = cli(tmp_path, capsys, cfg)
    assert code == 0 and err == ""
