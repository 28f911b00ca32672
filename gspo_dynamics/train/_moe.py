"""A top-k mixture-of-experts MLP whose experts run as batched matmuls, and its load-balance loss.

    l = W_r h  (E,),   S = top-k(l) (as a sorted set),   g_e = softmax_{e in S}(l_e),
    MoE(h) = sum_{e in S} g_e W_down,e gelu(W_up,e h)

(gates renormalised over the chosen experts, as in Mixtral). No token is dropped. The token-expert
assignments are sorted by expert and dispatched into a (E, C, d) buffer, C the largest number of tokens
any expert received, and all experts run in one `bmm` (`_batched`: two launches whatever E). On a CPU,
when that buffer would hold at least GROUPED_PADDING times the N k real rows and there are at least
GROUPED_MIN_ROWS of them, each expert instead runs one matmul pair over its own tokens (`_grouped`, no
padding rows): 1.5-2.8x the buffer's speed at 512-4096 rows with the buffer 1.5-3 times the real rows
(1m widths, 2 CPU cores, forward and backward, benchmarks/bench_moe.py). With fewer rows (a decode
step's) the buffer's two launches win (the grouped path measured 0.2-0.97x there), and with even routing
the two are within noise (0.65-1.4x). Never inside torch.compile, where each expert's block size would be
a symbolic size and each new pattern of empty experts a recompile. Both compute the same products per
row: they agree to float rounding (tests/train/test_model.py). Each token's output depends on its own
row only, so a cached decode step and a teacher-forced pass compute the same numbers.

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


GROUPED_PADDING = 1.5  # buffer rows E C over real rows N k from which a CPU runs `_grouped` ...
GROUPED_MIN_ROWS = 512  # ... given at least this many real rows (module docstring)


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
        """x (N, d), experts and gates (N, k) -> sum_j gates_j expert_j(x) (N, d): `_batched`, or `_grouped` on a CPU
        where the buffer would be mostly padding (module docstring)."""
        N, k = experts.shape
        flat = experts.reshape(-1)  # (N k,) expert of each assignment
        order = torch.argsort(flat, stable=True)  # assignments grouped by expert
        counts = torch.bincount(flat, minlength=self.n_experts)  # (E,)
        grouped = (not x.is_cuda and not torch.compiler.is_compiling() and N * k >= GROUPED_MIN_ROWS
                   and self.n_experts * int(counts.max()) >= GROUPED_PADDING * N * k)
        run = self._grouped if grouped else self._batched
        rows = run(x[order // k], flat[order], counts)  # (N k, d), the sorted assignments' outputs
        unsorted = torch.empty_like(rows)
        unsorted[order] = rows
        mixed = unsorted.view(N, k, -1) * gates[..., None]  # (N, k, d)
        return mixed.sum(1).to(x.dtype)

    def _batched(self, xs: torch.Tensor, sorted_e: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
        """The sorted assignments' inputs xs (M, d) (expert sorted_e, ascending) through their experts in one
        (E, C, d) buffer, C = max counts: two `bmm`s."""
        starts = torch.cumsum(counts, 0) - counts
        rank = torch.arange(len(sorted_e), device=xs.device) - starts[sorted_e]  # row within the expert's block
        buffer = xs.new_zeros(self.n_experts, int(counts.max()), xs.shape[1])  # (E, C, d); one host sync
        buffer[sorted_e, rank] = xs
        h = F.gelu(torch.bmm(buffer, self.w_up))  # (E, C, f); autocast may run these in bf16
        return torch.bmm(h, self.w_down)[sorted_e, rank]  # (M, d)

    def _grouped(self, xs: torch.Tensor, sorted_e: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
        """The same (`_batched`'s arguments; the blocks' experts are their order) as one matmul pair per expert over
        its own rows (no padding)."""
        blocks = xs.split(counts.tolist())  # one host sync
        return torch.cat([F.gelu(block @ self.w_up[e]) @ self.w_down[e] for e, block in enumerate(blocks)])


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
