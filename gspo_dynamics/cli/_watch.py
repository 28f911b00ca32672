"""`gspo-dynamics watch PATH`: follow a growing training log and say each new verdict and alert once.

A live guard for any framework: PATH is what the run writes (a verl or OpenRLHF JSONL or console log, a TRL output
folder, a TensorBoard folder, a hand-written loop's CSV). Every `--interval` seconds `logs.Follower` parses what was
appended (a half-written last line waits); the rows it added go into the live guard (`integrations.Guard`: a
fixed-size view of the log, so a poll costs the same at step 10 and step 100,000; no verdict before the rows support
one; a verdict reported once it held for hold_rows rows; each alert once). A line is printed when the reported
verdict changes, for each new alert (a failure mode that held at --min-confidence, a finding), and when a name of
`--fail-on` is reported; a summary when the watch ends (--once, --exit-when-idle, --fail-on, Ctrl-C) and once when
the log has not grown for --idle-summary seconds. Messages about the file go to stderr, once each. `--alerts FILE`
also posts them to webhooks (`integrations._webhook`).

Exit status: 0 when the watch ends (`--once`, `--exit-when-idle`), EXIT_FAILED_ON (3) the moment a mode or finding
named in `--fail-on` is reported, or when the watch ends and its final diagnosis names one (a log read whole gets no
per-poll hysteresis: a `--once` gate, a watch started after the fall), 2 on bad input (also a log that could not be read when the watch ends), 130 on
Ctrl-C (cli/main.py).
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
import time
from pathlib import Path

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.cli._diagnose import (
    _check_reward_range, add_map_option, add_run_options, config_setup, hyperparams_from_flags, logged_beta)
from gspo_dynamics.cli._options import add_log_run_option
from gspo_dynamics.integrations import MIN_CONFIDENCE

EXIT_FAILED_ON = 3
JSON_SCHEMA = 2  # the --json line's version (docs/watch.md); a field's meaning changes only with a new number
FAIL_CONFIDENCE = MIN_CONFIDENCE  # --min-confidence's default, the TRL callback's too (integrations._guard: calibrated)
IDLE_SUMMARY = 600.0  # seconds without growth before the summary so far is printed (once until the log grows)
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
    p.add_argument("--min-confidence", type=float, default=None,
                   help=f"the confidence from which a failure mode is alerted and a --fail-on mode counts (default "
                        f"{FAIL_CONFIDENCE}, or the --alerts file's)")
    p.add_argument("--alerts", metavar="FILE", help="an alert file (TOML, YAML or JSON): webhooks to post alerts and "
                                                   "the summary to, min_confidence, hold_rows (docs/watch.md)")
    p.add_argument("--idle-summary", type=float, default=IDLE_SUMMARY, metavar="SECONDS",
                   help=f"print the summary so far once the log has not grown for this long (default {IDLE_SUMMARY:g})")
    p.add_argument("--exit-when-idle", type=float, metavar="SECONDS", help="end the watch (status 0) once the log "
                                                                           "has not grown for this long")
    p.add_argument("--once", action="store_true", help="read what is there, report, exit")
    add_run_options(p)
    p.set_defaults(run=_cmd_watch)


def failure_names() -> tuple[str, ...]:
    """Every name --fail-on accepts: diagnose's modes but the healthy ones, then the findings."""
    from gspo_dynamics.diagnose import FINDINGS, MODES

    return tuple(m for m in MODES if m not in HEALTHY_MODES) + FINDINGS


# what users call a failure mode, where that name is not ours: its mode (an entropy collapse is policy_concentration,
# never the length_collapse finding its spelling is nearest to)
KNOWN_AS = {"entropy_collapse": "policy_concentration", "mode_collapse": "policy_concentration",
            "collapse": "dynamical_instability", "reward_collapse": "dynamical_instability"}


def parse_fail_on(items: list[str] | None) -> tuple[str, ...]:
    """The names of `--fail-on A,B --fail-on C`, each checked against `failure_names`."""
    names = tuple(n.strip() for item in items or () for n in item.split(",") if n.strip())
    valid = failure_names()
    for name in names:
        if name not in valid:
            near = [KNOWN_AS[name]] if name in KNOWN_AS else difflib.get_close_matches(name, valid, n=1, cutoff=0.75)
            hint = f" (did you mean {near[0]}?)" if near else ""
            raise ConfigError(f"--fail-on {name}: not a failure mode or finding{hint}; expected some of {', '.join(valid)}")
    return names


def report_text(check, failed: list[tuple[str, float]]) -> str:
    """The text lines of one check: the verdict where it changed, each new alert, each --fail-on name reported."""
    lines = []
    if check.changed:
        lines.append(verdict_line(check.step, check.verdict, check.confidence, check.action, check.diagnosis))
    for alert in check.alerts:
        if alert.kind == "mode" and alert.name == check.verdict and check.changed:
            continue  # the verdict's own line says it
        what, text = ("finding" if alert.kind == "finding" else "alert"), alert.text.split(": ", 1)[1]
        # under the verdict's line, or a line of its own that says its step first
        lines.append(f"  {what:<8} {text}" if lines else f"step {check.step}: {what} {text}")
    return "\n".join(lines + fail_on_lines(failed))


def fail_on_lines(failed: list[tuple[str, float]]) -> list[str]:
    """One line per --fail-on name reported: `  fail-on  name (confidence q): exit 3`."""
    return [f"  fail-on  {n} (confidence {c:.2f}): exit {EXIT_FAILED_ON}" for n, c in failed]


def verdict_line(step: int, verdict: str, confidence: float | None, action: str | None, diagnosis=None) -> str:
    """`step N: verdict (confidence q) — do <the verdict's own first advice>`; unsure: what would tell."""
    if verdict.startswith("unsure: ") and diagnosis is not None:  # the headline says what would tell
        text = f"step {step}: {diagnosis.headline()[0].removeprefix('verdict').strip()}"
        return text + (f"; do {action}" if action else "")
    text = f"step {step}: {verdict.replace('_', ' ')}"
    text += f" (confidence {confidence:.2f})" if confidence is not None else ""
    return text + (f" — do {action}" if action else "")


def report_json(check, failed: list, **extra) -> str:
    """One --json line for a check (docs/watch.md); `extra`: fields of the first line only (its `config`)."""
    return json.dumps({"schema": JSON_SCHEMA, "event": "check", "step": check.step, "rows": check.rows,
                       "verdict": check.verdict, "changed": check.changed, "confidence": check.confidence,
                       "action": check.action, "alerts": [_alert_json(a) for a in check.alerts],
                       "fail_on": [{"name": n, "confidence": c} for n, c in failed], **extra}, allow_nan=False)


def _alert_json(alert) -> dict:
    return {"name": alert.name, "kind": alert.kind, "confidence": alert.confidence, "action": alert.action or None,
            "summary": getattr(alert.record, "summary", None)}


def failing(check, names: tuple[str, ...]) -> list[tuple[str, float]]:
    """(name, confidence) of each name in `names` flagged now: a mode the guard held, a finding seen."""
    return [(a.name, a.confidence) for a in check.flags if a.name in names]


class _Watch:
    """The command's loop state: the follower, the live guard, when the log last grew."""

    def __init__(self, args: argparse.Namespace) -> None:
        from gspo_dynamics.fit import check_reward_range
        from gspo_dynamics.integrations import GuardSettings, Notifier, load_alert_config
        from gspo_dynamics.logs import Follower, parse_map_option

        if not args.interval > 0:
            raise ConfigError(f"--interval must be > 0 seconds, got {args.interval:g}")
        if args.min_confidence is not None and not 0.0 <= args.min_confidence <= 1.0:
            raise ConfigError(f"--min-confidence must be in [0, 1], got {args.min_confidence:g}")
        if args.exit_when_idle is not None and not args.exit_when_idle >= 0:
            raise ConfigError(f"--exit-when-idle must be >= 0 seconds, got {args.exit_when_idle:g}")
        if not args.idle_summary > 0:
            raise ConfigError(f"--idle-summary must be > 0 seconds, got {args.idle_summary:g}")
        self.args = args
        self.fail_on = parse_fail_on(args.fail_on)
        config = load_alert_config(args.alerts) if args.alerts else None
        given = {} if args.min_confidence is None else {"min_confidence": args.min_confidence}
        self.settings = GuardSettings(**{**(config.guard if config else {}), **given})
        self.notifier = Notifier(config.webhooks if config else (), run=(config.run if config else None)
                                 or Path(args.path).resolve().name)
        # config_lines: the config's unknown keys read past and the defaults taken, part of the answer (stdout,
        # before the first report; in the first --json line's `config`), as in predict's and diagnose's first lines;
        # with the log's first rows, which may date the config's beta (`_date_beta`)
        self.setup = config_setup(args)
        self.hparams, self.config_lines, notes, _ = hyperparams_from_flags(args, self.setup)  # the follower numbers rows
        self.dated = False
        if self.config_lines and not args.json:
            print("\n".join(f"config: {line}" for line in self.config_lines), flush=True)
        self.reward_range = None if args.reward_range is None else tuple(args.reward_range)
        check_reward_range(self.reward_range)
        self.follower = Follower(args.path, args.format, parse_map_option(args.map), run=args.log_run)
        self.guard = self._new_guard()
        self.printed = False
        self.last_growth = time.monotonic()
        self.idle_said = False
        for note in notes:
            _say(note)

    def _new_guard(self):
        from gspo_dynamics.integrations import Guard

        return Guard(self.settings, hparams=self.hparams, reward_range=self.reward_range)

    def step(self) -> int | None:
        """One poll: read, check when rows arrived, print what is new; an exit status when the watch ends."""
        try:
            update = self.follower.poll()
        except ConfigError as error:
            raise ConfigError(_render(error)) from None
        for message in update.messages:
            _say(message)
        if update.waiting is not None and not (self.args.once and not self.guard.rows):  # --once: the error says it
            _say(f"waiting: {_render(update.waiting)}")
        if update.grew:
            self.last_growth, self.idle_said = time.monotonic(), False
        if update.restarted and self.guard.rows:
            _say(f"the log started again: a new guard from its first row ({self.guard.rows} rows read before)")
            self.guard = self._new_guard()
        if update.rows and self.follower.waiting is None:
            status = self._check(update)
            if status is not None:
                return status
        if update.grew:  # idle from the end of this poll's work: growth during a long diagnosis is seen next poll
            self.last_growth = time.monotonic()
        idle = 0.0 if update.grew else time.monotonic() - self.last_growth
        exit_idle = self.args.exit_when_idle
        if self.args.once or (exit_idle is not None and idle >= exit_idle):
            if not self.guard.rows and self.follower.waiting is not None:  # it ends with no log read: bad input
                raise ConfigError(_render(self.follower.waiting))
            if self.follower.pending:  # normal for a log being written: said, not an error
                _say(f"the log's last {self.follower.pending} byte(s), a line still being written, were not read")
            return self._final(self.finish())
        if idle >= self.args.idle_summary and not self.idle_said and self.guard.rows:
            _say(f"the log has not grown for {idle:.0f} s; the summary so far:")
            self.finish()
            self.idle_said = True
        return None

    def _check(self, update) -> int | None:
        rows = self.follower.rows
        try:
            chunk = self.follower.run_log(start=max(0, len(rows) - update.rows))
        except ConfigError:  # the new rows hold no reward (evaluation rows alone): nothing for the guard
            return None
        _check_reward_range(chunk, self.reward_range)
        self._date_beta(chunk)
        self.guard.add(chunk)
        check = self.guard.check()
        failed = failing(check, self.fail_on)
        for alert in check.alerts:
            self.notifier.send("alert", step=alert.step, verdict=alert.name, kind=alert.kind,
                               confidence=alert.confidence, action=alert.action or None, text=alert.text)
        # one reading (--once): the summary answers first, then what it alerted (`finish`)
        if not self.args.once and (check.changed or check.alerts or failed):
            if self.args.json:
                first = {"config": self.config_lines} if not self.printed and self.config_lines else {}
                print(report_json(check, failed, **first), flush=True)
            else:
                print(report_text(check, failed), flush=True)
            self.printed = True
        if failed:
            self._stop(check.step, failed)
            self.finish()
            return EXIT_FAILED_ON
        return None

    def _date_beta(self, chunk) -> None:
        """Once, at the log's first rows: the config's beta as the log dates it (`cli._diagnose.logged_beta`), the guard
        made anew with it (it has read no row), and in text the config lines that changed (the first --json line
        carries them all)."""
        if self.dated:
            return
        self.dated = True
        before = self.config_lines
        hparams, self.config_lines = logged_beta(self.args, self.setup, self.hparams, self.config_lines, chunk)
        if hparams is not self.hparams:
            self.hparams = hparams
            self.guard = self._new_guard()
        changed = [line for line in self.config_lines if line not in before]
        if changed and not self.args.json:
            print("\n".join(f"config: {line} (read with the log's first rows)" for line in changed), flush=True)

    def _stop(self, step: int, failed: list[tuple[str, float]]) -> None:
        """The webhooks' stop message for the --fail-on names reported at `step`."""
        text = f"step {step}: " + ", ".join(f"{n} ({c:.2f})" for n, c in failed) + f": exit {EXIT_FAILED_ON}"
        self.notifier.send("stop", step=step, verdict=failed[0][0], confidence=failed[0][1], text=text)

    def _final(self, summary: dict | None) -> int:
        """The exit status when the watch ends: EXIT_FAILED_ON where the final diagnosis of every row read names a
        --fail-on mode at --min-confidence or more (not unsure), or a --fail-on finding was seen: a log read whole
        (a watch started after the fall, a `--once` gate) gets no per-poll hysteresis to report it; else 0."""
        if summary is None or not self.fail_on:
            return 0
        failed = [(f["name"], 1.0) for f in summary["findings"] if f["name"] in self.fail_on]
        if summary["verdict"] in self.fail_on and (summary["confidence"] or 0.0) >= self.settings.min_confidence:
            failed.insert(0, (summary["verdict"], summary["confidence"]))
        if not failed:
            return 0
        if not self.args.json:
            print("\n".join(fail_on_lines(failed)), flush=True)
        self._stop(summary["step"], failed)
        return EXIT_FAILED_ON

    def _whole(self):
        """Every row the guard read, unaveraged (the follower keeps them), where its view averages blocks; else None."""
        if self.guard.view.block == 1:
            return None
        try:
            return self.follower.run_log()
        except ConfigError:
            return None

    def finish(self) -> dict | None:
        """The summary (`Guard.summary`): a final diagnosis of every row read, what was alerted; also posted; None
        before any row."""
        from gspo_dynamics.integrations import summary_line

        if not self.guard.rows:
            return None
        summary = self.guard.summary(whole=self._whole())
        text = summary_line(summary).removeprefix("gspo-dynamics: ")
        if self.args.json:
            first = {"config": self.config_lines} if not self.printed and self.config_lines else {}
            print(json.dumps({"schema": JSON_SCHEMA, "event": "summary", **summary, **first}, allow_nan=False), flush=True)
            self.printed = True
        else:
            print(text, flush=True)
            for alert in self.guard.alerts if self.args.once else ():  # the one reading's
                if not (alert.kind == "mode" and alert.name == summary["verdict"]):  # said on the line above
                    print(f"  {'finding ' if alert.kind == 'finding' else 'alert   '} {alert.text.split(': ', 1)[1]}")
        self.notifier.send("summary", step=summary["step"], verdict=summary["verdict"],
                           confidence=summary["confidence"], action=summary["action"], text=text)
        return summary


def _render(error: ConfigError) -> str:
    """The error's sentence, a column-map entry spelled as the command line's `--map NAME=COLUMN`."""
    from gspo_dynamics.logs import ColumnMapError

    return error.render(cli=True) if isinstance(error, ColumnMapError) else str(error)


def _say(text: str) -> None:
    print(f"gspo-dynamics: {text}", file=sys.stderr, flush=True)


def _cmd_watch(args: argparse.Namespace) -> int:
    watch = _Watch(args)
    try:
        while True:
            status = watch.step()
            if status is not None:
                return status
            time.sleep(args.interval)
    except KeyboardInterrupt:  # Ctrl-C: the summary so far, then cli/main.py's "interrupted" and status 130
        watch.finish()
        raise
