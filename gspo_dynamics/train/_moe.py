"""A top-k mixture-of-experts MLP whose experts run as batched matmuls, and its load-balance loss.

    l = W_r h  (E,),   S = top-k(l) (as a sorted set),   g_e = softmax_{e in S}(l_e),
    MoE(h) = sum_{e in S} g_e W_down,e gelu(W_up,e h)

(gates renormalised over the chosen experts, as in Mixtral). Tokens are dispatched into a
(E, C, d) buffer, C the largest number of tokens any expert received (no token is dropped), and
all experts run in one `bmm`; each token's output depends on its own row only, so a cached decode
step and a teacher-forced pass compute the same numbers.

Routing replay: given the expert sets S (from the sampler's forward), the router does not choose;
the gates are recomputed from the current router logits on S, so the router still trains
(GSPO's routing replay, Zheng et al. 2025, arXiv 2507.18071).

Load balance (Switch Transformer, Fedus et al. 2021, eq. 4, for top-k): over the N real tokens,

    f_e = (1 / N k) sum_n 1{e in S_n},   P_e = (1 / N) sum_n softmax(l_n)_e,   LB = E sum_e f_e P_e

which is 1 when the router probabilities are uniform and grows as tokens concentrate.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


class MoEMLP(nn.Module):
    """E GELU experts (d -> f -> d, no biases) mixed by a top-k router."""

    def __init__(self, d_model: int, d_ff: int, n_experts: int, top_k: int) -> None:
        super().__init__()
        self.n_experts, self.top_k = n_experts, top_k
        self.router = nn.Linear(d_model, n_experts, bias=False)  # W_r
        self.w_up = nn.Parameter(torch.empty(n_experts, d_model, d_ff))
        self.w_down = nn.Parameter(torch.empty(n_experts, d_ff, d_model))

    def forward(self, x: torch.Tensor, experts: torch.Tensor | None = None, token_mask: torch.Tensor | None = None):
        """x (B, T, d) -> (out (B, T, d), experts (B, T, k) int64 ascending, load-balance loss ()).

        experts: (B, T, k) replayed expert sets, or None to let the router choose.
        token_mask: (B, T) bool, the real tokens the load-balance statistics average over.
        """
        B, T, d = x.shape
        logits = self.router(x).float()  # (B, T, E), routing decisions in float32
        if experts is None:
            experts = logits.topk(self.top_k, dim=-1).indices.sort(dim=-1).values  # (B, T, k)
        elif tuple(experts.shape) != (B, T, self.top_k):
            raise ValueError(f"replayed experts must have shape {(B, T, self.top_k)}, got {tuple(experts.shape)}")
        gates = torch.softmax(logits.gather(-1, experts), dim=-1)  # (B, T, k)
        out = self._experts(x.reshape(B * T, d), experts.reshape(B * T, self.top_k), gates.reshape(B * T, -1))
        balance = load_balance_loss(torch.softmax(logits, dim=-1), experts, token_mask)
        return out.view(B, T, d), experts, balance

    def _experts(self, x: torch.Tensor, experts: torch.Tensor, gates: torch.Tensor) -> torch.Tensor:
        """x (N, d), experts and gates (N, k) -> sum_j gates_j expert_j(x) (N, d)."""
        N, k = experts.shape
        E = self.n_experts
        flat = experts.reshape(-1)  # (N k,) expert of each assignment
        order = torch.argsort(flat, stable=True)  # assignments grouped by expert
        sorted_e = flat[order]
        counts = torch.bincount(flat, minlength=E)  # (E,)
        starts = torch.cumsum(counts, 0) - counts
        rank = torch.arange(N * k, device=x.device) - starts[sorted_e]  # row within the expert's block
        C = int(counts.max())  # one host sync: the buffer's size
        token = order // k  # the token of each sorted assignment
        buffer = x.new_zeros(E, C, x.shape[1])  # (E, C, d)
        buffer[sorted_e, rank] = x[token]
        h = F.gelu(torch.bmm(buffer, self.w_up))  # (E, C, f); autocast may run these in bf16
        y = torch.bmm(h, self.w_down)  # (E, C, d)
        rows = y[sorted_e, rank]  # (N k, d) in sorted order
        unsorted = torch.empty_like(rows)
        unsorted[order] = rows
        mixed = unsorted.view(N, k, -1) * gates[..., None]  # (N, k, d)
        return mixed.sum(1).to(x.dtype)


def load_balance_loss(probs: torch.Tensor, experts: torch.Tensor, token_mask: torch.Tensor | None) -> torch.Tensor:
    """LB = E sum_e f_e P_e (module docstring) over the tokens where `token_mask` is True.

    Args:
        probs: (B, T, E) router probabilities; experts: (B, T, k) chosen sets;
        token_mask: (B, T) bool or None (every token).

    Returns:
        () float32, differentiable through `probs` (f_e counts are constants).
    """
    E, k = probs.shape[-1], experts.shape[-1]
    weight = probs.new_ones(probs.shape[:-1]) if token_mask is None else token_mask.to(probs.dtype)  # (B, T)
    n = weight.sum().clamp(min=1.0)
    chosen = torch.zeros_like(probs).scatter(-1, experts, 1.0)  # (B, T, E) one-hot sets
    f = (chosen * weight[..., None]).sum((0, 1)) / (n * k)  # (E,)
    P = (probs * weight[..., None]).sum((0, 1)) / n  # (E,)
    return E * (f * P).sum()
