"""A run's settings in TRL's keys: the `GRPOConfig` (TRL 1.16, one process) that runs the same schedule and loss.

The trainer saves it beside `config.json` as `grpo_config.json`, so that a run of the built-in trainer hands
`predict --config` and `diagnose --config` the file a TRL user has. With N prompts of G completions per optimizer
step (TRL's keys on the left, `TrainConfig` fields on the right):

    num_generations = G                    per_device_train_batch_size = N G,  gradient_accumulation_steps = 1
    steps_per_generation, num_iterations   as they are: TRL's T = steps_per_generation x num_iterations / 1
    learning_rate = lr                     lr_scheduler_type = constant | linear (transformers' linear is
    max_steps = steps, warmup_steps = 0        eta (1 - s / steps), the trainer's own), the model's warm-up
                                               (`warmup_steps`, supervised, before step 0) is not an lr warm-up
    optim = adamw_torch (adam_beta1, adam_beta2, adam_epsilon) | sgd (optim_args "momentum=mu")
    weight_decay, max_grad_norm (0: none), seed, temperature, top_p; beta = kl_coef; max_completion_length = the task's
    scale_rewards = the advantage scale (group | none | batch; dr_grpo's default none written out)
    epsilon = eps_low, epsilon_high = eps_high

and the objective as TRL's loss (`GRPOTrainer._compute_loss`):

    grpo, dr_grpo, dapo    loss_type of the same name, importance_sampling_level token
    gspo                   loss_type grpo (a mean per sequence, then over sequences: GSPO's objective) with
                           importance_sampling_level sequence
    cispo                  loss_type cispo, epsilon_high = 1 + eps_high (TRL caps the weight itself at epsilon_high)

pg (no correction) and gspo_token (a sequence ratio that TRL 1.16 does not offer per token) have no GRPOConfig:
`trl_config` returns None for them.
"""

from __future__ import annotations

from typing import Any

from gspo_dynamics.train.config import TrainConfig

TRL_CONFIG_NAME = "grpo_config.json"  # saved beside CONFIG_NAME
TRL_LOSSES: dict[str, tuple[str, str]] = {  # objective -> (loss_type, importance_sampling_level)
    "grpo": ("grpo", "token"), "dr_grpo": ("dr_grpo", "token"), "dapo": ("dapo", "token"),
    "cispo": ("cispo", "token"), "gspo": ("grpo", "sequence"),
}


def trl_config(config: TrainConfig, max_completion_length: int) -> dict[str, Any] | None:
    """The GRPOConfig keys of `config` (module docstring), or None where TRL has no such loss."""
    if config.objective not in TRL_LOSSES:
        return None
    loss_type, level = TRL_LOSSES[config.objective]
    eps_high = 1.0 + config.eps_high if loss_type == "cispo" else config.eps_high
    optimizer = ({"optim": "adamw_torch", "adam_beta1": config.beta1, "adam_beta2": config.beta2,
                  "adam_epsilon": config.adam_eps} if config.optimizer == "adamw"
                 else {"optim": "sgd", "optim_args": f"momentum={config.momentum}"})
    return {
        "learning_rate": config.lr, "lr_scheduler_type": config.lr_schedule, "warmup_steps": 0,
        "max_steps": config.steps, **optimizer, "weight_decay": config.weight_decay,
        "max_grad_norm": config.max_grad_norm or 0.0, "num_generations": config.group_size,
        "per_device_train_batch_size": config.prompts_per_step * config.group_size,
        "gradient_accumulation_steps": 1, "steps_per_generation": config.steps_per_generation,
        "num_iterations": config.num_iterations, "beta": config.kl_coef, "loss_type": loss_type,
        "importance_sampling_level": level, "epsilon": config.eps_low, "epsilon_high": eps_high,
        "scale_rewards": config.scale, "temperature": config.temperature, "top_p": config.top_p,
        "max_completion_length": max_completion_length, "seed": config.seed,
    }
