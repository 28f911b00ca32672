"""Logs of algorithms other than group policy-gradient RL (DPO and its family, SFT, PPO with a value critic,
value-based RL), told by their keys, files that are not training logs at all (`untrained_rows`), and transformers'
end-of-training summary row: what `read_log` refuses or skips before naming."""

from __future__ import annotations

import re
from collections.abc import Iterable

from gspo_dynamics.logs._names import _EVAL_PREFIXES, _strip, canonical_name, is_eval_key

_PREFERENCE_KEYS = {"rewards/chosen", "rewards/rejected", "rewards/margins", "rewards/accuracies"}
_SFT_KEYS = {
    "loss",
    "learning_rate",
    "grad_norm",
    "epoch",
    "num_tokens",
    "mean_token_accuracy",
    "entropy",
    "step",
    "total_flos",
}
# what TRL's SFTTrainer logs beside a loss and nothing else does: a loss with no reward and neither of these is as
# likely a GRPO log exported without its reward column (audit s38b R6), said as a missing reward instead
_SFT_OWN = {"mean_token_accuracy", "num_tokens"}
_SUMMARY_KEYS = {
    "train_runtime",
    "train_samples_per_second",
    "train_steps_per_second",
    "train_loss",
    "total_flos",
    "runtime",
    "samples_per_second",
    "steps_per_second",
}


# a learned value function's own metrics (verl `critic/vf_loss`, `critic/values/mean`, `critic/vpred_mean`): PPO with
# a critic, whose advantages come from the value model, not from a group of completions
_VALUE_CRITIC = ("critic/vf_", "critic/values/", "critic/vpred",  # verl's critic
                 "loss/value_avg", "val/clipfrac", "val/vpred", "val/error", "val/mean_vpred")  # TRL's PPOTrainer
_VALUE_LOSS = "value_loss"  # Stable-Baselines3's PPO/A2C (`train/value_loss`, its namespace stripped), exactly: a
# loop's `value_loss_coef` is a setting, not a critic's reading
# an action-value method's own metrics (a Q-table's size, Q-values, a TD error: tabular Q-learning, DQN): no policy
# gradient at all; `q` and `td` as words of their own (`q_table_size`, `mean_q_value`, `td_error`, `target_q`)
_ACTION_VALUES = re.compile(r"(?i)(?:^|[_/\-. ])(?:q[_\-. ]?(?:table|values?|loss|target)"
                            r"|td[_\-. ]?(?:error|loss|target)|target[_\-. ]q)(?:$|[_/\-. ])")


def foreign_algorithm(raw_keys: Iterable[str]) -> str | None:
    """The name of an algorithm other than group policy-gradient RL whose log this is ("DPO", "KTO", "ORPO", "SFT",
    "PPO with a learned value critic", "value-based RL"), else None.

    Preference methods log `rewards/chosen`, `rewards/margins`, ...; SFT logs only loss-like
    keys and no reward of any kind, among them TRL SFTTrainer's own (`mean_token_accuracy`, `num_tokens`); PPO with a
    critic logs the value model's loss and values (Stable-Baselines3's `train/value_loss` too); Q-learning and DQN log
    their Q-table or Q-values and TD error (`q_table_size`, `q_values/mean`, `td_error`).
    """
    keys = _strip(raw_keys)
    critic = sorted(k for k in keys if k.startswith(_VALUE_CRITIC) or k == _VALUE_LOSS)
    if critic:
        return f"PPO with a learned value critic (its value model's {critic[0]!r})"
    learned_values = sorted(k for k in keys if _ACTION_VALUES.search(k))
    if learned_values:
        return f"value-based RL (Q-learning or DQN: {learned_values[0]!r})"
    if keys & _PREFERENCE_KEYS or any(k.startswith(("logps/", "logits/")) for k in keys):
        if "odds_ratio_loss" in keys or "log_odds_ratio" in keys:
            return "ORPO (a DPO-family preference method)"
        if "kl" in keys and not keys & {"rewards/margins", "rewards/accuracies"}:
            return "KTO (a DPO-family preference method)"
        return "DPO"
    train_keys = {k for k in keys if not k.startswith(_EVAL_PREFIXES)}
    if train_keys and train_keys <= _SFT_KEYS | _SUMMARY_KEYS and "loss" in train_keys and train_keys & _SFT_OWN:
        return "SFT"
    return None


# a training step's own readings, beside its reward: what every trainer logs and no evaluation record, results table or
# dataset has (docs/diagnose.md: none of the numbered non-training files in the repositories read)
TRAINING_READINGS = frozenset({"loss", "grad_norm", "learning_rate", "kl_ref", "kl_old_new", "entropy", "clip_frac",
                               "frac_zero_std"})


# an environment step's own record (gym's `done`, beside the `action` taken or the `observation` seen)
_EPISODE_KEYS = ({"done"}, {"action", "observation", "obs"})


def episode_rows(raw_keys: Iterable[str]) -> bool:
    """True for rows that are an agent's steps through one environment episode (a `done` flag beside the action taken
    or the observation seen) and carry none of a training step's readings (TRAINING_READINGS): an inference transcript
    (OpenEnv's `[STEP] {"step": 1, "action": ..., "reward": 0.07, "done": false}`, audit s38b R8), whose rewards are
    per action of one episode, not a training run's per-step means."""
    keys = {canonical_name(key) for key in raw_keys if not is_eval_key(key)}
    return all(keys & names for names in _EPISODE_KEYS) and not keys & TRAINING_READINGS


# a KL the names leave unread is still a training step's reading (`kl_penalty`, maybe beta x KL: `_vocabulary`)
_KL_WORD = re.compile(r"(?i)(?:^|[/_\-. ])kl(?:$|[/_\-. ])")


def untrained_rows(raw_keys: Iterable[str]) -> bool:
    """True for rows that carry none of a training step's own readings (TRAINING_READINGS, or a key naming a KL;
    evaluation keys aside) and no epoch (a trainer's count of passes over its data).
    Said of a file whose rows have no step either, it marks per-question records, evaluation results, a results
    table or a dataset (a `qid` and a `gold` column, a reward per item), which `read_log` refuses rather than read
    row numbers as steps and a per-item score as the reward."""
    return not any(canonical_name(key) in TRAINING_READINGS | {"epoch"} or _KL_WORD.search(key) is not None
                   for key in raw_keys if not is_eval_key(key))


def is_summary_row(keys: Iterable[str]) -> bool:
    """True for the end-of-training summary row of a transformers log (`train_runtime`, ...)."""
    if not isinstance(keys, (set, frozenset, type({}.keys()))):
        keys = set(keys)  # membership tests below: a dict's keys view needs no copy (runs per row)
    return "train_runtime" in keys or "train_loss" in keys
