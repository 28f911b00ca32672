"""Benchmark: the rollout's decode paths on a GPU, one built-in preset, bf16 autocast, fixed length.

    python benchmarks/bench_graph_decode.py --models 100m,1b --prompts 32,8      # on a CUDA GPU

For each preset, rollout tokens/s of `rollout.generate` (B = N prompts x G = 8 rows of the `count`
task's 257 completion tokens, no stop at EOS) on the reference path (`fast=False`: the model's own
cached forward, eagerly) and on the CUDA graph path (`_graph_decode`) with its attentions
(`ATTENTION`: "matmul", "sdpa") and weight layouts (`MATMUL`: "mm" (in, out), "linear" (out, in));
best of `--repeats` after one warm-up rollout (the graph path captures its graphs there), against
`bench_trainer.decode_bound` (weights and KV cache read once per step at the device's bandwidth).
The section is written to benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import datetime

import torch
from _results import replace_section
from bench_trainer import decode_bound, gpu_spec, rollout_rate

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.train import Tokenizer, _graph_decode, build_model, make_task, preset_config

SECTION = "## Rollout decode paths (GPU)"
G = 8


def rate(model, ids, mask, N, fast: bool, repeats: int) -> float:
    """Best completion tokens/s of `repeats` bf16 rollouts after one warm-up rollout (`bench_trainer.rollout_rate`)."""
    return rollout_rate(model, ids, mask, N, fast=fast, autocast=lambda: torch.autocast("cuda", dtype=torch.bfloat16),
                        repeats=repeats, warmup=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="100m", help="comma-separated built-in presets")
    parser.add_argument("--prompts", default="32", help="N prompts per rollout, one per preset")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-write", dest="write", action="store_false", help="print only")
    args = parser.parse_args()
    name, _, bandwidth = gpu_spec()
    presets, counts = args.models.split(","), [int(n) for n in args.prompts.split(",")]
    if len(counts) != len(presets):
        raise ConfigError("--prompts needs one count per preset of --models")
    tok = Tokenizer()
    task = make_task("count", tok, length=256)
    N = task.max_new_tokens
    lines = [SECTION, "",
             f"`python benchmarks/bench_graph_decode.py --models {args.models} --prompts {args.prompts}` ({datetime.date.today()}, "
             f"{name}, torch {torch.__version__}): bf16 autocast, B = N x {G} rows of {N} completion tokens (no stop at EOS), "
             f"best of {args.repeats} after a warm-up rollout; bound = `decode_bound` at {bandwidth / 1e12:.2f} TB/s.", "",
             "| preset | B | path | rollout tokens/s | share of the bound | vs reference |", "|---|---|---|---|---|---|"]
    for preset, n in zip(presets, counts):
        model = build_model(preset_config(preset, tok.vocab_size), torch.Generator().manual_seed(0)).cuda().eval()
        ids, mask = tok.batch_encode([p for p in task.sample_prompts(n) for _ in range(G)], device="cuda")
        bound = decode_bound(model.config, n * G, ids.shape[1], N, bandwidth)
        reference = rate(model, ids, mask, N, False, max(1, args.repeats - 1))
        rows = [("reference (eager)", reference)]
        shipped = _graph_decode.ATTENTION, _graph_decode.MATMUL
        for attention, matmul in (("matmul", "mm"), ("sdpa", "mm"), ("sdpa", "linear")):
            _graph_decode.ATTENTION, _graph_decode.MATMUL = attention, matmul
            _graph_decode.release(model)  # a session is built for the variant's step
            rows.append((f"CUDA graphs, {attention} attention, {matmul} weights", rate(model, ids, mask, N, True, args.repeats)))
        _graph_decode.ATTENTION, _graph_decode.MATMUL = shipped
        for path, r in rows:
            lines.append(f"| {preset} | {n * G} | {path} | {r:,.0f} | {r / bound:.1%} | {r / reference:.2f}x |")
            print(lines[-1], flush=True)
        _graph_decode.release(model)
        del model
        torch.cuda.empty_cache()
    print("\n".join(lines))
    if args.write:
        replace_section(SECTION, "\n".join(lines))


if __name__ == "__main__":
    try:
        main()
    except ConfigError as e:
        raise SystemExit(f"error: {e}")
