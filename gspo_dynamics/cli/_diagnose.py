"""`gspo-dynamics diagnose LOG`: read a training log, fit it, print the failure-mode verdicts.

Exit status: 0 when the log was read and analysed, including a run too short to fit (the report and
the JSON say "too_short": that is an answer about the run, not bad input); 2 when the log cannot be
read, is of another algorithm (DPO, SFT, ...), or a flag/config value is impossible.

`--map NAME=COLUMN` is `read_log`'s column_map: parsed by `logs.parse_map_option`, checked by
`read_log`; an error that advises a map is re-spelled for the command line (`--map reward=COLUMN`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.cli._options import add_config_options, add_log_run_option, integer
from gspo_dynamics.logs import STANDARD_NAMES
from gspo_dynamics._keys import REFRESH_INTERVAL_KEYS
from gspo_dynamics.theory.hyperparams import ADVANTAGES, CORRECTIONS, Adam

DESCRIPTION = ("What happened in a GRPO/GSPO run and what to change: reads its training log, fits the reward curve and "
               "names the failure mode, with its evidence and advice.")
USAGE = "%(prog)s LOG [--config FILE] [--map reward=COLUMN] [--explain] [--json]"


def _epilog() -> str:
    """The verdicts and findings diagnose reports (its registries), the examples, and how the inputs are read."""
    from gspo_dynamics.diagnose import FINDINGS, MODES

    return (f"The verdict is one of {', '.join(MODES)}; findings: {', '.join(FINDINGS)} (docs/diagnose.md).\n\n"
            "examples:\n"
            "  gspo-dynamics diagnose output/checkpoint-500/trainer_state.json --config grpo.yaml\n"
            "  gspo-dynamics diagnose metrics.csv --map reward=score --explain\n\n"
            "Hyperparameters (optional; they unlock the damping margin and the critical refresh interval) come from "
            "flags, from --config FILE (JSON, YAML, TOML, a verl / OpenRLHF launch script or a TRL program .py: a TRL GRPOConfig, a verl config, OpenRLHF's "
            "arguments, our trainer's config or "
            "our own field names; read as `predict --config` reads it), or both (flags win). --lr is needed with any "
            "other hyperparameter flag. A log with its own column names: --map reward=my_reward,kl_ref=my_kl (NAME is "
            f"step or one of {', '.join(STANDARD_NAMES)}; common names such as reward_mean need no map). Exit status 0 "
            "when the log was analysed (a run too short to fit is reported as such), 2 when it cannot be read or is "
            "not a GRPO-style run.")


# dest -> Hyperparams field for the flags that map one to one
_FIELDS = {"lr": "lr", "refresh_interval": "refresh_interval", "group_size": "group_size", "num_groups": "num_groups",
           "advantage": "advantage", "correction": "correction", "clip_low": "clip_low", "clip_high": "clip_high",
           "kl": "kl_coef"}
_OPTIMIZER = ("optimizer", "momentum", "beta1", "beta2", "adam_eps")


def register(sub) -> None:
    p = sub.add_parser("diagnose", help="after a run: what its log says went wrong, on what evidence, and what to change",
                       description=DESCRIPTION, usage=USAGE, epilog_from=_epilog)
    p.add_argument("log", metavar="LOG", help="the log file: TRL's trainer_state.json, a TensorBoard event file, "
                                              "CSV or JSONL metrics, verl or OpenRLHF console output")
    add_map_option(p)
    add_log_run_option(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--explain", action="store_true",
                   help="after the answer, the evidence behind each verdict and finding, the fit and the notes")
    p.add_argument("--plot", metavar="OUT.png", help="write a multi-panel figure (reward + fit, zero-std, entropy, KL, length)")
    add_run_options(p)
    p.set_defaults(run=_cmd_diagnose)


def add_map_option(p: argparse.ArgumentParser) -> None:
    """--map NAME=COLUMN (repeatable): `read_log`'s column_map, parsed by `logs.parse_map_option`."""
    p.add_argument("--map", action="append", metavar="NAME=COLUMN[,...]",
                   help="read series NAME from the log's COLUMN, e.g. --map reward=score,step=iter (repeatable)")


def add_run_options(p: argparse.ArgumentParser) -> None:
    """--config, --reward-range and the training hyperparameter flags (read by `hyperparams_from_flags`)."""
    add_config_options(p, "hyperparameters from a TRL GRPOConfig, a verl config, OpenRLHF's arguments or our trainer's "
                          "config (JSON, YAML or TOML; a verl / OpenRLHF launch script; or a TRL program, .py), as predict --config "
                          "reads it",
                       "the report")
    p.add_argument("--devices", type=integer, metavar="N",
                   help="data-parallel processes of a TRL run, with --config (default: the config's, else 1)")
    p.add_argument("--reward-range", nargs=2, type=float, metavar=("LO", "HI"),
                   help="the least and greatest reward the task can give (e.g. 0 1 for a success rate): a plateau "
                        "at a bound is saturation, with no refresh-interval threshold (default: unknown)")
    g = p.add_argument_group("training hyperparameters (all optional; they win over --config's)")
    g.add_argument("--lr", type=float, help="learning rate eta (TRL learning_rate)")
    g.add_argument("--optimizer", choices=("sgd", "adam"), help="sgd (heavy-ball) or adam (default with --lr: adam)")
    g.add_argument("--momentum", type=float, help="heavy-ball momentum mu for sgd")
    g.add_argument("--beta1", type=float, help=f"Adam beta1 (TRL adam_beta1; default {Adam().beta1:g})")
    g.add_argument("--beta2", type=float, help=f"Adam beta2 (TRL adam_beta2; default {Adam().beta2:g})")
    g.add_argument("--adam-eps", type=float, help=f"Adam epsilon (TRL adam_epsilon; default {Adam().eps:g})")
    g.add_argument("--refresh-interval", "-T", type=int,
                   help=f"optimizer steps between refreshes of the sampling policy ({REFRESH_INTERVAL_KEYS})")
    g.add_argument("--group-size", "-G", type=int, help="responses per prompt G (TRL: num_generations)")
    g.add_argument("--num-groups", type=int, help="groups (prompts) per optimizer step (TRL: per_device_train_batch_size x "
                                                  "processes x gradient_accumulation_steps / num_generations)")
    g.add_argument("--advantage", choices=ADVANTAGES, help="mean: r - mean; std: also divided by the group std (TRL "
                                                           "scale_rewards none / group)")
    g.add_argument("--correction", choices=CORRECTIONS, help="off-policy correction (TRL: importance_sampling_level)")
    g.add_argument("--clip-low", type=float, help="eps_low of the ratio clip (TRL epsilon)")
    g.add_argument("--clip-high", type=float, help="eps_high of the ratio clip (TRL epsilon_high)")
    g.add_argument("--kl", type=float, help="KL weight beta (TRL beta)")


def config_setup(args: argparse.Namespace):
    """--config read as `predict.read_run_config` reads it (with --devices, --set, --allow-unknown), or None."""
    if args.set and args.config is None:
        raise ConfigError("--set overrides a key of --config: give the config it changes")
    if args.devices is not None and args.config is None:
        raise ConfigError("--devices counts a TRL config's processes; give the config (--config)")
    if args.config is None:
        return None
    from gspo_dynamics.predict import read_run_config

    return read_run_config(args.config, devices=args.devices, overrides=args.set, allow_unknown=args.allow_unknown)


def hyperparams_from_flags(args: argparse.Namespace, setup=None):
    """(Hyperparams or None, brief, notes, logging_steps) from --config (`config_setup`'s, or `setup` where the caller
    read it) and the hyperparameter flags (flags override the file): brief, the config's unknown keys read past and
    the defaults taken for lr, G and T where no flag gives them (`RunSetup.brief_lines`, part of the answer); notes,
    how the config was read; logging_steps, TRL's `logging_steps` where the config sets it (the step of a console
    log's k-th row without a step), else None."""
    from gspo_dynamics.theory.hyperparams import SGD, Hyperparams

    notes: list[str] = []
    brief: list[str] = []
    base = None
    logging_steps = None
    given = _given(args)
    setup = config_setup(args) if setup is None else setup
    if setup is not None:
        base = setup.hparams
        logging_steps = setup.logging_steps
        brief = list(setup.brief_lines(_flagged(setup, given))) + setup.unmodelled_lines()
        notes = [f"config: read as {setup.framework}"] + [f"config: {n}" for n in setup.notes]
    opt_given = [d for d in _OPTIMIZER if getattr(args, d) is not None]
    if not given and not opt_given:
        return base, brief, notes, logging_steps
    if base is None and "lr" not in given:
        raise ConfigError("--lr is needed with the other hyperparameter flags (or give --config)")
    name = args.optimizer or ("sgd" if args.momentum is not None else None)
    if name is None and base is not None:
        name = base.optimizer.name
    if args.momentum is not None and name == "adam":
        raise ConfigError("--momentum applies to --optimizer sgd only (Adam's momentum is --beta1)")
    if name == "sgd" and any(getattr(args, d) is not None for d in ("beta1", "beta2", "adam_eps")):
        raise ConfigError("--beta1/--beta2/--adam-eps apply to --optimizer adam only")
    if name == "sgd":
        optimizer = SGD(momentum=args.momentum if args.momentum is not None else 0.0)
    else:
        old = base.optimizer if base is not None and isinstance(base.optimizer, Adam) else Adam()
        optimizer = Adam(beta1=old.beta1 if args.beta1 is None else args.beta1,
                         beta2=old.beta2 if args.beta2 is None else args.beta2,
                         eps=old.eps if args.adam_eps is None else args.adam_eps)
        if name is None:
            notes.append("optimizer not given: Adam assumed (what TRL uses)")
    if base is None:
        return Hyperparams(optimizer=optimizer, **given), brief, notes, logging_steps
    return dataclasses.replace(base, optimizer=optimizer, **given), brief, notes, logging_steps


def _given(args: argparse.Namespace) -> dict:
    """The hyperparameters the flags give, by the theory's field names."""
    return {field: getattr(args, dest) for dest, field in _FIELDS.items() if getattr(args, dest) is not None}


def logged_beta(args: argparse.Namespace, setup, hparams, brief: list[str], log):
    """(hparams, brief) with the config's beta as `predict` reads it beside this log where no --kl gives one
    (`predict.beta_from_logged_kl`: a TRL config without beta under a TRL log of a release before 0.18 that logs a
    KL ran at that release's default, 0.04), the answer's first lines saying so; `setup` the config as read."""
    if setup is None or args.kl is not None or hparams is None:
        return hparams, brief
    from gspo_dynamics.predict import beta_from_logged_kl

    dated = beta_from_logged_kl(setup, log, len(log.steps))
    if dated is setup:
        return hparams, brief
    lines = list(dated.brief_lines(_flagged(dated, _given(args)))) + dated.unmodelled_lines()
    return dataclasses.replace(hparams, kl_coef=dated.hparams.kl_coef), lines


def _flagged(setup, given: dict) -> tuple[str, ...]:
    """The config's keys of lr, G and T whose defaults no answer rests on here: those a flag gives, and the run's
    length (diagnose reads the log's)."""
    keys = setup.keys
    lr, group = (keys.lr, keys.group) if keys else ("lr", "group_size")
    run_length = ("max_steps", "trainer.total_training_steps", "steps")
    return tuple(k for k, _ in setup.assumed
                 if k in run_length or (k == lr and "lr" in given) or (k == group and "group_size" in given)
                 or (k not in (lr, group) and "refresh_interval" in given))


def _cmd_diagnose(args: argparse.Namespace) -> int:
    from gspo_dynamics.diagnose import diagnose
    from gspo_dynamics.logs import ColumnMapError, parse_map_option, read_log

    setup = config_setup(args)  # read once: the flags' hyperparameters and the log's beta both read it
    printed: list[str] = []
    if setup is None:  # no --config: the config a verl log printed at its start is the run's
        from gspo_dynamics.predict import setup_from_log

        setup, printed = setup_from_log(args.log)
    hparams, brief, notes, logging_steps = hyperparams_from_flags(args, setup)
    if setup is not None:  # read from the log: said in the answer
        brief = printed + brief
    else:  # printed but not read: why, in a note
        notes += [f"config: {line}" for line in printed]
    try:
        log = read_log(args.log, column_map=parse_map_option(args.map), run=args.log_run, logging_steps=logging_steps)
    except ColumnMapError as error:
        raise ConfigError(error.render(cli=True)) from None
    hparams, brief = logged_beta(args, setup, hparams, brief, log)
    if args.config is not None:  # the config given beside the log: where they cannot be one run's, said first
        from gspo_dynamics.predict import config_disagrees

        brief = config_disagrees(log, setup) + brief
    reward_range = None if args.reward_range is None else tuple(args.reward_range)
    _check_reward_range(log, reward_range)
    diagnosis = diagnose(log, hparams, reward_range=reward_range)
    diagnosis.notes.extend([f"config: {line}" for line in brief] + notes)
    diagnosis.config_lines.extend(brief)
    if args.plot:
        _save_plot(diagnosis, args.plot)
    if args.json:
        print(json.dumps(diagnosis.to_json(), allow_nan=False))
    else:
        print("\n".join(diagnosis.report_lines(explain=args.explain)))
    if args.plot:
        print(f"gspo-dynamics: wrote {args.plot}", file=sys.stderr)
    return 0


def _check_reward_range(log, reward_range) -> None:
    """A --reward-range the logged rewards leave is a mistake about the task, not a finding: one line."""
    from gspo_dynamics.fit import check_reward_range

    check_reward_range(reward_range)  # lo < hi, finite: the range's own message first
    if reward_range is None or "reward" not in log:
        return
    _, reward = log.valid("reward")
    lo, hi = reward_range
    if len(reward) and (reward.min() < lo or reward.max() > hi):
        raise ConfigError(f"--reward-range {lo:g} {hi:g} does not hold the logged rewards, which run from "
                          f"{reward.min():.4g} to {reward.max():.4g}")


def _save_plot(diagnosis, path: str) -> None:
    from gspo_dynamics.cli._options import save_figure
    from gspo_dynamics.plots.diagnose import diagnosis_figure

    save_figure(diagnosis_figure(diagnosis), path)
