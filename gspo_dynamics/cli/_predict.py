"""`gspo-dynamics predict`: before a run, what a config (and a short pilot of it) says about stability.

    predict --config grpo.yaml [--set KEY=VALUE]... [--pilot first_50_steps.jsonl [--run-steps N]]
            [--prior finished_run.jsonl ...] [--pass-rates FILE] [--json] [--explain] [--plot map.png]
    predict --testbed bandit --kl 0.5 --ref-logit -1 ...  (the two-armed bandit, the theory's exact toy)

The first lines answer (`predict._headline`): the verdict, what to change in the config's keys, the forecast or
the pilot to run; `--explain` adds the derivation. Hyperparameter flags are the bandit's: without `--testbed
bandit` they are refused (a real run's come from its config, changed with --set), since an LLM learning rate
means nothing on the toy.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.cli._options import (
    add_config_options, add_hyperparams, add_log_run_option, bandit_from_args, hyperparams_from_args, integer, save_figure,
)
from gspo_dynamics.predict import T_MAX, as_json_ready, hparams_text, predict_bandit, summary_lines


DESCRIPTION = ("Whether a GRPO/GSPO config (TRL, verl or this tool's trainer) trains stably and what to change if "
               "not; with a short pilot run's log, also the reward the run ends at.")
USAGE = ("%(prog)s --config FILE [--pilot LOG] [--set KEY=VALUE]... [--explain] [--json]\n"
         "       %(prog)s --testbed bandit [--lr LR] [--kl KL] ...   (the toy two-armed bandit)")
EPILOG = ("examples:\n"
          "  gspo-dynamics predict --config grpo.yaml --set learning_rate=3e-6\n"
          "  gspo-dynamics predict --config grpo.yaml --pilot output/checkpoint-50/trainer_state.json\n\n"
          "The first lines are the answer; --explain adds how it was measured (docs/configs.md: how each framework's "
          "keys are read).")


def register(sub) -> None:
    p = sub.add_parser("predict", help="before a run: is this config stable, what to change (a pilot log: the reward it ends at)",
                       description=DESCRIPTION, usage=USAGE, epilog=EPILOG)
    r = p.add_argument_group("a real run (its config, and a short pilot of it)")
    add_config_options(r, "a TRL GRPOConfig, a verl config, OpenRLHF's arguments or our trainer's config (JSON, YAML or "
                          "TOML; a verl / OpenRLHF launch script, .sh; or a TRL program, .py: its GRPOConfig(...) call's literal "
                          "arguments)", "the answer")
    r.add_argument("--pilot", metavar="LOG", help="a short log of the same setup (any format diagnose reads): calibrates the forecast")
    r.add_argument("--prior", nargs="+", metavar="LOG[=CONFIG]",
                   help="finished runs of the same task at the same T (any format diagnose reads): the reward level "
                        "the run ends at, with a prediction interval, where a still-rising pilot cannot tell it "
                        "(with --config alone too); it leans toward the runs with this config's loss, optimizer and "
                        "lr where their configs are known: LOG=CONFIG gives one, else a config.json beside the log "
                        "(our trainer's run directory) is read")
    add_log_run_option(r, "the pilot log")
    r.add_argument("--pilot-steps", type=integer, metavar="K", help="use the pilot's first K reward points (default: all)")
    r.add_argument("--map", action="append", metavar="NAME=COLUMN[,...]",
                   help="read the pilot's (and --prior's logs') series NAME from its COLUMN, as diagnose --map "
                        "(e.g. --map reward=score)")
    r.add_argument("--run-steps", type=integer, metavar="N",
                   help="the run's length in the pilot log's steps (optimizer steps for TRL and our trainer, trainer "
                        "steps for verl), for the reward at its end and, where the config leaves its length unset, "
                        "the lr schedule's (default: the config's max_steps, trainer.total_training_steps or steps)")
    r.add_argument("--devices", type=integer, metavar="N", help="data-parallel processes of a TRL run (default: the config's, else 1)")
    r.add_argument("--reward-range", nargs=2, type=float, metavar=("LO", "HI"),
                   help="the task's reward bounds (default: [0, 1] when every pilot reward lies there)")
    r.add_argument("--target-noise", type=float, metavar="SIGMA",
                   help="the reward noise to find a group size G for (default: 5%% of the reward's range)")
    r.add_argument("--plot", metavar="FILE",
                   help="draw the stability map with the config's point: over its lr key and T with --pilot (whose "
                        "curvature sets the lr scale), over eta K = lr x curvature and T without (PNG, PDF, ...)")
    r.add_argument("--pass-rates", metavar="FILE",
                   help="per-prompt pass rates of the starting model (one number in [0, 1] per line, or a JSON list): "
                        "the zero-std share by G over prompts of mixed difficulty, and the G for a target share")
    r.add_argument("--target-zero-std", type=float, metavar="SHARE",
                   help="the zero-std share to find a G for with --pass-rates (default: 0.2)")
    p.add_argument("--explain", action="store_true", help="after the answer, the measurements, assumptions and notes")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    # the toy bandit's flags, after: refused without --testbed bandit (a real run's values come from its config)
    flags = add_hyperparams(p, title="the bandit's hyperparameters (--testbed bandit only; defaults are the bandit's)")
    b = p.add_argument_group("the bandit's search (--testbed bandit only)")
    b.add_argument("--t-max", type=integer, help=f"the bandit's largest refresh interval searched (default: {T_MAX})")
    b.add_argument("--no-from-start", action="store_true", help="skip the bandit's nonlinear from-start check")
    # the bandit only by name (`--testbed bandit`); every other flag None until read, so that one given beside
    # --config (whose values it would silently lose) is told apart from its default (`_flag_values`)
    p.set_defaults(testbed=None, flag_defaults={a.dest: (a.option_strings[0], a.default) for a in flags if a.dest != "testbed"},
                   **{a.dest: None for a in flags if a.dest != "testbed"})
    p.set_defaults(run=_cmd_predict)


def _note(message: str) -> None:
    """Long from-start scans say what they are doing, on a terminal only."""
    if sys.stderr.isatty():
        print(f"gspo-dynamics: {message} ...", file=sys.stderr)


def _flag_values(args: argparse.Namespace) -> None:
    """The hyperparameter and testbed flags given beside --config are one ConfigError (the config's values are
    read; --set changes them); the flags not given take their defaults."""
    given = [flag for dest, (flag, _) in args.flag_defaults.items() if getattr(args, dest) is not None]
    if args.config and given:
        raise ConfigError(f"{', '.join(given)} with --config: predict reads the config's values; change them with "
                          "--set KEY=VALUE in the config's own names (e.g. --set learning_rate=3e-6)")
    if args.testbed != "bandit" and (args.t_max is not None or args.no_from_start):
        raise ConfigError("--t-max and --no-from-start set the bandit's search (--testbed bandit)")
    if args.devices is not None and not args.config:
        raise ConfigError("--devices counts a TRL config's processes; give the config (--config)")
    for dest, (_, default) in args.flag_defaults.items():
        if getattr(args, dest) is None:
            setattr(args, dest, default)
    if args.t_max is None:
        args.t_max = T_MAX


def _cmd_predict(args: argparse.Namespace) -> int:
    _flag_values(args)
    if args.log_run is not None and not args.pilot:
        raise ConfigError("--run needs --pilot (it picks one of the pilot log's runs)")
    if args.testbed == "bandit":
        if args.config or args.pilot or args.prior:
            raise ConfigError("--testbed bandit predicts the two-armed bandit from flags; drop --config/--pilot/--prior, "
                              "or the testbed")
        return _bandit(args)
    forecast, said = _forecast(args)
    headline = _headline(forecast, args)
    if args.plot:
        _save_map(forecast, args.plot)
    setup, skip = getattr(forecast, "config", forecast).setup, _given_run_length(forecast, args)
    if args.json:
        print(json.dumps(as_json_ready({**headline.to_json(), **setup.brief_json(skip), "config_read": said,
                                        "details": forecast.to_json()}), allow_nan=False))
    else:
        lines = headline.lines()
        told = 1 + bool(headline.tell)  # the verdict and what would tell
        changed = told + max(len(headline.changes), 1)  # then its change lines ("change: none" at least)
        # after the changes: the keys in force outside the model, then the run as read (what every number rests on)
        lines[changed:changed] = setup.unmodelled_lines() + [f"read: {hparams_text(setup.hparams, setup.refresh_exact)}"]
        # after the verdict: the pilot against its config, the unknown keys read past, the defaults taken
        lines[told:told] = [f"config: {line}" for line in said] + getattr(forecast, "brief_lines", list)() + \
            setup.brief_lines(skip)
        lines += ["", *forecast.summary_lines()] if args.explain else ["(--explain: how this was measured)"]
        print("\n".join(lines))
    if args.plot:
        print(f"gspo-dynamics: wrote {args.plot}", file=sys.stderr)
    return 0


def _given_run_length(forecast, args: argparse.Namespace) -> tuple[str, ...]:
    """The run-length key, where --run-steps gives the length the config leaves unset (no default is then taken)."""
    keys = getattr(forecast, "config", forecast).setup.keys
    return (keys.run_length,) if args.run_steps is not None and keys is not None else ()


def _forecast(args: argparse.Namespace):
    """(the forecast of --config, the lines saying where a config the pilot log printed was read from, else []) (no
    config: one ConfigError showing the --config / --set form). Without --config, a verl pilot's printed config is
    the run's (`predict.setup_from_log`)."""
    from gspo_dynamics.predict import read_run_config, setup_from_log

    if args.pilot_steps is not None and not args.pilot:
        raise ConfigError("--pilot-steps needs --pilot")
    if args.map and not (args.pilot or args.prior):
        raise ConfigError("--map needs --pilot or --prior (it names their logs' columns)")
    if args.config:
        setup = read_run_config(args.config, devices=args.devices, overrides=args.set, allow_unknown=args.allow_unknown,
                                run_steps=args.run_steps if args.pilot else None)  # the schedule's length, if unset
        return _forecast_of(args, setup), []
    if not args.pilot:
        if args.set:
            raise ConfigError("--set overrides keys of --config; give the config file")
        raise ConfigError("predict answers for a run's config: give it as --config grpo.yaml (a TRL GRPOConfig, a verl "
                          "config or our trainer's) and change keys with --set, e.g. --set learning_rate=1e-6 --set "
                          "num_generations=8; hyperparameter flags alone are the toy bandit's (--testbed bandit)")
    setup, said = setup_from_log(args.pilot, overrides=args.set, run_steps=args.run_steps)
    if setup is None:
        why = f" ({said[0]})" if said else ""
        raise ConfigError("predict --pilot forecasts a run from its config (its length, T, G and the keys the answer "
                          "changes): give the run's config with --config (TRL: the GRPOConfig as YAML/JSON or "
                          f"config.to_dict(); verl: its launch script or YAML){why}; for the pilot's log alone, "
                          f"`gspo-dynamics diagnose {args.pilot}` reads it without one")
    return _forecast_of(args, setup), said


def _forecast_of(args: argparse.Namespace, setup):
    """The forecast of the run's config `setup`: config-only, with the finished runs' end level (--prior), or
    pilot-calibrated (--pilot, with --prior's level beside it when given)."""
    from gspo_dynamics.predict import config_forecast

    if not args.pilot:
        if args.target_noise is not None:
            raise ConfigError("--target-noise needs --pilot (the noise is measured there)")
        if args.run_steps is not None:
            raise ConfigError("--run-steps needs --pilot (the reward at the run's end is forecast from it)")
        if not args.prior:
            return config_forecast(setup)
    from gspo_dynamics.predict import pilot_forecast
    from gspo_dynamics.logs import ColumnMapError, parse_map_option, read_log

    try:
        column_map = parse_map_option(args.map)
        if not args.pilot:  # the config's answer and the finished runs' end level
            from gspo_dynamics.fit import check_reward_range
            from gspo_dynamics.predict import prior_forecast

            reward_range = None if args.reward_range is None else tuple(args.reward_range)
            check_reward_range(reward_range)
            paths, configs = prior_runs(args.prior)
            return prior_forecast(config_forecast(setup), paths, reward_range, column_map, configs=configs)
        pilot = read_log(args.pilot, column_map=column_map, run=args.log_run,  # rows without a step: by the config's
                         logging_steps=getattr(setup, "logging_steps", None))  # logging_steps, as diagnose --config
        paths, configs = prior_runs(args.prior or [])
        prior = None if args.prior is None else [read_log(path, column_map=column_map) for path in paths]
        forecast = pilot_forecast(setup, pilot, pilot_steps=args.pilot_steps,
                                  reward_range=None if args.reward_range is None else tuple(args.reward_range),
                                  target_noise=args.target_noise, run_steps=args.run_steps, prior=prior,
                                  prior_configs=configs if args.prior else None)
        return _a_start_of_the_run(forecast)
    except ColumnMapError as error:
        raise ConfigError(error.render(cli=True)) from None


def _a_start_of_the_run(forecast):
    """The forecast of a pilot that ends before the run's end, else one ConfigError: a pilot reaching the config's
    last step is the whole run, whose verdict would read its own future (`diagnose` reads a whole run)."""
    setup, (steps, _) = forecast.config.setup, forecast.pilot
    if setup.run_steps is None or steps[-1] < setup.run_steps:
        return forecast
    keys = getattr(setup, "keys", None)
    length = f"{keys.run_length} {setup.run_steps}" if keys else f"{setup.run_steps} steps"
    raise ConfigError(f"the pilot's {len(steps)} reward points reach step {steps[-1]:g}, the run's end ({length}): a "
                      "pilot is the start of a run, not all of it; keep fewer with --pilot-steps (a fifth of the run's "
                      "points is usual), or read the whole run with `gspo-dynamics diagnose`")


def _headline(forecast, args: argparse.Namespace):
    """The answer first: the pilot's verdict and forecast, or the config's (`predict._headline`)."""
    from gspo_dynamics.fit import check_reward_range
    from gspo_dynamics.predict import PilotForecast, pilot_headline
    from gspo_dynamics.predict import config_headline, zero_std_answer

    if args.target_zero_std is not None and not args.pass_rates:
        raise ConfigError("--target-zero-std needs --pass-rates (the share is read from the prompts' pass rates)")
    zero_std = None
    if args.pass_rates:
        hp = getattr(forecast, "config", forecast).setup.hparams
        zero_std = zero_std_answer(args.pass_rates, hp.group_size, target=args.target_zero_std)
    if isinstance(forecast, PilotForecast):
        return pilot_headline(forecast, zero_std)
    reward_range = None if args.reward_range is None else tuple(args.reward_range)
    check_reward_range(reward_range)
    return config_headline(forecast, reward_range, zero_std)


def prior_runs(items: list[str]) -> tuple[list[str], list[str | None]]:
    """--prior's LOG[=CONFIG] items as (logs, their configs or None): an item that names an existing path is a log
    whole (a run directory may have '=' in its name, lr=1e-3/ say); otherwise it parts at the first '=' whose left
    side exists (a config's path may hold '=' too), else at the last. An empty log or config is a ConfigError."""
    logs, configs = [], []
    for item in items:
        if Path(item).exists() or "=" not in item:
            logs.append(item)
            configs.append(None)
            continue
        cuts = [i for i, c in enumerate(item) if c == "="]
        cut = next((i for i in cuts if Path(item[:i]).exists()), cuts[-1])
        log, config = item[:cut], item[cut + 1:]
        if not log or not config:
            raise ConfigError(f"--prior {item!r}: give LOG=CONFIG with both parts (or a log alone)")
        logs.append(log)
        configs.append(config)
    return logs, configs


def _save_map(forecast, path: str) -> None:
    """The stability map of the forecast (of its config's part where finished runs, not a pilot, came with it)."""
    from gspo_dynamics.predict import PriorForecast
    from gspo_dynamics.plots.stability_map import stability_map_figure

    save_figure(stability_map_figure(forecast.config if isinstance(forecast, PriorForecast) else forecast), path)


def _bandit(args: argparse.Namespace) -> int:
    report = predict_bandit(bandit_from_args(args), hyperparams_from_args(args), t_max=args.t_max,
                            from_start=not args.no_from_start, progress=_note)
    print(json.dumps(as_json_ready(report), allow_nan=False) if args.json else "\n".join(summary_lines(report)))
    return 0
