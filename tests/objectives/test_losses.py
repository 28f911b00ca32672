"""Every registry entry against its slow loop reference, and the properties every entry shares.

Relations between entries (GSPO vs GRPO, GSPO-token vs GSPO, the normalisers) are in
test_loss_relations.py. Inputs are drawn by hypothesis as (seed, shape, clip range) and
materialised in float64 (`_loss_cases`).
"""

from __future__ import annotations

import math

import pytest
import torch
from _loss_cases import METRIC_KEYS, REFERENCES, SEQUENCE_ADVANTAGES_ONLY, SUM_TOL, clips, grad_of, make_inputs, shapes
from hypothesis import given, settings
from hypothesis import strategies as st

from gspo_dynamics import ConfigError
from gspo_dynamics.objectives import LOSSES, get_loss

NAMES = list(LOSSES)


def _close(a, b):
    assert float(a) == pytest.approx(float(b), abs=SUM_TOL, rel=SUM_TOL)


def test_every_registry_entry_has_a_loop_reference():
    assert set(REFERENCES) == set(LOSSES)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=30, deadline=None)
@given(
    shape=shapes,
    clip=clips,
    weighted=st.booleans(),
    per_token=st.booleans(),
    spread=st.sampled_from([0.05, 0.3, 1.5]),
    extra_budget=st.one_of(st.none(), st.integers(0, 3)),
)
def test_vectorised_matches_loop_reference(name, shape, clip, weighted, per_token, spread, extra_budget):
    seed, B, L = shape
    per_token = per_token and name not in SEQUENCE_ADVANTAGES_ONLY
    logp, logp_old, adv, mask = make_inputs(seed, B, L, spread, per_token=per_token)
    w = torch.rand(B, generator=torch.Generator().manual_seed(seed + 1), dtype=torch.float64) + 0.1
    extra = {"max_tokens": None if extra_budget is None else L + extra_budget} if name == "dr_grpo" else {}
    loss, metrics = get_loss(name)(
        logp, logp_old, adv, mask, clip_low=clip[0], clip_high=clip[1], weights=w if weighted else None, **extra
    )
    lo = torch.full((B,), 1.0 - clip[0], dtype=torch.float64)
    hi = torch.full((B,), 1.0 + clip[1], dtype=torch.float64)
    ones = torch.ones(B, dtype=torch.float64)
    ref, ref_low, ref_high = REFERENCES[name](logp, logp_old, adv, mask, lo, hi, w if weighted else ones, **extra)
    _close(loss.detach(), torch.as_tensor(ref).detach())
    torch.testing.assert_close(grad_of(loss, logp), grad_of(torch.as_tensor(ref), logp), atol=SUM_TOL, rtol=SUM_TOL)
    _close(metrics["losses/clip_frac_low"], ref_low)
    _close(metrics["losses/clip_frac_high"], ref_high)


@pytest.mark.parametrize("name", NAMES)
def test_metrics_are_detached_scalars(name):
    logp, logp_old, adv, mask = make_inputs(0, 4, 3)
    _, metrics = get_loss(name)(logp, logp_old, adv, mask, clip_low=0.2, clip_high=0.2)
    assert set(metrics) == METRIC_KEYS
    for value in metrics.values():
        assert value.shape == () and not value.requires_grad


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=25, deadline=None)
@given(shape=shapes, clip=clips, spread=st.sampled_from([0.01, 0.5, 3.0]), weighted=st.booleans())
def test_clip_fractions_in_unit_interval(name, shape, clip, spread, weighted):
    seed, B, L = shape
    logp, logp_old, adv, mask = make_inputs(seed, B, L, spread)
    w = torch.rand(B, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) if weighted else None
    _, m = get_loss(name)(logp, logp_old, adv, mask, clip_low=clip[0], clip_high=clip[1], weights=w)
    for key in ("losses/clip_frac_low", "losses/clip_frac_high", "losses/clip_frac", "losses/entry_clip_low",
                "losses/entry_clip_high"):
        assert 0.0 <= float(m[key]) <= 1.0
    assert float(m["losses/entry_clip_low"] + m["losses/entry_clip_high"]) <= 1.0
    _close(m["losses/clip_frac"], m["losses/clip_frac_low"] + m["losses/clip_frac_high"])
    assert float(m["losses/ratio_std"]) >= 0.0 and float(m["losses/approx_kl"]) >= 0.0


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=25, deadline=None)
@given(
    shape=shapes,
    pad=st.integers(1, 4),
    garbage=st.sampled_from([0.0, 7.0, -1e6, -math.inf]),
    per_token=st.booleans(),
)
def test_masked_padding_changes_nothing(name, shape, pad, garbage, per_token):
    """Garbage (even -inf log-probs and advantages) under the mask changes no value, gradient or
    metric. dr_grpo's default normaliser is the padded width, so it gets its budget explicitly."""
    seed, B, L = shape
    per_token = per_token and name not in SEQUENCE_ADVANTAGES_ONLY
    logp, logp_old, adv, mask = make_inputs(seed, B, L, pad=False, per_token=per_token)
    extra = {"max_tokens": L} if name == "dr_grpo" else {}
    loss, m = get_loss(name)(logp, logp_old, adv, mask, clip_low=0.2, clip_high=0.3, **extra)
    junk = torch.full((B, pad), garbage, dtype=torch.float64)
    logp_padded = torch.cat([logp.detach(), junk + 1.0], dim=1).requires_grad_(True)
    logp_old_padded = torch.cat([logp_old, junk], dim=1)
    adv_padded = torch.cat([adv, junk], dim=1) if per_token else adv
    mask_padded = torch.cat([mask, torch.zeros(B, pad, dtype=torch.bool)], dim=1)
    loss_p, m_p = get_loss(name)(logp_padded, logp_old_padded, adv_padded, mask_padded, clip_low=0.2, clip_high=0.3, **extra)
    _close(loss_p.detach(), loss.detach())
    grad_p = grad_of(loss_p, logp_padded)
    torch.testing.assert_close(grad_p[:, :L], grad_of(loss, logp), atol=SUM_TOL, rtol=SUM_TOL)
    assert torch.all(grad_p[:, L:] == 0.0)
    for key in METRIC_KEYS:
        _close(m_p[key], m[key])


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=20, deadline=None)
@given(shape=shapes, perm_seed=st.integers(0, 1000))
def test_invariant_to_token_order_within_a_sequence(name, shape, perm_seed):
    """A sequence ratio is a mean of token log-ratios; token losses are token sums or means."""
    seed, B, L = shape
    logp, logp_old, adv, _ = make_inputs(seed, B, L, spread=0.5)
    mask = torch.ones(B, L, dtype=torch.bool)
    perm = torch.randperm(L, generator=torch.Generator().manual_seed(perm_seed))
    loss, m = get_loss(name)(logp, logp_old, adv, mask, clip_low=0.2, clip_high=0.2)
    loss_perm, m_perm = get_loss(name)(logp[:, perm], logp_old[:, perm], adv, mask, clip_low=0.2, clip_high=0.2)
    _close(loss_perm.detach(), loss.detach())
    _close(m_perm["losses/clip_frac"], m["losses/clip_frac"])


@pytest.mark.parametrize("name", NAMES)
def test_weights_multiply_and_do_not_renormalise(name):
    logp, logp_old, adv, mask = make_inputs(3, 5, 4)
    fn = get_loss(name)
    plain, m = fn(logp, logp_old, adv, mask, clip_low=0.2, clip_high=0.2)
    ones, _ = fn(logp, logp_old, adv, mask, clip_low=0.2, clip_high=0.2, weights=torch.ones(5, dtype=torch.float64))
    twos, m2 = fn(logp, logp_old, adv, mask, clip_low=0.2, clip_high=0.2, weights=torch.full((5,), 2.0, dtype=torch.float64))
    _close(ones.detach(), plain.detach())
    _close(twos.detach(), 2.0 * plain.detach())
    for key in METRIC_KEYS:  # metrics are weighted averages: uniform weights change nothing
        _close(m2[key], m[key])


@pytest.mark.parametrize("name", NAMES)
def test_per_sequence_clip_tensor_equals_scalar(name):
    logp, logp_old, adv, mask = make_inputs(5, 6, 3, spread=0.8)
    fn = get_loss(name)
    loss, m = fn(logp, logp_old, adv, mask, clip_low=0.1, clip_high=0.3)
    lo, hi = torch.full((6,), 0.1, dtype=torch.float64), torch.full((6,), 0.3, dtype=torch.float64)
    loss_t, m_t = fn(logp, logp_old, adv, mask, clip_low=lo, clip_high=hi)
    assert float(loss_t.detach()) == float(loss.detach())
    assert float(m_t["losses/clip_frac"]) == float(m["losses/clip_frac"])


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=20, deadline=None)
@given(shape=shapes)
def test_on_policy_full_length_gradient_is_the_policy_gradient(name, shape):
    """At w = 1, with every sequence of length L (so all normalisers are B*L), every entry's
    gradient is -(1/(B L)) A_i grad log pi(y_it), no clip is active and approx_kl is 0."""
    seed, B, L = shape
    _, logp_old, adv, _ = make_inputs(seed, B, L)
    mask = torch.ones(B, L, dtype=torch.bool)
    logp = logp_old.clone().requires_grad_(True)
    loss, m = get_loss(name)(logp, logp_old, adv, mask, clip_low=0.2, clip_high=0.2)
    want = -adv[:, None].expand(B, L) / (B * L)
    torch.testing.assert_close(grad_of(loss, logp), want, atol=SUM_TOL, rtol=SUM_TOL)
    assert float(m["losses/clip_frac"]) == 0.0 and float(m["losses/approx_kl"]) == 0.0
    assert float(m["losses/ratio_mean"]) == 1.0 and float(m["losses/ratio_std"]) == 0.0


@pytest.mark.parametrize("name", sorted(set(LOSSES) - SEQUENCE_ADVANTAGES_ONLY))
@settings(max_examples=20, deadline=None)
@given(shape=shapes, clip=clips)
def test_per_token_advantages_constant_along_a_sequence_equal_per_sequence_ones(name, shape, clip):
    seed, B, L = shape
    logp, logp_old, adv, mask = make_inputs(seed, B, L, spread=0.5)
    loss, m = get_loss(name)(logp, logp_old, adv, mask, clip_low=clip[0], clip_high=clip[1])
    loss_t, m_t = get_loss(name)(logp, logp_old, adv[:, None].expand(B, L), mask, clip_low=clip[0], clip_high=clip[1])
    _close(loss_t.detach(), loss.detach())
    torch.testing.assert_close(grad_of(loss_t, logp), grad_of(loss, logp), atol=SUM_TOL, rtol=SUM_TOL)
    for key in METRIC_KEYS:
        _close(m_t[key], m[key])


@pytest.mark.parametrize("name", sorted(SEQUENCE_ADVANTAGES_ONLY))
def test_sequence_level_entries_reject_per_token_advantages(name):
    logp, logp_old, _, mask = make_inputs(0, 3, 4)
    with pytest.raises(ValueError, match=r"advantages must have shape \(3,\)"):
        get_loss(name)(logp, logp_old, torch.zeros(3, 4, dtype=torch.float64), mask, clip_low=0.2, clip_high=0.2)


def test_unknown_loss_names_every_valid_one():
    with pytest.raises(ConfigError, match="unknown loss 'ppo2'") as err:
        get_loss("ppo2")
    for name in LOSSES:
        assert name in str(err.value)


@pytest.mark.parametrize("name", NAMES)
def test_shape_mismatch_is_rejected(name):
    logp, logp_old, adv, mask = make_inputs(0, 3, 2)
    with pytest.raises(ValueError, match="advantages"):
        get_loss(name)(logp, logp_old, adv[:2], mask, clip_low=0.2, clip_high=0.2)
    with pytest.raises(ValueError, match="mask"):
        get_loss(name)(logp, logp_old, adv, mask[:, :1], clip_low=0.2, clip_high=0.2)


def test_clip_fractions_stay_in_the_unit_interval_when_every_token_is_clipped():
    """Regression (hypothesis, CISPO with weights): every token outside the clip range made
    low + high = 1 + 2e-16 from separately rounded weighted sums."""
    logp, logp_old, adv, mask = make_inputs(12856, 5, 5, 3.0)
    w = torch.rand(5, generator=torch.Generator().manual_seed(12856), dtype=torch.float64)
    for name in NAMES:
        _, m = get_loss(name)(logp, logp_old, adv, mask, clip_low=0.25, clip_high=0.25, weights=w)
        assert 0.0 <= float(m["losses/clip_frac_low"]) and float(m["losses/clip_frac"]) <= 1.0
