"""A training config of TRL, verl, OpenRLHF or our own trainer, read into the theory's terms: one place.

`read_run_config(source)` takes a dict or a JSON / YAML file (with Hydra-style overrides on top) and
returns a `RunSetup`: the theory's `Hyperparams`, the exact (possibly fractional) refresh interval
before rounding, and notes saying every default and assumption used and every key ignored.
Impossible or contradictory values raise `ConfigError` with one sentence; so does a key the framework does not have
(a typo would silently leave the key it stands for at its default) unless `allow_unknown`; the defaults taken for
the keys the verdict rests on are kept apart (`RunSetup.brief_lines`, `predict._config_checks`). Each framework's
mapping, with its equations, is in `predict/_frameworks.py` (TRL, ours), `predict/_verl.py` and
`predict/_openrlhf.py` (its arguments, a launch script's or a dict's).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from gspo_dynamics._config_file import ConfigParts, added_key, load_config_file, load_config_parts, set_override
from gspo_dynamics._errors import ConfigError
from gspo_dynamics._python_config import COMPUTED, is_computed
from gspo_dynamics.predict._frameworks import (
    OWN_KEYS, OWN_NAMES, TRAINER_DEFAULTS, TRAINER_FIELDS, TRAINER_MARKERS, TRL_DEFAULTS, TRL_HYPERPARAMETERS, TRL_KEYS,
    NO_DEVICES, SAVED_FIELDS, _own, _refuse_preference_config, _trainer, _trl, run_length,
)
from gspo_dynamics.predict._verl import (
    _verl_estimator, flatten, resolve_all, early_verl, search_r1_group, verl_mapping,
)
from gspo_dynamics.predict import _config_checks, _openrlhf, _openrlhf_fields, _trl_fields, _verl_fields, _verl_schema
from gspo_dynamics.predict._field_tables import active_unmodelled, grouped
from gspo_dynamics.predict._optimizers import decay_and_clip, trl_schedule, verl_schedule
from gspo_dynamics.predict._verl_history import OLD_KEYS
from gspo_dynamics.theory.schedule import LRSchedule
from gspo_dynamics.predict._config_keys import ConfigKeys, evaluates, openrlhf_keys, trainer_keys, trl_keys, verl_keys
from gspo_dynamics.theory.hyperparams import Hyperparams
from gspo_dynamics.predict._run_setup import RunSetup


# ---- reading -----------------------------------------------------------------------------------
# `load_config_file` and its YAML loader live a layer down (`gspo_dynamics._config_file`): `train --config` reads them too;
# what a config is refused for before it is mapped (a log, a Hydra composition, --devices) is `_config_checks`'


def apply_overrides(cfg: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """`cfg` with Hydra-style `dotted.key=value` overrides applied (values read as YAML: 1e-6, true, [0.9,
    0.99]), as a verl run script passes them on its command line; nested keys are created as needed."""
    out = json.loads(json.dumps(cfg))  # a deep copy of plain data
    for item in overrides:
        set_override(out, item)
    return out


def read_run_config(source: dict[str, Any] | str | Path, *, devices: int | None = None,
                    overrides: list[str] | None = None, allow_unknown: bool = False,
                    run_steps: int | None = None) -> RunSetup:
    """`RunSetup` of a TRL GRPOConfig, a verl config, our trainer's config or the theory's own field
    names, from a dict or a JSON / YAML file (module docstring for each mapping), with `overrides`
    (`apply_overrides`) on top. `devices`: the data-parallel process count where the config does not
    hold it (TRL). A key the framework does not have, in the file or an override, is one ConfigError naming it
    and its nearest known key; `allow_unknown` reads on past it (named in `RunSetup.unknown`). `run_steps`: the run's
    length given apart from the config (predict --run-steps), read as its run-length key where the config leaves that
    unset, so that a schedule over the run (a decay, a warm-up ratio) is read over it, not said to be unknown."""
    parts = ConfigParts(dict(source), frozenset(), False, {}) if isinstance(source, dict) else load_config_parts(source)
    cfg, added = parts.data, parts.added
    abbreviated = _trl_fields.unabbreviated(cfg, parts.command_line)
    if overrides:
        cfg = apply_overrides(cfg, overrides)
    own = {k: v for k, v in parts.defaults.items() if not any(k.startswith(str(key)) for key in cfg)}  # unset there
    cfg = {**cfg, **own}  # the file's trainer's own default for a key it leaves unset, said as assumed below
    set_keys = [item.partition("=")[0].strip().lstrip("+") for item in overrides or ()]
    added |= {key for key in map(added_key, overrides or ()) if key}
    recorded: list[str] = []

    def unknown(framework: str, keys: list[str], known: set[str]):
        """(the unknown keys with their nearest known ones, refused unless allow_unknown; the keys among them a Hydra
        `+key=` adds on purpose, or one below such a key: no typo, never refused). In W&B's record of a run's config
        the other unknown keys go to `recorded` (recorded from the run, not typed: no typo), an override's excepted."""
        on_purpose = tuple(sorted(k for k in map(str, keys) if any(k == a or k.startswith(a + ".") for a in added)))
        typed = {k for k in keys for s in set_keys if s == k or s.startswith(k + ".")}
        rest = sorted((k for k in keys if str(k) not in on_purpose), key=str)
        recorded[:] = [str(k) for k in rest if k not in typed] if parts.wandb else []
        hints = _config_checks.hinted([k for k in rest if str(k) not in recorded], known)
        if not allow_unknown:
            _config_checks.refuse_unknown(hints, framework, typed)
        return hints, on_purpose

    own_names = allow_unknown or parts.wandb  # W&B recorded a script's own `group_size` beside TRL's: no mix typed
    setup = _mapped(cfg, devices, unknown, own_names)
    _refuse_other_trainers_record(setup, cfg, parts.wandb)
    if run_steps is not None and setup.run_steps is None and setup.keys is not None:
        setup = dataclasses.replace(_mapped(apply_overrides(cfg, [f"{setup.keys.run_length}={run_steps}"]), devices,
                                            unknown, own_names), run_given=True)
    setup = dataclasses.replace(setup, recorded=tuple(recorded), assumed=setup.assumed + tuple(own.items()),
                                read_as=setup.read_as + parts.notes,  # a script's branch read on its last, said first
                                notes=tuple(abbreviated) + setup.notes, implausible=_config_checks.implausible_lr(
                                    setup.framework, setup.hparams.optimizer.name, setup.hparams.lr,
                                    setup.keys.lr if setup.keys else "lr"))
    ignored = set(setup.ignored) - set(setup.unknown) - set(setup.added) - set(setup.recorded)  # a trainer's or TRL's
    # top-level keys, verl's dotted ones; the keys a +key= adds, or W&B recorded, are said apart (`brief_lines`)
    unread = [key for key in set_keys if key in ignored or key.split(".")[0] in ignored]
    if unread:
        setup = dataclasses.replace(setup, notes=setup.notes + (
            f"--set {', '.join(unread)}: not read by the {setup.framework} mapping (a key the theory does not use)",))
    return setup


def _mapped(cfg: dict[str, Any], devices: int | None, unknown, allow_unknown: bool = False) -> RunSetup:
    """`read_run_config` on the config's dict, its overrides applied; `unknown(framework, keys, known)` sees the keys
    the framework does not have before anything is mapped (a typo is the first thing to say), and gives (their hints,
    those added on purpose); `allow_unknown`: a TRL config holding a key of our own names reads as TRL's, that key
    unknown (a fork's own, not a mix of vocabularies)."""
    if isinstance(cfg.get("hparams"), dict):  # a corpus label.json or a diagnose --json output
        cfg = dict(cfg["hparams"])
    elif isinstance(cfg.get("config"), dict) and TRAINER_MARKERS <= set(cfg["config"]):  # our trainer corpus's label.json
        cfg = dict(cfg["config"])
    _config_checks.refuse_log(cfg)
    _config_checks.refuse_composed(cfg)
    notes: list[str] = []
    if isinstance(cfg.get("actor_rollout_ref"), dict):
        _config_checks.refuse_mixed(set(cfg) & TRL_KEYS, "verl's (actor_rollout_ref)")
        _config_checks.refuse_devices(devices, "a verl config's ppo_mini_batch_size counts prompts over every process")
        return _verl_setup(cfg, notes, unknown)
    if _openrlhf.is_openrlhf(cfg):
        _config_checks.refuse_devices(devices, "OpenRLHF's train_batch_size counts responses over every process")
        return _openrlhf_setup(cfg, notes, unknown)
    _refuse_preference_config(cfg)
    trl, own = set(cfg) & TRL_KEYS, set(cfg) & OWN_KEYS
    if TRAINER_MARKERS <= set(cfg):
        name = "gspo-dynamics trainer"
        hints, added = unknown(name, list(set(cfg) - TRAINER_FIELDS), TRAINER_FIELDS)
        _config_checks.refuse_devices(devices, "our trainer's prompts_per_step is the whole step's")
        hp, exact = _trainer(cfg, notes)
        steps = run_length("steps", cfg.get("steps"))
        return _setup(hp, name, exact, notes,
                      sorted(set(cfg) - set(TRAINER_DEFAULTS) - {"objective", "steps", "lr_schedule"}),
                      run_steps=steps, loss=str(cfg["objective"]), schedule=_trainer_schedule(cfg, steps),
                      keys=trainer_keys(int(cfg.get("num_iterations") or TRAINER_DEFAULTS["num_iterations"])),
                      unknown=hints, added=added, assumed=_config_checks.assumed(name, cfg.get, TRAINER_DEFAULTS))
    if trl and own - {"optimizer"} and not allow_unknown:  # with it, read as a TRL config, those keys unknown
        theirs = ", ".join(sorted(own - {"optimizer"}))
        raise ConfigError(f"the config's {theirs} is no field of TRL's GRPOConfig, beside TRL keys "
                          f"({', '.join(sorted(trl))}): a fork's own key (--allow-unknown reads the TRL config without "
                          "it), or gspo-dynamics' own name for a TRL key, which mixes two vocabularies (use TRL's)")
    if trl and not trl & TRL_HYPERPARAMETERS:
        raise ConfigError(f"the config holds no GRPO hyperparameter, only {', '.join(sorted(trl))} (TRL: learning_rate, "
                          "num_generations, steps_per_generation, beta, epsilon, ...)")
    if trl:
        return _trl_setup(cfg, devices, notes, unknown)
    if not own - {"optimizer"}:  # an `optimizer` section alone is any framework's: no hyperparameter of ours
        raise _config_checks.no_framework_error(cfg, _ALL_KNOWN)
    name = "gspo-dynamics hyperparameters"
    hints, added = unknown(name, list(set(cfg) - OWN_NAMES), OWN_NAMES)
    _config_checks.refuse_devices(devices, "num_groups is the whole step's")
    hp = _own(cfg)
    return _setup(hp, name, float(hp.refresh_interval), notes, sorted(set(cfg) - OWN_KEYS), unknown=hints, added=added,
                  assumed=_config_checks.assumed(name, cfg.get, {"refresh_interval": 1}))


_ALL_KNOWN = _trl_fields.KNOWN | OWN_NAMES | TRAINER_FIELDS  # a config of no framework: its keys' nearest


def _refuse_other_trainers_record(setup: RunSetup, cfg: dict[str, Any], wandb: bool) -> None:
    """A run's recorded config (W&B's record, or a saved one of SAVED_FIELDS keys or more) read as TRL's that holds
    none of GRPOConfig's own fields (`_trl_fields.GRPO_OWN`) is another trainer's run (audit s38c C2: an SFT run's
    W&B config got a verdict on G = 8 and beta 0 taken as defaults): one ConfigError. A config written by hand with
    few keys is read on TRL's defaults, said as assumed."""
    if setup.framework != "TRL GRPOConfig" or not (wandb or len(cfg) >= SAVED_FIELDS):
        return
    if not set(map(str, cfg)) & _trl_fields.GRPO_OWN:
        raise ConfigError("this config is a run's record with none of GRPOConfig's own fields (num_generations, beta, "
                          "epsilon, loss_type, max_completion_length, ...): another trainer's run (SFT, DPO, ...), not "
                          "a GRPO one; give the GRPO run's config")


def _trl_setup(cfg: dict[str, Any], devices: int | None, notes: list[str], unknown) -> RunSetup:
    """A GRPOConfig's RunSetup: the mapping, the schedule, and every key sorted by `predict._trl_fields`."""
    name = "TRL GRPOConfig"
    computed = sorted(k for k, v in cfg.items() if k in _trl_fields.READ and is_computed(v))
    if computed:  # a program's values Python computes (`_python_config`): every one the mapping reads, at once
        raise ConfigError("the program computes " + ", ".join(f"{k} ({cfg[k].removesuffix(COMPUTED)})" for k in computed)
                          + ", which the answer reads (it is not run here): give "
                          + " ".join(f"--set {k}=VALUE" for k in computed))
    hints, added = unknown(name, _trl_fields.unknown(cfg), _trl_fields.KNOWN)
    refused: list[str] = []
    fixes: list[tuple[str, Any, str]] = []
    hp, exact, rollout = _trl(cfg, devices, notes, refused, fixes)
    run_steps = run_length("max_steps", cfg.get("max_steps"), unset=-1)
    if cfg.get("lr_scheduler_type") is None:
        notes.append("lr_scheduler_type not given: transformers' default linear, a decay to 0 at max_steps")
    schedule = trl_schedule(cfg, run_steps, notes)
    loss = None if cfg.get("loss_type") is None else (  # TRL's default loss_type moved between releases: unsaid, none
        f"{cfg['loss_type']} ({cfg.get('importance_sampling_level') or 'token'}-level ratio)")
    unmodelled = active_unmodelled(cfg, _trl_fields.UNMODELLED) + decay_and_clip(
        ("weight_decay", "max_grad_norm"), (cfg.get("weight_decay"), cfg.get("max_grad_norm")), hp.lr, hp.optimizer,
        run_steps)
    accumulation = cfg.get("gradient_accumulation_steps") or TRL_DEFAULTS["gradient_accumulation_steps"]
    rollout_key = next(({k: int(cfg[k])} for k in ("steps_per_generation", "generation_batch_size") if cfg.get(k)),
                       None)  # both (a saved config): the edits name steps_per_generation
    keys = trl_keys(int(cfg.get("num_iterations") or TRL_DEFAULTS["num_iterations"]), int(accumulation), rollout_key,
                    rollout, eval_group=hp.group_size if evaluates(cfg) else 0)
    defaults = {**TRL_DEFAULTS, "max_steps": -1, "steps_per_generation": accumulation}  # `_trl_generation.steps_per_generation`

    def given(key: str) -> Any:  # a generation_batch_size gives steps_per_generation
        return cfg.get(key) if key != "steps_per_generation" else cfg.get(key, cfg.get("generation_batch_size"))

    logging = cfg.get("logging_steps")
    logging = logging if isinstance(logging, int) and not isinstance(logging, bool) and logging > 0 else None
    own = (("processes", 1),) if any(n.startswith(NO_DEVICES) for n in notes) else ()  # N (and T) rest on the count
    if cfg.get("importance_sampling_level") == "sequence" and cfg.get("loss_type") is None:  # GSPO's objective rests on it
        own = (("loss_type", "dapo"),) + own
    return dataclasses.replace(_setup(hp, name, exact, notes, sorted(set(cfg) - _trl_fields.READ), run_steps=run_steps,
                                      loss=loss, keys=keys, schedule=schedule, unmodelled=unmodelled, unknown=hints, added=added,
                                      assumed=_config_checks.assumed(name, given, defaults) + own),
                               logging_steps=logging,
                               refused=tuple(refused), fixes=tuple(fixes))


def _verl_setup(cfg: dict[str, Any], notes: list[str], unknown) -> RunSetup:
    """A verl config's RunSetup: the mapping, the schedule, and every key sorted by `predict._verl_fields`."""
    raw = flatten(cfg)
    classes = {k: _verl_fields.classify(k) for k in raw}
    schema = _verl_schema.schema()  # verl's own keys where it is installed: every key checked, not only the dynamics'
    if schema is None:
        notes.append("keys outside algorithm.* and actor_rollout_ref.actor.* were checked by section only, against "
                     "this tool's tables (install verl to check each against its schema)")
    else:  # a key verl has is no typo, though this tool's tables may not sort it (an engine's own optim keys)
        unsorted = sorted(k for k, c in classes.items() if c == "unknown" and schema.knows(k))
        if unsorted:
            notes.append(f"keys of verl's schema this tool's tables do not sort, read as changing no step: "
                         f"{', '.join(unsorted)}")
        classes = {k: ("no_dynamics" if k in unsorted else "unknown" if not _verl_fields.known(k)
                       and not schema.knows(k) else c) for k, c in classes.items()}
    old = sorted(k for k, c in classes.items() if c == "unknown" and k in OLD_KEYS and k not in _verl_fields.MOVED
                 and _verl_fields.changes_no_step(k))  # an older release's key in a subtree that changes no step
    if old:
        notes.append("keys of older verl releases, removed since, not read (none changes a training step): "
                     + ", ".join(f"{k} (a key of verl <= {OLD_KEYS[k]})" for k in old))
        classes |= dict.fromkeys(old, "no_dynamics")
    strays = [k for k, c in classes.items() if c == "unknown"]
    given = raw.get("algorithm.adv_estimator")
    _config_checks.estimator_first(strays, "algorithm.adv_estimator",
                     lambda: None if isinstance(given, str) and "${" in given else _verl_estimator(given))
    hints, added = unknown("verl", strays, _verl_fields.KNOWN | (schema.keys if schema else frozenset()))
    said: list[str] = []
    refused: list[str] = []
    hp, exact, used, loss = verl_mapping(raw, notes, said, refused)
    flat = resolve_all(raw)  # interpolations followed, numeric strings read as numbers (`predict._verl`)
    early = early_verl(flat)
    if early and flat.get("actor_rollout_ref.actor.entropy_coeff") is None:  # verl < 0.4's default
        flat["actor_rollout_ref.actor.entropy_coeff"] = 0.001
        classes["actor_rollout_ref.actor.entropy_coeff"] = "unmodelled"
        notes.append(f"actor_rollout_ref.actor.entropy_coeff not given: 0.001, the default of {early} (verl 0.9.1's "
                     "is 0)")
    key = "trainer.total_training_steps"
    run_steps = run_length(key, flat.get(key))
    optim = "actor_rollout_ref.actor.optim."
    schedule = verl_schedule(flat.get, run_steps, notes)
    clip_key = optim + "clip_grad" if flat.get(optim + "clip_grad") is not None else "actor_rollout_ref.actor.grad_clip"
    unmodelled = active_unmodelled(flat, _verl_fields.UNMODELLED) + decay_and_clip(
        (optim + "weight_decay", clip_key), (flat.get(optim + "weight_decay", 0.01), flat.get(clip_key, 1.0)), hp.lr,
        hp.optimizer, run_steps)
    kl = "algorithm.kl_ctrl.kl_coef"
    coef = 0.001 if flat.get(kl) is None else flat[kl]  # verl < 0.4's default
    if early and not flat.get("actor_rollout_ref.actor.use_kl_loss") and isinstance(coef, (int, float)) and coef > 0:
        unmodelled.append((kl, coef, f"a KL penalty in the reward ({early}, without use_kl_loss): a pull toward the "
                           "reference through the reward, not the loss"))
    epochs = flat.get("actor_rollout_ref.actor.ppo_epochs") or 1  # validated by the mapping
    keys = verl_keys(int(epochs), int(flat["data.train_batch_size"]), *search_r1_group(flat),
                     mini=int(flat["actor_rollout_ref.actor.ppo_mini_batch_size"]))
    defaults = {optim + "lr": 1e-6, "actor_rollout_ref.actor.ppo_epochs": 1}  # verl's (`predict._verl`)
    setup = _setup(hp, "verl", exact, notes, sorted(k for k in flat if k not in used and classes[k] != "read"),
                   run_steps=run_steps, loss=loss, keys=keys, schedule=schedule, unmodelled=unmodelled,
                   unknown=hints, added=added, apart=tuple(old),
                   assumed=_config_checks.assumed("verl", flat.get, defaults))
    defaulted = tuple(k for k in (optim + "weight_decay", clip_key, kl) if flat.get(k) is None)
    return dataclasses.replace(setup, read_as=tuple(said), refused=tuple(refused), defaulted=defaulted)


def _openrlhf_setup(cfg: dict[str, Any], notes: list[str], unknown) -> RunSetup:
    """OpenRLHF's arguments' RunSetup (`predict._openrlhf`): the mapping, the schedule, the unmodelled arguments."""
    args = _openrlhf.unabbreviated(_openrlhf.arguments(cfg), notes)
    strays = [k for k in args if k not in _openrlhf_fields.KNOWN]
    _openrlhf.refuse_unset(*_openrlhf.canonical(args))  # every value the script leaves to its environment, at once
    _config_checks.estimator_first(strays, "advantage_estimator", lambda: _openrlhf.advantage(*_openrlhf.canonical(args), []))
    hints, added = unknown(_openrlhf.FRAMEWORK, strays, _openrlhf_fields.KNOWN)
    hp, exact, used = _openrlhf.openrlhf_mapping(args, notes)
    flat, written = _openrlhf.canonical(args)

    def get(key: str) -> Any:
        return _openrlhf_fields.DEFAULTS.get(key) if flat.get(key) is None else flat[key]

    run_steps, schedule = _openrlhf.openrlhf_schedule(get, notes)
    unmodelled = [(written.get(k, k), v, why) for k, v, why in active_unmodelled(flat, _openrlhf_fields.UNMODELLED)]
    unmodelled += decay_and_clip((written["l2"], written["max_norm"]),
                                 (get("l2"), get("max_norm")), hp.lr, hp.optimizer, run_steps)
    if get("use_kl_loss") is not True and (get("init_kl_coef") or 0) > 0:  # OpenRLHF's default: a KL in the reward
        unmodelled.append((written["init_kl_coef"], get("init_kl_coef"), f"a KL penalty in the reward (without "
                           f"{written['use_kl_loss']}): a pull toward the reference through the reward, not the loss"))
    keys = openrlhf_keys(int(get("max_epochs")), int(get("rollout_batch_size")), hp.group_size,
                         int(get("train_batch_size")), written)
    ignored = sorted(written[k] for k in flat if k not in used and k not in _openrlhf_fields.READ)
    setup = _setup(hp, _openrlhf.FRAMEWORK, exact, notes, ignored, run_steps=run_steps, loss=str(get("policy_loss_type")),
                   keys=keys, schedule=schedule, unmodelled=unmodelled, unknown=hints, added=added,
                   assumed=_config_checks.assumed(_openrlhf.FRAMEWORK, flat.get, _openrlhf_fields.DEFAULTS))
    return dataclasses.replace(setup, defaulted=tuple(written[k] for k in ("l2", "max_norm", "init_kl_coef")
                                                      if flat.get(k) is None))


def _trainer_schedule(cfg: dict[str, Any], steps: int | None) -> LRSchedule | None:
    """Our trainer's lr_schedule: constant (None), or linear, eta (1 - s / steps), transformers' linear shape."""
    name = cfg.get("lr_schedule") or "constant"
    if name not in ("constant", "linear"):
        raise ConfigError(f"lr_schedule must be constant or linear, got {name!r}")
    return LRSchedule(shape="linear", warmup=0, total=steps) if name == "linear" and steps else None


def _setup(hp: Hyperparams, framework: str, exact: float, notes: list[str], ignored: list[str],
           run_steps: int | None = None, loss: str | None = None, keys: ConfigKeys | None = None,
           schedule: LRSchedule | None = None, unmodelled: list[tuple[str, Any, str]] = (),
           unknown: tuple[tuple[str, str | None], ...] = (), assumed: tuple[tuple[str, Any], ...] = (),
           added: tuple[str, ...] = (), apart: tuple[str, ...] = ()) -> RunSetup:
    """The RunSetup, with the keys not read said: each unmodelled one with what it changes, each unknown one by name
    (those `added` by a Hydra `+key=` in the answer's first lines, `brief_lines`), the rest (no bearing on the
    dynamics) counted but those a note of the caller's names (`apart`) (all of them in --json's config.ignored)."""
    if schedule is not None and (schedule.warmup or schedule.shape != "constant"):
        notes.append(f"lr schedule: {schedule.describe()}; the stiffness follows it (peak at step {schedule.peak_step() + 1})")
    if unmodelled:
        notes.append(grouped(list(unmodelled)))
    names = [k for k, _ in unknown]
    if unknown:
        notes.append(f"keys this tool does not know, not read (a typo, or a newer release's): {', '.join(names)}")
    named = {u[0] for u in unmodelled}  # read as changing the dynamics: not among the keys that change no step
    ignored = [k for k in ignored if k not in named]
    rest = [k for k in ignored if k not in set(names) | set(added) | set(apart)]
    if rest and framework in ("TRL GRPOConfig", "verl", "OpenRLHF"):  # the field tables say these change no step
        notes.append(f"{len(rest)} keys change no training step (logging, saving, hardware, data loading, evaluation; "
                     "all in --json's config.ignored)")
    elif rest:
        notes.append(f"keys not used by the theory: {', '.join(rest)}")
    return RunSetup(hparams=hp, framework=framework, refresh_exact=float(exact), notes=tuple(notes), ignored=tuple(ignored),
                    run_steps=run_steps, loss=loss, keys=keys, schedule=schedule, unmodelled=tuple(unmodelled),
                    unknown=tuple(names), nearest=tuple(n for _, n in unknown), added=tuple(added), assumed=tuple(assumed))
