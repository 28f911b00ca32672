"""The `gspo-dynamics` command. Thin: parse, build the config, call one library function, print.

One module per command (`_predict`, `_simulate`, `_diagnose`, `_watch`, `_report`, `_train`, `_figures`, `_repro`), each
with `register(subparsers)`; the options `predict` and `simulate` share are in `_options`.
Bad input (an impossible hyperparameter, an unknown name, a `simulate` flag of the other testbed)
prints one line `gspo-dynamics: error: ...` and exits with status 2; never a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import textwrap
from typing import Callable

from gspo_dynamics import __version__
from gspo_dynamics._errors import ConfigError
from gspo_dynamics.cli import _diagnose, _figures, _predict, _report, _repro, _simulate, _train, _watch

EXIT_BAD_INPUT = 2
# a negative number that argparse would take for an option: -1e-6, -1., -inf (it reads -1 and -.5
# as numbers itself, also where an option takes several values: --reward-range -100 100)
_NEGATIVE_NUMBER = re.compile(r"-((\d+\.?\d*|\.\d+)e[-+]?\d+|\d+\.|inf(inity)?|nan)", re.IGNORECASE)


def _attach_negative_numbers(argv: list[str]) -> list[str]:
    """`--lr -1e-6` -> `--lr=-1e-6`, so a negative number reaches the config's clear message."""
    out: list[str] = []
    for arg in argv:
        if out and out[-1].startswith("--") and "=" not in out[-1] and _NEGATIVE_NUMBER.fullmatch(arg):
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out


class _Formatter(argparse.HelpFormatter):
    """argparse's help layout, but a description or epilog keeps its line breaks: each line is wrapped on its own,
    and a line indented by two spaces (an example command) is printed as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n".join(indent + line if line.startswith("  ") or not line.strip()
                         else textwrap.fill(" ".join(line.split()), width, initial_indent=indent, subsequent_indent=indent)
                         for line in text.splitlines())


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (argparse prints the usage block and the error), a
    negative number is a value, help opens with the description (what the command answers; then the usage,
    the options, the epilog), and `epilog_from` (a function) writes the epilog when help is shown,
    so a command's help can list defaults and names that live behind a slow import."""

    def __init__(self, *args, epilog_from: Callable[[], str] | None = None, **kwargs):
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)
        self.epilog_from = epilog_from

    def parse_known_args(self, args=None, namespace=None):
        args = sys.argv[1:] if args is None else list(args)
        return super().parse_known_args(_attach_negative_numbers(args), namespace)

    def format_help(self) -> str:
        if self.epilog_from is not None:
            self.epilog = self.epilog_from()
        description, self.description = self.description, None
        try:
            body = super().format_help()  # usage, options, epilog
        finally:
            self.description = description
        if not description:
            return body
        formatter = self._get_formatter()
        formatter.add_text(description)
        return f"{formatter.format_help()}\n{body}"

    def error(self, message: str):  # noqa: D401 - argparse API
        raise ConfigError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="gspo-dynamics", description="Predict and check the training dynamics of GRPO/GSPO: before a "
                                                       "run (predict), after it (diagnose), while it runs (watch).",
                     epilog="gspo-dynamics COMMAND --help: what the command answers, its common forms, its options.")
    parser.add_argument("--version", action="version", version=f"gspo-dynamics {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")
    # the user's commands first (a run's config, its log, the log it is writing; the trainer), then the theory's
    for command in (_predict, _diagnose, _watch, _report, _train, _simulate, _figures, _repro):
        command.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return args.run(args)
    except ConfigError as exc:
        print(f"gspo-dynamics: error: {exc}", file=sys.stderr)
        if "--json" in (sys.argv[1:] if argv is None else argv):  # a program reading stdout gets the refusal as JSON
            print(json.dumps({"error": str(exc), "exit_status": EXIT_BAD_INPUT}))
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("gspo-dynamics: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly, as other command-line tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
