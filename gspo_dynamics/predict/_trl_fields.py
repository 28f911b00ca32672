"""Every field of TRL's GRPOConfig (with transformers' TrainingArguments under it), and of the ModelConfig and script
arguments a recipe for `trl grpo --config`, TrlParser or open-r1 holds beside it, sorted by what the mapping does
with it. A test enumerates the installed TRL's fields and fails on one in none of these tables.

    READ          the mapping reads it (`predict._frameworks`, `predict._optimizers`)
    UNMODELLED    it changes the dynamics and the reduced model does not represent it: named, with what it changes,
                  wherever its value is not the neutral one (and only where the field it acts through is on)
    NO_DYNAMICS   logging, saving, hardware, data loading, evaluation, which model and data: it changes no
                  training step
    OLDER_RELEASES  a field of an older TRL / transformers release that changes no training step

A key in none of them is refused as a likely typo (`predict._config_checks`), as GRPOConfig refuses it.
"""

from __future__ import annotations

from typing import Any

from gspo_dynamics.predict._field_tables import LORA, LORA_WEIGHTS, TEMPERATURE, abbreviation_of

READ = {
    "learning_rate", "num_generations", "num_iterations", "beta", "epsilon", "epsilon_high", "delta",
    "importance_sampling_level", "scale_rewards", "loss_type", "optim", "optim_args", "adam_beta1", "adam_beta2",
    "adam_epsilon", "gradient_accumulation_steps", "per_device_train_batch_size", "steps_per_generation",
    "generation_batch_size", "max_steps", "lr_scheduler_type", "lr_scheduler_kwargs", "warmup_steps", "warmup_ratio",
    "weight_decay", "max_grad_norm", "sapo_temperature_neg", "sapo_temperature_pos", "vespo_k_pos", "vespo_lambda_pos",
    "vespo_k_neg", "vespo_lambda_neg", "max_completion_length", "num_train_epochs",
    "num_processes", "world_size",  # not GRPOConfig's: a run's process count where a user adds it
}

# GRPOConfig's own fields that transformers' TrainingArguments does not have (TRL 1.16; max_prompt_length an older
# release's), the ones a GRPO run's recorded config holds whatever it left at its default: a record with none of them
# is another trainer's run
GRPO_OWN = frozenset({
    "num_generations", "num_iterations", "beta", "epsilon", "epsilon_high", "loss_type", "max_completion_length",
    "max_prompt_length", "steps_per_generation", "generation_batch_size", "importance_sampling_level", "scale_rewards",
    "use_vllm", "reward_weights", "mask_truncated_completions", "temperature", "top_p", "sync_ref_model",
})

# field: (neutral values, what it changes, the field that must be on for it to act, or None)
UNMODELLED: dict[str, tuple[tuple[Any, ...], str, str | None]] = {
    "temperature": ((1, 1.0, None), TEMPERATURE, None),
    "top_entropy_quantile": ((1.0, 1), "trains only the tokens in the top quantile of entropy: a sparser gradient "
                             "from the uncertain tokens", None),
    "mask_truncated_completions": ((False,), "drops truncated completions from the loss: fewer samples per group and "
                                   "a push away from long answers", None),
    "off_policy_mask_threshold": ((None,), "masks negative-advantage sequences whose KL to the sampler passes it: part "
                                  "of the stale push removed", None),
    "vllm_importance_sampling_correction": ((False,), "reweights by pi_train / pi_vLLM: corrects the train-inference "
                                            "mismatch (diagnose's train_inference_mismatch)", "use_vllm"),
    "vllm_importance_sampling_mode": ((), "how the train-inference weight is truncated or masked", "use_vllm"),
    "vllm_importance_sampling_clip_max": ((), "the train-inference weight's upper bound", "use_vllm"),
    "vllm_importance_sampling_clip_min": ((None,), "the train-inference weight's lower bound", "use_vllm"),
    "vllm_importance_sampling_cap": ((None,), "the train-inference weight's cap", "use_vllm"),
    "use_vllm": ((False,), "samples with vLLM: its log-probs differ from the trainer's (a train-inference mismatch)", None),
    "entropy_coef": ((0.0, 0), "adds an entropy bonus: a force away from collapse", None),
    "use_adaptive_entropy": ((False,), "an entropy bonus steered to a target entropy", None),
    "entropy_coef_min": ((), "the adaptive entropy bonus's bounds", "use_adaptive_entropy"),
    "entropy_coef_max": ((), "the adaptive entropy bonus's bounds", "use_adaptive_entropy"),
    "entropy_coef_delta": ((), "the adaptive entropy bonus's step", "use_adaptive_entropy"),
    "entropy_target": ((), "the adaptive entropy bonus's target", "use_adaptive_entropy"),
    "reward_weights": ((None,), "weights of several reward functions: the reward's scale and mixture", None),
    "multi_objective_aggregation": (("sum_then_normalize",), "how several rewards become one advantage", None),
    "sync_ref_model": ((False,), "moves the KL's reference toward the policy: a weaker pull back", "beta"),
    "ref_model_mixup_alpha": ((), "the reference's update weight", "sync_ref_model"),
    "ref_model_sync_steps": ((), "the reference's update interval", "sync_ref_model"),
    "use_bias_correction_kl": ((True,), "the KL estimate without the importance weight", "beta"),
    "disable_dropout": ((True, False), "dropout, where the model has any, on in training: the trainer's log-probs differ "
                        "from the sampler's (named nowhere: TRL's default, and most LLMs have none)", None),
    "top_p": ((1.0, 1), "samples from a truncated distribution: the sampler is not the policy the loss scores", None),
    "top_k": ((0, None), "samples from a truncated distribution: the sampler is not the policy the loss scores", None),
    "min_p": ((None, 0.0), "samples from a truncated distribution: the sampler is not the policy the loss scores", None),
    "repetition_penalty": ((1.0, 1), "samples from a penalised distribution: the sampler is not the policy", None),
    "generation_kwargs": ((None,), "sampling options: the sampler may not be the policy the loss scores", None),
    "router_aux_loss_coef": ((None, 0.0), "adds a mixture-of-experts router loss", None),
    "cast_lm_head_to_fp32": ((False,), "the logits' precision: a smaller train-inference mismatch", None),
    # without vLLM the trainer's own model samples in the trainer's precision: no sampler to differ from
    "bf16": ((False,), "trains in bf16 beside vLLM's sampler: log-probs differ from the sampler's (a train-inference "
             "mismatch)", "use_vllm"),
    "fp16": ((False,), "trains in fp16: its loss scaler skips the steps whose gradients overflow (and beside vLLM's "
             "sampler, log-probs differ from the sampler's)", None),
    "neftune_noise_alpha": ((None,), "noise added to the embeddings in training", None),
    "max_tool_calling_iterations": ((None,), "multi-turn tool calls inside a completion", None),
    "label_smoothing_factor": ((0.0, 0), "smoothed labels (not used by GRPO's loss)", None),
    # TRL's ModelConfig (`trl grpo --config`, TrlParser, open-r1 recipes): the weights trained and their precision
    "dtype": ((None, "float32"), "loads the weights in this dtype: trained in it without an fp32 master copy, an "
              "update below its resolution rounds away", None),
    "torch_dtype": ((None, "float32"), "loads the weights in this dtype: trained in it without an fp32 master copy, "
                    "an update below its resolution rounds away", None),  # ModelConfig's name before dtype
    "use_peft": ((False,), LORA, None),
    "lora_r": ((), "the LoRA adapters' rank", "use_peft"),
    "lora_alpha": ((), "the LoRA update's scale lora_alpha / lora_r: an lr multiplier", "use_peft"),
    "use_rslora": ((False,), "the LoRA update's scale lora_alpha / sqrt(lora_r): an lr multiplier", "use_peft"),
    "use_dora": ((False,), "a weight-decomposed (DoRA) update: direction and magnitude trained apart", "use_peft"),
    "lora_dropout": ((0.0, 0), "dropout on the adapters in training: the trainer's log-probs differ from the "
                     "sampler's", "use_peft"),
    "lora_target_modules": ((None,), LORA_WEIGHTS, "use_peft"),
    "lora_target_parameters": ((None,), LORA_WEIGHTS, "use_peft"),
    "lora_modules_to_save": ((None,), "weights trained in full beside the adapters", "use_peft"),
    "load_in_4bit": ((False,), "quantised base weights: the policy scored and sampled is the 4-bit model", None),
    "load_in_8bit": ((False,), "quantised base weights: the policy scored and sampled is the 8-bit model", None),
    "bnb_4bit_quant_type": ((), "the 4-bit quantisation's format", "load_in_4bit"),
    "use_bnb_nested_quant": ((False,), "the 4-bit quantisation's constants quantised too", "load_in_4bit"),
    # the GRPO scripts' rewards (TRL's GRPOScriptArguments; open-r1's, with its rewards' parameters at its defaults)
    "reward_funcs": ((None,), "which reward functions: the reward's distribution (a pilot measures it)", None),
    "reward_model_name_or_path": ((None,), "scores with a reward model: the reward's distribution (a pilot "
                                  "measures it)", None),
    "cosine_min_value_wrong": ((0.0, 0), "open-r1's cosine length reward's range", "reward_funcs"),
    "cosine_max_value_wrong": ((-0.5,), "open-r1's cosine length reward's range", "reward_funcs"),
    "cosine_min_value_correct": ((0.5,), "open-r1's cosine length reward's range", "reward_funcs"),
    "cosine_max_value_correct": ((1.0, 1), "open-r1's cosine length reward's range", "reward_funcs"),
    "cosine_max_len": ((1000,), "open-r1's cosine length reward's length scale", "reward_funcs"),
    "repetition_n_grams": ((3,), "open-r1's repetition penalty's n-gram", "reward_funcs"),
    "repetition_max_penalty": ((-1.0, -1), "open-r1's repetition penalty's size", "reward_funcs"),
    "code_language": (("python",), "the language open-r1's code rewards check", "reward_funcs"),
    "code_eval_scoring_mode": (("weighted_sum",), "how open-r1's code rewards score the tests passed (0/1 or a "
                               "share): the reward's distribution", "reward_funcs"),
    "max_completion_len": ((16384,), "open-r1's soft overlong punishment's length limit (characters)", "reward_funcs"),
    "soft_punish_cache": ((4096,), "open-r1's soft overlong punishment's margin (characters)", "reward_funcs"),
}

NO_DYNAMICS = {
    # run bookkeeping, logging, saving, hub
    "output_dir", "overwrite_output_dir", "run_name", "project", "report_to", "logging_dir", "logging_strategy",
    "logging_steps", "logging_first_step", "logging_nan_inf_filter", "log_on_each_node", "log_level",
    "log_level_replica", "disable_tqdm", "trackio_space_id", "trackio_bucket_id", "trackio_static_space_id",
    "include_num_input_tokens_seen", "log_completions", "log_multimodal", "num_completions_to_print",
    "log_unique_prompts", "log_completions_hub_repo", "save_strategy", "save_steps", "save_total_limit",
    "save_on_each_node", "save_only_model", "save_safetensors", "enable_jit_checkpoint", "push_to_hub", "hub_token",
    "hub_private_repo", "hub_model_id", "hub_strategy", "hub_always_push", "hub_revision", "load_best_model_at_end",
    "metric_for_best_model", "greater_is_better", "resume_from_checkpoint", "ignore_data_skip",
    "restore_callback_states_from_checkpoint", "skip_memory_metrics", "do_train", "do_eval", "do_predict",
    # evaluation
    "eval_strategy", "evaluation_strategy", "eval_steps", "eval_delay", "per_device_eval_batch_size",
    "prediction_loss_only", "eval_on_start", "eval_do_concat_batches", "eval_use_gather_object",
    "eval_accumulation_steps", "include_for_metrics", "batch_eval_metrics", "bf16_full_eval", "fp16_full_eval",
    "num_generations_eval",
    # hardware, parallelism, speed (the same steps, computed elsewhere or faster)
    "tf32", "activation_checkpointing", "activation_checkpointing_kwargs", "gradient_checkpointing",
    "gradient_checkpointing_kwargs", "torch_compile", "torch_compile_backend", "torch_compile_mode", "use_liger_kernel",
    "liger_kernel_config", "use_cache", "torch_empty_cache_steps", "auto_find_batch_size", "use_cpu",
    "accelerator_config", "parallelism_config", "ddp_find_unused_parameters", "ddp_bucket_cap_mb",
    "ddp_broadcast_buffers", "ddp_static_graph", "ddp_backend", "ddp_timeout", "fsdp", "fsdp_config", "deepspeed",
    "debug", "local_rank", "ds3_gather_for_generation", "average_tokens_across_devices", "optim_target_modules",
    "vllm_mode", "vllm_model_impl", "vllm_enable_sleep_mode", "vllm_server_base_url", "vllm_server_host",
    "vllm_server_port", "vllm_server_timeout", "vllm_group_port", "vllm_gpu_memory_utilization",
    "vllm_max_model_length", "vllm_tensor_parallel_size", "use_transformers_continuous_batching",
    "transformers_continuous_batching_config", "use_transformers_paged", "cache_implementation", "pad_to_multiple_of",
    "model_init_kwargs", "trust_remote_code",
    # data loading and seeds (the order of prompts, not the step)
    "seed", "data_seed", "full_determinism", "shuffle_dataset", "dataloader_drop_last", "dataloader_num_workers",
    "dataloader_pin_memory", "dataloader_persistent_workers", "dataloader_prefetch_factor",
    "dataloader_multiprocessing_context", "dataloader_in_order", "remove_unused_columns", "label_names",
    "train_sampling_strategy", "length_column_name", "group_by_length", "chat_template_kwargs",
    "vllm_structured_outputs_regex",
    # recipe keys of TRL's CLI scripts and open-r1 (ModelConfig, ScriptArguments, DatasetMixtureConfig, TrlParser's
    # env; open-r1's GRPOConfig and GRPOScriptArguments): which model and data, where it runs, where it reports
    "model_name_or_path", "model_revision", "attn_implementation", "lora_task_type", "bnb_4bit_quant_storage",
    "dataset_name", "dataset_config", "dataset_train_split", "dataset_test_split", "dataset_streaming",
    "ignore_bias_buffers", "gradient_checkpointing_use_reentrant", "datasets", "streaming", "test_split_size", "env",
    "dataset_mixture", "dataset_prompt_column", "system_prompt", "chat_template", "benchmarks", "callbacks",
    "hub_model_revision", "overwrite_hub_revision", "push_to_hub_revision", "wandb_entity", "wandb_project",
    "wandb_run_group", "code_eval_test_batch_size", "parallel_code_exec_per_proc", "e2b_router_url",
    "morph_router_url", "code_provider", "ioi_provider",
}


# fields of older releases (TRL 0.14-0.2x, transformers 4.x) that TRL 1.16 and transformers 5 dropped, none of which
# changes a training step: a config such a release saved is read, not refused as holding a typo
OLDER_RELEASES = {
    "max_prompt_length",  # prompts truncated: the data, not the step
    "vllm_device", "vllm_dtype", "vllm_max_model_len", "vllm_enable_prefix_caching", "vllm_guided_decoding_regex",
    "use_liger_loss", "wandb_log_unique_prompts",
    "push_to_hub_model_id", "push_to_hub_organization", "push_to_hub_token", "fp16_backend", "half_precision_backend",
    "mp_parameters", "sharded_ddp", "jit_mode_eval", "use_ipex", "fp16_opt_level", "tpu_num_cores", "tpu_metrics_debug",
    "past_index", "ray_scope", "dispatch_batches", "split_batches", "include_tokens_per_second", "use_mps_device",
    "no_cuda", "torchdynamo", "xpu_backend", "include_inputs_for_metrics", "fsdp_min_num_params",
    "fsdp_transformer_layer_cls_to_wrap", "use_legacy_prediction_loop",
}
KNOWN = READ | set(UNMODELLED) | NO_DYNAMICS | OLDER_RELEASES


def unabbreviated(cfg: dict[str, Any], command_line) -> list[str]:
    """Rename in place each of the `command_line` names of `cfg` that is no field but begins exactly one (KNOWN) the
    config does not also give, as TRL's parser does (argparse's abbreviations: `--num_train_epoch 6` is
    num_train_epochs); a note per name so read."""
    notes = []
    for name in sorted(k for k in command_line if k in cfg):
        whole = abbreviation_of(name, KNOWN, cfg)
        if whole is not None:
            cfg[whole] = cfg.pop(name)
            notes.append(f"--{name}: read as {whole}, the one field it begins (TRL's parser takes an argument's "
                         "abbreviation)")
    return notes


def unknown(cfg: dict[str, Any]) -> list[str]:
    """The config's keys in no table: a typo, or a field of a TRL release this tool does not know."""
    return sorted(set(cfg) - KNOWN, key=str)
