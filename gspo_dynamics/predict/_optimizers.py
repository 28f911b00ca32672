"""A config's optimizer and lr schedule in the theory's terms: TRL's (transformers') `optim` and `lr_scheduler_type`,
verl's `optim.optimizer` and `optim.lr_scheduler_type`.

The theory knows heavy-ball SGD(mu) and Adam(b1, b2, eps) (`theory.hyperparams`); in its linear regime Adam is heavy
ball with mu = b1 and a step normalised by the gradient's second moment. So

    adamw_* / adam* / paged_adamw_* / *AdamW*   Adam(adam_beta1, adam_beta2, adam_epsilon)
    sgd / SGD                                   SGD(momentum), momentum from optim_args / override_optimizer_config
    adafactor                                   Adam(b1 = 0): no first moment (transformers passes beta1 None), a
                                                factored second moment; its update clipping (clip_threshold 1) is not
                                                modelled
    rmsprop*                                    Adam(b1 = momentum, b2 = alpha): heavy ball on the normalised gradient

and every other optimizer (Lion's sign step, AdEMAMix's two momenta, Adagrad's growing denominator, schedule-free
averaging, GaLore / APOLLO projections, LOMO) is named as not modelled: one ConfigError saying how to forecast it
as Adam anyway (--set optim=adamw_torch). The schedule is `theory.schedule.LRSchedule`. A TRL `optim` or
`lr_scheduler_type` transformers does not have (`TRL_OPTIMIZERS`, `TRL_SCHEDULERS`) is refused naming the nearest
(`not_one_of`), as transformers refuses it: read on, `cosin` would be a constant lr.
"""

from __future__ import annotations

import difflib
from typing import Any

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.predict._config_checks import NEAR_CUTOFF
from gspo_dynamics.theory.hyperparams import SGD, Adam
from gspo_dynamics.theory.schedule import LRSchedule

# transformers' OptimizerNames (a test checks the installed release's are all here), with older releases' names
TRL_OPTIMIZERS = (
    "adamw_torch", "adamw_torch_fused", "adamw_torch_xla", "adamw_torch_npu_fused", "adafactor", "adamw_anyprecision",
    "adamw_torch_4bit", "adamw_torch_8bit", "ademamix", "sgd", "adagrad", "adamw_bnb_8bit", "adamw_8bit",
    "ademamix_8bit", "lion_8bit", "lion_32bit", "paged_adamw_32bit", "paged_adamw_8bit", "paged_ademamix_32bit",
    "paged_ademamix_8bit", "paged_lion_32bit", "paged_lion_8bit", "rmsprop", "rmsprop_bnb", "rmsprop_bnb_8bit",
    "rmsprop_bnb_32bit", "galore_adamw", "galore_adamw_8bit", "galore_adafactor", "galore_adamw_layerwise",
    "galore_adamw_8bit_layerwise", "galore_adafactor_layerwise", "lomo", "adalomo", "grokadamw", "schedule_free_radam",
    "schedule_free_adamw", "schedule_free_sgd", "apollo_adamw", "apollo_adamw_layerwise", "stable_adamw",
    "adamw_hf", "adamw_apex_fused",  # transformers 4.x
)
ADAM_NAMES = ("adamw", "adam", "paged_adamw", "stable_adamw")  # prefixes (transformers' OptimizerNames)
NOT_MODELLED = {  # prefix: what the optimizer does that the theory does not have
    "lion": "a sign step with one momentum",
    "paged_lion": "a sign step with one momentum",
    "ademamix": "two momenta, one slow",
    "paged_ademamix": "two momenta, one slow",
    "adagrad": "a second moment summed over the run, so the step shrinks",
    "schedule_free": "iterate averaging in place of a schedule",
    "galore": "gradients projected on a low-rank subspace",
    "apollo": "gradients projected on a low-rank subspace",
    "lomo": "a fused update without optimizer state",
    "adalomo": "a fused update without optimizer state",
    "grokadamw": "an amplified slow gradient component",
}


AT_PEAK = "at its peak"  # in every note where the lr schedule is not read (`RunSetup.brief_lines` shows them first)

def _optim_args(text: Any) -> dict[str, float]:
    """transformers' optim_args "momentum=0.9,alpha=0.99" as numbers (others dropped)."""
    out: dict[str, float] = {}
    for item in str(text or "").replace(" ", "").split(","):
        key, _, value = item.partition("=")
        try:
            out[key] = float(value)
        except ValueError:
            pass
    return out


def trl_optimizer(cfg: dict[str, Any], number, notes: list[str]):
    """The theory's optimizer of a GRPOConfig (`optim`, its betas and epsilon, `optim_args`; module docstring)."""
    name = str(cfg.get("optim") or "adamw_torch_fused").lower()
    args = _optim_args(cfg.get("optim_args"))
    if name.startswith("sgd"):
        if args.get("nesterov"):
            notes.append("optim sgd with nesterov: read as heavy-ball momentum (Nesterov's look-ahead not modelled)")
        return SGD(momentum=number("optim_args momentum", args.get("momentum", 0.0), unit=True))
    if name.startswith("adafactor") or name.startswith("galore_adafactor"):
        if name.startswith("galore"):
            _not_modelled("optim", name, "galore")
        notes.append("optim adafactor: no first moment and a factored second moment, read as Adam with b1 = 0 "
                     "(heavy ball, mu = 0); its update clipping (clip_threshold 1) is not modelled")
        return Adam(beta1=0.0, beta2=0.999)
    if name.startswith("rmsprop"):
        notes.append("optim rmsprop: heavy ball on the normalised gradient, read as Adam with b1 = its momentum "
                     f"({args.get('momentum', 0.0):g}) and b2 = its alpha ({args.get('alpha', 0.99):g})")
        return Adam(beta1=number("optim_args momentum", args.get("momentum", 0.0), unit=True),
                    beta2=number("optim_args alpha", args.get("alpha", 0.99), unit=True), eps=args.get("eps", 1e-8))
    for prefix, what in NOT_MODELLED.items():
        if name.startswith(prefix):
            _not_modelled("optim", name, prefix)
    if name not in TRL_OPTIMIZERS:  # transformers refuses it too: read on, a typo would be some other optimizer
        raise not_one_of("optim", name, TRL_OPTIMIZERS, "transformers' optimizers (OptimizerNames)")
    return Adam(beta1=number("adam_beta1", cfg.get("adam_beta1", 0.9), unit=True),
                beta2=number("adam_beta2", cfg.get("adam_beta2", 0.999), unit=True),
                eps=number("adam_epsilon", cfg.get("adam_epsilon", 1e-8), positive=True))


def verl_optimizer(name: Any, betas: Any, override: Any, number, notes: list[str]):
    """The theory's optimizer of verl's actor.optim (optimizer, betas, override_optimizer_config)."""
    text = str(name or "AdamW")
    low = text.lower().lstrip("_")
    extra = override if isinstance(override, dict) else {}
    if low == "sgd":
        return SGD(momentum=number("optim.override_optimizer_config.momentum", extra.get("momentum", 0.0), unit=True))
    if "adam" in low and not low.startswith(tuple(NOT_MODELLED)):
        if not (isinstance(betas, (list, tuple)) and len(betas) == 2):
            raise ConfigError(f"actor_rollout_ref.actor.optim.betas must be a pair, got {betas!r}")
        return Adam(beta1=number("optim.betas[0]", betas[0], unit=True), beta2=number("optim.betas[1]", betas[1], unit=True))
    _not_modelled("actor_rollout_ref.actor.optim.optimizer", text, next(
        (p for p in NOT_MODELLED if low.startswith(p)), None))


def _not_modelled(key: str, name: str, prefix: str | None) -> None:
    what = NOT_MODELLED.get(prefix or "", "an update rule outside SGD, Adam(W), Adafactor and RMSprop")
    hint = "--set optim=adamw_torch" if key == "optim" else f"--set {key}=AdamW"
    raise ConfigError(f"{key} {name!r} is not modelled ({what}); the theory knows SGD (momentum), Adam(W), Adafactor "
                      f"and RMSprop: to forecast it as Adam anyway, {hint}")


# ---- schedules -------------------------------------------------------------------------------
def not_one_of(key: str, value: Any, names: tuple[str, ...], whose: str) -> ConfigError:
    """The one sentence refusing an enumerated value its framework does not have, naming the nearest name."""
    near = difflib.get_close_matches(str(value), names, n=1, cutoff=NEAR_CUTOFF)
    hint = f" (did you mean {near[0]}?)" if near else ""
    return ConfigError(f"{key} {value!r} is not one of {whose}{hint}: {', '.join(names)}")


# transformers' SchedulerType (a test checks it equals the installed release's)
TRL_SCHEDULERS = ("linear", "cosine", "cosine_with_restarts", "polynomial", "constant", "constant_with_warmup",
                  "inverse_sqrt", "reduce_lr_on_plateau", "cosine_with_min_lr", "cosine_warmup_with_min_lr",
                  "warmup_stable_decay", "greedy")
TRL_SHAPES = {"linear": "linear", "cosine": "cosine", "cosine_with_min_lr": "cosine", "polynomial": "polynomial",
              "constant": "constant", "constant_with_warmup": "constant", "inverse_sqrt": "inverse_sqrt"}


def trl_schedule(cfg: dict[str, Any], total: int | None, notes: list[str]) -> LRSchedule | None:
    """transformers' schedule of a GRPOConfig (`lr_scheduler_type`, `lr_scheduler_kwargs`, `warmup_steps` with
    `warmup_ratio` of older releases, over `total` = max_steps); None where it is not modelled or the run's length
    is unknown for a decaying shape (said)."""
    name = str(cfg.get("lr_scheduler_type") or "linear")
    kwargs = cfg.get("lr_scheduler_kwargs") if isinstance(cfg.get("lr_scheduler_kwargs"), dict) else {}
    if name not in TRL_SCHEDULERS:  # transformers refuses it; read on, the lr would be read as constant
        raise not_one_of("lr_scheduler_type", name, TRL_SCHEDULERS, "transformers' schedulers (SchedulerType)")
    shape = TRL_SHAPES.get(name)
    if shape is None:
        notes.append(f"lr_scheduler_type {name}: not modelled; the forecasts read the lr as constant at its peak")
        return None
    warm, share = _trl_warmup(cfg, total, notes)
    if name == "constant" and warm:
        notes.append("lr_scheduler_type constant ignores the warm-up in transformers: no warm-up read")
        warm = 0
    if shape in ("linear", "cosine", "polynomial") and total is None:
        notes.append(f"lr_scheduler_type {name} decays the lr to its end over the run, whose length is unknown here "
                     "(max_steps -1 follows the epochs and the dataset): the forecasts read the lr at its peak "
                     "(give --set max_steps=N)")
        return None
    floor = float(kwargs.get("min_lr_rate", 0.0)) if name == "cosine_with_min_lr" else 0.0
    if shape == "polynomial":
        lr = float(cfg.get("learning_rate") or 1e-6)
        floor = float(kwargs.get("lr_end", 1e-7)) / lr
    return LRSchedule(shape=shape, warmup=warm, total=total, floor=min(floor, 1.0),
                      cycles=float(kwargs.get("num_cycles", 0.5)), power=float(kwargs.get("power", 1.0)),
                      timescale=kwargs.get("timescale"), warmup_share=share if warm else None)


def _trl_warmup(cfg: dict[str, Any], total: int | None, notes: list[str]) -> tuple[int, float | None]:
    """(W, its share of the run or None): warmup_steps (a fraction below 1 is a ratio of the run, transformers'
    get_warmup_steps), else warmup_ratio."""
    steps, ratio = cfg.get("warmup_steps") or 0, cfg.get("warmup_ratio") or 0
    if ratio and not steps:  # a field of transformers before 5 (a saved config of an older release holds it)
        notes.append(f"warmup_ratio {ratio:g}: read as the warm-up's share of the run, as transformers before 5 read "
                     f"it; TRL 1.16 (transformers 5) has no such field and refuses it: warmup_steps: {ratio:g} is its "
                     "share there")
    if 0 < steps < 1:
        steps, ratio = 0, steps
    if ratio and not steps:
        if total is None:
            notes.append(f"a warm-up of {ratio:g} of the run, whose length is unknown: no warm-up read")
            return 0, None
        return int(-(-total * ratio // 1)), float(ratio)
    return int(steps), None


def verl_schedule(get, total: int | None, notes: list[str]) -> LRSchedule | None:
    """verl's actor.optim schedule (lr_scheduler_type, or the deprecated warmup_style; lr_warmup_steps, else
    lr_warmup_steps_ratio x total; min_lr_ratio, num_cycles, zero_indexed_step), `get` reading a dotted key."""
    optim = "actor_rollout_ref.actor.optim."
    shape = get(optim + "warmup_style") or get(optim + "lr_scheduler_type") or "constant"
    if shape not in ("constant", "cosine"):
        notes.append(f"{optim}lr_scheduler_type {shape}: not modelled; the forecasts read the lr as constant at its peak")
        return None
    warm, share = get(optim + "lr_warmup_steps"), None
    if warm is None or warm <= 0:
        ratio = float(get(optim + "lr_warmup_steps_ratio") or 0.0)
        if ratio and total is None:
            notes.append("a warm-up ratio of a run whose length is unknown (trainer.total_training_steps): none read")
        warm = int(ratio * total) if ratio and total else 0
        share = ratio if warm else None
    if shape == "cosine" and total is None:
        notes.append(f"{optim}lr_scheduler_type cosine over a run of unknown length (trainer.total_training_steps): "
                     "the forecasts read the lr at its peak")
        return None
    offset = 0 if get(optim + "zero_indexed_step") in (None, True) or shape != "cosine" else 1
    return LRSchedule(shape=shape, warmup=int(warm), total=total, floor=float(get(optim + "min_lr_ratio") or 0.0),
                      cycles=float(get(optim + "num_cycles") or 0.5), offset=offset, warmup_share=share)


def decay_and_clip(keys: tuple[str, str], values: tuple[Any, Any], lr: float, optimizer, run_steps: int | None,
                   ) -> list[tuple[str, Any, str]]:
    """The weight decay and the gradient-norm clip, named with what they change (neither is in the reduced model):

        AdamW's decoupled decay shrinks every weight by lr wd per step: lr wd n over n steps (SGD's weight_decay is
        an L2 force, wd theta added to the gradient: a pull toward zero weights, not toward the task's optimum);
        clipping the gradient's norm at c rescales an Adam step's moments alike, so a steady clip leaves the step and
        acts on spikes; under SGD it caps the step at lr c.
    """
    (wd_key, clip_key), (wd, clip) = keys, values
    out = []
    if isinstance(wd, (int, float)) and wd > 0:
        over = f" ({lr * wd * run_steps:.2g} over the run)" if run_steps else ""  # the run's length, where known
        what = (f"shrinks the weights by lr x weight_decay = {lr * wd:.2g} per step{over}: a pull toward zero weights"
                if optimizer.name == "adam" else "an L2 force toward zero weights added to the gradient")
        out.append((wd_key, wd, what))
    if isinstance(clip, (int, float)) and clip > 0:
        what = ("clips the gradient's norm before Adam: a steady clip leaves the step, it acts on spikes (diagnose's "
                "grad-norm spikes)" if optimizer.name == "adam" else f"caps an SGD step at lr x {clip:g}")
        out.append((clip_key, clip, what))
    return out
