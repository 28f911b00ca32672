"""`gspo-dynamics train`: GRPO/GSPO on a causal language model (`gspo_dynamics.train.trainer.train`).

    gspo-dynamics train --task pattern --model 100k --objective gspo --out runs/a --steps 200
    gspo-dynamics train --config run.toml --out runs/a            # settings from a file,
    gspo-dynamics train --config run.toml --out runs/a --lr 3e-4  # flags override the file
    gspo-dynamics train --out runs/a --resume                     # continue from runs/a/checkpoint.pt
    gspo-dynamics train --model hf:llama --save-hf runs/a/hf ...  # also write the policy in transformers' format

Multi-process: `torchrun --nproc-per-node 2 -m gspo_dynamics.cli.main train ...`.
"""

from __future__ import annotations

import argparse
import json

from gspo_dynamics._errors import ConfigError

# flag -> (TrainConfig field, type, help); every flag defaults to None ("not given": the config
# file's value, else the TrainConfig default, which `--help` shows from the dataclass). In a help text, {names} is
# the names the setting takes, from its registry (`_names`), filled in when help is shown (the registries import
# torch). TRL's key of the same meaning is named where there is one (docs/trainer.md).
_FLAGS: tuple[tuple[str, str, type, str], ...] = (
    ("--task", "task", str, "the synthetic task: {names}"),
    ("--model", "model", str, "a model preset ({names}), a JSON file of ModelConfig fields, or hf:DIR (a local "
                              "Hugging Face model)"),
    ("--hf-backend", "hf_backend", str, "hf:DIR only: {names}; auto runs the built-in model holding its weights where "
                                        "the architecture is supported, else transformers' forward"),
    ("--objective", "objective", str, "the loss: {names} (grpo_config.json in --out names it in TRL's loss_type and importance_sampling_level)"),
    ("--steps", "steps", int, "optimizer steps (TRL max_steps)"),
    ("--seed", "seed", int, "random seed of the prompts and the sampling (and of the model, without --init-seed)"),
    ("--init-seed", "init_seed", int, "seed of the starting model (init and warm-up; default: --seed): runs sharing it start alike"),
    ("--group-size", "group_size", int, "G, responses per prompt (TRL num_generations)"),
    ("--prompts-per-step", "prompts_per_step", int,
     "N, prompts per optimizer step over all processes (TRL: per_device_train_batch_size x processes x "
     "gradient_accumulation_steps / num_generations)"),
    ("--steps-per-generation", "steps_per_generation", int,
     "optimizer steps per rollout (TRL steps_per_generation, which counts micro-batches: the same with "
     "gradient_accumulation_steps 1)"),
    ("--num-iterations", "num_iterations", int, "passes over each rollout (TRL num_iterations, mu)"),
    ("--rollout-chunks", "rollout_chunks", int, "generation RNG streams per rollout (default: the number of processes)"),
    ("--clip-low", "clip_low", float, "eps_low of the ratio clip (TRL epsilon; default: the objective's)"),
    ("--clip-high", "clip_high", float, "eps_high of the ratio clip (TRL epsilon_high, which is 1 + eps_high for cispo; "
                                        "default: the objective's)"),
    ("--advantage-scale", "advantage_scale", str, "{names} (TRL scale_rewards; default: the objective's)"),
    ("--kl", "kl_coef", float, "beta, weight of the k3 KL to the reference model (TRL beta; config key kl_coef)"),
    ("--load-balance", "load_balance_coef", float, "MoE: weight of the router load-balance loss (config key "
                                                   "load_balance_coef)"),
    ("--optimizer", "optimizer", str, "{names} (TRL optim adamw_torch | sgd)"),
    ("--lr", "lr", float, "learning rate (TRL learning_rate)"),
    ("--lr-schedule", "lr_schedule", str, "{names}; linear decays to 0 at the last step, with no warm-up (TRL "
                                          "lr_scheduler_type, whose default is linear)"),
    ("--momentum", "momentum", float, "sgd momentum"),
    ("--beta1", "beta1", float, "AdamW beta1 (TRL adam_beta1)"),
    ("--beta2", "beta2", float, "AdamW beta2 (TRL adam_beta2)"),
    ("--weight-decay", "weight_decay", float, "weight decay: decoupled for adamw, L2 for sgd"),
    ("--max-grad-norm", "max_grad_norm", float, "gradient clipping norm (TRL max_grad_norm)"),
    ("--temperature", "temperature", float, "sampling temperature"),
    ("--top-p", "top_p", float, "nucleus sampling mass"),
    ("--max-new-tokens", "max_new_tokens", int, "completion budget (TRL max_completion_length; default: the task's)"),
    ("--routing-replay", "routing_replay", str, "MoE: {names}"),
    ("--sft-warmup-steps", "warmup_steps", int,
     "supervised fine-tuning steps on the task's answers before RL, so the success rate starts neither at 0 nor at 1 "
     "(0: none; config key warmup_steps). Not TRL's warmup_steps, an lr warm-up, which this trainer does not have"),
    ("--sft-warmup-lr", "warmup_lr", float, "learning rate of those supervised steps (config key warmup_lr)"),
    ("--device", "device", str, "auto | cpu | cuda | cuda:N"),
    ("--precision", "precision", str, "{names}; auto is bf16 autocast on CUDA, fp32 on CPU"),
    ("--checkpoint-every", "checkpoint_every", int,
     "optimizer steps between checkpoints, a multiple of the refresh interval (0: at the end only)"),
)
DESCRIPTION = ("Train a causal LM with GRPO/GSPO on a synthetic task (a built-in transformer or a local Hugging Face "
               "model) and write the logs TRL writes, for predict and diagnose.")
USAGE = ("%(prog)s --task TASK --model MODEL --objective LOSS --out DIR [--steps N] ...\n"
         "       %(prog)s --config run.toml --out DIR [flags, which override the file]\n"
         "       %(prog)s --out DIR --resume")
EPILOG = ("examples:\n"
          "  gspo-dynamics train --task pattern --model 100k --objective gspo --steps 150 --steps-per-generation 4 "
          "--out out/a\n"
          "  gspo-dynamics diagnose out/a/trainer_state.json --config out/a/grpo_config.json\n\n"
          "A config file (--config, JSON, YAML or TOML) holds the settings under their config keys: the flags' names "
          "with _ (steps_per_generation), but those named in the flag's help. The settings with a TRL key mean what it "
          "means in TRL's GRPOConfig run with gradient_accumulation_steps 1 (out/a/grpo_config.json is the run as "
          "one); this trainer has no lr warm-up. Multi-process: torchrun --nproc-per-node 2 -m gspo_dynamics.cli.main "
          "train ...")


def _json_table(text: str) -> dict:
    try:
        value = json.loads(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {text!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {text!r}")
    return value


def register(sub) -> None:
    p = sub.add_parser("train", help="train a causal LM with GRPO/GSPO on a synthetic task, writing the logs TRL writes", description=DESCRIPTION,
                       usage=USAGE, epilog_from=lambda: _fill_help(settings))
    p.add_argument("--out", required=True, metavar="DIR", help="run directory: metrics.jsonl, trainer_state.json (TRL's format), config.json, "
                   "grpo_config.json (the run as a TRL GRPOConfig), checkpoint.pt")
    p.add_argument("--config", metavar="FILE", help="a JSON, YAML or TOML file of TrainConfig settings (flags override it)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out from its checkpoint")
    p.add_argument("--compile", action="store_true", default=None,
                   help="torch.compile the training forward and, on CUDA, the rollout's decode step "
                        "(~15 s of compiling per rollout shape; faster rollouts, benchmarks/RESULTS.md)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the final metrics as one JSON object")
    p.add_argument("--save-hf", metavar="DIR", default=None,
                   help="hf:DIR models: write the final policy to this new directory in transformers' format")
    p.add_argument("--task-options", type=_json_table, default=None, metavar="JSON",
                   help='the task\'s difficulty knobs as a JSON object, e.g. \'{"n_digits": 2}\'')
    g = p.add_argument_group("settings (TrainConfig fields)")
    settings = [g.add_argument(flag, dest=dest, type=kind, default=None, help=text,
                               metavar=flag[2:].upper().replace("-", "_")) for flag, dest, kind, text in _FLAGS]
    p.set_defaults(run=_cmd_train)


def _names() -> dict[str, tuple[str, ...]]:
    """The names each enumerated setting takes, from the registries (imported when needed: they import torch)."""
    from gspo_dynamics.objectives import ADVANTAGE_SCALES, LOSSES
    from gspo_dynamics.train import MODEL_PRESETS, TASKS
    from gspo_dynamics.train.config import HF_BACKENDS, LR_SCHEDULES, OPTIMIZERS, PRECISIONS, ROUTING_REPLAYS

    return {"task": TASKS, "model": tuple(MODEL_PRESETS), "hf_backend": HF_BACKENDS, "objective": tuple(LOSSES),
            "advantage_scale": ADVANTAGE_SCALES, "optimizer": OPTIMIZERS, "lr_schedule": LR_SCHEDULES,
            "routing_replay": ROUTING_REPLAYS, "precision": PRECISIONS}


def _fill_help(settings: list[argparse.Action]) -> str:
    """When help is shown: each setting's help with its names and its TrainConfig default; returns the epilog."""
    import dataclasses

    from gspo_dynamics.train.config import TrainConfig

    defaults = {f.name: f.default for f in dataclasses.fields(TrainConfig) if f.default is not dataclasses.MISSING}
    names, texts = _names(), {dest: text for _, dest, _, text in _FLAGS}
    for action in settings:
        if action.dest in texts:
            text = texts[action.dest].replace("{names}", " | ".join(names.get(action.dest, ())))
            default = defaults.get(action.dest)
            if default is not None and "default:" not in text:
                text = f"{text[:-1]}; default: {default})" if text.endswith(")") else f"{text} (default: {default})"
            action.help = text.replace("%", "%%")
    return EPILOG


def _check_names(args: argparse.Namespace) -> None:
    """A flag's unknown name is one ConfigError naming the flag and the names it takes, before any other check."""
    for flag, dest, _, _ in _FLAGS:
        value, names = getattr(args, dest), _names().get(dest)
        if value is not None and names and dest != "model" and value not in names:  # a model may be a file or hf:DIR
            raise ConfigError(f"{flag} {value}: one of {', '.join(names)}")


def _cmd_train(args: argparse.Namespace) -> int:
    from gspo_dynamics._progress import Progress
    from gspo_dynamics.train.config import load_config, saved_config
    from gspo_dynamics.train.trainer import train

    _check_names(args)
    overrides = {dest: getattr(args, dest) for _, dest, _, _ in _FLAGS}
    overrides["compile"] = args.compile
    overrides["task_options"] = args.task_options
    config = load_config(args.config, overrides, base=saved_config(args.out) if args.resume else None)
    bar = Progress(config.steps, "train", enabled=False if args.no_progress else None)
    try:
        result = train(config, args.out, resume=args.resume, progress=lambda done, total: bar.update(done),
                       save_hf=args.save_hf)
    finally:
        bar.close()
    if result.is_main:
        last = result.rows[-1] if result.rows else {}
        if args.json:
            print(json.dumps(last, allow_nan=False))
        else:
            model = "" if result.backend == "builtin" else f" ({config.model} on the {result.backend} path)"
            summary = result.moved()
            print(f"trained {config.steps} steps into {args.out}{model}" + (f": {summary}" if summary else ""))
    return 0
