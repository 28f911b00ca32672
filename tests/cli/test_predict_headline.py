"""`predict`'s answer first (`predict._headline`): the verdict and the config's own keys in the first lines, for TRL,
verl and our trainer; `--json` against its documented schema (docs/predict.schema.json); the pilot's power
calculation against a simulation; the advised settings read back by the same config mapping."""

from __future__ import annotations

import json
import math
from pathlib import Path

import jsonschema
import numpy as np
import pytest
import yaml

from _finished_runs import finished_runs
from gspo_dynamics.cli.main import main
from gspo_dynamics.predict import pilot_steps, read_run_config
from gspo_dynamics.predict._headline import PILOT_RISE, POWER_Z

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "docs" / "predict.schema.json").read_text())
TRL = {"learning_rate": 1e-6, "num_generations": 8, "per_device_train_batch_size": 4, "gradient_accumulation_steps": 8,
       "steps_per_generation": 32, "num_iterations": 1, "beta": 0.04, "max_steps": 500}
VERL = {"data": {"train_batch_size": 512}, "algorithm": {"adv_estimator": "grpo"},
        "trainer": {"total_training_steps": 300},
        "actor_rollout_ref": {"actor": {"optim": {"lr": 1e-6}, "ppo_mini_batch_size": 128, "ppo_epochs": 1},
                              "rollout": {"n": 8}}}
OURS = {"task": "pattern", "model": "100k", "objective": "gspo", "steps": 150, "lr": 1e-3, "group_size": 8,
        "prompts_per_step": 4, "steps_per_generation": 2}
KEYS = {"trl": ("learning_rate", "steps_per_generation: 8", "max_steps: "),
        "verl": ("actor_rollout_ref.actor.optim.lr", "actor_rollout_ref.actor.ppo_mini_batch_size=512",
                 "trainer.total_training_steps="),
        "ours": ("lr", "steps_per_generation: 1", "steps: ")}


def write(tmp_path, name, data) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data) if name.endswith(".yaml") else json.dumps(data))
    return str(path)


def run(capsys, *args) -> str:
    assert main(["predict", *args]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("name, config", [("trl", TRL), ("verl", VERL), ("ours", OURS)])
def test_a_config_alone_answers_in_its_own_keys_first(tmp_path, capsys, name, config):
    """The verdict on line 1, no change (T > 1 with a clip: only a pilot says whether the lr comes near the bound T
    sets), the pilot as the framework's keys within the first 5 lines; the derivation only under --explain; the JSON
    valid against the schema with the same verdict."""
    path = write(tmp_path, "c.yaml", config)
    lines = run(capsys, "--config", path).splitlines()
    head = "\n".join(lines[:5])
    assert lines[0].startswith("verdict: unknown until a pilot")
    _, refresh, length = KEYS[name]
    assert "change: none" in head and length in head and "stiffness" not in "\n".join(lines)
    assert refresh.split("=")[0].split(":")[0] not in head
    explained = run(capsys, "--config", path, "--explain")
    assert explained.startswith(lines[0]) and "stiffness per step" in explained
    report = json.loads(run(capsys, "--config", path, "--json"))
    jsonschema.validate(report, SCHEMA)
    assert report["verdict"] == "unknown until a pilot" and report["pilot_plan"]["steps"] >= 1
    assert report["changes"] == []


@pytest.mark.parametrize("name, config", [("trl", TRL), ("verl", VERL), ("ours", OURS)])
def test_the_advised_refresh_setting_reads_back_as_t_equals_one(name, config):
    """The change the answer gives for T = 1, applied through the same mapping, is T = 1 (an independent route:
    the config reader, not the key arithmetic)."""
    setup = read_run_config(config)
    key, value = setup.keys.refresh, setup.keys.refresh_value(1)
    assert value is not None and read_run_config(config, overrides=[f"{key}={value}"]).hparams.refresh_interval == 1


def test_an_unreachable_t_is_not_rounded():
    """verl: T = 512 / ppo_mini_batch_size; no integer mini-batch gives T = 3, so none is advised."""
    setup = read_run_config(VERL)
    assert setup.hparams.refresh_interval == 4 and setup.keys.refresh_value(2) == 256 and setup.keys.refresh_value(3) is None
    assert read_run_config({**TRL, "gradient_accumulation_steps": 3, "steps_per_generation": 12}).keys.refresh_value(5) == 15


def test_a_pilot_answer_validates_and_leads_with_its_verdict(tmp_path, capsys):
    t = np.arange(1, 61)
    reward = 0.8 - 0.6 * np.exp(-t / 12) + 0.02 * np.random.default_rng(0).standard_normal(60)
    log = tmp_path / "pilot.jsonl"
    log.write_text("".join(json.dumps({"step": int(s), "reward": float(r)}) + "\n" for s, r in zip(t, reward)))
    config = write(tmp_path, "grpo.json", {**TRL, "steps_per_generation": 8, "max_steps": 240, "num_processes": 1})
    report = json.loads(run(capsys, "--config", config, "--pilot", str(log), "--json"))
    jsonschema.validate(report, SCHEMA)
    assert report["verdict"] in ("safe", "at risk", "unsafe", "unsure")
    low, high = report["forecast"]["end_reward"]["interval"]
    assert 0.0 <= low <= report["forecast"]["end_reward"]["value"] <= high <= 1.0
    lines = run(capsys, "--config", config, "--pilot", str(log)).splitlines()
    told = 1 + bool(report["what_would_tell"])  # an unsure verdict's "to tell:" line is under it
    assert lines[0] == f"verdict: {report['verdict']} ({report['reason']})" and lines[told].startswith("change: ")
    assert any(line.startswith("forecast: reward over steps 201-240") for line in lines[:5])


def test_an_end_reward_no_band_calibrates_is_no_number_but_the_pilots_held_level(tmp_path, capsys):
    """A run 15 times its 40-step pilot, past the band's calibrated horizons: the answer prints no end value (the JSON
    value null, valid against the schema) and says where the pilot stands."""
    t = np.arange(1, 41)
    reward = 0.8 - 0.6 * np.exp(-t / 12) + 0.01 * np.random.default_rng(2).standard_normal(40)
    log = tmp_path / "pilot.jsonl"
    log.write_text("".join(json.dumps({"step": int(s), "reward": float(r)}) + "\n" for s, r in zip(t, reward)))
    config = write(tmp_path, "grpo.json", {**TRL, "steps_per_generation": 8, "max_steps": 600, "num_processes": 1,
                                           "lr_scheduler_type": "constant"})  # else the schedule's clock
    report = json.loads(run(capsys, "--config", config, "--pilot", str(log), "--json"))
    jsonschema.validate(report, SCHEMA)
    end = report["forecast"]["end_reward"]
    assert end["value"] is None and end["interval"] is None and "calibrated up to" in end["interval_withheld"]
    assert end["held"] == pytest.approx(np.mean(reward[-8:])) and report["details"]["end_reward"]["value"] is None
    line = next(x for x in run(capsys, "--config", config, "--pilot", str(log)).splitlines()
                if x.startswith("forecast: reward over steps 501-600"))
    assert line.endswith(f"not identified by this pilot (no 90% interval: the run is 15 times the pilot, the interval "
                         f"is calibrated up to 10.7 times; a longer pilot gets one); the pilot holds at {end['held']:.3g} "
                         "(its last 8 rewards' mean)")


@pytest.mark.parametrize("generation", [{}, {"steps_per_generation": 16}, {"generation_batch_size": 64}])
def test_trls_edit_that_halves_the_noise_doubles_a_steps_completions_at_the_same_t(generation):
    """TRL's batch counts completions: num_generations only regroups them, so the edit the noise line names doubles
    the accumulation with the rollout (read back: T the same, N G twice), whichever key sets the rollout's size."""
    config = {"learning_rate": 1e-6, "num_generations": 8, "per_device_train_batch_size": 4,
              "gradient_accumulation_steps": 8, **generation}
    setup = read_run_config(config)
    edit = setup.keys.doubling
    assert edit.startswith("gradient_accumulation_steps 16 with ") and "num_generations" not in edit.split(" (")[0]
    pairs = dict(part.split(" ") for part in edit.split(" (")[0].replace(" with ", " and ").split(" and "))
    doubled = read_run_config({**config, **{k: int(v) for k, v in pairs.items()}}).hparams
    hp = setup.hparams
    assert doubled.refresh_interval == hp.refresh_interval and set(pairs) - {"gradient_accumulation_steps"} == (
        set(generation) or {"steps_per_generation"})
    assert doubled.num_groups * doubled.group_size == 2 * hp.num_groups * hp.group_size


def test_pass_rates_give_the_group_size_for_a_target_zero_std_share(tmp_path, capsys):
    """Prompts of mixed difficulty: the mixture's share at G = 8 and the num_generations that brings it to 20%."""
    rates = tmp_path / "rates.txt"
    rates.write_text("\n".join(f"{p:.3f}" for p in np.random.default_rng(1).beta(0.8, 0.4, 500)))
    report = json.loads(run(capsys, "--config", write(tmp_path, "c.json", TRL), "--pass-rates", str(rates), "--json"))
    jsonschema.validate(report, SCHEMA)
    change = next(c for c in report["changes"] if c["key"] == "num_generations")
    assert change["value"] > 8 and change["setting"] == f"num_generations: {change['value']}"
    assert any("zero-std groups over the 500 prompts" in s for s in report["settled"])


def test_the_pilot_length_is_the_power_calculation_checked_by_simulation():
    """n = 12 (z sigma / delta)^2 (`predict._headline` (1)): a linear rise delta over n steps in noise sigma is
    found by a one-sided 5% t-test of the least-squares slope in about 90% of 4000 simulated pilots."""
    setup = read_run_config({**TRL, "steps_per_generation": 8})  # T = 1, N G = 32
    n, _ = pilot_steps(setup.hparams, (0.0, 1.0))
    sigma, delta = 0.5 / math.sqrt(32), PILOT_RISE
    assert n == math.ceil(12 * (POWER_Z * sigma / delta) ** 2)
    rng = np.random.default_rng(0)
    x = np.arange(n, dtype=float)
    y = delta * x / n + sigma * rng.standard_normal((4000, n))  # (runs, n)
    xc = x - x.mean()
    slope = (y * xc).sum(1) / (xc ** 2).sum()
    resid = y - y.mean(1, keepdims=True) - slope[:, None] * xc
    se = np.sqrt((resid ** 2).sum(1) / (n - 2) / (xc ** 2).sum())
    power = np.mean(slope / se > 1.645)
    assert abs(power - 0.9) < 0.03, power


def test_without_a_group_size_the_pilot_spans_refresh_periods_and_says_why():
    setup = read_run_config({"lr": 1e-3, "refresh_interval": 3})
    n, why = pilot_steps(setup.hparams, None)
    assert n == 12 and "no group size G" in why


def test_finished_runs_give_their_end_level_in_the_answer(tmp_path, capsys):
    runs = finished_runs(tmp_path)
    lines = run(capsys, "--config", write(tmp_path, "c.json", TRL), "--prior", *map(str, runs)).splitlines()
    assert lines[0].startswith("verdict: unknown until a pilot")
    assert any(line.startswith("known before a run: end level of the 3 finished runs") and "90% interval" in line
               for line in lines)
