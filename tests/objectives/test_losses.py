"""Every registry entry against a slow per-token loop reference, and the invariants of the family.

Inputs are drawn by hypothesis as (seed, shape, clip range) and materialised in float64, so the
vectorised and loop versions differ only by summation order.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gspo_dynamics import ConfigError
from gspo_dynamics.objectives import LOSSES, get_loss

# float64, same terms summed in a different order.
SUM_TOL = 1e-12
NAMES = sorted(LOSSES)
METRIC_KEYS = {
    "losses/clip_frac_low",
    "losses/clip_frac_high",
    "losses/clip_frac",
    "losses/ratio_mean",
    "losses/ratio_std",
    "losses/approx_kl",
}


# ---- loop references: one scalar term at a time, written from the paper equations -------------


def _real_tokens(mask, i):
    return [t for t in range(mask.shape[1]) if mask[i, t]]


def _clip(x, lo, hi):
    return torch.clamp(x, lo, hi)


def _ref_pg(logp, logp_old, adv, mask, lo, hi, w):
    total, low, high = 0.0, 0.0, 0.0
    for i in range(logp.shape[0]):
        toks = _real_tokens(mask, i)
        seq = sum((-adv[i] * logp[i, t] for t in toks), torch.zeros((), dtype=logp.dtype))
        total = total + w[i] * seq / max(len(toks), 1)
    return total / logp.shape[0], low, high


def _ref_grpo(logp, logp_old, adv, mask, lo, hi, w):
    total, low, high = 0.0, 0.0, 0.0
    for i in range(logp.shape[0]):
        toks = _real_tokens(mask, i)
        seq = torch.zeros((), dtype=logp.dtype)
        n_low = n_high = 0
        for t in toks:
            ratio = torch.exp(logp[i, t] - logp_old[i, t])
            seq = seq - torch.minimum(ratio * adv[i], _clip(ratio, lo[i], hi[i]) * adv[i])
            n_low += bool(ratio < lo[i] and adv[i] < 0)
            n_high += bool(ratio > hi[i] and adv[i] > 0)
        n = max(len(toks), 1)
        total = total + w[i] * seq / n
        low, high = low + w[i] * n_low / n, high + w[i] * n_high / n
    return total / logp.shape[0], low / w.sum(), high / w.sum()


def _ref_gspo(logp, logp_old, adv, mask, lo, hi, w):
    total, low, high = 0.0, 0.0, 0.0
    for i in range(logp.shape[0]):
        toks = _real_tokens(mask, i)
        log_s = sum((logp[i, t] - logp_old[i, t] for t in toks), torch.zeros((), dtype=logp.dtype))
        s = torch.exp(log_s / max(len(toks), 1))
        total = total - w[i] * torch.minimum(s * adv[i], _clip(s, lo[i], hi[i]) * adv[i])
        low = low + w[i] * bool(s < lo[i] and adv[i] < 0)
        high = high + w[i] * bool(s > hi[i] and adv[i] > 0)
    return total / logp.shape[0], low / w.sum(), high / w.sum()


REFERENCES = {"pg": _ref_pg, "grpo": _ref_grpo, "gspo": _ref_gspo}


def test_every_registry_entry_has_a_loop_reference():
    assert set(REFERENCES) == set(LOSSES)


# ---- inputs ------------------------------------------------------------------------------------


def _inputs(seed, B, L, spread=0.3, pad=True):
    """(logp requiring grad, logp_old, advantages, mask); log-ratios ~ N(0, spread^2)."""
    g = torch.Generator().manual_seed(seed)
    logp_old = -torch.rand(B, L, generator=g, dtype=torch.float64) * 3.0
    logp = (logp_old + spread * torch.randn(B, L, generator=g, dtype=torch.float64)).requires_grad_(True)
    adv = torch.randn(B, generator=g, dtype=torch.float64)
    adv[torch.rand(B, generator=g) < 0.2] = 0.0  # zero-variance groups occur
    lengths = torch.randint(1 if not pad else 0, L + 1, (B,), generator=g)
    mask = torch.arange(L)[None, :] < lengths[:, None]
    return logp, logp_old, adv, mask


shapes = st.tuples(st.integers(0, 2**31 - 1), st.integers(1, 5), st.integers(1, 6))
clips = st.tuples(st.floats(0.01, 0.9), st.floats(0.01, 3.0))


def _grad(loss, logp):
    if not loss.requires_grad:  # a loop over empty sequences builds no graph
        return torch.zeros_like(logp)
    (g,) = torch.autograd.grad(loss, logp, allow_unused=True)
    return torch.zeros_like(logp) if g is None else g


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=40, deadline=None)
@given(shape=shapes, clip=clips, weighted=st.booleans(), spread=st.sampled_from([0.05, 0.3, 1.5]))
def test_vectorised_matches_loop_reference(name, shape, clip, weighted, spread):
    seed, B, L = shape
    logp, logp_old, adv, mask = _inputs(seed, B, L, spread)
    w = torch.rand(B, generator=torch.Generator().manual_seed(seed + 1), dtype=torch.float64) + 0.1
    weights = w if weighted else None
    loss, metrics = get_loss(name)(logp, logp_old, adv, mask, clip_low=clip[0], clip_high=clip[1], weights=weights)
    lo = torch.full((B,), 1.0 - clip[0], dtype=torch.float64)
    hi = torch.full((B,), 1.0 + clip[1], dtype=torch.float64)
    ref, ref_low, ref_high = REFERENCES[name](logp, logp_old, adv, mask, lo, hi, w if weighted else torch.ones(B, dtype=torch.float64))
    assert float(loss.detach()) == pytest.approx(float(ref.detach()), abs=SUM_TOL, rel=SUM_TOL)
    torch.testing.assert_close(_grad(loss, logp), _grad(ref, logp), atol=SUM_TOL, rtol=SUM_TOL)
    assert float(metrics["losses/clip_frac_low"]) == pytest.approx(float(ref_low), abs=SUM_TOL)
    assert float(metrics["losses/clip_frac_high"]) == pytest.approx(float(ref_high), abs=SUM_TOL)


@pytest.mark.parametrize("name", NAMES)
def test_metrics_are_detached_scalars(name):
    logp, logp_old, adv, mask = _inputs(0, 4, 3)
    _, metrics = get_loss(name)(logp, logp_old, adv, mask, clip_low=0.2, clip_high=0.2)
    assert set(metrics) == METRIC_KEYS
    for value in metrics.values():
        assert value.shape == () and not value.requires_grad


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=30, deadline=None)
@given(shape=shapes, clip=clips, spread=st.sampled_from([0.01, 0.5, 3.0]))
def test_clip_fractions_in_unit_interval(name, shape, clip, spread):
    seed, B, L = shape
    logp, logp_old, adv, mask = _inputs(seed, B, L, spread)
    _, m = get_loss(name)(logp, logp_old, adv, mask, clip_low=clip[0], clip_high=clip[1])
    for key in ("losses/clip_frac_low", "losses/clip_frac_high", "losses/clip_frac"):
        assert 0.0 <= float(m[key]) <= 1.0
    assert float(m["losses/clip_frac"]) == pytest.approx(float(m["losses/clip_frac_low"] + m["losses/clip_frac_high"]))
    assert float(m["losses/ratio_std"]) >= 0.0 and float(m["losses/approx_kl"]) >= 0.0


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=30, deadline=None)
@given(shape=shapes, pad=st.integers(1, 4), garbage=st.sampled_from([0.0, 7.0, -1e6, -math.inf]))
def test_masked_padding_changes_nothing(name, shape, pad, garbage):
    seed, B, L = shape
    logp, logp_old, adv, mask = _inputs(seed, B, L, pad=False)
    loss, m = get_loss(name)(logp, logp_old, adv, mask, clip_low=0.2, clip_high=0.3)
    junk = torch.full((B, pad), garbage, dtype=torch.float64)
    logp_padded = torch.cat([logp.detach(), junk + 1.0], dim=1).requires_grad_(True)
    logp_old_padded = torch.cat([logp_old, junk], dim=1)
    mask_padded = torch.cat([mask, torch.zeros(B, pad, dtype=torch.bool)], dim=1)
    loss_p, m_p = get_loss(name)(logp_padded, logp_old_padded, adv, mask_padded, clip_low=0.2, clip_high=0.3)
    assert float(loss_p.detach()) == pytest.approx(float(loss.detach()), abs=SUM_TOL, rel=SUM_TOL)
    grad_p = _grad(loss_p, logp_padded)
    torch.testing.assert_close(grad_p[:, :L], _grad(loss, logp), atol=SUM_TOL, rtol=SUM_TOL)
    assert torch.all(grad_p[:, L:] == 0.0)
    for key in METRIC_KEYS:
        assert float(m_p[key]) == pytest.approx(float(m[key]), abs=SUM_TOL)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=30, deadline=None)
@given(shape=shapes, perm_seed=st.integers(0, 1000))
def test_invariant_to_token_order_within_a_sequence(name, shape, perm_seed):
    """A sequence ratio is a mean of token log-ratios, a token-level loss a token mean."""
    seed, B, L = shape
    logp, logp_old, adv, _ = _inputs(seed, B, L, spread=0.5)
    mask = torch.ones(B, L, dtype=torch.bool)
    perm = torch.randperm(L, generator=torch.Generator().manual_seed(perm_seed))
    loss, _ = get_loss(name)(logp, logp_old, adv, mask, clip_low=0.2, clip_high=0.2)
    loss_perm, _ = get_loss(name)(logp[:, perm], logp_old[:, perm], adv, mask, clip_low=0.2, clip_high=0.2)
    assert float(loss_perm.detach()) == pytest.approx(float(loss.detach()), abs=SUM_TOL, rel=SUM_TOL)


@pytest.mark.parametrize("name", NAMES)
def test_weights_multiply_and_do_not_renormalise(name):
    logp, logp_old, adv, mask = _inputs(3, 5, 4)
    fn = get_loss(name)
    plain, _ = fn(logp, logp_old, adv, mask, clip_low=0.2, clip_high=0.2)
    ones, _ = fn(logp, logp_old, adv, mask, clip_low=0.2, clip_high=0.2, weights=torch.ones(5, dtype=torch.float64))
    twos, _ = fn(logp, logp_old, adv, mask, clip_low=0.2, clip_high=0.2, weights=torch.full((5,), 2.0, dtype=torch.float64))
    assert float(ones.detach()) == pytest.approx(float(plain.detach()), rel=SUM_TOL, abs=SUM_TOL)
    assert float(twos.detach()) == pytest.approx(2.0 * float(plain.detach()), rel=SUM_TOL, abs=SUM_TOL)


@pytest.mark.parametrize("name", NAMES)
def test_per_sequence_clip_tensor_equals_scalar(name):
    logp, logp_old, adv, mask = _inputs(5, 6, 3, spread=0.8)
    fn = get_loss(name)
    loss, m = fn(logp, logp_old, adv, mask, clip_low=0.1, clip_high=0.3)
    lo, hi = torch.full((6,), 0.1, dtype=torch.float64), torch.full((6,), 0.3, dtype=torch.float64)
    loss_t, m_t = fn(logp, logp_old, adv, mask, clip_low=lo, clip_high=hi)
    assert float(loss_t.detach()) == float(loss.detach())
    assert float(m_t["losses/clip_frac"]) == float(m["losses/clip_frac"])


# ---- relations between entries -----------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(shape=shapes, clip=clips, spread=st.sampled_from([0.05, 0.5, 2.0]))
def test_gspo_equals_grpo_on_length_one_sequences(shape, clip, spread):
    seed, B, _ = shape
    logp, logp_old, adv, mask = _inputs(seed, B, 1, spread, pad=False)
    grpo, m_grpo = get_loss("grpo")(logp, logp_old, adv, mask, clip_low=clip[0], clip_high=clip[1])
    gspo, m_gspo = get_loss("gspo")(logp, logp_old, adv, mask, clip_low=clip[0], clip_high=clip[1])
    assert float(gspo.detach()) == pytest.approx(float(grpo.detach()), abs=SUM_TOL, rel=SUM_TOL)
    torch.testing.assert_close(_grad(gspo, logp), _grad(grpo, logp), atol=SUM_TOL, rtol=SUM_TOL)
    for key in METRIC_KEYS:
        assert float(m_gspo[key]) == pytest.approx(float(m_grpo[key]), abs=SUM_TOL)


@settings(max_examples=30, deadline=None)
@given(shape=shapes)
def test_on_policy_gradients_of_pg_grpo_gspo_coincide(shape):
    """At w = 1 no clip is active and d w = w d log pi: every entry gives -A grad(mean_t log pi)."""
    seed, B, L = shape
    _, logp_old, adv, mask = _inputs(seed, B, L)
    grads = {}
    for name in ("pg", "grpo", "gspo"):
        logp = logp_old.clone().requires_grad_(True)
        loss, m = get_loss(name)(logp, logp_old, adv, mask, clip_low=0.2, clip_high=0.2)
        grads[name] = _grad(loss, logp)
        assert float(m["losses/clip_frac"]) == 0.0 and float(m["losses/approx_kl"]) == 0.0
    torch.testing.assert_close(grads["grpo"], grads["pg"], atol=SUM_TOL, rtol=SUM_TOL)
    torch.testing.assert_close(grads["gspo"], grads["pg"], atol=SUM_TOL, rtol=SUM_TOL)


@pytest.mark.parametrize("name", ["grpo", "gspo"])
def test_clip_switches_the_gradient_off_outside_the_trust_region(name):
    """A > 0 with ratio above 1 + eps_high, or A < 0 with ratio below 1 - eps_low: zero gradient."""
    logp_old = torch.zeros(4, 1, dtype=torch.float64)
    logp = torch.tensor([[0.5], [-0.5], [0.5], [-0.5]], dtype=torch.float64, requires_grad=True)
    adv = torch.tensor([1.0, -1.0, -1.0, 1.0], dtype=torch.float64)
    mask = torch.ones(4, 1, dtype=torch.bool)
    loss, m = get_loss(name)(logp, logp_old, adv, mask, clip_low=0.2, clip_high=0.2)
    grad = _grad(loss, logp)[:, 0]
    assert grad[0] == 0.0 and grad[1] == 0.0  # clipped
    assert grad[2] != 0.0 and grad[3] != 0.0  # pessimistic side stays active
    assert float(m["losses/clip_frac_high"]) == 0.25 and float(m["losses/clip_frac_low"]) == 0.25


def test_unknown_loss_names_the_valid_ones():
    with pytest.raises(ConfigError, match="grpo.*gspo|gspo.*grpo"):
        get_loss("ppo2")


def test_shape_mismatch_is_rejected():
    logp, logp_old, adv, mask = _inputs(0, 3, 2)
    with pytest.raises(ValueError, match="advantages"):
        get_loss("grpo")(logp, logp_old, adv[:2], mask, clip_low=0.2, clip_high=0.2)
