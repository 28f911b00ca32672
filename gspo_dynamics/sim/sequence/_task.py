"""What every sequence task provides, and the checks and exact oracles the tasks share.

A task draws a batch of prompts and scores a batch of responses with a verifiable sequence-level
reward, vectorised over the batch:

    prompts = task.prompts(B, generator=g)                 # (B, P) int64, starts with BOS
    tokens, logp, mask, _ = sample(policy, prompts, task.response_len, g, eos=task.eos)
    rewards = task.reward(prompts, tokens, mask)           # (B,) in {0, 1} (or [0, 1], partial credit)

`mask` (B, L) marks real response tokens (a prefix of each row, ending with EOS when the task
uses one); rewards never read a masked position.
"""

from __future__ import annotations

from typing import Protocol

import torch


class SequenceTask(Protocol):
    """The protocol `PatternMatch`, `CountParity` and `Addition` follow."""

    @property
    def vocab_size(self) -> int: ...  # V, token ids are 0..V-1

    @property
    def prompt_len(self) -> int: ...  # P, tokens per prompt (>= 1: BOS)

    @property
    def response_len(self) -> int: ...  # L, the longest response

    @property
    def eos(self) -> int | None: ...  # the token that ends a response early, or None (fixed length)

    def prompts(self, batch: int, *, generator: torch.Generator | None = None, device=None) -> torch.Tensor: ...

    def reward(self, prompts: torch.Tensor, tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor: ...


def check_response(task: SequenceTask, prompts: torch.Tensor, tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Shape checks for `reward`; returns the mask as bool."""
    B, L, P = tokens.shape[0], task.response_len, task.prompt_len
    if tokens.ndim != 2 or tokens.shape[1] != L:
        raise ValueError(f"tokens must have shape (B, {L}), got {tuple(tokens.shape)}")
    if tuple(mask.shape) != tuple(tokens.shape):
        raise ValueError(f"mask must have shape {tuple(tokens.shape)} like tokens, got {tuple(mask.shape)}")
    if tuple(prompts.shape) != (B, P):
        raise ValueError(f"prompts must have shape {(B, P)}, got {tuple(prompts.shape)}")
    return mask.bool()


def check_position_probs(probs: torch.Tensor, length: int) -> None:
    if probs.ndim < 2 or probs.shape[-2] != length:
        raise ValueError(f"position_probs must have shape (..., {length}, V), got {tuple(probs.shape)}")


def count_distribution(p: torch.Tensor) -> torch.Tensor:
    """Distribution of the number of successes among L independent Bernoulli(p_t) trials
    (the Poisson-binomial law), differentiable in p.

        q_0 = e_0,   q_t[n] = q_{t-1}[n] (1 - p_t) + q_{t-1}[n - 1] p_t,   returns q_L

    Args:
        p: (..., L) success probability of each trial.

    Returns:
        (..., L + 1) probabilities of n = 0..L successes.
    """
    L = p.shape[-1]
    q = torch.zeros(*p.shape[:-1], L + 1, dtype=p.dtype, device=p.device)
    q[..., 0] = 1.0
    for t in range(L):
        pt = p[..., t, None]  # (..., 1)
        shifted = torch.cat([torch.zeros_like(q[..., :1]), q[..., :-1]], dim=-1)
        q = q * (1.0 - pt) + shifted * pt
    return q
