"""`gspo-dynamics predict`: stability, regime and thresholds of the bandit from the theory alone."""

from __future__ import annotations

import argparse
import json
import sys

from gspo_dynamics.cli._options import add_hyperparams, bandit_from_args, hyperparams_from_args, integer
from gspo_dynamics.predict import T_MAX, as_json_ready, predict_bandit, summary_lines


def register(sub) -> None:
    p = sub.add_parser("predict", help="stability, regime and thresholds from the theory alone")
    add_hyperparams(p)
    p.add_argument("--t-max", type=integer, default=T_MAX, help=f"largest refresh interval searched (default: {T_MAX})")
    p.add_argument("--no-from-start", action="store_true", help="skip the nonlinear from-start check")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=_cmd_predict)


def _note(message: str) -> None:
    """Long from-start scans say what they are doing, on a terminal only."""
    if sys.stderr.isatty():
        print(f"gspo-dynamics: {message} ...", file=sys.stderr)


def _cmd_predict(args: argparse.Namespace) -> int:
    report = predict_bandit(bandit_from_args(args), hyperparams_from_args(args), t_max=args.t_max,
                            from_start=not args.no_from_start, progress=_note)
    if args.json:
        print(json.dumps(as_json_ready(report), allow_nan=False))
    else:
        print("\n".join(summary_lines(report)))
    return 0
