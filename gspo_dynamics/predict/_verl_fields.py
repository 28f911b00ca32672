"""verl 0.9.1's PPO trainer keys (dotted, as its shipped `_generated_ppo_trainer.yaml` nests them), sorted by what
the mapping does with them. A test enumerates the shipped YAML's keys under `DYNAMICS_SUBTREES` and fails on one in
none of these tables.

    READ          the mapping reads it (`predict._verl`, `predict._optimizers`)
    UNMODELLED    it changes the dynamics and the reduced model does not represent it: named, with what it changes,
                  wherever its value is not the neutral one (and only where the key it acts through is on)
    NO_DYNAMICS   inside the dynamics subtrees, a key that changes no training step; outside them (trainer.*,
                  critic.*, the reference's and the model's engines, data loading, profilers) every key is such
"""

from __future__ import annotations

from typing import Any

from gspo_dynamics.predict._field_tables import LORA, LORA_SCALE, LORA_WEIGHTS, TEMPERATURE

ACTOR = "actor_rollout_ref.actor."
ROLLOUT = "actor_rollout_ref.rollout."
MODEL = "actor_rollout_ref.model."
OPTIM = ACTOR + "optim."
DYNAMICS_SUBTREES = ("algorithm.", ACTOR)
INFRA_SUBTREES = tuple(ACTOR + s for s in ("fsdp_config.", "megatron.", "profiler.", "checkpoint.", "qat.", "router_replay.",
                                           "engine.", "torchtitan.", "veomni.", "profile."))  # profile.: verl <= 0.5's

# group estimators of verl 0.9.1 (`verl.trainer.ppo.core_algos.AdvantageEstimator`); the others use a critic (gae)
# or per-token baselines outside the group model
GROUP_ESTIMATORS = {"grpo", "grpo_vectorized", "grpo_passk", "rloo", "rloo_vectorized", "reinforce_plus_plus_baseline",
                    "opo", "gpg", "gdpo"}
OTHER_ESTIMATORS = {"gae": "a critic's value baseline (PPO)", "reinforce_plus_plus": "a batch-whitened return, no group",
                    "remax": "a greedy rollout's reward as the baseline",
                    "optimal_token_baseline": "a per-token optimal baseline",
                    "tir_optimal_token_baseline": "a per-token optimal baseline"}

READ = {
    "algorithm.adv_estimator", "algorithm.norm_adv_by_std_in_grpo", "algorithm.use_kl_in_reward",
    "data.train_batch_size", "data.max_response_length", "trainer.total_training_steps", "trainer.total_epochs",
    ROLLOUT + "n", ROLLOUT + "response_length",
    ACTOR + "ppo_mini_batch_size", ACTOR + "ppo_epochs", ACTOR + "clip_ratio", ACTOR + "clip_ratio_low",
    ACTOR + "clip_ratio_high", ACTOR + "clip_ratio_c", ACTOR + "use_kl_loss", ACTOR + "kl_loss_coef",
    ACTOR + "kl_loss_type", ACTOR + "policy_loss.loss_mode", ACTOR + "loss_agg_mode", ACTOR + "tau_pos",
    ACTOR + "tau_neg", ACTOR + "grad_clip", ACTOR + "rollout_n",
    OPTIM + "lr", OPTIM + "betas", OPTIM + "optimizer", OPTIM + "optimizer_impl", OPTIM + "override_optimizer_config",
    OPTIM + "weight_decay", OPTIM + "clip_grad", OPTIM + "lr_warmup_steps", OPTIM + "lr_warmup_steps_ratio",
    OPTIM + "total_training_steps", OPTIM + "min_lr_ratio", OPTIM + "num_cycles", OPTIM + "lr_scheduler_type",
    OPTIM + "warmup_style", OPTIM + "zero_indexed_step",
}
SEARCH_R1 = {ROLLOUT + "n_agent", "do_search"}  # Search-R1's (a verl 0.1 fork's) group, read where n_agent is given
READ |= SEARCH_R1  # (`predict._verl`)
# Search-R1's own other keys (PeterGriffinJin/Search-R1 at a14dc3a: its verl/trainer/config/ppo_trainer.yaml), in no
# verl release: its agent loop's, retriever's and format reward's, none changing a training step (its two that do are
# in UNMODELLED); any of them, or n_agent, marks a config of its lineage (`predict._verl.early_verl`)
SEARCH_R1_OWN = {"max_turns", "retriever.url", "retriever.topk", "data.max_start_length", "data.max_obs_length",
                 "data.train_data_num", "data.val_data_num", "data.shuffle_train_dataloader",
                 "algorithm.state_masking.start_state_marker", "algorithm.state_masking.end_state_marker",
                 "reward_model.structure_format_score", "reward_model.final_format_score", "reward_model.retrieval_score"}

# the DAPO recipe's own keys (recipe/dapo/config/dapo_trainer.yaml on verl's ppo_trainer, launched as
# `python3 -m recipe.dapo.main_dapo`; in verl's repository up to 2026-01-06, 2bb42bae6, then verl-recipe): its
# generation batch before the groups are filtered and its overlong reward penalty (in UNMODELLED)
DAPO_RECIPE = {"data.gen_batch_size", "reward_model.overlong_buffer.len", "reward_model.overlong_buffer.penalty_factor",
               "reward_model.overlong_buffer.log", "algorithm.filter_groups.max_num_gen_batches"}

# simpleRL-reason's own (hkust-nlp/simpleRL-reason at cf1c785, a verl 0.1 fork: its ppo_trainer.yaml and ray_trainer.py):
# the vLLM sampler's generation chunk and the checkpoint housekeeping, no training step; its trainer.remove_clip is in
# UNMODELLED (it drops the responses cut at the length limit, not the ratio's clip)
SIMPLERL_OWN = {ROLLOUT + "micro_rollout_batch_size", "trainer.remove_previous_ckpt"}

_LOSS = ACTOR + "policy_loss."
_RC = "algorithm.rollout_correction."
UNMODELLED: dict[str, tuple[tuple[Any, ...], str, str | None]] = {
    ACTOR + "entropy_coeff": ((0, 0.0, None), "adds an entropy bonus: a force away from collapse", None),
    ACTOR + "loss_scale_factor": ((None, 1, 1.0), "scales the loss: the step under SGD (Adam normalises it away)", None),
    ACTOR + "state_masking": ((False, None), "masks the retrieved passages' tokens out of the policy loss (Search-R1): "
                              "the gradient is the model's own tokens' alone", None),
    "algorithm.no_think_rl": ((False, None), "keeps only each turn's action, its reasoning cut (Search-R1)", None),
    "trainer.remove_clip": ((False, None), "masks every response cut at the length limit out of the loss "
                            "(simpleRL-reason's; despite its name the ratio's clip stays)", None),
    "reward_model.overlong_buffer.enable": ((False, None), "DAPO's overlong penalty: the reward cut for a response "
                                            "within overlong_buffer.len of the length limit", None),
    _LOSS + "clip_cov_ratio": ((), "clip_cov's share of high-covariance tokens clipped", _LOSS + "loss_mode=clip_cov"),
    _LOSS + "clip_cov_lb": ((), "clip_cov's covariance band", _LOSS + "loss_mode=clip_cov"),
    _LOSS + "clip_cov_ub": ((), "clip_cov's covariance band", _LOSS + "loss_mode=clip_cov"),
    _LOSS + "kl_cov_ratio": ((), "kl_cov's share of tokens given a KL penalty", _LOSS + "loss_mode=kl_cov"),
    _LOSS + "ppo_kl_coef": ((), "kl_cov's KL penalty weight", _LOSS + "loss_mode=kl_cov"),
    _LOSS + "dro_beta": ((), "DRO's regulariser", _LOSS + "loss_mode=dro"),
    "algorithm.filter_groups.enable": ((False,), "drops groups whose rewards are all equal and samples more (DAPO's "
                                       "dynamic sampling): every step keeps its signal, so no zero-std dilution", None),
    "algorithm.filter_groups.metric": ((), "the metric the dynamic sampling filters on", "algorithm.filter_groups.enable"),
    "algorithm.filter_groups.max_num_gen_batches": ((), "the dynamic sampling's retries", "algorithm.filter_groups.enable"),
    "algorithm.kl_penalty": ((), "the in-reward KL estimator", "algorithm.use_kl_in_reward"),
    "algorithm.kl_ctrl.type": ((), "an in-reward KL penalty (adaptive or fixed)", "algorithm.use_kl_in_reward"),
    "algorithm.kl_ctrl.kl_coef": ((), "the in-reward KL penalty's weight", "algorithm.use_kl_in_reward"),
    "algorithm.kl_ctrl.horizon": ((), "the adaptive KL controller's horizon", "algorithm.use_kl_in_reward"),
    "algorithm.kl_ctrl.target_kl": ((), "the adaptive KL controller's target", "algorithm.use_kl_in_reward"),
    "algorithm.use_pf_ppo": ((False,), "reweights samples by reward (PF-PPO): a changed batch", None),
    "algorithm.pf_ppo.reweight_method": ((), "PF-PPO's reweighting", "algorithm.use_pf_ppo"),
    "algorithm.pf_ppo.weight_pow": ((), "PF-PPO's reweighting", "algorithm.use_pf_ppo"),
    _RC + "rollout_is": ((None,), "reweights by pi_train / pi_rollout (token or sequence): corrects the train-inference "
                         "mismatch (diagnose's train_inference_mismatch)", None),
    _RC + "rollout_is_threshold": ((), "the rollout importance weight's truncation", _RC + "rollout_is"),
    _RC + "rollout_is_batch_normalize": ((False,), "normalises the rollout importance weights over the batch", _RC + "rollout_is"),
    _RC + "rollout_rs": ((None,), "rejects tokens or sequences whose train-inference ratio leaves a band", None),
    _RC + "rollout_rs_threshold": ((), "the rejection band", _RC + "rollout_rs"),
    _RC + "bypass_mode": ((False,), "skips the old log-prob pass: the rollout's log-probs are the ratio's reference, so "
                          "the train-inference mismatch enters the clip", None),
    _RC + "loss_type": ((), "the bypass mode's loss", _RC + "bypass_mode"),
    ROLLOUT + "temperature": ((1, 1.0, None), TEMPERATURE, None),
    ROLLOUT + "top_p": ((1, 1.0), "samples from a truncated distribution: the sampler is not the policy the loss scores", None),
    ROLLOUT + "top_k": ((-1, 0, None), "samples from a truncated distribution: the sampler is not the policy", None),
    ROLLOUT + "do_sample": ((True,), "greedy rollouts: every response of a group is the same", None),
    ROLLOUT + "dtype": (("bfloat16", "bf16"), "the sampler's precision: the train-inference mismatch", None),
    # the model's LoRA (audit s43c D2: read as changing no step, unnamed); its scale and weights only where it is on
    MODEL + "lora_rank": ((0, None), LORA, None),
    MODEL + "lora_alpha": ((), LORA_SCALE, MODEL + "lora_rank"),
    MODEL + "target_modules": ((), LORA_WEIGHTS, MODEL + "lora_rank"),
    MODEL + "exclude_modules": ((None,), LORA_WEIGHTS, MODEL + "lora_rank"),
}

NO_DYNAMICS = {  # inside the dynamics subtrees
    "algorithm._target_", "algorithm.gamma", "algorithm.lam", "algorithm.filter_groups._target_",
    "algorithm.filter_groups.max_inflight_gen_batches", "algorithm.kl_ctrl._target_",
    ACTOR + "_target_", ACTOR + "strategy", ACTOR + "ppo_micro_batch_size", ACTOR + "ppo_micro_batch_size_per_gpu",
    ACTOR + "use_dynamic_bsz", ACTOR + "ppo_max_token_len_per_gpu", ACTOR + "freeze_vision_tower",
    ACTOR + "policy_loss._target_", ACTOR + "calculate_entropy", ACTOR + "calculate_sum_pi_squared",
    ACTOR + "use_prefix_grouper", ACTOR + "use_torch_compile", ACTOR + "shuffle", ACTOR + "data_loader_seed",
    ACTOR + "use_fused_kernels", ACTOR + "ulysses_sequence_parallel_size", ACTOR + "entropy_from_logits_with_chunking",
    ACTOR + "entropy_from_logits_chunk_size", ACTOR + "pad_to_length", ACTOR + "use_remove_padding",
    ACTOR + "sum_pi_squared_checkpointing", ACTOR + "entropy_checkpointing", ACTOR + "nccl_timeout", ACTOR + "use_rollout_log_probs",
    OPTIM + "_target_",
}


# keys of older verl releases that 0.9.1 reads elsewhere: the train-inference importance weights moved from the actor
# to `algorithm` (verl PR 3694), then into algorithm.rollout_correction (PR 3984). The old key is not read, so it stays
# unknown, but its refusal names the key 0.9.1 reads and the value that key takes (`_config_checks.nearest`, `_named`)
MOVED = {
    ACTOR + "tis_imp_ratio_cap": (_RC + "rollout_is_threshold", "with rollout_is: token"),
    "algorithm.rollout_is": (_RC + "rollout_is", "token or sequence, not a bool"),
    "algorithm.rollout_is_level": (_RC + "rollout_is", "token or sequence"),
    "algorithm.rollout_is_mode": (_RC + "rollout_is", "truncate; mask is rollout_rs"),
    "algorithm.rollout_is_threshold": (_RC + "rollout_is_threshold", "the same value"),
    "algorithm.rollout_is_threshold_lower": (_RC + "rollout_is_threshold", 'a band as "lower_upper"'),
}


# verl 0.9.1's top-level sections and actor_rollout_ref's (its shipped YAML; `ray_init` older releases', `defaults`
# and `hydra` a Hydra file's own): a key outside them is a typo of a section
SECTIONS = {"actor_rollout_ref", "data", "critic", "custom_reward_function", "reward_model", "sandbox_fusion", "reward",
            "algorithm", "distillation", "transfer_queue", "trainer", "global_profiler", "skip", "ray_kwargs",
            "ray_init", "defaults", "hydra", "model_engine"}  # model_engine: a config group its defaults list chooses
# (`- model_engine: dp`), which a run's resolved Hydra dump writes as a top-level key (audit s38: refused)
ACTOR_ROLLOUT_REF = {"actor", "ref", "rollout", "model", "hybrid_engine", "nccl_timeout"}
KNOWN = READ | set(UNMODELLED) | NO_DYNAMICS | SEARCH_R1_OWN | DAPO_RECIPE | SIMPLERL_OWN  # the dotted keys a typo's nearest is looked for among


# an older release's keys in the dynamics subtrees that change no step by what they do, not by their place: the
# Megatron actor's `load_weight` (load the model's weights at start; the worker prints `self.config.ref.load_weight`)
OLD_NO_STEP = {ACTOR + "load_weight"}


def known(key: str) -> bool:
    """Whether a key is in this tool's tables, or a validation rollout key by its name (`validation_only`)."""
    return key in KNOWN or validation_only(key)


def validation_only(key: str) -> bool:
    """Whether a key is the validation rollout's by its name, a rollout key with a word `val` (a fork's `rollout.n_val`,
    `rollout.val_temperature`, as verl's own `rollout.val_kwargs.*`): it changes no training step."""
    return key.startswith(ROLLOUT) and "val" in key.removeprefix(ROLLOUT).replace(".", "_").split("_")


def changes_no_step(key: str) -> bool:
    """Whether a key changes no training step, whatever its name: outside the dynamics subtrees, in an engine's or
    profiler's subtree inside them, a `_target_`, or one of OLD_NO_STEP (how an older release's key is judged:
    `_verl_history`)."""
    return (not key.startswith(DYNAMICS_SUBTREES) or (key + ".").startswith(INFRA_SUBTREES)
            or key.endswith("._target_") or key in OLD_NO_STEP)


def classify(key: str) -> str:
    """"read", "unmodelled", "no_dynamics" or "unknown" (a key of a dynamics subtree in no table, or outside verl's
    sections: a typo, or a key of a verl release this tool does not know)."""
    if key in READ or key.startswith(OPTIM + "override_optimizer_config."):
        return "read"
    if key in UNMODELLED:
        return "unmodelled"
    if key in SEARCH_R1_OWN or key in DAPO_RECIPE or key in SIMPLERL_OWN or validation_only(key):
        return "no_dynamics"
    section, _, rest = key.partition(".")
    if section not in SECTIONS or (section == "actor_rollout_ref" and rest.partition(".")[0] not in ACTOR_ROLLOUT_REF):
        return "unknown"
    if key in NO_DYNAMICS or key.startswith(INFRA_SUBTREES) or not key.startswith(DYNAMICS_SUBTREES):
        return "no_dynamics"
    return "unknown"
