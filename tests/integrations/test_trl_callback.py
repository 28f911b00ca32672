"""The TRL callback, driven without TRL through a stand-in TrainerState (log_history, global_step)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import warnings
from types import SimpleNamespace

import pytest
from _real_logs import DPO

from gspo_dynamics import ConfigError
from gspo_dynamics.integrations.trl import ALERT_KEY, WARNING_KEY, DiagnosticsCallback, GSPODynamicsWarning



def _row(step: int, reward: float) -> dict:
    return {"reward": reward, "reward_std": 0.3, "frac_reward_zero_std": 0.1, "entropy": 0.6, "step": step}


class _Trainer:
    """What transformers' Trainer.log does: append {**logs, step} to log_history, then call on_log."""

    def __init__(self, callback, logging_steps: int = 1):
        self.callback = callback
        self.state = SimpleNamespace(log_history=[], global_step=0)
        self.args = SimpleNamespace(logging_steps=logging_steps)
        self.control = SimpleNamespace(should_stop=False)

    def log(self, logs: dict) -> dict:
        self.state.global_step = logs["step"]
        self.state.log_history.append(dict(logs))
        out = {k: v for k, v in logs.items() if k != "step"}
        assert self.callback.on_log(self.args, self.state, self.control, logs=out) is self.control
        return out


def _verdicts(*modes):
    return SimpleNamespace(primary=modes[0] if modes else "healthy_saturation",
                           verdicts=[SimpleNamespace(mode=m, confidence=0.9, advice=[f"fix {m}"]) for m in modes])


def test_diagnoses_every_n_logs_and_warns_once_per_mode():
    calls, answers = [], iter([_verdicts("healthy_saturation"), _verdicts("stalled", "reward_hacking"),
                               _verdicts("stalled", "reward_hacking"), _verdicts("still_rising"),
                               _verdicts("reward_hacking")])

    def fake_diagnose(run, hparams):
        calls.append(run.n_points("reward"))
        return next(answers)

    callback = DiagnosticsCallback(every=10, diagnose_fn=fake_diagnose)
    trainer = _Trainer(callback)
    shown = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(1, 51):
            out = trainer.log(_row(step, 0.1 + 0.01 * step))
            if WARNING_KEY in out:
                shown.append((step, out[WARNING_KEY], out[ALERT_KEY]))
    assert calls == [10, 20, 30, 40, 50]  # every 10th log, on the whole history so far
    # step 20: two new modes; step 30: the same ones (no repeat); step 50: hacking came back
    assert [s for s, _, _ in shown] == [20, 50]
    assert "stalled" in shown[0][1] and "reward_hacking" in shown[0][1] and "fix reward_hacking" in shown[0][1]
    assert [a[1] for a in callback.alerts] == ["stalled", "reward_hacking", "reward_hacking"]
    assert sum(issubclass(w.category, GSPODynamicsWarning) for w in caught) == 3


def test_too_short_history_is_not_diagnosed():
    callback = DiagnosticsCallback(every=1, diagnose_fn=lambda run, hp: pytest.fail("diagnosed a too-short run"))
    trainer = _Trainer(callback)
    for step in range(1, 6):
        trainer.log(_row(step, 0.5))
    assert callback.alerts == [] and callback.last is None


def test_a_failing_diagnosis_never_stops_training():
    def broken(run, hparams):
        raise OverflowError("int too large to convert to float")

    callback = DiagnosticsCallback(every=5, diagnose_fn=broken)
    trainer = _Trainer(callback)
    for step in range(1, 31):
        trainer.log(_row(step, 0.5))
    assert len(callback.errors) == 5 and "OverflowError" in callback.errors[0]  # steps 10..30 (5 is too short)
    assert callback.alerts == []


def test_a_dpo_run_disables_the_guard_with_one_message(real_logs):
    history = json.loads((real_logs / DPO).read_text())["log_history"]
    callback = DiagnosticsCallback(every=2, diagnose_fn=lambda run, hp: pytest.fail("diagnosed a DPO run"))
    trainer = _Trainer(callback)
    with pytest.warns(GSPODynamicsWarning, match="not of GRPO/GSPO"):
        for row in history[:10]:
            trainer.log(row)
    assert callback.disabled_reason is not None and len(callback.alerts) == 1


def test_real_diagnose_flags_a_degenerate_run_while_it_trains(tmp_path):
    from gspo_dynamics.sim.corpus import generate_corpus

    (entry,) = generate_corpus(tmp_path, seeds=1, modes=["advantage_degeneracy"])
    rows = [r for r in json.loads(entry.path.read_text())["log_history"] if "train_runtime" not in r]
    callback = DiagnosticsCallback(every=30, emit_warnings=False)
    trainer = _Trainer(callback, logging_steps=entry.label["logging_steps"])
    flagged = []
    for row in rows:
        out = trainer.log(row)
        if WARNING_KEY in out:
            flagged.append(out[WARNING_KEY])
    assert callback.last is not None
    assert any("advantage_degeneracy" in text for text in flagged), [a[:2] for a in callback.alerts]


def test_unhandled_events_are_no_ops_and_bad_settings_are_refused():
    callback = DiagnosticsCallback()
    control = object()
    # the duck-typed no-op returns control; transformers' TrainerCallback returns None (= unchanged)
    assert callback.on_train_begin(None, None, control) in (control, None)
    assert callback.on_step_end(None, None, control, model=None) in (control, None)
    with pytest.raises(AttributeError):
        callback.not_an_event  # noqa: B018
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ConfigError, match="every"):
            DiagnosticsCallback(every=bad)
    with pytest.raises(ConfigError, match="min_confidence"):
        DiagnosticsCallback(min_confidence=1.5)


def test_module_imports_without_transformers():
    code = ("import sys, gspo_dynamics.integrations.trl as m; "
            "print('transformers' in sys.modules, m.DiagnosticsCallback.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    has_transformers = importlib.util.find_spec("transformers") is not None
    assert out == [str(has_transformers), "DiagnosticsCallback"]


@pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="transformers is not installed")
def test_is_a_real_trainer_callback_when_transformers_is_installed():
    from transformers import TrainerCallback

    assert issubclass(DiagnosticsCallback, TrainerCallback)
    assert isinstance(DiagnosticsCallback(), TrainerCallback)


@pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="transformers is not installed")
def test_runs_inside_transformers_callback_handler():
    from transformers.trainer_callback import CallbackHandler, TrainerControl, TrainerState

    callback = DiagnosticsCallback(every=10, diagnose_fn=lambda run, hp: _verdicts("advantage_degeneracy"))
    handler = CallbackHandler([callback], model=None, processing_class=None, optimizer=None, lr_scheduler=None)
    state, control = TrainerState(), TrainerControl()
    args = SimpleNamespace(logging_steps=1)
    handler.on_train_begin(args, state, control)
    shown = []
    with pytest.warns(GSPODynamicsWarning, match="advantage_degeneracy"):
        for step in range(1, 21):
            state.global_step = step
            logs = {"reward": 0.01, "frac_reward_zero_std": 0.95}
            state.log_history.append({**logs, "step": step})  # what Trainer.log does before on_log
            assert handler.on_log(args, state, control, logs) is control
            shown += [step] if WARNING_KEY in logs else []
    assert shown == [10]
