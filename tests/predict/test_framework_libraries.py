"""The config mapping against the installed TRL and verl (the test command installs both: TRL with transformers,
verl 0.9.1 without its dependencies, so its code and shipped YAML are read as files, never imported).

Every field of the installed GRPOConfig and every key of verl's shipped trainer YAML under the dynamics subtrees is
read, named as not modelled, or listed as changing no step; the lr schedules equal transformers' and verl's own
lambdas; estimators and losses are verl's registered names."""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.predict import _trl_fields, _verl_fields, read_run_config
from gspo_dynamics.predict._verl import VERL_LOSSES, VERL_UNMODELLED_LOSSES, flatten
from gspo_dynamics.theory.hyperparams import SGD, Adam
from gspo_dynamics.theory.schedule import LRSchedule

trl = pytest.importorskip("trl", reason="the test command installs TRL (the frameworks extra)")
yaml = pytest.importorskip("yaml")


def _verl_root() -> Path:
    spec = importlib.util.find_spec("verl")  # locates the package without running its __init__ (which needs ray)
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("verl is not installed (scripts/setup.sh installs verl 0.9.1 without its dependencies)")
    return Path(list(spec.submodule_search_locations)[0])


def _verl_yaml() -> dict:
    return yaml.safe_load((_verl_root() / "trainer/config/_generated_ppo_trainer.yaml").read_text())


def _grpo_config(**kwargs) -> dict:
    """A GRPOConfig built by the installed TRL and saved as a run saves it (`to_dict()`)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kwargs = {"bf16": False, "use_cpu": True} | kwargs  # TRL's bf16 default needs a GPU to construct
        return trl.GRPOConfig(output_dir="/tmp/gspo-dynamics-test", report_to="none", **kwargs).to_dict()


# ---- TRL -------------------------------------------------------------------------------------
def test_every_grpo_config_field_is_read_named_or_changes_no_step():
    fields = {f.name for f in dataclasses.fields(trl.GRPOConfig)}
    tables = {"read": _trl_fields.READ, "unmodelled": set(_trl_fields.UNMODELLED), "none": _trl_fields.NO_DYNAMICS}
    missing = sorted(fields - set().union(*tables.values()))
    assert not missing, f"GRPOConfig fields in no table of predict/_trl_fields.py: {missing}"
    names = list(tables)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            assert not tables[a] & tables[b], f"in two tables ({a}, {b}): {sorted(tables[a] & tables[b])}"


def _recipe_argument_classes() -> list:
    """The dataclasses a recipe for `trl grpo --config` (TrlParser) holds beside GRPOConfig: ModelConfig,
    ScriptArguments, the dataset mixture and the GRPO script's own arguments, as the installed TRL has them."""
    classes = [trl.ModelConfig, trl.ScriptArguments]
    classes += [getattr(trl, "DatasetMixtureConfig")] if hasattr(trl, "DatasetMixtureConfig") else []
    try:
        from trl.scripts.grpo import GRPOScriptArguments
    except ImportError:  # a TRL release without the GRPO script
        return classes
    return classes + [GRPOScriptArguments]


def test_every_recipe_key_of_trls_cli_is_read_named_or_changes_no_step():
    """A standard recipe (TRL's CLI, TrlParser, open-r1) holds ModelConfig's and the script's keys: each is in a table,
    so such a recipe is read, not refused as holding typos."""
    for cls in _recipe_argument_classes():
        missing = sorted({f.name for f in dataclasses.fields(cls)} - _trl_fields.KNOWN)
        assert not missing, f"{cls.__name__} fields in no table of predict/_trl_fields.py: {missing}"


def test_a_trl_cli_recipe_is_read_and_its_lora_and_rewards_named():
    recipe = {"model_name_or_path": "Qwen/Qwen2.5-1.5B-Instruct", "model_revision": "main", "torch_dtype": "bfloat16",
              "attn_implementation": "flash_attention_2", "trust_remote_code": True, "use_peft": True, "lora_r": 32,
              "lora_alpha": 64, "lora_dropout": 0.05, "lora_target_modules": ["q_proj", "v_proj"], "load_in_4bit": True,
              "dataset_name": "open-r1/OpenR1-Math-220k", "dataset_config": "default", "dataset_train_split": "train",
              "dataset_prompt_column": "problem", "system_prompt": "Think step by step.", "hub_model_id": "me/run",
              "reward_funcs": ["accuracy", "format"], "cosine_max_len": 1000, "wandb_project": "r1",
              "learning_rate": 1e-6, "num_generations": 8, "max_steps": 100, "bf16": True}
    setup = read_run_config(recipe)
    named = {key for key, _, _ in setup.unmodelled}
    assert {"torch_dtype", "use_peft", "lora_r", "lora_alpha", "lora_dropout", "lora_target_modules", "load_in_4bit",
            "reward_funcs"} <= named
    assert not named & {"model_name_or_path", "dataset_name", "system_prompt", "cosine_max_len"}  # cosine: open-r1's
    assert "lora_r" not in {k for k, _, _ in read_run_config({**recipe, "use_peft": False}).unmodelled}  # gated


def test_the_defaults_the_mapping_assumes_are_trls():
    from gspo_dynamics.predict._frameworks import TRL_DEFAULTS

    defaults = {f.name: f.default for f in dataclasses.fields(trl.GRPOConfig)}
    assert {k: defaults[k] for k in TRL_DEFAULTS} == TRL_DEFAULTS


def test_a_saved_default_grpo_config_names_nothing_it_should_not():
    setup = read_run_config(_grpo_config(max_steps=100))
    assert setup.unknown == () and [k for k, _, _ in setup.unmodelled] == ["max_grad_norm"]  # transformers' 1.0
    assert isinstance(setup.hparams.optimizer, Adam)
    assert setup.schedule == LRSchedule(shape="linear", warmup=0, total=100)  # transformers' default linear decay
    assert "output_dir" in setup.to_json()["ignored"]  # --json lists every key not read
    assert not any("and " in n and " more" in n for n in setup.notes)


@pytest.mark.parametrize("kwargs, optimizer", [
    ({"optim": "sgd", "optim_args": "momentum=0.9"}, SGD(momentum=0.9)),
    ({"optim": "sgd"}, SGD(momentum=0.0)),
    ({"optim": "adafactor"}, Adam(beta1=0.0, beta2=0.999)),
    ({"optim": "adamw_torch", "adam_beta1": 0.8, "adam_beta2": 0.95}, Adam(beta1=0.8, beta2=0.95)),
    ({"optim": "paged_adamw_8bit"}, Adam()),
    ({"optim": "rmsprop", "optim_args": "momentum=0.5,alpha=0.9"}, Adam(beta1=0.5, beta2=0.9)),
])
def test_trl_optimizers_are_read_not_assumed_adam(kwargs, optimizer):
    assert read_run_config(_grpo_config(**kwargs)).hparams.optimizer == optimizer


@pytest.mark.parametrize("optim", ["lion_32bit", "ademamix", "adagrad", "schedule_free_adamw", "galore_adamw"])
def test_trl_optimizers_outside_the_model_are_named_not_misread(optim):
    with pytest.raises(ConfigError, match="is not modelled.*--set optim=adamw_torch"):
        read_run_config({**_grpo_config(), "optim": optim})


def test_the_enumerated_names_are_transformers_own():
    from transformers import SchedulerType
    from transformers.training_args import OptimizerNames

    from gspo_dynamics.predict._optimizers import TRL_OPTIMIZERS, TRL_SCHEDULERS

    assert set(TRL_SCHEDULERS) == {s.value for s in SchedulerType}
    assert {o.value for o in OptimizerNames} <= set(TRL_OPTIMIZERS)


@pytest.mark.parametrize("key, value, near", [
    ("lr_scheduler_type", "cosin", "cosine"), ("optim", "adamw_torh", "adamw_torch"), ("loss_type", "dr_gpro", "dr_grpo"),
    ("scale_rewards", "gruop", "group"), ("importance_sampling_level", "sequense", "sequence"),
])
def test_a_misspelt_value_is_refused_naming_the_nearest_name(key, value, near):
    """transformers and TRL refuse a value they do not have; read on, it would be some default (a cosin schedule read
    as a constant lr), so the mapping refuses it too, naming the nearest name."""
    with pytest.raises(ConfigError, match=rf"^{key} '{value}' is not one of .*\(did you mean {near}\?\): .*{near}"):
        read_run_config({**_grpo_config(max_steps=100), key: value})


def test_trl_losses_are_their_own_objectives():
    sapo = read_run_config(_grpo_config(loss_type="sapo"))
    assert sapo.hparams.correction == "none" and any("soft gate" in n for n in sapo.notes)
    vespo = read_run_config(_grpo_config(loss_type="vespo"))
    assert vespo.hparams.correction == "none"
    luspo = read_run_config(_grpo_config(loss_type="luspo", importance_sampling_level="sequence"))
    assert luspo.hparams.correction == "sequence" and any("scales with its length" in n for n in luspo.notes)
    dapo = read_run_config(_grpo_config(loss_type="dapo", importance_sampling_level="sequence"))
    assert any("weighs by its length" in n for n in dapo.notes)
    unsaid = read_run_config({"learning_rate": 1e-6, "importance_sampling_level": "sequence"})  # TRL's default dapo
    assert any("default dapo" in n for n in unsaid.notes)
    cispo = read_run_config(_grpo_config(loss_type="cispo", epsilon_high=5.0))
    assert cispo.hparams.clip_mode == "cap" and cispo.hparams.clip_high == pytest.approx(4.0)


def test_trl_delta_and_batch_scaling_and_unmodelled_keys():
    setup = read_run_config({**_grpo_config(delta=2.0, scale_rewards="batch", top_entropy_quantile=0.2,
                                            mask_truncated_completions=True, off_policy_mask_threshold=0.5,
                                            vllm_importance_sampling_mode="token_truncate"), "bf16": True, "use_vllm": True})
    hp = setup.hparams
    assert hp.ratio_cap == 2.0 and hp.advantage == "mean"
    named = {key for key, _, _ in setup.unmodelled}
    assert {"top_entropy_quantile", "mask_truncated_completions", "off_policy_mask_threshold", "bf16", "use_vllm",
            "vllm_importance_sampling_mode"} <= named
    text = " ".join(setup.notes)
    assert "top_entropy_quantile = 0.2" in text and "train-inference" in text
    assert setup.to_json()["unmodelled"][0]["changes"]


def test_an_unknown_key_is_refused_or_named():
    """A saved GRPOConfig with a field TRL does not have: refused naming the nearest field, as GRPOConfig refuses it;
    read on with allow_unknown, and named."""
    with pytest.raises(ConfigError, match=r"TRL's GRPOConfig has no field learning_rte \(did you mean learning_rate\?\)"):
        read_run_config({**_grpo_config(), "learning_rte": 1e-5})
    setup = read_run_config({**_grpo_config(), "learning_rte": 1e-5}, allow_unknown=True)
    assert setup.unknown == ("learning_rte",) and any("learning_rte" in n for n in setup.notes)


def test_trl_schedules_equal_transformers_own():
    """The factor read from the config equals transformers' scheduler at every step (an independent route: the
    library's LambdaLR on a real optimizer)."""
    import torch
    from transformers import get_scheduler

    cases = [("linear", {}, 10), ("cosine", {}, 0.1), ("cosine_with_min_lr", {"min_lr_rate": 0.1}, 5),
             ("polynomial", {"power": 2.0, "lr_end": 1e-7}, 7), ("constant_with_warmup", {}, 12),
             ("inverse_sqrt", {}, 8), ("constant", {}, 0)]
    total = 60
    for name, kwargs, warm in cases:
        cfg = _grpo_config(max_steps=total, lr_scheduler_type=name, lr_scheduler_kwargs=kwargs, warmup_steps=warm,
                           learning_rate=1e-5)
        schedule = read_run_config(cfg).schedule
        opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1e-5)
        steps = math.ceil(total * warm) if 0 < warm < 1 else warm
        sched = get_scheduler(name, opt, num_warmup_steps=steps, num_training_steps=total, scheduler_specific_kwargs=kwargs)
        expected = []
        for _ in range(total):
            expected.append(opt.param_groups[0]["lr"] / 1e-5)
            opt.step()
            sched.step()
        np.testing.assert_allclose(schedule.factor(np.arange(total)), expected, rtol=1e-9, atol=1e-12, err_msg=name)


# ---- verl ------------------------------------------------------------------------------------
def test_every_verl_key_under_the_dynamics_subtrees_is_classified():
    flat = flatten(_verl_yaml())
    unknown = sorted(k for k in flat if _verl_fields.classify(k) == "unknown")
    assert not unknown, f"verl keys in no table of predict/_verl_fields.py: {unknown}"
    assert _verl_fields.READ - _verl_fields.SEARCH_R1 - set(flat) <= {"trainer.total_training_steps"} | {  # keys a run adds
        k for k in _verl_fields.READ if k.endswith(("warmup_style",))}


def _verl_names(decorator: str) -> set[str]:
    """The names verl 0.9.1 registers with `decorator` in core_algos.py (read from its syntax tree)."""
    tree = ast.parse((_verl_root() / "trainer/ppo/core_algos.py").read_text())
    enum = {node.targets[0].id: node.value.value for cls in ast.walk(tree) if isinstance(cls, ast.ClassDef)
            and cls.name == "AdvantageEstimator" for node in cls.body
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)}
    names = set()
    for node in ast.walk(tree):
        for dec in getattr(node, "decorator_list", []):
            if isinstance(dec, ast.Call) and getattr(dec.func, "id", None) == decorator and dec.args:
                arg = dec.args[0]
                names.add(arg.value if isinstance(arg, ast.Constant) else enum[arg.attr])
    return names


def test_verl_estimators_and_losses_are_verls_registered_names():
    assert _verl_names("register_adv_est") == _verl_fields.GROUP_ESTIMATORS | set(_verl_fields.OTHER_ESTIMATORS)
    assert _verl_names("register_policy_loss") == set(VERL_LOSSES) | set(VERL_UNMODELLED_LOSSES)


def _verl_run(*overrides: str):
    base = ["algorithm.adv_estimator=grpo", "actor_rollout_ref.rollout.n=8", "data.train_batch_size=256",
            "actor_rollout_ref.actor.ppo_mini_batch_size=64"]
    return read_run_config(_verl_yaml(), overrides=base + list(overrides))


@pytest.mark.parametrize("estimator", ["grpo_vectorized", "rloo_vectorized", "gdpo", "grpo_passk", "opo"])
def test_verl_091_group_estimators_are_read(estimator):
    assert _verl_run(f"algorithm.adv_estimator={estimator}").hparams.group_size == 8


def test_verl_refuses_what_it_does_not_have():
    with pytest.raises(ConfigError, match="not an estimator of verl 0.9.1.*norm_adv_by_std_in_grpo=false"):
        _verl_run("algorithm.adv_estimator=drgrpo")
    with pytest.raises(ConfigError, match="a critic's value baseline"):
        _verl_run("algorithm.adv_estimator=gae")


def test_verl_shipped_defaults_are_read_as_verl_sets_them():
    setup = _verl_run()
    hp = setup.hparams
    assert (hp.refresh_interval, hp.num_groups, hp.lr, hp.clip_low, hp.clip_high) == (4, 64, 1e-6, 0.2, 0.2)
    assert hp.ratio_cap == 3.0 and hp.optimizer == Adam(beta1=0.9, beta2=0.999)  # dual-clip PPO, AdamW
    assert {k for k, _, _ in setup.unmodelled} == {"actor_rollout_ref.actor.optim.weight_decay",
                                                  "actor_rollout_ref.actor.optim.clip_grad"}
    assert setup.unknown == () and setup.schedule == LRSchedule(shape="constant")


@pytest.mark.parametrize("actor, clip", [({"clip_ratio": 0.3}, (0.2, 0.2)),
                                         ({"clip_ratio": 0.3, "clip_ratio_high": 0.28}, (0.2, 0.28))])
def test_a_bare_clip_ratio_reads_as_verls_shipped_yaml_runs_it(actor, clip):
    """clip_ratio without clip_ratio_low / clip_ratio_high: the shipped YAML beneath sets both to 0.2, the loss reads
    clip_ratio only for a null one, so a run script's bare clip_ratio moves no clip (audit s37c: General-Reasoner's 0.3):
    a script's config reads as verl's composed YAML does, said first; before verl 0.4 (an old key marks it) it clipped."""
    composed = _verl_run(*(f"actor_rollout_ref.actor.{k}={v}" for k, v in actor.items())).hparams
    script = {"algorithm": {"adv_estimator": "grpo"}, "data": {"train_batch_size": 256},
              "actor_rollout_ref": {"rollout": {"n": 8},
                                    "actor": {"ppo_mini_batch_size": 64, "optim": {"lr": 1e-6}, **actor}}}
    setup = read_run_config(script)
    assert (composed.clip_low, composed.clip_high) == clip == (setup.hparams.clip_low, setup.hparams.clip_high)
    assert any(line.startswith("actor_rollout_ref.actor.clip_ratio 0.3 bounds no ratio in verl >= 0.4") for line in
               setup.brief_lines())
    nulled = dict(script["actor_rollout_ref"]["actor"], clip_ratio_low=None)  # null: the loss falls back to clip_ratio
    read = read_run_config({**script, "actor_rollout_ref": {**script["actor_rollout_ref"], "actor": nulled}}).hparams
    assert read.clip_low == 0.3 and read.clip_high == clip[1]
    script["actor_rollout_ref"]["actor"]["fsdp_config"] = {"grad_offload": False}  # verl 0.1's key: a run before 0.4
    old = read_run_config(script).hparams
    assert (old.clip_low, old.clip_high) == (0.3, actor.get("clip_ratio_high", 0.3))


def test_verl_optimizer_losses_and_schedule_overrides():
    sgd = _verl_run("actor_rollout_ref.actor.optim.optimizer=SGD",
                    "+actor_rollout_ref.actor.optim.override_optimizer_config={momentum: 0.9}")
    assert sgd.hparams.optimizer == SGD(momentum=0.9)
    with pytest.raises(ConfigError, match="not modelled"):
        _verl_run("actor_rollout_ref.actor.optim.optimizer=Lion")
    gspo = _verl_run("actor_rollout_ref.actor.policy_loss.loss_mode=gspo")
    assert gspo.hparams.correction == "sequence" and gspo.hparams.ratio_cap is None
    assert any("weighs by its length" in n for n in gspo.read_as)  # said first, as TRL's is (audit s37c)
    assert _verl_run("actor_rollout_ref.actor.policy_loss.loss_mode=sapo").hparams.correction == "none"
    cosine = _verl_run("actor_rollout_ref.actor.optim.lr_scheduler_type=cosine", "trainer.total_training_steps=200",
                       "actor_rollout_ref.actor.optim.lr_warmup_steps_ratio=0.05",
                       "actor_rollout_ref.actor.optim.min_lr_ratio=0.1")
    assert cosine.schedule == LRSchedule(shape="cosine", warmup=10, total=200, floor=0.1, warmup_share=0.05)


def _verl_lambdas():
    """verl's own schedule lambdas, executed from its torch_functional.py source (its package needs ray)."""
    import torch

    source = (_verl_root() / "utils/torch_functional.py").read_text()
    tree = ast.parse(source)
    wanted = [n for n in tree.body if isinstance(n, ast.FunctionDef)
              and n.name in ("get_cosine_schedule_with_warmup", "get_constant_schedule_with_warmup")]
    namespace = {"math": math, "LambdaLR": torch.optim.lr_scheduler.LambdaLR, "Optimizer": torch.optim.Optimizer}
    exec(compile(ast.Module(body=wanted, type_ignores=[]), "verl/utils/torch_functional.py", "exec"), namespace)
    return namespace


@pytest.mark.parametrize("zero_indexed", [True, False])
def test_verl_cosine_schedule_equals_verls_own(zero_indexed):
    import torch

    fns = _verl_lambdas()
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    sched = fns["get_cosine_schedule_with_warmup"](opt, num_warmup_steps=7, num_training_steps=50, min_lr_ratio=0.2,
                                                   zero_indexed_step=zero_indexed)
    ours = _verl_run("actor_rollout_ref.actor.optim.lr_scheduler_type=cosine", "trainer.total_training_steps=50",
                     "actor_rollout_ref.actor.optim.lr_warmup_steps=7", "actor_rollout_ref.actor.optim.min_lr_ratio=0.2",
                     f"actor_rollout_ref.actor.optim.zero_indexed_step={str(zero_indexed).lower()}").schedule
    np.testing.assert_allclose(ours.factor(np.arange(50)), [sched.lr_lambdas[0](k) for k in range(50)], atol=1e-12)


def test_a_wandb_record_of_a_grpo_config_reads_as_the_config(tmp_path):
    """transformers' W&B callback records the model's config beside every field of the arguments
    (`{**model.config.to_dict(), **args.to_dict()}`), each as {value: v}: read as the arguments, the rest named."""
    cfg = _grpo_config(learning_rate=3e-6, num_generations=4, per_device_train_batch_size=8, steps_per_generation=4)
    model = {"architectures": ["LlamaForCausalLM"], "vocab_size": 32000, "rope_theta": 10000.0}
    entries = {k: {"value": v} for k, v in (model | cfg).items()} | {"_wandb": {"value": {"cli_version": "0.19.8"}}}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(entries))
    got, plain = read_run_config(path), read_run_config(cfg)
    assert got.hparams == plain.hparams and got.recorded == tuple(sorted(model)) and not got.assumed


@pytest.mark.parametrize("config", [
    {"num_generations": 8, "per_device_train_batch_size": 8},  # a generation batch of one group
    {"num_generations": 8, "per_device_train_batch_size": 16, "gradient_accumulation_steps": 4},
    {"num_generations": 4, "per_device_train_batch_size": 6, "gradient_accumulation_steps": 2, "generation_batch_size": 24},
    {"num_generations": 8, "per_device_train_batch_size": 8, "eval_strategy": "steps", "eval_steps": 10,
     "per_device_eval_batch_size": 8},  # the eval batch holds groups of num_generations too (review s37)
])
def test_the_zero_std_change_of_g_is_a_config_trl_accepts_at_the_same_t(tmp_path, config):
    """--pass-rates' num_generations change, with what it edits beside it, read back: the installed GRPOConfig takes it
    (its generation batch holds whole groups), T is the same, the prompts per rollout are no fewer, and the mixture's
    zero-std share at the new G meets the target."""
    from gspo_dynamics.predict import zero_std_answer
    from gspo_dynamics.theory.zero_std import zero_std_share_pass_rates

    rates = np.random.default_rng(3).choice([0.02, 0.05, 0.1, 0.5, 0.9, 0.97], 200)
    path = tmp_path / "rates.txt"
    path.write_text("\n".join(f"{p:g}" for p in rates))
    setup = read_run_config({"learning_rate": 1e-6, **config})
    answer = zero_std_answer(str(path), setup.hparams.group_size)
    edits = {c.key: c.value for c in answer.changes(setup)}
    assert edits["num_generations"] > config["num_generations"]
    assert all(f"together they keep T" in c.buys for c in answer.changes(setup)) == (len(edits) > 1)
    edited = _grpo_config(**{**config, **edits})  # TRL raises where the generation or eval batch splits a group
    after = read_run_config({"learning_rate": 1e-6, **{k: edited[k] for k in config}, **edits})
    assert ("num_generations_eval" in edits) == ("eval_strategy" in config)
    assert after.hparams.refresh_interval == setup.hparams.refresh_interval and not after.refused
    before = _grpo_config(**config)
    assert edited["generation_batch_size"] // edits["num_generations"] >= (
        before["generation_batch_size"] // config["num_generations"])
    assert zero_std_share_pass_rates(rates, edits["num_generations"]) <= answer.target


def test_both_generation_keys_are_trls_refusal_in_a_written_config_not_in_a_saved_one():
    """GRPOConfig refuses steps_per_generation with generation_batch_size; its saved to_dict() holds both (filled in):
    a written config with both is said as TRL's refusal and its edits name steps_per_generation alone; a saved one
    (every field, 191 in TRL 1.16) reads as before, unsaid (audit s37c)."""
    keys = {"learning_rate": 1e-6, "num_generations": 8, "per_device_train_batch_size": 8,
            "gradient_accumulation_steps": 2, "steps_per_generation": 4, "generation_batch_size": 32}
    with pytest.raises(ValueError, match="can not be both configured"):
        _grpo_config(**keys)
    written = read_run_config(keys)
    assert written.refused and written.refused[0].startswith("TRL refuses a config that sets both")
    assert "generation_batch_size" not in written.keys.doubling
    saved = _grpo_config(**{k: v for k, v in keys.items() if k != "generation_batch_size"})
    assert saved["generation_batch_size"] == 32 and not read_run_config(saved, allow_unknown=True).refused
    recipe = {**keys, "output_dir": "out/run", "logging_steps": 1, "bf16": True}  # a recipe sets output_dir too
    assert read_run_config(recipe).refused[0].startswith("TRL refuses a config that sets both")


@pytest.mark.parametrize("framework", ["verl", "openrlhf"])
def test_lora_is_named_as_not_modelled_in_every_framework(tmp_path, framework):
    """Audit s43c D2: verl's actor_rollout_ref.model.lora_rank=64 was counted among the keys that change no step and
    OpenRLHF's --lora_rank dropped, unnamed, where TRL's use_peft is named: LoRA changes every step (its lr scale)."""
    if framework == "verl":
        base = ("python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo data.train_batch_size=16 "
                "actor_rollout_ref.actor.ppo_mini_batch_size=16 actor_rollout_ref.rollout.n=4 "
                "actor_rollout_ref.actor.optim.lr=1e-5")
        lora, keys = " actor_rollout_ref.model.lora_rank=64 actor_rollout_ref.model.lora_alpha=32", {
            "actor_rollout_ref.model.lora_rank", "actor_rollout_ref.model.lora_alpha"}
    else:
        base = ("python3 -m openrlhf.cli.train_ppo_ray --advantage_estimator group_norm --n_samples_per_prompt 4 "
                "--rollout_batch_size 16 --train_batch_size 64 --actor_learning_rate 1e-5")
        lora, keys = " --lora_rank 16 --lora_alpha 32", {"lora_rank", "lora_alpha"}
    full, adapters = tmp_path / "full.sh", tmp_path / "lora.sh"
    full.write_text(base + "\n")
    adapters.write_text(base + lora + "\n")
    named = {key for key, _, _ in read_run_config(adapters).unmodelled}
    assert keys <= named
    assert "LoRA" in next(what for key, _, what in read_run_config(adapters).unmodelled if key in keys)
    assert not keys & {key for key, _, _ in read_run_config(full).unmodelled}  # rank 0 (the default): full training


def test_a_warmup_ratio_is_read_as_older_releases_did_and_said_to_be_gone_from_trl_116():
    """Audit s43py D9: `warmup_ratio` is no field of TRL 1.16's GRPOConfig (transformers 5: warmup_steps below 1 is the
    ratio); a saved config of an older release holds it, so it is read as the share it was, and said."""
    import trl

    assert "warmup_ratio" not in {f.name for f in dataclasses.fields(trl.GRPOConfig)}  # the installed release's
    setup = read_run_config({"learning_rate": 1e-6, "num_generations": 8, "per_device_train_batch_size": 8,
                             "max_steps": 200, "warmup_ratio": 0.1}, devices=1)
    assert setup.schedule.warmup == 20 and setup.schedule.warmup_share == 0.1
    assert any("TRL 1.16 (transformers 5) has no such field" in n for n in setup.notes)
