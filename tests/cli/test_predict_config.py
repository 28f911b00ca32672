"""`gspo-dynamics predict --config [--pilot]`: TRL, YAML and verl configs, a pilot log, the plot, and
one-line errors with exit 2 for impossible, contradictory or foreign configs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from _finished_runs import finished_runs
from gspo_dynamics.cli.main import main
from gspo_dynamics.predict import fall_chance

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "trl_grpo_config.yaml"
TRL = {"learning_rate": 1e-6, "num_generations": 8, "per_device_train_batch_size": 4, "gradient_accumulation_steps": 8,
       "steps_per_generation": 32, "beta": 0.04, "importance_sampling_level": "sequence", "loss_type": "grpo",
       "epsilon": 3e-4, "epsilon_high": 4e-4, "output_dir": "out"}
VERL = {"data": {"train_batch_size": 512}, "algorithm": {"adv_estimator": "grpo"},
        "actor_rollout_ref": {"actor": {"optim": {"lr": 1e-6}, "ppo_mini_batch_size": 128, "ppo_epochs": 1},
                              "rollout": {"n": 8}}}


def details(out: str) -> dict:
    """predict --json's derivation (its top level is the answer: tests/cli/test_predict_headline.py)."""
    return json.loads(out)["details"]


def write(tmp_path, name, data) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data) if name.endswith((".yaml", ".yml")) else json.dumps(data))
    return str(path)


def pilot_log(tmp_path, n=40) -> str:
    t = np.arange(1, n + 1)
    reward = 0.8 - 0.6 * np.exp(-t / 12) + 0.02 * np.random.default_rng(0).standard_normal(n)
    path = tmp_path / "pilot.jsonl"
    path.write_text("".join(json.dumps({"step": int(s), "reward": float(r)}) + "\n" for s, r in zip(t, reward)))
    return str(path)


def test_trl_json_config_alone(tmp_path, capsys):
    assert main(["predict", "--config", write(tmp_path, "grpo.json", TRL), "--explain"]) == 0
    out = capsys.readouterr().out
    assert "TRL GRPOConfig" in out and "T = 4 optimizer steps per rollout" in out and "N = 4 groups" in out
    assert "needs a pilot" in out and "devices not given" in out


def test_set_overrides_the_config(tmp_path, capsys):
    assert main(["predict", "--config", write(tmp_path, "ppo.yaml", VERL), "--set", "actor_rollout_ref.actor.ppo_epochs=2",
                 "--json"]) == 0
    assert details(capsys.readouterr().out)["config"]["refresh_interval"] == 8


def test_yaml_and_verl_configs_as_json(tmp_path, capsys):
    assert main(["predict", "--config", write(tmp_path, "grpo.yaml", TRL), "--json"]) == 0
    assert details(capsys.readouterr().out)["config"]["refresh_interval"] == 4
    assert main(["predict", "--config", write(tmp_path, "ppo_trainer.yaml", VERL), "--json"]) == 0
    report = details(capsys.readouterr().out)
    assert report["config"]["framework"] == "verl" and report["config"]["refresh_interval"] == 4
    assert report["stiffness_bound"] > 0 and report["needs_a_pilot"]


def test_with_a_pilot_and_a_plot(tmp_path, capsys):
    config, log, png = write(tmp_path, "grpo.json", TRL), pilot_log(tmp_path), tmp_path / "map.png"
    assert main(["predict", "--config", config, "--pilot", log, "--run-steps", "120", "--plot", str(tmp_path / "end.png"), "--explain"]) == 0
    assert "reward at the run's end" in capsys.readouterr().out and (tmp_path / "end.png").stat().st_size > 10_000
    assert main(["predict", "--config", config, "--pilot", log, "--json", "--plot", str(png)]) == 0
    report = details(capsys.readouterr().out)
    assert report["pilot_steps"] == 40 and report["implications"]["plateau"]["value"] == pytest.approx(0.8, abs=0.05)
    assert report["measured"] and report["assumed"] and png.stat().st_size > 10_000
    assert main(["predict", "--config", config, "--pilot", log, "--pilot-steps", "20", "--explain"]) == 0
    assert "from the pilot (20 reward points, steps 1-20):" in capsys.readouterr().out


def test_finished_runs_of_the_task_give_the_end_level(tmp_path, capsys):
    """--prior: the finished runs' end level with its interval, in the text and the JSON; a finished run that
    cannot be one of the task's (rewards outside the range) or is too short is one line and exit 2."""
    config, log = write(tmp_path, "grpo.json", TRL), pilot_log(tmp_path, n=24)
    runs = finished_runs(tmp_path)
    assert main(["predict", "--config", config, "--pilot", log, "--prior", *map(str, runs), "--explain"]) == 0
    assert "the task's prior (3 finished runs" in capsys.readouterr().out
    assert main(["predict", "--config", config, "--pilot", log, "--prior", *map(str, runs), "--json"]) == 0
    prior = details(capsys.readouterr().out)["task_prior"]
    assert prior["level"] == pytest.approx(0.913, abs=0.01) and prior["interval"][0] < 0.913 < prior["interval"][1]
    # before a run, without a pilot: the config's answer and the finished runs' level
    assert main(["predict", "--config", config, "--prior", *map(str, runs), "--json"]) == 0
    report = details(capsys.readouterr().out)
    assert report["task_prior"]["level"] == pytest.approx(prior["level"]) and report["stiffness_bound"] > 0
    png = tmp_path / "prior_map.png"
    assert main(["predict", "--config", config, "--prior", *map(str, runs), "--reward-range", "0", "1",
                 "--plot", str(png), "--explain"]) == 0
    out = capsys.readouterr().out
    assert png.stat().st_size > 10_000  # the config's map: finished runs give no pilot curve to draw
    assert out.index("the task's prior (3 finished runs") < out.index("note: ") and "needs a pilot" in out
    bad = tmp_path / "other_task.jsonl"
    bad.write_text("".join(json.dumps({"step": s, "reward": 3.0 * s}) + "\n" for s in range(1, 41)))
    assert main(["predict", "--config", config, "--pilot", log, "--prior", str(runs[0]), str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "same task" in err
    assert main(["predict", "--config", config, "--prior", str(runs[0]), str(bad), "--reward-range", "0", "1"]) == 2
    assert "same task" in capsys.readouterr().err


def test_flags_without_a_testbed_or_a_config_are_refused_with_the_config_form(capsys):
    """LLM hyperparameters used to run the toy bandit silently, then got an answer under the bandit's defaults for
    the flags not given (beta 0.5, correction none): now one line that shows the --config / --set form."""
    args = ["predict", "--optimizer", "adam", "--lr", "1e-6", "-T", "8", "-G", "8", "--kl", "0.04", "--correction", "token"]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--config" in err and "--set learning_rate=" in err and "--testbed bandit" in err


@pytest.mark.parametrize("content, needle", [
    ({**TRL, "steps_per_generation": 0}, "steps_per_generation"),
    ({**TRL, "learning_rate": -1e-6}, "learning_rate"),
    ({**TRL, "learning_rate": "fast"}, "learning_rate"),
    ({"beta": 0.1, "loss_type": "sigmoid", "max_length": 512}, "preference-optimisation"),
    ({**TRL, "lr": 0.1}, "no field of TRL's GRPOConfig, beside TRL keys"),
    # a value the theory refuses is said in the user's key, not the theory's field (beta1, KL coefficient)
    ({**TRL, "adam_beta1": 1.5}, "config key 'adam_beta1' must be a number in [0, 1)"),
    ({**TRL, "adam_beta2": -0.1}, "config key 'adam_beta2' must be a number in [0, 1)"),
    ({**TRL, "adam_epsilon": 0}, "config key 'adam_epsilon' must be a positive number"),
    ({**TRL, "beta": -1}, "config key 'beta' must be a non-negative number"),
])
def test_bad_configs_are_one_line_and_exit_2(tmp_path, capsys, content, needle):
    assert main(["predict", "--config", write(tmp_path, "c.json", content)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("gspo-dynamics: error:") and needle in err


@pytest.mark.parametrize("extra, needle", [
    (["--config", "/nonexistent/grpo.json"], "cannot read"),
    (["--pilot-steps", "20"], "--pilot-steps needs --pilot"),
    (["--map", "reward=score"], "--map needs --pilot or --prior"),
    (["--testbed", "bandit", "--config", "x.json"], "drop --config"),
    (["--testbed", "bandit", "--prior", "done.jsonl"], "drop --config/--pilot/--prior"),
    (["--reward-range", "0", "1"], "give it as --config"),
    (["--config", str(EXAMPLE), "--target-noise", "0.02"], "--target-noise needs --pilot"),
    (["--config", str(EXAMPLE), "--target-zero-std", "0.1"], "--target-zero-std needs --pass-rates"),
    (["--set", "beta=0.1"], "--set overrides keys of --config"),
    (["--config", str(EXAMPLE), "--run-steps", "500"], "--run-steps needs --pilot"),
])
def test_contradictory_options_are_one_line_and_exit_2(capsys, extra, needle):
    assert main(["predict", *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err


@pytest.mark.parametrize("extra, needle", [
    (["--lr", "1e-3"], "--lr with --config"),
    (["-T", "8", "-G", "4"], "--refresh-interval, --group-size with --config"),
    (["--t-max", "10"], "--t-max and --no-from-start set the bandit's search"),
    (["--devices", "4"], "--devices counts the processes of a TRL config"),  # verl's batch is global
])
def test_flags_a_config_would_silently_override_are_one_line_and_exit_2(tmp_path, capsys, extra, needle):
    """A flag beside --config is refused, never dropped: the config's values are read (--set changes them)."""
    assert main(["predict", "--config", write(tmp_path, "v.yaml", VERL), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err


def test_devices_without_a_config_is_one_line_and_exit_2(capsys):
    assert main(["predict", "--lr", "1e-6", "--devices", "2"]) == 2
    assert "give the config" in capsys.readouterr().err


def test_the_reward_at_the_runs_end_with_its_interval(tmp_path, capsys):
    """The config's max_steps, or --run-steps, sets the run's end; a length the pilot already passed, or not a
    positive integer, is one line and exit 2."""
    config, log = write(tmp_path, "grpo.json", {**TRL, "max_steps": 120, "lr_scheduler_type": "constant"}), pilot_log(tmp_path)
    assert main(["predict", "--config", config, "--pilot", log, "--json"]) == 0
    end = details(capsys.readouterr().out)["end_reward"]
    assert end["run_steps"] == 120 and end["ratio"] == 3 and end["interval"][0] <= end["value"] <= end["interval"][1]
    # TRL's default schedule decays the lr linearly to 0: the 80 steps after the 40-step pilot count as 32
    decaying = write(tmp_path, "linear.json", {**TRL, "max_steps": 120})
    assert main(["predict", "--config", decaying, "--pilot", log, "--json"]) == 0
    end = details(capsys.readouterr().out)["end_reward"]
    assert end["run_steps"] == 120 and end["ratio"] == pytest.approx(72 / 40)
    assert main(["predict", "--config", config, "--pilot", log, "--run-steps", "80", "--json"]) == 0
    report = details(capsys.readouterr().out)  # the run's length as given, in the config's echo too
    assert report["config"]["run_steps"] == report["end_reward"]["run_steps"] == 80
    assert any("80 steps as given, not the config's 120" in a for a in report["assumed"])
    assert main(["predict", "--config", config, "--pilot", log, "--run-steps", "1000", "--explain"]) == 0
    # past the calibration's longest horizon: the forecast without a band, and why (predict._end_blend)
    assert "no band: the run is 25 times its pilot" in capsys.readouterr().out
    assert main(["predict", "--config", config, "--pilot", log, "--run-steps", "99999999999999999999999", "--explain"]) == 0
    assert "the run is 2.5e+21 times its pilot" in capsys.readouterr().out
    for steps, needle in (("30", "not past the pilot's last step 40"), ("0", "positive integer")):
        assert main(["predict", "--config", config, "--pilot", log, "--run-steps", steps]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and needle in err


@pytest.mark.parametrize("sigma", ["0", "-0.1", "nan", "inf"])
def test_an_impossible_target_noise_is_one_line_and_exit_2(tmp_path, capsys, sigma):
    assert main(["predict", "--config", write(tmp_path, "grpo.json", TRL), "--pilot", pilot_log(tmp_path),
                 "--target-noise", sigma]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "target noise must be a number > 0" in err


def test_the_group_size_for_a_target_noise(tmp_path, capsys):
    """G_sigma = ceil(G (s / sigma)^2) with G = 8 and the pilot's residual noise s; the default target is 5%
    of the inferred [0, 1] range."""
    config, log = write(tmp_path, "grpo.json", TRL), pilot_log(tmp_path)
    assert main(["predict", "--config", config, "--pilot", log, "--json", "--target-noise", "0.004"]) == 0
    report = details(capsys.readouterr().out)
    s = report["noise_by_group"]["8"]
    assert report["target_noise"] == 0.004 and report["group_size_for_target_noise"] == int(np.ceil(8 * (s / 0.004) ** 2))
    assert main(["predict", "--config", config, "--pilot", log, "--explain"]) == 0
    assert "G for a reward noise <= 0.05: 1 (at N = 4 groups per step)" in capsys.readouterr().out


def test_a_reward_range_the_pilot_leaves_is_refused(tmp_path, capsys):
    log = tmp_path / "wide.jsonl"
    log.write_text("".join(json.dumps({"step": i, "reward": float(v)}) + "\n" for i, v in enumerate(np.linspace(-9.7, 10.9, 30), 1)))
    assert main(["predict", "--config", write(tmp_path, "grpo.json", TRL), "--pilot", str(log), "--reward-range", "0", "1"]) == 2
    assert "does not hold the pilot's rewards" in capsys.readouterr().err


def test_diagnose_refuses_a_reward_range_the_log_leaves(tmp_path, capsys):
    """The issue's defect: --reward-range 0 1 was accepted for rewards from -9.7 to 10.9."""
    log = tmp_path / "wide.jsonl"
    log.write_text("".join(json.dumps({"step": i, "reward": float(v)}) + "\n" for i, v in enumerate(np.linspace(-9.7, 10.9, 30), 1)))
    assert main(["diagnose", str(log), "--reward-range", "0", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "does not hold the logged rewards" in err and "-9.7" in err
    assert main(["diagnose", str(log), "--reward-range", "-10", "11"]) == 0


def test_diagnose_json_keeps_the_theory_numbers_in_one_place(tmp_path, capsys):
    """The issue's defect: `diagnose --json` printed "theory": {} beside the numbers under implications."""
    log = tmp_path / "run.jsonl"
    t = np.arange(1, 61)
    log.write_text("".join(json.dumps({"step": int(s), "reward": float(0.8 - 0.6 * np.exp(-s / 12)), "frac_reward_zero_std": 0.1})
                           + "\n" for s in t))
    assert main(["diagnose", str(log), "--json", "--lr", "1e-3", "-G", "8"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert "theory" not in report and report["implications"]["theory_inputs"]["group_size"] == 8


def test_no_config_is_one_line_and_exit_2(capsys, tmp_path):
    """`predict` alone, or with a pilot and no config: one line naming --config, exit 2; with a pilot, the reason is
    the pilot's (no hyperparameter flag was given: audit s39 D5) and diagnose is named for the log alone."""
    assert main(["predict"]) == 2
    assert "give it as --config" in capsys.readouterr().err
    log = pilot_log(tmp_path)
    assert main(["predict", "--pilot", log]) == 2
    err = capsys.readouterr().err
    assert "give the run's config with --config" in err and f"gspo-dynamics diagnose {log}" in err
    assert "hyperparameter flags" not in err and err.count("\n") == 1


@pytest.mark.parametrize("entropy_start, overshoot", [(0.5, True), (1.5, False)])
def test_a_trl_pilot_with_clip_fraction_and_entropy_gets_the_collapse_forecast(tmp_path, capsys, entropy_start, overshoot):
    """A TRL pilot at the config's T = 4 that logs clip_ratio/region_mean and entropy: the drift comes from the
    clip fraction, the limit from the entropy (theory.collapse (5)); an entropy rising from 0.5 to 0.9 on the
    first updates is an overshoot (no T safe at this lr, the lr bound below the config's), one falling from
    1.5 is not. JSON and text say the same."""
    t = np.arange(1, 41)
    entropy = np.r_[[entropy_start, 0.8 if overshoot else 1.45, 0.9 if overshoot else 1.4], np.linspace(0.8, 0.6, 37)]
    rows = [{"step": int(s), "reward": float(0.8 - 0.6 * np.exp(-s / 12)), "clip_ratio/region_mean": 0.05,
             "entropy": float(h)} for s, h in zip(t, entropy)]
    log = tmp_path / "pilot.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = write(tmp_path, "grpo.json", TRL)
    assert main(["predict", "--config", config, "--pilot", str(log), "--json"]) == 0
    report = details(capsys.readouterr().out)
    assert report["drift_per_step"] > 0 and report["entropy"] == pytest.approx(entropy.mean())
    assert report["overshoot"] is overshoot and report["displacement"] > 0
    if overshoot:
        assert report["collapse_max_refresh_interval"] == 0 and report["collapse_max_lr"] < TRL["learning_rate"]
    chance = report["fall_chance"]  # predict._fall_chance (1), (2): an overshoot is a rule saying unstable, so m > 0
    assert chance["chance"] == pytest.approx(float(fall_chance(chance["margin"])), rel=1e-12)
    assert chance["margin"] > 0 if overshoot else chance["margin"] is not None
    assert main(["predict", "--config", config, "--pilot", str(log), "--explain"]) == 0
    text = capsys.readouterr().out
    assert "displacement between samplers" in text and ("entropy rose" in text) is overshoot
    assert f"loses its reward: {chance['chance']:.0%}" in text


def test_a_pilot_with_its_own_column_names_is_read_with_map(tmp_path, capsys):
    """A pilot whose reward column is "goodness" (nothing reward-like): without --map one line naming the option, with
    it the forecast."""
    t = np.arange(1, 41)
    path = tmp_path / "pilot.jsonl"
    path.write_text("".join(json.dumps({"step": int(s), "goodness": float(0.8 - 0.6 * np.exp(-s / 12))}) + "\n"
                            for s in t))
    config = write(tmp_path, "grpo.json", TRL)
    assert main(["predict", "--config", config, "--pilot", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--map reward=COLUMN" in err
    assert main(["predict", "--config", config, "--pilot", str(path), "--map", "reward=goodness", "--explain"]) == 0
    assert "from the pilot (40 reward points, steps 1-40):" in capsys.readouterr().out


def test_finished_runs_beside_their_configs_lean_the_level_toward_runs_like_this_one(tmp_path, capsys):
    """--prior on our trainer's run directories (config.json beside metrics.jsonl): the level is predict._prior (4)'s,
    leaning toward the runs with the config's objective and then its optimizer and lr; the pooled level (2) and the
    counts beside it, in the text and the JSON."""
    config = write(tmp_path, "ours.json", {"task": "count", "model": "100k", "objective": "grpo", "lr": 3e-3, "steps": 96})
    runs = []
    for i, (objective, lr, end) in enumerate((("grpo", 3e-3, 0.95), ("grpo", 1e-3, 0.85), ("gspo", 3e-3, 0.6))):
        run = tmp_path / f"run{i}"
        run.mkdir()
        (run / "config.json").write_text(json.dumps({"task": "count", "model": "100k", "objective": objective, "lr": lr}))
        t = np.arange(1, 97)
        reward = np.clip(end - 0.5 * np.exp(-t / 10) + 0.005 * np.random.default_rng(i).standard_normal(96), 0, 1)
        (run / "metrics.jsonl").write_text("".join(json.dumps({"step": int(s), "reward": float(r)}) + "\n"
                                                   for s, r in zip(t, reward)))
        runs.append(str(run / "metrics.jsonl"))
    assert main(["predict", "--config", config, "--prior", *runs, "--json"]) == 0
    prior = details(capsys.readouterr().out)["task_prior"]
    ends = [run["end_reward"] for run in prior["runs"]]
    m1 = (ends[0] + ends[1] + 2 * np.mean(ends)) / 4
    assert prior["level"] == pytest.approx((ends[0] + 2 * m1) / 3, abs=1e-9) and prior["pooled_level"] == pytest.approx(np.mean(ends))
    assert (prior["same_loss_runs"], prior["same_loss_optimizer_lr_runs"]) == (2, 1)
    assert main(["predict", "--config", config, "--prior", *runs, "--explain"]) == 0
    assert "2 with its loss, 1 of them also with its optimizer and lr" in capsys.readouterr().out


def test_a_finished_runs_config_given_as_log_equals_config(tmp_path, capsys):
    """--prior LOG=CONFIG: the run's config given beside the argument (a TRL log has none beside it), read as --config
    reads one; a path with '=' in its name that exists is a log whole; an unreadable given config is one line, exit 2."""
    config = write(tmp_path, "grpo.json", {**TRL, "loss_type": "dapo"})
    runs, args = [], []
    for i, (loss, end) in enumerate((("dapo", 0.95), ("grpo", 0.7), ("grpo", 0.75))):
        t = np.arange(1, 97)
        reward = np.clip(end - 0.5 * np.exp(-t / 10) + 0.005 * np.random.default_rng(i).standard_normal(96), 0, 1)
        run = tmp_path / f"lr=1e-3_{i}"
        run.mkdir()
        log = run / "metrics.jsonl"
        log.write_text("".join(json.dumps({"step": int(s), "reward": float(r)}) + "\n" for s, r in zip(t, reward)))
        runs.append(log)
        args.append(f"{log}={write(tmp_path, f'run{i}.json', {**TRL, 'loss_type': loss})}")
    assert main(["predict", "--config", config, "--prior", *args, "--json"]) == 0
    prior = details(capsys.readouterr().out)["task_prior"]
    ends = [run["end_reward"] for run in prior["runs"]]
    assert [run["config"]["loss"].split()[0] for run in prior["runs"]] == ["dapo", "grpo", "grpo"]
    m1 = (ends[0] + 2 * np.mean(ends)) / 3
    assert prior["level"] == pytest.approx((ends[0] + 2 * m1) / 3, abs=1e-9) and prior["same_loss_runs"] == 1
    assert main(["predict", "--config", config, "--prior", *map(str, runs), "--json"]) == 0  # '=' in the directory
    assert details(capsys.readouterr().out)["task_prior"]["same_loss_runs"] == 0
    other_T = write(tmp_path, "other_T.json", {**TRL, "loss_type": "dapo", "steps_per_generation": 64})
    assert main(["predict", "--config", config, "--prior", f"{runs[0]}={other_T}", *args[1:], "--json"]) == 0
    prior = details(capsys.readouterr().out)["task_prior"]  # its config's T is not this one's: left out, said
    assert prior["runs"][0]["other_refresh_interval"] == 8 and prior["same_loss_runs"] == 0
    assert main(["predict", "--config", config, "--prior", f"{runs[0]}={tmp_path / 'missing.yaml'}"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "missing.yaml" in err


def test_prior_items_part_at_an_existing_log_and_refuse_an_empty_part(tmp_path):
    """prior_runs: a path with '=' that exists is a log whole; LOG=CONFIG parts at the first '=' whose left side
    exists, so a config with '=' in its path stays whole; an empty part is one ConfigError."""
    from gspo_dynamics._errors import ConfigError
    from gspo_dynamics.cli._predict import prior_runs

    run = tmp_path / "lr=1e-3"
    run.mkdir()
    log = run / "m.jsonl"
    log.write_text("{}\n")
    config = f"{tmp_path}/cfg=a.json"
    assert prior_runs([str(log)]) == ([str(log)], [None])
    assert prior_runs([f"{log}={config}"]) == ([str(log)], [config])
    assert prior_runs(["no=such"]) == (["no"], ["such"])  # neither side exists: read_log then names the log
    for bad in (f"{log}=", "=cfg.json"):
        with pytest.raises(ConfigError, match="both parts"):
            prior_runs([bad])


def test_diagnose_says_the_hyperparameters_its_numbers_rest_on(tmp_path, capsys):
    """The issue's defect read a batch of 4 prompts as one group: with --config the text report names the
    hyperparameters the mapping derived, prompts per step included; without any, no line."""
    log = tmp_path / "run.jsonl"
    log.write_text("".join(json.dumps({"step": int(s), "reward": float(0.8 - 0.6 * np.exp(-s / 12))}) + "\n"
                           for s in range(1, 61)))
    assert main(["diagnose", str(log), "--config", write(tmp_path, "grpo.json", TRL)]) == 0
    hparams = [line for line in capsys.readouterr().out.splitlines() if line.startswith("hparams ")]
    assert len(hparams) == 1 and "G = 8, N = 4 groups per step" in hparams[0]
    assert main(["diagnose", str(log)]) == 0
    assert not any(line.startswith("hparams ") for line in capsys.readouterr().out.splitlines())


# ---- keys the framework does not have, and defaults the answer rests on ---------------------------------------------
@pytest.mark.parametrize("name, data, needle", [
    ("grpo.json", {**TRL, "learnig_rate": 1e-3}, "TRL's GRPOConfig has no field learnig_rate (did you mean learning_rate?)"),
    ("grpo.yaml", {**{k: v for k, v in TRL.items() if k != "num_generations"}, "num_generation": 16},
     "TRL's GRPOConfig has no field num_generation (did you mean num_generations?)"),
    ("verl.yaml", {**VERL, "actor_rollout_ref": {**VERL["actor_rollout_ref"],
                                                 "actor": {**VERL["actor_rollout_ref"]["actor"], "ppo_epoch": 4}}},
     "verl's config has no key actor_rollout_ref.actor.ppo_epoch (did you mean actor_rollout_ref.actor.ppo_epochs?)"),
])
def test_a_misspelt_key_is_one_line_naming_the_key_meant_and_exit_2(tmp_path, capsys, name, data, needle):
    """TRL's GRPOConfig refuses a field it does not have; read on, `learnig_rate: 1e-3` would answer for TRL's 1e-6."""
    assert main(["predict", "--config", write(tmp_path, name, data)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith(f"gspo-dynamics: error: {needle}: ") and "--allow-unknown" in captured.err


def test_allow_unknown_reads_on_and_names_the_key_in_the_first_lines(tmp_path, capsys):
    """--allow-unknown: exit 0, and the line after the verdict names the key not read, the next the default taken for
    the key it stood for; --json carries both at its top level."""
    path = write(tmp_path, "grpo.json", {**{k: v for k, v in TRL.items() if k != "learning_rate"}, "learnig_rate": 1e-3})
    assert main(["predict", "--config", path, "--allow-unknown"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("verdict: ")
    assert lines[1] == "unknown keys (not read, --allow-unknown): learnig_rate (did you mean learning_rate?)"
    assert lines[2] == "assumed, not in the config (TRL's defaults): learning_rate 1e-06, num_iterations 1, max_steps -1 " \
                       "(the run's length unknown: the lr schedule's decay over it is not read, every number uses the peak lr), " \
                       "processes 1 (--devices N gives yours: the groups per step rest on " \
                       "it, and T where generation_batch_size is given)"
    assert main(["predict", "--config", path, "--allow-unknown", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["unknown_keys"] == [{"key": "learnig_rate", "nearest": "learning_rate"}]
    assert report["assumed"][0] == {"key": "learning_rate", "value": 1e-6, "source": "TRL's default"}
    assert report["details"]["config"]["lr"] == 1e-6


def test_a_default_the_verdict_rests_on_is_said_in_the_first_lines(tmp_path, capsys):
    """A verl config without its lr, ppo_epochs and run length: the line after the verdict gives verl's defaults; a
    config that holds them all has no such line; --run-steps gives the length (with a pilot), so it is not assumed."""
    actor = {k: v for k, v in VERL["actor_rollout_ref"]["actor"].items() if k not in ("optim", "ppo_epochs")}
    bare = {**VERL, "actor_rollout_ref": {**VERL["actor_rollout_ref"], "actor": actor}}
    assert main(["predict", "--config", write(tmp_path, "verl.yaml", bare)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == ("assumed, not in the config (verl's defaults): actor_rollout_ref.actor.optim.lr 1e-06, "
                        "actor_rollout_ref.actor.ppo_epochs 1, trainer.total_training_steps unset (the run's length "
                        "unknown)")
    full = {**TRL, "num_iterations": 1, "max_steps": 200}
    assert main(["predict", "--config", write(tmp_path, "full.json", full), "--devices", "1"]) == 0
    assert not any(line.startswith(("assumed", "unknown keys")) for line in capsys.readouterr().out.splitlines())
    no_length = write(tmp_path, "no_length.json", {**TRL, "num_iterations": 1})
    assert main(["predict", "--config", no_length, "--pilot", pilot_log(tmp_path), "--run-steps", "200", "--devices",
                 "1"]) == 0
    assert not any(line.startswith("assumed") for line in capsys.readouterr().out.splitlines())


def test_run_steps_gives_the_schedule_the_run_length_the_config_leaves_unset(tmp_path, capsys):
    """A cosine decay with a warm-up ratio and no max_steps: with --run-steps (and a pilot) the schedule is read over
    that length, not said to be over a run of unknown length; the config's own max_steps stays the config's."""
    from gspo_dynamics.predict import read_run_config

    cfg = {**TRL, "lr_scheduler_type": "cosine", "warmup_ratio": 0.1}
    config = write(tmp_path, "cosine.json", cfg)
    assert main(["predict", "--config", config, "--pilot", pilot_log(tmp_path), "--run-steps", "200", "--explain"]) == 0
    out = capsys.readouterr().out
    assert "unknown" not in " ".join(line for line in out.splitlines() if "cosine" in line or "warm-up" in line)
    assert "note: lr schedule: linear warm-up over 20 steps, then cosine decay to 0 at step 200" in out
    assert read_run_config(cfg, run_steps=200).schedule.total == 200
    assert any("whose length is unknown here" in n for n in read_run_config(cfg).notes)  # without it: said unknown
    assert read_run_config({**cfg, "max_steps": 300}, run_steps=200).run_steps == 300  # the pilot says the two apart


def test_run_steps_beside_the_configs_own_length_keeps_its_schedule_and_says_whose_length_it_is(tmp_path, capsys):
    """max_steps 300 with a cosine decay, --run-steps 200 (a run stopped at a checkpoint): the forecast's window is the
    flag's, labelled as the flag, and the schedule stays the config's 300 steps (--help: the flag sets the schedule's
    length only where the config leaves it unset), said."""
    cfg = {**TRL, "lr_scheduler_type": "cosine", "warmup_ratio": 0.1, "max_steps": 300}
    config = write(tmp_path, "cosine.json", cfg)
    assert main(["predict", "--config", config, "--pilot", pilot_log(tmp_path), "--run-steps", "200", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["details"]["config"]["schedule"]["total"] == 300 and report["details"]["config"]["run_steps"] == 200
    assert any("not the config's 300; its lr schedule stays the config's, over 300 steps" in a
               for a in report["details"]["assumed"])
    assert main(["predict", "--config", config, "--pilot", pilot_log(tmp_path), "--run-steps", "200"]) == 0
    assert "(the run's last sixth, --run-steps 200)" in capsys.readouterr().out
    unset = write(tmp_path, "unset.json", {k: v for k, v in cfg.items() if k != "max_steps"})  # the flag's own length
    assert main(["predict", "--config", unset, "--pilot", pilot_log(tmp_path), "--run-steps", "200"]) == 0
    assert "(the run's last sixth, --run-steps 200)" in capsys.readouterr().out
    assert main(["predict", "--config", config, "--pilot", pilot_log(tmp_path), "--run-steps", "500", "--json"]) == 0
    longer = json.loads(capsys.readouterr().out)["details"]  # past the config's end: the run's own schedule was longer
    assert longer["config"]["schedule"]["total"] == 500 and any("read over the run's 500" in a for a in longer["assumed"])


def test_a_set_of_a_misspelt_value_is_refused_naming_the_nearest(tmp_path, capsys):
    """--set lr_scheduler_type=cosin: transformers refuses it; read on, the lr would be read as constant."""
    assert main(["predict", "--config", write(tmp_path, "grpo.json", TRL), "--set", "lr_scheduler_type=cosin"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith("gspo-dynamics: error: lr_scheduler_type 'cosin' is not one of transformers' "
                                   "schedulers (SchedulerType) (did you mean cosine?): linear, cosine, ")


def test_the_usage_shows_set_as_repeated_one_pair_each(capsys):
    """--set takes one KEY=VALUE and repeats (`--set a=1 b=2` is not two overrides): `[--set KEY=VALUE]...`."""
    with pytest.raises(SystemExit):
        main(["predict", "--help"])
    usage = capsys.readouterr().out
    assert "[--set KEY=VALUE]..." in usage and "KEY=VALUE ..." not in usage


def test_a_trl_cli_recipe_is_read(tmp_path, capsys):
    """A recipe for `trl grpo --config` / open-r1 holds ModelConfig's and the script's keys beside GRPOConfig's."""
    recipe = {**TRL, "model_name_or_path": "Qwen/Qwen2.5-Math-7B", "torch_dtype": "bfloat16",
              "attn_implementation": "flash_attention_2", "dataset_name": "open-r1/OpenR1-Math-220k",
              "dataset_prompt_column": "problem", "system_prompt": "Think.", "reward_funcs": ["accuracy", "format"]}
    assert main(["predict", "--config", write(tmp_path, "recipe.yaml", recipe)]) == 0
    assert "unknown keys" not in capsys.readouterr().out


def test_a_set_of_an_unknown_key_is_refused_as_the_files_key_is(tmp_path, capsys):
    """--set learnig_rate=3e-6 would change nothing: refused, naming the --set and the key meant."""
    path = write(tmp_path, "grpo.json", TRL)
    assert main(["predict", "--config", path, "--set", "learnig_rate=3e-6"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gspo-dynamics: error: TRL's GRPOConfig has no field --set learnig_rate (did you mean "
                          "learning_rate?)")
    assert main(["predict", "--config", path, "--set", "learnig_rate=3e-6", "--allow-unknown"]) == 0
    assert capsys.readouterr().out.splitlines()[1].startswith("unknown keys (not read, --allow-unknown): learnig_rate")


def test_diagnose_and_watch_refuse_a_misspelt_config_key_and_allow_it_on_request(tmp_path, capsys):
    """diagnose --config reads as predict does: a typo is one line and exit 2; --allow-unknown reads on and the
    report's read lines name the key and the defaults taken (the run's length is the log's: not said)."""
    config = write(tmp_path, "grpo.json", {**{k: v for k, v in TRL.items() if k != "learning_rate"}, "learnig_rate": 1e-3})
    log = pilot_log(tmp_path)
    assert main(["diagnose", log, "--config", config]) == 2
    assert "no field learnig_rate (did you mean learning_rate?)" in capsys.readouterr().err
    assert main(["diagnose", log, "--config", config, "--allow-unknown"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "config     unknown keys (not read, --allow-unknown): learnig_rate (did you mean learning_rate?)" in out
    assert "config     assumed, not in the config (TRL's defaults): learning_rate 1e-06, num_iterations 1, processes 1 " \
           "(--devices N gives yours: the groups per step rest on it, and T where generation_batch_size is given)" in out
    assert main(["diagnose", log, "--config", config, "--allow-unknown", "--lr", "1e-3"]) == 0
    assert "config     assumed, not in the config (TRL's defaults): num_iterations 1, processes 1" in capsys.readouterr().out
    assert main(["watch", log, "--config", config, "--exit-when-idle", "0"]) == 2
    assert "no field learnig_rate" in capsys.readouterr().err


def test_a_configs_logging_steps_numbers_a_console_pilots_rows(capsys, tmp_path):
    """A console pilot without step numbers is read on the config's logging_steps, as `diagnose --config` reads it:
    11 rows at logging_steps 5 are steps 5-55 of a 200-step run, not steps 1-11 of a run 18 times their length."""
    lines = [f"{{'loss': 0.01, 'reward': {0.2 + 0.5 * (1 - 0.9 ** k):.4f}, 'reward_std': 0.3, 'epoch': {k / 40:.3f}}}"
             for k in range(1, 12)]
    log = tmp_path / "pilot.log"
    log.write_text("\n".join(lines) + "\n")
    config = write(tmp_path, "grpo.json", {"learning_rate": 1e-6, "logging_steps": 5, "num_generations": 8,
                                           "max_steps": 200, "lr_scheduler_type": "constant"})
    assert main(["predict", "--config", config, "--pilot", str(log), "--json"]) == 0
    assert details(capsys.readouterr().out)["end_reward"]["ratio"] == pytest.approx(200 / 55)


def test_a_pilot_that_reaches_the_runs_end_is_refused(tmp_path, capsys):
    """A pilot whose points reach the config's max_steps is the whole run: its verdict would read its own future.
    One line, exit 2, naming --pilot-steps and diagnose; a fifth of it is a pilot."""
    t = np.arange(1, 101)
    log = tmp_path / "run.jsonl"
    log.write_text("".join(json.dumps({"step": int(s), "reward": float(0.8 - 0.6 * np.exp(-s / 30))}) + "\n" for s in t))
    config = write(tmp_path, "grpo.json", {"learning_rate": 1e-6, "num_generations": 8, "max_steps": 100})
    assert main(["predict", "--config", config, "--pilot", str(log)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "reach step 100, the run's end (max_steps 100)" in err and "diagnose" in err
    assert main(["predict", "--config", config, "--pilot", str(log), "--pilot-steps", "20"]) == 0
