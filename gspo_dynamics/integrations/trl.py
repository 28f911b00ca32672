"""A live guard for TRL/transformers training: run `diagnose` every N logs and warn early.

    from gspo_dynamics.integrations.trl import DiagnosticsCallback
    trainer = GRPOTrainer(..., callbacks=[DiagnosticsCallback(every=10)])

Every `every`-th `on_log` event the callback turns the trainer's `state.log_history` into a
`RunLog` (`gspo_dynamics.logs.read_log_history`: the same path as reading the saved
trainer_state.json) and runs `gspo_dynamics.diagnose.diagnose` on it. When a failure mode (any
mode but healthy saturation and still rising) reaches `min_confidence`, it

  * issues a Python warning (`GSPODynamicsWarning`) and logs it to the `gspo_dynamics` logger,
    once per mode (again only if the mode went away and came back), and
  * adds `gspo_dynamics/warning` (text) and `gspo_dynamics/alert` (1.0) to the `logs` dict of that
    event, so the console printer and the reporting integrations after it show it in the log.

transformers is imported only when it is installed and only to subclass `TrainerCallback`: this
module imports without it, and `DiagnosticsCallback` is then a duck-typed callback (every `on_*`
event it does not handle is a no-op, which is all that transformers' CallbackHandler asks for).
"""

from __future__ import annotations

import importlib.util
import logging
import warnings
from typing import Any, Callable

from gspo_dynamics._checks import positive_int
from gspo_dynamics._errors import ConfigError

LOGGER = logging.getLogger("gspo_dynamics")
HEALTHY_MODES = ("healthy_saturation", "still_rising")  # a run in these is not heading anywhere bad
WARNING_KEY = "gspo_dynamics/warning"
ALERT_KEY = "gspo_dynamics/alert"


class GSPODynamicsWarning(UserWarning):
    """A training run is heading for a failure mode (see the message for the evidence)."""


class _DiagnosticsLogic:
    """The callback's behaviour, independent of whether transformers is installed."""

    def __init__(self, every: int = 10, *, hparams: Any = None, min_confidence: float = 0.5,
                 diagnose_fn: Callable | None = None, emit_warnings: bool = True) -> None:
        positive_int("every", every, hint=" (logs between diagnoses)")
        if not (isinstance(min_confidence, (int, float)) and 0.0 <= min_confidence <= 1.0):
            raise ConfigError(f"min_confidence must be a number in [0, 1], got {min_confidence!r}")
        self.every = every
        self.hparams = hparams
        self.min_confidence = float(min_confidence)
        self.emit_warnings = emit_warnings
        self._diagnose_fn = diagnose_fn
        self.n_logs = 0
        self.last = None  # the last Diagnosis
        self.alerts: list[tuple[int, str, float, str]] = []  # (step, mode, confidence, message) raised
        self.disabled_reason: str | None = None  # set when the log cannot be diagnosed at all
        self.errors: list[str] = []  # diagnoses that raised (logged once; training goes on)
        self._active: set[str] = set()  # modes currently alerted (warned once until they go away)

    def _diagnose(self, run):
        if self._diagnose_fn is None:
            from gspo_dynamics.diagnose import diagnose  # imported on first use, not at import time

            self._diagnose_fn = diagnose
        return self._diagnose_fn(run, self.hparams)

    def on_log(self, args, state, control, logs=None, **kwargs):
        """transformers' on_log event: diagnose every `every`-th call; returns `control` unchanged."""
        self.n_logs += 1
        if self.disabled_reason is not None or self.n_logs % self.every:
            return control
        self.check(state, args, logs)
        return control

    def check(self, state, args=None, logs: dict | None = None) -> list[tuple[str, float, str]]:
        """Diagnose `state.log_history` now; the (mode, confidence, message) of new alerts."""
        from gspo_dynamics.logs import read_log_history

        history = getattr(state, "log_history", None)
        step = int(getattr(state, "global_step", 0) or 0)
        try:
            run = read_log_history(history if history is not None else [],
                                   logging_steps=getattr(args, "logging_steps", None), source="<trainer state>")
        except ConfigError as error:
            if "not of GRPO/GSPO-style RL" in str(error):  # a DPO/SFT run: nothing to guard, say so once
                self.disabled_reason = str(error)
                self._raise(step, "unsupported", 1.0, f"diagnostics disabled: {error}", logs)
            return []  # no reward rows yet: try again at the next diagnosis
        if run.is_too_short():
            return []
        try:
            diagnosis = self._diagnose(run)
        except Exception as error:  # a guard must never stop the training it watches
            text = f"gspo-dynamics: diagnostics failed at step {step} ({type(error).__name__}: {error}); training continues"
            if not self.errors:
                LOGGER.warning(text)
            self.errors.append(text)
            return []
        self.last = diagnosis
        found = {v.mode: v for v in diagnosis.verdicts
                 if v.mode not in HEALTHY_MODES and v.confidence >= self.min_confidence}
        new = []
        for mode, verdict in found.items():
            if mode in self._active:
                continue
            message = _message(step, verdict)
            self._raise(step, mode, verdict.confidence, message, logs)
            new.append((mode, float(verdict.confidence), message))
        self._active = set(found)
        return new

    def _raise(self, step: int, mode: str, confidence: float, message: str, logs: dict | None) -> None:
        self.alerts.append((step, mode, float(confidence), message))
        LOGGER.warning(message)
        if self.emit_warnings:
            warnings.warn(message, GSPODynamicsWarning, stacklevel=3)
        if isinstance(logs, dict):
            previous = logs.get(WARNING_KEY)
            logs[WARNING_KEY] = message if not previous else f"{previous} | {message}"
            logs[ALERT_KEY] = 1.0


def _message(step: int, verdict) -> str:
    advice = getattr(verdict, "advice", "") or ""
    if isinstance(advice, (list, tuple)):
        advice = "; ".join(map(str, advice))
    text = f"gspo-dynamics: at step {step} the run looks like {verdict.mode} (confidence {verdict.confidence:.2f})"
    return f"{text}: {advice}" if advice else text


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
