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

# flag -> (TrainConfig field, type, help); every flag defaults to None ("not given": the config
# file's value, else the TrainConfig default, which `--help` lists from the dataclass)
_FLAGS: tuple[tuple[str, str, type, str], ...] = (
    ("--task", "task", str, "a task of gspo_dynamics.train.tasks.TASKS"),
    ("--model", "model", str, "a model preset (100k, 1m, 10m, 100m, 1b), a JSON file of ModelConfig fields, or hf:DIR (local HF model)"),
    ("--hf-backend", "hf_backend", str,
     "hf:DIR only: auto (built-in model when the architecture is supported, else transformers') | native | wrapper"),
    ("--objective", "objective", str, "a loss of the registry: pg, grpo, dr_grpo, dapo, cispo, gspo, gspo_token"),
    ("--steps", "steps", int, "optimizer steps"),
    ("--seed", "seed", int, "random seed"),
    ("--init-seed", "init_seed", int, "seed of the starting model (init and warm-up; default: --seed): runs sharing it start alike"),
    ("--group-size", "group_size", int, "G, responses per prompt"),
    ("--prompts-per-step", "prompts_per_step", int, "N, prompts per optimizer step over all processes"),
    ("--steps-per-generation", "steps_per_generation", int, "minibatches per rollout (TRL)"),
    ("--num-iterations", "num_iterations", int, "passes over each rollout (TRL)"),
    ("--rollout-chunks", "rollout_chunks", int, "generation RNG streams per rollout (default: the number of processes)"),
    ("--clip-low", "clip_low", float, "eps_low (default: the objective's)"),
    ("--clip-high", "clip_high", float, "eps_high (default: the objective's)"),
    ("--advantage-scale", "advantage_scale", str, "group | none | batch (default: the objective's)"),
    ("--kl", "kl_coef", float, "beta, weight of the k3 KL to the reference model"),
    ("--load-balance", "load_balance_coef", float, "MoE: weight of the router load-balance loss"),
    ("--optimizer", "optimizer", str, "adamw | sgd"),
    ("--lr", "lr", float, "learning rate"),
    ("--lr-schedule", "lr_schedule", str, "constant | linear"),
    ("--momentum", "momentum", float, "sgd momentum"),
    ("--beta1", "beta1", float, "AdamW beta1"),
    ("--beta2", "beta2", float, "AdamW beta2"),
    ("--weight-decay", "weight_decay", float, "weight decay"),
    ("--max-grad-norm", "max_grad_norm", float, "gradient clipping norm"),
    ("--temperature", "temperature", float, "sampling temperature"),
    ("--top-p", "top_p", float, "nucleus sampling mass"),
    ("--max-new-tokens", "max_new_tokens", int, "completion budget (default: the task's)"),
    ("--routing-replay", "routing_replay", str, "MoE: none | experts"),
    ("--warmup-steps", "warmup_steps", int, "supervised cold-start steps"),
    ("--warmup-lr", "warmup_lr", float, "cold-start learning rate"),
    ("--device", "device", str, "auto | cpu | cuda | cuda:N"),
    ("--precision", "precision", str, "auto (bf16 autocast on CUDA) | fp32 | bf16"),
    ("--checkpoint-every", "checkpoint_every", int,
     "optimizer steps between checkpoints, a multiple of the refresh interval (0: at the end only)"),
)


def _json_table(text: str) -> dict:
    try:
        value = json.loads(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {text!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {text!r}")
    return value


def register(sub) -> None:
    p = sub.add_parser("train", help="train a causal LM with GRPO/GSPO and write TRL-style logs", epilog_from=_epilog)
    p.add_argument("--out", required=True, help="run directory: metrics.jsonl, trainer_state.json (TRL's format), config.json, "
                   "grpo_config.json (the run as a TRL GRPOConfig), checkpoint.pt")
    p.add_argument("--config", help="a JSON or TOML file of TrainConfig settings (flags override it)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out from its checkpoint")
    p.add_argument("--compile", action="store_true", default=None,
                   help="torch.compile the training forward and, on CUDA, the rollout's decode step "
                        "(~15 s of compiling per rollout shape; faster rollouts, benchmarks/RESULTS.md)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the final metrics as one JSON object")
    p.add_argument("--save-hf", metavar="DIR", default=None,
                   help="hf:DIR models: write the final policy to this new directory in transformers' format")
    p.add_argument("--task-options", type=_json_table, default=None,
                   help='the task\'s difficulty knobs as a JSON object, e.g. \'{"n_digits": 2}\'')
    g = p.add_argument_group("settings (TrainConfig fields)")
    for flag, dest, kind, text in _FLAGS:
        g.add_argument(flag, dest=dest, type=kind, default=None, help=text)
    p.set_defaults(run=_cmd_train)


def _epilog() -> str:
    """The TrainConfig defaults of the flags (imported when help is shown: it imports torch)."""
    import dataclasses

    from gspo_dynamics.train.config import TrainConfig

    fields = {f.name: f.default for f in dataclasses.fields(TrainConfig) if f.default is not dataclasses.MISSING}
    shown = ", ".join(f"{flag} {fields[dest]}" for flag, dest, _, _ in _FLAGS if fields.get(dest) is not None)
    return f"Defaults of the flags left out (gspo_dynamics.train.config.TrainConfig): {shown}."


def _cmd_train(args: argparse.Namespace) -> int:
    from gspo_dynamics._progress import Progress
    from gspo_dynamics.train._summary import moved
    from gspo_dynamics.train.config import load_config, saved_config
    from gspo_dynamics.train.trainer import train

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
            summary = moved(result.rows)
            print(f"trained {config.steps} steps into {args.out}{model}" + (f": {summary}" if summary else ""))
    return 0
