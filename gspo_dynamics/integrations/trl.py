"""A live guard for TRL/transformers training: diagnose every N logs, alert through the trainer's own loggers,
and stop the run on the failure modes you name.

    from gspo_dynamics.integrations.trl import attach
    trainer = GRPOTrainer(model=..., reward_funcs=..., args=GRPOConfig(..., report_to=["tensorboard"]))
    guard = attach(trainer, every=10, stop_on=["dynamical_instability", "non_finite"])
    trainer.train()

Every `every`-th training `on_log` event (evaluation rows and the end-of-training summary aside) the callback
turns `state.log_history` into a `RunLog` (`gspo_dynamics.logs.read_log_history`, the path of a saved
trainer_state.json; its own keys left out) and runs `gspo_dynamics.diagnose.diagnose` on it. A flag is a
failure mode (any mode but healthy saturation and still rising) at confidence >= `min_confidence`, or a finding
that is not a note (`_alerts.flags`). Then (keys, options and the postmortem's fields: docs/callback.md):

  * the log row of that step gets `gspo_dynamics/<name>` = the flag's confidence (1.0 for a finding) for every
    flag, and, where a flag is new (absent at the previous diagnosis), `gspo_dynamics/alert` = 1.0 and the text
    in `gspo_dynamics/warning`; each new flag is also a Python warning (`GSPODynamicsWarning`), a line on the
    `gspo_dynamics` logger and, when W&B is in `args.report_to` with an active run, a `wandb.alert`;
  * a flag named in `stop_on` at confidence >= `stop_confidence` sets `control.should_training_stop`, adds
    `gspo_dynamics/stop` = 1.0 to the row and writes `gspo_dynamics_postmortem.json` into `args.output_dir`
    (`_alerts.postmortem`: the step, the flags that stopped it with their evidence, the action, the last step
    diagnosed with no flag).

The same row reaches every logger. transformers' `Trainer.log` appends a copy of the row to `state.log_history`
and then calls each callback's `on_log` in list order, reporting integrations (TensorBoard, W&B, ...) before any
callback passed in `callbacks=`. So the callback writes its keys into the `logs` dict (which later callbacks
receive) and into `state.log_history[-1]` (the copy trainer_state.json saves), and `attach(trainer)` /
`DiagnosticsCallback.install(trainer)` puts it first in `trainer.callback_handler.callbacks`, ahead of the
reporting callbacks. It cannot move itself: no event hands a callback its trainer or handler. Passed in
`callbacks=` instead, its keys reach trainer_state.json and the console but not the reporters, and it says so
once at `on_train_begin`.

Every process diagnoses the same gathered log, so every rank stops at the same step; only the world's process
zero warns, alerts W&B and writes the postmortem.

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
    ALERT_KEY, HEALTHY_MODES, POSTMORTEM_NAME, PREFIX, STOP_KEY, WARNING_KEY, check_stop_on, flags, message, postmortem,
    reporters, reports_to_wandb, wandb_alert,
)

__all__ = ["ALERT_KEY", "HEALTHY_MODES", "POSTMORTEM_NAME", "STOP_KEY", "WARNING_KEY", "DiagnosticsCallback",
           "GSPODynamicsWarning", "attach"]
LOGGER = logging.getLogger("gspo_dynamics")
SUMMARY_KEY = "train_runtime"  # in the row transformers logs once training ended: nothing left to guard
EVAL_PREFIX = "eval_"  # the keys of an evaluation's row (transformers' metric_key_prefix)


class GSPODynamicsWarning(UserWarning):
    """A training run is heading for a failure mode (see the message for the evidence)."""


class _DiagnosticsLogic:
    """The callback's behaviour, independent of whether transformers is installed.

    every: training logs between diagnoses. hparams: the run's `Hyperparams`, or None. min_confidence: a failure
    mode's confidence from which it is flagged. stop_on: failure modes and findings that stop the run (an
    unknown name is a ConfigError). stop_confidence: a named mode's confidence from which it stops the run
    (>= min_confidence). diagnose_fn: `diagnose` unless given (run, hparams) -> Diagnosis. emit_warnings: the
    Python warnings (the logger line, the log keys and the W&B alert stay)."""

    def __init__(self, every: int = 10, *, hparams: Any = None, min_confidence: float = 0.5, stop_on=None,
                 stop_confidence: float = 0.9, diagnose_fn: Callable | None = None, emit_warnings: bool = True) -> None:
        positive_int("every", every, hint=" (logs between diagnoses)")
        self.every = every
        self.hparams = hparams
        self.min_confidence = _unit("min_confidence", min_confidence)
        self.stop_on = check_stop_on(stop_on)
        self.stop_confidence = _unit("stop_confidence", stop_confidence)
        if self.stop_on and self.stop_confidence < self.min_confidence:
            raise ConfigError(f"stop_confidence must be >= min_confidence ({self.min_confidence}), "
                              f"got {stop_confidence!r}")
        self.emit_warnings = emit_warnings
        self._diagnose_fn = diagnose_fn
        self.n_logs = 0
        self.last = None  # the last Diagnosis
        self.alerts: list[tuple[int, str, float, str]] = []  # (step, name, confidence, message) raised
        self.last_healthy_step: int | None = None  # the last diagnosed step with no flag
        self.postmortem: dict | None = None  # set when it stopped the run (process zero also writes it to a file)
        self.disabled_reason: str | None = None  # set when the log cannot be diagnosed at all
        self.errors: list[str] = []  # diagnoses that raised (logged once; training goes on)
        self._active: set[str] = set()  # names flagged at the last diagnosis (alerted once until they go away)
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
            text = ("gspo-dynamics: DiagnosticsCallback was not installed ahead of the reporting callbacks "
                    f"({', '.join(reporters(args))}), which will not see its alerts; use attach(trainer) or "
                    "DiagnosticsCallback.install(trainer) before train()")
            LOGGER.warning(text)
            if self.emit_warnings:
                warnings.warn(text, GSPODynamicsWarning, stacklevel=2)
        return control

    def on_log(self, args, state, control, logs=None, **kwargs):
        """transformers' on_log event: diagnose every `every`-th training log; returns `control`."""
        if isinstance(logs, dict) and any(k == SUMMARY_KEY or k.startswith(EVAL_PREFIX) for k in logs):
            return control  # an evaluation's row, or the summary once training ended: not a training log
        self.n_logs += 1
        if self.disabled_reason is not None or self.postmortem is not None or self.n_logs % self.every:
            return control
        self.check(state, args, logs, control)
        return control

    def check(self, state, args=None, logs: dict | None = None, control=None) -> list[tuple[str, float, str]]:
        """Diagnose `state.log_history` now, add the keys to `logs` and to the history's last row, stop through
        `control` if a `stop_on` flag is reached; the (name, confidence, message) of new alerts."""
        step = int(getattr(state, "global_step", 0) or 0)
        row: dict = {}
        diagnosis = self._diagnose_history(state, args, step, row)
        new = []
        if diagnosis is not None:
            self.last = diagnosis
            found = flags(diagnosis, self.min_confidence, self.stop_on)
            if not found:
                self.last_healthy_step = step
            row.update({f.key: f.confidence for f in found})
            for flag in (f for f in found if f.name not in self._active):
                text = message(step, flag)
                self._raise(step, flag.name, flag.confidence, text, row, args, state)
                new.append((flag.name, flag.confidence, text))
            self._active = {f.name for f in found}
            stopping = [f for f in found if f.name in self.stop_on and f.confidence >= self.stop_confidence]
            if stopping:
                self._stop(step, stopping, diagnosis, row, args, state, control)
        _publish(row, logs, state, step)
        return new

    def _diagnose_history(self, state, args, step: int, row: dict):
        """The Diagnosis of the log so far, or None (too short, not RL, or diagnose failed: never raised)."""
        from gspo_dynamics.logs import read_log_history

        history = getattr(state, "log_history", None) or []
        own = [{k: v for k, v in r.items() if not k.startswith(PREFIX)} if isinstance(r, dict) else r for r in history]
        try:
            run = read_log_history(own, logging_steps=getattr(args, "logging_steps", None), source="<trainer state>")
        except ConfigError as error:
            if "not of GRPO/GSPO-style RL" in str(error):  # a DPO/SFT run: nothing to guard, say so once
                self.disabled_reason = str(error)
                self._raise(step, "unsupported", 1.0, f"diagnostics disabled: {error}", row, args, state)
            return None  # no reward rows yet: try again at the next diagnosis
        if run.is_too_short():
            return None
        try:
            return self._diagnose(run)
        except Exception as error:  # a guard must never stop the training it watches
            text = (f"gspo-dynamics: diagnostics failed at step {step} ({type(error).__name__}: {error}); "
                    "training continues")
            if not self.errors:
                LOGGER.warning(text)
            self.errors.append(text)
            return None

    def _diagnose(self, run):
        if self._diagnose_fn is None:
            from gspo_dynamics.diagnose import diagnose  # imported on first use, not at import time

            self._diagnose_fn = diagnose
        return self._diagnose_fn(run, self.hparams)

    def _raise(self, step: int, name: str, confidence: float, text: str, row: dict, args, state) -> None:
        self.alerts.append((step, name, float(confidence), text))
        row[ALERT_KEY] = 1.0
        row[WARNING_KEY] = f"{row[WARNING_KEY]} | {text}" if row.get(WARNING_KEY) else text
        if _main_process(state):
            self._tell(text, args, f"gspo-dynamics: {name}", "WARN")

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

    def _tell(self, text: str, args, title: str, level: str) -> None:
        LOGGER.warning(text)
        if self.emit_warnings:
            warnings.warn(text, GSPODynamicsWarning, stacklevel=4)
        if reports_to_wandb(args):
            wandb_alert(args, title, text, level)


def _unit(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise ConfigError(f"{name} must be a number in [0, 1], got {value!r}")
    return float(value)


def _main_process(state) -> bool:
    return bool(getattr(state, "is_world_process_zero", True))


def _publish(row: dict, logs: dict | None, state, step: int) -> None:
    """The callback's keys into this event's `logs` (what the callbacks after it report) and into the row
    `Trainer.log` appended to `state.log_history` for the same step (what trainer_state.json saves)."""
    if not row:
        return
    history = getattr(state, "log_history", None)
    targets = [logs] if isinstance(logs, dict) else []
    last = history[-1] if history else None
    if isinstance(last, dict) and last.get("step") == step and last is not logs:
        targets.append(last)
    for target in targets:
        previous = target.get(WARNING_KEY)
        target.update(row)
        if previous and WARNING_KEY in row:
            target[WARNING_KEY] = f"{previous} | {row[WARNING_KEY]}"


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
