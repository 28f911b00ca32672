"""What every sequence policy provides, and the routing record of a mixture-of-experts policy.

A policy scores responses given prompts, teacher-forced, in one pass:

    logits, routing = policy(prompts, tokens, routing=None)   # (B, L, V): logits[:, t] is the
                                                              # distribution of tokens[:, t]
                                                              # given prompts and tokens[:, :t]

and decodes incrementally, one batched step per response position (what `sample` drives):

    logits, state = policy.begin(prompts, max_len)            # (B, V) for response position 0
    logits = policy.extend(state, token)                      # (B, V) for the next position

`state.routing` holds the expert choices made while decoding (None for dense policies).
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

import torch

from gspo_dynamics._checks import positive_int


class Routing(NamedTuple):
    """The expert choices of a top-k mixture-of-experts policy at every layer and input position.

    Input positions are the teacher-forced inputs, the prompt followed by all response tokens but
    the last: T = P + L - 1. Passing a `Routing` back to the policy replays it:
    with `gates`, the forward pass reproduces the recorded one (choices and mixing weights, so the
    router gets no gradient from it); with `gates=None` (`experts_only()`, the routing replay of
    GSPO, Zheng et al. 2025, arXiv 2507.18071) only the choices are kept and the mixing weights
    are recomputed by the current router, which then trains.
    """

    experts: torch.Tensor  # (n_layers, B, T, k) int64, the chosen experts in ascending order
    gates: torch.Tensor | None  # (n_layers, B, T, k) their mixing weights; None = recompute

    def experts_only(self) -> Routing:
        return Routing(self.experts, None)

    def layer(self, index: int) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(experts, gates or None) of one layer, each (B, T, k)."""
        return self.experts[index], None if self.gates is None else self.gates[index]


class DecodeState(Protocol):
    routing: Routing | None  # choices recorded so far (MoE) or None


class SequencePolicy(Protocol):
    """The protocol `TabularPolicy`, `TinyTransformer` and `TinyMoETransformer` follow."""

    vocab_size: int  # V

    def __call__(
        self, prompts: torch.Tensor, tokens: torch.Tensor, routing: Routing | None = None
    ) -> tuple[torch.Tensor, Routing | None]: ...

    def begin(self, prompts: torch.Tensor, max_len: int) -> tuple[torch.Tensor, DecodeState]: ...

    def extend(self, state: DecodeState, token: torch.Tensor) -> torch.Tensor: ...


def check_prompts(prompts: torch.Tensor) -> None:
    if prompts.ndim != 2 or prompts.shape[1] < 1 or prompts.dtype != torch.long:
        got = f"{prompts.dtype} {tuple(prompts.shape)}"
        raise ValueError(f"prompts must be an int64 tensor of shape (B, P >= 1), got {got}")


def check_tokens(prompts: torch.Tensor, tokens: torch.Tensor) -> None:
    check_prompts(prompts)
    if tokens.ndim != 2 or tokens.shape[0] != prompts.shape[0] or tokens.shape[1] < 1:
        B = prompts.shape[0]
        raise ValueError(f"tokens must have shape ({B}, L >= 1) like the prompts, got {tuple(tokens.shape)}")


def check_max_len(max_len) -> int:
    positive_int("the response length max_len", max_len)
    return max_len


def no_routing(policy: object, routing: Routing | None) -> None:
    """A dense policy has nothing to replay: a routing passed to it is a mistake, not a no-op."""
    if routing is not None:
        raise ValueError(f"{type(policy).__name__} has no router; routing must be None")
