"""Registry entries built on token-level importance ratios w_it = pi(y_it) / pi_old(y_it).

They differ in how the token terms are normalised (per sequence, per batch budget, per batch
token count) and in what the clip does (switch the surrogate's gradient off, or cap a weight).
Contract, shapes and metrics: `_losses`. All take advantages A_i (B,) or A_it (B, L).
"""

from __future__ import annotations

import torch

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.objectives._losses import NO_CLIP, ClipBound, bounds, clipped_surrogate, metrics, prepare, register


@register("pg")
def pg_loss(logp, logp_old, advantages, mask, *, clip_low: ClipBound, clip_high: ClipBound, weights=None):
    """Plain policy gradient at the sampling policy, no importance ratio (REINFORCE, group baseline).

        l_i = -(1/|y_i|) sum_t A_i log pi(y_it),        loss = (1/B) sum_i omega_i l_i

    Symbols: pi(y_it) = exp(logp[i, t]), A_i = advantages[i], |y_i| = mask[i].sum(), omega_i = weights[i].
    Its gradient is the on-policy GRPO gradient (Shao et al. 2024, arXiv 2402.03300, with
    pi_old = pi), which is what a stale rollout delivers when no off-policy correction is made
    ("none"): evaluate `logp` at the sampling policy and the stale gradient is applied as is.
    There is no ratio to clip, so clip_low/clip_high do not enter and the clip fractions are 0;
    logp_old enters only the ratio diagnostics. Metrics count "tokens in sequence".
    """
    reduce, logp, log_ratio, adv = prepare(logp, logp_old, advantages, mask, weights)
    per_sequence = reduce.sequence_mean(-adv * logp)  # (B,)
    ratio = log_ratio.detach().exp()  # (B, L), diagnostics only
    return reduce.batch_mean(per_sequence), metrics(reduce, ratio, adv, *NO_CLIP, log_ratio, count="tokens in sequence")


@register("grpo")
def grpo_loss(logp, logp_old, advantages, mask, *, clip_low: ClipBound, clip_high: ClipBound, weights=None):
    """GRPO: token-level importance ratios with the PPO clip (Shao et al. 2024, arXiv 2402.03300).

        w_it = pi(y_it) / pi_old(y_it) = exp(logp[i, t] - logp_old[i, t])
        l_i  = -(1/|y_i|) sum_t min(w_it A_i, clip(w_it, 1 - eps_low, 1 + eps_high) A_i)
        loss = (1/B) sum_i omega_i l_i

    Symbols: A_i = advantages[i] (or A_it), eps_low = clip_low, eps_high = clip_high (DAPO's
    decoupled clip), |y_i| = mask[i].sum(), omega_i = weights[i]. The 1/|y_i| gives each token of
    a short sequence more weight than one of a long sequence (the length bias Dr. GRPO removes).
    The KL penalty is a separate term (`kl_k3`). Metrics count "tokens in sequence".
    """
    reduce, _, log_ratio, adv = prepare(logp, logp_old, advantages, mask, weights)
    lo, hi = bounds(clip_low, clip_high, logp)
    ratio = torch.exp(log_ratio)  # (B, L) w_it
    per_sequence = reduce.sequence_mean(clipped_surrogate(ratio, adv, lo, hi))  # (B,)
    return reduce.batch_mean(per_sequence), metrics(reduce, ratio, adv, lo, hi, log_ratio, count="tokens in sequence")


@register("dr_grpo")
def dr_grpo_loss(
    logp, logp_old, advantages, mask, *, clip_low: ClipBound, clip_high: ClipBound, weights=None, max_tokens: int | None = None
):
    """Dr. GRPO: GRPO's clipped token terms over a constant normaliser (Liu et al. 2025, arXiv 2503.20783).

        w_it = pi(y_it) / pi_old(y_it)
        l_i  = -(1/L_max) sum_t min(w_it A_i, clip(w_it, 1 - eps_low, 1 + eps_high) A_i)
        loss = (1/B) sum_i omega_i l_i

    Symbols as in `grpo_loss`; L_max = max_tokens, the generation budget (max completion length).
    Dividing every sequence by the same constant instead of its own length |y_i| removes GRPO's
    length bias: every token of every response weighs the same. The paper's other change, no
    std scaling of A, is the advantage function's job, not the loss's: pass
    `group_advantages(rewards, scale="none")`.

    max_tokens: L_max, a positive int. Default None takes the batch's padded width L =
    logp.shape[1], which is the budget when rollouts are padded to it; pass the budget itself
    to keep the normaliser constant across batches of different widths (then padding changes
    nothing). It should be >= every |y_i| (not checked: that would need a device sync).
    Metrics count "tokens".
    """
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1):
        raise ConfigError(f"max_tokens (the generation budget L_max) must be a positive integer, got {max_tokens!r}")
    reduce, _, log_ratio, adv = prepare(logp, logp_old, advantages, mask, weights)
    lo, hi = bounds(clip_low, clip_high, logp)
    budget = logp.shape[1] if max_tokens is None else max_tokens  # L_max
    ratio = torch.exp(log_ratio)  # (B, L) w_it
    per_sequence = reduce.token_sum(clipped_surrogate(ratio, adv, lo, hi)) / budget  # (B,)
    return reduce.batch_mean(per_sequence), metrics(reduce, ratio, adv, lo, hi, log_ratio, count="tokens")


@register("dapo")
def dapo_loss(logp, logp_old, advantages, mask, *, clip_low: ClipBound, clip_high: ClipBound, weights=None):
    """DAPO: token-level loss over all tokens of the batch, with clip-higher (Yu et al. 2025, arXiv 2503.14476).

        w_it = pi(y_it) / pi_old(y_it)
        loss = -(1 / sum_i |y_i|) sum_i omega_i sum_t min(w_it A_i, clip(w_it, 1 - eps_low, 1 + eps_high) A_i)

    Symbols as in `grpo_loss`; sum_i |y_i| = mask.sum(), the number of real tokens in the batch
    (unweighted, see `_losses`). Every token weighs the same, so long responses are not
    discounted. Clip-higher is the choice eps_high > eps_low (the paper: 0.2 and 0.28), leaving
    room for low-probability tokens to grow; the function accepts any pair. DAPO's dynamic
    sampling is not part of the loss: drop flat groups with `filter_informative_groups` before
    building the batch (they would contribute zero terms but still count in sum_i |y_i|); its
    overlong reward shaping belongs to the reward. Metrics count "tokens".
    """
    reduce, _, log_ratio, adv = prepare(logp, logp_old, advantages, mask, weights)
    lo, hi = bounds(clip_low, clip_high, logp)
    ratio = torch.exp(log_ratio)  # (B, L) w_it
    token_sums = reduce.token_sum(clipped_surrogate(ratio, adv, lo, hi))  # (B,)
    loss = reduce.weighted_sum(token_sums) / reduce.n_tokens
    return loss, metrics(reduce, ratio, adv, lo, hi, log_ratio, count="tokens")


@register("cispo")
def cispo_loss(logp, logp_old, advantages, mask, *, clip_low: ClipBound, clip_high: ClipBound, weights=None):
    """CISPO: a clipped, detached importance weight times the log-probability (MiniMax 2025, arXiv 2506.13585).

        r_it = sg[clip(w_it, 1 - eps_low, 1 + eps_high)],   w_it = pi(y_it) / pi_old(y_it)
        loss = -(1 / sum_i |y_i|) sum_i omega_i sum_t r_it A_i log pi(y_it)

    Symbols as in `dapo_loss` (the same token-level normaliser); sg = stop-gradient. The
    gradient is -(1/N) sum omega r_it A_i grad log pi(y_it): the clip caps a token's weight but,
    unlike PPO's min, never switches its gradient off, so rare tokens with large ratios keep
    learning. The paper sets no lower bound (eps_low large, e.g. clip_low >= 1) and tunes only
    eps_high. The loss value is not an objective estimate (log pi enters linearly); use its
    gradient. Metrics count "tokens", and since the weight is capped whatever the sign of A,
    clip_frac_low/high are the fractions with w_it < 1 - eps_low / w_it > 1 + eps_high (any A):
    the tokens whose weight the clip changed; ratio statistics are of the unclipped w_it.
    """
    reduce, logp, log_ratio, adv = prepare(logp, logp_old, advantages, mask, weights)
    lo, hi = bounds(clip_low, clip_high, logp)
    ratio = torch.exp(log_ratio)  # (B, L) w_it
    weight = torch.clamp(ratio, lo, hi).detach()  # (B, L) r_it
    token_sums = reduce.token_sum(-weight * adv * logp)  # (B,)
    loss = reduce.weighted_sum(token_sums) / reduce.n_tokens
    return loss, metrics(reduce, ratio, adv, lo, hi, log_ratio, count="tokens", sign_aware=False)
