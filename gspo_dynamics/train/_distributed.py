"""Data parallelism through torch.distributed (torchrun; gloo on CPU, nccl on CUDA).

Every process holds the whole model and trains on its shard of each minibatch: process r of W
takes N/W of the N prompt groups (whole groups, so advantages never cross processes). After the
backward pass the gradients are averaged,

    g = (1/W) sum_r g_r,

in one all-reduce of a flat buffer (what DDP's bucketed all-reduce computes; done by hand so that
the same code serves a gradient taken at another copy of the weights, as `pg` needs). Losses
normalised per sequence (B equal on every process) then give exactly the one-process gradient of
the global batch; losses normalised by the batch's token count (`TOKEN_NORMALISED`) are rescaled
by W n_r / n before the average, n_r the process's tokens and n the global count, so that

    (1/W) sum_r (W n_r / n) (1/n_r) sum_{t in r} l_t = (1/n) sum_t l_t.

Every process starts from the same weights (same seed; rank 0's are broadcast to be sure), takes
the same optimizer step, and so stays identical without further communication.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping

import torch
import torch.distributed as dist

TOKEN_NORMALISED: tuple[str, ...] = ("dapo", "cispo")  # registry losses averaged over the batch's tokens


@dataclass(frozen=True)
class World:
    rank: int = 0
    size: int = 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def active(self) -> bool:
        return self.size > 1


def init_world(device: torch.device) -> World:
    """The process group of a torchrun launch (WORLD_SIZE > 1), initialised once; World() otherwise."""
    size = int(os.environ.get("WORLD_SIZE", "1"))
    if size <= 1:
        return World()
    if not dist.is_initialized():
        dist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo")
    return World(rank=dist.get_rank(), size=dist.get_world_size())


def local_device(requested: str) -> torch.device:
    """The device of this process: `requested`, or cuda:LOCAL_RANK under torchrun with CUDA."""
    if requested == "auto":
        requested = "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda" and "LOCAL_RANK" in os.environ:
        return torch.device(f"cuda:{int(os.environ['LOCAL_RANK'])}")
    return torch.device(requested)


def broadcast_parameters(module: torch.nn.Module, world: World) -> None:
    if world.active:
        for tensor in module.state_dict().values():
            dist.broadcast(tensor, src=0)


def average_gradients(params: list[torch.nn.Parameter], world: World) -> None:
    """g <- (1/W) sum_r g_r for every parameter, in one flat all-reduce (missing gradients count as 0)."""
    if not world.active:
        return
    for p in params:
        if p.grad is None:
            p.grad = torch.zeros_like(p)
    flat = torch.cat([p.grad.reshape(-1) for p in params])
    dist.all_reduce(flat, op=dist.ReduceOp.SUM)
    flat /= world.size
    offset = 0
    for p in params:
        n = p.numel()
        p.grad.copy_(flat[offset:offset + n].view_as(p))
        offset += n


def barrier(world: World) -> None:
    if world.active:
        dist.barrier()


def sum_scalar(value: torch.Tensor, world: World) -> torch.Tensor:
    """sum_r value_r (a copy)."""
    value = value.detach().clone().float()
    if world.active:
        dist.all_reduce(value, op=dist.ReduceOp.SUM)
    return value


def _reduce_op(name: str):
    if name.endswith(("_max", "/max_length")):
        return dist.ReduceOp.MAX
    if name.endswith(("_min", "/min_length")):
        return dist.ReduceOp.MIN
    return dist.ReduceOp.SUM


def gather_rows(x: torch.Tensor, world: World) -> torch.Tensor:
    """The processes' x (same shape on each) concatenated along dim 0 in rank order; x itself on one process."""
    if not world.active:
        return x
    parts = [torch.empty_like(x) for _ in range(world.size)]
    dist.all_gather(parts, x.contiguous())
    return torch.cat(parts)


def mean_metrics(metrics: dict[str, torch.Tensor], world: World,
                 counts: Mapping[str, torch.Tensor] | None = None) -> dict[str, torch.Tensor]:
    """Each scalar metric combined over the processes: maxima (`*_max`, `*/max_length`) and minima
    by max and min; a metric with an entry in `counts` (its local mean's count n_r, e.g. tokens) as
    the global mean sum_r n_r m_r / max(sum_r n_r, 1) (TRL's `global_masked_mean`); the rest averaged,
    exact for means over equal counts (sequences: the same rows on every process)."""
    if not world.active or not metrics:
        return metrics
    counts = {k: v for k, v in (counts or {}).items() if k in metrics}
    out = {}
    if counts:
        names = sorted(counts)
        n = torch.stack([counts[k].detach().float().reshape(()) for k in names])
        flat = torch.cat([torch.stack([metrics[k].detach().float().reshape(()) for k in names]) * n, n])
        dist.all_reduce(flat, op=dist.ReduceOp.SUM)
        out.update(zip(names, (flat[:len(names)] / flat[len(names):].clamp_min(1.0)).unbind()))
    for op in (dist.ReduceOp.SUM, dist.ReduceOp.MAX, dist.ReduceOp.MIN):
        names = sorted(k for k in metrics if k not in counts and _reduce_op(k) == op)
        if not names:
            continue
        flat = torch.stack([metrics[k].detach().float().reshape(()) for k in names])
        dist.all_reduce(flat, op=op)
        if op == dist.ReduceOp.SUM:
            flat /= world.size
        out.update(zip(names, flat.unbind()))
    return {k: out[k] for k in metrics}


def shutdown(world: World) -> None:
    if world.active and dist.is_initialized():
        dist.destroy_process_group()
