"""diagnose and predict read the config a verl log printed at its start where no --config gives one
(`predict.setup_from_log`)."""

from __future__ import annotations

import json
import pprint

from gspo_dynamics.cli.main import main

RAY = "\x1b[36m(TaskRunner pid=7)\x1b[0m "


def _verl_log(path, config: dict, n: int = 60):
    printed = [RAY + line for line in pprint.pformat(config, width=70).splitlines()]
    rows = [f"{RAY}step:{s} - critic/score/mean:{0.2 + 0.5 * (1 - 0.95 ** s):.4f} - actor/entropy:{1.0 - s / 200:.3f}"
            f" - actor/ppo_kl:0.001 - response_length/mean:{300 + s}" for s in range(1, n + 1)]
    path.write_text("\n".join(["starting", *printed, *rows]) + "\n")
    return str(path)


def _config(n: int = 8, estimator: str = "grpo") -> dict:
    return {"actor_rollout_ref": {"actor": {"optim": {"lr": 3e-6}, "ppo_mini_batch_size": 64, "ppo_epochs": 1,
                                            "clip_ratio": 0.2, "a_newer_release_key": 1},
                                  "rollout": {"n": n}},
            "algorithm": {"adv_estimator": estimator}, "data": {"train_batch_size": 128},
            "trainer": {"total_training_steps": 300}}


def test_a_verl_log_gives_its_printed_config_as_the_runs_and_says_so(capsys, tmp_path):
    """The hyperparameters come from the dict verl printed (lr 3e-6, G 8, T 2 = 128 / 64), said in the answer's config
    line with the keys verl 0.9.1's schema lacks counted, not refused as typos; a flag still wins over it."""
    log = _verl_log(tmp_path / "train.log", _config())
    assert main(["diagnose", log]) == 0
    out = capsys.readouterr().out
    assert "config     read from the verl config the log printed at line 2 (--config FILE reads another); 1 of its " \
           "keys are not in verl 0.9.1's schema" in out
    assert main(["diagnose", log, "--json", "-T", "1"]) == 0
    hp = json.loads(capsys.readouterr().out)["hparams"]
    assert (hp["lr"], hp["group_size"], hp["refresh_interval"]) == (3e-6, 8, 1)
    assert main(["diagnose", log, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["hparams"]["refresh_interval"] == 2


def test_a_config_file_wins_over_the_printed_one_and_a_refused_printed_one_is_a_note(capsys, tmp_path):
    log = _verl_log(tmp_path / "train.log", _config())
    cfg = tmp_path / "grpo.json"
    cfg.write_text(json.dumps({"learning_rate": 5e-6, "num_generations": 4}))
    assert main(["diagnose", log, "--json", "--config", str(cfg)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["hparams"]["group_size"] == 4 and not any("printed" in n for n in report["notes"])
    one = _verl_log(tmp_path / "n1.log", _config(n=1))  # one response per prompt: no group to be relative to
    assert main(["diagnose", one, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["hparams"] is None
    assert any(n.startswith("config: the verl config the log printed at line 2 was not read (") for n in report["notes"])


def test_predict_takes_a_verl_pilots_printed_config_and_says_so(capsys, tmp_path):
    """`predict --pilot verl.log` without --config: the pilot's printed config is the run's (said on a config line and
    in --json's config_read), --set changes it; a pilot that printed none, or one the reader refuses, is the one
    error naming --config, with the reason."""
    pilot = _verl_log(tmp_path / "pilot.log", _config(), n=40)
    assert main(["predict", "--pilot", pilot]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("to tell: ") and out[2].startswith("config: read from the verl config the log printed at line 2")
    assert main(["predict", "--pilot", pilot, "--json", "--set", "actor_rollout_ref.rollout.n=16"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["config_read"][0].startswith("read from the verl config the log printed at line 2")
    assert report["details"]["config"]["group_size"] == 16
    bare = tmp_path / "bare.log"
    bare.write_text("\n".join(line for line in open(pilot).read().splitlines() if "step:" in line) + "\n")
    assert main(["predict", "--pilot", str(bare)]) == 2
    assert "give the run's config with --config" in capsys.readouterr().err
    one = _verl_log(tmp_path / "n1.log", _config(n=1), n=40)
    assert main(["predict", "--pilot", one]) == 2
    err = capsys.readouterr().err
    assert "(the verl config the log printed at line 2 was not read (" in err and "rollout.n must be >= 2" in err


def test_verls_printed_total_gives_the_runs_length_where_its_config_leaves_it_unset(capsys, tmp_path):
    """verl prints `Total training steps: N` once it has worked the length out (total_training_steps, else the epochs
    times the dataloader's batches); where the printed config leaves it unset, the pilot's forecast reads the run to
    that step, said on the config line; --run-steps still wins."""
    config = _config()
    del config["trainer"]["total_training_steps"]
    pilot = tmp_path / "pilot.log"
    text = open(_verl_log(pilot, config, n=40)).read().replace("starting\n", "starting\n" + RAY + "Total training steps: 200\n")
    pilot.write_text(text)
    assert main(["predict", "--pilot", str(pilot)]) == 0
    out = capsys.readouterr().out
    assert "trainer.total_training_steps 200 from its `Total training steps: 200` line" in out
    assert main(["predict", "--pilot", str(pilot), "--json", "--run-steps", "160"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["details"]["config"]["run_steps"] == 160 and "Total training steps" not in report["config_read"][0]
