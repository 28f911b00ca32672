"""The rule that names metric keys (`logs/_vocabulary.py`), on the keys real trainers and loops log.

REAL_KEYS: keys taken from the trainers' logging code (TRL 1.16 `trainer/grpo_trainer.py`, verl 0.9
`trainer/ppo/metric_utils.py` and `workers/utils/losses.py`, OpenRLHF `trainer/ray/ppo_actor.py`,
ROLL `roll/utils/metrics/metrics_manager.py` and its actor workers, cleanrl `ppo.py`) and from
hand-written loops' logs (the real-log corpora), each with the name it must read as; a key read as
itself is one the rule must leave unread. NEVER_REWARD: statistics that are never the reward, nor a
reward function.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gspo_dynamics import ConfigError
from gspo_dynamics.logs import STANDARD_NAMES, ColumnMapError, canonical_name, read_log
from gspo_dynamics.logs import _vocabulary
from gspo_dynamics.logs._names import _TABLE, name_rank, resolve_names, reward_like

# (key, canonical name); the key itself where it must stay unread
REAL_KEYS = [
    # TRL GRPOTrainer (1.16)
    ("reward", "reward"), ("reward_std", "reward_std"), ("frac_reward_zero_std", "frac_zero_std"),
    ("rewards/accuracy_reward/mean", "reward/accuracy_reward"),
    ("rewards/accuracy_reward/std", "rewards/accuracy_reward/std"),
    ("rewards/xmlcount_reward_func", "reward/xmlcount_reward_func"),  # TRL < 0.17
    ("rewards/tag_count_reward/mean", "reward/tag_count_reward"),  # open-r1's reward functions
    ("rewards/len_reward/mean", "reward/len_reward"),
    ("rewards/repetition_penalty_reward/mean", "reward/repetition_penalty_reward"),
    ("entropy", "entropy"), ("kl", "kl_ref"), ("loss", "loss"), ("policy_loss", "loss"),
    ("grad_norm", "grad_norm"), ("learning_rate", "learning_rate"), ("clip_ratio", "clip_frac"),
    ("clip_ratio/region_mean", "clip_frac"), ("clip_ratio/low_mean", "clip_ratio/low_mean"),
    ("clip_ratio/high_max", "clip_ratio/high_max"), ("cispo_clip_ratio", "cispo_clip_ratio"),
    ("completion_length", "mean_length"), ("completions/mean_length", "mean_length"),
    ("completions/max_length", "completions/max_length"),
    ("completions/mean_terminated_length", "completions/mean_terminated_length"),
    ("completions/clipped_ratio", "truncation_rate"), ("num_tokens", "num_tokens"),
    ("entropy_coef", "entropy_coef"), ("epoch", "epoch"),
    ("eval_reward", "eval/reward"), ("eval_kl", "eval/kl_ref"), ("eval_loss", "eval/loss"),
    ("train/reward", "reward"), ("train/completions/mean_length", "mean_length"),
    # verl (PPO/GRPO metric_utils, dp actor, losses)
    ("critic/score/mean", "reward"), ("critic/score/max", "reward_max"), ("critic/score/min", "reward_min"), ("min_reward", "reward_min"),
    ("critic/rewards/mean", "critic/rewards/mean"),  # the score after the in-reward KL penalty
    ("critic/advantages/mean", "critic/advantages/mean"), ("critic/returns/mean", "critic/returns/mean"),
    ("critic/values/mean", "critic/values/mean"), ("critic/vf_loss", "critic/vf_loss"),
    ("critic/grad_norm", "critic/grad_norm"),  # the critic's, not the policy's
    ("critic/kl", "kl_ref"), ("actor/reward_kl_penalty", "kl_ref"),  # the KL put into the reward
    ("actor/reward_kl_penalty_coeff", "actor/reward_kl_penalty_coeff"), ("critic/kl_coeff", "critic/kl_coeff"),
    ("actor/entropy", "entropy"), ("actor/entropy_loss", "entropy"), ("actor/kl_loss", "kl_ref"),
    ("actor/kl_coef", "actor/kl_coef"),
    ("actor/ppo_kl", "kl_old_new"), ("actor/pg_clipfrac", "clip_frac"),
    ("actor/pg_clipfrac_lower", "actor/pg_clipfrac_lower"), ("actor/pg_loss", "loss"),
    ("actor/grad_norm", "grad_norm"), ("actor/lr", "learning_rate"),
    ("response_length/mean", "mean_length"), ("response_length/max", "response_length/max"),
    ("response_length/clip_ratio", "truncation_rate"), ("prompt_length/mean", "prompt_length/mean"),
    ("prompt_length/clip_ratio", "prompt_length/clip_ratio"),
    ("response_length_non_aborted/mean", "response_length_non_aborted/mean"),
    ("global_seqlen/mean", "global_seqlen/mean"), ("timing_s/gen", "timing_s/gen"),
    ("training/global_step", "training/global_step"),
    ("val-core/openai/gsm8k/acc/mean@1", "eval/openai/gsm8k/acc/mean@1"),
    ("val/test_score/countdown", "eval/test_score/countdown"),
    # OpenRLHF (W&B under train/)
    ("train/policy_loss", "loss"), ("train/actor_lr", "learning_rate"), ("train/entropy_loss", "entropy"),
    ("train/ppo_clip_ratio", "clip_frac"), ("train/ppo_kl", "kl_old_new"), ("train/kl", "kl_ref"),
    ("train/return", "return"), ("train/response_length", "mean_length"),
    ("train/total_length", "total_length"), ("train/group_reward_std", "reward_std"),
    ("train/vllm_kl", "vllm_kl"), ("gen_len", "mean_length"),
    # ROLL
    ("critic/entropy/mean", "entropy"), ("critic/correct/mean", "critic/correct/mean"),
    ("tokens/response_length/mean", "mean_length"), ("token/prompt_length/mean", "token/prompt_length/mean"),
    ("actor/approxkl", "kl_old_new"), ("actor/policykl", "actor/policykl"), ("actor/clipfrac", "clip_frac"),
    ("actor/total_loss", "actor/total_loss"), ("actor/weighted_pg_loss", "actor/weighted_pg_loss"),
    ("actor_train/grad_norm", "grad_norm"), ("actor/ratio_mean", "actor/ratio_mean"),
    ("critic/token_level_rewards_mean/mean", "critic/token_level_rewards_mean/mean"),
    # cleanrl / SB3-style
    ("losses/approx_kl", "kl_old_new"), ("losses/old_approx_kl", "losses/old_approx_kl"),
    ("losses/clipfrac", "clip_frac"), ("losses/entropy", "entropy"), ("losses/policy_loss", "loss"),
    ("losses/value_loss", "losses/value_loss"), ("charts/learning_rate", "learning_rate"),
    ("charts/episodic_return", "charts/episodic_return"),
    # hand-written loops (the real-log corpora)
    ("reward_mean", "reward"), ("mean_reward", "reward"), ("avg_reward", "reward"), ("rewards_avg", "reward"),
    ("Reward", "reward"), ("rollout/reward_mean", "reward"), ("train/rewards", "reward"),
    ("reward/mean", "reward"), ("rewards/mean", "reward"), ("score/mean", "reward"), ("avgReward", "reward"),
    ("group_reward_mean", "reward"), ("train_reward", "reward"), ("policy/reward", "reward"),
    ("reward_latest", "reward"),  # this step's reward, beside a moving average (`window_mean`)
    ("score", "score"), ("total_reward", "total_reward"), ("episode_reward", "episode_reward"),
    ("reward/selected_mean", "unmapped/reward/selected_mean"),  # `reward/` names are reward functions'
    ("reward/correctness_f", "reward/correctness_f"), ("reward/f_minus_g", "unmapped/reward/f_minus_g"),
    ("mean_question_reward", "mean_question_reward"),
    ("token_entropy", "entropy"), ("policy_entropy", "entropy"), ("policy/entropy", "entropy"),
    ("mean_token_entropy", "entropy"),
    ("KL", "kl_ref"), ("KL_ref", "kl_ref"), ("kl_avg", "kl_ref"), ("ref_kl", "kl_ref"), ("kl_loss", "kl_loss"),
    ("approxKL", "kl_old_new"), ("approx_kl", "kl_old_new"),
    ("avg_response_token_length", "mean_length"), ("mean_gen_tokens", "mean_length"),
    ("avg_gen_tokens", "mean_length"), ("max_gen_tokens", "max_gen_tokens"), ("Avg Response Len", "mean_length"),
    ("train/response_tokens/mean", "mean_length"), ("length/mean", "mean_length"), ("length", "length"),
    ("seq_len_mean", "mean_length"), ("truncated_count", "truncated_count"), ("truncation_rate", "truncation_rate"),
    ("is_truncated/mean", "truncation_rate"),
    ("clip_frac", "clip_frac"), ("train_loss", "loss"), ("lr", "learning_rate"), ("gradNorm", "grad_norm"),
    ("optim/lr", "learning_rate"), ("entropy_loss", "entropy"), ("ppo_kl", "kl_old_new"),
    ("approxkl", "kl_old_new"),
    ("policy/approxkl_avg", "kl_old_new"), ("policy/clipfrac_avg", "clip_frac"), ("objective/kl", "kl_ref"),
    ("objective/scores", "objective/scores"), ("mean_correct", "mean_correct"),
    ("epoch/mean_reward", "epoch/mean_reward"),
    ("accuracy", "accuracy"), ("success_rate", "success_rate"), ("advantage/zero_rate", "advantage/zero_rate"),
    ("val_loss", "eval/loss"), ("test/accuracy", "eval/accuracy"),
]

# statistics that are never the reward and never a reward function
NEVER_REWARD = [
    "reward/outcome_advantage_std", "reward/process_advantage_std", "rewards/fmt/std", "rewards/fmt/min",
    "reward_max", "reward_min", "max_reward", "reward/p95", "reward_p50", "reward_count", "num_rewards",
    "score/max", "score_min", "critic/score/max", "advantages/mean", "advantage/mean", "mean_adv",
    "returns/mean", "critic/returns/mean", "values/mean", "reward_loss", "reward_ratio_max",
    "reward/selected_std", "reward/valid_rate", "reward/hard_pass_rate", "reward/checker_failure_rate",
    "rewards/chosen_std", "reward_std_mean", "prompt/correctness_reward_std_mean", "reward_sum", "reward/total",
]


@pytest.mark.parametrize(("key", "name"), REAL_KEYS, ids=[k for k, _ in REAL_KEYS])
def test_each_real_key_reads_as_its_series(key, name):
    assert canonical_name(key) == name


def test_the_real_key_table_is_large_and_covers_every_series_of_the_model():
    assert len(REAL_KEYS) >= 80 and len({k for k, _ in REAL_KEYS}) == len(REAL_KEYS)
    read = {name for _, name in REAL_KEYS}
    core = set(STANDARD_NAMES) - {n for n in STANDARD_NAMES if n.startswith(("is_ratio", "logp_", "prob_", "mismatch"))}
    assert core <= read


@pytest.mark.parametrize("key", NEVER_REWARD)
def test_a_statistic_is_never_the_reward_nor_a_reward_function(key):
    name = canonical_name(key)
    assert name != "reward" and not name.startswith("reward/")  # an unread `reward/x` is `unmapped/reward/x`
    assert _vocabulary.reward_function(key) is None


REWARD_LIKE_NONETHELESS = ("reward/hard_pass_rate", "reward/total")  # a pass rate, a total reward


@pytest.mark.parametrize("key", [k for k in NEVER_REWARD if k not in REWARD_LIKE_NONETHELESS])
def test_a_statistic_or_a_share_of_anything_but_successes_is_never_reward_like(key):
    assert reward_like([key]) == []
    assert reward_like(REWARD_LIKE_NONETHELESS) == ["reward/total", "reward/hard_pass_rate"]


# the trainer keys the tables name that the rule leaves unread, each with the reason a table names it
TABLE_ONLY = {
    "clip_ratio/region_mean": "TRL >= 0.19: the low and high clipping together; `region` is no rule word",
    "actor/kl_loss": "verl's and ROLL's KL value; a bare `kl_loss` may be beta x KL",
    "actor/entropy_loss": "verl's entropy value; elsewhere an `entropy_loss` may be minus the entropy",
    "critic/kl": "verl's KL put into the reward; `critic/` is otherwise the value model's",
    "actor/reward_kl_penalty": "verl's KL put into the reward; a `kl_penalty` may be beta x KL",
    "entropy_loss": "OpenRLHF's entropy value; elsewhere (SB3) it is minus the entropy",
    "env/all/reward/total": "tinker-cookbook's mean over the batch's episodes; elsewhere a `reward/total` may be a sum",
    "env/all/ac_tokens_per_turn": "tinker-cookbook's mean sampled (action) tokens per turn; `ac` is no rule word",
}
RULE_NAMES = {rule.name for rule in _vocabulary.RULES}


@pytest.mark.parametrize("key", sorted(k for k, name in _TABLE.items() if name in RULE_NAMES))
def test_the_rule_reads_every_trainer_key_of_the_tables_but_the_exceptions(key):
    ruled = _vocabulary.classify(key)
    if key in TABLE_ONLY:
        assert ruled is None
    else:
        assert ruled is not None and ruled[0] == _TABLE[key]


@pytest.mark.parametrize(("key", "name"), [("Reward", "reward"), ("token_entropy", "entropy"),
                                           ("avg_response_token_length", "mean_length")])
@pytest.mark.parametrize("prefix", ["train/", "actor/", "rollout/", "policy/", "metrics/", "charts/", "train_"])
def test_namespaces_and_separators_do_not_change_the_reading(key, name, prefix):
    assert canonical_name(prefix + key) == name
    assert canonical_name(prefix + key.replace("_", "-")) == name
    assert canonical_name(prefix + key.replace("_", ".")) == name


def test_the_rule_is_cached_per_key():
    _vocabulary.classify.cache_clear()
    for _ in range(3):
        _vocabulary.classify("rollout/reward_mean_cached")
    info = _vocabulary.classify.cache_info()
    assert info.misses == 1 and info.hits == 2


def test_the_more_directly_read_key_wins_a_name():
    names, warnings = resolve_names(["avg_reward", "rollout/reward_mean", "reward_mean", "rewards"])
    assert names["reward_mean"] == "reward"
    assert all(names[k] == k for k in ("avg_reward", "rollout/reward_mean", "rewards"))
    assert len(warnings) == 3
    # a singular before a plural: a bare `rewards` is often the list of per-sample rewards
    assert name_rank("mean_reward") < name_rank("rewards")
    assert name_rank("response_length_mean") < name_rank("seq_len_mean")  # the completion before the sequence


def test_one_trainers_two_keys_for_a_quantity_give_it_to_the_newer_without_a_warning():
    names, warnings = resolve_names(["completion_length", "completions/mean_length", "actor/entropy_loss",
                                     "actor/entropy", "kl", "actor/kl_loss"])
    assert names["completions/mean_length"] == "mean_length" and names["actor/entropy"] == "entropy"
    assert names["kl"] == "kl_ref"
    assert warnings == ["columns 'kl' and 'actor/kl_loss' could both be 'kl_ref': 'kl' was used and "
                        "'actor/kl_loss' kept under its own name"]  # two trainers' keys: said


def test_reward_like_ranks_the_reward_then_scores_then_success_rates_then_returns():
    keys = ["episode_return", "accuracy", "combined_score", "reward/selected_mean", "reward/process_quality_mean",
            "reward/valid_rate", "reward/outcome_advantage_std", "loss", "eval_reward", "critic/returns/mean",
            "rewards/fmt/mean", "rewards/fmt/std"]
    assert reward_like(keys) == ["reward/selected_mean", "reward/process_quality_mean", "rewards/fmt/mean",
                                 "combined_score", "accuracy", "episode_return"]


@pytest.mark.parametrize("key", ["accuracy", "success_rate", "correct", "train/acc", "is_correct", "batch_accuracy"])
def test_a_sole_success_rate_is_the_reward_with_a_warning(key):
    rows = [{"step": i + 1, key: r, "loss": 0.1} for i, r in enumerate(np.linspace(0.1, 0.8, 12))]
    log = read_log("\n".join(json.dumps(row) for row in rows))
    assert log.n_points("reward") == 12 and log["reward"][-1] == pytest.approx(0.8)
    assert any(f"{key!r}, the log's only column named as a reward or a success rate, is read as the reward" in w for w in log.warnings)


@pytest.mark.parametrize("keys", [("accuracy", "score"), ("accuracy", "format_reward"), ("score",),
                                  ("final_answer_accuracy",), ("reward/selected_mean",), ("env/math/reward/total",)])
def test_without_a_reward_by_name_the_most_reward_like_column_is_read_and_said(keys):
    rows = [{"step": i + 1, **{k: 0.1 * i for k in keys}, "loss": 0.1} for i in range(12)]
    log = read_log("\n".join(json.dumps(row) for row in rows))
    best = reward_like(keys)[0]
    assert log.columns["reward"] == best and log.n_points("reward") == 12
    assert any(repr(best) in w and "read as the reward" in w for w in log.warnings)


def test_a_log_with_nothing_reward_like_is_refused_with_the_plain_hint():
    rows = [{"step": i + 1, "goodness": 0.1 * i, "loss": 0.1} for i in range(12)]
    with pytest.raises(ColumnMapError) as error:
        read_log("\n".join(json.dumps(row) for row in rows))
    assert "map one with --map reward=COLUMN" in error.value.render(cli=True)
    assert "reward-like" not in str(error.value)


def test_a_reward_column_without_numbers_is_named_and_another_offered():
    rows = [{"step": i + 1, "rewards": [0.0, 1.0], "score": 0.1 * i} for i in range(12)]
    said = r"column 'rewards' holds no numbers\); the most reward-like column is 'score'"
    with pytest.raises(ConfigError, match=said):
        read_log("\n".join(json.dumps(row) for row in rows))


WORDS = st.sampled_from(["reward", "rewards", "score", "mean", "avg", "train", "rollout", "actor", "critic", "policy",
                         "entropy", "kl", "length", "response", "token", "acc", "format", "group", "advantage", "fn"])


@settings(max_examples=300, deadline=None)
@given(st.lists(WORDS, min_size=1, max_size=4), st.sampled_from(["std", "min", "max", "p95", "count", "var"]),
       st.sampled_from(["_", "/", "-", "."]))
def test_no_statistic_but_the_mean_of_any_key_is_a_reward(parts, stat, sep):
    for key in (sep.join([*parts, stat]), sep.join([stat, *parts])):
        name = canonical_name(key)
        assert name != "reward" and not name.startswith("reward/"), key
        assert reward_like([key]) == []


@settings(max_examples=300, deadline=None)
@given(st.lists(WORDS, min_size=1, max_size=4))
def test_the_separators_and_camel_case_do_not_change_the_reading(parts):
    snake = "_".join(parts)
    camel = parts[0] + "".join(p.capitalize() for p in parts[1:])
    ruled = _vocabulary.classify(snake)
    for key in (".".join(parts), "-".join(parts), camel, " ".join(parts)):
        other = _vocabulary.classify(key)
        assert (other and other[0]) == (ruled and ruled[0]), (snake, key)


def test_the_task_accuracy_beside_a_format_accuracy_is_the_reward():
    rows = [{"step": i + 1, "train_answer_accuracy": 0.05 * i, "train_format_accuracy": 0.5, "loss": 0.1}
            for i in range(12)]
    log = read_log("\n".join(json.dumps(row) for row in rows))
    assert log.columns["reward"] == "train_answer_accuracy"
