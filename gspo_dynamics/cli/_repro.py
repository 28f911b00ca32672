"""`gspo-dynamics repro`: run the paper_repro claim scripts and regenerate paper_repro/RESULTS.md."""

from __future__ import annotations

import argparse
import sys

from gspo_dynamics._errors import ConfigError

EXIT_CLAIM_FAILED = 1


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def register(sub) -> None:
    p = sub.add_parser(
        "repro", help="run every paper_repro claim and regenerate paper_repro/RESULTS.md",
        description="Do the paper's claims still hold: runs every paper_repro/ claim script (each as a subprocess of "
                    "this interpreter) and regenerates the claims table, paper_repro/RESULTS.md.",
        usage="%(prog)s [--quick] [--only ID ...] [--strict]",
        epilog="A script that crashes or times out is a FAIL row with the reason. Exit status 0 with a summary "
               "'N pass, M fail'; --strict exits 1 when any claim fails.")
    p.add_argument("--quick", action="store_true", help="the reduced CI-sized runs (each script's --quick)")
    p.add_argument("--only", nargs="+", metavar="ID", help="run only these scripts (stems, e.g. one_over_g); other rows are kept")
    p.add_argument("--results", metavar="PATH", help="table to write (default: paper_repro/RESULTS.md)")
    p.add_argument("--timeout", type=_positive_float, metavar="SECONDS",
                   help="per-script limit (default: 600 with --quick, 1800 otherwise)")
    p.add_argument("--list", action="store_true", help="list the claim scripts and exit")
    p.add_argument("--strict", action="store_true", help="exit 1 if any claim fails")
    p.set_defaults(run=_cmd_repro)


def _cmd_repro(args: argparse.Namespace) -> int:
    from gspo_dynamics.repro import discover, reproduce, summary_lines

    if args.list:
        print("\n".join(discover()))
        return 0
    if args.only is not None and not args.only:
        raise ConfigError("--only needs at least one script name")
    report = reproduce(quick=args.quick, only=args.only, results=args.results, timeout=args.timeout,
                       progress=lambda line: print(line, file=sys.stderr, flush=True))
    print("\n".join(summary_lines(report)))
    return EXIT_CLAIM_FAILED if args.strict and report.failed else 0
