"""`TrainConfig`: every hyperparameter of one `train` run, validated, loadable from JSON, YAML or TOML.

    config = TrainConfig(task="pattern", model="tiny", objective="gspo", steps=200)
    config = load_config("run.toml", overrides={"lr": 3e-4})     # file, then command-line overrides

Schedule (TRL's GRPOTrainer names): one rollout of `prompts_per_step x steps_per_generation`
prompts, G responses each, feeds T = steps_per_generation x num_iterations optimizer steps:
`num_iterations` passes over its `steps_per_generation` minibatches of N G responses each.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from gspo_dynamics._checks import positive_int
from gspo_dynamics._config_file import load_config_file
from gspo_dynamics._errors import ConfigError
from gspo_dynamics.objectives import STALE_GRADIENT  # noqa: F401 - re-exported for the trainer
from gspo_dynamics.objectives import ADVANTAGE_SCALES, ObjectiveDefaults, get_loss
from gspo_dynamics.train.tasks import TASKS

OPTIMIZERS: tuple[str, ...] = ("adamw", "sgd")
PRECISIONS: tuple[str, ...] = ("auto", "fp32", "bf16")  # auto: bf16 autocast on CUDA, fp32 on CPU
LR_SCHEDULES: tuple[str, ...] = ("constant", "linear")
ROUTING_REPLAYS: tuple[str, ...] = ("none", "experts")  # the built-in MoE replays expert sets; gates stay live
HF_PREFIX = "hf:"  # model hf:DIR, a local Hugging Face model directory (optional extra)
HF_BACKENDS: tuple[str, ...] = ("auto", "native", "wrapper")  # how the trainer runs hf:DIR (`hf.load_hf_policy`)


def _number(name: str, value: Any, *, low: float = 0.0, strict: bool = False, high: float | None = None) -> None:
    ok = not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)
    ok = ok and (value > low if strict else value >= low) and (high is None or value <= high)
    if not ok:
        bound = f"{'>' if strict else '>='} {low}" + ("" if high is None else f" and <= {high}")
        raise ConfigError(f"{name} must be a finite number {bound}, got {value!r}")


def _choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ConfigError(f"{name} must be one of {', '.join(choices)}; got {value!r}")


@dataclass(frozen=True, kw_only=True)
class TrainConfig(ObjectiveDefaults):
    """Hyperparameters of `gspo_dynamics.train.trainer.train` (module docstring for the schedule)."""

    task: str  # a name of `gspo_dynamics.train.tasks.TASKS`
    task_options: dict[str, Any] | None = None  # the task's difficulty knobs (`make_task`), e.g. {"n_digits": 2}
    model: str  # a preset of `MODEL_PRESETS`, a JSON file of `ModelConfig` fields, or hf:DIR (a local HF model)
    # hf:DIR only: auto (the built-in model holding its weights when the architecture is supported,
    # else transformers' forward), native (that or an error) | wrapper (always transformers' forward)
    hf_backend: str = "auto"
    objective: str  # a loss of the registry (`objectives.LOSSES`)
    steps: int = 100  # optimizer steps of the whole run
    # seeds the prompts and the sampler, and the model init and warm-up unless init_seed; a CPU run is a function of it
    seed: int = 0
    # seeds the model init and the supervised warm-up in place of `seed` (None: `seed`): runs that share it
    # start from one checkpoint and differ in their prompts and samples, as reruns of a pretrained model do
    init_seed: int | None = None
    # ---- groups and the refresh interval (TRL names) ----
    group_size: int = 8  # G, responses per prompt (TRL num_generations)
    prompts_per_step: int = 4  # N, prompts per optimizer step over all processes: a minibatch is N G responses
    steps_per_generation: int = 1  # minibatches per rollout (TRL steps_per_generation)
    num_iterations: int = 1  # passes over each rollout (TRL num_iterations, mu in the GRPO paper)
    # generation RNG streams per rollout, each a 1/chunks share of every minibatch's prompts (None: the
    # number of processes, which must divide it); fix it to make a run independent of the process count
    rollout_chunks: int | None = None
    # ---- objective ----
    clip_low: float | None = None  # eps_low; None: the objective's default (`OBJECTIVE_CLIPS`)
    clip_high: float | None = None  # eps_high; None: the objective's default
    advantage_scale: str | None = None  # "group" | "none" | "batch"; None: "none" for dr_grpo, else "group"
    kl_coef: float = 0.0  # beta, weight of the k3 KL to the frozen initial (post warm-up) model
    load_balance_coef: float = 0.0  # MoE: weight of the router's load-balance loss in the update (e.g. 0.01)
    # ---- optimizer ----
    optimizer: str = "adamw"  # adamw | sgd (heavy-ball momentum)
    lr: float = 1e-3  # eta
    lr_schedule: str = "constant"  # constant | linear (to 0 at the last step)
    momentum: float = 0.0  # mu of sgd
    beta1: float = 0.9  # AdamW beta1
    beta2: float = 0.999  # AdamW beta2
    adam_eps: float = 1e-8  # AdamW epsilon
    weight_decay: float = 0.0  # decoupled weight decay (AdamW) or L2 (sgd)
    max_grad_norm: float | None = 1.0  # clip the global gradient norm to this; None: no clipping
    # ---- rollouts ----
    temperature: float = 1.0  # sampling temperature
    top_p: float = 1.0  # nucleus sampling mass
    max_new_tokens: int | None = None  # None: the task's
    routing_replay: str = "none"  # MoE: none | experts (the rollout's expert sets in the update: GSPO's routing replay)
    # ---- cold start ----
    warmup_steps: int = 50  # supervised steps before RL (0: none) so the success rate is neither 0 nor 1
    warmup_lr: float = 3e-3  # learning rate of the supervised warm-up
    # ---- machinery ----
    device: str = "auto"  # auto (cuda if available) | cpu | cuda | cuda:N
    precision: str = "auto"  # auto (bf16 autocast on CUDA only) | fp32 | bf16 (CUDA only)
    compile: bool = False  # torch.compile the model's training forward and, on CUDA, the rollout's decode step
    checkpoint_every: int = 0  # optimizer steps between checkpoints (0: only at the end)

    def __post_init__(self) -> None:
        for name in ("task", "model", "objective"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise ConfigError(f"{name} must be a non-empty string, got {getattr(self, name)!r}")
        _choice("task", self.task, TASKS)
        get_loss(self.objective)  # ConfigError listing the valid names
        _choice("hf_backend", self.hf_backend, HF_BACKENDS)
        if self.hf_backend != "auto" and not self.model.startswith(HF_PREFIX):
            raise ConfigError(f"hf_backend {self.hf_backend!r} applies to hf:DIR models only; model is {self.model!r}")
        if self.task_options is not None and not isinstance(self.task_options, dict):
            raise ConfigError(f"task_options must be a table of the task's knobs, got {self.task_options!r}")
        positive_int("steps", self.steps, 1)
        positive_int("seed", self.seed, 0)
        if self.init_seed is not None:
            positive_int("init_seed", self.init_seed, 0)
        positive_int("group_size", self.group_size, 2)
        positive_int("prompts_per_step", self.prompts_per_step, 1)
        positive_int("steps_per_generation", self.steps_per_generation, 1)
        positive_int("num_iterations", self.num_iterations, 1)
        if self.rollout_chunks is not None:
            positive_int("rollout_chunks", self.rollout_chunks, 1)
            if self.prompts_per_step % self.rollout_chunks:
                raise ConfigError(f"rollout_chunks ({self.rollout_chunks}) must divide prompts_per_step ({self.prompts_per_step})")
        for name in ("clip_low", "clip_high"):
            if getattr(self, name) is not None:
                _number(name, getattr(self, name), strict=True)
        if self.advantage_scale is not None:
            _choice("advantage_scale", self.advantage_scale, ADVANTAGE_SCALES)
        _number("kl_coef", self.kl_coef)
        _number("load_balance_coef", self.load_balance_coef)
        _choice("optimizer", self.optimizer, OPTIMIZERS)
        _number("lr", self.lr, strict=True)
        _choice("lr_schedule", self.lr_schedule, LR_SCHEDULES)
        _number("momentum", self.momentum, high=1.0)
        _number("beta1", self.beta1, high=1.0)
        _number("beta2", self.beta2, high=1.0)
        _number("adam_eps", self.adam_eps, strict=True)
        _number("weight_decay", self.weight_decay)
        if self.max_grad_norm is not None:
            _number("max_grad_norm", self.max_grad_norm, strict=True)
        _number("temperature", self.temperature, strict=True)
        _number("top_p", self.top_p, strict=True, high=1.0)
        if self.max_new_tokens is not None:
            positive_int("max_new_tokens", self.max_new_tokens, 1)
        _choice("routing_replay", self.routing_replay, ROUTING_REPLAYS)
        positive_int("warmup_steps", self.warmup_steps, 0)
        _number("warmup_lr", self.warmup_lr, strict=True)
        if not isinstance(self.device, str) or not (self.device in ("auto", "cpu", "cuda") or self.device.startswith("cuda:")):
            raise ConfigError(f"device must be auto, cpu, cuda or cuda:N; got {self.device!r}")
        _choice("precision", self.precision, PRECISIONS)
        if not isinstance(self.compile, bool):
            raise ConfigError(f"compile must be true or false, got {self.compile!r}")
        positive_int("checkpoint_every", self.checkpoint_every, 0)

    # ---- derived values ----
    @property
    def refresh_interval(self) -> int:
        """T = steps_per_generation x num_iterations, optimizer steps per rollout."""
        return self.steps_per_generation * self.num_iterations

    @property
    def prompts_per_generation(self) -> int:
        """Prompts of one rollout: N x steps_per_generation."""
        return self.prompts_per_step * self.steps_per_generation

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(TrainConfig))
# Fields that may differ between a checkpoint and the run resuming it (they do not change the
# trajectory: a longer `steps` extends a run only under a constant schedule, checked in the trainer).
CONFIG_NAME = "config.json"  # the run's settings, saved in its directory
RESUMABLE_CHANGES: tuple[str, ...] = ("steps", "checkpoint_every", "device", "compile")


# TRL GRPOConfig keys of the same meaning as a setting here (train/_trl_config.py writes them): named for a TRL user
TRL_NAMES = {"learning_rate": "lr", "num_generations": "group_size", "max_steps": "steps", "beta": "kl_coef",
             "epsilon": "clip_low", "epsilon_high": "clip_high", "adam_beta1": "beta1", "adam_beta2": "beta2",
             "optim": "optimizer", "lr_scheduler_type": "lr_schedule", "max_completion_length": "max_new_tokens",
             "scale_rewards": "advantage_scale"}


def _unknown_settings(unknown: list[str]) -> str:
    """The error for settings TrainConfig does not have: each with the setting meant (a TRL name's own, or the
    nearest spelling), and every valid one."""
    def closest(key: str, names) -> str | None:
        return next(iter(difflib.get_close_matches(key, list(names), n=1, cutoff=0.75)), None)

    def meant(key: str) -> str:  # a TRL name's setting; else the nearest setting; else a misspelt TRL name's setting
        near = TRL_NAMES.get(key) or closest(key, FIELDS) or TRL_NAMES.get(closest(key, TRL_NAMES) or "")
        return f"{key} (did you mean {near}?)" if near else key

    trl = " (TRL's names: train takes its own settings; grpo_config.json is the run written for TRL, not for train)" \
        if len(set(unknown) & set(TRL_NAMES)) >= 2 else ""
    return (f"unknown setting{'s' if len(unknown) > 1 else ''} {', '.join(map(meant, unknown))}{trl}; valid settings "
            f"are {', '.join(FIELDS)}")


def config_from_dict(values: Mapping[str, Any]) -> TrainConfig:
    """TrainConfig from a mapping; ConfigError naming an unknown key or a missing required one."""
    unknown = sorted(set(values) - set(FIELDS))
    if unknown:
        raise ConfigError(_unknown_settings(unknown))
    if values.get("task") is not None:  # a wrong name before a missing setting: `--task nope` is the mistake to name
        _choice("task", values["task"], TASKS)
    if values.get("objective") is not None:
        get_loss(values["objective"])
    missing = [name for name in ("task", "model", "objective") if values.get(name) is None]
    if missing:
        raise ConfigError(f"the setting {missing[0]!r} is required (give it in the config file or as --{missing[0]})")
    try:
        return TrainConfig(**values)
    except TypeError as exc:  # cannot happen for known keys, kept as a clear message
        raise ConfigError(str(exc)) from None


def load_config(path: str | Path | None = None, overrides: Mapping[str, Any] | None = None,
                base: Mapping[str, Any] | None = None) -> TrainConfig:
    """Settings from `base` (a resumed run's saved config), then a JSON, YAML or TOML file, then
    `overrides` (None values are left out)."""
    values = dict(base or {})
    values.update(load_config_file(path) if path is not None else {})  # as predict --config reads one
    values.update({k: v for k, v in (overrides or {}).items() if v is not None})
    return config_from_dict(values)


def saved_config(out_dir: str | Path) -> dict[str, Any]:
    """The settings a run saved in `<out_dir>/config.json` (to resume it without repeating them)."""
    path = Path(out_dir) / CONFIG_NAME
    if not path.is_file():
        raise ConfigError(f"cannot resume: {str(path)!r} does not exist (is --out the directory of a run?)")
    return load_config_file(path)
