"""Registry entries built on GSPO's sequence ratio s_i = (pi(y_i) / pi_old(y_i))^(1/|y_i|).

Zheng et al. 2025, "Group Sequence Policy Optimization", arXiv 2507.18071. Contract, shapes and
metrics: `_losses`.
"""

from __future__ import annotations

import torch

from gspo_dynamics.objectives._losses import ClipBound, bounds, clipped_surrogate, metrics, prepare, register


@register("gspo")
def gspo_loss(logp, logp_old, advantages, mask, *, clip_low: ClipBound, clip_high: ClipBound, weights=None):
    """GSPO: one length-normalised importance ratio per sequence, clipped per sequence
    (Zheng et al. 2025, arXiv 2507.18071).

        s_i  = (pi(y_i) / pi_old(y_i))^(1/|y_i|) = exp((1/|y_i|) sum_t (logp[i, t] - logp_old[i, t]))
        l_i  = -min(s_i A_i, clip(s_i, 1 - eps_low, 1 + eps_high) A_i)
        loss = (1/B) sum_i omega_i l_i

    Symbols as in `grpo_loss`; advantages must be per sequence, (B,). For |y_i| = 1, s_i = w_i1
    (GRPO's token ratio) and GSPO equals GRPO; on-policy (s_i = 1) the two gradients coincide
    for every length. The paper's clip range is tiny (3e-4, 4e-4) since s_i is a geometric mean.
    Metrics count "sequences" (a whole response is clipped or not).
    """
    reduce, _, log_ratio, adv = prepare(logp, logp_old, advantages, mask, weights, per_token_advantages=False)
    lo, hi = bounds(clip_low, clip_high, logp)
    ratio = torch.exp(reduce.sequence_mean(log_ratio))[:, None]  # (B, 1) sequence ratio s_i
    per_sequence = clipped_surrogate(ratio, adv, lo, hi)[:, 0]  # (B,)
    return reduce.batch_mean(per_sequence), metrics(reduce, ratio, adv, lo, hi, log_ratio, count="sequences")


@register("gspo_token")
def gspo_token_loss(logp, logp_old, advantages, mask, *, clip_low: ClipBound, clip_high: ClipBound, weights=None):
    """GSPO-token: GSPO's sequence ratio carried by every token, so advantages may differ per
    token (Zheng et al. 2025, arXiv 2507.18071).

        s_it = sg[s_i] * pi(y_it) / sg[pi(y_it)]        (value s_i, gradient s_i grad log pi(y_it))
        l_i  = -(1/|y_i|) sum_t min(s_it A_it, clip(s_it, 1 - eps_low, 1 + eps_high) A_it)
        loss = (1/B) sum_i omega_i l_i

    Symbols as in `gspo_loss`, sg = stop-gradient, A_it = advantages[i, t] or A_i = advantages[i].
    With per-sequence advantages (A_it = A_i) the loss value and the gradient equal GSPO's: every
    token has the same ratio value and the same clip decision, and the token gradients
    s_i A_i (1/|y_i|) grad log pi(y_it) sum to s_i A_i grad log s_i. Metrics count "tokens in
    sequence" (with per-sequence advantages: GSPO's sequence fractions, empty sequences aside).
    """
    reduce, logp, log_ratio, adv = prepare(logp, logp_old, advantages, mask, weights)
    lo, hi = bounds(clip_low, clip_high, logp)
    log_s = reduce.sequence_mean(log_ratio).detach()[:, None]  # (B, 1) sg[log s_i]
    # exp(sg[log s_i] + log pi - sg[log pi]): the value is exactly s_i (x - x = 0 in floating
    # point), the gradient flows through log pi(y_it) alone; padding has logp = 0, so s_it = s_i
    ratio = torch.exp(log_s + (logp - logp.detach()))  # (B, L) s_it
    per_sequence = reduce.sequence_mean(clipped_surrogate(ratio, adv, lo, hi))  # (B,)
    return reduce.batch_mean(per_sequence), metrics(reduce, ratio, adv, lo, hi, log_ratio, count="tokens in sequence")
