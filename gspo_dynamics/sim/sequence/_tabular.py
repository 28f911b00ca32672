"""The tabular policy: an independent softmax at every response position.

    pi(y | x) = prod_t softmax(theta_t)[y_t],        theta: (L, V) logits

No dependence on the prompt or on earlier tokens, so every quantity of interest is a product of
per-position terms: the exact expected reward of the counting tasks (`expected_reward`), the
log-ratio of a sequence as a sum of independent token log-ratios. It is the analytically
tractable testbed for token- vs sequence-level importance ratios.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from gspo_dynamics._checks import positive_int
from gspo_dynamics._errors import ConfigError
from gspo_dynamics.sim.sequence._policy import Routing, check_max_len, check_prompts, check_tokens, no_routing


@dataclass
class _TabularState:
    batch: int
    position: int  # the response position whose logits `extend` returns next
    routing: None = None


class TabularPolicy(nn.Module):
    """Per-position logits theta (L, V), shared by all prompts."""

    def __init__(self, length: int, vocab_size: int, logits: torch.Tensor | None = None) -> None:
        """
        Args:
            length: L, response positions.
            vocab_size: V, tokens.
            logits: (L, V) starting logits theta; None = zeros (the uniform policy).
        """
        super().__init__()
        for name, value in (("length", length), ("vocab_size", vocab_size)):
            positive_int(name, value)
        if logits is None:
            logits = torch.zeros(length, vocab_size)
        elif not torch.is_tensor(logits):
            logits = torch.tensor(logits, dtype=torch.get_default_dtype())
        if tuple(logits.shape) != (length, vocab_size):
            raise ConfigError(f"logits must have shape {(length, vocab_size)}, got {tuple(logits.shape)}")
        self.length = length
        self.vocab_size = vocab_size
        self.logits = nn.Parameter(logits.detach().clone())  # theta, (L, V)

    def probs(self) -> torch.Tensor:
        """(L, V) softmax(theta_t), the token distribution of each position (differentiable)."""
        return torch.softmax(self.logits, dim=-1)

    def forward(self, prompts: torch.Tensor, tokens: torch.Tensor, routing: Routing | None = None):
        """(B, L', V) logits of the first L' <= L positions for every prompt, and no routing."""
        check_tokens(prompts, tokens)
        no_routing(self, routing)
        L = tokens.shape[1]
        if L > self.length:
            raise ValueError(f"tokens have {L} positions, more than the policy's {self.length}")
        return self.logits[:L].expand(tokens.shape[0], L, self.vocab_size), None

    def begin(self, prompts: torch.Tensor, max_len: int) -> tuple[torch.Tensor, _TabularState]:
        check_prompts(prompts)
        if check_max_len(max_len) > self.length:
            raise ConfigError(f"max_len {max_len} exceeds the tabular policy's length {self.length}")
        B = prompts.shape[0]
        return self.logits[0].expand(B, self.vocab_size), _TabularState(batch=B, position=1)

    def extend(self, state: _TabularState, token: torch.Tensor) -> torch.Tensor:
        logits = self.logits[state.position].expand(state.batch, self.vocab_size)
        state.position += 1
        return logits
