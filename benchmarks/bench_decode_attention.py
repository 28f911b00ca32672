"""Benchmark: the decode step's attention alone on a GPU, the Triton kernel's launch options against sdpa.

    python benchmarks/bench_decode_attention.py            # on a CUDA GPU, ~1-2 min (a Triton compile per option)

One attention call of a decode step on a synthetic bf16 KV cache shaped as a built-in preset's rollout
(100m: B = 256 rows, H = 12 heads, d_h = 64; 1b: B = 64, H = 16, d_h = 128; S = 320 cache slots, the
first 8 of each row padding), at slot s = 136 (the mean attended length of a 257-token rollout after an
8-token prompt) and s = 319 (the last). Each row is timed as the median of `--repeats` calls between CUDA
events after 3 warm-ups; the bandwidth counts the keys and values the call must read, 2 B H_kv (s + 1) d_h
bytes per element size, against the device's HBM bandwidth (`bench_trainer.gpu_spec`). Compared:

- `_triton_attention.decode_attention` over (block, num_warps, num_stages, chunks, flags_in_loads);
- `scaled_dot_product_attention` with the graph path's boolean mask over a 64-slot window (ATTENTION "sdpa");
- `scaled_dot_product_attention` on the exact filled prefix without a mask (what no masked kernel can beat).

What it is for: the rollout's share of its bandwidth bound is 17-32% (benchmarks/RESULTS.md), and the
kernel read the cache at ~36% of the bandwidth inside the trainer's step; this finds the launch options
that read it fastest. The section is written to benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import datetime
import itertools

import torch
from _results import failed, replace_section, run
from bench_trainer import gpu_spec
from torch.nn import functional as F

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.train import _triton_attention

SECTION = "## Decode attention kernel (GPU)"
SHAPES = {"100m": (256, 12, 64), "1b": (64, 16, 128)}  # rows B, heads H (= H_kv), d_h
SLOTS, PAD, WINDOW = 320, 8, 64
OPTIONS = {"block": (32, 64), "num_warps": (4, 8), "num_stages": (2, 3), "chunks": (1, 2), "flags_in_loads": (True, False)}


def attended_bytes(B: int, H: int, d_h: int, slot: int, itemsize: int = 2) -> int:
    """Bytes of keys and values a call must read: the slots 0 .. slot of every row and head, padding included
    (a kernel cannot know a slot is padding without its flag; the flags' bytes are left out)."""
    return 2 * B * H * (slot + 1) * d_h * itemsize


def median_us(fn, repeats: int) -> float:
    """Median microseconds of `repeats` calls of fn, each between CUDA events, after 3 warm-up calls."""
    for _ in range(3):
        fn()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return float(torch.tensor(times).median())


def cases(shape: tuple[int, int, int], slot: int, repeats: int, device: str = "cuda", timer=median_us):
    """(label, microseconds) of every compared call on one synthetic cache of `shape` (B, H, d_h), each
    timed by `timer(fn, repeats)`; a launch option Triton refuses is a row with its error."""
    B, H, d_h = shape
    gen = torch.Generator(device).manual_seed(0)
    q = torch.randn(B, H, d_h, device=device, generator=gen).to(torch.bfloat16)
    keys, values = (torch.randn(B, H, SLOTS, d_h, device=device, generator=gen).to(torch.bfloat16) for _ in range(2))
    real = torch.ones(B, SLOTS, dtype=torch.bool, device=device)
    real[:, :PAD] = False
    at = torch.tensor([slot], device=device)
    W = min(SLOTS, -(-(slot + 1) // WINDOW) * WINDOW)
    keep = (real[:, :W] & (torch.arange(W, device=device) <= slot))[:, None, None]
    q4 = q[:, :, None]
    yield "sdpa, boolean mask over the 64-slot window (the graph path's sdpa)", timer(
        lambda: F.scaled_dot_product_attention(q4, keys[:, :, :W], values[:, :, :W], attn_mask=keep, scale=1.0), repeats)
    yield "sdpa, exact prefix, no mask", timer(
        lambda: F.scaled_dot_product_attention(q4, keys[:, :, : slot + 1], values[:, :, : slot + 1], scale=1.0), repeats)
    for block, warps, stages, chunks, flags in itertools.product(*OPTIONS.values()):
        label = (f"triton, block {block}, {warps} warps, {stages} stages, {chunks} chunk(s), "
                 f"flags {'in the loads' if flags else 'on the scores'}")
        try:
            yield label, timer(lambda: _triton_attention.decode_attention(
                q, keys, values, real, at, chunks, block=block, num_warps=warps, num_stages=stages,
                flags_in_loads=flags), repeats)
        except Exception as e:  # noqa: BLE001 - a launch option Triton refuses is a row, not a stopped sweep
            yield failed(label, e), None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="100m,1b", help=f"comma-separated shapes of {sorted(SHAPES)}")
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--no-write", dest="write", action="store_false", help="print only")
    args = parser.parse_args()
    name, _, bandwidth = gpu_spec()
    if _triton_attention.triton is None:
        raise ConfigError("this benchmark needs Triton (it ships with CUDA builds of torch)")
    presets = args.models.split(",")
    unknown = sorted(set(presets) - set(SHAPES))
    if unknown:
        raise ConfigError(f"--models: unknown {', '.join(unknown)}; known: {', '.join(sorted(SHAPES))}")
    lines = [SECTION, "",
             f"`python benchmarks/bench_decode_attention.py --models {args.models} --repeats {args.repeats}` "
             f"({datetime.date.today()}, {name}, torch {torch.__version__}): one decode attention call on a bf16 cache of "
             f"{SLOTS} slots ({PAD} padding), median of {args.repeats} calls; bandwidth = keys and values up to the slot / "
             f"time, against {bandwidth / 1e12:.2f} TB/s.", "",
             "| shape | slot | call | microseconds | TB/s | share of the bandwidth |", "|---|---|---|---|---|---|"]
    for preset in presets:
        B, H, d_h = SHAPES[preset]
        for slot in (136, SLOTS - 1):
            bytes_read = attended_bytes(B, H, d_h, slot)
            rows = sorted(cases(SHAPES[preset], slot, args.repeats), key=lambda r: float("inf") if r[1] is None else r[1])
            for label, us in rows:
                cells = "- | - | -" if us is None else f"{us:.1f} | {bytes_read / us / 1e6:.2f} | {bytes_read / us / 1e6 / (bandwidth / 1e12):.0%}"
                lines.append(f"| {preset} (B {B}, H {H}, d_h {d_h}) | {slot} | {label} | {cells} |")
                print(lines[-1], flush=True)
    if args.write:
        replace_section(SECTION, "\n".join(lines))


if __name__ == "__main__":
    run(main)
