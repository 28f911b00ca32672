"""`predict --config --pilot` on real TRL runs (docs/validation.md, "The three public runs of examples/real_runs"): the Llama-3.1-8B GRPO run of
IMJONEZZ/UnslothGRPO @ e32c3bec, a Wordle run and a GSM8K run. Each GRPOConfig is transcribed from its
repository's files (values only) in examples/real_runs/ (its README says from where and what the log confirms);
the logs are read from ../shared/data/real_logs (never shipped). A pilot is a log's first steps; the rest of the
log is what the run did later."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from _real_logs import ALEX_JSON, IMJONEZZ, SUNSHINE
from gspo_dynamics.cli.main import main
from gspo_dynamics.predict import end_window
from gspo_dynamics.logs import read_log

REAL_RUNS = Path(__file__).resolve().parents[2] / "examples" / "real_runs"
CONFIG, WORDLE_CONFIG, GSM8K_CONFIG = (json.loads((REAL_RUNS / f"{name}.json").read_text())
                                       for name in ("unsloth_llama_grpo", "wordle_qwen_grpo", "gsm8k_qwen_grpo"))
PILOT_STEPS = 60


def forecast(tmp_path, capsys, config: dict, log, pilot_steps: int) -> dict:
    """`predict --config --pilot --pilot-steps --json` on the transcribed `config` and the real `log`."""
    path = tmp_path / "grpo.json"
    path.write_text(json.dumps(config))
    assert main(["predict", "--config", str(path), "--pilot", str(log), "--pilot-steps", str(pilot_steps), "--json"]) == 0
    return json.loads(capsys.readouterr().out)["details"]


@pytest.mark.real_logs
def test_a_pilot_in_the_flat_start_withholds_what_it_cannot_know(real_logs, tmp_path, capsys):
    """The first 60 steps sit in the flat start (mean reward ~0.27); the run then climbs past 1.4. The
    forecast must say that the pilot identifies neither the plateau nor the stiffness (no invented
    plateau or learning-rate bound), read T = 1 and N = 1 group of G = 6 with the assumptions said."""
    log = real_logs / IMJONEZZ
    report = forecast(tmp_path, capsys, CONFIG, log, PILOT_STEPS)
    assert report["config"]["refresh_interval"] == 1 and report["config"]["group_size"] == 6
    assert report["config"]["num_groups"] == 1 and any("0.166667 groups" in n for n in report["config"]["notes"])
    assert report["implications"]["plateau_extrapolated"] and report["max_safe_lr"] is None
    assert "does not identify" in report["lr_note"]
    later = np.array([r["reward"] for r in json.loads(log.read_text())["log_history"] if "reward" in r])
    assert later[:PILOT_STEPS].mean() < 0.4 < 1.2 < later[120:180].mean()  # what docs/validation.md says the run did


WORDLE_PILOT = 40


@pytest.mark.real_logs
def test_a_flat_pilot_forecasts_the_level_and_withholds_the_stiffness(real_logs, tmp_path, capsys):
    """A run that does not learn (lr 3e-7, one group of G = 2 per step): its 40-step pilot is noise around a
    level. The forecast's plateau must hold what the run did later (steps 41-160 within 2 standard errors
    of it, the two errors combined), with no stiffness, no learning-rate bound, and the fitted time scale
    said to be too short for these hyperparameters."""
    log = real_logs / ALEX_JSON
    report = forecast(tmp_path, capsys, WORDLE_CONFIG, log, WORDLE_PILOT)
    assert (report["config"]["group_size"], report["config"]["num_groups"], report["config"]["refresh_interval"]) == (2, 1, 1)
    assert report["max_safe_lr"] is None and report["implications"]["stiffness_per_step"] is None
    assert any("shorter than any curvature gives these hyperparameters" in n for n in report["implications"]["notes"])
    later = np.array([r["reward"] for r in json.loads(log.read_text())["log_history"] if "reward" in r])[WORDLE_PILOT:]
    plateau = report["implications"]["plateau"]
    combined = np.hypot(plateau["stderr"], later.std(ddof=1) / np.sqrt(len(later)))
    assert len(later) == 120 and abs(later.mean() - plateau["value"]) < 2 * combined


GSM8K_PILOT = 40


@pytest.mark.real_logs
def test_a_pilot_that_dips_within_its_rows_noise_is_no_loss_and_the_run_shows_it_was_a_dip(real_logs, tmp_path, capsys):
    """The first 40 steps of the Qwen3.5-9B LoRA run fall from 0.53 (steps 13-16) to 0.03 (steps 25-28): past the
    block test (z > 5, its scatter read off the rows), but rows of 2 groups of G = 2 (4 completions each) make a fall
    of 0.5 between blocks of 4 rows z = 3.8 against their sampling noise (predict._row_fall (4)), and the pilot came
    back: no loss, and with no collapse reading at T = 1 (no entropy logged) unsure. What the run did later
    (docs/validation.md): steps 41-200 averaging about 0.41, a dip, not a collapse (it read "at risk", with an lr
    halving, before the rule)."""
    log = real_logs / SUNSHINE
    report = forecast(tmp_path, capsys, GSM8K_CONFIG, log, GSM8K_PILOT)
    assert (report["config"]["group_size"], report["config"]["num_groups"], report["config"]["refresh_interval"]) == (2, 2, 1)
    fall = report["pilot_fall"]
    assert not fall["lost"] and fall["z"] > 5 and fall["best_steps"] == [13, 16] and fall["after_steps"] == [25, 28]
    assert report["pilot_lost_reward"] is False
    assert any("within the sampling noise of its rows (4 completions each" in m for m in report["measured"])
    later = np.asarray(read_log(log).series["reward"])[GSM8K_PILOT:]
    assert len(later) == 160 and 0.35 < later.mean() < 0.47


@pytest.mark.real_logs
@pytest.mark.parametrize("name, config, pilot, run_steps, covered, width", [
    (IMJONEZZ, CONFIG, 60, None, False, 1.53), (IMJONEZZ, CONFIG, 120, None, True, 2.29),
    (ALEX_JSON, WORDLE_CONFIG, 40, 160, True, 3.53), (SUNSHINE, GSM8K_CONFIG, 40, 200, True, 0.68),
    (SUNSHINE, GSM8K_CONFIG, 60, 200, True, 0.70)])
def test_the_band_for_the_reward_at_a_real_runs_end(real_logs, tmp_path, capsys, name, config, pilot, run_steps, covered,
                                                     width):
    """The reward over each real run's last sixth (the config's max_steps, or the Wordle log's 160 steps: its
    GRPOConfig sets epochs) against the 90% band from its first steps (predict._end_blend, calibrated across finished
    real runs, these among them): four inside, none the whole reach. The miss stays: the Llama run's 60-step pilot sits
    in its flat start (g small, the forecast near the held level) and the run then climbs to 1.62, past the
    band's 1.15; from 120 steps the band holds it."""
    log = real_logs / name
    if run_steps is not None:
        config = {**config, "max_steps": run_steps}
    end = forecast(tmp_path, capsys, config, log, pilot)["end_reward"]
    steps, reward = read_log(log).valid("reward")
    window = np.isin(steps, end_window(end["run_steps"]))
    low, high = end["interval"]
    assert (low <= reward[window].mean() <= high) == covered and high - low == pytest.approx(width, abs=0.02)
    assert not end["interval_is_reach"]


QUARTER_PILOTS = [(IMJONEZZ, CONFIG, None), (ALEX_JSON, WORDLE_CONFIG, 160), (SUNSHINE, GSM8K_CONFIG, 200)]


@pytest.mark.real_logs
@pytest.mark.parametrize("name, config, run_steps", QUARTER_PILOTS)
def test_the_three_public_runs_with_quarter_pilots_get_a_verdict_and_a_finite_forecast(
        real_logs, tmp_path, capsys, name, config, run_steps):
    """The issue's check: each public run's first quarter as the pilot gives a verdict, the end-reward forecast
    with a finite interval inside the reward's reach, and no plateau or time the pilot does not identify."""
    log = real_logs / name
    steps, reward = read_log(log).valid("reward")
    config = config if run_steps is None else {**config, "max_steps": run_steps}
    path = tmp_path / "grpo.json"
    path.write_text(json.dumps(config))
    quarter = len(reward) // 4
    assert main(["predict", "--config", str(path), "--pilot", str(log), "--pilot-steps", str(quarter), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] in ("safe", "at risk", "unsafe", "unsure")
    end = report["forecast"]["end_reward"]
    if report["verdict"] == "unsafe":  # no end forecast under unsafe (it would extend the course the verdict doubts)
        assert end is None
        return
    low, high = end["interval"]
    pilot = reward[:quarter]
    width = pilot.max() - pilot.min()
    reach = (0.0, 1.0) if pilot.min() >= 0 and pilot.max() <= 1 else (pilot.min() - width, pilot.max() + width)
    assert reach[0] <= low <= end["value"] <= high <= reach[1] and np.isfinite([low, high]).all()
    details = report["details"]
    if not details["implications"].get("plateau_identified", True):
        assert report["forecast"]["plateau"] is None and details["implications"]["plateau"] is None
    assert main(["predict", "--config", str(path), "--pilot", str(log), "--pilot-steps", str(quarter)]) == 0
    lines = capsys.readouterr().out.splitlines()
    told = 1 + bool(report["what_would_tell"])  # an unsure verdict's "to tell:" line is under it
    if report["what_would_tell"]:
        assert lines[1] == "to tell: " + report["what_would_tell"]
    lines = lines[:told] + lines[told + len(report["refused"]):]  # what TRL itself refuses is said next (IMJONEZZ's G = 6)
    assert lines[0].startswith(f"verdict: {report['verdict']}") and lines[told].startswith("assumed, not in the config")
    assert lines[told + 1].startswith("change: ")  # the verdict, the defaults taken for the keys it rests on, the change
