"""Benchmark: the trainer's MoE MLP, each expert's own matmuls (`_grouped`) against the padded (E, C, d) buffer (`_batched`).

`gspo_dynamics.train._moe.MoEMLP` runs `_grouped` on a CPU for many rows with uneven routing and `_batched` otherwise
(its module docstring: GROUPED_MIN_ROWS, GROUPED_PADDING). Timed here
on the same tokens, weights and expert sets: one forward and backward of the sorted assignments through their
experts (what `MoEMLP._experts` hands either path), at the 1m preset's widths (d 128, MLP 512) with E experts, top-2,
N tokens, and a router whose logits get a ramp of height `bias` across the experts: 0 spreads the tokens evenly,
larger values send most of them to the last experts (padding tokens routed alike, a router that collapsed). The
buffer computes E x C rows, C the busiest expert's count; the grouped path the N k rows. Best of --repeats after
--warmup; the speed-up is the buffer's time over the grouped path's.

    cd /work/main && .venv/bin/python benchmarks/bench_moe.py                # CPU, ~10 s
    .venv/bin/python benchmarks/bench_moe.py --device cuda                    # both paths on a GPU, bf16 autocast
"""

from __future__ import annotations

import argparse

import torch
from _results import best_time, device_tools, publish, run, setting, table, timing_options

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.train._moe import MoEMLP

SECTION = "## Trainer MoE experts: grouped matmuls against the padded buffer ({})"
COMMAND = "cd /work/main && .venv/bin/python benchmarks/bench_moe.py"
D, F_WIDTH, TOP_K = 128, 512, 2  # the 1m preset's d_model and d_ff


def assignments(N: int, E: int, bias: float, seed: int = 0):
    """(sorted expert of each of the N k assignments, their counts (E,), the token of each) for a router's logits
    N(0, 1) + a ramp 0 .. bias over the experts."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(N, E, generator=g) + torch.linspace(0.0, bias, E)
    flat = logits.topk(TOP_K, dim=-1).indices.sort(dim=-1).values.reshape(-1)
    order = torch.argsort(flat, stable=True)
    return flat[order], torch.bincount(flat, minlength=E), order // TOP_K


def path_time(moe, path: str, xs, sorted_e, counts, autocast, sync, repeats: int, warmup: int) -> float:
    """Best seconds of one forward and backward of the assignments through `path` (`_batched` or `_grouped`)."""
    def step():
        moe.zero_grad(set_to_none=True)
        with autocast():
            rows = getattr(moe, path)(xs, sorted_e, counts)
        rows.float().square().sum().backward()

    return best_time(step, sync, repeats, warmup)


def measure(E: int, N: int, bias: float, device: str, repeats: int, warmup: int) -> dict:
    """One row: the busiest expert's share, the buffer's rows over the real ones, both times and the speed-up."""
    torch.manual_seed(0)
    moe = MoEMLP(D, F_WIDTH, E, TOP_K).to(device)
    with torch.no_grad():
        moe.w_up.normal_(0, D ** -0.5)
        moe.w_down.normal_(0, F_WIDTH ** -0.5)
    sorted_e, counts, token = (t.to(device) for t in assignments(N, E, bias))
    xs = torch.randn(N, D, device=device)[token].requires_grad_()
    autocast, sync = device_tools(device)
    t = {p: path_time(moe, p, xs, sorted_e, counts, autocast, sync, repeats, warmup) for p in ("_batched", "_grouped")}
    return dict(E=E, N=N, bias=bias, busiest=float(counts.max()) / (N * TOP_K), padded=E * int(counts.max()) / (N * TOP_K),
                batched=t["_batched"], grouped=t["_grouped"], speedup=t["_batched"] / t["_grouped"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    timing_options(parser, repeats=7)
    parser.add_argument("--tokens", type=int, default=2048, help="N tokens (default 2048)")
    args = parser.parse_args()
    cuda = args.device == "cuda"
    device_tools(args.device)  # ConfigError without a GPU
    if args.tokens < 1 or args.repeats < 1 or args.warmup < 0:
        raise ConfigError(f"need --tokens >= 1, --repeats >= 1, --warmup >= 0; got {args.tokens}, {args.repeats}, {args.warmup}")
    torch.set_num_threads(args.threads)
    rows = [measure(E, args.tokens, bias, args.device, args.repeats, args.warmup) for E in (4, 8) for bias in (0.0, 1.5, 4.0)]
    section = SECTION.format("GPU" if cuda else "CPU")
    lines = [section, "",
             f"`{COMMAND}{' --device cuda' if cuda else ''}` {setting(args.device, args.threads)}. The 1m preset's widths "
             f"(d {D}, MLP {F_WIDTH}), top-{TOP_K}, N = {args.tokens} tokens, router logits N(0, 1) plus a ramp of height "
             f"`bias` over the experts; one forward and backward, best of {args.repeats} after {args.warmup}. Rows computed "
             "by the buffer: E x C over the N k assignments (C the busiest expert's count).", ""]
    lines += table(["E", "bias", "busiest expert's share", "buffer rows / real", "buffer ms", "grouped ms", "speed-up"],
                   [[str(r["E"]), f"{r['bias']:g}", f"{r['busiest']:.0%}", f"{r['padded']:.2f}", f"{1e3 * r['batched']:.1f}",
                     f"{1e3 * r['grouped']:.1f}", f"{r['speedup']:.2f}x"] for r in rows])
    publish(section, lines, args.write)


if __name__ == "__main__":
    run(main)
