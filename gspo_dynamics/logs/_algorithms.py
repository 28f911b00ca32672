"""Logs of algorithms other than group policy-gradient RL (DPO and its family, SFT, PPO with a value critic), told
by their keys, and transformers' end-of-training summary row: what `read_log` refuses or skips before naming."""

from __future__ import annotations

from collections.abc import Iterable

from gspo_dynamics.logs._names import _EVAL_PREFIXES, _strip

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
_VALUE_CRITIC = ("critic/vf_", "critic/values/", "critic/vpred")


def foreign_algorithm(raw_keys: Iterable[str]) -> str | None:
    """The name of an algorithm other than group policy-gradient RL whose log this is ("DPO", "KTO", "ORPO", "SFT",
    "PPO with a learned value critic"), else None.

    Preference methods log `rewards/chosen`, `rewards/margins`, ...; SFT logs only loss-like
    keys and no reward of any kind; PPO with a critic logs the value model's loss and values.
    """
    keys = _strip(raw_keys)
    if any(k.startswith(_VALUE_CRITIC) for k in keys):
        return "PPO with a learned value critic (critic/vf_loss, critic/values)"
    if keys & _PREFERENCE_KEYS or any(k.startswith(("logps/", "logits/")) for k in keys):
        if "odds_ratio_loss" in keys or "log_odds_ratio" in keys:
            return "ORPO (a DPO-family preference method)"
        if "kl" in keys and not keys & {"rewards/margins", "rewards/accuracies"}:
            return "KTO (a DPO-family preference method)"
        return "DPO"
    train_keys = {k for k in keys if not k.startswith(_EVAL_PREFIXES)}
    if train_keys and train_keys <= _SFT_KEYS | _SUMMARY_KEYS and "loss" in train_keys:
        return "SFT"
    return None


def is_summary_row(keys: Iterable[str]) -> bool:
    """True for the end-of-training summary row of a transformers log (`train_runtime`, ...)."""
    if not isinstance(keys, (set, frozenset, type({}.keys()))):
        keys = set(keys)  # membership tests below: a dict's keys view needs no copy (runs per row)
    return "train_runtime" in keys or "train_loss" in keys
