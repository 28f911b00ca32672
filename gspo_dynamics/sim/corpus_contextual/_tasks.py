"""Task builders: graded prompts of varied difficulty, with or without a proxy reward.

Prompts come in `types` (a topic, a skill): the features are the one-hot type, so the shared part
V learns "prompts of this type want this answer" and carries what one prompt teaches to the
others of its type, while the tabular part W learns each prompt alone. Each prompt has one best
action (the type's, except for a share of exceptions), some partial-credit actions, and wrong ones;
a share of prompts has no fully correct reachable answer (`capped_share`), so the ceiling is < 1.
The reference probability of the best action sets the prompt's difficulty.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from gspo_dynamics.sim.corpus_contextual._task import UNREACHABLE, ContextualTask

PARTIAL_CREDIT = (0.25, 0.5, 0.75)  # graded scores of partly right answers
MAX_LENGTH = 1024  # generation budget, tokens
FORMAT_WEIGHT = 0.2  # weight of the format component when a task has one (TRL reward_weights)


def logit(q):
    return np.log(q) - np.log1p(-q)


def set_probability(ref: np.ndarray, action: np.ndarray, q: np.ndarray) -> np.ndarray:
    """ref (P, K) with the logit of `action[p]` moved so that softmax(ref[p])[action[p]] = q[p]."""
    P = ref.shape[0]
    others = ref.copy()
    others[np.arange(P), action] = -np.inf
    rest = np.log(np.exp(others - others.max(-1, keepdims=True)).sum(-1)) + others.max(-1)  # logsumexp of the others
    out = ref.copy()
    out[np.arange(P), action] = logit(q) + rest
    return out


def graded_task(rng: np.random.Generator, *, prompts: int, actions: int, types: int, best_prob,
                partial_share: float = 0.3, capped_share: float = 0.0, exception_share: float = 0.1,
                ref_spread: float = 1.0, tabular: bool = True, shared: bool = True, format_reward: bool = False,
                unreachable_best: bool = False) -> ContextualTask:
    """P prompts x K actions with graded rewards.

    best_prob: (lo, hi), the reference probability of each prompt's best action, drawn log-uniform
    in [lo, hi] (hard prompts: small). partial_share: share of the other actions with partial
    credit. capped_share: share of prompts whose best reachable answer is only partial credit.
    unreachable_best: every rewarded action is never emitted (UNREACHABLE), so every reward is 0.
    format_reward: a second 0/1 component (weight FORMAT_WEIGHT) that most answers satisfy.
    """
    P, K = prompts, actions
    kind = rng.integers(types, size=P)
    best = rng.integers(K, size=types)[kind]
    exceptions = rng.random(P) < exception_share
    best = np.where(exceptions, rng.integers(K, size=P), best)
    correct = np.where(rng.random((P, K)) < partial_share, rng.choice(PARTIAL_CREDIT, size=(P, K)), 0.0)
    top = np.where(rng.random(P) < capped_share, rng.choice(PARTIAL_CREDIT[1:], size=P), 1.0)
    correct[np.arange(P), best] = top
    lo, hi = best_prob
    q = np.exp(rng.uniform(np.log(lo), np.log(hi), size=P))
    ref = set_probability(rng.normal(0.0, ref_spread, (P, K)), best, q)
    if unreachable_best:
        ref = np.where(correct > 0, UNREACHABLE, ref)
    if format_reward:
        fmt = (rng.random((P, K)) < 0.85).astype(float)
        components, names = np.stack([correct, fmt], -1), ("correctness_reward", "format_reward")
        weights = np.array([1.0 - FORMAT_WEIGHT, FORMAT_WEIGHT])
    else:
        components, names, weights = correct[..., None], ("accuracy_reward",), np.array([1.0])
    true = components @ weights
    features = np.eye(types)[kind] if shared else np.zeros((P, 0))
    lengths = np.round(rng.uniform(150.0, 600.0, (P, K)))
    return ContextualTask(components=components, component_names=names, weights=weights, true_reward=true,
                          lengths=lengths, max_length=MAX_LENGTH, ref_logits=ref, features=features, tabular=tabular)


def safe_answer_task(rng: np.random.Generator, *, prompts: int, actions: int, types: int, best_prob,
                     safe_prob, safe_credit: float) -> ContextualTask:
    """Graded prompts plus a "safe" answer: partial credit `safe_credit`, common to a prompt type
    (one index per type, so the shared part spreads it), that the reference already favours
    (probability drawn log-uniform in `safe_prob`); each prompt's fully correct answer is its own
    (no type structure) and rare under the reference (`best_prob`)."""
    task = graded_task(rng, prompts=prompts, actions=actions, types=types, best_prob=best_prob, partial_share=0.0,
                       exception_share=1.0)
    P, K = task.shape
    comps = task.components.copy()
    best = comps[..., 0].argmax(-1)
    safe = rng.integers(K, size=types)[task.features.argmax(-1)]
    safe = np.where(safe == best, (best + 1) % K, safe)
    comps[np.arange(P), safe, 0] = safe_credit
    lo, hi = safe_prob
    ref = set_probability(task.ref_logits, safe, np.exp(rng.uniform(np.log(lo), np.log(hi), size=P)))
    return dataclasses.replace(task, components=comps, true_reward=comps[..., 0].copy(), ref_logits=ref)


def proxy_task(rng: np.random.Generator, *, prompts: int, actions: int, types: int, best_prob, hack_prob,
               fooled_share: float, hack_true: float, honest_discount: float, length_weight: float) -> ContextualTask:
    """Graded prompts scored by a judge (the proxy), plus one "hack" answer (the last action of every
    prompt, a confident padded response) that the judge scores 1 on a share `fooled_share` of the
    prompt types while its true score is `hack_true`; there the judge also docks honest answers by
    `honest_discount` (it prefers the confident style). With length_weight > 0 a second
    component, length_reward = min(length / MAX_LENGTH, 1), joins the proxy and the hack is as long
    as the budget allows; otherwise it is of ordinary length. A bias feature shared by all prompts
    lets what the hack earns on one prompt carry to all (a style, not an answer)."""
    base = graded_task(rng, prompts=prompts, actions=actions, types=types, best_prob=best_prob, capped_share=0.2)
    P, K = base.shape
    hack = K - 1
    true = base.components[..., 0].copy()
    clash = true.argmax(-1) == hack  # the hack is never a prompt's correct answer
    true[clash] = np.roll(true[clash], 1, axis=-1)
    true[:, hack] = hack_true
    kind = base.features.argmax(-1)
    fooled = (rng.random(types) < fooled_share)[kind]
    fooled[rng.integers(P)] = True  # at least one prompt is fooled
    judge = true * np.where(fooled, 1.0 - honest_discount, 1.0)[:, None]
    judge[:, hack] = np.where(fooled, 1.0, hack_true)
    lengths = base.lengths.copy()
    if length_weight > 0:
        lengths[:, hack] = rng.uniform(0.9, 1.1, P) * MAX_LENGTH
        comps = np.stack([judge, np.minimum(lengths / MAX_LENGTH, 1.0)], -1)
        names, weights = ("judge_reward", "length_reward"), np.array([1.0 - length_weight, length_weight])
    else:
        comps, names, weights = judge[..., None], ("judge_reward",), np.array([1.0])
    lo, hi = hack_prob
    ref = set_probability(base.ref_logits, np.full(P, hack), np.exp(rng.uniform(np.log(lo), np.log(hi), size=P)))
    features = np.concatenate([base.features, np.ones((P, 1))], 1)
    return ContextualTask(components=comps, component_names=names, weights=weights, true_reward=true,
                          lengths=lengths, max_length=MAX_LENGTH, ref_logits=ref, features=features, tabular=True)
