"""OpenRLHF's PPO trainer arguments read as a config (`predict._openrlhf`): a launch script's `python3 -m
openrlhf.cli.train_ppo_ray --arg value ...` (often after `ray job submit ... --`), or a JSON / YAML dict of the same names.
The scripts are written here, in the shape OpenRLHF's examples give them."""

from __future__ import annotations

import json

import pytest

from gspo_dynamics import ConfigError
from gspo_dynamics._launch_script import openrlhf_arguments
from gspo_dynamics.predict import read_run_config
from gspo_dynamics.predict._openrlhf_fields import DEFAULTS, FLAT, KNOWN, READ, RENAMED, UNMODELLED

GRPO = """#!/bin/bash
set -x
N_SAMPLES=8
PROMPTS=64
ARGS="--actor_num_gpus_per_node 8
      --vllm_num_engines 4"
ray job submit --address="http://127.0.0.1:8265" \\
   --runtime-env-json='{"working_dir": "/openrlhf"}' \\
   -- python3 -m openrlhf.cli.train_ppo_ray \\
   --ref_num_nodes 1 $ARGS \\
   --colocate_all_models \\
   --pretrain Qwen/Qwen2.5-7B-Instruct \\
   --micro_train_batch_size 4 \\
   --train_batch_size $((PROMPTS * N_SAMPLES / 4)) \\
   --rollout_batch_size ${PROMPTS} \\
   --n_samples_per_prompt $N_SAMPLES \\
   --max_epochs 2 \\
   --advantage_estimator group_norm \\
   --actor_learning_rate=5e-7 \\
   --eps_clip_low_high 0.2 0.28 \\
   --init_kl_coef 0.001 \\
   --use_kl_loss \\
   --kl_estimator k3 \\
   --reward_clip_range -10 10 \\
   --use_wandb "$WANDB_TOKEN" "$@"
"""


def _script(tmp_path, text: str = GRPO, name: str = "train_grpo.sh"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_the_arguments_as_argparse_reads_them():
    args = openrlhf_arguments(GRPO)
    assert args["n_samples_per_prompt"] == "8" and args["train_batch_size"] == "128"  # $(( )) of the script's variables
    assert args["colocate_all_models"] is True and args["use_kl_loss"] is True  # a flag alone
    assert args["eps_clip_low_high"] == ["0.2", "0.28"] and args["reward_clip_range"] == ["-10", "10"]  # nargs 2
    assert args["actor_learning_rate"] == "5e-7" and args["vllm_num_engines"] == "4"  # --name=value; a string's words
    assert args["use_wandb"] == "$WANDB_TOKEN" and "$@" not in args.values()


def test_a_grpo_script_maps_onto_T_G_N_lr_clip_and_beta(tmp_path):
    """T = max_epochs x rollout_batch_size x n_samples_per_prompt / train_batch_size = 2 x 64 x 8 / 128 = 8 optimizer
    steps per rollout; N = train_batch_size / n_samples_per_prompt = 16 groups per step."""
    setup = read_run_config(_script(tmp_path))
    hp = setup.hparams
    assert setup.framework == "OpenRLHF" and setup.refresh_exact == 8.0 and hp.refresh_interval == 8
    assert (hp.group_size, hp.num_groups, hp.lr) == (8, 16, 5e-7)
    assert (hp.clip_low, hp.clip_high, hp.kl_coef) == (0.2, 0.28, 0.001)
    assert hp.advantage == "std" and hp.correction == "token" and hp.ratio_cap is None
    assert (hp.optimizer.beta1, hp.optimizer.beta2) == (0.9, 0.95)  # OpenRLHF's adam_betas default
    assert setup.keys.lr == "actor_learning_rate" and setup.keys.refresh_value(4) == 256  # --train_batch_size 256: T 4
    assert setup.keys.setting(setup.keys.run_length, 10) == "--max_samples 80 --num_episodes 1 (10 optimizer steps)"


def test_the_defaults_taken_are_said_as_openrlhfs(tmp_path):
    setup = read_run_config({"advantage_estimator": "dr_grpo", "n_samples_per_prompt": 4})
    notes = " | ".join(setup.notes)
    for key, default in (("rollout_batch_size", 1024), ("train_batch_size", 128), ("actor_learning_rate", 1e-6),
                         ("eps_clip", 0.2), ("adam_betas", [0.9, 0.95])):
        assert f"{key} not given: OpenRLHF's default {default!r}" in notes
    assumed = dict(setup.assumed)
    assert assumed["actor_learning_rate"] == 1e-6 and assumed["train_batch_size"] == 128 and assumed["max_steps"] is None
    assert setup.hparams.refresh_interval == 32 and setup.hparams.advantage == "mean"  # 1024 x 4 / 128; dr_grpo: r - mean
    assert setup.hparams.kl_coef == 0.0 and "init_kl_coef 0.01 without use_kl_loss" in notes  # a KL in the reward


@pytest.mark.parametrize("estimator, why", [("gae", "critic"), ("reinforce", "no group")])
def test_an_estimator_without_a_group_is_refused(tmp_path, estimator, why):
    with pytest.raises(ConfigError, match=f"advantage_estimator {estimator}: .*{why}.*not a group-relative advantage"):
        read_run_config(_script(tmp_path, GRPO.replace("group_norm", estimator)))
    with pytest.raises(ConfigError, match="OpenRLHF's default is gae"):
        read_run_config({"n_samples_per_prompt": 8, "rollout_batch_size": 32})


def test_an_unknown_argument_is_refused_with_its_nearest(tmp_path):
    with pytest.raises(ConfigError, match=r"has no argument max_epocs \(did you mean max_epochs\?\)"):
        read_run_config(_script(tmp_path, GRPO.replace("--max_epochs 2", "--max_epocs 2")))
    setup = read_run_config(_script(tmp_path, GRPO.replace("--max_epochs 2", "--max_epocs 2")), allow_unknown=True)
    assert setup.unknown == ("max_epocs",) and setup.hparams.refresh_interval == 4  # read on at max_epochs 1


def test_a_dict_with_or_without_dashes_and_set(tmp_path):
    path = tmp_path / "args.json"
    path.write_text(json.dumps({"--advantage_estimator": "rloo", "--n_samples_per_prompt": 4, "rollout_batch_size": 32,
                                "train_batch_size": 32, "policy_loss_type": "gspo", "dual_clip": 3.0}))
    setup = read_run_config(path, overrides=["n_samples_per_prompt=8"])
    hp = setup.hparams
    assert (hp.group_size, hp.refresh_interval, hp.num_groups) == (8, 8, 4)
    assert hp.correction == "sequence" and hp.ratio_cap == 3.0


def test_the_dotted_names_of_later_releases_read_as_the_flat_ones(tmp_path):
    text = ("python3 -m openrlhf.cli.train_ppo_ray --rollout.batch_size 128 --rollout.n_samples_per_prompt 8 "
            "--train.batch_size 256 --algo.advantage.estimator group_norm --actor.adam.lr 1e-6 --actor.eps_clip 0.25 "
            "--algo.dynamic_filtering_enable --train.colocate_all\n")
    setup = read_run_config(_script(tmp_path, text))
    assert setup.hparams.refresh_interval == 4 and setup.hparams.clip_high == 0.25 and setup.keys.lr == "actor.adam.lr"
    assert [u[0] for u in setup.unmodelled][0] == "algo.dynamic_filtering_enable"
    assert "actor.adam.betas not given" in " ".join(setup.notes)


def test_the_run_length_gives_openrlhfs_cosine_schedule(tmp_path):
    setup = read_run_config(_script(tmp_path), run_steps=300)
    s = setup.schedule
    assert setup.run_steps == 300 and (s.shape, s.warmup, s.total, s.floor) == ("cosine", 9, 300, 0.1)  # ceil(0.03 x 300)


def test_the_tables_hold_only_openrlhfs_names():
    assert set(RENAMED.values()) <= FLAT and set(DEFAULTS) <= KNOWN and READ <= KNOWN and set(UNMODELLED) <= FLAT


def test_a_command_inside_bash_c_ends_at_its_pipe_and_keeps_a_substitution():
    """A Slurm script runs the job inside `srun ... bash -c "... && ray job submit -- python3 -m ..."`; the command's
    arguments end at `2>&1 | tee`, while `&&` inside an unexpanded `$(cd ... && pwd)` is a value's."""
    text = ('WORK=$(cd "$(dirname "$0")/.." && pwd)\n'
            'srun -N1 bash -c "ray start --head && ray job submit -- python3 -m openrlhf.cli.train_ppo_ray \\\n'
            '  --save_path $WORK/ckpt --n_samples_per_prompt 4 --use_kl_loss 2>&1 | tee log.txt"\n')
    args = openrlhf_arguments(text)
    assert args["n_samples_per_prompt"] == "4" and args["use_kl_loss"] is True and "tee" not in str(args)
    assert args["save_path"] == "$(command)/ckpt"  # a command's output: one unknown word (`_launch_script`)


def test_an_abbreviation_of_one_argument_is_read_as_it_as_argparse_does():
    setup = read_run_config({"advantage_estimator": "group_norm", "n_samples": 4, "rollout_batch_size": 8,
                             "train_batch_size": 32})
    assert setup.hparams.group_size == 4 and "n_samples: read as n_samples_per_prompt" in " ".join(setup.notes)
    with pytest.raises(ConfigError, match="has no argument max_"):  # max_ begins several: argparse refuses it too
        read_run_config({"advantage_estimator": "group_norm", "n_samples_per_prompt": 4, "max_": 2})


def test_max_samples_bounds_the_run_length_it_does_not_fix():
    """len(prompts) = min(the dataset's, max_samples): the length is said as at most, never read (the schedule waits
    for max_steps)."""
    setup = read_run_config({"advantage_estimator": "group_norm", "n_samples_per_prompt": 8, "train_batch_size": 128,
                             "max_samples": 4000, "max_epochs": 2})
    assert setup.run_steps is None and setup.schedule is None
    assert "= 500, where the dataset holds max_samples = 4000 prompts" in " ".join(setup.notes)  # 4000 x 8 // 128 x 2


def test_a_run_outside_the_group_model_is_said_before_a_forks_own_arguments():
    """A fork's arguments (R1-Searcher's group_method) beside a critic's estimator: the estimator is the refusal
    that decides, said first; an argument that may be the estimator's own name misspelt keeps the typo first."""
    base = {"n_samples_per_prompt": 8, "rollout_batch_size": 16, "train_batch_size": 64, "actor_learning_rate": 1e-6}
    with pytest.raises(ConfigError, match="advantage_estimator gae: a critic's value baseline"):
        read_run_config(dict(base, advantage_estimator="gae", group_method="mine"))
    with pytest.raises(ConfigError, match="has no argument advantage_estimater"):
        read_run_config(dict(base, advantage_estimater="group_norm"))


def test_the_older_k3_flag_is_the_k3_estimator():
    cfg = {"n_samples_per_prompt": 8, "rollout_batch_size": 16, "train_batch_size": 64, "actor_learning_rate": 1e-6,
           "advantage_estimator": "group_norm", "use_kl_loss": True, "init_kl_coef": 0.01}
    assert any("kl_estimator k1 as the KL loss" in n for n in read_run_config(cfg).notes)
    older = read_run_config(dict(cfg, use_kl_estimator_k3=True))
    assert not any("as the KL loss" in n for n in older.notes) and older.hparams.kl_coef == 0.01


def test_a_pilot_of_a_run_whose_length_no_argument_holds_says_how_to_give_it():
    """OpenRLHF's trainer counts its steps from the dataset: the end reward's line names --set max_steps=N."""
    import numpy as np

    from gspo_dynamics.logs import RunLog
    from gspo_dynamics.predict import pilot_forecast, pilot_headline

    cfg = {"n_samples_per_prompt": 8, "rollout_batch_size": 16, "train_batch_size": 128, "actor_learning_rate": 1e-6,
           "advantage_estimator": "group_norm"}
    steps = np.arange(1, 41)
    reward = 0.7 - 0.4 * np.exp(-steps / 12) + 0.01 * np.random.default_rng(0).standard_normal(40)
    log = RunLog(steps=steps, series={"reward": reward}, format="jsonl", source="<synthetic>")
    text = pilot_headline(pilot_forecast(read_run_config(cfg), log)).lines()
    assert any("not forecast (its length is unknown: --set max_steps=N (OpenRLHF's trainer counts its steps from the "
               "dataset), or --run-steps)" in line for line in text)


NON_RAY = """deepspeed --module openrlhf.cli.train_ppo \\
   --pretrain OpenRLHF/Llama-3-8b-sft-mixture \\
   --train_batch_size 128 --micro_train_batch_size 2 \\
   --max_epochs 1 --n_samples_per_prompt 8 \\
   --advantage_estimator group_norm --actor_learning_rate 5e-7
"""


def test_the_trainer_before_ray_is_read_with_its_own_rollout_default(tmp_path):
    """`openrlhf.cli.train_ppo` (removed at 15d31511) takes train_ppo_ray's arguments, rollout_batch_size defaulting
    to 512 there (1024 under Ray): T = 1 x 512 x 8 / 128 = 32 where the script leaves it unset, said as assumed."""
    setup = read_run_config(_script(tmp_path, NON_RAY))
    assert setup.hparams.refresh_interval == 32 and ("rollout_batch_size", 512) in setup.assumed
    assert "rollout_batch_size 512 (openrlhf.cli.train_ppo's, the trainer before Ray)" in setup.brief_lines()[0]
    given = read_run_config(_script(tmp_path, NON_RAY), overrides=["rollout_batch_size=1024"])
    assert given.hparams.refresh_interval == 64 and "rollout_batch_size" not in dict(given.assumed)
    ray = read_run_config(_script(tmp_path, NON_RAY.replace("train_ppo ", "train_ppo_ray ")))
    assert ray.hparams.refresh_interval == 64 and ("rollout_batch_size", 1024) in ray.assumed


def test_the_kl_in_the_reward_is_named_among_the_unmodelled(tmp_path):
    """OpenRLHF subtracts init_kl_coef x KL from the reward unless --use_kl_loss (its default 0.01): beta 0 in the read
    line, and the penalty named in the first lines, not only in the notes."""
    setup = read_run_config(_script(tmp_path, NON_RAY))
    assert setup.hparams.kl_coef == 0.0 and ("init_kl_coef", 0.01) in {(k, v) for k, v, _ in setup.unmodelled}
    assert "init_kl_coef" not in {k for k, _, _ in read_run_config(_script(tmp_path)).unmodelled}  # use_kl_loss: beta


def test_r1_searchers_two_arguments_that_nothing_reads_are_known(tmp_path):
    """R1-Searcher's fork declares --group_method and --use_length_reward_in_efficiency and reads neither (631167c):
    read past, the config as it would be without them."""
    fork = GRPO.replace("--max_epochs 2", "--max_epochs 2 --group_method normal --use_length_reward_in_efficiency")
    setup, plain = read_run_config(_script(tmp_path, fork)), read_run_config(_script(tmp_path, GRPO, "plain.sh"))
    assert setup.unknown == () and setup.hparams == plain.hparams


def test_a_step_that_holds_part_of_a_group_is_said_first(tmp_path):
    """--train_batch_size 4 with --n_samples_per_prompt 8 (hustzhxie/grpo-prm's script): half a group per optimizer
    step, read as N = 1 and said in the first lines (the noise of 4 responses, not 8)."""
    text = GRPO.replace("--train_batch_size $((PROMPTS * N_SAMPLES / 4))", "--train_batch_size 4")
    setup = read_run_config(_script(tmp_path, text))
    line = next(x for x in setup.brief_lines() if x.startswith("N rounded: "))
    assert setup.hparams.num_groups == 1 and "0.5 groups of G = 8" in line and "4 responses, not 8" in line
    assert not any(x.startswith("N rounded") for x in read_run_config(_script(tmp_path, GRPO, "b.sh")).brief_lines())


def test_the_run_length_is_said_to_be_no_openrlhf_argument():
    """train_ppo_ray has no max_steps flag (audit s38c C5: said as unset, as if one were left out)."""
    from gspo_dynamics.predict import read_run_config

    setup = read_run_config({"advantage_estimator": "group_norm", "n_samples_per_prompt": 8, "rollout_batch_size": 128,
                             "train_batch_size": 128, "actor_learning_rate": 5e-7})
    line = next(line for line in setup.brief_lines() if line.startswith("assumed"))
    assert "max_steps unset (no OpenRLHF argument: train_ppo_ray works it out from the prompts' count; --run-steps N" in line


def test_a_kl_loss_with_a_kl_target_is_said_adaptive(tmp_path):
    """Under --use_kl_loss, a --kl_target makes OpenRLHF's AdaptiveKLController move beta each rollout (audit s39c 2:
    read as a fixed 0.1, unsaid): read at its start and said; an unresolved target is refused, not passed over."""
    setup = read_run_config(_script(tmp_path, GRPO.replace("--kl_estimator k3", "--kl_estimator k3 --kl_target 0.02")))
    assert setup.hparams.kl_coef == pytest.approx(0.001)
    assert any("with kl_target 0.02: an adaptive beta" in n for n in setup.notes)
    assert not any("adaptive beta" in n for n in read_run_config(_script(tmp_path)).notes)
    with pytest.raises(ConfigError, match="kl_target"):
        read_run_config(_script(tmp_path, GRPO.replace("--kl_estimator k3", "--kl_estimator k3 --kl_target $KL_T")))


def test_every_value_the_script_leaves_unset_is_named_at_once(tmp_path):
    """Hyperparameters set by `eval "$(python3 -c ...)"` are unknown to the script: one refusal names them all (audit
    s39c 7: four runs to learn four, the first called a misspelt estimator); a path left to the environment is not
    read, so it refuses nothing."""
    text = GRPO.replace("--advantage_estimator group_norm", "--advantage_estimator $EST").replace(
        "--actor_learning_rate=5e-7", "--actor_learning_rate=${LR} --save_path $HOME/ckpt")
    with pytest.raises(ConfigError, match=r"^the script does not set advantage_estimator \$EST, actor_learning_rate "
                                          r"\$\{LR\} \(its environment.*--set KEY=VALUE for each$"):
        read_run_config(_script(tmp_path, text))
    assert read_run_config(_script(tmp_path, GRPO.replace("--max_epochs 2", "--max_epochs 2 --save_path $HOME/c")))
