"""A live guard for TRL/transformers training: diagnose every N logs at a cost that does not grow with the log,
alert once through the trainer's own loggers (and webhooks, if asked), stop the run on the failure modes you name,
and sum the run up when it ends.

    from gspo_dynamics.integrations.trl import attach
    trainer = GRPOTrainer(model=..., reward_funcs=..., args=GRPOConfig(..., report_to=["tensorboard"]))
    guard = attach(trainer, every=10, stop_on=["dynamical_instability", "non_finite"], alerts="alerts.toml")
    trainer.train()

Every `every`-th training `on_log` event (evaluation rows and the end-of-training summary aside) the callback reads
the rows `state.log_history` gained since the last time (`gspo_dynamics.logs.read_log_history`; its own keys left
out) into the live guard (`_guard.Guard`: a fixed-size view of the log, diagnosed once the log grew by 1/64 or a
non-finite value arrived; a verdict reported only once it held for `hold_rows` rows; trend verdicts from 32 rows;
each alert once). A flag is a failure mode the guard holds at confidence >= `min_confidence` (default 0.9, as
`watch`), or a finding that is not a note. Then (keys, options and the postmortem's fields: docs/callback.md):

  * the log row of that step gets `gspo_dynamics/<name>` = the flag's confidence (1.0 for a finding) for every
    flag, and `gspo_dynamics/alert` = 1.0 where one is new: numbers only, so the row stays a row of metrics. Each
    new flag is one line on the `gspo_dynamics` logger (or, with `emit_warnings`, a `GSPODynamicsWarning` instead),
    a `wandb.alert` when W&B is in `args.report_to` with an active run, and a post to the alert file's webhooks;
  * a flag named in `stop_on` at confidence >= `stop_confidence` sets `control.should_training_stop`, adds
    `gspo_dynamics/stop` = 1.0 to the row and writes `gspo_dynamics_postmortem.json` into `args.output_dir`;
  * at `on_train_end`, one summary line (the final verdict on every row, the alerts raised), also to the webhooks.

The same row reaches every logger. transformers' `Trainer.log` appends a copy of the row to `state.log_history`
and then calls each callback's `on_log` in list order, reporting integrations (TensorBoard, W&B, ...) before any
callback passed in `callbacks=`. So the callback writes its keys into the `logs` dict (which later callbacks
receive) and into `state.log_history[-1]` (the copy trainer_state.json saves), and `attach(trainer)` /
`DiagnosticsCallback.install(trainer)` puts it first in `trainer.callback_handler.callbacks`, ahead of the
reporting callbacks. It cannot move itself: no event hands a callback its trainer or handler. Passed in
`callbacks=` instead, its keys reach trainer_state.json and the console but not the reporters, and it says so
once at `on_train_begin`.

Every process diagnoses the same gathered log, so every rank stops at the same step; only the world's process
zero says anything, alerts W&B and the webhooks and writes the postmortem.

transformers is imported only when it is installed and only to subclass `TrainerCallback`: this module imports
without it, and `DiagnosticsCallback` is then a duck-typed callback (every `on_*` event it does not handle is a
no-op, which is all that transformers' CallbackHandler asks for).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import warnings
from typing import Any, Callable

from gspo_dynamics._checks import positive_int
from gspo_dynamics._errors import ConfigError
from gspo_dynamics.integrations._alerts import (
    ALERT_KEY, HEALTHY_MODES, POSTMORTEM_NAME, PREFIX, STOP_KEY, check_stop_on, postmortem, reporters,
    reports_to_wandb, wandb_alert,
)
from gspo_dynamics.integrations._guard import MIN_CONFIDENCE, Guard, GuardSettings, summary_line
from gspo_dynamics.integrations._webhook import AlertConfig, Notifier, load_alert_config

__all__ = ["ALERT_KEY", "HEALTHY_MODES", "MIN_CONFIDENCE", "POSTMORTEM_NAME", "STOP_KEY", "DiagnosticsCallback",
           "GSPODynamicsWarning", "attach"]
LOGGER = logging.getLogger("gspo_dynamics")
SUMMARY_KEY = "train_runtime"  # in the row transformers logs once training ended: nothing left to guard
EVAL_PREFIX = "eval_"  # the keys of an evaluation's row (transformers' metric_key_prefix)


class GSPODynamicsWarning(UserWarning):
    """A training run is heading for a failure mode (see the message for the evidence)."""


class _DiagnosticsLogic:
    """The callback's behaviour, independent of whether transformers is installed.

    every: training logs between checks. hparams: the run's `Hyperparams`, or None. min_confidence: a failure
    mode's confidence from which it is flagged (MIN_CONFIDENCE, as `watch`). hold_rows: rows a verdict must hold
    before it is flagged (`_guard.HOLD_ROWS`). stop_on: failure modes and findings that stop the run (an unknown
    name is a ConfigError). stop_confidence: a named mode's confidence from which it stops the run
    (>= min_confidence). alerts: an alert file (path) or `AlertConfig` naming webhooks (and, where the file sets
    them, min_confidence and hold_rows, which the keywords here override only when given). run_name: the run's
    name in webhook messages (default: the file's `run`, else `args.run_name`, else output_dir's name).
    diagnose_fn: `diagnose` unless given (run, hparams) -> Diagnosis. emit_warnings: each alert as a Python
    warning instead of a logger line."""

    def __init__(self, every: int = 10, *, hparams: Any = None, min_confidence: float | None = None,
                 hold_rows: int | None = None, stop_on=None, stop_confidence: float = 0.9, alerts=None,
                 run_name: str | None = None, diagnose_fn: Callable | None = None, emit_warnings: bool = False) -> None:
        positive_int("every", every, hint=" (logs between diagnoses)")
        self.every = every
        self.hparams = hparams
        config = alerts if isinstance(alerts, AlertConfig) or alerts is None else load_alert_config(alerts)
        given = {k: v for k, v in (("min_confidence", min_confidence), ("hold_rows", hold_rows)) if v is not None}
        settings = GuardSettings(**{**(config.guard if config else {}), **given})
        self.min_confidence = settings.min_confidence
        self.stop_on = check_stop_on(stop_on)
        self.stop_confidence = _unit("stop_confidence", stop_confidence)
        if self.stop_on and self.stop_confidence < self.min_confidence:
            raise ConfigError(f"stop_confidence must be >= min_confidence ({self.min_confidence}), "
                              f"got {stop_confidence!r}")
        self.emit_warnings = emit_warnings
        self.guard = Guard(settings, hparams=hparams, diagnose_fn=diagnose_fn)
        self.notifier = Notifier(config.webhooks if config else ())
        self._run_name = run_name or (config.run if config else None)
        self.n_logs = 0
        self.last = None  # the last Diagnosis
        self.alerts: list[tuple[int, str, float, str]] = []  # (step, name, confidence, message) raised
        self.last_healthy_step: int | None = None  # the last checked step with no flag
        self.postmortem: dict | None = None  # set when it stopped the run (process zero also writes it to a file)
        self.summary: dict | None = None  # set at on_train_end (`Guard.summary`)
        self.disabled_reason: str | None = None  # set when the log cannot be diagnosed at all
        self.errors: list[str] = []  # checks that raised (logged once; training goes on)
        self._read = 0  # rows of state.log_history read into the guard
        self._installed = False  # put ahead of the reporting callbacks by `install`

    def install(self, trainer):
        """Put this callback first in `trainer.callback_handler.callbacks` (moving it if it is already there),
        ahead of the reporting callbacks, so its keys reach them at the step they describe. Returns self."""
        callbacks = getattr(getattr(trainer, "callback_handler", None), "callbacks", None)
        if not isinstance(callbacks, list):
            raise ConfigError(f"install needs a transformers Trainer (with callback_handler.callbacks), "
                              f"got {type(trainer).__name__}")
        callbacks[:] = [self] + [c for c in callbacks if c is not self]
        self._installed = True
        return self

    def on_train_begin(self, args, state, control, **kwargs):
        """transformers' on_train_begin event: say once if the reporting callbacks run before this one."""
        if not self._installed and reporters(args) and _main_process(state):
            self._say("gspo-dynamics: DiagnosticsCallback was not installed ahead of the reporting callbacks "
                      f"({', '.join(reporters(args))}), which will not see its alerts; use attach(trainer) or "
                      "DiagnosticsCallback.install(trainer) before train()")
        return control

    def on_log(self, args, state, control, logs=None, **kwargs):
        """transformers' on_log event: check every `every`-th training log; returns `control`."""
        if isinstance(logs, dict) and any(k == SUMMARY_KEY or k.startswith(EVAL_PREFIX) for k in logs):
            return control  # an evaluation's row, or the summary once training ended: not a training log
        self.n_logs += 1
        if self.disabled_reason is not None or self.postmortem is not None or self.n_logs % self.every:
            return control
        self.check(state, args, logs, control)
        return control

    def on_train_end(self, args, state, control, **kwargs):
        """transformers' on_train_end event: the run's summary, one line (and to the webhooks)."""
        if self.disabled_reason is None and self.summary is None:
            self._read_history(state, args, int(getattr(state, "global_step", 0) or 0), {})
            if self.guard.rows:
                try:
                    self.summary = self.guard.summary()
                except Exception as error:  # a guard must never stop the training it watches
                    self._failed(int(getattr(state, "global_step", 0) or 0), error)
                    return control
                if _main_process(state):
                    text = summary_line(self.summary)
                    self._say(text)
                    self._post("summary", step=self.summary["step"], verdict=self.summary["verdict"],
                               confidence=self.summary["confidence"], action=self.summary["action"], text=text,
                               args=args)
        return control

    def check(self, state, args=None, logs: dict | None = None, control=None) -> list[tuple[str, float, str]]:
        """Read the new rows of `state.log_history` into the guard, check, add the keys to `logs` and to the
        history's last row, stop through `control` if a `stop_on` flag is reached; the new alerts' (name,
        confidence, message)."""
        step = int(getattr(state, "global_step", 0) or 0)
        row: dict = {}
        self._read_history(state, args, step, row)
        new = []
        if self.disabled_reason is None and self.guard.rows:
            try:
                result = self.guard.check()
            except Exception as error:  # a guard must never stop the training it watches
                self._failed(step, error)
                result = None
            if result is not None and result.diagnosis is not None:
                new = self._report(result, step, row, args, state, control)
        _publish(row, logs, state, step)
        return new

    def _report(self, result, step: int, row: dict, args, state, control) -> list[tuple[str, float, str]]:
        from gspo_dynamics.diagnose import FINDING_NOTE

        self.last = result.diagnosis
        named_notes = [f for f in getattr(result.diagnosis, "findings", None) or []
                       if f.severity == FINDING_NOTE and f.name in self.stop_on]
        flags = list(result.flags)
        if not flags:
            self.last_healthy_step = step
        row.update({PREFIX + a.name: a.confidence for a in flags})
        new = []
        for alert in result.alerts:
            text = f"gspo-dynamics: {alert.text}"
            self.alerts.append((step, alert.name, alert.confidence, text))
            row[ALERT_KEY] = 1.0
            if _main_process(state):
                self._tell(text, args, f"gspo-dynamics: {alert.name}", "WARN")
                self._post("alert", step=step, verdict=alert.name, kind=alert.kind, confidence=alert.confidence,
                           action=alert.action or None, text=alert.text, args=args)
            new.append((alert.name, alert.confidence, text))
        stopping = [a for a in flags if a.name in self.stop_on and a.confidence >= self.stop_confidence]
        stopping += [_NoteFlag(f) for f in named_notes]
        if stopping:
            self._stop(step, stopping, result.diagnosis, row, args, state, control)
        return new

    def _read_history(self, state, args, step: int, row: dict) -> None:
        """The rows `state.log_history` gained since the last read, into the guard (own keys left out)."""
        from gspo_dynamics.logs import read_log_history

        history = getattr(state, "log_history", None) or []
        if len(history) < self._read:  # a history replaced (a resume): read it again from its start
            self._read = 0
        rows = history[self._read:]
        if not rows or self.disabled_reason is not None:
            return
        own = [{k: v for k, v in r.items() if not k.startswith(PREFIX)} if isinstance(r, dict) else r for r in rows]
        own = [r for r in own if not (isinstance(r, dict) and SUMMARY_KEY in r)]
        try:
            chunk = read_log_history(own, logging_steps=getattr(args, "logging_steps", None), source="<trainer state>")
        except ConfigError as error:
            if "not of GRPO/GSPO-style RL" in str(error):  # a DPO/SFT run: nothing to guard, say so once
                self.disabled_reason = str(error)
                text = f"gspo-dynamics: diagnostics disabled: {error}"
                self.alerts.append((step, "unsupported", 1.0, text))
                if _main_process(state):
                    self._tell(text, args, "gspo-dynamics: unsupported", "WARN")
            elif self.guard.rows:  # rows with no reward (evaluation rows alone): nothing new to read
                self._read = len(history)
            return  # before the first reward row: read again at the next check
        self.guard.add(chunk)
        self._read = len(history)

    def _failed(self, step: int, error: Exception) -> None:
        text = f"gspo-dynamics: diagnostics failed at step {step} ({type(error).__name__}: {error}); training continues"
        if not self.errors:
            LOGGER.warning(text)
        self.errors.append(text)

    def _stop(self, step: int, stopping: list, diagnosis, row: dict, args, state, control) -> None:
        """Stop the run: the control flag, the postmortem (kept, and written by process zero), one message."""
        if control is not None:
            control.should_training_stop = True
        self.postmortem = postmortem(step, stopping, diagnosis, self.last_healthy_step, self.stop_on,
                                     self.stop_confidence)
        row[STOP_KEY] = 1.0
        names = ", ".join(f"{f.name} ({f.confidence:.2f})" for f in stopping)
        text = f"gspo-dynamics: stopped the run at step {step} on {names}; do: {self.postmortem['action']}"
        output_dir = getattr(args, "output_dir", None)
        if _main_process(state):
            if output_dir:
                path = os.path.join(output_dir, POSTMORTEM_NAME)
                os.makedirs(output_dir, exist_ok=True)
                with open(path, "w", encoding="utf-8") as file:
                    json.dump(self.postmortem, file, indent=1)
                text += f" (postmortem: {path})"
            self._tell(text, args, f"gspo-dynamics stopped the run: {stopping[0].name}", "ERROR")
            self._post("stop", step=step, verdict=stopping[0].name, kind=stopping[0].kind,
                       confidence=stopping[0].confidence, action=self.postmortem["action"],
                       text=text.removeprefix("gspo-dynamics: "), args=args)

    def _tell(self, text: str, args, title: str, level: str) -> None:
        """One line per alert: the logger's, or the Python warning's where `emit_warnings`; and W&B's alert."""
        self._say(text)
        if reports_to_wandb(args):
            wandb_alert(args, title, text, level)

    def _say(self, text: str) -> None:
        if self.emit_warnings:
            warnings.warn(text, GSPODynamicsWarning, stacklevel=5)
        else:
            LOGGER.warning(text)

    def _post(self, event: str, *, args, **fields) -> None:
        if self.notifier.webhooks:
            self.notifier.run = self._run_name or _run_name(args)
            self.notifier.send(event, **fields)


class _NoteFlag:
    """A finding of severity note named in `stop_on` (a clip fraction of 0 on-policy): it stops the run as a flag
    would, though the guard does not alert on notes."""

    kind = "finding"
    confidence = 1.0

    def __init__(self, finding) -> None:
        self.name, self.record = finding.name, finding


def _run_name(args) -> str | None:
    name = getattr(args, "run_name", None)
    output_dir = getattr(args, "output_dir", None)
    return name or (os.path.basename(os.path.normpath(str(output_dir))) if output_dir else None)


def _unit(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise ConfigError(f"{name} must be a number in [0, 1], got {value!r}")
    return float(value)


def _main_process(state) -> bool:
    return bool(getattr(state, "is_world_process_zero", True))


def _publish(row: dict, logs: dict | None, state, step: int) -> None:
    """The callback's keys (numbers only) into this event's `logs` (what the callbacks after it report) and into
    the row `Trainer.log` appended to `state.log_history` for the same step (what trainer_state.json saves)."""
    if not row:
        return
    history = getattr(state, "log_history", None)
    targets = [logs] if isinstance(logs, dict) else []
    last = history[-1] if history else None
    if isinstance(last, dict) and last.get("step") == step and last is not logs:
        targets.append(last)
    for target in targets:
        target.update(row)


def _noop(self, args, state, control, **kwargs):
    return control


def _make_class():
    """DiagnosticsCallback: a TrainerCallback subclass where transformers is installed."""
    if importlib.util.find_spec("transformers") is not None:
        try:
            from transformers import TrainerCallback
        except Exception:  # a broken install: fall back to the duck-typed callback
            TrainerCallback = None
        if TrainerCallback is not None:
            return type("DiagnosticsCallback", (_DiagnosticsLogic, TrainerCallback),
                        {"__doc__": _DiagnosticsLogic.__doc__, "__module__": __name__})

    class DiagnosticsCallback(_DiagnosticsLogic):
        """Duck-typed transformers callback (transformers is not installed)."""

        def __getattr__(self, name: str):
            if name.startswith("on_"):  # on_train_begin, on_step_end, ...: nothing to do
                return _noop.__get__(self)
            raise AttributeError(name)

    return DiagnosticsCallback


DiagnosticsCallback = _make_class()


def attach(trainer, **options) -> DiagnosticsCallback:
    """A `DiagnosticsCallback(**options)` installed first on `trainer` (`DiagnosticsCallback.install`); returned."""
    return DiagnosticsCallback(**options).install(trainer)
