"""The dense MLPs of the built-in transformer's blocks.

    GELU:    MLP(h) = W_down gelu(W_up h)                       (GPT-2; d -> f -> d)
    SwiGLU:  MLP(h) = W_down (silu(W_gate h) * W_up h)          (Shazeer 2020, arXiv 2002.05202; Llama)
"""

from __future__ import annotations

import torch
from torch import nn


class DenseMLP(nn.Module):
    def __init__(self, d_model: int, d_ff: int) -> None:
        super().__init__()
        self.up = nn.Linear(d_model, d_ff, bias=False)
        self.down = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(nn.functional.gelu(self.up(x)))


class SwiGLUMLP(nn.Module):
    """W_down (silu(W_gate h) * W_up h), with W_gate and W_up stacked in one matmul (d -> 2 f)."""

    def __init__(self, d_model: int, d_ff: int) -> None:
        super().__init__()
        self.gate_up = nn.Linear(d_model, 2 * d_ff, bias=False)  # rows: [W_gate; W_up]
        self.down = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.gate_up(x).chunk(2, dim=-1)  # (B, T, f) each
        return self.down(nn.functional.silu(gate) * up)
