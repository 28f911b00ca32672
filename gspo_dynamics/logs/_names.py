"""Metric names: raw keys -> the canonical names of a `RunLog`.

Every trainer spells the same quantity differently (TRL `kl`, verl `actor/kl_loss`, OpenRLHF
`train/kl`; TRL `completion_length` before v0.17, `completions/mean_length` after), and hand-written
loops in many more ways. `canonical_name` maps one raw key to one canonical name:

1. an evaluation key (`eval_`, `eval/`, `val/`, `val-core/`, `test/`, ...) is `eval/<name of the rest>`;
2. a trainer's own key in the tables below (after a `train/` prefix) has the table's name: the
   tables hold the keys a rule would misread or cannot read (verl's `actor/kl_loss` is the KL,
   TRL's `clip_ratio/region_mean` the clip fraction, the sampler/trainer mismatch metrics), and the
   trainer keys the rule also reads, which rank a trainer's key before a custom one;
3. a per-function reward key (`rewards/<fn>`, `rewards/<fn>/mean`) is `reward/<fn>`;
4. else the rule of `_vocabulary` (normalise the key to words, classify them) names it, or leaves
   it unread: keys it does not know are returned unchanged, so nothing a trainer logs is lost.

When several keys of one log have the same canonical name (`reward` and `reward_mean`, TRL `kl`
and verl `actor/kl_loss`), `resolve_names` gives the name to one of them by `name_rank`: a key
that already is the canonical name, then a trainer's own key, then a key the rule reads (the more
directly read first: `reward_mean` before `avg_reward`); a key without a namespace (`train/`,
`rollout/`, ...) before one with; then the key that sorts first. The others keep their raw names,
with a warning. A column map (`_columns`) overrides this. A log without any reward column whose one
reward-like column is a success rate (`accuracy`) has that column read as the reward, with a warning.

Also here: recognising the trainer, guessing the TRL version from its key set (the key sets
changed between releases; the file itself records no version), the meaning of `reward_std`
in that version. Logs of algorithms `diagnose` does not model (DPO, SFT, PPO with a critic): `_algorithms`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from gspo_dynamics.logs import _vocabulary

# Canonical names, in the order a report shows them. Besides these a RunLog may hold
# `eval/<name>` (evaluation metrics), `reward/<fn>` (one reward function's mean) and any
# unrecognised raw key under its original name (`unmapped/<key>` where that name is taken, and for an
# unread `reward/<x>` key, which names no reward function).
STANDARD_NAMES: tuple[str, ...] = (
    "reward",  # mean reward of the sampled completions
    "reward_std",  # reward spread; its meaning is `RunLog.reward_std_kind`
    "reward_min",  # the lowest reward of the step's completions
    "reward_max",  # ... and the highest (equal: every completion got the same reward, no group has a signal)
    "frac_zero_std",  # fraction of groups whose rewards are all equal (no learning signal)
    "entropy",  # mean token entropy of the policy
    "kl_ref",  # KL(pi || pi_ref) to the reference policy
    "kl_old_new",  # KL between the sampling (old) and the updated policy
    "clip_frac",  # fraction of importance ratios clipped
    "mean_length",  # mean completion length in tokens
    "truncation_rate",  # fraction of completions cut at the maximum length
    "grad_norm",
    "learning_rate",
    "loss",
    # train-inference mismatch (sampler vs trainer log-probs of the same tokens)
    "is_ratio_min",  # importance weight pi_train / pi_sampler: min ...
    "is_ratio_mean",  # ... mean ...
    "is_ratio_max",  # ... max; per token or per sequence by the correction's mode; TRL logs them after its
    # truncation or mask (a masked weight is 0), verl's min and max are before its truncation
    "logp_diff_mean",  # mean |log pi_train - log pi_sampler| over tokens, nats
    "logp_diff_max",  # its max over tokens
    "prob_diff_mean",  # mean |pi_train - pi_sampler| over tokens (probabilities, not log-probs)
    "prob_diff_max",
    "prob_diff_std",
    "mismatch_kl",  # E[log pi_sampler - log pi_train] over tokens (k1), nats
    "mismatch_k3_kl",  # E[r - 1 - log r], r = pi_train / pi_sampler (k3), nats
    "mismatch_chi2_token",  # E[r^2] - 1 over tokens
    "mismatch_chi2_seq",  # E[(prod_t r_t)^2] - 1 over sequences
)

# TRL (GRPOTrainer, all versions) and transformers' Trainer.
_TRL = {
    "reward": "reward",
    "reward_std": "reward_std",
    "frac_reward_zero_std": "frac_zero_std",
    "entropy": "entropy",
    "kl": "kl_ref",
    "clip_ratio/region_mean": "clip_frac",  # TRL >= 0.19: low + high clipping
    "clip_ratio": "clip_frac",  # TRL 0.16-0.18: one clip-ratio key
    "completions/mean_length": "mean_length",
    "completion_length": "mean_length",  # TRL < 0.17 (some versions log both: the newer key first)
    "completions/clipped_ratio": "truncation_rate",
    "grad_norm": "grad_norm",
    "learning_rate": "learning_rate",
    "loss": "loss",
    # with vLLM and vllm_importance_sampling_correction (TRL 1.x, grpo_trainer.py `_generate_and_score_completions`)
    "sampling/importance_sampling_ratio/min": "is_ratio_min",
    "sampling/importance_sampling_ratio/mean": "is_ratio_mean",
    "sampling/importance_sampling_ratio/max": "is_ratio_max",
    "sampling/sampling_logp_difference/mean": "logp_diff_mean",
    "sampling/sampling_logp_difference/max": "logp_diff_max",
}

# verl (trainer/ppo metric_utils); `critic/rewards/mean` (score after in-reward KL) is kept
# under its own name on purpose: it is not the task reward.
_VERL = {
    "critic/score/mean": "reward",
    "actor/pg_clipfrac": "clip_frac",
    "actor/ppo_kl": "kl_old_new",  # old vs new policy, not vs reference
    "actor/entropy": "entropy",
    "actor/entropy_loss": "entropy",  # the entropy value (workers/utils/losses.py), with or without actor/entropy
    "actor/kl_loss": "kl_ref",
    # the KL to the reference put into the reward (use_kl_in_reward): apply_kl_penalty, verl >= 0.3 and before
    "actor/reward_kl_penalty": "kl_ref",
    "critic/kl": "kl_ref",
    "response_length/mean": "mean_length",
    "response_length/clip_ratio": "truncation_rate",
    "actor/grad_norm": "grad_norm",
    "actor/lr": "learning_rate",
    "actor/pg_loss": "loss",
    # rollout vs actor log-probs: verl/utils/debug/metrics.py (|p_actor - p_rollout| on probabilities, despite the
    # name) and the rollout-correction diagnostics of verl/trainer/ppo/rollout_corr_helper.py (verl 0.9)
    "training/rollout_probs_diff_mean": "prob_diff_mean",
    "training/rollout_probs_diff_max": "prob_diff_max",
    "training/rollout_probs_diff_std": "prob_diff_std",
    "rollout_corr/kl": "mismatch_kl",
    "rollout_corr/k3_kl": "mismatch_k3_kl",
    "rollout_corr/chi2_token": "mismatch_chi2_token",
    "rollout_corr/chi2_seq": "mismatch_chi2_seq",
    "rollout_corr/rollout_is_min": "is_ratio_min",
    "rollout_corr/rollout_is_mean": "is_ratio_mean",
    "rollout_corr/rollout_is_max": "is_ratio_max",
}

# OpenRLHF (W&B / TensorBoard, after the `train/` prefix is removed).
_OPENRLHF = {
    "response_length": "mean_length",
    "policy_loss": "loss",
    "ppo_clip_ratio": "clip_frac",
    "group_reward_std": "reward_std",
    "entropy_loss": "entropy",  # OpenRLHF logs the entropy value under this name
}

# tinker-cookbook's RL loop (rl/metrics.py: `env/<tag>/...` per environment tag, `all` over them; `optim/...`).
_TINKER = {
    "env/all/reward/total": "reward",  # the mean total reward of the batch's episodes
    "env/all/ac_tokens_per_turn": "mean_length",  # the mean count of sampled (action) tokens per turn
    "optim/entropy": "entropy",
    "optim/lr": "learning_rate",
    "optim/kl_sample_train_v1": "mismatch_kl",  # mean(logp_sampler - logp_train) over tokens (k1)
}

_TABLE = {**_TRL, **_VERL, **_OPENRLHF, **_TINKER}
_TABLE_ORDER = {key: i for i, key in enumerate(_TABLE)}  # of two keys of one trainer, the earlier wins
_TRAINER_OF = {key: trainer for trainer, table in (("trl", _TRL), ("verl", _VERL), ("openrlhf", _OPENRLHF),
                                                   ("tinker", _TINKER)) for key in table}

# Prefixes that loggers put in front of training metrics (W&B/TensorBoard copies of TRL and
# OpenRLHF metrics use `train/`).
_TRAIN_PREFIXES = ("train/",)
# Prefixes of evaluation metrics: TRL `eval_`, W&B/TensorBoard `eval/`, verl `val-core/`, `val/`,
# hand-written loops `val_`, `test/`, `test_`, `validation/`.
_EVAL_PREFIXES = ("eval_", "eval/", "val-core/", "val-aux/", "val/", "val_", "validation/", "validation_",
                  "test/", "test_")


def is_eval_key(key: str) -> bool:
    """True for an evaluation metric's key (`eval_reward`, `val/acc`, `test/score`, ...)."""
    return any(key.startswith(prefix) and len(key) > len(prefix) for prefix in _EVAL_PREFIXES)


def canonical_name(key: str) -> str:
    """The canonical name of one raw metric key (unchanged when unknown).

    `eval_kl` -> `eval/kl_ref`; `train/reward` -> `reward`; `rewards/fmt/mean` -> `reward/fmt`;
    `critic/score/mean` -> `reward`; `rollout/reward_mean` -> `reward`; `token_entropy` ->
    `entropy`; `reward_max` -> itself (a statistic of the reward is not the reward).
    """
    return _lookup(key)[0]


# Tiers of `name_rank`, best first.
_EXACT, _TRAINER, _RULE = 0, 1, 2


def name_rank(key: str) -> tuple:
    """Sort key of a raw key among the keys of one log with the same canonical name (lowest wins).

    (tier, order, namespaced, key): the canonical name itself, then a trainer's key (the one earlier in
    its table: the newer of two spellings), then a key the rule reads (by `_vocabulary.classify`'s order:
    the more directly read first); a key without a namespace (`train/`, `rollout/`, ...) before one
    with; then by the key.
    """
    name, tier, order, prefixed = _lookup(key)
    return (_EXACT if name == key else tier, order, prefixed, key)


def reward_like(keys: Iterable[str]) -> list[str]:
    """The training keys of a log that look like a reward, most reward-like first (`_vocabulary.reward_like`);
    evaluation keys are left out."""
    return _vocabulary.reward_like(key for key in keys if not is_eval_key(key))


# A W&B chart's "Download CSV": columns "<run name> - <metric>", with "__MIN" / "__MAX" beside each (the band
# of a smoothed or grouped line: left as they are)
_WANDB_PANEL = re.compile(r"^.+? - (?P<metric>\S+)$")
_KNOWN = frozenset(STANDARD_NAMES)
_FUNCTION_PREFIX = "reward/"  # the names of reward functions' series
# Where a key that lost its canonical name cannot keep its raw name either (the name is taken), and where an
# unread `reward/...` key goes (that namespace is the reward functions').
DISPLACED_PREFIX = "unmapped/"


@lru_cache(maxsize=1 << 14)  # called per key, not per row; a log has few distinct keys
def _lookup(key: str) -> tuple[str, int, tuple, bool]:
    """(canonical name, tier, order within the tier, whether a namespace was removed)."""
    panel = _WANDB_PANEL.match(key)
    if panel and not panel["metric"].endswith(("__MIN", "__MAX")):
        found = _lookup(panel["metric"])
        if found[0] != panel["metric"] or panel["metric"] in _KNOWN:  # a metric the names know
            return found
    for prefix in _EVAL_PREFIXES:
        if key.startswith(prefix) and len(key) > len(prefix):
            name, tier, order, prefixed = _training_lookup(key[len(prefix) :])
            return "eval/" + name, tier, order, prefixed
    return _training_lookup(key)


def _training_lookup(key: str) -> tuple[str, int, tuple, bool]:
    """`_lookup` of a key without an evaluation prefix (`val/test_score/x` is `eval/test_score/x`, read once)."""
    prefixed = False
    for prefix in _TRAIN_PREFIXES:
        if key.startswith(prefix) and len(key) > len(prefix):
            key, prefixed = key[len(prefix) :], True
            break
    if key in _TABLE:
        return _TABLE[key], _TRAINER, (_TABLE_ORDER[key],), prefixed
    function = _vocabulary.reward_function(key)
    if function is not None:
        return "reward/" + function, _TRAINER, (), prefixed
    ruled = _vocabulary.classify(key)
    if ruled is not None:
        name, order, namespaced = ruled
        return name, _RULE, order, prefixed or namespaced
    if key.startswith(_FUNCTION_PREFIX):  # `reward/<fn>` names a reward function: `reward/valid_rate` is none
        return DISPLACED_PREFIX + key, _TRAINER, (), prefixed
    return key, _TRAINER, (), prefixed


def resolve_names(raw_keys: Iterable[str], chosen: dict[str, str] | None = None, eval_keys: Iterable[str] = (),
                  row_keys: Iterable[tuple] = ()) -> tuple[dict[str, str], list[str]]:
    """({raw key: final name} for every key of one log, warnings): one key per canonical name.

    chosen: {raw key: name} picked by the user (a column map); each wins its name outright.
    eval_keys, row_keys: the raw keys of the log's evaluation rows, and the key tuples of its training rows. A
    training key that the evaluation rows also log gives way to another candidate for its name, one logged in the
    same rows as it first (a loop that writes `reward` beside `mean_reward` in its rollout rows and `reward` in its
    evaluation rows too: the spelling the writer keeps for training is the training reward's).
    Otherwise the key of lowest `name_rank` gets the canonical name and the other candidates keep
    their raw keys (with a warning); a raw key that is itself taken as a name (a column `reward`
    when the map takes `reward` from another column) is kept as `unmapped/<key>`. Where no key is
    the reward by its name, the log's only success rate (`accuracy`), else its most reward-like key, is
    the reward, with a warning (`_success_rate_as_reward`).
    """
    raw_keys, shared = list(raw_keys), frozenset(eval_keys)
    beside = {key for keys in row_keys if not shared.isdisjoint(keys) for key in keys} if shared else set()
    chosen, warnings = _success_rate_as_reward(raw_keys, chosen or {})
    candidates: dict[str, list[str]] = {}
    for key in raw_keys:
        name = chosen.get(key) or canonical_name(key)
        candidates.setdefault(name, []).append(key)
    final: dict[str, str] = {}
    losers: list[tuple[str, str, str]] = []  # (key, the name it lost, the key that won it)
    for name, keys in candidates.items():
        picked = [key for key in keys if chosen.get(key) == name]
        if picked:
            winner = picked[0]
        elif shared.isdisjoint(keys):
            winner = min(keys, key=name_rank)
        else:
            winner = min(keys, key=lambda key: (key in shared, key not in beside, name_rank(key)))
        final[winner] = name
        losers += [(key, name, winner) for key in sorted(keys) if key != winner]
    taken = set(final.values())
    for key, name, winner in losers:
        kept = key
        while kept in taken:
            kept = DISPLACED_PREFIX + kept
        final[key] = kept
        taken.add(kept)
        if winner in chosen:
            if kept != key:
                warnings.append(f"the column map takes {name!r} from column {winner!r}; the log's "
                                f"own {key!r} column is kept as {kept!r}")
        elif not _one_trainers_keys(winner, key):  # a trainer that logs one quantity twice is no ambiguity
            warnings.append(f"columns {winner!r} and {key!r} could both be {name!r}: {winner!r} "
                            f"was used and {key!r} kept under its own name")
    return final, warnings


def _one_trainers_keys(a: str, b: str) -> bool:
    """Whether both keys are one trainer's own (TRL's `completion_length` and `completions/mean_length`)."""
    trainers = []
    for key in (a, b):
        key = next((key[len(p) :] for p in _EVAL_PREFIXES if key.startswith(p) and len(key) > len(p)), key)
        key = key.removeprefix(_TRAIN_PREFIXES[0])
        trainers.append(_TRAINER_OF.get(key))
    return trainers[0] is not None and trainers[0] == trainers[1]


def _success_rate_as_reward(raw_keys: list[str], chosen: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """(chosen, warnings) with a reward chosen where no key is one by its name: the log's sole success rate, else its
    most reward-like training key (`reward_like`: a total reward, a score), each said in a warning with the others; a
    log refuses only without any reward-like key."""
    if "reward" in chosen.values() or any(canonical_name(key) == "reward" for key in raw_keys):
        return chosen, []
    training = [key for key in raw_keys if not is_eval_key(key) and key not in chosen]
    sole = _vocabulary.sole_success_rate(training)
    if sole is not None:
        return {**chosen, sole: "reward"}, [
            f"no reward column was found: {sole!r}, the log's only column named as a reward or a success rate, is "
            "read as the reward (a success rate is the mean reward of a 0/1 reward); map another column to 'reward' if "
            "it is not"]
    ranked = reward_like(training)
    if not ranked:
        return chosen, []
    others = f" (then {', '.join(map(repr, ranked[1:4]))})" if len(ranked) > 1 else ""
    return {**chosen, ranked[0]: "reward"}, [
        f"no column is the mean reward by its name: {ranked[0]!r}, the most reward-like, is read as the reward"
        f"{others}; map another column to 'reward' if it is not"]


MIN_SIGNED = 8  # points: fewer negative values than this say nothing of a series' sign


def signed_kl(names: dict[str, str], series: dict, logged: dict) -> list[str]:
    """Warnings for a `kl_ref` series none of whose logged values is >= 0 (at least MIN_SIGNED of them), which is
    renamed back to its raw key in `names`, `series` and `logged` (in place): a divergence is >= 0 and so are its
    estimators' means over the policy's samples (k1's in expectation, k2 and k3 per token), so a column negative on
    every step is a signed log-ratio (a distillation reward, log teacher - log policy), not the KL to a reference."""
    values = series.get("kl_ref")
    if values is None:
        return []
    finite = values[values == values]  # NaN dropped
    if finite.size < MIN_SIGNED or (finite >= 0).any():
        return []
    key = next(key for key, name in names.items() if name == "kl_ref")
    kept = key
    while kept in series:
        kept = DISPLACED_PREFIX + kept
    names[key] = kept
    series[kept] = series.pop("kl_ref")
    if "kl_ref" in logged:
        logged[kept] = logged.pop("kl_ref")
    return [f"column {key!r} is negative on all {finite.size} of its steps, so it is not a KL divergence to the "
            "reference (a KL is >= 0): it is kept under its own name"]


# ---- the keys without their training prefixes (read by `_trainers`, `_algorithms`) ---------------------------


def _strip(keys: Iterable[str]) -> set[str]:
    out = set()
    for key in keys:
        for prefix in _TRAIN_PREFIXES:
            if key.startswith(prefix):
                key = key[len(prefix) :]
        out.add(key)
    return out
