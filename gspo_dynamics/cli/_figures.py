"""`gspo-dynamics figures`: regenerate the figures (PNG + PDF) and figures/README.md."""

from __future__ import annotations

import argparse
import sys


def register(sub) -> None:
    p = sub.add_parser("figures", help="regenerate every figure (PNG + PDF) and figures/README.md",
                       description="Regenerate the analysis figures from code: PNG (150 dpi) and PDF for each, plus "
                                   "the README that lists them with captions and commands.",
                       usage="%(prog)s [--quick] [--only NAME ...] [--out DIR] [--list]")
    p.add_argument("--quick", action="store_true", help="CI-sized simulations (the whole set in under two minutes)")
    p.add_argument("--out", default="figures", metavar="DIR", help="output folder (default: figures)")
    p.add_argument("--only", nargs="+", metavar="NAME", help="build only these figures (see --list)")
    p.add_argument("--list", action="store_true", help="list the figures with their titles and exit")
    p.set_defaults(run=_cmd_figures)


def _cmd_figures(args: argparse.Namespace) -> int:
    from gspo_dynamics.plots.build import build
    from gspo_dynamics.plots.registry import FIGURES

    if args.list:
        width = max(map(len, FIGURES))
        print("\n".join(f"{name:{width}s}  {spec.title}" for name, spec in FIGURES.items()))
        return 0
    made = build(args.only, out=args.out, quick=args.quick,
                 progress=lambda line: print(f"figures: {line}", file=sys.stderr, flush=True))
    built = {name: m for name, m in made.items() if "skipped" not in m}
    total = sum(m["seconds"] for m in built.values())
    print(f"wrote {len(built)} figure(s) to {args.out}/ ({'quick' if args.quick else 'full'} mode, {total:.0f} s)")
    for name, m in made.items():
        if "skipped" in m:
            print(f"skipped {name}: {m['skipped']}")
    return 0
