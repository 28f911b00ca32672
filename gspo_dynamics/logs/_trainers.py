"""Which trainer, and which TRL release, wrote a log, read from its raw keys; what its `reward_std` measures there."""

from __future__ import annotations

from collections.abc import Iterable

from gspo_dynamics.logs._names import _strip


# ROLL's (alibaba/ROLL) actor workers log these beside verl-like names; verl logs actor/ppo_kl instead.
_ROLL_MARKS = frozenset({"actor/approxkl", "actor/policykl"})


def guess_trainer(raw_keys: Iterable[str]) -> str:
    """"trl", "verl", "roll", "openrlhf" or "unknown", from the raw key set: ROLL by the actor metrics its workers
    alone write (`actor/approxkl`, `actor/policykl`; it shares verl's `actor/` and `critic/` families), verl by those
    families, else the one trainer whose own key names the log holds (TRL's `reward_std`, a name many loops use, only beside
    transformers' Trainer's `epoch` and `learning_rate`); "unknown" where it holds none, or those of both OpenRLHF
    and TRL (a hand-written loop borrowing names from each: neither trainer's keys are the user's)."""
    keys = _strip(raw_keys)
    if keys & _ROLL_MARKS:
        return "roll"
    if any(k.startswith(("actor/", "critic/", "response_length/")) for k in keys):
        return "verl"
    openrlhf = bool(keys & {"policy_loss", "ppo_clip_ratio", "group_reward_std", "response_length"})
    trl_marks = {"frac_reward_zero_std", "completion_length", "clip_ratio"}
    hf_trainer = {"epoch", "learning_rate"} <= keys  # transformers' Trainer logs both on every training row
    trl = (bool(keys & trl_marks) or any(k.startswith(("rewards/", "completions/")) for k in keys)
           or ("reward_std" in keys and hf_trainer))
    return "unknown" if openrlhf == trl else "openrlhf" if openrlhf else "trl"


# Release in which a TRL GRPOTrainer key first appeared (checked against TRL's changelog);
# the newest key present bounds the version from below.
_TRL_KEY_SINCE = (
    ("entropy", "0.20"),
    ("frac_reward_zero_std", "0.18"),
    ("completions/mean_length", "0.17"),
    ("clip_ratio", "0.16"),
)
# `reward_std` is the mean of per-group stds up to TRL 0.26 and the std over the whole batch
# from 0.27: only a log that is provably older than 0.27 can be labelled.
_BATCH_STD_SINCE = (0, 27)


def guess_trl_version(raw_keys: Iterable[str]) -> str | None:
    """A version range such as ">=0.20" or "<0.17" for a TRL GRPO log, None when unknown."""
    keys = _strip(raw_keys)
    for key, since in _TRL_KEY_SINCE:
        if key in keys or any(k.startswith(key + "/") for k in keys):
            return ">=" + since
    if "completion_length" in keys:
        # < 0.16 when no clip ratio was logged (checked above), so also < 0.17.
        return "<0.16"
    return None


def trl_release_bound(version: str) -> tuple[str, tuple[int, ...]]:
    """A dated range of `guess_trl_version` ("<0.16", ">=0.20") as (its operator, its release as integers)."""
    operator = "<" if version.startswith("<") else ">="
    return operator, tuple(int(part) for part in version.removeprefix(operator).split("."))


def reward_std_kind(trainer: str, version: str | None) -> str:
    """"group_mean_std", "batch_std" or "unknown": what the log's `reward_std` measures."""
    if trainer == "trl" and version is not None:
        operator, bound = trl_release_bound(version)
        if operator == "<" and bound <= _BATCH_STD_SINCE:
            return "group_mean_std"
    return "unknown"
