"""Group advantages: the defining equation, exact zeros for flat groups, affine invariance; the
dynamic-sampling filter."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gspo_dynamics import ConfigError
from gspo_dynamics.objectives import ADVANTAGE_SCALES, filter_informative_groups, group_advantages

# Affine maps of rewards on a grid of quarters keep distinct rewards >= a/4 apart, so the only
# error is rounding of O(1) quantities.
AFFINE_TOL = 1e-9

# Rewards on a grid (verifiable rewards are discrete): groups are often flat, never nearly flat.
reward_grids = st.integers(1, 6).flatmap(
    lambda G: st.lists(
        st.lists(st.integers(-8, 8).map(lambda k: k / 4.0), min_size=G, max_size=G), min_size=1, max_size=5
    )
)


def _t(x):
    return torch.tensor(x, dtype=torch.float64)


@pytest.mark.parametrize("scale", ["group", "batch"])
@settings(max_examples=60, deadline=None)
@given(r=reward_grids, a=st.floats(0.1, 10.0), b=st.floats(-10.0, 10.0), estimator=st.sampled_from(["unbiased", "biased"]))
def test_scaled_advantages_invariant_to_positive_affine_maps(scale, r, a, b, estimator):
    r = _t(r)
    base = group_advantages(r, scale, estimator, eps=0.0)
    moved = group_advantages(a * r + b, scale, estimator, eps=0.0)
    torch.testing.assert_close(moved, base, atol=AFFINE_TOL, rtol=AFFINE_TOL)


@settings(max_examples=60, deadline=None)
@given(r=reward_grids, a=st.floats(0.1, 10.0), b=st.floats(-10.0, 10.0))
def test_mean_baseline_is_shift_invariant_and_scales_linearly(r, a, b):
    r = _t(r)
    torch.testing.assert_close(group_advantages(a * r + b, "none"), a * group_advantages(r, "none"), atol=AFFINE_TOL, rtol=AFFINE_TOL)


@pytest.mark.parametrize("scale", ADVANTAGE_SCALES)
@settings(max_examples=60, deadline=None)
@given(r=reward_grids)
def test_flat_groups_get_exact_zeros_and_others_sum_to_zero(scale, r):
    r = _t(r)
    A = group_advantages(r, scale, eps=1e-4)
    flat = (r == r[:, :1]).all(dim=1)
    assert torch.all(A[flat] == 0.0)
    torch.testing.assert_close(A.sum(dim=1), torch.zeros(len(r), dtype=torch.float64), atol=1e-12, rtol=0)


def test_flat_group_of_inexact_values_is_exactly_zero():
    """mean(0.1, 0.1, 0.1) != 0.1 in floating point; the advantage must still be 0, not ~1e-17/eps."""
    r = torch.full((1, 3), 0.1, dtype=torch.float64)
    for scale in ADVANTAGE_SCALES:
        assert torch.all(group_advantages(r, scale, eps=0.0) == 0.0)


@pytest.mark.parametrize("estimator, ddof", [("unbiased", 1), ("biased", 0)])
def test_group_scale_is_the_defining_equation(estimator, ddof):
    rng = np.random.default_rng(0)
    r = rng.integers(0, 2, size=(50, 8)).astype(float)
    eps = 1e-4
    std = r.std(axis=1, ddof=ddof, keepdims=True)
    want = np.where(std > 0, (r - r.mean(axis=1, keepdims=True)) / (std + eps), 0.0)
    np.testing.assert_allclose(group_advantages(_t(r), "group", estimator, eps).numpy(), want, atol=1e-12)
    batch = (r - r.mean(axis=1, keepdims=True)) / (r.std(ddof=ddof) + eps)
    want_batch = np.where(std > 0, batch, 0.0)
    np.testing.assert_allclose(group_advantages(_t(r), "batch", estimator, eps).numpy(), want_batch, atol=1e-12)


def test_group_of_one_is_flat():
    assert torch.all(group_advantages(_t([[1.0], [0.0]]), "group") == 0.0)


def test_bad_input_raises():
    with pytest.raises(ConfigError, match="advantage scale"):
        group_advantages(_t([[0.0, 1.0]]), "whiten")
    with pytest.raises(ConfigError, match="std estimator"):
        group_advantages(_t([[0.0, 1.0]]), "group", "sample")
    with pytest.raises(ValueError, match=r"\(B, G\)"):
        group_advantages(_t([0.0, 1.0]))


# ---- dynamic sampling (DAPO) -------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(r=reward_grids, a=st.floats(0.1, 10.0), b=st.floats(-10.0, 10.0))
def test_filter_keeps_exactly_the_groups_with_a_signal(r, a, b):
    """Kept <=> rewards not all equal <=> some nonzero advantage; unchanged by r -> a r + b."""
    r = _t(r)
    keep = filter_informative_groups(r)
    assert keep.dtype == torch.bool and keep.shape == (len(r),)
    assert torch.equal(keep, torch.tensor([len(set(row.tolist())) > 1 for row in r]))
    for scale in ADVANTAGE_SCALES:
        assert torch.equal(keep, (group_advantages(r, scale, eps=1e-4) != 0.0).any(dim=1))
    assert torch.equal(filter_informative_groups(a * r + b), keep)


def test_filter_on_binary_rewards_keeps_accuracy_strictly_between_0_and_1():
    rng = np.random.default_rng(3)
    r = rng.integers(0, 2, size=(200, 4)).astype(float)
    accuracy = r.mean(axis=1)
    np.testing.assert_array_equal(filter_informative_groups(_t(r)).numpy(), (accuracy > 0) & (accuracy < 1))


def test_filter_drops_groups_of_one_and_checks_the_shape():
    assert not filter_informative_groups(_t([[1.0], [0.0]])).any()
    with pytest.raises(ValueError, match=r"\(B, G\)"):
        filter_informative_groups(_t([0.0, 1.0]))
