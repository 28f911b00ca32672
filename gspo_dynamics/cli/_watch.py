"""`gspo-dynamics watch PATH`: follow a growing training log and report each new or changed verdict.

A live guard for any framework: PATH is what the run writes (a verl or OpenRLHF JSONL or console log, a TRL output
folder, a TensorBoard folder, a hand-written loop's CSV). Every `--interval` seconds the new rows are read
(`logs.Follower`: only the appended bytes; a half-written last line waits) and, when rows arrived, the run so far is
diagnosed. A line is printed when the verdict, its confidence band or the set of findings changes.

Exit status: 0 when the watch ends (`--once`, `--exit-when-idle`), 2 on bad input, EXIT_FAILURE (3) the moment a
mode or finding named in `--fail-on` is reported at `--min-confidence` or more, 130 on Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from gspo_dynamics._errors import ConfigError

EXIT_FAILURE = 3
BANDS = (0.5, 0.9)  # a verdict's confidence is reported again when it crosses one of these


def register(sub) -> None:
    p = sub.add_parser("watch", help="follow a growing training log and report verdicts as they change",
                       description="Follow a training log as the run writes it (verl / OpenRLHF JSONL or console, a TRL "
                                   "output folder, TensorBoard, CSV) and print each new or changed diagnose verdict.")
    p.add_argument("path", help="the log file, or the run's folder (its newest log is followed)")
    p.add_argument("--map", action="append", metavar="NAME=COLUMN[,...]", help="as in diagnose")
    p.add_argument("--config", metavar="FILE", help="the run's config (TRL, verl or ours), as diagnose --config reads it")
    p.add_argument("--reward-range", nargs=2, type=float, metavar=("LO", "HI"), help="as in diagnose")
    p.add_argument("--json", action="store_true", help="one JSON object per reported change")
    p.add_argument("--interval", type=float, default=10.0, metavar="SECONDS", help="seconds between polls (default 10)")
    p.add_argument("--fail-on", metavar="NAME[,NAME...]",
                   help=f"exit {EXIT_FAILURE} when one of these failure modes or findings is reported")
    p.add_argument("--min-confidence", type=float, default=0.5, help="the confidence --fail-on acts from (default 0.5)")
    p.add_argument("--exit-when-idle", type=float, metavar="SECONDS", help="end the watch after this long without a new row")
    p.add_argument("--once", action="store_true", help="read what is there, report, exit")
    p.set_defaults(run=_cmd_watch)


def _fail_on(text: str | None) -> set[str]:
    from gspo_dynamics.diagnose import FINDINGS, MODES

    if not text:
        return set()
    names = {n.strip() for n in text.split(",") if n.strip()}
    known = [m for m in MODES if m not in ("healthy_saturation", "still_rising")] + list(FINDINGS)
    unknown = sorted(names - set(known))
    if unknown:
        raise ConfigError(f"--fail-on {', '.join(unknown)}: not a failure mode or finding ({', '.join(known)})")
    return names


def _state(diagnosis, min_confidence: float) -> tuple:
    """What a change is measured on: the verdict, its confidence band, the findings."""
    conf = diagnosis.verdicts[0].confidence if diagnosis.verdicts else 0.0
    return diagnosis.primary, sum(conf >= b for b in BANDS), frozenset(f.name for f in diagnosis.findings)


def _report(diagnosis, step, previous: tuple | None, as_json: bool) -> str:
    findings = {f.name for f in diagnosis.findings}
    old = previous[2] if previous else frozenset()
    conf = diagnosis.verdicts[0].confidence if diagnosis.verdicts else None
    action = None if diagnosis.primary == "too_short" else diagnosis.action()
    if as_json:
        return json.dumps({"step": step, "verdict": diagnosis.primary, "confidence": conf, "action": action,
                           "findings": sorted(findings), "new": sorted(findings - old), "cleared": sorted(old - findings),
                           "changed": previous is None or previous[:2] != _state(diagnosis, 0)[:2]}, allow_nan=False)
    head = f"step {step}: {diagnosis.primary.replace('_', ' ')}" + ("" if conf is None else f" ({conf:.2f})")
    parts = [head + (f" - do {action}" if action else "")]
    parts += [f"  finding {n}" for n in sorted(findings - old)] + [f"  cleared {n}" for n in sorted(old - findings)]
    return "\n".join(parts)


def _failed(diagnosis, names: set[str], min_confidence: float) -> str | None:
    for v in diagnosis.verdicts:
        if v.mode in names and v.confidence >= min_confidence:
            return f"{v.mode} (confidence {v.confidence:.2f})"
    return next((f.name for f in diagnosis.findings if f.name in names), None)


def _cmd_watch(args: argparse.Namespace) -> int:
    from gspo_dynamics.diagnose import diagnose
    from gspo_dynamics.logs import Follower, parse_map_option
    from gspo_dynamics.predict import read_run_config

    if not args.interval > 0 or not 0 <= args.min_confidence <= 1:
        raise ConfigError("--interval must be > 0 and --min-confidence in [0, 1]")
    names = _fail_on(args.fail_on)
    hparams = None if args.config is None else read_run_config(args.config).hparams
    reward_range = None if args.reward_range is None else tuple(args.reward_range)
    follower = Follower(args.path, column_map=parse_map_option(args.map))
    previous, last_growth, said_waiting, seen = None, time.monotonic(), False, (None, 0)
    while True:
        run = follower.poll()
        if follower.waiting and not said_waiting:
            print(f"gspo-dynamics: waiting for {args.path}", file=sys.stderr)
            said_waiting = True
        if (follower.state.path, follower.state.offset) != seen:  # the file grew (a row, or part of one)
            seen = (follower.state.path, follower.state.offset)
            last_growth = None
        if run is not None:
            diagnosis = diagnose(run, hparams, reward_range=reward_range)
            state = _state(diagnosis, args.min_confidence)
            if state != previous:
                print(_report(diagnosis, int(run.valid("reward")[0][-1]), previous, args.json), flush=True)
                previous = state
            failed = _failed(diagnosis, names, args.min_confidence)
            if failed:
                print(f"gspo-dynamics: {failed} reported (--fail-on)", file=sys.stderr)
                return EXIT_FAILURE
        last_growth = time.monotonic() if last_growth is None else last_growth  # after the diagnosis: idle is the log's
        if args.once or (args.exit_when_idle is not None and time.monotonic() - last_growth > args.exit_when_idle):
            return 0
        time.sleep(args.interval)
