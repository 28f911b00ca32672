"""The TRL callback, driven without TRL through a stand-in TrainerState (log_history, global_step), and inside
transformers' CallbackHandler. tests/integrations/test_trl_grpo.py runs it in TRL's GRPOTrainer."""

from __future__ import annotations

import importlib.util
import json
import logging
import subprocess
import sys
import types
import warnings
from types import SimpleNamespace

import pytest
from _real_logs import DPO
from _trl_helpers import degenerate, non_finite, scripted

from gspo_dynamics import ConfigError
from gspo_dynamics.integrations.trl import (
    ALERT_KEY, POSTMORTEM_NAME, STOP_KEY, DiagnosticsCallback, GSPODynamicsWarning, attach,
)
from gspo_dynamics.integrations._guard import TREND_ROWS

DEGENERACY_KEY = "gspo_dynamics/advantage_degeneracy"


def _row(step: int, reward: float) -> dict:
    return {"reward": reward, "reward_std": 0.3, "frac_reward_zero_std": 0.1, "entropy": 0.6, "step": step}


class _Trainer:
    """What transformers' Trainer.log does: append {**logs, step} to log_history, then call on_log."""

    def __init__(self, callback, logging_steps: int = 1, output_dir=None, report_to=()):
        self.callback = callback
        self.state = SimpleNamespace(log_history=[], global_step=0)
        self.args = SimpleNamespace(logging_steps=logging_steps, output_dir=output_dir, report_to=list(report_to))
        self.control = SimpleNamespace(should_training_stop=False)

    def log(self, logs: dict) -> dict:
        self.state.global_step = logs["step"]
        self.state.log_history.append(dict(logs))
        out = {k: v for k, v in logs.items() if k != "step"}
        assert self.callback.on_log(self.args, self.state, self.control, logs=out) is self.control
        return out


def _verdicts(*modes):
    return SimpleNamespace(primary=modes[0] if modes else "healthy_saturation",
                           verdicts=[SimpleNamespace(mode=m, confidence=0.9, advice=[f"fix {m}"]) for m in modes])


def test_checks_every_n_logs_and_says_each_alert_once_in_one_line(caplog):
    calls, answers = [], iter([_verdicts("healthy_saturation"), _verdicts("stalled", "reward_hacking"),
                               _verdicts("stalled", "reward_hacking"), _verdicts("still_rising"),
                               _verdicts("reward_hacking")])

    def fake_diagnose(run, hparams):
        calls.append(run.n_points("reward"))
        return next(answers)

    callback = DiagnosticsCallback(every=10, hold_rows=0, diagnose_fn=fake_diagnose)
    trainer = _Trainer(callback)
    shown = []
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.WARNING, logger="gspo_dynamics"):
        warnings.simplefilter("always")
        for step in range(1, 51):
            out = trainer.log(_row(step, 0.1 + 0.01 * step))
            assert all(isinstance(v, float) for k, v in out.items() if k.startswith("gspo_dynamics/"))  # numbers only
            if ALERT_KEY in out:
                shown.append(step)
    assert calls == [10, 20, 30, 40, 50]  # every 10th log, each on the rows so far (fewer than the view's size)
    # step 20: reward hacking (stalled, a trend verdict, needs TREND_ROWS rows); 30: the same (no repeat); 40: gone;
    # 50: hacking came back
    assert TREND_ROWS > 30 and shown == [20, 50]
    assert [a[1] for a in callback.alerts] == ["reward_hacking", "reward_hacking"]
    assert callback.alerts[0][3] == "gspo-dynamics: step 20: reward hacking (confidence 0.90) — do fix reward_hacking"
    assert [r.getMessage() for r in caplog.records] == [a[3] for a in callback.alerts]  # one line per alert
    assert not [w for w in caught if issubclass(w.category, GSPODynamicsWarning)]  # and no second one


def test_too_short_history_says_nothing():
    callback = DiagnosticsCallback(every=1)
    trainer = _Trainer(callback)
    for step in range(1, 6):
        trainer.log(_row(step, 0.5))
    assert callback.alerts == [] and callback.last.primary == "too_short"


def test_a_failing_diagnosis_never_stops_training():
    def broken(run, hparams):
        raise OverflowError("int too large to convert to float")

    callback = DiagnosticsCallback(every=5, diagnose_fn=broken)
    trainer = _Trainer(callback)
    for step in range(1, 31):
        trainer.log(_row(step, 0.5))
    assert len(callback.errors) == 6 and "OverflowError" in callback.errors[0]  # steps 5..30
    assert callback.alerts == []


def test_a_dpo_run_disables_the_guard_with_one_message(real_logs, caplog):
    history = json.loads((real_logs / DPO).read_text())["log_history"]
    callback = DiagnosticsCallback(every=2, diagnose_fn=lambda run, hp: pytest.fail("diagnosed a DPO run"))
    trainer = _Trainer(callback)
    with caplog.at_level(logging.WARNING, logger="gspo_dynamics"):
        for row in history[:10]:
            trainer.log(row)
    assert callback.disabled_reason is not None and len(callback.alerts) == 1
    assert len(caplog.records) == 1 and "not of GRPO/GSPO" in caplog.records[0].getMessage()


def test_real_diagnose_flags_a_degenerate_run_while_it_trains(tmp_path):
    from gspo_dynamics.sim.corpus import generate_corpus

    (entry,) = generate_corpus(tmp_path, seeds=1, modes=["advantage_degeneracy"])
    rows = [r for r in json.loads(entry.path.read_text())["log_history"] if "train_runtime" not in r]
    callback = DiagnosticsCallback(every=30)
    trainer = _Trainer(callback, logging_steps=entry.label["logging_steps"])
    flagged = [step for step, row in enumerate(rows) if ALERT_KEY in trainer.log(row)]
    assert callback.last is not None and flagged
    assert "advantage_degeneracy" in [a[1] for a in callback.alerts], [a[:2] for a in callback.alerts]


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

    callback = DiagnosticsCallback(every=10, hold_rows=0, diagnose_fn=lambda run, hp: _verdicts("advantage_degeneracy"))
    handler = CallbackHandler([callback], model=None, processing_class=None, optimizer=None, lr_scheduler=None)
    state, control = TrainerState(), TrainerControl()
    args = SimpleNamespace(logging_steps=1)
    handler.on_train_begin(args, state, control)
    shown = []
    for step in range(1, 21):
        state.global_step = step
        logs = {"reward": 0.01, "frac_reward_zero_std": 0.95}
        state.log_history.append({**logs, "step": step})  # what Trainer.log does before on_log
        assert handler.on_log(args, state, control, logs) is control
        shown += [step] if ALERT_KEY in logs else []
    assert shown == [10] and callback.alerts[0][1] == "advantage_degeneracy"


def _run(trainer, steps: int, first: int = 1) -> dict[int, dict]:
    """Log `steps` rows; the `logs` dict each on_log event left behind, by step."""
    return {step: trainer.log(_row(step, 0.5)) for step in range(first, first + steps)}


def test_keys_land_in_the_logs_and_in_the_history_row_of_the_same_step():
    callback = DiagnosticsCallback(every=5, min_confidence=0.5, hold_rows=0,
                                   diagnose_fn=scripted(10, lambda last: degenerate(0.8, last)))
    trainer = _Trainer(callback)
    out = _run(trainer, 20)
    rows = {row["step"]: row for row in trainer.state.log_history}
    for where in (out, rows):  # what the later callbacks report, and what trainer_state.json saves
        assert where[10][ALERT_KEY] == 1.0 and where[10][DEGENERACY_KEY] == 0.8
        assert {k for k in where[10] if k.startswith("gspo_dynamics/")} == {ALERT_KEY, DEGENERACY_KEY}  # no text
        assert where[15][DEGENERACY_KEY] == 0.8 and ALERT_KEY not in where[15]  # still flagged, not new
        assert not any(k.startswith("gspo_dynamics/") for s in (5, 9, 11) for k in where[s])
    assert [a[:2] for a in callback.alerts] == [(10, "advantage_degeneracy")]
    assert callback.postmortem is None  # nothing named in stop_on
    assert "advantage degeneracy (confidence 0.80)" in callback.alerts[0][3]
    assert callback.last_healthy_step == 5  # no flag at step 5, flagged from step 10 on


def test_stop_on_stops_the_run_and_writes_the_postmortem(tmp_path):
    callback = DiagnosticsCallback(every=5, stop_on=["advantage_degeneracy"], hold_rows=0,
                                   diagnose_fn=scripted(20, lambda last: degenerate(0.95, last)))
    trainer = _Trainer(callback, output_dir=tmp_path)
    out = _run(trainer, 19)
    assert not trainer.control.should_training_stop
    out.update(_run(trainer, 1, first=20))
    assert trainer.control.should_training_stop and out[20][STOP_KEY] == 1.0
    assert trainer.state.log_history[-1][STOP_KEY] == 1.0
    written = json.loads((tmp_path / POSTMORTEM_NAME).read_text())
    verdict = callback.last.verdict("advantage_degeneracy")
    assert written == callback.postmortem
    assert written["schema"] == 1 and written["step"] == 20 and written["last_healthy_step"] == 15
    assert written["stopped_on"] == [{"name": "advantage_degeneracy", "kind": "mode", "confidence": 0.95,
                                      "evidence": verdict.to_json()["evidence"], "advice": verdict.advice}]
    assert written["action"] == callback.last.action() == "raise G (num_generations) to 16"
    assert written["headline"][0].startswith("verdict    advantage degeneracy")
    assert written["stop_on"] == ["advantage_degeneracy"] and written["stop_confidence"] == 0.9
    _run(trainer, 10, first=21)  # transformers still logs after the stop: nothing more is diagnosed
    assert len(callback.alerts) == 1 and callback.last_healthy_step == 15


def test_a_named_mode_below_stop_confidence_alerts_without_stopping(tmp_path):
    callback = DiagnosticsCallback(every=5, stop_on="advantage_degeneracy", stop_confidence=0.9, min_confidence=0.5,
                                   hold_rows=0, diagnose_fn=scripted(10, lambda last: degenerate(0.85, last)))
    trainer = _Trainer(callback, output_dir=tmp_path)
    _run(trainer, 30)
    assert callback.alerts and not trainer.control.should_training_stop
    assert callback.postmortem is None and not (tmp_path / POSTMORTEM_NAME).exists()


def test_a_finding_in_stop_on_stops_the_run(tmp_path):
    callback = DiagnosticsCallback(every=1, stop_on=["non_finite"], diagnose_fn=scripted(12, non_finite))
    trainer = _Trainer(callback, output_dir=tmp_path)
    out = _run(trainer, 20)
    assert trainer.control.should_training_stop and max(out) == 20  # the stand-in ignores the flag
    written = json.loads((tmp_path / POSTMORTEM_NAME).read_text())
    (item,) = written["stopped_on"]
    assert written["step"] == 12 and written["last_healthy_step"] == 11
    assert item["name"] == "non_finite" and item["kind"] == "finding" and item["confidence"] == 1.0
    assert item["severity"] == "invalidates"
    assert item["evidence"][0]["value"] is None  # NaN, as diagnose's JSON writes it
    assert written["action"] == "restart before it with a lower learning_rate"
    assert out[12]["gspo_dynamics/non_finite"] == 1.0 and out[12][ALERT_KEY] == 1.0
    assert callback.alerts[0][3] == ("gspo-dynamics: step 12: loss is NaN from step 12 on (non_finite) — do restart "
                                     "before it with a lower learning_rate")  # a finding: said at once, no hold


def test_stop_on_and_stop_confidence_are_checked_at_construction():
    with pytest.raises(ConfigError, match=r"'dynamic_instability' is not a failure mode or finding; expected .*"
                                          r"dynamical_instability.*non_finite"):
        DiagnosticsCallback(stop_on=["dynamic_instability"])
    with pytest.raises(ConfigError, match="'healthy_saturation' is not a failure mode"):
        DiagnosticsCallback(stop_on=["healthy_saturation"])
    with pytest.raises(ConfigError, match="stop_on must be a list"):
        DiagnosticsCallback(stop_on=5)
    with pytest.raises(ConfigError, match="stop_confidence must be a number in"):
        DiagnosticsCallback(stop_confidence=1.5)
    with pytest.raises(ConfigError, match=r"stop_confidence must be >= min_confidence \(0.8\)"):
        DiagnosticsCallback(stop_on=["stalled"], min_confidence=0.8, stop_confidence=0.6)
    assert DiagnosticsCallback(stop_on="non_finite").stop_on == ("non_finite",)
    assert DiagnosticsCallback(min_confidence=0.95).stop_on == ()  # stop_confidence only matters with stop_on


def _stub_wandb(monkeypatch, run=True, fail=False) -> list[dict]:
    sent = []

    def alert(**kwargs):
        if fail:
            raise RuntimeError("no network")
        sent.append(kwargs)

    stub = types.ModuleType("wandb")
    stub.run, stub.alert = (object() if run else None), alert
    stub.AlertLevel = SimpleNamespace(WARN="AlertLevel.WARN", ERROR="AlertLevel.ERROR")
    monkeypatch.setitem(sys.modules, "wandb", stub)
    return sent


def test_new_alerts_and_the_stop_go_to_wandb_when_it_reports(monkeypatch, tmp_path):
    sent = _stub_wandb(monkeypatch)
    callback = DiagnosticsCallback(every=5, stop_on=["advantage_degeneracy"], hold_rows=0,
                                   diagnose_fn=scripted(15, lambda last: degenerate(0.95, last)))
    _run(_Trainer(callback, output_dir=tmp_path, report_to=["tensorboard", "wandb"]), 20)
    assert [(a["title"], a["level"]) for a in sent] == [
        ("gspo-dynamics: advantage_degeneracy", "AlertLevel.WARN"),
        ("gspo-dynamics stopped the run: advantage_degeneracy", "AlertLevel.ERROR")]
    assert "step 15: advantage degeneracy" in sent[0]["text"] and "stopped the run at step 15" in sent[1]["text"]
    assert str(tmp_path / POSTMORTEM_NAME) in sent[1]["text"]
    assert all(len(a["title"]) < 64 for a in sent)


@pytest.mark.parametrize("report_to, run", [(["tensorboard"], True), (["wandb"], False)],
                         ids=["not-reported", "no-run"])
def test_no_wandb_alert_without_wandb_in_report_to_or_an_active_run(monkeypatch, report_to, run):
    sent = _stub_wandb(monkeypatch, run=run)
    callback = DiagnosticsCallback(every=5, hold_rows=0, diagnose_fn=scripted(10, lambda last: degenerate(0.95, last)))
    _run(_Trainer(callback, report_to=report_to), 20)
    assert callback.alerts and sent == []


def test_a_failing_wandb_alert_is_logged_and_training_goes_on(monkeypatch, caplog):
    _stub_wandb(monkeypatch, fail=True)
    callback = DiagnosticsCallback(every=5, hold_rows=0, diagnose_fn=scripted(10, lambda last: degenerate(0.95, last)))
    _run(_Trainer(callback, report_to=["wandb"]), 20)
    assert callback.alerts and "the W&B alert failed (RuntimeError: no network)" in caplog.text


@pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="transformers is not installed")
def test_install_puts_the_callback_ahead_of_the_reporting_callbacks():
    from transformers import TrainerCallback
    from transformers.trainer_callback import CallbackHandler, DefaultFlowCallback, TrainerControl, TrainerState

    class Reporter(TrainerCallback):  # what TensorBoardCallback and WandbCallback see
        seen: list = []

        def on_log(self, args, state, control, logs=None, **kwargs):
            self.seen.append(dict(logs))

    reporter = Reporter()
    handler = CallbackHandler([DefaultFlowCallback(), reporter], model=None, processing_class=None, optimizer=None,
                              lr_scheduler=None)
    trainer = SimpleNamespace(callback_handler=handler)
    callback = attach(trainer, every=1, hold_rows=0, diagnose_fn=scripted(10, lambda last: degenerate(0.95, last)))
    assert handler.callbacks[0] is callback and len(handler.callbacks) == 3
    assert callback.install(trainer) is callback and handler.callbacks[0] is callback and len(handler.callbacks) == 3
    state, control, args = TrainerState(), TrainerControl(), SimpleNamespace(logging_steps=1, report_to=["tensorboard"])
    for step in range(1, 12):
        state.global_step = step
        logs = {"reward": 0.5, "reward_std": 0.3}
        state.log_history.append({**logs, "step": step})
        handler.on_log(args, state, control, logs)
    assert reporter.seen[9][ALERT_KEY] == 1.0 and reporter.seen[9][DEGENERACY_KEY] == 0.95  # step 10
    with pytest.raises(ConfigError, match="install needs a transformers Trainer"):
        callback.install(object())


def test_an_uninstalled_callback_says_the_reporters_will_not_see_its_alerts(caplog):
    args = SimpleNamespace(report_to=["tensorboard"])
    with caplog.at_level(logging.WARNING, logger="gspo_dynamics"):
        DiagnosticsCallback().on_train_begin(args, SimpleNamespace(), None)
    assert len(caplog.records) == 1 and "use attach(trainer)" in caplog.records[0].getMessage()
    with pytest.warns(GSPODynamicsWarning, match=r"use attach\(trainer\)"):  # emit_warnings: the warning instead
        DiagnosticsCallback(emit_warnings=True).on_train_begin(args, SimpleNamespace(), None)
    installed = DiagnosticsCallback().install(SimpleNamespace(callback_handler=SimpleNamespace(callbacks=[])))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        installed.on_train_begin(args, SimpleNamespace(), None)
        DiagnosticsCallback().on_train_begin(SimpleNamespace(report_to=[]), SimpleNamespace(), None)


def test_evaluation_and_summary_rows_are_not_training_logs():
    callback = DiagnosticsCallback(every=4, diagnose_fn=lambda run, hp: pytest.fail("diagnosed"))
    trainer = _Trainer(callback)
    for step in range(1, 4):
        trainer.log(_row(step, 0.5))
        trainer.log({"eval_reward": 0.4, "eval_loss": 0.1, "step": step})
    trainer.log({"train_runtime": 12.5, "train_loss": 0.0, "step": 3})
    assert callback.n_logs == 3 and callback.alerts == []
