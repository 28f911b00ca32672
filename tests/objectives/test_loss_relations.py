"""Relations between registry entries: where GSPO meets GRPO, GSPO-token meets GSPO, the three
token normalisers coincide, and how the two kinds of clip act on the gradient."""

from __future__ import annotations

import pytest
import torch
from _loss_cases import ENTRY_KEYS, METRIC_KEYS, SUM_TOL, clips, grad_of, make_inputs, shapes
from hypothesis import given, settings
from hypothesis import strategies as st

from gspo_dynamics import ConfigError
from gspo_dynamics.objectives import get_loss


def _close(a, b):
    assert float(a) == pytest.approx(float(b), abs=SUM_TOL, rel=SUM_TOL)


def _run(name, logp, logp_old, adv, mask, clip, **extra):
    return get_loss(name)(logp, logp_old, adv, mask, clip_low=clip[0], clip_high=clip[1], **extra)


@settings(max_examples=40, deadline=None)
@given(shape=shapes, clip=clips, spread=st.sampled_from([0.05, 0.5, 2.0]))
def test_gspo_equals_grpo_on_length_one_sequences(shape, clip, spread):
    seed, B, _ = shape
    logp, logp_old, adv, mask = make_inputs(seed, B, 1, spread, pad=False)
    grpo, m_grpo = _run("grpo", logp, logp_old, adv, mask, clip)
    gspo, m_gspo = _run("gspo", logp, logp_old, adv, mask, clip)
    _close(gspo.detach(), grpo.detach())
    torch.testing.assert_close(grad_of(gspo, logp), grad_of(grpo, logp), atol=SUM_TOL, rtol=SUM_TOL)
    for key in METRIC_KEYS:
        _close(m_gspo[key], m_grpo[key])


@settings(max_examples=30, deadline=None)
@given(shape=shapes)
def test_on_policy_gradients_of_pg_grpo_gspo_gspo_token_coincide(shape):
    """At w = 1 no clip is active and d w = w d log pi: each gives -A_i grad(mean_t log pi) / B,
    whatever the lengths (empty sequences included)."""
    seed, B, L = shape
    _, logp_old, adv, mask = make_inputs(seed, B, L)
    grads = {}
    for name in ("pg", "grpo", "gspo", "gspo_token"):
        logp = logp_old.clone().requires_grad_(True)
        loss, m = _run(name, logp, logp_old, adv, mask, (0.2, 0.2))
        grads[name] = grad_of(loss, logp)
        assert float(m["losses/clip_frac"]) == 0.0 and float(m["losses/approx_kl"]) == 0.0
    for name in ("grpo", "gspo", "gspo_token"):
        torch.testing.assert_close(grads[name], grads["pg"], atol=SUM_TOL, rtol=SUM_TOL)


@settings(max_examples=40, deadline=None)
@given(shape=shapes, clip=clips, spread=st.sampled_from([0.05, 0.5, 2.0]), weighted=st.booleans())
def test_gspo_token_equals_gspo_for_per_sequence_advantages(shape, clip, spread, weighted):
    """Same value and gradient, clipped or not; the same clip fractions (no empty sequences,
    which GSPO counts as unclipped sequences and GSPO-token as sequences without tokens). The
    entry shares count GSPO's sequences but GSPO-token's tokens (test_trl_parity), so they agree
    only where every sequence has the same length."""
    seed, B, L = shape
    logp, logp_old, adv, mask = make_inputs(seed, B, L, spread, pad=False)
    w = torch.rand(B, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) if weighted else None
    gspo, m_gspo = _run("gspo", logp, logp_old, adv, mask, clip, weights=w)
    token, m_token = _run("gspo_token", logp, logp_old, adv, mask, clip, weights=w)
    _close(token.detach(), gspo.detach())
    torch.testing.assert_close(grad_of(token, logp), grad_of(gspo, logp), atol=SUM_TOL, rtol=SUM_TOL)
    for key in METRIC_KEYS - ENTRY_KEYS:
        _close(m_token[key], m_gspo[key])
    full = torch.ones_like(mask)
    m_gspo, m_token = (_run(name, logp, logp_old, adv, full, clip)[1] for name in ("gspo", "gspo_token"))
    for key in ENTRY_KEYS:
        _close(m_token[key], m_gspo[key])


@settings(max_examples=30, deadline=None)
@given(shape=shapes, clip=clips, spread=st.sampled_from([0.05, 0.5, 2.0]))
def test_token_normalisers_coincide_when_every_sequence_fills_the_budget(shape, clip, spread):
    """|y_i| = L_max for all i: GRPO's 1/|y_i|, Dr. GRPO's 1/L_max and DAPO's 1/sum|y| (= 1/(B L))
    give the same loss, gradient and metrics."""
    seed, B, L = shape
    logp, logp_old, adv, _ = make_inputs(seed, B, L, spread)
    mask = torch.ones(B, L, dtype=torch.bool)
    grpo, m_grpo = _run("grpo", logp, logp_old, adv, mask, clip)
    for name, extra in (("dr_grpo", {}), ("dr_grpo", {"max_tokens": L}), ("dapo", {})):
        loss, m = _run(name, logp, logp_old, adv, mask, clip, **extra)
        _close(loss.detach(), grpo.detach())
        torch.testing.assert_close(grad_of(loss, logp), grad_of(grpo, logp), atol=SUM_TOL, rtol=SUM_TOL)
        for key in METRIC_KEYS:
            _close(m[key], m_grpo[key])


@settings(max_examples=30, deadline=None)
@given(shape=shapes, clip=clips, factor=st.integers(2, 5))
def test_dr_grpo_is_a_token_sum_over_a_constant(shape, clip, factor):
    """Doubling the budget halves the loss; with varying lengths Dr. GRPO is DAPO rescaled by
    sum|y| / (B L_max): the same direction, a batch-dependent step size."""
    seed, B, L = shape
    logp, logp_old, adv, mask = make_inputs(seed, B, L, spread=0.5)
    base, _ = _run("dr_grpo", logp, logp_old, adv, mask, clip, max_tokens=L)
    scaled, _ = _run("dr_grpo", logp, logp_old, adv, mask, clip, max_tokens=factor * L)
    _close(factor * scaled.detach(), base.detach())
    dapo, _ = _run("dapo", logp, logp_old, adv, mask, clip)
    n_tokens = max(int(mask.sum()), 1)
    _close(base.detach() * (B * L), dapo.detach() * n_tokens)


def test_dr_grpo_default_budget_is_the_padded_width():
    logp, logp_old, adv, mask = make_inputs(1, 4, 5)
    default, _ = _run("dr_grpo", logp, logp_old, adv, mask, (0.2, 0.2))
    explicit, _ = _run("dr_grpo", logp, logp_old, adv, mask, (0.2, 0.2), max_tokens=5)
    assert float(default.detach()) == float(explicit.detach())


@pytest.mark.parametrize("bad", [0, -3, 2.5, True])
def test_dr_grpo_rejects_a_bad_budget(bad):
    logp, logp_old, adv, mask = make_inputs(1, 2, 3)
    with pytest.raises(ConfigError, match="max_tokens"):
        _run("dr_grpo", logp, logp_old, adv, mask, (0.2, 0.2), max_tokens=bad)


def test_flat_groups_count_in_token_normalisers_until_filtered():
    """A zero-advantage sequence adds no term to DAPO's sum but its tokens to the count: why
    dynamic sampling drops flat groups instead of relying on their zero advantages."""
    logp, logp_old, adv, mask = make_inputs(2, 4, 3, pad=False)
    adv = adv.clone()
    adv[-1] = 0.0
    full, _ = _run("dapo", logp, logp_old, adv, mask, (0.2, 0.28))
    kept, _ = _run("dapo", logp[:-1], logp_old[:-1], adv[:-1], mask[:-1], (0.2, 0.28))
    _close(full.detach() * mask.sum(), kept.detach() * mask[:-1].sum())


# ---- what the clip does to the gradient --------------------------------------------------------

# four length-1 tokens, ratios e^0.5 > 1.2 and e^-0.5 < 0.8, advantages of either sign
RATIO_CASE = (
    torch.tensor([[0.5], [-0.5], [0.5], [-0.5]], dtype=torch.float64),
    torch.tensor([1.0, -1.0, -1.0, 1.0], dtype=torch.float64),
)


@pytest.mark.parametrize("name", ["grpo", "dr_grpo", "dapo", "gspo", "gspo_token"])
def test_ppo_clip_switches_the_gradient_off_outside_the_trust_region(name):
    """A > 0 with ratio above 1 + eps_high, or A < 0 with ratio below 1 - eps_low: zero gradient."""
    log_ratio, adv = RATIO_CASE
    logp = log_ratio.clone().requires_grad_(True)
    mask = torch.ones(4, 1, dtype=torch.bool)
    loss, m = _run(name, logp, torch.zeros(4, 1, dtype=torch.float64), adv, mask, (0.2, 0.2))
    grad = grad_of(loss, logp)[:, 0]
    assert grad[0] == 0.0 and grad[1] == 0.0  # clipped
    assert grad[2] != 0.0 and grad[3] != 0.0  # pessimistic side stays active
    assert float(m["losses/clip_frac_high"]) == 0.25 and float(m["losses/clip_frac_low"]) == 0.25


def test_cispo_caps_the_weight_but_keeps_every_gradient():
    """-(1/N) clip(w) A grad log pi on every token; fractions count capped weights, any sign of A."""
    log_ratio, adv = RATIO_CASE
    logp = log_ratio.clone().requires_grad_(True)
    mask = torch.ones(4, 1, dtype=torch.bool)
    loss, m = _run("cispo", logp, torch.zeros(4, 1, dtype=torch.float64), adv, mask, (0.2, 0.2))
    capped = torch.tensor([1.2, 0.8, 1.2, 0.8], dtype=torch.float64)
    torch.testing.assert_close(grad_of(loss, logp)[:, 0], -capped * adv / 4, atol=SUM_TOL, rtol=SUM_TOL)
    assert float(m["losses/clip_frac_high"]) == 0.5 and float(m["losses/clip_frac_low"]) == 0.5
    assert float(m["losses/ratio_mean"]) == pytest.approx(float(torch.cosh(torch.tensor(0.5))))


@settings(max_examples=30, deadline=None)
@given(shape=shapes, eps_high=st.floats(0.01, 1.0), spread=st.sampled_from([0.05, 0.5]))
def test_cispo_gradient_without_a_lower_bound(shape, eps_high, spread):
    """MiniMax's setting (clip_low = 1, no lower bound): the gradient is the IS policy gradient
    with weights min(w, 1 + eps_high), over the batch's token count; nothing is clipped low."""
    seed, B, L = shape
    logp, logp_old, adv, mask = make_inputs(seed, B, L, spread)
    loss, m = _run("cispo", logp, logp_old, adv, mask, (1.0, eps_high))
    assert float(m["losses/clip_frac_low"]) == 0.0
    w = torch.exp(logp - logp_old).detach()
    want = -torch.clamp(w, max=1.0 + eps_high) * adv[:, None] * mask / max(int(mask.sum()), 1)
    torch.testing.assert_close(grad_of(loss, logp), want, atol=SUM_TOL, rtol=SUM_TOL)
