"""OpenRLHF's PPO trainer arguments (`openrlhf/cli/train_ppo_ray.py`), sorted by what the mapping does with them.

Read at OpenRLHF commit 3c3be6234e0cb353e76bb8019947db9dfe99fca7 (2026-08-13, its dotted names: `--rollout.n_samples_per_prompt`)
and c1ba971c (2026-04-13, the last release of its flat names: `--n_samples_per_prompt`, which most launch scripts use;
the rename is commit ed62d0e2). FLAT holds every flat name the file has had since 397d6a1c (2024-07-15), DOTTED every
dotted one; RENAMED maps a dotted name to the flat one it replaced, so the mapping reads one vocabulary (the flat).

    READ          the mapping reads it (`predict._openrlhf`)
    UNMODELLED    it changes the dynamics and the reduced model does not represent it: named, with what it changes,
                  wherever its value is not the neutral one
    the rest      no training step changes with it (hardware, saving, logging, data loading, evaluation, the critic's)
"""

from __future__ import annotations

from typing import Any

from gspo_dynamics.predict._field_tables import LORA, LORA_SCALE, LORA_WEIGHTS, TEMPERATURE

FLAT = frozenset("""
    actor_init_on_gpu actor_learning_rate actor_num_gpus_per_node actor_num_nodes adam_betas adam_offload
    advantage_estimator agent_func_path apply_chat_template async_queue_size async_train attn_implementation
    aux_loss_coef best_metric_key bf16 ckpt_path colocate_actor_ref colocate_all_models colocate_critic_reward
    critic_learning_rate critic_num_gpus_per_node critic_num_nodes critic_pretrain dataloader_num_workers
    deepcompile deepspeed_enable_sleep disable_ds_ckpt disable_fast_tokenizer disable_trace_cache
    ds_tensor_parallel_size dual_clip dynamic_filtering dynamic_filtering_reward_range ema_beta enable_ema
    enable_prefix_caching enable_vllm_is_correction enforce_eager entropy_loss_coef eps_clip eps_clip_low_high
    eval_dataset eval_n_samples_per_prompt eval_split eval_steps eval_temperature flash_attn
    freeze_visual_encoder freezing_actor_steps full_determinism gamma generate_max_len grad_accum_dtype
    gradient_checkpointing gradient_checkpointing_use_reentrant image_key init_kl_coef input_key input_template
    kl_estimator kl_horizon kl_target l2 label_key lambd load_checkpoint load_in_4bit local_rank logging_steps
    lora_alpha lora_dropout lora_rank lr_scheduler lr_warmup_ratio max_ckpt_mem max_ckpt_num max_epochs
    max_images_per_prompt max_len max_new_tokens max_norm max_samples max_tokens_per_gpu
    micro_rollout_batch_size micro_train_batch_size n_samples_per_prompt no_advantage_std_norm normalize_reward
    num_episodes overlap_comm overlong_buffer_len overlong_penalty_factor packing_samples param_dtype
    partial_rollout perf policy_loss_type pretrain pretrain_data pretrain_data_probs pretrain_split prompt_data
    prompt_data_probs prompt_max_len prompt_split ptx_coef ref_num_gpus_per_node ref_num_nodes
    ref_reward_offload remote_rm_url reward_clip_range reward_num_gpus_per_node reward_num_nodes reward_pretrain
    ring_attn_size ring_head_stride rollout_batch_size rollout_max_tokens_per_gpu save_hf_ckpt save_path
    save_steps save_value_network seed stop_properly_penalty_coef target_modules temperature top_p torch_compile
    train_batch_size train_max_tokens_per_gpu universal_ckpt use_ds_universal_ckpt use_dynamic_batch use_icepop
    use_kl_estimator_k3 use_kl_loss use_liger_kernel use_linger_kernel use_ms use_tensorboard use_wandb
    value_clip value_head_prefix vllm_enable_sleep vllm_generate_batch_size vllm_gpu_memory_utilization
    vllm_is_correction_type vllm_is_truncated_threshold vllm_num_engines vllm_sync_backend vllm_sync_with_ray
    vllm_tensor_parallel_size wandb_group wandb_org wandb_project wandb_run_name zero_stage zpg
""".split())
DOTTED = frozenset("""
    actor.adam.betas actor.adam.eps actor.adam.lr actor.adam.weight_decay actor.aux_loss_coef actor.dual_clip
    actor.entropy_coef actor.eps_clip actor.eps_clip_low_high actor.freeze_visual_encoder
    actor.gradient_checkpointing_enable actor.gradient_checkpointing_reentrant actor.lr_scheduler
    actor.lr_warmup_ratio actor.max_norm actor.min_lr_ratio actor.model_name_or_path actor.muon.lr
    actor.muon.momentum actor.muon.nesterov actor.muon.no_nesterov actor.muon.ns_steps actor.num_gpus_per_node
    actor.num_nodes actor.optim actor.policy_loss_type algo.advantage.estimator algo.advantage.gamma
    algo.advantage.is_correction_enable algo.advantage.is_correction_threshold algo.advantage.is_correction_type
    algo.advantage.lambd algo.advantage.no_std_norm algo.dynamic_filtering_enable algo.dynamic_filtering_range
    algo.kl.estimator algo.kl.horizon algo.kl.init_coef algo.kl.target algo.kl.use_loss ckpt.best_metric_key
    ckpt.disable_ds ckpt.load_enable ckpt.max_mem ckpt.max_num ckpt.output_dir ckpt.path ckpt.save_hf
    ckpt.save_steps critic.adam.betas critic.adam.eps critic.adam.lr critic.adam.weight_decay
    critic.freezing_steps critic.lr_scheduler critic.lr_warmup_ratio critic.max_norm critic.min_lr_ratio
    critic.model_name_or_path critic.muon.lr critic.muon.momentum critic.muon.nesterov critic.muon.no_nesterov
    critic.muon.ns_steps critic.num_gpus_per_node critic.num_nodes critic.optim critic.save_value_network
    critic.value_clip data.apply_chat_template data.dataloader_num_workers data.disable_fast_tokenizer
    data.image_key data.input_key data.input_template data.label_key data.max_images_per_prompt data.max_len
    data.max_samples data.prompt_dataset data.prompt_probs data.prompt_split ds.adam_offload
    ds.attn_implementation ds.deepcompile ds.enable_sleep ds.experts_implementation ds.grad_accum_dtype
    ds.load_in_4bit ds.lora.alpha ds.lora.dropout ds.lora.rank ds.lora.target_modules ds.overlap_comm
    ds.packing_samples ds.param_dtype ds.ring_attn_head_stride ds.ring_attn_size ds.tensor_parallel_size
    ds.use_liger_kernel ds.use_universal_ckpt ds.value_head_prefix ds.zero_stage ds.zpg eval.dataset
    eval.n_samples_per_prompt eval.split eval.steps eval.temperature logger.logging_steps logger.tensorboard_dir
    logger.wandb.group logger.wandb.key logger.wandb.org logger.wandb.project logger.wandb.run_name
    ref.num_gpus_per_node ref.num_nodes ref.offload reward.clip_range reward.model_name_or_path
    reward.normalize_enable reward.num_gpus_per_node reward.num_nodes reward.offload reward.overlong_buffer_len
    reward.overlong_penalty_factor reward.remote_url reward.stop_properly_penalty_coef rollout.batch_size
    rollout.max_new_tokens rollout.max_tokens_per_gpu rollout.micro_batch_size rollout.n_samples_per_prompt
    rollout.temperature rollout.top_p rollout.vllm_generate_batch_size train.agent_func_path train.async_enable
    train.async_queue_size train.batch_size train.colocate_actor_ref train.colocate_all
    train.colocate_critic_reward train.dynamic_batch_enable train.ema_beta train.enable_ema
    train.full_determinism_enable train.max_epochs train.max_tokens_per_gpu train.micro_batch_size
    train.num_episodes train.partial_rollout_enable train.seed vllm.enable_prefix_caching vllm.enable_sleep
    vllm.enforce_eager vllm.gpu_memory_utilization vllm.num_engines vllm.sync_backend vllm.sync_with_ray
    vllm.tensor_parallel_size
""".split())
RENAMED = {  # dotted (ed62d0e2 on) -> the flat name it replaced, for every argument the mapping reads or names
    "algo.advantage.estimator": "advantage_estimator", "algo.advantage.no_std_norm": "no_advantage_std_norm",
    "algo.advantage.gamma": "gamma", "rollout.n_samples_per_prompt": "n_samples_per_prompt",
    "rollout.batch_size": "rollout_batch_size", "train.batch_size": "train_batch_size",
    "train.micro_batch_size": "micro_train_batch_size", "rollout.micro_batch_size": "micro_rollout_batch_size",
    "train.max_epochs": "max_epochs", "train.num_episodes": "num_episodes", "data.max_samples": "max_samples",
    "actor.eps_clip": "eps_clip", "actor.eps_clip_low_high": "eps_clip_low_high", "actor.dual_clip": "dual_clip",
    "actor.policy_loss_type": "policy_loss_type", "algo.kl.init_coef": "init_kl_coef", "algo.kl.use_loss": "use_kl_loss",
    "algo.kl.estimator": "kl_estimator", "algo.kl.target": "kl_target", "actor.adam.lr": "actor_learning_rate",
    "actor.adam.betas": "adam_betas", "actor.adam.weight_decay": "l2", "actor.lr_scheduler": "lr_scheduler",
    "actor.lr_warmup_ratio": "lr_warmup_ratio", "actor.max_norm": "max_norm", "actor.entropy_coef": "entropy_loss_coef",
    "actor.aux_loss_coef": "aux_loss_coef", "algo.dynamic_filtering_enable": "dynamic_filtering",
    "algo.dynamic_filtering_range": "dynamic_filtering_reward_range",
    "algo.advantage.is_correction_enable": "enable_vllm_is_correction", "rollout.top_p": "top_p",
    "rollout.temperature": "temperature", "train.async_enable": "async_train",
    "train.partial_rollout_enable": "partial_rollout", "reward.normalize_enable": "normalize_reward",
    "reward.overlong_buffer_len": "overlong_buffer_len",
    "reward.stop_properly_penalty_coef": "stop_properly_penalty_coef", "ds.lora.rank": "lora_rank",
    "ds.lora.alpha": "lora_alpha", "ds.lora.target_modules": "target_modules", "ds.load_in_4bit": "load_in_4bit",
}
FLAT_NAME = {flat: dotted for dotted, flat in RENAMED.items()}  # the dotted name of a flat one
NEW = {"actor.adam.eps", "actor.min_lr_ratio", "actor.optim"}  # dotted names with no flat one, read as they are
RUN_LENGTH = "max_steps"  # not an OpenRLHF argument: its trainer's own max_steps, len(prompts) x n_samples_per_prompt /
# train_batch_size x num_episodes x max_epochs, which no argument holds; given with --set max_steps=N (or --run-steps)
# R1-Searcher's OpenRLHF fork (RUCAIBox/R1-Searcher at 631167c, OpenRLHF-RAG/openrlhf/cli/train_ppo_ray.py): two
# arguments its parser declares and nothing else in the fork reads, so they change no step
R1_SEARCHER_OWN = frozenset({"group_method", "use_length_reward_in_efficiency"})
KNOWN = FLAT | DOTTED | {RUN_LENGTH} | R1_SEARCHER_OWN  # the names an unknown argument's nearest is looked for among
# the names that say a dict is OpenRLHF's (each in no TRL, verl or gspo-dynamics vocabulary)
MARKERS = frozenset({"advantage_estimator", "n_samples_per_prompt", "rollout_batch_size", "micro_train_batch_size",
                     "init_kl_coef", "actor_learning_rate", "eps_clip", "pretrain", "algo.advantage.estimator",
                     "rollout.n_samples_per_prompt", "rollout.batch_size", "train.batch_size", "actor.adam.lr"})

# argparse's defaults of the arguments read (identical at both commits; actor.min_lr_ratio is c1ba971c's hard-coded 0.1)
DEFAULTS: dict[str, Any] = {
    "advantage_estimator": "gae", "n_samples_per_prompt": 1, "rollout_batch_size": 1024, "train_batch_size": 128,
    "max_epochs": 1, "num_episodes": 1, "eps_clip": 0.2, "eps_clip_low_high": None, "dual_clip": None,
    "policy_loss_type": "ppo", "init_kl_coef": 0.01, "use_kl_loss": False, "kl_estimator": "k1",
    "actor_learning_rate": 1e-6, "adam_betas": [0.9, 0.95], "actor.adam.eps": 1e-8, "l2": 0.0, "max_norm": 1.0,
    "lr_scheduler": "cosine_with_min_lr", "lr_warmup_ratio": 0.03, "actor.min_lr_ratio": 0.1, "actor.optim": "adam",
    "no_advantage_std_norm": False,
}
READ = set(DEFAULTS) | {"micro_train_batch_size", "kl_target", RUN_LENGTH}

# the estimators of `--advantage_estimator` (`experience_maker.compute_advantages_and_returns`): a group's baseline,
# or none (a critic, a batch-whitened return)
GROUP_ESTIMATORS = ("group_norm", "dr_grpo", "rloo", "reinforce_baseline")
OTHER_ESTIMATORS = {"gae": "a critic's value baseline (PPO)", "reinforce": "a batch-whitened return, no group"}

UNMODELLED: dict[str, tuple[tuple[Any, ...], str, None]] = {  # argument: (its neutral values, what it changes, None:
    # no key it acts through, `_field_tables.active_unmodelled`)
    "temperature": ((1, 1.0, None), TEMPERATURE, None),
    "entropy_loss_coef": ((None, 0, 0.0), "adds an entropy bonus: a force away from collapse", None),
    "aux_loss_coef": ((0, 0.0, None), "adds a MoE load-balancing loss", None),
    "dynamic_filtering": ((False, None), "drops groups whose rewards all fall outside the range and samples more (DAPO's "
                          "dynamic sampling): every step keeps its signal, so no zero-std dilution", None),
    "enable_vllm_is_correction": ((False, None), "reweights by pi_train / pi_vllm: corrects the train-inference "
                                  "mismatch (diagnose's train_inference_mismatch)", None),
    "top_p": ((1, 1.0, None), "samples from a truncated distribution: the sampler is not the policy the loss scores", None),
    "async_train": ((False, None), "trains on rollouts a queue holds: one more policy version of staleness", None),
    "partial_rollout": ((False, None), "rollouts that span a weight update: tokens of two policies in a sequence", None),
    "normalize_reward": ((False, None), "normalises rewards by a running mean and std", None),
    "overlong_buffer_len": ((None,), "penalises responses near the length limit (DAPO's overlong shaping)", None),
    "stop_properly_penalty_coef": ((None,), "penalises truncated responses", None),
    "lora_rank": ((0, None), LORA, None),  # audit s43c D2: read as changing no step, unnamed
    "lora_alpha": ((), LORA_SCALE, "lora_rank"),
    "target_modules": ((), LORA_WEIGHTS, "lora_rank"),
    "load_in_4bit": ((False, None), "quantised base weights: the policy scored and sampled is the 4-bit model", None),
}
