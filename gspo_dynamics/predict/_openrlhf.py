"""OpenRLHF's PPO trainer arguments (`python3 -m openrlhf.cli.train_ppo_ray --name value ...`, a launch script's or a
JSON / YAML dict of the same names) mapped onto the theory's hyperparameters, behind `read_run_config`.

Read at OpenRLHF commit 3c3be6234e0cb353e76bb8019947db9dfe99fca7 (its dotted names) and c1ba971c (the last of its flat
names, which the mapping reads; a dotted name is read as the flat one it replaced: `predict._openrlhf_fields`).

A rollout is rollout_batch_size prompts x n_samples_per_prompt responses (`experience_maker`); the actor passes over it
max_epochs times, an optimizer step every train_batch_size responses (DeepSpeed accumulates micro_train_batch_size x
processes up to train_batch_size, `ppo_actor.ppo_train`), the same count behind OpenRLHF's own max_steps:

    T = max_epochs x rollout_batch_size x n_samples_per_prompt / train_batch_size,
    N = train_batch_size / n_samples_per_prompt,   G = n_samples_per_prompt,   lr = actor_learning_rate,
    Adam(adam_betas, eps 1e-8), (eps_low, eps_high) = eps_clip_low_high else (eps_clip, eps_clip),
    beta = init_kl_coef under use_kl_loss (else the KL sits in the reward, not modelled), the dual clip c = dual_clip,
    correction = sequence under policy_loss_type gspo, else token

The advantage (`compute_advantages_and_returns`): group_norm (r - mean) / (std + 1e-9), GRPO's; dr_grpo r - mean; rloo
r minus the others' mean, G / (G - 1) (r - mean); reinforce_baseline r - mean then whitened over the whole batch
(a common scale): the last three read as the mean-centred advantage. gae (a critic) and reinforce (no group) are
refused. The schedule is transformers' cosine_with_min_lr, a warm-up of ceil(lr_warmup_ratio x max_steps) and a floor
of 0.1 lr, over OpenRLHF's max_steps = len(prompts) x n_samples_per_prompt / train_batch_size x num_episodes x
max_epochs: no argument holds it (the dataset's length does), so it is read from `max_steps` where given (--set
max_steps=N, or --run-steps), else the lr is read at its peak (said).
"""

from __future__ import annotations

import math
from typing import Any

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.predict import _openrlhf_fields as fields
from gspo_dynamics.predict._clip_modes import no_lower_clip
from gspo_dynamics.predict._field_tables import abbreviation_of, sampling_check
from gspo_dynamics.predict._frameworks import _groups_per_step, _number, _rounded_refresh, run_length
from gspo_dynamics.predict._optimizers import not_one_of
from gspo_dynamics.predict._verl import flatten
from gspo_dynamics.theory.hyperparams import Adam, Hyperparams
from gspo_dynamics.theory.schedule import LRSchedule

FRAMEWORK = "OpenRLHF"


def arguments(cfg: dict[str, Any]) -> dict[str, Any]:
    """The config's arguments by name: nested keys joined by dots (a YAML of the dotted names), leading dashes
    dropped (`--n_samples_per_prompt` as a launch script writes it)."""
    return {str(key).lstrip("-"): value for key, value in flatten(cfg).items()}


def unabbreviated(args: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    """The arguments with a name that is no argument's but begins exactly one (in its vocabulary, flat or dotted) read
    as that one, as OpenRLHF's argparse does (allow_abbrev: `--n_samples 8` is --n_samples_per_prompt), said."""
    out = {}
    for name, value in args.items():
        whole = None if name in fields.KNOWN else abbreviation_of(name, fields.DOTTED if "." in name else fields.FLAT, args)
        if whole is not None:
            notes.append(f"{name}: read as {whole}, the one argument it begins (argparse's abbreviation)")
            name = whole
        out[name] = value
    return out


def is_openrlhf(cfg: dict[str, Any]) -> bool:
    """Whether the dict holds one of OpenRLHF's own argument names (`_openrlhf_fields.MARKERS`)."""
    return bool(set(arguments(cfg)) & fields.MARKERS)


def canonical(args: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """(the arguments under their flat names, each flat name the mapping reads -> the name to say it by: as the config
    wrote it, else in the config's vocabulary, dotted where it wrote a dotted name): the mapping reads one
    vocabulary, its notes and advice the user's."""
    flat, written = {}, {}
    dotted = any(name in fields.DOTTED and name not in fields.FLAT for name in args)
    for key in fields.READ | set(fields.UNMODELLED) | {"l2", "max_norm", "max_samples", "num_episodes"}:
        written[key] = fields.FLAT_NAME.get(key, key) if dotted else key
    for name, value in args.items():
        key = fields.RENAMED.get(name, name)
        flat[key], written[key] = value, name
    return flat, written


def openrlhf_mapping(args: dict[str, Any], notes: list[str]) -> tuple[Hyperparams, float, set[str]]:
    """(hyperparameters, T before rounding, the flat names read) of the arguments (module docstring), OpenRLHF's
    defaults where unset (each said)."""
    flat, written = canonical(args)
    used: set[str] = set()

    def get(key: str) -> Any:
        used.add(key)
        if flat.get(key) is None:
            if fields.DEFAULTS.get(key) is not None and key not in fields.NEW:  # a later release's, unsaid
                notes.append(f"{written.get(key, key)} not given: OpenRLHF's default {fields.DEFAULTS[key]!r}")
            return fields.DEFAULTS.get(key)
        return flat[key]

    adv = advantage(flat, written, notes)
    used.add("advantage_estimator")
    def count(key: str) -> int:
        return _number(written[key], get(key), integer=True, positive=True)

    G, rollout, batch, epochs = (count(k) for k in ("n_samples_per_prompt", "rollout_batch_size", "train_batch_size",
                                                    "max_epochs"))
    if G < 2:
        raise ConfigError(f"{written['n_samples_per_prompt']} must be >= 2 for group-relative advantages, got {G}")
    sampling_check({written[key]: flat[key] for key in ("temperature", "top_p") if key in flat})
    exact = epochs * rollout * G / batch
    T = _rounded_refresh(exact, notes, f"max_epochs x rollout_batch_size x n_samples_per_prompt / train_batch_size = "
                                       f"{epochs} x {rollout} x {G} / {batch}")
    N = _groups_per_step(batch, G, notes, "train_batch_size")
    low, high = _clip(get, written, notes)
    cap = None if flat.get("dual_clip") is None else _number(written["dual_clip"], get("dual_clip"), positive=True)
    loss = get("policy_loss_type")
    if loss not in ("ppo", "gspo"):
        raise not_one_of(written["policy_loss_type"], loss, ("ppo", "gspo"), "OpenRLHF's policy losses")
    hp = Hyperparams(lr=_number(written["actor_learning_rate"], get("actor_learning_rate"), positive=True),
                     optimizer=_optimizer(get, written, notes), refresh_interval=T, group_size=G, num_groups=N,
                     advantage=adv, correction="sequence" if loss == "gspo" else "token", clip_low=low,
                     clip_high=high, kl_coef=_beta(get, written, notes), clip_mode="stop", ratio_cap=cap)
    return hp, exact, used


def refuse_unset(flat: dict[str, Any], written: dict[str, str]) -> None:
    """One ConfigError naming every argument the mapping reads whose value is still a shell variable or a command's
    output (`$NAME`, `${NAME}`, `$(command)`): the script does not set them (its environment, an `eval`, a command
    does), so each is the user's to give, all at once rather than one refusal per run (audit s39c 7)."""
    unset = [f"{written.get(k, k)} {v}" for k, v in flat.items()
             if k in fields.READ and isinstance(v, str) and v.startswith("$")]
    if unset:
        raise ConfigError(f"the script does not set {', '.join(unset)} (its environment, an eval or a command gives "
                          "them): --set KEY=VALUE for each")


def advantage(flat: dict[str, Any], written: dict[str, str], notes: list[str]) -> str:
    """advantage_estimator's advantage (module docstring), or one ConfigError naming what it is (`flat`: the
    arguments by flat name, `canonical`'s)."""
    estimator = flat.get("advantage_estimator")
    key = written.get("advantage_estimator", "advantage_estimator")
    if estimator is None:
        raise ConfigError(f"{key} not given: OpenRLHF's default is gae, {fields.OTHER_ESTIMATORS['gae']}, not a "
                          "group-relative advantage; set --advantage_estimator group_norm")
    if estimator in fields.OTHER_ESTIMATORS:
        raise ConfigError(f"{key} {estimator}: {fields.OTHER_ESTIMATORS[estimator]}, not a group-relative advantage; "
                          f"the theory covers OpenRLHF's group estimators ({', '.join(fields.GROUP_ESTIMATORS)})")
    if estimator not in fields.GROUP_ESTIMATORS:
        raise not_one_of(key, estimator, fields.GROUP_ESTIMATORS + tuple(fields.OTHER_ESTIMATORS),
                         "OpenRLHF's estimators")
    if estimator == "reinforce_baseline":
        notes.append("advantage_estimator reinforce_baseline: r - the group's mean, then whitened over the batch (one "
                     "scale for every group): read as the mean-centred advantage, its scale in the measured stiffness")
    return "std" if estimator == "group_norm" else "mean"


def _clip(get, written: dict[str, str], notes: list[str]) -> tuple[float, float]:
    """(eps_low, eps_high): eps_clip_low_high where given (then eps_clip is not read), else eps_clip for both."""
    pair, key = get("eps_clip_low_high"), written["eps_clip_low_high"]
    if pair is None:
        key = written["eps_clip"]
        low = high = _number(key, get("eps_clip"), positive=True)
    else:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise ConfigError(f"{key} must be two numbers (low high), got {pair!r}")
        low, high = (_number(key, v, positive=True) for v in pair)
    return no_lower_clip(key, low, notes), high


def _beta(get, written: dict[str, str], notes: list[str]) -> float:
    """beta: init_kl_coef as a loss term under use_kl_loss; without it the KL (kl_estimator's) is subtracted from
    the reward, which the theory does not model (said), and beta is 0."""
    coef = _number(written["init_kl_coef"], get("init_kl_coef"), nonnegative=True)
    # an older release's flag for the k3 estimator (OpenRLHF #476, removed in #797), where no kl_estimator is given
    estimator = "k3" if get("use_kl_estimator_k3") is True and get("kl_estimator") in (None, "k1") else get("kl_estimator")
    if get("use_kl_loss") is True:
        if estimator != "k3":
            notes.append(f"{written['kl_estimator']} {estimator} as the KL loss (OpenRLHF recommends k2 or k3 there): beta read as "
                         f"{written['init_kl_coef']} all the same")
        if get("kl_target") is not None:  # the trainer's AdaptiveKLController scales the KL loss too (audit s39c 2)
            target = _number(written.get("kl_target", "kl_target"), get("kl_target"), positive=True)
            notes.append(f"{written['init_kl_coef']} {coef:g} with kl_target {target:g}: an adaptive beta (OpenRLHF's "
                         "AdaptiveKLController moves it each rollout toward the target), read at its start, its course "
                         "not modelled")
        return coef
    if coef > 0:
        adaptive = " (adaptive: kl_target set)" if get("kl_target") is not None else ""
        notes.append(f"{written['init_kl_coef']} {coef:g} without {written['use_kl_loss']}: a KL penalty in the reward{adaptive}, not modelled "
                     "(beta = 0)")
    return 0.0


def _optimizer(get, written: dict[str, str], notes: list[str]) -> Adam:
    """DeepSpeed's Adam of the actor: adam_betas, eps 1e-8 (actor.adam.eps from ed62d0e2 on); Muon is refused."""
    name = get("actor.optim")
    if name != "adam":
        raise ConfigError(f"actor.optim {name!r}: Muon's orthogonalised step is not modelled; the theory covers Adam")
    betas = get("adam_betas")
    if not isinstance(betas, (list, tuple)) or len(betas) != 2:
        raise ConfigError(f"{written['adam_betas']} must be two numbers (beta1 beta2), got {betas!r}")
    return Adam(beta1=_number(written["adam_betas"], betas[0], unit=True),
                beta2=_number(written["adam_betas"], betas[1], unit=True),
                eps=_number("actor.adam.eps", get("actor.adam.eps"), positive=True))


def openrlhf_schedule(get, notes: list[str]) -> tuple[int | None, LRSchedule | None]:
    """(the run's optimizer steps, the lr's schedule): transformers' cosine_with_min_lr (floor actor.min_lr_ratio,
    c1ba971c's 0.1), constant or linear, with a warm-up of ceil(lr_warmup_ratio x max_steps), over `max_steps` where
    given (module docstring); no schedule where the run's length is unknown or the shape is not modelled (said)."""
    steps = run_length(fields.RUN_LENGTH, get(fields.RUN_LENGTH))
    name = get("lr_scheduler")
    shape = {"cosine_with_min_lr": "cosine", "cosine": "cosine", "linear": "linear", "constant": "constant",
             "constant_with_warmup": "constant"}.get(name)
    if shape is None:
        notes.append(f"lr_scheduler {name}: not modelled; the forecasts read the lr as constant at its peak")
        return steps, None
    if steps is None and name != "constant":
        notes.append("the run's length is OpenRLHF's max_steps, len(prompts) x n_samples_per_prompt / train_batch_size "
                     f"x num_episodes x max_epochs, which the arguments do not hold{_at_most(get)}: the forecasts read "
                     "the lr at its peak (give --set max_steps=N or --run-steps N)")
    if steps is None:
        return None, None
    warm = math.ceil(steps * float(get("lr_warmup_ratio") or 0.0)) if name != "constant" else 0
    floor = float(get("actor.min_lr_ratio")) if name == "cosine_with_min_lr" else 0.0
    return steps, LRSchedule(shape=shape, warmup=warm, total=steps, floor=floor,
                             warmup_share=float(get("lr_warmup_ratio")) if warm else None)


def _at_most(get) -> str:
    """The run's length at most, where --max_samples caps the prompts (len(prompts) = min(the dataset's, max_samples))."""
    cap = get("max_samples")
    if not isinstance(cap, int) or isinstance(cap, bool) or cap < 1:
        return ""
    try:
        n, batch, episodes, epochs = (int(get(k)) for k in ("n_samples_per_prompt", "train_batch_size", "num_episodes",
                                                             "max_epochs"))
    except (TypeError, ValueError):
        return ""
    return (f" (at most max_samples x n_samples_per_prompt // train_batch_size x num_episodes x max_epochs = "
            f"{cap * n // batch * episodes * epochs}, where the dataset holds max_samples = {cap} prompts)")
