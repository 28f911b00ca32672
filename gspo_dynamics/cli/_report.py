"""`gspo-dynamics report RUN [RUN ...]`: one run's or a sweep's report as a self-contained HTML page (and markdown).

Reads each log as `diagnose` reads it (the same --map, --run, --config and hyperparameter flags), calls
`report.build_report`, writes the page(s), and prints the answer first (diagnose's verdict and what to do; for a
sweep the verdicts and where the runs part ways), then what it wrote. Exit 0 when written; 2 for bad input (a log
that cannot be read, an impossible flag, a path that cannot be written), in one line.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.cli._diagnose import (
    _check_reward_range, add_map_option, add_run_options, config_setup, hyperparams_from_flags, logged_beta)
from gspo_dynamics.cli._options import add_log_run_option, integer

DESCRIPTION = ("A report people read, for one run or a sweep: one self-contained HTML page (and markdown for a pull "
               "request or an issue) with diagnose's verdict and the one thing to do first, the curves with the "
               "findings marked, predict's forecast band where a config is given, the compute that carried no "
               "learning signal, and for several runs where they part ways.")
USAGE = "%(prog)s RUN [RUN ...] [--out report.html] [--markdown report.md] [--config FILE] [--gpus N]"
EPILOG = ("examples:\n"
          "  gspo-dynamics report outputs/checkpoint-500/trainer_state.json --gpus 8 --gpu-hour-rate 2.99\n"
          "  gspo-dynamics report runs/*/trainer_state.json --out sweep.html --markdown sweep.md\n\n"
          "The page has no script and fetches nothing (charts are inline SVG). Theory of each number: docs/report.md.")


def register(sub) -> None:
    p = sub.add_parser("report", help="after a run or a sweep: one self-contained HTML page (and markdown) of its "
                                      "verdicts, curves, forecast, wasted compute and where runs part ways",
                       description=DESCRIPTION, usage=USAGE, epilog=EPILOG)
    p.add_argument("logs", nargs="+", metavar="RUN", help="a log (any format diagnose reads) or a run directory; "
                                                          "several for a sweep (the first is the baseline)")
    p.add_argument("--out", metavar="FILE.html", default="report.html", help="the HTML page (default: report.html)")
    p.add_argument("--markdown", metavar="FILE.md", help="also write the report as markdown")
    p.add_argument("--title", help="the page's title (default: the run's name, or the number of runs)")
    p.add_argument("--gpus", type=integer, metavar="N", help="GPUs the run used: logged hours become GPU-hours")
    p.add_argument("--gpu-hour-rate", type=float, metavar="USD",
                   help="price of one GPU-hour (needs --gpus): GPU-hours become dollars")
    p.add_argument("--seconds-per-step", type=float, metavar="S",
                   help="wall-clock seconds of one optimizer step, for logs that log no step time (TRL step_time, verl "
                        "timing_s/step): their steps become hours")
    p.add_argument("--pilot-steps", type=integer, metavar="N", help="with --config: the reward points predict reads as "
                   "the pilot (default: the whole log where the config's run is longer, else its first third)")
    add_map_option(p)
    add_log_run_option(p, "each log")
    add_run_options(p)
    p.set_defaults(run=_cmd_report)


def _check(args: argparse.Namespace) -> None:
    if args.gpus is not None and args.gpus < 1:
        raise ConfigError(f"--gpus must be a whole number >= 1, got {args.gpus}")
    rate = args.gpu_hour_rate
    if rate is not None and (not math.isfinite(rate) or rate < 0):
        raise ConfigError(f"--gpu-hour-rate must be a price >= 0, got {rate:g}")
    if rate is not None and args.gpus is None:
        raise ConfigError("--gpu-hour-rate prices GPU-hours: give the GPUs the run used too (--gpus N)")
    sps = args.seconds_per_step
    if sps is not None and (not math.isfinite(sps) or sps <= 0):
        raise ConfigError(f"--seconds-per-step must be a time > 0, got {sps:g}")
    if args.pilot_steps is not None and not args.config:
        raise ConfigError("--pilot-steps picks predict's pilot: give the run's config (--config)")
    if args.pilot_steps is not None and args.pilot_steps < 8:
        raise ConfigError(f"--pilot-steps must be at least 8 reward points, got {args.pilot_steps}")
    for path in (args.out, args.markdown):
        if path is not None and not Path(path).resolve().parent.is_dir():
            raise ConfigError(f"cannot write {path!r}: its folder does not exist")


def _cmd_report(args: argparse.Namespace) -> int:
    from gspo_dynamics.logs import ColumnMapError, holds_log, parse_map_option, read_log, run_folders
    from gspo_dynamics.report import build_report, to_html, to_markdown

    _check(args)
    setup = config_setup(args)  # read once: the flags' hyperparameters, each log's beta and the forecast read it
    hparams, brief, _, logging_steps = hyperparams_from_flags(args, setup)
    logs, paths, swept = [], [], []
    for path in args.logs:  # a folder of run folders (a sweep's output): each of its runs
        runs = [] if not Path(path).is_dir() or holds_log(path) else run_folders(path)
        paths += [str(run) for run in runs] or [path]
        others = [p.name for p in sorted(Path(path).iterdir()) if p.is_dir() and p not in runs] if runs else []
        swept += [f"the {len(runs)} runs of {path} ({', '.join(r.name for r in runs)}"
                  + (f"; no log read in {', '.join(others)}: give its file" if others else "") + ")"] if runs else []
    for path in paths:
        try:
            logs.append(read_log(path, column_map=parse_map_option(args.map), run=args.log_run,
                                 logging_steps=logging_steps))
        except ColumnMapError as error:
            raise ConfigError(_named(path, error.render(cli=True))) from None
        except ConfigError as error:
            raise ConfigError(_named(path, str(error))) from None
    reward_range = None if args.reward_range is None else tuple(args.reward_range)
    for log in logs:
        _check_reward_range(log, reward_range)
    report = build_report(logs, hparams=hparams, setup=setup, reward_range=reward_range, gpus=args.gpus,
                          rate=args.gpu_hour_rate, seconds_per_step=args.seconds_per_step,
                          pilot_steps=args.pilot_steps, config_lines=tuple(brief), title=args.title,
                          per_log=lambda log: logged_beta(args, setup, hparams, list(brief), log))
    _write(args.out, to_html(report))
    written = [args.out]
    if args.markdown:
        _write(args.markdown, to_markdown(report))
        written.append(args.markdown)
    print("\n".join(report.answer))
    print(f"wrote {' and '.join(written)}" + (f" of {'; '.join(swept)}" if swept else ""))
    return 0


def _named(path: str, message: str) -> str:
    """The reader's one sentence, led by the log it is about where it does not name it (a sweep has many)."""
    return message if path in message else f"{path}: {message}"


def _write(path: str, text: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write {path!r}: {exc.strerror or exc}") from None
