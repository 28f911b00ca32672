"""The rule that names a metric key: normalise the key to words, then classify the words.

Trainers and hand-written loops spell one quantity many ways (`reward`, `train/rewards`,
`rollout/reward_mean`, `avgReward`, `critic/score/mean`; `token_entropy`, `policy/entropy`;
`avg_response_token_length`, `completions/mean_length`, `mean_gen_tokens`). Instead of a list of
exact strings, a key is

1. normalised (`parse`): camelCase and the separators `/ _ - . space` split it into lowercase
   words; plurals are made singular (`rewards` -> `reward`, but `returns` stays: see below) and
   synonyms unified (`avg`, `average` -> `mean`; `len` -> `length`; `gradient` -> `grad`;
   `fraction` -> `frac`; `zero std` -> `zerostd`); leading namespaces are dropped (`train`,
   `training`, `actor`, `rollout`, `policy`, `metrics`, `charts`, `losses`, `objective`, `optim`;
   `critic` only before `score` or `entropy`, because verl's `critic/rewards/mean` is the score after
   its in-reward KL penalty, not the task reward); the words that say whose length or entropy it is are set aside as
   qualifiers (`response`, `completion`, `gen`, `token`, ...); a statistic word at either end is the
   key's statistic (`mean`, `std`, `min`, `max`, `p95`, `count`, ...); the rest is its core, a set.
2. classified (`classify`) by `RULES`: a row names a canonical name, the cores that mean it, the
   statistics allowed (the mean, written or implied, for almost all) and the qualifiers allowed.
   A key that no row matches is left unread: kept under its own name, never guessed.

Consequences, by construction: a `std`, `min`, `max`, quantile or count of anything is never the
reward (only `reward_std` is a row), and a key whose core holds another quantity (`advantage`,
`loss`, `ratio`, `returns`, `value`, `kl`, ...) matches no reward row. `reward_function` reads the
per-function keys (TRL's `rewards/<fn>`, `rewards/<fn>/mean`; a loop's `reward/<fn>`) under the same
exclusions, and no difference or total of functions (`reward/f_minus_g`, `reward/total`) is one.

Decisions a reader may look for:
- bare `score` is unread (an evaluation or reward-model score?); `score/mean`, `mean_score` and
  verl's `critic/score/mean` are the reward.
- `advantage/zero_rate` (share of zero advantages) is not read as `frac_zero_std`: for a 0/1 reward
  with equal groups the two agree, but a zero advantage also comes from a reward equal to its group
  mean (three-valued rewards), token masking or clipping, and the share may be per token.
  `--map frac_zero_std=advantage/zero_rate` reads it where it is known to agree.
- `zero_gradient_group_fraction` (a loop's share of groups whose rewards are all equal, which give no
  gradient) is `frac_zero_std`; without `group` (`zero_gradient_fraction`) it is unread (a share of
  parameters or tokens?).
- `kl_loss` alone is unread (KL or beta x KL?); the trainers whose `actor/kl_loss` is the KL value
  (verl, ROLL) are named in the tables of `_names`.
- `seq_len` is read as the completion length, after any `response`/`completion` length: a hand-written
  loop's sequence is mostly its completion, and its trend is the completion's.
- `total_reward`, `episode_reward`, `return` are unread (a sum of components? a return that may
  include a KL penalty?) but are reward-like (`reward_like`): a refusal names them.

`reward_like` ranks the keys that look like a reward for the refusal message, and `sole_success_rate`
finds the one case read without a map: the log's only reward-like key is a success rate or an
accuracy (`accuracy`, `success_rate`, `correct`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

# ---- normalisation ---------------------------------------------------------------------------

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[/_\-.\s]+")
NAMESPACES = frozenset({"train", "training", "actor", "rollout", "policy", "metrics", "metric",
                        "charts", "losses", "objective", "optim", "optimizer"})
_CRITIC_BATCH = frozenset({"score", "scores", "entropy"})  # verl/ROLL put batch statistics under critic/
_SYNONYMS = {
    "avg": "mean", "average": "mean", "stddev": "std", "stdev": "std", "variance": "var",
    "minimum": "min", "maximum": "max", "len": "length", "gradient": "grad", "fraction": "frac",
    "approximate": "approx", "reference": "ref",
}
# plurals (not `returns`: verl and ROLL log per-token GAE returns under it, never a reward)
_PLURALS = {
    "rewards": "reward", "scores": "score", "completions": "completion", "responses": "response",
    "tokens": "token", "lengths": "length", "entropies": "entropy", "advantages": "advantage",
    "values": "value", "losses": "loss", "generations": "generation", "outputs": "output",
}
_SINGULAR = {**_SYNONYMS, **_PLURALS}
# the words that say whose length or entropy a key measures
TEXT = frozenset({"response", "completion", "gen", "generated", "generation", "output", "token"})
SEQUENCE = frozenset({"seq", "sequence"})  # the sequence may hold the prompt: read after TEXT
QUALIFIERS = TEXT | SEQUENCE
MEAN = "mean"
_STATS = frozenset({MEAN, "std", "var", "min", "max", "median", "sum", "count", "num", "quantile"})
_QUANTILE = re.compile(r"^[pq]\d{1,3}$")  # p50, p95, q99


@dataclass(frozen=True)
class Parsed:
    """A key as words: its core (a set), its statistic, its qualifiers, and how it was written."""

    core: frozenset[str]
    stat: str | None  # "mean", "std", ..., "quantile"; None when no statistic word
    qualifiers: frozenset[str]
    stat_first: bool  # `mean_reward` rather than `reward_mean`
    mean_synonym: bool  # `avg` / `average` written for the mean
    namespaced: bool  # a namespace was dropped (`train/`, `actor/`, `rollout_`, ...)
    plural: bool  # a core word was plural: a bare `rewards` is as often the list of rewards as their mean


def words(key: str) -> list[str]:
    """The key split at camelCase and separators, lowercase: `avgReward/mean` -> [avg, reward, mean]."""
    return [w for w in _SEPARATORS.split(_CAMEL.sub("_", key).lower()) if w]


def _drop_namespaces(raw: list[str]) -> tuple[list[str], bool]:
    dropped = False
    while len(raw) > 1 and (raw[0] in NAMESPACES or (raw[0] == "critic" and raw[1] in _CRITIC_BATCH)):
        raw, dropped = raw[1:], True
    return raw, dropped


def _unify(raw: list[str]) -> list[str]:
    out: list[str] = []
    for word in raw:
        word = _SINGULAR.get(word, word)
        if word == "std" and out and out[-1] == "zero":
            out[-1] = "zerostd"
        else:
            out.append("quantile" if _QUANTILE.match(word) else word)
    return out


@lru_cache(maxsize=1 << 14)
def parse(key: str) -> Parsed:
    """The words of one key (see the module docstring)."""
    raw, namespaced = _drop_namespaces(words(key))
    unified = _unify(raw)
    qualifiers = frozenset(w for w in unified if w in QUALIFIERS)
    rest = [w for w in unified if w not in QUALIFIERS]
    stat, first = None, False
    if len(rest) > 1 and rest[-1] in _STATS:
        stat, rest = rest[-1], rest[:-1]
    elif len(rest) > 1 and rest[0] in _STATS:
        stat, rest, first = rest[0], rest[1:], True
    elif len(rest) == 1 and rest[0] in _STATS and qualifiers:  # `response_tokens/mean`
        stat, rest = rest[0], []
    synonym = stat == MEAN and any(_SYNONYMS.get(w) == MEAN for w in raw)
    plural = any(_PLURALS.get(w) in rest for w in raw)
    return Parsed(frozenset(rest), stat, qualifiers, first, synonym, namespaced, plural)


# ---- classification --------------------------------------------------------------------------

_FRACS = ("frac", "ratio", "rate", "share")  # a share of items; `fraction` is unified to `frac`
MEAN_STATS = frozenset({None, MEAN})  # a mean, written (`reward_mean`) or implied (`reward`)


def _cores(*cores) -> frozenset[frozenset[str]]:
    return frozenset(frozenset(c.split()) for c in cores)


def _with_fracs(*patterns: str) -> frozenset[frozenset[str]]:
    """Each pattern with `FRAC` replaced by each share word: `clip FRAC` -> {clip frac}, {clip ratio}, ..."""
    return _cores(*(p.replace("FRAC", f) for p in patterns for f in _FRACS))


@dataclass(frozen=True)
class Rule:
    """Keys whose core is one of `cores`, statistic in `stats` and qualifiers allowed are `name`."""

    name: str
    cores: frozenset[frozenset[str]]
    stats: frozenset
    qualifiers: frozenset[str] = frozenset()  # allowed (none by default)
    needs: tuple[frozenset[str], ...] = ()  # a word of each of these sets must be among the qualifiers


# One row per reading, in the order a key is tried (the first match wins).
RULES: tuple[Rule, ...] = (
    # the mean reward of this step's batch or groups; `reward_latest`: this step's, beside a moving average
    Rule("reward", _cores("reward", "group reward", "batch reward", "reward latest", "reward current"), MEAN_STATS),
    Rule("reward", _cores("score"), frozenset({MEAN})),  # bare `score` may be an evaluation score
    Rule("reward_std", _cores("reward", "group reward", "batch reward"), frozenset({"std"})),
    # the batch's lowest and highest reward (verl `critic/score/min`, `max_reward`): equal, every response scored alike
    Rule("reward_min", _cores("reward", "score", "batch reward"), frozenset({"min"})),
    Rule("reward_max", _cores("reward", "score", "batch reward"), frozenset({"max"})),
    # `zero_gradient_group_fraction` (a loop's share of groups whose rewards are all equal: no gradient from them)
    Rule("frac_zero_std", _with_fracs("FRAC zerostd", "FRAC reward zerostd", "FRAC group zerostd",
                                      "FRAC zero grad group"), frozenset({None})),
    Rule("entropy", _cores("entropy"), MEAN_STATS, TEXT),
    Rule("kl_ref", _cores("kl", "kl ref", "kl div", "kl divergence", "kl ref div"), MEAN_STATS, TEXT),
    Rule("kl_old_new", _cores("ppo kl", "approx kl", "approxkl"), MEAN_STATS),
    Rule("clip_frac", _cores("clipfrac", "pg clipfrac") | _with_fracs("clip FRAC", "pg clip FRAC",
                                                                      "ppo clip FRAC"), MEAN_STATS),
    Rule("mean_length", _cores("length"), MEAN_STATS, QUALIFIERS, needs=(QUALIFIERS,)),
    Rule("mean_length", _cores("length"), frozenset({MEAN})),  # `avg_length`, `length/mean`
    Rule("mean_length", _cores(""), frozenset({MEAN}), QUALIFIERS,  # `mean_gen_tokens`: the mean count of tokens
         needs=(frozenset({"token"}), QUALIFIERS - {"token"})),
    Rule("truncation_rate", _with_fracs("truncated FRAC", "truncation FRAC", "length clip FRAC"),
         MEAN_STATS, TEXT),
    Rule("truncation_rate", _cores("truncated", "is truncated"), frozenset({MEAN}), TEXT),
    # `completions/clipped_ratio`: clipped at the maximum length (a bare `clipped_ratio` may be PPO's)
    Rule("truncation_rate", _with_fracs("clipped FRAC"), MEAN_STATS, TEXT, needs=(TEXT,)),
    Rule("grad_norm", _cores("grad norm", "gradnorm"), MEAN_STATS),
    Rule("learning_rate", _cores("lr", "learning rate"), frozenset({None})),
    Rule("loss", _cores("loss", "pg loss"), MEAN_STATS),
)


def _matches(rule: Rule, p: Parsed) -> bool:
    return (p.core in rule.cores and p.stat in rule.stats and p.qualifiers <= rule.qualifiers
            and all(p.qualifiers & need for need in rule.needs))


@lru_cache(maxsize=1 << 14)
def classify(key: str) -> tuple[str, tuple[int, ...], bool] | None:
    """(canonical name, order, namespaced) of a key, or None when no rule reads it.

    order: lower reads more directly among keys of one name: a completion's length before a
    sequence's, a singular before a plural (`mean_reward` before `rewards`), `reward_mean` before
    `mean_reward` before `avg_reward`, fewer words before more.
    namespaced: a namespace was dropped (`rollout/reward_mean`), which ranks after the key without.
    """
    p = parse(key)
    for rule in RULES:
        if _matches(rule, p):
            indirect = int(bool(p.qualifiers & SEQUENCE))
            position = 2 if p.stat_first else int(p.stat is not None)
            order = (indirect, int(p.plural), position, int(p.mean_synonym), len(p.core) + len(p.qualifiers))
            return rule.name, order, p.namespaced
    return None


# ---- per-function rewards --------------------------------------------------------------------

# never in a reward function's name: another quantity, a difference or a total anywhere (`outcome_advantage_std`,
# `f_minus_g`, `total`), or a statistic or a share at either end (`selected_mean`, `valid_rate`); a length, count or
# penalty inside is fine (open-r1's `len_reward`, `tag_count_reward`, `repetition_penalty_reward`)
_QUANTITIES = frozenset({"advantage", "adv", "loss", "returns", "value", "kl", "entropy", "clip",
                         "clipfrac", "zerostd", "grad", "norm", "lr"})
_DERIVED = frozenset({"minus", "diff", "delta", "gap", "total", "overall", "combined"})  # of several functions
_FRACS_SET = frozenset(_FRACS)
_ENDS = _STATS | _FRACS_SET
NOT_REWARD = _QUANTITIES | _STATS - {MEAN}  # in a reward-like key's core
_REWARD_FN = re.compile(r"^(?P<space>rewards?|reward_metrics)/(?P<fn>[^/]+?)(?:/(?P<stat>mean|avg))?$")


def reward_function(key: str) -> str | None:
    """The reward function's name of a per-function key, else None.

    `rewards/<fn>` (TRL < 0.17) and `rewards/<fn>/mean` (TRL >= 0.17), nano-aha-moment's
    `reward_metrics/<fn>`, and a hand-written loop's `reward/<fn>`: `fn`. Never a statistic, a share,
    a difference or a total: `rewards/<fn>/std`,
    `rewards/mean`, `reward/selected_mean`, `reward/valid_rate`, `reward/outcome_advantage_std`,
    `reward/f_minus_g`, `reward/total` are not functions.
    """
    match = _REWARD_FN.match(key)
    if match is None:
        return None
    fn_words = _unify(words(match["fn"]))
    if not fn_words or set(fn_words) & (_QUANTITIES | _DERIVED) or {fn_words[0], fn_words[-1]} & _ENDS:
        return None
    return match["fn"]


# ---- reward-like keys, for a log without a reward --------------------------------------------

# the words of a reward, best first: the reward, a score, a success rate, a return
_REWARD_WORDS = (
    frozenset({"reward"}),
    frozenset({"score"}),
    frozenset({"acc", "accuracy", "correct", "correctness", "success", "pass", "solve", "solved", "win"}),
    frozenset({"return"}),
)
_SUCCESS = _REWARD_WORDS[2]


def _reward_class(key: str) -> tuple | None:
    """Sort key of a reward-like key (None when it is not reward-like)."""
    p = parse(key)
    if p.stat not in MEAN_STATS or p.core & NOT_REWARD or (p.core & _FRACS_SET and not p.core & _SUCCESS):
        return None  # a statistic, another quantity, a share of anything but successes (`reward/valid_rate`)
    fn = reward_function(key)
    for rank, kind in enumerate(_REWARD_WORDS):
        if p.core & kind:
            extra = len(p.core - kind) + len(p.qualifiers)
            shares = bool(p.core & _FRACS_SET)
            return rank, fn is not None, extra, shares, len(key), key
    return None


def reward_like(keys) -> list[str]:
    """The keys that look like a training reward, most reward-like first.

    A key is reward-like when a word of it is a reward, score, success (accuracy, correct, pass,
    solve, win) or return, and it is no statistic but the mean of that (not `reward_std`,
    `score/max`, `reward/outcome_advantage_std`, `critic/returns/mean`), nor a share of anything but
    successes (`reward/valid_rate` is not, `reward/hard_pass_rate` is). Ranked by that word, then
    per-function keys after the others, fewer other words, shares after means, the shorter key.
    """
    ranked = sorted((c, k) for k in set(keys) if (c := _reward_class(k)) is not None)
    return [key for _, key in ranked]


_SUCCESS_FILLERS = frozenset({"is", "batch", "answer", "task", *_FRACS})  # `is_correct`, `answer_accuracy`, `success_rate`
# the words of an auxiliary check beside the task's outcome (`format_accuracy`): not the task's success rate
_AUXILIARY = frozenset({"format", "formatting", "length", "style", "syntax", "parse", "tag", "valid", "validity"})


def sole_success_rate(keys) -> str | None:
    """The log's only reward-like key when it is a success rate or an accuracy, else None.

    `accuracy`, `success_rate`, `correct`, `train/acc`, `is_correct`, `answer_accuracy`: the mean over
    completions of a 0/1 outcome, which is the mean reward of a 0/1 reward. Read as the reward only when
    nothing else in the log looks like one, the success rates of auxiliary checks aside (`format_accuracy`
    beside `answer_accuracy`: the format is not the task; a `format_reward` is a reward, so not aside).
    """
    candidates = [key for key in reward_like(keys) if not (parse(key).core & _AUXILIARY and parse(key).core & _SUCCESS)]
    if len(candidates) != 1:
        return None
    p = parse(candidates[0])
    if p.qualifiers or not p.core & _SUCCESS or not p.core <= _SUCCESS | _SUCCESS_FILLERS:
        return None
    return candidates[0]
