"""`gspo-dynamics watch PATH`: follow a growing training log and report each new or changed verdict.

A live guard for any framework: PATH is what the run writes (a verl or OpenRLHF JSONL or console log, a TRL output
folder, a TensorBoard folder, a hand-written loop's CSV). Every `--interval` seconds `logs.Follower` parses what was
appended (a half-written last line waits); when rows arrived, `diagnose` runs on the whole run read so far (kept in
memory). A line is printed when the verdict, its confidence band (BANDS) or the set of findings (those the report's
headline shows: not the notes) changes, and when a name of `--fail-on` is reported. Messages about the file (waiting
for it, a rotation) go to stderr, once each.

Exit status: 0 when the watch ends (`--once`, `--exit-when-idle`), EXIT_FAILED_ON (3) the moment a mode or finding
named in `--fail-on` is reported (a mode at `--min-confidence` or more), 2 on bad input (also a log that could not
be read when the watch ends), 130 on Ctrl-C (cli/main.py).
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
import time
from dataclasses import dataclass

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.cli._diagnose import _check_reward_range, add_map_option, add_run_options, hyperparams_from_flags
from gspo_dynamics.cli._options import add_log_run_option

EXIT_FAILED_ON = 3
JSON_SCHEMA = 1  # the --json line's version (docs/watch.md); a field's meaning changes only with a new number
# A verdict's confidence is reported again when it crosses one of these: 0.5, where diagnose reports a cause at all;
# 0.7, where a cause explains a stalled or noisy reward (`_ranking.EXPLAINS`); 0.9, calibrated to be right 9 times in 10.
BANDS = (0.5, 0.7, 0.9)
FAIL_CONFIDENCE = 0.9  # --min-confidence's default: the TRL callback's stop_confidence, a verdict right 9 times in 10
HEALTHY_MODES = ("healthy_saturation", "still_rising")  # not failures (as the TRL callback's stop_on)


def register(sub) -> None:
    from gspo_dynamics.diagnose import FINDINGS
    from gspo_dynamics.logs import FORMATS

    failure_modes = [name for name in failure_names() if name not in FINDINGS]

    p = sub.add_parser("watch", help="while a run trains: follow its log and report each new or changed verdict",
                       description="Is a running GRPO/GSPO job going wrong: follows the log it writes and prints a line "
                                   "each time diagnose's verdict, its confidence or its findings change.",
                       usage="%(prog)s PATH [--fail-on NAME[,NAME...]] [--config FILE] [--once]",
                       epilog="examples:\n"
                              "  gspo-dynamics watch output/ --fail-on dynamical_instability,non_finite\n"
                              "  gspo-dynamics watch train.log --config grpo.yaml --exit-when-idle 600\n\n"
                              f"Exit status: 0 when the watch ends (--once, --exit-when-idle), {EXIT_FAILED_ON} when a "
                              "name of --fail-on is reported, 2 on bad input, 130 on Ctrl-C. See docs/watch.md.")
    p.add_argument("path", metavar="PATH", help="the log file, or the run's folder (its newest TensorBoard event file, else "
                                "trainer_state.json, else metrics.jsonl / metrics.csv)")
    p.add_argument("--format", choices=("auto", *FORMATS), default="auto", help="the log's format (default: detected)")
    add_map_option(p)
    add_log_run_option(p)
    p.add_argument("--json", action="store_true", help="one JSON object per line for each change (docs/watch.md)")
    p.add_argument("--interval", type=float, default=10.0, metavar="SECONDS", help="seconds between polls (default 10)")
    p.add_argument("--fail-on", action="append", metavar="NAME[,NAME...]",
                   help=f"exit {EXIT_FAILED_ON} the moment one of these is reported: the failure modes "
                        f"{', '.join(failure_modes)}, or the findings {', '.join(FINDINGS)}")
    p.add_argument("--min-confidence", type=float, default=FAIL_CONFIDENCE,
                   help=f"the confidence from which a --fail-on mode counts (default {FAIL_CONFIDENCE})")
    p.add_argument("--exit-when-idle", type=float, metavar="SECONDS", help="end the watch (status 0) once the log "
                                                                           "has not grown for this long")
    p.add_argument("--once", action="store_true", help="read what is there, report, exit")
    add_run_options(p)
    p.set_defaults(run=_cmd_watch)


def failure_names() -> tuple[str, ...]:
    """Every name --fail-on accepts: diagnose's modes but the healthy ones, then the findings."""
    from gspo_dynamics.diagnose import FINDINGS, MODES

    return tuple(m for m in MODES if m not in HEALTHY_MODES) + FINDINGS


def parse_fail_on(items: list[str] | None) -> tuple[str, ...]:
    """The names of `--fail-on A,B --fail-on C`, each checked against `failure_names`."""
    names = tuple(n.strip() for item in items or () for n in item.split(",") if n.strip())
    valid = failure_names()
    for name in names:
        if name not in valid:
            near = difflib.get_close_matches(name, valid, n=1, cutoff=0.75)
            hint = f" (did you mean {near[0]}?)" if near else ""
            raise ConfigError(f"--fail-on {name}: not a failure mode or finding{hint}; expected some of {', '.join(valid)}")
    return names


@dataclass(frozen=True)
class Seen:
    """What a change is measured on: the headline verdict, its confidence band, the headline's findings."""

    verdict: str
    band: int  # how many of BANDS the confidence reaches; -1 without a verdict (too short)
    findings: frozenset[str]


def seen(diagnosis) -> Seen:
    from gspo_dynamics.diagnose import FINDING_NOTE

    conf = _confidence(diagnosis)
    band = -1 if conf is None else sum(conf >= b for b in BANDS)
    verdict = "unsure: " + " or ".join(diagnosis.unsure) if diagnosis.unsure else diagnosis.primary
    return Seen(verdict, band, frozenset(f.name for f in diagnosis.findings if f.severity != FINDING_NOTE))


def changes(before: Seen | None, now: Seen) -> dict[str, list[str]]:
    """The names that appeared (new), changed band (changed) and went (cleared) from `before` to `now`."""
    old_verdict = set() if before is None else {before.verdict}
    old_findings = frozenset() if before is None else before.findings
    new = sorted({now.verdict} - old_verdict) + sorted(now.findings - old_findings)
    changed = [now.verdict] if before is not None and before.verdict == now.verdict and before.band != now.band else []
    cleared = sorted(old_verdict - {now.verdict}) + sorted(old_findings - now.findings)
    return {"new": new, "changed": changed, "cleared": cleared}


def failing(diagnosis, names: tuple[str, ...], min_confidence: float) -> list[tuple[str, float]]:
    """(name, confidence) of each name in `names` reported: a verdict at `min_confidence` or more, a finding (1.0)."""
    found = [(v.mode, float(v.confidence)) for v in diagnosis.verdicts
             if v.mode in names and v.confidence >= min_confidence]
    return found + [(f.name, 1.0) for f in diagnosis.findings if f.name in names]


def _confidence(diagnosis) -> float | None:
    from gspo_dynamics.diagnose import TOO_SHORT

    return None if diagnosis.primary == TOO_SHORT or not diagnosis.verdicts else float(diagnosis.verdicts[0].confidence)


def report_json(step: int, diagnosis, change: dict, failed: list, **extra) -> str:
    """One --json line (docs/watch.md); `extra`: fields of the first line only (its `config`)."""
    from gspo_dynamics.diagnose import FINDING_NOTE, TOO_SHORT

    action = None if diagnosis.primary == TOO_SHORT else diagnosis.action()
    findings = [{"name": f.name, "severity": f.severity, "summary": f.summary}
                for f in diagnosis.findings if f.severity != FINDING_NOTE or any(n == f.name for n, _ in failed)]
    return json.dumps({"schema": JSON_SCHEMA, "step": step, "verdict": diagnosis.primary,
                       "unsure": list(diagnosis.unsure), "confidence": _confidence(diagnosis), "action": action, "findings": findings, **change,
                       "fail_on": [{"name": n, "confidence": c} for n, c in failed], **extra}, allow_nan=False)


def report_text(step: int, diagnosis, change: dict, failed: list) -> str:
    """The text report: `step N: verdict (confidence q) — do ...`, then each new and cleared finding, the --fail-on."""
    from gspo_dynamics.diagnose import FINDINGS

    conf = _confidence(diagnosis)
    if conf is None or diagnosis.unsure:  # too short, or unsure: the headline says so (and what would tell)
        lines = [f"step {step}: {diagnosis.headline()[0].removeprefix('verdict').strip()}"
                 + ("" if conf is None else f"; do {diagnosis.action()}")]
    else:
        lines = [f"step {step}: {diagnosis.primary.replace('_', ' ')} (confidence {conf:.2f}) — do {diagnosis.action()}"]
    summaries = {f.name: f.summary for f in diagnosis.findings}
    lines += [f"  finding  {summaries[n]} ({n})" for n in change["new"] if n in summaries]
    lines += [f"  cleared  {n}" for n in change["cleared"] if n in FINDINGS]
    lines += [f"  fail-on  {n} (confidence {c:.2f}): exit {EXIT_FAILED_ON}" for n, c in failed]
    return "\n".join(lines)


class _Watch:
    """The command's loop state: the follower, what was last reported, when the log last grew."""

    def __init__(self, args: argparse.Namespace) -> None:
        from gspo_dynamics.fit import check_reward_range
        from gspo_dynamics.logs import Follower, parse_map_option

        if not args.interval > 0:
            raise ConfigError(f"--interval must be > 0 seconds, got {args.interval:g}")
        if not 0.0 <= args.min_confidence <= 1.0:
            raise ConfigError(f"--min-confidence must be in [0, 1], got {args.min_confidence:g}")
        if args.exit_when_idle is not None and not args.exit_when_idle >= 0:
            raise ConfigError(f"--exit-when-idle must be >= 0 seconds, got {args.exit_when_idle:g}")
        self.args = args
        self.fail_on = parse_fail_on(args.fail_on)
        # config_lines: the config's unknown keys read past and the defaults taken, part of the answer (stdout,
        # before the first report; in the first --json line's `config`), as in predict's and diagnose's first lines
        self.hparams, self.config_lines, notes, _ = hyperparams_from_flags(args)  # the follower numbers rows itself
        if self.config_lines and not args.json:
            print("\n".join(f"config: {line}" for line in self.config_lines), flush=True)
        self.reward_range = None if args.reward_range is None else tuple(args.reward_range)
        check_reward_range(self.reward_range)
        self.follower = Follower(args.path, args.format, parse_map_option(args.map), run=args.log_run)
        self.last: Seen | None = None
        self.last_growth = time.monotonic()
        for note in notes:
            _say(note)

    def step(self) -> int | None:
        """One poll: read, diagnose when rows arrived, print a change; an exit status when the watch ends."""
        try:
            update = self.follower.poll()
        except ConfigError as error:
            raise ConfigError(_render(error)) from None
        for message in update.messages:
            _say(message)
        if update.waiting is not None and not (self.args.once and self.last is None):  # --once: the error says it
            _say(f"waiting: {_render(update.waiting)}")
        if update.grew:
            self.last_growth = time.monotonic()
        if update.rows or (update.restarted and self.follower.waiting is None):
            status = self._diagnose()
            if status is not None:
                return status
        idle = self.args.exit_when_idle
        if self.args.once or (idle is not None and time.monotonic() - self.last_growth >= idle):
            if self.last is None and self.follower.waiting is not None:  # it ends with no log read: bad input
                raise ConfigError(_render(self.follower.waiting))
            if self.follower.pending:  # normal for a log being written: said, not an error
                _say(f"the log's last {self.follower.pending} byte(s), a line still being written, were not read")
            return 0
        return None

    def _diagnose(self) -> int | None:
        from gspo_dynamics.diagnose import diagnose

        log = self.follower.run_log()
        _check_reward_range(log, self.reward_range)
        diagnosis = diagnose(log, self.hparams, reward_range=self.reward_range)
        now = seen(diagnosis)
        failed = failing(diagnosis, self.fail_on, self.args.min_confidence)
        if now != self.last or failed:
            change = changes(self.last, now)
            if self.args.json:
                first = {"config": self.config_lines} if self.last is None and self.config_lines else {}
                print(report_json(int(log.steps[-1]), diagnosis, change, failed, **first), flush=True)
            else:
                print(report_text(int(log.steps[-1]), diagnosis, change, failed), flush=True)
            self.last = now
        return EXIT_FAILED_ON if failed else None


def _render(error: ConfigError) -> str:
    """The error's sentence, a column-map entry spelled as the command line's `--map NAME=COLUMN`."""
    from gspo_dynamics.logs import ColumnMapError

    return error.render(cli=True) if isinstance(error, ColumnMapError) else str(error)


def _say(text: str) -> None:
    print(f"gspo-dynamics: {text}", file=sys.stderr, flush=True)


def _cmd_watch(args: argparse.Namespace) -> int:
    watch = _Watch(args)
    while True:
        status = watch.step()
        if status is not None:
            return status
        time.sleep(args.interval)
