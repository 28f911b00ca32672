"""What a config leaves to this tool: keys it does not know, defaults of the keys the verdict rests on, and what
refuses a config before it is mapped (a training log given as one, a Hydra file composing files of its own, a
--devices count for a config whose batch is not per device: `refuse_log`, `refuse_composed`, `refuse_devices`).

Unknown keys. A key in no table of its framework's (TRL: `predict._trl_fields`; verl: `predict._verl_fields`, its
sections and its dynamics subtrees' keys; our trainer: `TRAINER_FIELDS`; the theory's own names: `OWN_NAMES`) is a
typo or a key of a release this tool does not know. Read on, it would leave the key it stands for at its default
(TRL's `learnig_rate: 1e-3` is a run at TRL's 1e-6), so `read_run_config` refuses it, as TRL's own GRPOConfig does,
naming the nearest known key (`nearest`), unless the caller allows unknown keys (`--allow-unknown`); then the answer's
first lines name them (`unknown_line`). A key a Hydra `+key=` / `++key=` adds (a launch script's, or `--set +key=`)
was added on purpose: it is no typo, so never refused, and it is not read; the first lines say so once (`added_line`).

Assumed defaults. A key the verdict rests on (`VERDICT_KEYS`: the learning rate, G, the keys of the refresh
interval T, the run's length; TRL's beta, whose default moved between releases) that the config does not hold takes
its framework's default; the answer's first lines say which (`assumed_line`), since a forgotten key is as silent as a
misspelt one.
"""

from __future__ import annotations

import difflib
import re
from typing import Any, Callable, Iterable

from gspo_dynamics._errors import ConfigError
from gspo_dynamics._launch_script import VERL_BASES
from gspo_dynamics.predict import _verl_schema
from gspo_dynamics.predict._verl_fields import MOVED
from gspo_dynamics.predict._verl_history import OLD_KEYS

UNKNOWN_SHOWN = 5  # unknown keys a refusal names (a Hydra dump of another verl release holds dozens)
NEAR_CUTOFF = 0.75  # difflib's ratio a known key must reach to be offered ("learnig_rate" -> "learning_rate": 0.96;
# "steps" -> "std_eps", 0.67, is no typo of it)
WORD_CUTOFF = 0.75  # `_misspelt`: a word this near another is that word misspelt (learnig/learning 0.93;
# ref/reward 0.67 is another word), or one letter from it (`_one_edit`: nn/n)
LEAF_CUTOFF = 0.6  # a whole dotted key offered needs its last part this near too ("rollout.nn" -> "rollout.n": 0.67; a
# shared prefix alone, "actor.mask_answer" -> "actor.tau_neg": 0.44, is no typo)

# the keys the verdict rests on, by framework: lr, G, T's keys, the run's length (`assumed`)
VERDICT_KEYS = {
    "TRL GRPOConfig": ("learning_rate", "num_generations", "steps_per_generation", "num_iterations",
                       "gradient_accumulation_steps", "max_steps", "beta"),
    "verl": ("actor_rollout_ref.actor.optim.lr", "actor_rollout_ref.actor.ppo_epochs", "trainer.total_training_steps"),
    "gspo-dynamics trainer": ("lr", "group_size", "steps_per_generation", "num_iterations", "steps"),
    "OpenRLHF": ("actor_learning_rate", "n_samples_per_prompt", "rollout_batch_size", "train_batch_size", "max_epochs",
                 "max_steps"),
    "gspo-dynamics hyperparameters": ("refresh_interval", "group_size"),
}
RUN_LENGTH_KEYS = {"max_steps", "trainer.total_training_steps", "steps"}
DEFAULTS_OF = {"TRL GRPOConfig": "TRL's", "verl": "verl's", "OpenRLHF": "OpenRLHF's", "gspo-dynamics trainer": "our trainer's",
               "gspo-dynamics hyperparameters": "the theory's"}
HAS_NO = {"TRL GRPOConfig": "TRL's GRPOConfig has no field", "verl": "verl's config has no key",  # + "s" for several
          "OpenRLHF": "OpenRLHF's train_ppo_ray has no argument",
          "gspo-dynamics trainer": "our trainer's config has no field",
          "gspo-dynamics hyperparameters": "the theory's names (lr, refresh_interval, group_size, ...) hold no key"}
# where a key a Hydra `+key=` adds is not (`added_line`)
NOT_IN = {"TRL GRPOConfig": "TRL's GRPOConfig", "verl": "verl 0.9.1's schema", "OpenRLHF": "OpenRLHF's arguments",
          "gspo-dynamics trainer": "gspo-dynamics' trainer config", "gspo-dynamics hyperparameters": "the theory's names"}
UNSET = {"group_size": "G -> infinity, the expected dynamics"}
OLDER_DEFAULT = {"beta": "older TRL releases 0.04"}  # a default that moved between releases: the other said beside it
# a default read from the log instead of the framework's current one (`_pilot_log.beta_from_logged_kl`)
FROM_PILOT = {("beta", 0.04): "the log holds a KL, and its keys date it before TRL 0.18, whose releases log one "
                              "with beta unset only at their default 0.04"}
OWN_DEFAULT = {("processes", 1): "--devices N gives yours: the groups per step rest on it, and T where "
                                 "generation_batch_size is given",
               ("rollout_batch_size", 512): "openrlhf.cli.train_ppo's, the trainer before Ray",
               ("loss_type", "dapo"): "TRL 1.16's: under importance_sampling_level sequence each sequence weighs by "
                                      "its length, not GSPO's per-sequence objective; loss_type grpo is the paper's"}  # a trainer's own  # what an unset key means (a run length: unknown)


# another framework's name for a key (its last part), offered before difflib's nearest spelling: verl's
# optim.learning_rate is optim.lr, the theory's G is group_size; each taken only where the framework has it
ALIASES = {"learning_rate": ("lr",), "lr": ("learning_rate",), "G": ("group_size",), "T": ("refresh_interval",),
           "num_generations": ("n", "group_size"), "group_size": ("n", "num_generations")}


def nearest(key: str, known: Iterable[str]) -> str | None:
    """The known key closest to `key`: its name in this framework (`ALIASES`), else difflib's nearest (ratio >=
    NEAR_CUTOFF), or None. A dotted key is matched first by its last part among its siblings
    (`actor_rollout_ref.actor.ppo_epoch` -> `...ppo_epochs`), then whole, where the last parts are near too (a typo in
    the path: `trainner.critic_warmup` -> `trainer.critic_warmup`)."""
    if key in MOVED:  # an older release's key: where this release reads it, not its nearest spelling
        return MOVED[key][0]
    if key in OLD_KEYS:  # an older release's key, removed since: no typo of a key of this release
        return None
    known = sorted(set(known))
    parent, dot, leaf = key.rpartition(".")
    for alias in ALIASES.get(leaf, ()):
        if parent + dot + alias in known:
            return parent + dot + alias
    if dot:
        siblings = {k.rpartition(".")[2]: k for k in known if k.rpartition(".")[0] == parent}
        match = difflib.get_close_matches(leaf, list(siblings), n=1, cutoff=NEAR_CUTOFF)
        if match:
            return siblings[match[0]] if _misspelt(leaf, match[0]) else None
    match = difflib.get_close_matches(key, known, n=1, cutoff=NEAR_CUTOFF)
    if match and dot and not difflib.get_close_matches(leaf, [match[0].rpartition(".")[2]], cutoff=LEAF_CUTOFF):
        return None  # a shared long prefix, another last part: `actor.chunk_noreduce` is no typo of `actor.tau_neg`
    return match[0] if match and _misspelt(leaf, match[0].rpartition(".")[2]) else None


def _misspelt(name: str, known: str) -> bool:
    """Whether `name` reads as `known` misspelt, word by word (words split at _ and -): as many words, each the same
    or near (ratio >= WORD_CUTOFF: `learnig_rate`, `ppo_epoch`), or the same letters with another split
    (`learningrate`). A word of its own, or one another word stands for, is a different name, whatever the
    letters share: `ref_pretrain` is no typo of `reward_pretrain`, `val_custom_reward_function` none of
    `custom_reward_function`, `max_extrapolation_length` none of `max_response_length` (a fork's own keys)."""
    words, known_words = re.split(r"[_\-]", name.lower()), re.split(r"[_\-]", known.lower())
    if len(words) != len(known_words):
        return "".join(words) == "".join(known_words)
    return all(a == b or difflib.SequenceMatcher(None, a, b).ratio() >= WORD_CUTOFF or _one_edit(a, b)
               for a, b in zip(words, known_words))


def _one_edit(a: str, b: str) -> bool:
    """Whether one letter added, dropped or changed turns `a` into `b` (a short word's typo: `nn` for `n`)."""
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b)) == 1
    short, long_ = sorted((a, b), key=len)
    return any(long_[:i] + long_[i + 1:] == short for i in range(len(long_)))


def hinted(unknown: Iterable[str], known: Iterable[str]) -> tuple[tuple[str, str | None], ...]:
    """(key, its nearest known key or None) for each unknown key."""
    known = set(known)
    return tuple((key, nearest(key, known)) for key in unknown)


def _named(hints: Iterable[tuple[str, str | None]], from_set: set[str] = frozenset()) -> str:
    """Each key with its nearest known key; an older release's key with the key this release reads (`MOVED`), else
    with the last release that has it (`_verl_history.OLD_KEYS`)."""
    def hint(key: str, near: str | None) -> str:
        if key in MOVED:
            return f" (an older verl's key: verl 0.9.1 reads {near}, {MOVED[key][1]})"
        if key in OLD_KEYS:
            return f" (a key of verl <= {OLD_KEYS[key]}, removed since; not read)"
        return f" (did you mean {near}?)" if near else ""
    return ", ".join(("--set " if key in from_set else "") + key + hint(key, near) for key, near in hints)


def refuse_unknown(hints: tuple[tuple[str, str | None], ...], framework: str, from_set: set[str]) -> None:
    """One ConfigError naming each unknown key (and the --set that gave it) with its nearest known key; past
    UNKNOWN_SHOWN keys, the first UNKNOWN_SHOWN (those with a nearest key first) and the count, and that a config saved
    by another release of the framework holds such keys by the dozen (a Hydra dump of another verl release)."""
    if hints:
        one = len(hints) == 1
        if len(hints) > UNKNOWN_SHOWN:
            first = sorted(hints, key=lambda h: (h[0] not in from_set, h[1] is None))[:UNKNOWN_SHOWN]
            raise ConfigError(f"{HAS_NO[framework]}s {_named(first, from_set)} and {len(hints) - UNKNOWN_SHOWN} more: a "
                              "misspelt key leaves the one meant at its default; a config saved by another release holds "
                              "keys this tool does not know by the dozen: if it is one, give --allow-unknown to read on "
                              "(the answer's first lines name every key read past), else correct them")
        it = "it" if one else "them"
        if all(key in OLD_KEYS or key in MOVED for key, _ in hints):  # an older release's: no typo to correct
            raise ConfigError(f"{HAS_NO[framework]}{'' if one else 's'} {_named(hints, from_set)}: where it sits, a key "
                              f"may change a training step, which this release does otherwise or not at all; give "
                              f"--allow-unknown to read on without {it}")
        raise ConfigError(f"{HAS_NO[framework]}{'' if one else 's'} {_named(hints, from_set)}: a misspelt key leaves "
                          f"the one meant at its default, and a fork's own key is not read; correct {it}, or give "
                          f"--allow-unknown to read on without {it}")


def unknown_line(hints: tuple[tuple[str, str | None], ...]) -> str:
    """The first lines' naming of the unknown keys read past (--allow-unknown)."""
    more = f" and {len(hints) - UNKNOWN_SHOWN} more (--json lists them)" if len(hints) > UNKNOWN_SHOWN else ""
    return f"unknown keys (not read, --allow-unknown): {_named(hints[:UNKNOWN_SHOWN])}{more}"


def added_line(framework: str, keys: tuple[str, ...]) -> str:
    """The first lines' naming of the keys a Hydra `+key=` adds on purpose: no typo, and not read."""
    more = f" and {len(keys) - UNKNOWN_SHOWN} more (--json lists them)" if len(keys) > UNKNOWN_SHOWN else ""
    return f"added by +key, not in {NOT_IN[framework]}, not read: {', '.join(keys[:UNKNOWN_SHOWN])}{more}"


def recorded_line(framework: str, keys: tuple[str, ...]) -> str:
    """The first lines' naming of the keys of W&B's record of a run's config that the framework does not have."""
    more = f" and {len(keys) - UNKNOWN_SHOWN} more (--json lists them)" if len(keys) > UNKNOWN_SHOWN else ""
    return (f"recorded by W&B beside the run's config, not in {NOT_IN[framework]}, not read (the model's config, W&B's "
            f"own, a fork's fields): {', '.join(keys[:UNKNOWN_SHOWN])}{more}")


def assumed(framework: str, value_of: Callable[[str], Any], defaults: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """(key, the default taken) for each of the framework's `VERDICT_KEYS` the config does not hold (`value_of`
    gives None), the default from `defaults` (None: unset, as a run length without its key)."""
    return tuple((key, defaults.get(key)) for key in VERDICT_KEYS[framework] if value_of(key) is None)


def assumed_line(framework: str, pairs: tuple[tuple[str, Any], ...], at_peak: bool = False) -> str:
    """The first lines' naming of the defaults taken for keys the verdict rests on; `at_peak`: the lr schedule decays
    over the run's unknown length, so every number reads the lr at its peak (said with the length)."""
    def text(key: str, value: Any) -> str:
        shown = "unset" if value is None else f"{value:g}" if isinstance(value, float) else str(value)
        length = ("no OpenRLHF argument: train_ppo_ray works it out from the prompts' count; --run-steps N gives it"
                  if framework == "OpenRLHF" else "the run's length unknown")  # audit s38c C5: named as a missing flag
        length += ": the lr schedule's decay over it is not read, every number uses the peak lr" if at_peak else ""
        gloss = (length if key in RUN_LENGTH_KEYS else UNSET.get(key) if value is None
                 else FROM_PILOT.get((key, value)) or OWN_DEFAULT.get((key, value)) or OLDER_DEFAULT.get(key))
        return f"{key} {shown}" + (f" ({gloss})" if gloss else "")

    return (f"assumed, not in the config ({DEFAULTS_OF[framework]} defaults): "
            + ", ".join(text(k, v) for k, v in pairs))


def refuse_log(cfg: dict[str, Any]) -> None:
    """A training log read as a config (TRL's trainer_state.json holds max_steps and train_batch_size beside its
    log_history) is one ConfigError, not a config of defaults."""
    if isinstance(cfg.get("log_history"), list):
        raise ConfigError("this is a TRL trainer_state.json, a training log, not a config; give it as --pilot (predict) "
                          "or as the log (diagnose), and the run's GRPOConfig (its training_args as JSON or YAML) as --config")


def refuse_mixed(trl: set[str], other: str) -> None:
    """Refuse TRL keys (`trl`, the config's top-level ones) beside another framework's section (`other`, as said)."""
    if trl:
        raise ConfigError(f"the config mixes TRL keys ({', '.join(sorted(trl))}) with {other}: give one framework's "
                          "config (verl: actor_rollout_ref.actor.optim.lr, actor_rollout_ref.rollout.n, ...)")


def no_framework_error(cfg: dict[str, Any], known: Iterable[str]) -> ConfigError:
    """The error for a config with no hyperparameter of any framework's: its keys, and the nearest known key of each
    where one is near (`hinted`)."""
    near = [f"{k} (did you mean {n}?)" for k, n in hinted(sorted(map(str, cfg)), known) if n and n != k]
    keys = ", ".join(map(str, list(cfg)[:6])) + (", ..." if len(cfg) > 6 else "")
    return ConfigError(f"not a GRPO config of TRL, verl, OpenRLHF or ours: its keys are {keys}, and it has no "
                       "hyperparameter this tool knows (TRL: learning_rate, num_generations, ...; verl: "
                       "actor_rollout_ref...; ours: lr, refresh_interval, group_size, ... or a trainer config)"
                       + (f"; {', '.join(near)}" if near else ""))


def refuse_composed(cfg: dict[str, Any]) -> None:
    """A Hydra config whose defaults list names files of its own (`defaults: [gspo_shared, _self_]`) holds only the
    keys it overrides, the rest being in those files: one ConfigError, not a read of the rest at verl's defaults.
    verl's own files (its bases `ppo_trainer`, `ppo_megatron_trainer`, the rest of its shipped config folder) and
    config groups (`actor@actor_rollout_ref.actor: dp_actor`, mappings) compose what this tool reads as verl's
    defaults."""
    entries = cfg.get("defaults")
    named = [e for e in entries if isinstance(e, str)] if isinstance(entries, list) else []
    if not named:
        return
    shipped = _verl_schema.schema_file()  # verl's config folder: its files are what verl's defaults compose
    verls = {*VERL_BASES, "_self_", "legacy_reward_impl"} | ({p.stem for p in shipped.parent.glob("*.yaml")} if shipped
                                                             else set())
    own = [e for e in named if e.removesuffix(".yaml") not in verls]
    if own:
        raise ConfigError(f"the config composes other files through Hydra's defaults list ({', '.join(own)}): it holds "
                          "only the keys it overrides, the rest are in those files; give the composed config (the run's "
                          ".hydra/config.yaml, or the file it names with this one's keys as --set)")


def refuse_devices(devices: int | None, why: str) -> None:
    """A device count is a TRL config's only (its batch is per device): given for another, one ConfigError."""
    if devices is not None:
        raise ConfigError(f"--devices counts the processes of a TRL config (its batch is per device); {why}")


def estimator_first(strays: list[str], key: str, check) -> None:
    """Run `check` (the mapping's estimator check: a ConfigError for a critic's or a non-group estimator) before the
    unknown keys `strays` are refused: a run outside the group model is said first, not after the user has sorted
    out a fork's own keys; unless a stray key may be `key` misspelt (its last part near `key`'s), whose refusal then
    says more."""
    leaf = key.rsplit(".", 1)[-1]
    if not any(difflib.get_close_matches(k.rsplit(".", 1)[-1], [leaf], cutoff=NEAR_CUTOFF) for k in strays):
        check()


MAX_ADAM_LR = 1.0  # Adam moves every weight by about its lr a step (its update is lr m / sqrt(v), |m / sqrt(v)| ~ 1)
LLM_FRAMEWORKS = ("TRL GRPOConfig", "verl", "OpenRLHF")  # an LLM trainer's config


def implausible_lr(framework: str, optimizer: str, lr: float, key: str) -> tuple[str, ...]:
    """The first line for a framework's config (TRL, verl, OpenRLHF: an LLM's) whose Adam learning rate is
    MAX_ADAM_LR or more: Adam's step moves each weight by about the lr whatever the gradient's scale, so at lr >= 1
    every weight jumps by its own size or more each step: a lost exponent (5 for 5e-6), said and read as given. The
    theory's own names and our trainer's (a bandit's logits train at lr 1) are left alone; () otherwise."""
    if optimizer != "adam" or lr < MAX_ADAM_LR or framework not in LLM_FRAMEWORKS:
        return ()
    return (f"{key} {lr:g} with Adam moves every weight by about {lr:g} a step: no LLM trains so; a lost exponent "
            "(LLM RL runs near 1e-6)? read as given",)
