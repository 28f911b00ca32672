"""Benchmark: a full pass of the built-in model over padded rows, packed to the real positions against unpacked.

An RL batch's completions end at their EOS, so a teacher-forced pass over B rows of up to T tokens holds padding.
`CausalLM.forward` runs such a pass packed (`model._packing`: projections, norms, MLPs, RoPE and the head on the
n real positions; attention in length buckets) when padding is at least PAD_SAVING of the positions. Timed here,
on the same rows and weights: the forward and backward of a masked mean log-prob (what `_step.update` does
before the optimizer), packed and with packing off (PAD_SAVING = 1: one pass over all B T positions, every
position computed). Rows: a first token and completion lengths drawn uniformly from [T / 8, T - 1] (seeded),
right-padded; random token ids (the cost does not depend on them).
Rates: real tokens / second; best of --repeats after --warmup passes; the speed-up is unpacked time / packed.

    cd /work/main && .venv/bin/python benchmarks/bench_packing.py                  # CPU: 100k and 1m, ~30 s
    .venv/bin/python benchmarks/bench_packing.py --device cuda --models 100m,1b    # GPU, bf16 autocast
"""

from __future__ import annotations

import argparse

import torch
from _results import best_time, device_tools, publish, run, setting, table, timing_options

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.train import build_model, preset_config
from gspo_dynamics.train import model as model_module

SECTION = "## Packed full passes, update forward and backward ({})"  # CPU or GPU: one section each
COMMAND = "cd /work/main && .venv/bin/python benchmarks/bench_packing.py"
VOCAB = 16


def padded_rows(B: int, T: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids (B, T) int64, random, 0 at padding; mask (B, T) int64): row b real on its first 1 + L_b positions,
    L_b ~ U[T / 8, T - 1]."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(max(1, T // 8), T, (B,), generator=g)
    mask = (torch.arange(T) <= lengths[:, None]).long()
    return torch.randint(0, VOCAB, (B, T), generator=g) * mask, mask


def pass_time(model, ids, mask, autocast, sync, repeats: int, warmup: int, packed: bool) -> float:
    """Best seconds of one forward + backward of the masked mean log-prob of token 0, packed or not."""
    saving = model_module.PAD_SAVING
    model_module.PAD_SAVING = saving if packed else 1.0
    def step():
        model.zero_grad(set_to_none=True)
        with autocast():
            logits, _ = model(ids, mask)
        ((torch.log_softmax(logits.float(), -1)[..., 0] * mask).sum() / mask.sum()).backward()

    try:
        return best_time(step, sync, repeats, warmup)
    finally:
        model_module.PAD_SAVING = saving


def measure(preset: str, B: int, T: int, device: str, repeats: int, warmup: int) -> dict:
    """One preset's row: real tokens, padding share, packed and unpacked real tokens/s, speed-up."""
    model = build_model(preset_config(preset, VOCAB, max_seq_len=max(T, 8)), torch.Generator().manual_seed(0)).to(device)
    ids, mask = (x.to(device) for x in padded_rows(B, T))
    autocast, sync = device_tools(device)
    if model_module.CausalLM._packing(mask.bool()) is None:
        raise ConfigError(f"the rows' padding is under PAD_SAVING = {model_module.PAD_SAVING}: nothing to compare")
    real = int(mask.sum())
    times = {packed: pass_time(model, ids, mask, autocast, sync, repeats, warmup, packed) for packed in (False, True)}
    return dict(preset=preset, B=B, T=T, real=real, padding=1 - real / (B * T),
                unpacked=real / times[False], packed=real / times[True], speedup=times[False] / times[True])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    timing_options(parser, repeats=10)
    parser.add_argument("--models", default=None, help="presets, comma-separated (default: 100k,1m on CPU, 100m,1b on CUDA)")
    parser.add_argument("--rows", type=int, default=None, help="B (default 64)")
    parser.add_argument("--length", type=int, default=None, help="T (default: 64 on CPU, 512 on CUDA)")
    args = parser.parse_args()
    cuda = args.device == "cuda"
    device_tools(args.device)  # ConfigError without a GPU
    torch.set_num_threads(args.threads)
    presets = (args.models or ("100m,1b" if cuda else "100k,1m")).split(",")
    B, T = args.rows or 64, args.length or (512 if cuda else 64)
    if B < 1 or T < 8 or args.repeats < 1 or args.warmup < 0:
        raise ConfigError(f"need --rows >= 1, --length >= 8, --repeats >= 1, --warmup >= 0; got {B}, {T}, {args.repeats}, {args.warmup}")
    rows = [measure(p, B, T, args.device, args.repeats, args.warmup) for p in presets]
    section = SECTION.format("GPU" if cuda else "CPU")
    lines = [section, "",
             f"`{COMMAND}{' --device cuda' if cuda else ''} --models {','.join(presets)}` {setting(args.device, args.threads)}. "
             f"B = {B} rows of up to T = {T} tokens: a first token and a completion of U[T/8, T-1] tokens, right-padded. One "
             "forward and backward of a masked mean log-prob, best of "
             f"{args.repeats} after {args.warmup} warm-up passes; tokens/s counts real tokens. Unpacked: every position "
             "computed (PAD_SAVING = 1); packed: `CausalLM._packing` (gspo_dynamics/train/model.py docstring).",
             ""]
    lines += table(["preset", "B x T", "real tokens (padding)", "unpacked tokens/s", "packed tokens/s", "speed-up"],
                   [[r["preset"], f"{r['B']} x {r['T']}", f"{r['real']:,} ({r['padding']:.0%})", f"{r['unpacked']:,.0f}",
                     f"{r['packed']:,.0f}", f"{r['speedup']:.2f}x"] for r in rows])
    publish(section, lines, args.write)


if __name__ == "__main__":
    run(main)
