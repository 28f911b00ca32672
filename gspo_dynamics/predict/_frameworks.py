"""Each framework's config keys mapped onto the theory's hyperparameters (behind `read_run_config`).

`read_run_config(source)` takes a dict or a JSON / YAML file and returns a `RunSetup`: the theory's
`Hyperparams` (lr, optimizer, refresh interval T, group size G, groups per optimizer step N, clip
range, KL weight beta, off-policy correction), the exact (possibly fractional) T before rounding,
and notes saying every default and assumption used and every key ignored. Impossible or
contradictory values raise `ConfigError` with one sentence.

TRL `GRPOConfig` (TRL >= 0.20; `GRPOTrainer._prepare_inputs` counts micro-batches: one rollout of
generation_batch_size = per_device_train_batch_size x devices x steps_per_generation completions
every steps_per_generation x num_iterations micro-batches, and an optimizer step every
gradient_accumulation_steps of them):

    T = steps_per_generation x num_iterations / gradient_accumulation_steps   optimizer steps per rollout
    N = per_device_train_batch_size x devices x gradient_accumulation_steps / num_generations
    G = num_generations, lr = learning_rate, beta = beta, (eps_low, eps_high) = (epsilon, epsilon_high)
    correction = importance_sampling_level (token | sequence), Adam(adam_beta1, adam_beta2, adam_epsilon)
    advantage = std when scale_rewards is group / batch / true, mean when none / false
    loss_type cispo: TRL caps the detached weight at epsilon_high itself, sg[min(w, epsilon_high)] (ScaleRL's
    eps_max, 5.0 recommended), with no lower bound: eps_high = epsilon_high - 1, eps_low = 1 (`_clip_modes`); an
    epsilon_high <= 1 (TRL's default for it is epsilon) caps every token's weight from the first step, a scaled pg
    gradient until a weight falls under it: read as pg's (no correction), said

(steps_per_generation defaults to gradient_accumulation_steps, so a default config is on-policy:
T = 1 whatever the accumulation; T < 1, several rollouts per optimizer step, is on-policy too. A config may give
generation_batch_size instead, as `GRPOConfig.__post_init__` reads it: steps_per_generation =
generation_batch_size / (per_device_train_batch_size x devices), which must divide. A config saved from a run
holds both, as `__post_init__` filled them in: read when they agree, generation_batch_size = steps_per_generation
x per_device_train_batch_size x devices, and refused otherwise, as TRL refuses a config that sets both.)

verl's mapping is `predict._verl`; OpenRLHF's, `predict._openrlhf`.

Our trainer's config (`gspo_dynamics.train.config.TrainConfig` fields: task, model, objective, ...):
T = steps_per_generation x num_iterations, N = prompts_per_step, G = group_size, the objective's clip
defaults (the trainer's defaults restated, no torch). The theory's own field names (`Hyperparams`: lr, refresh_interval, group_size, ...) read
as they are.

The run's length in optimizer steps, where the config holds it (`run_length`; a pilot forecast reads the
reward at the run's end): TRL max_steps (-1, its default, leaves it to the epochs and the dataset: unset),
verl trainer.total_training_steps, our trainer's steps.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.predict._field_tables import sampling_check
from gspo_dynamics.predict._clip_modes import clip_mode, no_lower_clip, trl_cispo
from gspo_dynamics.predict._optimizers import not_one_of, trl_optimizer
from gspo_dynamics.predict._trl_generation import on_one_process as _on_one_process
from gspo_dynamics.predict._trl_generation import steps_per_generation as _trl_steps_per_generation
from gspo_dynamics.predict._trl_generation import whole_groups_fix as _whole_groups_fix
from gspo_dynamics.theory.hyperparams import SGD, Adam, Hyperparams
from gspo_dynamics.theory.ratios import GRPO_CLIP, GSPO_CLIP

# ---- TRL -------------------------------------------------------------------------------------
# GRPOConfig defaults (TRL >= 0.20) of the keys the mapping reads.
TRL_DEFAULTS: dict[str, Any] = {
    "learning_rate": 1e-6, "num_generations": 8, "num_iterations": 1, "beta": 0.0, "epsilon": 0.2,
    "importance_sampling_level": "token", "scale_rewards": "group", "adam_beta1": 0.9, "adam_beta2": 0.999,
    "adam_epsilon": 1e-8, "gradient_accumulation_steps": 1, "per_device_train_batch_size": 8,
}
# defaults that older TRL releases set otherwise, said beside the default read
TRL_OLDER_DEFAULTS = {"beta": " (older TRL releases defaulted to 0.04: give beta if the run used one of them)"}
TRL_HYPERPARAMETERS = set(TRL_DEFAULTS) | {"steps_per_generation", "generation_batch_size", "epsilon_high", "loss_type"}
TRL_KEYS = TRL_HYPERPARAMETERS | {"num_processes", "world_size", "max_steps"}  # with the run's size and length
SAVED_FIELDS = 100  # a config with this many keys is a run's saved one (GRPOConfig.to_dict: 191 in TRL 1.16), not written
# keys that only a preference-optimisation config has (DPO, ORPO, KTO, CPO, ...)
PREFERENCE_KEYS = {"rpo_alpha", "reference_free", "label_smoothing", "precompute_ref_log_probs", "desirable_weight",
                   "undesirable_weight", "orpo_alpha", "cpo_alpha", "simpo_gamma", "max_prompt_length_dpo"}
PREFERENCE_LOSSES = {"sigmoid", "hinge", "ipo", "exo_pair", "nca_pair", "robust", "bco_pair", "sppo_hard", "aot",
                     "aot_pair", "apo_zero", "apo_down", "discopop", "simpo", "kto"}
# ---- ours ------------------------------------------------------------------------------------
OWN_KEYS = {
    "lr", "refresh_interval", "group_size", "num_groups", "advantage", "std_estimator", "std_eps", "correction",
    "clip_low", "clip_high", "kl_coef", "kl_estimator", "clip_mode", "optimizer", "momentum", "beta1", "beta2", "eps",
}
TRAINER_MARKERS = {"task", "model", "objective"}  # every TrainConfig has all three
# every `train.config.TrainConfig` field (restated, checked equal by tests/predict/test_configs.py): a key outside is
# a typo, as `train --config` refuses it
TRAINER_FIELDS = {
    "task", "task_options", "model", "hf_backend", "objective", "steps", "seed", "init_seed", "prompts_per_step",
    "group_size", "steps_per_generation", "num_iterations", "rollout_chunks", "optimizer", "lr", "lr_schedule",
    "warmup_lr", "warmup_steps", "momentum", "beta1", "beta2", "adam_eps", "weight_decay", "max_grad_norm", "kl_coef",
    "clip_low", "clip_high", "advantage_scale", "temperature", "top_p", "max_new_tokens", "precision", "compile",
    "device", "checkpoint_every", "load_balance_coef", "routing_replay",
}
# `train.config.TrainConfig`'s defaults of the fields the theory reads (a layer above: restated here,
# checked equal by tests/predict/test_configs.py), and each objective's clip range and correction
TRAINER_DEFAULTS: dict[str, Any] = {
    "steps_per_generation": 1, "num_iterations": 1, "prompts_per_step": 4, "group_size": 8, "optimizer": "adamw",
    "lr": 1e-3, "momentum": 0.0, "beta1": 0.9, "beta2": 0.999, "adam_eps": 1e-8, "kl_coef": 0.0,
    "clip_low": None, "clip_high": None, "advantage_scale": None,
}
# the theory's own names: OWN_KEYS and every `Hyperparams` field (a diagnose --json output's hparams hold them all)
OWN_NAMES = OWN_KEYS | {f.name for f in dataclasses.fields(Hyperparams)}
OBJECTIVE_CLIPS = {"gspo": GSPO_CLIP, "gspo_token": GSPO_CLIP, "cispo": (1.0, GRPO_CLIP[1])}  # the rest: GRPO_CLIP
OBJECTIVE_CORRECTIONS = {"pg": "none", "gspo": "sequence"}  # the rest correct per token
SHELL_VARIABLE = re.compile(r"^\$(?:[A-Za-z_]\w*|\{[A-Za-z_]\w*\})$")  # $NAME or ${NAME}: a script's variable


def _number(key: str, value: Any, *, integer: bool = False, positive: bool = False, nonnegative: bool = False,
            unit: bool = False) -> float | int:
    """A finite number (an integer when `integer`; > 0 when `positive`, >= 0 when `nonnegative`, in [0, 1) when
    `unit`: a momentum or decay) or one ConfigError sentence naming the user's key."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if ok and integer:
        ok = float(value) == int(value)
    if ok and positive:
        ok = value > 0
    if ok and (nonnegative or unit):
        ok = value >= 0 and (not unit or value < 1)
    if not ok and isinstance(value, str) and SHELL_VARIABLE.match(value):  # left as written by `_launch_script`
        raise ConfigError(f"config key {key!r} is {value}, a variable the launch script does not set (the caller's "
                          f"shell is not read): give its value with --set {key}=VALUE")
    if not ok:
        kind = ("a number in [0, 1)" if unit else ("a positive " if positive else "a non-negative " if nonnegative
                                                   else "a finite ") + ("integer" if integer else "number"))
        raise ConfigError(f"config key {key!r} must be {kind}, got {value!r}")
    return int(value) if integer else float(value)


def _rounded_refresh(exact: float, notes: list[str], what: str) -> int:
    """The theory's integer T from the exact optimizer steps per rollout (said in a note when it differs)."""
    if exact <= 1.0:
        if exact < 1.0:
            notes.append(f"T = {what} = {exact:g}: more than one rollout per optimizer step, on-policy (T = 1)")
        return 1
    T = round(exact)
    if abs(T - exact) > 1e-9:
        notes.append(f"T = {what} = {exact:g} optimizer steps per rollout: a rollout boundary falls inside an "
                     f"optimizer step; the theory's integer T = {T}")
    return T


PART_GROUP = "a part of a group per optimizer step"  # in the note where N < 1 (`RunSetup.brief_lines` shows it first)


def _groups_per_step(completions: float, G: int, notes: list[str], what: str) -> int:
    """N = completions per optimizer step / G, rounded to at least 1 (said in a note when it is not whole; first where
    a step holds less than one group: the noise per step is then that of fewer responses than N G says)."""
    exact = completions / G
    N = max(1, round(exact))
    if abs(N - exact) > 1e-9:
        part = (f" ({PART_GROUP}: the noise of a step is that of {completions:g} responses, not {N * G}, so the noise "
                "and the pilot's length read low)" if exact < 1 else "")
        notes.append(f"{what} = {completions:g} completions per optimizer step are {exact:g} groups of G = {G}: "
                     f"N = {N} group{'' if N == 1 else 's'} assumed{part}")
    return N


# ---- TRL -------------------------------------------------------------------------------------
def _trl(cfg: dict[str, Any], devices: int | None, notes: list[str],
         refused: list[str], fixes: list[tuple[str, Any, str]]) -> tuple[Hyperparams, float, int]:
    """(the hyperparameters, T before rounding, the generation batch in completions) of a GRPOConfig (module
    docstring); `refused`: gets what TRL itself would refuse, `fixes` the edit that makes it accept it (key, value,
    what it buys)."""
    def get(key):
        if cfg.get(key) is not None:
            return cfg[key]
        notes.append(f"{key} not given: TRL's default {TRL_DEFAULTS[key]!r}" + TRL_OLDER_DEFAULTS.get(key, ""))
        return TRL_DEFAULTS[key]

    G = _number("num_generations", get("num_generations"), integer=True, positive=True)
    if G < 2:
        raise ConfigError(f"num_generations must be >= 2 for group-relative advantages, got {G}")
    sampling_check({key: cfg.get(key) for key in ("temperature", "top_p")})
    ga = _number("gradient_accumulation_steps", get("gradient_accumulation_steps"), integer=True, positive=True)
    batch = _number("per_device_train_batch_size", get("per_device_train_batch_size"), integer=True, positive=True)
    generation = _generation_keys(cfg)
    said = len(notes)
    devices = _devices(cfg, devices, notes, batch, generation)
    assumed_one = len(notes) > said and notes[-1].startswith(NO_DEVICES)
    spg = _trl_steps_per_generation(generation, ga, batch * devices, notes)
    if None not in generation and len(cfg) < SAVED_FIELDS:  # a run's saved config (to_dict, W&B's record: every
        # field) holds both as GRPOConfig.__post_init__ filled them in; one written (a recipe) holds one
        refused.append("TRL refuses a config that sets both steps_per_generation and generation_batch_size (read as "
                       "they agree): give one")
    if (batch * devices * spg) % G:  # GRPOConfig.__post_init__: the generation batch holds whole groups
        fixes.append(_whole_groups_fix(generation, batch, devices, spg, G))
        refused.append(f"TRL refuses this config{_on_one_process(generation, ga, batch, G) if assumed_one else ''}: "
                       f"its generation batch, per_device_train_batch_size x processes x "
                       f"steps_per_generation = {batch} x {devices} x {spg} = {batch * devices * spg}, is not a multiple "
                       f"of num_generations {G} (Unsloth raises the batch to a multiple instead); read as whole groups "
                       "of G")
    mu = _number("num_iterations", get("num_iterations"), integer=True, positive=True)
    exact = spg * mu / ga
    T = _rounded_refresh(exact, notes, f"steps_per_generation x num_iterations / gradient_accumulation_steps = {spg} x {mu} / {ga}")
    N = _groups_per_step(batch * devices * ga, G, notes, f"per_device_train_batch_size x devices x accumulation = {batch} x {devices} x {ga}")
    level = get("importance_sampling_level")
    if level not in ("token", "sequence"):
        raise not_one_of("importance_sampling_level", level, ("token", "sequence"), "TRL's levels")
    eps = _number("epsilon", get("epsilon"), positive=True)
    eps_high = eps if cfg.get("epsilon_high") is None else _number("epsilon_high", cfg["epsilon_high"], positive=True)
    level, eps, eps_high, mode = _trl_loss(cfg, level, eps, eps_high, notes)
    eps = no_lower_clip("epsilon", eps, notes)
    cap = None if cfg.get("delta") is None or mode != "stop" else _number("delta", cfg["delta"], positive=True)
    hp = Hyperparams(lr=_number("learning_rate", get("learning_rate"), positive=True),
                     optimizer=trl_optimizer(cfg, _number, notes), refresh_interval=T, group_size=G, num_groups=N,
                     advantage=_trl_advantage(get("scale_rewards"), notes), correction=level, clip_low=eps,
                     clip_high=eps_high, kl_coef=_number("beta", get("beta"), nonnegative=True), clip_mode=mode, ratio_cap=cap)
    return hp, exact, batch * devices * spg


def _generation_keys(cfg: dict[str, Any]) -> tuple[int | None, int | None]:
    """(steps_per_generation, generation_batch_size), each a positive integer or None where not given."""
    return tuple(None if cfg.get(key) is None else _number(key, cfg[key], integer=True, positive=True)
                 for key in ("steps_per_generation", "generation_batch_size"))


def _trl_advantage(scale: Any, notes: list[str]) -> str:
    """scale_rewards: group (or true) divides by the group's std; batch by one std over the whole batch, a common
    scale: the theory's mean-centred advantage, its scale in the measured stiffness; none (or false) by nothing."""
    if scale in (True, "group", "true"):
        return "std"
    if scale == "batch":
        notes.append("scale_rewards batch: one std over the batch scales every group alike: read as the mean-centred "
                     "advantage (its scale, which grows as the batch's rewards agree, enters the measured stiffness)")
        return "mean"
    if scale in (False, "none", "false"):
        return "mean"
    raise not_one_of("scale_rewards", scale, ("group", "batch", "none", "true", "false"), "TRL's reward scalings")


TRL_LOSSES = ("grpo", "bnpo", "dr_grpo", "dapo", "cispo", "sapo", "vespo", "luspo")


def _trl_loss(cfg: dict[str, Any], level: str, eps: float, eps_high: float,
              notes: list[str]) -> tuple[str, float, float, str]:
    """(correction, eps_low, eps_high, clip_mode) of TRL's loss_type (`GRPOTrainer._compute_loss`): PPO's clip for
    grpo / bnpo / dr_grpo / dapo / luspo; CISPO's capped weight; SAPO's and VESPO's smooth weights, which have no band
    edge, read as an uncorrected push (on the safe side: the theory's collapse limit is then never capped)."""
    loss = cfg.get("loss_type")
    if loss is not None and loss not in TRL_LOSSES:
        raise not_one_of("loss_type", loss, TRL_LOSSES, "TRL's GRPO losses")
    if loss == "cispo":
        return (*trl_cispo(level, eps_high, notes), "cap")
    if loss in ("sapo", "vespo"):
        weight = ("SAPO's soft gate sigmoid(tau (r - 1)) 4 / tau (sapo_temperature_pos / _neg = "
                  f"{cfg.get('sapo_temperature_pos', 1.0)} / {cfg.get('sapo_temperature_neg', 1.05)})" if loss == "sapo"
                  else "VESPO's smooth sequence weight (vespo_k_* / vespo_lambda_*)")
        notes.append(f"loss_type {loss}: {weight} in place of a clip: no band edge, so read as an uncorrected push "
                     "(the collapse limit uncapped, on the safe side); epsilon is not used")
        return "none", eps, eps_high, "stop"
    if loss == "luspo":
        notes.append("loss_type luspo: each sequence's loss is summed over its tokens, so a sequence's push scales with "
                     "its length L (the stiffness a pilot measures includes it); PPO's clip otherwise")
    if level == "sequence" and loss is None:
        notes.append("importance_sampling_level sequence without a loss_type: TRL 1.16's default dapo sums per-token "
                     "terms, so each sequence weighs by its length, not GSPO's per-sequence objective (loss_type grpo "
                     "reproduces the paper)")
    if level == "sequence" and loss in ("bnpo", "dr_grpo", "dapo"):
        notes.append(f"importance_sampling_level sequence under loss_type {loss}: the loss sums per-token terms, so "
                     "each sequence weighs by its length, not GSPO's per-sequence objective (TRL warns; loss_type grpo "
                     "reproduces the paper)")
    return level, eps, eps_high, "stop"


NO_DEVICES = "devices not given"  # `_devices`' note where it assumes 1 process


def _devices(cfg: dict[str, Any], devices: int | None, notes: list[str], batch: int,
             generation: tuple[int | None, int | None]) -> int:
    """Data-parallel processes: the caller's count, else the config's num_processes / world_size, else what a
    saved config's two generation keys give (generation_batch_size / (steps_per_generation x batch), said), else
    1 (said)."""
    if devices is not None:
        if isinstance(devices, bool) or not isinstance(devices, int) or devices < 1:
            raise ConfigError(f"the device count (--devices) must be an integer >= 1, got {devices!r}")
        return devices
    for key in ("num_processes", "world_size"):
        if cfg.get(key) is not None:
            return _number(key, cfg[key], integer=True, positive=True)
    spg, gbs = generation
    if spg is not None and gbs is not None:
        if gbs % (spg * batch) == 0:
            notes.append(f"devices = generation_batch_size / (steps_per_generation x per_device_train_batch_size) = "
                         f"{gbs} / ({spg} x {batch}) = {gbs // (spg * batch)}, from the saved config")
            return gbs // (spg * batch)
    notes.append(f"{NO_DEVICES} (a GRPOConfig does not hold the process count): 1 assumed; "
                 "with D processes every optimizer step holds D times the groups"
                 + (" and generation_batch_size gives D times fewer steps per generation" if gbs is not None else ""))
    return 1


def _refuse_preference_config(cfg: dict[str, Any]) -> None:
    if cfg.get("loss_type") is not None and not isinstance(cfg["loss_type"], str):
        raise ConfigError(f"loss_type must be a name (grpo, dr_grpo, dapo, ...), got {cfg['loss_type']!r}")
    markers = sorted(set(cfg) & PREFERENCE_KEYS)
    if cfg.get("loss_type") in PREFERENCE_LOSSES:
        markers.append(f"loss_type {cfg['loss_type']!r}")
    if markers and "num_generations" not in cfg:
        raise ConfigError(f"this is a preference-optimisation config (DPO / ORPO / KTO: {', '.join(markers)}), not a "
                          "group-based RL one; predict and diagnose --config answer for GRPO / GSPO configs")


def run_length(key: str, value: Any, unset: Any = None) -> int | None:
    """The run's steps from a config's `key` (TRL max_steps, verl trainer.total_training_steps, our trainer's
    steps): None where unset (None, or `unset`: TRL's -1, the length then follows the epochs and the dataset),
    else a positive integer or one ConfigError sentence."""
    if value is None or (unset is not None and not isinstance(value, bool) and value == unset):
        return None
    return _number(key, value, integer=True, positive=True)


# ---- ours ------------------------------------------------------------------------------------
def _trainer(cfg: dict[str, Any], notes: list[str]) -> tuple[Hyperparams, float]:
    """Our trainer's schedule: T = steps_per_generation x num_iterations, N = prompts_per_step."""
    def get(key):
        return TRAINER_DEFAULTS[key] if cfg.get(key) is None else cfg[key]

    objective = cfg["objective"]
    if not isinstance(objective, str):
        raise ConfigError(f"objective must be a name, got {objective!r}")
    T = (_number("steps_per_generation", get("steps_per_generation"), integer=True, positive=True)
         * _number("num_iterations", get("num_iterations"), integer=True, positive=True))
    name = get("optimizer")
    if name not in ("adamw", "sgd"):
        raise ConfigError(f"optimizer must be adamw or sgd, got {name!r}")
    optimizer = (Adam(beta1=_number("beta1", get("beta1")), beta2=_number("beta2", get("beta2")),
                      eps=_number("adam_eps", get("adam_eps"), positive=True))
                 if name == "adamw" else SGD(momentum=_number("momentum", get("momentum"))))
    low, high = OBJECTIVE_CLIPS.get(objective, GRPO_CLIP)
    low = low if get("clip_low") is None else _number("clip_low", get("clip_low"), positive=True)
    high = high if get("clip_high") is None else _number("clip_high", get("clip_high"), positive=True)
    if low >= 1.0:
        notes.append(f"objective {objective}: no lower clip bound (eps_low = {low:g}); the theory's is just below 1")
        low = 1.0 - 1e-6
    scale = get("advantage_scale") or ("none" if objective == "dr_grpo" else "group")
    hp = Hyperparams(lr=_number("lr", get("lr"), positive=True), optimizer=optimizer, refresh_interval=T,
                     group_size=_number("group_size", get("group_size"), integer=True, positive=True),
                     num_groups=_number("prompts_per_step", get("prompts_per_step"), integer=True, positive=True),
                     advantage="mean" if scale == "none" else "std", correction=OBJECTIVE_CORRECTIONS.get(objective, "token"),
                     clip_low=low, clip_high=high, kl_coef=_number("kl_coef", get("kl_coef")),
                     clip_mode=clip_mode(objective))
    return hp, float(T)


def _own(cfg: dict[str, Any]) -> Hyperparams:
    fields = {k: cfg[k] for k in OWN_KEYS - {"optimizer", "momentum", "beta1", "beta2", "eps"} if k in cfg}
    if "lr" not in fields:
        raise ConfigError("the config needs lr (or TRL's learning_rate)")
    name = cfg.get("optimizer", "sgd")
    if isinstance(name, dict):  # {"name": "adam", "beta1": ...} as `Diagnosis.to_json` writes it
        opt = dict(name)
        name = opt.pop("name", "sgd")
    else:
        opt = {k: cfg[k] for k in ("momentum", "beta1", "beta2", "eps") if k in cfg}
    try:
        if name == "sgd":
            optimizer = SGD(**{k: v for k, v in opt.items() if k == "momentum"})
        elif name == "adam":
            optimizer = Adam(**{k: v for k, v in opt.items() if k in ("beta1", "beta2", "eps")})
        else:
            raise ConfigError(f"optimizer must be sgd or adam, got {name!r}")
        return Hyperparams(optimizer=optimizer, **fields)
    except TypeError as exc:
        raise ConfigError(f"bad config value: {exc}") from None
