"""Custom metric names and the precedence rule when several columns could be one series."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gspo_dynamics import ConfigError
from gspo_dynamics.logs import STANDARD_NAMES, canonical_name, read_log
from gspo_dynamics.logs._names import _TABLE, is_eval_key, name_rank, resolve_names
from gspo_dynamics.logs._trainers import guess_trainer

REWARDS = [0.1, 0.2, 0.4, 0.5, 0.6, 0.65, 0.7, 0.72, 0.73, 0.74]
OTHER = [0.9 - r for r in REWARDS]  # a second, different series
# the names of hand-written loops that an exact-string table once listed: the rule reads them all
CUSTOM_NAMES = {
    "reward": ("reward_mean", "mean_reward", "avg_reward", "reward_avg", "average_reward",
               "reward/mean", "rewards/mean"),
    "reward_std": ("std_reward", "reward/std", "rewards/std"),
    "entropy": ("policy_entropy", "mean_entropy", "entropy_mean", "entropy/mean"),
    "kl_ref": ("ref_kl", "kl_ref_mean", "kl_mean", "mean_kl", "kl/mean", "kl_div", "kl_divergence"),
    "kl_old_new": ("approx_kl", "losses/approx_kl"),  # cleanrl / SB3: old vs new policy
    "clip_frac": ("clipfrac", "clip_fraction", "losses/clipfrac"),
    "mean_length": ("response_length_mean", "mean_response_length", "avg_response_length",
                    "mean_completion_length", "completion_length_mean", "avg_length",
                    "length_mean"),
    "truncation_rate": ("truncated_frac", "frac_truncated", "truncation_frac"),
    "grad_norm": ("gradient_norm",),
    "learning_rate": ("lr",),
}
CUSTOM = [(alias, name) for name, aliases in CUSTOM_NAMES.items() for alias in aliases]


@pytest.mark.parametrize(("alias", "name"), CUSTOM)
def test_every_custom_name_is_recognised_with_and_without_prefixes(alias, name):
    assert canonical_name(alias) == name
    assert canonical_name("train/" + alias) == name
    assert canonical_name("eval/" + alias) == "eval/" + name


def test_tinker_cookbooks_keys_and_nano_aha_moments_reward_functions():
    """tinker-cookbook's RL metrics (rl/metrics.py) and nano-aha-moment's `train/reward_metrics/<fn>`; a tinker test
    row's keys (`test/env/all/...`) are evaluation keys."""
    assert [canonical_name(k) for k in ("env/all/reward/total", "env/all/ac_tokens_per_turn", "optim/entropy",
                                        "optim/lr", "optim/kl_sample_train_v1")] == \
        ["reward", "mean_length", "entropy", "learning_rate", "mismatch_kl"]
    assert canonical_name("test/env/all/reward/total") == "eval/reward"
    assert canonical_name("train/reward_metrics/format_reward") == "reward/format_reward"
    assert canonical_name("reward_metrics/mean") != "reward/mean"


def test_custom_names_are_not_trainer_keys_nor_other_canonical_names():
    aliases = [alias for alias, _ in CUSTOM]
    assert len(aliases) == len(set(aliases))
    assert not set(aliases) & set(_TABLE)
    assert not set(aliases) & set(STANDARD_NAMES)
    assert set(CUSTOM_NAMES) <= set(STANDARD_NAMES)


@pytest.mark.parametrize(
    ("raw", "name"),
    [
        ("rewards/fmt/mean", "reward/fmt"),  # one TRL reward function, not the total
        ("rewards/fmt", "reward/fmt"),
        ("rewards/fmt/std", "rewards/fmt/std"),
        ("rewards/mean", "reward"),
        ("rewards/std", "reward_std"),
        ("critic/rewards/mean", "critic/rewards/mean"),  # verl: after the in-reward KL
        ("return", "return"),  # may include a KL penalty: needs a map
        ("episode_reward", "episode_reward"),
        ("score", "score"),
        ("kl_loss", "kl_loss"),
    ],
)
def test_ambiguous_and_per_function_names_are_not_the_reward(raw, name):
    assert canonical_name(raw) == name


def test_preference_logs_with_custom_names_are_still_refused():
    rows = [{"step": i, "reward_mean": 0.1, "rewards/chosen": 0.1, "rewards/rejected": -0.1,
             "rewards/margins": 0.2} for i in range(3)]
    with pytest.raises(ConfigError, match="DPO"):
        read_log("\n".join(json.dumps(row) for row in rows))


def test_name_rank_orders_exact_then_trainer_then_custom_then_prefixed():
    ranked = sorted(["avg_reward", "train/reward", "reward_mean", "reward", "train/reward_mean"],
                    key=name_rank)
    assert ranked == ["reward", "train/reward", "reward_mean", "train/reward_mean", "avg_reward"]
    assert name_rank("kl") < name_rank("kl_div")  # TRL's key before a custom one


def _csv(columns: dict[str, list[float]]) -> str:
    names = list(columns)
    lines = [",".join(["step", *names])]
    lines += [",".join([str(i + 1)] + [str(columns[n][i]) for n in names]) for i in range(len(REWARDS))]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("order", [("reward", "reward_mean"), ("reward_mean", "reward")])
def test_the_canonical_column_wins_whatever_the_column_order(order):
    values = {"reward": REWARDS, "reward_mean": OTHER}
    log = read_log(_csv({name: values[name] for name in order}))
    np.testing.assert_array_equal(log["reward"], REWARDS)
    np.testing.assert_array_equal(log["reward_mean"], OTHER)  # the loser keeps its raw name
    assert any("'reward' and 'reward_mean' could both be 'reward'" in w for w in log.warnings)
    assert not any("twice" in w for w in log.warnings)


def test_among_custom_names_the_earlier_in_the_table_wins():
    log = read_log(_csv({"avg_reward": OTHER, "reward_mean": REWARDS}))
    np.testing.assert_array_equal(log["reward"], REWARDS)
    np.testing.assert_array_equal(log["avg_reward"], OTHER)


def test_precedence_holds_across_rows_with_different_keys():
    # one key per row (as TensorBoard scalars): the rule is per log, not per row
    rows = [{"step": i + 1, key: value} for i, (r, o) in enumerate(zip(REWARDS, OTHER))
            for key, value in (("mean_reward", o), ("reward", r))]
    log = read_log("\n".join(json.dumps(row) for row in rows))
    np.testing.assert_array_equal(log["reward"], REWARDS)
    np.testing.assert_array_equal(log["mean_reward"], OTHER)
    assert not any("logged twice" in w for w in log.warnings)


def test_resolve_names_is_one_to_one_and_a_choice_displaces_the_canonical_column():
    keys = ["reward", "score", "kl_div", "kl", "reward_mean"]
    names, warnings = resolve_names(keys, {"score": "reward"})
    assert names["score"] == "reward" and names["reward"] == "unmapped/reward"
    assert names["kl"] == "kl_ref" and names["kl_div"] == "kl_div"
    assert names["reward_mean"] == "reward_mean"  # lost to the choice, keeps its raw name
    assert len(set(names.values())) == len(keys)
    assert any("kept as 'unmapped/reward'" in w for w in warnings)


def test_a_wandb_chart_csv_names_its_columns_run_dash_metric():
    """W&B's chart "Download CSV": "<run> - train/reward" is the reward, "<run> - kl" the KL; the __MIN / __MAX band
    columns and a " - " key whose metric part is unknown keep their own names."""
    assert canonical_name("qwen-grpo-run-7 - train/reward") == "reward"
    assert canonical_name("run a - train/kl") == canonical_name("train/kl")
    assert canonical_name("qwen-grpo-run-7 - train/reward__MIN") == "qwen-grpo-run-7 - train/reward__MIN"
    assert canonical_name("budget - remaining") == "budget - remaining"
    text = "Step,r7 - train/reward,r7 - train/reward__MIN,r7 - train/reward__MAX\n" + "".join(
        f"{s},{0.1 + 0.01 * s},{0.1 + 0.01 * s},{0.1 + 0.01 * s}\n" for s in range(1, 21))
    log = read_log(text)
    assert log.n_points("reward") == 20 and log["reward"][0] == pytest.approx(0.11)


@pytest.mark.parametrize("key", ["eval_reward", "eval/kl", "val/acc", "val-core/gsm8k/acc/mean@1", "val_loss",
                                 "test/score", "test_accuracy", "validation/reward"])
def test_evaluation_keys_are_told_by_their_prefix(key):
    assert is_eval_key(key) and canonical_name(key).startswith("eval/")


@pytest.mark.parametrize("key", ["reward", "value_loss", "val", "eval_", "evaluation_time", "testing_reward"])
def test_training_keys_are_not_evaluation_keys(key):
    assert not is_eval_key(key)


def test_a_success_rate_is_the_reward_only_without_a_reward_a_map_or_a_more_reward_like_key():
    assert resolve_names(["accuracy", "loss"])[0]["accuracy"] == "reward"
    assert resolve_names(["accuracy", "reward_mean"])[0]["accuracy"] == "accuracy"  # a reward exists
    assert resolve_names(["accuracy", "score"], {"score": "reward"})[0]["accuracy"] == "accuracy"  # the map's
    names, warnings = resolve_names(["accuracy", "episode_return"])  # two candidates: the most reward-like, said
    assert names["accuracy"] == "reward" and "(then 'episode_return')" in warnings[0]
    assert resolve_names(["score", "accuracy"])[0]["score"] == "reward"  # a score ranks before a success rate
    assert resolve_names(["eval/accuracy", "loss"]) == ({"eval/accuracy": "eval/accuracy", "loss": "loss"}, [])


def test_a_rule_read_key_loses_to_a_trainer_key_and_both_to_the_map():
    names, warnings = resolve_names(["train/kl", "kl_divergence", "my_kl"], {"my_kl": "kl_ref"})
    assert names == {"my_kl": "kl_ref", "train/kl": "train/kl", "kl_divergence": "kl_divergence"}
    assert not warnings  # the map's choice displaces no column of the same name
    assert name_rank("train/kl") < name_rank("kl_divergence") < name_rank("rollout/kl_divergence")


def test_the_columns_read_are_the_same_whatever_the_hash_seed(tmp_path):
    """Two keys that could both be a name with one rank (`kl` and `kl_ref`), among many columns: which one wins, the
    warnings and the order of the columns listed do not follow Python's string hashing (a set's order), so
    `diagnose --json` of a log prints the same bytes on every run."""
    import subprocess
    import sys

    rows = [{"step": i, "reward": i / 40, "kl": 0.01, "kl_ref": 0.02, "completion_length": 50, "grad_norm": 1.0,
             "entropy": 0.5, "loss": 0.0, "learning_rate": 1e-6, "rewards/a/mean": 0.1, "rewards/b/mean": 0.2}
            for i in range(1, 41)]
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    probe = ("import sys; from gspo_dynamics.logs import read_log; log = read_log(sys.argv[1]); "
             "print(list(log.columns.items()), log.unread, log.warnings)")
    seen = {subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True, check=True,
                           env={**__import__("os").environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2", "3")}
    assert len(seen) == 1, seen


@pytest.mark.parametrize("keys, trainer", [
    ({"critic/score/mean", "actor/entropy", "group_reward_std"}, "verl"),
    ({"critic/score/mean", "actor/pg_clipfrac", "actor/ppo_kl", "actor/pg_loss"}, "verl"),
    # ROLL shares verl's actor/ family; its workers alone log approxkl and policykl (audit s37 L04)
    ({"actor/approxkl", "actor/policykl", "actor/pg_loss", "actor_train/grad_norm", "reward/selected_mean"}, "roll"),
    ({"critic/score/mean", "actor/approxkl", "actor/ppo_ratio_clipfrac"}, "roll"),
    ({"reward", "policy_loss", "response_length", "ppo_clip_ratio"}, "openrlhf"),
    ({"reward", "reward_std", "frac_reward_zero_std", "completions/mean_length"}, "trl"),
    ({"train/reward", "train/reward_std", "train/epoch", "train/learning_rate"}, "trl"),
    # a hand-written loop naming its columns after both (audit A8/A9): neither trainer's keys are the user's
    ({"reward", "reward_std", "frac_reward_zero_std", "group_reward_std", "avg_gen_tokens"}, "unknown"),
    ({"step", "avg_reward", "loss"}, "unknown"),
    # reward_std alone is a name many loops use: TRL's only beside transformers' Trainer's epoch and learning_rate
    ({"step", "reward_mean", "reward_std", "loss"}, "unknown"),
    ({"reward", "reward_std", "loss", "epoch", "learning_rate", "grad_norm"}, "trl"),
])
def test_the_trainer_is_named_only_from_its_own_keys(keys, trainer):
    assert guess_trainer(keys) == trainer
