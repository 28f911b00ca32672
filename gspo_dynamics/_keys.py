"""The theory's hyperparameters in each framework's config keys, for help and advice text (the mapping itself, with
its equations, is `predict/_frameworks.py`)."""

REFRESH_INTERVAL_KEYS = ("TRL: steps_per_generation x num_iterations / gradient_accumulation_steps; verl: ppo_epochs x "
                         "data.train_batch_size / ppo_mini_batch_size")  # T
KL_WEIGHT_KEYS = "TRL: beta; verl: actor_rollout_ref.actor.kl_loss_coef with use_kl_loss"  # beta
LR_KEYS = "TRL: learning_rate; verl: actor_rollout_ref.actor.optim.lr"  # eta
CLIP_HIGH_KEYS = "TRL: epsilon_high; verl: actor_rollout_ref.actor.clip_ratio_high"  # eps_high
ADAM_BETA1_KEYS = "TRL: adam_beta1; verl: actor_rollout_ref.actor.optim.betas"  # Adam's momentum
GRAD_CLIP_KEYS = "TRL/transformers: max_grad_norm; verl: actor_rollout_ref.actor.grad_clip"  # the gradient-norm clip
MAX_LENGTH_KEYS = "TRL: max_completion_length; verl: data.max_response_length"  # the completion length cap
# G; TRL's batch counts completions, so num_generations alone regroups a step's completions and leaves its noise
GROUP_SIZE_KEYS = ("TRL: num_generations with per_device_train_batch_size by the same factor; verl: "
                   "actor_rollout_ref.rollout.n")
PROMPTS_KEYS = ("TRL: per_device_train_batch_size x devices / num_generations; verl: data.train_batch_size")  # N
# N G, a step's completions (the samples its reward is the mean of)
COMPLETIONS_KEYS = ("TRL: per_device_train_batch_size, or gradient_accumulation_steps with steps_per_generation alike "
                    "(T kept); verl: actor_rollout_ref.rollout.n or data.train_batch_size")
EVAL_KEYS = "TRL: eval_strategy, eval_steps with an eval_dataset; verl: trainer.test_freq"  # an eval set
