"""Shared by the loss tests: input builders, hypothesis strategies, and slow loop references.

The references compute one scalar term at a time, written from the paper equations, and return
(loss, clip_frac_low, clip_frac_high) counted the way each entry's docstring says. Inputs are
materialised in float64, so vectorised and loop versions differ only by summation order.
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

# float64, same terms summed in a different order.
SUM_TOL = 1e-12
METRIC_KEYS = {
    "losses/clip_frac_low",
    "losses/clip_frac_high",
    "losses/clip_frac",
    "losses/ratio_mean",
    "losses/ratio_std",
    "losses/approx_kl",
    "losses/entry_clip_low",
    "losses/entry_clip_high",
}
ENTRY_KEYS = {"losses/entry_clip_low", "losses/entry_clip_high"}  # counted per ratio entry (TRL's count)
SEQUENCE_ADVANTAGES_ONLY = {"gspo"}  # the others also take (B, L) per-token advantages

shapes = st.tuples(st.integers(0, 2**31 - 1), st.integers(1, 5), st.integers(1, 6))  # (seed, B, L)
clips = st.tuples(st.floats(0.01, 0.9), st.floats(0.01, 3.0))  # (eps_low, eps_high)


def make_inputs(seed, B, L, spread=0.3, pad=True, per_token=False):
    """(logp requiring grad, logp_old, advantages, mask); log-ratios ~ N(0, spread^2).

    Some advantages are exactly 0 (flat groups); pad=True allows empty sequences."""
    g = torch.Generator().manual_seed(seed)
    logp_old = -torch.rand(B, L, generator=g, dtype=torch.float64) * 3.0
    logp = (logp_old + spread * torch.randn(B, L, generator=g, dtype=torch.float64)).requires_grad_(True)
    adv = torch.randn(B, L, generator=g, dtype=torch.float64) if per_token else torch.randn(B, generator=g, dtype=torch.float64)
    adv[torch.rand(adv.shape, generator=g) < 0.2] = 0.0
    lengths = torch.randint(0 if pad else 1, L + 1, (B,), generator=g)
    mask = torch.arange(L)[None, :] < lengths[:, None]
    return logp, logp_old, adv, mask


def grad_of(loss, logp):
    if not loss.requires_grad:  # a loop over empty sequences builds no graph
        return torch.zeros_like(logp)
    (g,) = torch.autograd.grad(loss, logp, allow_unused=True, retain_graph=True)
    return torch.zeros_like(logp) if g is None else g


# ---- loop references ---------------------------------------------------------------------------


def _tokens(mask, i):
    return [t for t in range(mask.shape[1]) if mask[i, t]]


def _a(adv, i, t):
    return adv[i] if adv.ndim == 1 else adv[i, t]


def _zero(logp):
    return torch.zeros((), dtype=logp.dtype)


def _ppo_term(ratio, a, lo, hi):
    """-min(w A, clip(w) A) and whether the clip is active from below / above."""
    term = -torch.minimum(ratio * a, torch.clamp(ratio, lo, hi) * a)
    return term, bool(ratio < lo and a < 0), bool(ratio > hi and a > 0)


def _safe(x, total):
    return x / total if total > 0 else 0.0 * x


def ref_pg(logp, logp_old, adv, mask, lo, hi, w):
    total = _zero(logp)
    for i in range(logp.shape[0]):
        toks = _tokens(mask, i)
        seq = sum((-_a(adv, i, t) * logp[i, t] for t in toks), _zero(logp))
        total = total + w[i] * seq / max(len(toks), 1)
    return total / logp.shape[0], 0.0, 0.0


def _token_ppo(logp, logp_old, adv, mask, lo, hi, w, ratio_of):
    """Per-sequence token sums of PPO terms and clip counts, for a token ratio ratio_of(i, t)."""
    out = []
    for i in range(logp.shape[0]):
        seq, n_low, n_high = _zero(logp), 0, 0
        for t in _tokens(mask, i):
            term, low, high = _ppo_term(ratio_of(i, t), _a(adv, i, t), lo[i], hi[i])
            seq, n_low, n_high = seq + term, n_low + low, n_high + high
        out.append((seq, n_low, n_high, len(_tokens(mask, i))))
    return out


def _per_sequence_mean(rows, w, B):
    """GRPO's reduction: token mean per sequence, batch mean; tokens-in-sequence counting."""
    loss = sum((w[i] * seq / max(n, 1) for i, (seq, _, _, n) in enumerate(rows)), 0.0) / B
    low = sum(w[i] * lo / max(n, 1) for i, (_, lo, _, n) in enumerate(rows)) / w.sum()
    high = sum(w[i] * hi / max(n, 1) for i, (_, _, hi, n) in enumerate(rows)) / w.sum()
    return loss, low, high


def _token_counts(rows, w):
    """clip fractions counting every token of the batch, weighted by its sequence's weight."""
    weight = sum(float(w[i]) * n for i, (_, _, _, n) in enumerate(rows))
    low = _safe(sum(w[i] * lo for i, (_, lo, _, _) in enumerate(rows)), weight)
    high = _safe(sum(w[i] * hi for i, (_, _, hi, _) in enumerate(rows)), weight)
    return low, high


def ref_grpo(logp, logp_old, adv, mask, lo, hi, w):
    rows = _token_ppo(logp, logp_old, adv, mask, lo, hi, w, lambda i, t: torch.exp(logp[i, t] - logp_old[i, t]))
    return _per_sequence_mean(rows, w, logp.shape[0])


def ref_dr_grpo(logp, logp_old, adv, mask, lo, hi, w, max_tokens=None):
    budget = logp.shape[1] if max_tokens is None else max_tokens
    rows = _token_ppo(logp, logp_old, adv, mask, lo, hi, w, lambda i, t: torch.exp(logp[i, t] - logp_old[i, t]))
    loss = sum((w[i] * seq / budget for i, (seq, _, _, _) in enumerate(rows)), 0.0) / logp.shape[0]
    return (loss, *_token_counts(rows, w))


def ref_dapo(logp, logp_old, adv, mask, lo, hi, w):
    rows = _token_ppo(logp, logp_old, adv, mask, lo, hi, w, lambda i, t: torch.exp(logp[i, t] - logp_old[i, t]))
    n_tokens = max(sum(n for *_, n in rows), 1)
    loss = sum((w[i] * seq for i, (seq, _, _, _) in enumerate(rows)), 0.0) / n_tokens
    return (loss, *_token_counts(rows, w))


def ref_cispo(logp, logp_old, adv, mask, lo, hi, w):
    rows = []
    for i in range(logp.shape[0]):
        seq, n_low, n_high = _zero(logp), 0, 0
        for t in _tokens(mask, i):
            ratio = torch.exp(logp[i, t] - logp_old[i, t]).detach()
            seq = seq - torch.clamp(ratio, lo[i], hi[i]) * _a(adv, i, t) * logp[i, t]
            n_low, n_high = n_low + bool(ratio < lo[i]), n_high + bool(ratio > hi[i])
        rows.append((seq, n_low, n_high, len(_tokens(mask, i))))
    n_tokens = max(sum(n for *_, n in rows), 1)
    loss = sum((w[i] * seq for i, (seq, _, _, _) in enumerate(rows)), 0.0) / n_tokens
    return (loss, *_token_counts(rows, w))


def _sequence_ratio(logp, logp_old, mask, i):
    toks = _tokens(mask, i)
    log_s = sum((logp[i, t] - logp_old[i, t] for t in toks), _zero(logp))
    return torch.exp(log_s / max(len(toks), 1))


def ref_gspo(logp, logp_old, adv, mask, lo, hi, w):
    total, low, high = _zero(logp), 0.0, 0.0
    for i in range(logp.shape[0]):
        term, n_low, n_high = _ppo_term(_sequence_ratio(logp, logp_old, mask, i), adv[i], lo[i], hi[i])
        total, low, high = total + w[i] * term, low + w[i] * n_low, high + w[i] * n_high
    return total / logp.shape[0], low / w.sum(), high / w.sum()


def ref_gspo_token(logp, logp_old, adv, mask, lo, hi, w):
    s = [_sequence_ratio(logp, logp_old, mask, i).detach() for i in range(logp.shape[0])]
    rows = _token_ppo(logp, logp_old, adv, mask, lo, hi, w, lambda i, t: s[i] * torch.exp(logp[i, t] - logp[i, t].detach()))
    return _per_sequence_mean(rows, w, logp.shape[0])


REFERENCES = {
    "pg": ref_pg,
    "grpo": ref_grpo,
    "dr_grpo": ref_dr_grpo,
    "dapo": ref_dapo,
    "cispo": ref_cispo,
    "gspo": ref_gspo,
    "gspo_token": ref_gspo_token,
}
