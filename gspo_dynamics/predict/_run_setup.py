"""`RunSetup`: a training config read into the theory's terms (`predict._configs.read_run_config` reads it), and
the answer's first lines about the config itself (`brief_lines`, `unmodelled_lines`, their JSON)."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

from gspo_dynamics.predict import _config_checks
from gspo_dynamics.predict._config_keys import ConfigKeys
from gspo_dynamics.predict._frameworks import PART_GROUP
from gspo_dynamics.predict._optimizers import AT_PEAK
from gspo_dynamics.theory.hyperparams import Hyperparams
from gspo_dynamics.theory.schedule import LRSchedule


@dataclass(frozen=True)
class RunSetup:
    """A config read into the theory's terms (module docstring for each framework's mapping)."""

    hparams: Hyperparams  # lr, optimizer, refresh_interval T (rounded), group_size G, num_groups N, clip, beta, correction
    framework: str  # "TRL GRPOConfig" | "verl" | "OpenRLHF" | "gspo-dynamics trainer" | "gspo-dynamics hyperparameters"
    refresh_exact: float  # T before rounding (a fraction when a rollout boundary falls inside an optimizer step)
    notes: tuple[str, ...]  # every default, assumption and rounding used, and the keys ignored
    ignored: tuple[str, ...]  # keys this mapping does not read
    logging_steps: int | None = None  # TRL's logging_steps where the config sets it: optimizer steps per logged row
    run_steps: int | None = None  # the run's optimizer steps where the config holds them (TRL max_steps, verl
    # trainer.total_training_steps, our trainer's steps); None: unset
    run_given: bool = False  # run_steps is predict --run-steps', not the config's own length (`with_run_length`)
    loss: str | None = None  # the loss as the config names it: our trainer's objective, TRL's loss_type with its
    # importance_sampling_level, verl's loss_mode with its loss_agg_mode; None where it names none (TRL without a
    # loss_type: its default moved between releases). A prior's runs are matched on it (predict._prior (4))
    keys: ConfigKeys | None = None  # the keys a user edits for lr, T, G (`predict._config_keys`); None: the theory's own names
    schedule: LRSchedule | None = None  # the lr's schedule where the config gives one the theory models (None: constant)
    defaulted: tuple[str, ...] = ()  # the unmodelled keys at the framework's default (the config does not give them)
    unmodelled: tuple[tuple[str, Any, str], ...] = ()  # (key, value, what it changes): set, changing the dynamics,
    # outside the model (`predict._trl_fields`, `predict._verl_fields`)
    unknown: tuple[str, ...] = ()  # keys in no table of the framework's: a typo, or a release this tool does not know
    # (read past only with allow_unknown)
    nearest: tuple[str | None, ...] = ()  # the known key nearest each unknown one (None: none near)
    added: tuple[str, ...] = ()  # keys the framework does not have that a Hydra `+key=` adds on purpose (a launch
    # script's, or --set +key=): no typo, so not refused, and not read
    recorded: tuple[str, ...] = ()  # keys the framework does not have in W&B's record of the run's config (the model's
    # config, W&B's, a fork's fields): recorded from the run, no typo, so not refused, and not read
    assumed: tuple[tuple[str, Any], ...] = ()  # (key, default taken): the keys the verdict rests on that the config
    # does not hold (`predict._config_checks.VERDICT_KEYS`)
    refused: tuple[str, ...] = ()  # what the framework itself would refuse in the config, and how it is read here
    fixes: tuple[tuple[str, Any, str], ...] = ()  # the edits that make the framework accept it: (key, value, buys)
    read_as: tuple[str, ...] = ()  # a key read by a fork's convention, not the framework's: Search-R1's rollout.n_agent
    # as G (`predict._verl`)
    implausible: tuple[str, ...] = ()  # a value no LLM run would train with (`_adam_lr_check`), said first, read as given

    @property
    def masks_truncated(self) -> bool | None:
        """Whether the trainer drops completions cut at the length cap from the loss, as the config says: TRL's
        mask_truncated_completions (default false); None for another framework's config (not read)."""
        if self.framework != "TRL GRPOConfig":
            return None
        return next((bool(value) for key, value, _ in self.unmodelled if key == "mask_truncated_completions"), False)

    def brief_lines(self, skip: tuple[str, ...] = ()) -> list[str]:
        """The answer's first lines about the config itself: the unknown keys read past, and the defaults taken for
        the keys the verdict rests on (none but those of `skip`, keys the caller was given otherwise)."""
        assumed = tuple((k, v) for k, v in self.assumed if k not in skip)
        lines = list(self.implausible) + list(self.read_as) + list(self.refused)
        lines += [_config_checks.added_line(self.framework, self.added)] if self.added else []
        lines += [_config_checks.recorded_line(self.framework, self.recorded)] if self.recorded else []
        lines += [_config_checks.unknown_line(tuple(zip(self.unknown, self.nearest)))] if self.unknown else []
        said = any(k in _config_checks.RUN_LENGTH_KEYS for k, _ in self.assumed)  # the length unknown: said
        # ... with what it does to a decaying schedule, which its own line would repeat (audit s43c D6)
        at_peak = said and any(AT_PEAK in n and "length" in n for n in self.notes)
        lines += [_config_checks.assumed_line(self.framework, assumed, at_peak)] if assumed else []
        return lines + [f"lr schedule not read: {n}" for n in self.notes if AT_PEAK in n  # the lr every number uses
                        and not (said and "length" in n)] + [  # N < 1, unless a refusal above says the groups split
            f"N rounded: {n}" for n in self.notes if PART_GROUP in n and not self.refused]

    def unmodelled_lines(self) -> list[str]:
        """The keys in force away from their neutral value that change the dynamics but are outside the model, named
        in the answer (never silently dropped), after its change; what each changes is under --explain."""
        default = f" ({_config_checks.DEFAULTS_OF[self.framework]} default)" if self.defaulted else ""
        return ["not modelled, each changes the dynamics (--explain says how): "
                + ", ".join(f"{k} {_shown(v)}{default if k in self.defaulted else ''}" for k, v, _ in self.unmodelled)
                ] if self.unmodelled else []

    def brief_json(self, skip: tuple[str, ...] = ()) -> dict[str, Any]:
        """`brief_lines` as JSON: read_as, refused, added_keys [key], recorded_keys [key], unknown_keys [{key,
        nearest}], assumed [{key, value, source}]."""
        source = f"{_config_checks.DEFAULTS_OF[self.framework]} default"
        return {"read_as": list(self.read_as), "refused": list(self.refused), "implausible": list(self.implausible),
                "added_keys": list(self.added),
                "recorded_keys": list(self.recorded),
                "unknown_keys": [{"key": k, "nearest": n} for k, n in zip(self.unknown, self.nearest)],
                "assumed": [{"key": k, "value": v, "source": "the log" if (k, v) in _config_checks.FROM_PILOT else source}
                            for k, v in self.assumed if k not in skip]}

    def to_json(self) -> dict[str, Any]:
        hp = self.hparams
        return {"framework": self.framework, "lr": hp.lr, "optimizer": hp.optimizer.name,
                "momentum": hp.momentum, "refresh_interval": hp.refresh_interval, "refresh_exact": self.refresh_exact,
                "group_size": hp.group_size, "num_groups": hp.num_groups, "clip_low": hp.clip_low,
                "clip_high": hp.clip_high, "clip_mode": hp.clip_mode, "kl_coef": hp.kl_coef, "correction": hp.correction,
                "advantage": hp.advantage, "ratio_cap": hp.ratio_cap, "run_steps": self.run_steps, "loss": self.loss,
                "schedule": None if self.schedule is None else dataclasses.asdict(self.schedule),
                "notes": list(self.notes), "ignored": list(self.ignored),
                "unmodelled": [{"key": k, "value": v, "changes": what, "default": k in self.defaulted}
                               for k, v, what in self.unmodelled],
                "unknown": list(self.unknown)}


def _shown(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else json.dumps(value) if isinstance(value, (bool, dict, list)) else str(value)
