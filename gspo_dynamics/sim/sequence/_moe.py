"""A tiny mixture-of-experts transformer: every block's MLP is a top-k router over E experts.

    p = softmax(W_r h)   (E,),     S = top-k(p),     MoE(h) = sum_{e in S} p_e MLP_e(h)

(the gates are the router probabilities of the chosen experts, not renormalised, as in Switch
Transformer for k = 1, so the router gets a gradient for every k). A change of the router between
sampling and update can change which experts are chosen - a discrete jump in the log-probs that
no learning rate makes small. `Routing` replay removes it (see `Routing`), and `routing_changes`
counts it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from gspo_dynamics._checks import positive_int
from gspo_dynamics._errors import ConfigError
from gspo_dynamics.sim.sequence._policy import Routing
from gspo_dynamics.sim.sequence._transformer import CausalTransformer, KVCache, TransformerConfig


@dataclass(frozen=True, kw_only=True)
class MoETransformerConfig(TransformerConfig):
    """Sizes of a `TinyMoETransformer`: a `TransformerConfig` plus the router."""

    n_experts: int = 4  # E, experts per block
    top_k: int = 2  # k, experts each token is sent to

    def __post_init__(self) -> None:
        super().__post_init__()
        positive_int("n_experts", self.n_experts)
        if isinstance(self.top_k, bool) or not isinstance(self.top_k, int) or not 1 <= self.top_k <= self.n_experts:
            raise ConfigError(f"top_k must be an integer in [1, {self.n_experts}] (n_experts), got {self.top_k!r}")


class MoEMLP(nn.Module):
    """E GELU MLPs as batched weight tensors, mixed by a top-k router.

    Every expert runs on every token and unchosen experts get weight exactly 0: at this size that
    is faster than gathering tokens per expert, and it computes the same numbers for a token
    whatever else is in the batch (so cached decoding and teacher forcing agree).
    """

    def __init__(self, config: MoETransformerConfig) -> None:
        super().__init__()
        E, d, f = config.n_experts, config.d_model, config.ff_dim
        self.top_k = config.top_k
        self.router = nn.Linear(d, E, bias=False)  # W_r
        self.w_up = nn.Parameter(torch.empty(E, d, f))
        self.b_up = nn.Parameter(torch.empty(E, f))
        self.w_down = nn.Parameter(torch.empty(E, f, d))
        self.b_down = nn.Parameter(torch.empty(E, d))

    def forward(self, x: torch.Tensor, replay: tuple[torch.Tensor, torch.Tensor | None] | None = None):
        """x (B, T, d) -> (output (B, T, d), (experts, gates) each (B, T, k)).

        `replay` (experts, gates or None) (B, T, k) fixes the choices instead of the router; with
        gates None the mixing weights are the current router's probabilities of those experts.
        """
        probs = torch.softmax(self.router(x), dim=-1)  # (B, T, E)
        if replay is None:
            gates, experts = probs.topk(self.top_k, dim=-1)  # (B, T, k)
            experts, order = experts.sort(dim=-1)  # a set of experts has one spelling
            gates = gates.gather(-1, order)
        else:
            experts, gates = replay
            if gates is None:
                gates = probs.gather(-1, experts)
        weights = torch.zeros_like(probs).scatter(-1, experts, gates)  # (B, T, E), 0 off the chosen
        h = nn.functional.gelu(torch.einsum("btd,edf->btef", x, self.w_up) + self.b_up)  # (B, T, E, f)
        y = torch.einsum("btef,efd->bted", h, self.w_down) + self.b_down  # (B, T, E, d)
        out = (weights[..., None] * y).sum(dim=2)  # (B, T, d)
        return out, (experts, gates.detach())


class TinyMoETransformer(CausalTransformer):
    """A tiny causal transformer whose MLPs are top-k mixtures of experts.

    `policy(prompts, tokens, routing)` replays `routing` (from `sample`) and returns the routing
    it used, so the choices that changed since sampling can be counted (`routing_changes`).
    """

    def __init__(self, config: MoETransformerConfig, generator: torch.Generator | None = None) -> None:
        """`generator` seeds the initial weights (None: torch's global generator)."""
        if not isinstance(config, MoETransformerConfig):
            raise ConfigError(f"TinyMoETransformer needs a MoETransformerConfig, got {type(config).__name__}")
        super().__init__(config, MoEMLP, generator)

    def _check_routing(self, routing: Routing | None, batch: int, positions: int) -> None:
        if routing is None:
            return
        shape = (self.config.n_layers, batch, positions, self.config.top_k)
        if tuple(routing.experts.shape) != shape:
            raise ValueError(f"routing.experts must have shape {shape}, got {tuple(routing.experts.shape)}")
        if routing.gates is not None and tuple(routing.gates.shape) != shape:
            raise ValueError(f"routing.gates must have shape {shape}, got {tuple(routing.gates.shape)}")

    def _new_cache(self, batch: int, positions: int, like: torch.Tensor) -> KVCache:
        cache = super()._new_cache(batch, positions, like)
        shape = (self.config.n_layers, batch, positions, self.config.top_k)
        experts = torch.zeros(shape, dtype=torch.long, device=like.device)
        cache.routing = Routing(experts, like.new_zeros(shape))
        return cache


def routing_changes(old: Routing, new: Routing, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Per sequence, the number of (layer, position) routing decisions whose expert set differs.

    Args:
        old, new: routings of the same inputs, experts (n_layers, B, T, k).
        mask: (B, L) real response tokens, T = P + L - 1; positions fed a padding token (after
            EOS) are not counted. None counts every position.

    Returns:
        (B,) int64 counts, at most n_layers x (real input positions).
    """
    if old.experts.shape != new.experts.shape:
        raise ValueError(f"routings differ in shape: {tuple(old.experts.shape)} vs {tuple(new.experts.shape)}")
    changed = (old.experts != new.experts).any(dim=-1)  # (n_layers, B, T)
    if mask is not None:
        B, T = changed.shape[1:]
        L = mask.shape[1]
        if mask.shape[0] != B or T - L + 1 < 1:
            raise ValueError(f"mask must have shape ({B}, L) with L <= {T}, got {tuple(mask.shape)}")
        real = torch.cat([mask.new_ones(B, T - L + 1).bool(), mask[:, :-1].bool()], dim=1)  # (B, T)
        changed = changed & real
    return changed.sum(dim=(0, 2))


def affected_tokens(old: Routing, new: Routing, prompt_len: int, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Which response tokens' log-probs depend on a routing decision that differs between two routings.

    Response token t is predicted at input position s_t = P - 1 + t. A layer's MoE output at
    position s feeds the residual stream at s and, through the attention of every later layer, all
    positions >= s; so token t is affected iff

        changed[n_layers - 1, s_t]  or  changed[l, s] for some l < n_layers - 1 and s <= s_t

    (the last layer's output reaches the head only at its own position). An unaffected token has
    the same log-prob under either routing at the same parameters, exactly: routing replay of the
    experts only (`Routing.experts_only`) changes nothing else.

    Args:
        old, new: routings of the same inputs, experts (n_layers, B, T, k), T = P + L - 1.
        prompt_len: P.
        mask: (B, L) real response tokens; None: all real.

    Returns:
        (B, L) bool, False at padding.
    """
    if old.experts.shape != new.experts.shape:
        raise ValueError(f"routings differ in shape: {tuple(old.experts.shape)} vs {tuple(new.experts.shape)}")
    changed = (old.experts != new.experts).any(dim=-1)  # (n_layers, B, T)
    T = changed.shape[2]
    if not 1 <= prompt_len <= T:
        raise ValueError(f"prompt_len must be in [1, {T}] (input positions), got {prompt_len!r}")
    upstream = changed[:-1].any(dim=0).cumsum(dim=-1) > 0  # (B, T): an earlier layer changed at some s' <= s
    affected = (changed[-1] | upstream)[:, prompt_len - 1 :]  # (B, L)
    if mask is not None:
        if tuple(mask.shape) != tuple(affected.shape):
            raise ValueError(f"mask must have shape {tuple(affected.shape)}, got {tuple(mask.shape)}")
        affected = affected & mask.bool()
    return affected
