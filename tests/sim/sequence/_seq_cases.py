"""Shared by the sequence tests: policies with random weights, and the tolerances."""

from __future__ import annotations

import torch

from gspo_dynamics.sim.sequence import (
    TOKENIZER,
    MoETransformerConfig,
    TabularPolicy,
    TinyMoETransformer,
    TinyTransformer,
    TransformerConfig,
)

V = TOKENIZER.vocab_size
POLICIES = ("tabular", "transformer", "moe")
# sampler vs teacher forcing: the same numbers reduced in a different order (cache prefix vs
# masked full rows): a few float32 ulps of |logp| ~ 4, ~5e-7 measured at these weight scales
# (~1.5e-6 with weights 15x the GPT-2 init), ~1e-15 in float64
TOL = {torch.float32: 1e-6, torch.float64: 1e-10}
Z = 5.0  # standard errors a Monte Carlo rate may stray from its exact value (fixed seeds)


def make_policy(kind: str, length: int, dtype=torch.float32, seed: int = 0, max_len: int = 32, scale: float = 0.1):
    """A policy of `kind` (one of POLICIES) with random, far-from-uniform weights: its initial
    weights plus noise of std `scale`."""
    g = torch.Generator().manual_seed(seed)
    if kind == "tabular":
        policy = TabularPolicy(length, V)
    elif kind == "transformer":
        policy = TinyTransformer(TransformerConfig(d_model=16, n_layers=2, n_heads=2, max_len=max_len), generator=g)
    else:
        config = MoETransformerConfig(d_model=16, n_layers=2, n_heads=2, max_len=max_len, n_experts=4, top_k=2)
        policy = TinyMoETransformer(config, generator=g)
    policy = policy.to(dtype)
    with torch.no_grad():
        for p in policy.parameters():
            p.add_(scale * torch.randn(p.shape, generator=g, dtype=dtype))
    return policy
