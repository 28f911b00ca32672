"""Benchmark: the rollout's decode paths on a GPU, one built-in preset, bf16 autocast, fixed length.

    python benchmarks/bench_graph_decode.py --models 100m,1b --prompts 32,8      # on a CUDA GPU

For each preset, rollout tokens/s of `rollout.generate` (B = N prompts x G = 8 rows of the `count`
task's 257 completion tokens, no stop at EOS) on the reference path (`fast=False`: the model's own
cached forward, eagerly) and on the CUDA graph path (`_graph_decode`) in the `--variants` asked for:
an attention (`ATTENTION`: "matmul", "sdpa", "triton"), a weight layout (`MATMUL`: "mm" (in, out),
"linear" (out, in)), and "compile" for the step through torch.compile (`generate(compile_decode=True)`), e.g.
`triton-mm-compile`; best of `--repeats` after one warm-up rollout (the graph path compiles and captures
there; its seconds are reported), against `bench_trainer.decode_bound` (weights and KV cache read once
per step at the device's bandwidth). A variant that fails is a row with its error, not a stopped run.
The section is written to benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import datetime
import time

import torch
from _results import failed, replace_section, run
from bench_trainer import decode_bound, gpu_spec, rollout_rate

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.train import Tokenizer, _graph_decode, build_model, make_task, preset_config

SECTION = "## Rollout decode paths (GPU)"
G = 8


def rate(model, ids, mask, N, fast: bool, repeats: int, compiled: bool = False) -> float:
    """Best completion tokens/s of `repeats` bf16 rollouts after one warm-up rollout (`bench_trainer.rollout_rate`)."""
    return rollout_rate(model, ids, mask, N, fast=fast, autocast=lambda: torch.autocast("cuda", dtype=torch.bfloat16),
                        repeats=repeats, warmup=1, compile_decode=compiled)


def variant(name: str) -> tuple[str, str, bool]:
    """"attention-matmul[-compile]" -> (ATTENTION, MATMUL, compiled)."""
    parts = name.split("-")
    if len(parts) not in (2, 3) or parts[0] not in ("matmul", "sdpa", "triton") or parts[1] not in ("mm", "linear") \
            or parts[2:] not in ([], ["compile"]):
        raise ConfigError(f"--variants: {name!r} is not attention-matmul[-compile] (attention matmul|sdpa|triton, matmul mm|linear)")
    return parts[0], parts[1], len(parts) == 3


def graph_rate(model, ids, mask, N, repeats: int, name: str) -> tuple[str, float | None, float]:
    """(label, tokens/s or None, seconds of the warm-up and timed rollouts) of the graph path in variant `name`;
    a failure is the label's error."""
    attention, matmul, compiled = variant(name)
    shipped = _graph_decode.ATTENTION, _graph_decode.MATMUL
    _graph_decode.ATTENTION, _graph_decode.MATMUL = attention, matmul
    _graph_decode.release(model)  # a session is built for the variant's step
    label = f"CUDA graphs, {attention} attention, {matmul} weights" + (", compiled step" if compiled else "")
    start = time.perf_counter()
    try:
        r = rate(model, ids, mask, N, True, repeats, compiled)
    except Exception as e:  # noqa: BLE001 - a benchmark row records the failure and goes on
        return failed(label, e), None, time.perf_counter() - start
    finally:
        _graph_decode.ATTENTION, _graph_decode.MATMUL = shipped
        torch._dynamo.reset()
    return label, r, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="100m", help="comma-separated built-in presets")
    parser.add_argument("--prompts", default="32", help="N prompts per rollout, one per preset")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--variants", default="sdpa-mm,triton-mm,triton-mm-compile",
                        help="comma-separated graph-path variants, attention-matmul[-compile] (module docstring)")
    parser.add_argument("--no-write", dest="write", action="store_false", help="print only")
    args = parser.parse_args()
    name, _, bandwidth = gpu_spec()
    presets, counts = args.models.split(","), [int(n) for n in args.prompts.split(",")]
    names = args.variants.split(",")
    for v in names:
        variant(v)  # a bad name is one line before any GPU work
    if len(counts) != len(presets):
        raise ConfigError("--prompts needs one count per preset of --models")
    tok = Tokenizer()
    task = make_task("count", tok, length=256)
    N = task.max_new_tokens
    lines = [SECTION, "",
             f"`python benchmarks/bench_graph_decode.py --models {args.models} --prompts {args.prompts} --variants {args.variants}` "
             f"({datetime.date.today()}, "
             f"{name}, torch {torch.__version__}): bf16 autocast, B = N x {G} rows of {N} completion tokens (no stop at EOS), "
             f"best of {args.repeats} after a warm-up rollout; bound = `decode_bound` at {bandwidth / 1e12:.2f} TB/s.", "",
             "| preset | B | path | rollout tokens/s | share of the bound | vs reference | warm-up and timed rollouts, s |",
             "|---|---|---|---|---|---|---|"]
    for preset, n in zip(presets, counts):
        model = build_model(preset_config(preset, tok.vocab_size), torch.Generator().manual_seed(0)).cuda().eval()
        ids, mask = tok.batch_encode([p for p in task.sample_prompts(n) for _ in range(G)], device="cuda")
        bound = decode_bound(model.config, n * G, ids.shape[1], N, bandwidth)
        start = time.perf_counter()
        reference = rate(model, ids, mask, N, False, max(1, args.repeats - 1))
        rows = [("reference (eager)", reference, time.perf_counter() - start)]
        for v in names:
            rows.append(graph_rate(model, ids, mask, N, args.repeats, v))
            print(rows[-1], flush=True)
        for path, r, seconds in rows:
            cells = ("-", "-", "-") if r is None else (f"{r:,.0f}", f"{r / bound:.1%}", f"{r / reference:.2f}x")
            lines.append(f"| {preset} | {n * G} | {path} | {' | '.join(cells)} | {seconds:.0f} |")
            print(lines[-1], flush=True)
        _graph_decode.release(model)
        del model
        torch.cuda.empty_cache()
    print("\n".join(lines))
    if args.write:
        replace_section(SECTION, "\n".join(lines))


if __name__ == "__main__":
    run(main)
