"""The callback inside TRL's real GRPOTrainer (a tiny Llama built in code, CPU, TensorBoard reporting): its keys
read back from trainer_state.json and from the TensorBoard event files at the step it raised them, and stop_on
ending the run before max_steps with its postmortem."""

from __future__ import annotations

import json
import logging
import os
import warnings

import pytest

pytest.importorskip("trl", reason="TRL is not installed (the frameworks extra)")
pytest.importorskip("tensorboard", reason="TensorBoard is not installed (the frameworks extra)")

from _trl_helpers import grpo_trainer, non_finite, scripted  # noqa: E402

from gspo_dynamics.integrations.trl import (  # noqa: E402
    ALERT_KEY, POSTMORTEM_NAME, STOP_KEY, DiagnosticsCallback, attach,
)
from gspo_dynamics.logs._tfevents import read_events  # noqa: E402

MAX_STEPS = 30
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is downloaded: the model and tokenizer are built in code


@pytest.fixture(autouse=True)
def _quiet_transformers():
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    yield
    hf_logging.set_verbosity(verbosity)


def zero_reward(prompts, completions, completion_ids, **_):
    """Pays nothing: every group is flat, every advantage 0 (advantage degeneracy from the first step)."""
    return [0.0] * len(completion_ids)


def _train(trainer, output_dir):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # transformers' deprecations, not ours
        trainer.train()
    trainer.state.save_to_json(str(output_dir / "trainer_state.json"))
    rows = json.loads((output_dir / "trainer_state.json").read_text())["log_history"]
    return {row["step"]: row for row in rows if "train_runtime" not in row}


def _tensorboard(output_dir) -> dict[int, dict[str, float]]:
    """The scalars TensorBoardCallback wrote, by step (read with our own event-file reader)."""
    scalars: dict[int, dict[str, float]] = {}
    for path in output_dir.rglob("events.out.tfevents.*"):
        events, _ = read_events(path.read_bytes())
        for step, tag, value in events:
            scalars.setdefault(step, {})[tag] = value
    return scalars


def test_real_diagnose_alerts_every_logger_at_its_step_and_stops_the_run(tmp_path):
    trainer = grpo_trainer(tmp_path, zero_reward, MAX_STEPS)
    guard = attach(trainer, every=2, stop_on=["advantage_degeneracy"])
    rows = _train(trainer, tmp_path)
    (step,) = [s for s, name, *_ in guard.alerts if name == "advantage_degeneracy"]
    assert step < MAX_STEPS
    assert trainer.state.global_step == step  # stopped where it was found, long before max_steps
    confidence = guard.last.verdict("advantage_degeneracy").confidence
    assert confidence >= guard.stop_confidence
    # trainer_state.json: the row of that step
    assert rows[step][ALERT_KEY] == 1.0 and rows[step][STOP_KEY] == 1.0
    assert rows[step]["gspo_dynamics/advantage_degeneracy"] == confidence
    assert all(isinstance(v, float) for r in rows.values() for k, v in r.items() if k.startswith("gspo_dynamics/"))
    assert step >= 8 + guard.guard.settings.hold_rows  # diagnose's 8 rows, then held for hold_rows
    assert not any(k.startswith("gspo_dynamics/adv") for s in rows if s < step for k in rows[s])
    # TensorBoard: the same step (transformers prefixes train/)
    board = _tensorboard(tmp_path)
    assert board[step]["train/gspo_dynamics/alert"] == 1.0 and board[step]["train/gspo_dynamics/stop"] == 1.0
    assert board[step]["train/gspo_dynamics/advantage_degeneracy"] == pytest.approx(confidence, rel=1e-6)  # float32
    assert not any("gspo_dynamics/adv" in tag for s in board if s < step for tag in board[s])
    # the postmortem
    written = json.loads((tmp_path / POSTMORTEM_NAME).read_text())
    stopped = written["stopped_on"][0]
    assert written["step"] == step and stopped["name"] == "advantage_degeneracy" and stopped["kind"] == "mode"
    assert stopped["evidence"] == guard.last.verdict("advantage_degeneracy").to_json()["evidence"]
    assert written["action"] == guard.last.action() and written["headline"] == guard.last.headline()
    assert written["last_healthy_step"] == guard.alerts[0][0] - 2  # the check before the first flag
    from gspo_dynamics.diagnose import diagnose
    from gspo_dynamics.logs import read_log

    again = diagnose(read_log(tmp_path / "trainer_state.json"))  # issue 50: no text in the metrics to skip
    assert not [n for n in again.notes if "non-numeric" in n]


def test_an_installed_callback_stops_on_a_finding_after_healthy_steps(tmp_path):
    guard = DiagnosticsCallback(every=1, stop_on=["non_finite"], diagnose_fn=scripted(12, non_finite))
    trainer = grpo_trainer(tmp_path, zero_reward, MAX_STEPS, callbacks=[guard])
    guard.install(trainer)  # passed in callbacks=, then moved ahead of TensorBoardCallback
    rows = _train(trainer, tmp_path)
    assert trainer.state.global_step == 12
    assert rows[12]["gspo_dynamics/non_finite"] == 1.0 and rows[12][STOP_KEY] == 1.0
    assert _tensorboard(tmp_path)[12]["train/gspo_dynamics/non_finite"] == 1.0
    written = json.loads((tmp_path / POSTMORTEM_NAME).read_text())
    assert written["step"] == 12 and written["last_healthy_step"] == 11  # diagnosed healthy from step 8 to 11
    assert written["stopped_on"][0]["name"] == "non_finite" and written["stopped_on"][0]["kind"] == "finding"


def test_without_install_the_alert_reaches_trainer_state_but_not_tensorboard(tmp_path, caplog):
    guard = DiagnosticsCallback(every=1, diagnose_fn=scripted(10, non_finite))
    trainer = grpo_trainer(tmp_path, zero_reward, 12, callbacks=[guard])
    with caplog.at_level(logging.WARNING, logger="gspo_dynamics"):
        rows = _train(trainer, tmp_path)
    lines = [r.getMessage() for r in caplog.records if r.name == "gspo_dynamics"]
    assert "use attach(trainer)" in lines[0]  # said at on_train_begin, before any alert
    assert lines[1].startswith("gspo-dynamics: step 10: loss is NaN") and "; summary: 12 rows" in lines[-1]
    assert len(lines) == 3  # one line each: the install, the alert, the summary at the end
    assert rows[10][ALERT_KEY] == 1.0 and trainer.state.global_step == 12  # nothing in stop_on
    assert not any("gspo_dynamics" in tag for tags in _tensorboard(tmp_path).values() for tag in tags)
