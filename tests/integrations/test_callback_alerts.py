"""The TRL callback's alerts end to end: a webhook alert file, the summary at the end of training, one default
confidence with `watch`, rows read once each, and a trainer_state.json that diagnose reads back without a note about
non-numeric values."""

from __future__ import annotations

import logging
from types import SimpleNamespace

from _http_server import Server
from _trl_helpers import degenerate, scripted

from gspo_dynamics.cli._watch import FAIL_CONFIDENCE
from gspo_dynamics.diagnose import diagnose
from gspo_dynamics.integrations.trl import ALERT_KEY, MIN_CONFIDENCE, DiagnosticsCallback
from gspo_dynamics.logs import read_log_history


def _log(callback, state, args, step: int, row: dict) -> dict:
    state.global_step = step
    state.log_history.append({**row, "step": step})
    logs = dict(row)
    callback.on_log(args, state, SimpleNamespace(should_training_stop=False), logs=logs)
    return logs


def test_alerts_and_the_summary_reach_the_webhooks_of_the_alert_file(tmp_path, caplog):
    with Server() as server:
        alerts = tmp_path / "alerts.toml"
        alerts.write_text(f'hold_rows = 0\nrun = "lr-sweep-3"\n[[webhook]]\nurl = "{server.url}/slack"\n'
                          f'[[webhook]]\nurl = "{server.url}/json"\nformat = "json"\n')
        callback = DiagnosticsCallback(every=5, alerts=str(alerts),
                                       diagnose_fn=scripted(15, lambda last: degenerate(0.95, last)))
        state, args = SimpleNamespace(log_history=[], global_step=0), SimpleNamespace(logging_steps=1, report_to=[])
        with caplog.at_level(logging.WARNING, logger="gspo_dynamics"):
            for step in range(1, 21):
                _log(callback, state, args, step, {"reward": 0.5, "reward_std": 0.3})
            callback.on_train_end(args, state, None)
    assert [p for p, _ in server.posts] == ["/slack", "/json", "/slack", "/json"]  # the alert, then the summary
    (_, slack), (_, alert), _, (_, summary) = server.posts
    assert slack["text"].startswith("gspo-dynamics [lr-sweep-3]: step 15: advantage degeneracy (confidence 0.95)")
    assert alert["event"] == "alert" and alert["verdict"] == "advantage_degeneracy" and alert["step"] == 15
    assert alert["action"] == "raise G (num_generations) to 16" and alert["run"] == "lr-sweep-3"
    assert summary["event"] == "summary" and summary["step"] == 20 and summary["verdict"] == "advantage_degeneracy"
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2 and lines[1].startswith("gspo-dynamics: step 20: advantage degeneracy (confidence 0.95)")
    assert lines[1].endswith("; summary: 20 rows, alerts: advantage_degeneracy at step 15")


def test_nothing_is_posted_without_an_alert_file():
    callback = DiagnosticsCallback(every=5, hold_rows=0, diagnose_fn=scripted(10, lambda last: degenerate(0.95, last)))
    state, args = SimpleNamespace(log_history=[], global_step=0), SimpleNamespace(logging_steps=1, report_to=[])
    for step in range(1, 16):
        _log(callback, state, args, step, {"reward": 0.5})
    assert callback.alerts and callback.notifier.webhooks == () and callback.notifier.sent == 0


def test_one_default_confidence_for_the_callback_and_watch():
    assert DiagnosticsCallback().min_confidence == MIN_CONFIDENCE == FAIL_CONFIDENCE == 0.9


def test_each_history_row_is_read_once_and_the_saved_history_stays_numeric():
    seen = []

    def fn(run, hparams):
        seen.append(run.steps.size)
        return degenerate(0.95, int(run.steps[-1]))

    callback = DiagnosticsCallback(every=10, hold_rows=0, diagnose_fn=fn)
    state, args = SimpleNamespace(log_history=[], global_step=0), SimpleNamespace(logging_steps=1, report_to=[])
    for step in range(1, 101):
        _log(callback, state, args, step, {"reward": 0.3 + 0.001 * step, "reward_std": 0.2, "entropy": 0.5})
        if step % 25 == 0:
            state.log_history.append({"eval_reward": 0.4, "step": step})
    assert seen == list(range(10, 101, 10)) and callback.guard.rows == 100
    assert any(ALERT_KEY in row for row in state.log_history)
    run = read_log_history(state.log_history)
    assert not [w for w in run.warnings if "non-numeric" in w]
    assert not [n for n in diagnose(run).notes if "non-numeric" in n]
