"""KL penalties: k3 is non-negative and unbiased for the exact categorical KL."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gspo_dynamics.objectives import kl_exact_categorical, kl_k3

TOL = 1e-12

logit_pairs = st.tuples(st.integers(0, 2**31 - 1), st.integers(2, 6), st.sampled_from([0.1, 1.0, 5.0]))


def _logits(seed, K, scale):
    g = torch.Generator().manual_seed(seed)
    return (scale * torch.randn(2, K, generator=g, dtype=torch.float64)).unbind(0)


@settings(max_examples=50, deadline=None)
@given(pair=logit_pairs)
def test_k3_is_unbiased_for_exact_kl_and_nonnegative(pair):
    logits, ref = _logits(*pair)
    logp, logq = torch.log_softmax(logits, -1), torch.log_softmax(ref, -1)
    k3 = kl_k3(logp, logq)
    assert torch.all(k3 >= 0.0)
    assert float((logp.exp() * k3).sum()) == pytest.approx(float(kl_exact_categorical(logits, ref)), abs=TOL)


@settings(max_examples=50, deadline=None)
@given(pair=logit_pairs)
def test_exact_kl_matches_numpy_and_vanishes_on_the_diagonal(pair):
    logits, ref = _logits(*pair)
    p = np.exp(logits.numpy() - logits.numpy().max())
    p /= p.sum()
    q = np.exp(ref.numpy() - ref.numpy().max())
    q /= q.sum()
    assert float(kl_exact_categorical(logits, ref)) == pytest.approx(float(np.sum(p * np.log(p / q))), abs=TOL)
    assert float(kl_exact_categorical(logits, logits)) == 0.0
    assert float(kl_k3(logits, logits).abs().max()) == 0.0


def test_exact_kl_ignores_zero_probability_actions():
    logits = torch.tensor([0.0, 1.0, -torch.inf], dtype=torch.float64)
    ref = torch.tensor([0.5, 0.0, 0.0], dtype=torch.float64)
    value = kl_exact_categorical(logits, ref)
    want = kl_exact_categorical(logits[:2], torch.log_softmax(ref, -1)[:2])  # renormalised 2-arm part
    assert torch.isfinite(value)
    p = torch.softmax(logits[:2], -1)
    q = torch.softmax(ref, -1)[:2]
    assert float(value) == pytest.approx(float((p * (p.log() - q.log())).sum()), abs=TOL)
    assert torch.isfinite(want)


def test_exact_kl_batches_over_leading_dims():
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(3, 4, 5, generator=g, dtype=torch.float64)
    ref = torch.randn(3, 4, 5, generator=g, dtype=torch.float64)
    out = kl_exact_categorical(logits, ref)
    assert out.shape == (3, 4)
    assert float(out[1, 2]) == pytest.approx(float(kl_exact_categorical(logits[1, 2], ref[1, 2])), abs=TOL)
