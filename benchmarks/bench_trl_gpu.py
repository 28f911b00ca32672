"""Benchmark: our trainer against TRL's GRPOTrainer on a GPU, the same Hugging Face Llama.

    python benchmarks/bench_trl_gpu.py --model 100m --prompts 32      # on a CUDA GPU with trl and datasets

The Llama is built from a config in code with a built-in preset's sizes (hidden, layers, heads, MLP
width; Llama's SwiGLU and RMSNorm, so ~130M parameters at 100m), the same initial weights on both sides.
Both run the `count` task (length --length), N prompts x G completions per optimizer step, on-policy GRPO,
AdamW, no KL, bf16 mixed precision (float32 weights): ours on the HF weights rebuilt in our model
(`hf.native_from_hf`: the CUDA graph rollout), TRL's GRPOTrainer on transformers' generate. What a step's
rollout and update are, and the rates (completion tokens / rollout time, batch tokens / update time,
completion tokens / step), as benchmarks/bench_trainer.py's module docstring has them; best of --repeats
steps after --warmup steps, TRL's steps first, then ours. The section is written to benchmarks/RESULTS.md.

The GPU machines lent here have no trl or datasets: benchmarks/gpu_session.sh's `trl` stage installs the
wheels that benchmarks/gpu_wheels.sh downloads beforehand (carried as .whl).
"""

from __future__ import annotations

import argparse
import copy
import datetime
import tempfile

import torch
from _results import replace_section, run
from bench_trainer import CLIP, LR, Ours, TRLSide, _version, gpu_spec, hf_model, rates

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.train import Tokenizer, make_task, preset_config
from gspo_dynamics.train.hf import native_from_hf

SECTION = "## Trainer vs TRL GRPOTrainer (GPU)"


def compare(device: str, sizes: tuple[int, int, int, int], N: int, G: int, length: int, warmup: int,
            repeats: int) -> dict[str, dict[str, float]]:
    """{"TRL GRPOTrainer": rates, "ours (native)": rates} of `repeats` steps after `warmup` on `device`
    (`bench_trainer.rates`: best of the steps)."""
    tok = Tokenizer()
    task = make_task("count", tok, length=length)
    base = hf_model(tok, task.max_new_tokens + 2, sizes)
    with tempfile.TemporaryDirectory() as d:
        trl = TRLSide(copy.deepcopy(base), task, tok, N, G, warmup + repeats, d, device=device).run()[warmup:]
    autocast = (lambda: torch.autocast("cuda", dtype=torch.bfloat16)) if device == "cuda" else None
    ours = Ours(native_from_hf(copy.deepcopy(base)), task, tok, N, G, device=device, autocast=autocast)
    mine = [ours.step() for _ in range(warmup + repeats)][warmup:]
    return {"TRL GRPOTrainer": rates(trl, 0), "ours (native)": rates(mine, 0)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="100m", help="the built-in preset whose sizes the Llama takes")
    parser.add_argument("--prompts", type=int, default=32, help="N prompts per step")
    parser.add_argument("--group-size", type=int, default=8, help="G completions per prompt")
    parser.add_argument("--length", type=int, default=256, help="count task length L: up to L + 1 completion tokens")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--no-write", dest="write", action="store_false", help="print only")
    args = parser.parse_args()
    name, _, _ = gpu_spec()
    if min(args.prompts, args.group_size, args.length, args.repeats) < 1 or args.warmup < 0:
        raise ConfigError("--prompts, --group-size, --length and --repeats must be >= 1, --warmup >= 0")
    try:
        import datasets  # noqa: F401
        import trl  # noqa: F401
    except ImportError as e:
        raise ConfigError(f"this benchmark needs trl and datasets ({e}); on a lent GPU: benchmarks/gpu_wheels.sh first")
    config = preset_config(args.model, Tokenizer().vocab_size)
    sizes = (config.d_model, config.n_layers, config.n_heads, config.d_ff)
    r = compare("cuda", sizes, args.prompts, args.group_size, args.length, args.warmup, args.repeats)
    trl, ours = r["TRL GRPOTrainer"], r["ours (native)"]
    lines = [SECTION, "",
             f"`python benchmarks/bench_trl_gpu.py --model {args.model} --prompts {args.prompts}` ({datetime.date.today()}, "
             f"{name}, torch {torch.__version__}, trl {_version('trl')}, transformers {_version('transformers')}): a Llama of "
             f"the {args.model} preset's sizes {sizes} (hidden, layers, heads, MLP), bf16 mixed precision, `count` task "
             f"L = {args.length}, N = {args.prompts} x G = {args.group_size}, GRPO (eps {CLIP}), lr {LR}, best of "
             f"{args.repeats} steps after {args.warmup}.", "",
             "| trainer | rollout tokens/s | update tokens/s | whole step (completion tokens/s) |", "|---|---|---|---|"]
    for label, x in r.items():
        lines.append(f"| {label} | {x['rollout']:,.0f} | {x['update']:,.0f} | {x['step']:,.0f} |")
    lines += ["", f"Ours / TRL: rollout {ours['rollout'] / trl['rollout']:.2f}x, update {ours['update'] / trl['update']:.2f}x, "
                  f"step {ours['step'] / trl['step']:.2f}x."]
    print("\n".join(lines))
    if args.write:
        replace_section(SECTION, "\n".join(lines))


if __name__ == "__main__":
    run(main)
