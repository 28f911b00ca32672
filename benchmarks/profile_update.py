"""Profile: where one update of our trainer spends its time, by variant of the full pass (a diagnostic, printed only).

The step of benchmarks/bench_trainer.py (`Ours`: rollout with EOS, scoring, one GRPO update with AdamW) on a
built-in preset, the `count` task, N prompts x G completions. After --warmup steps, the update's median time over
--steps steps per variant of the full pass:

    packed      `CausalLM._packing` as shipped: the real positions, attention in PAD_BUCKETS length buckets
    1 bucket    the same with one attention bucket (PAD_BUCKETS = 1)
    unpacked    every position computed, the padding mask in every layer's attention (PAD_SAVING above 1)

then torch.profiler's table of one shipped step (self CPU time; self device time on a GPU). The variants run one
after another in the same run, so their batches differ (the completions' lengths move as the policy trains): the
tokens a step are printed beside each time. A GPU session found
with it that cuDNN's attention rebuilt its plan for every new shape (benchmarks/RESULTS.md, GPU session notes,
2026-11-26); the unpacked variant's ~300 ms there is still unexplained.

    cd /work/main && .venv/bin/python benchmarks/profile_update.py --preset 100k --prompts 4     # CPU, seconds
    python benchmarks/profile_update.py --device cuda --preset 100m --prompts 32                # GPU (gpu_session.sh profile)
"""

from __future__ import annotations

import argparse
import statistics

import torch
from _results import device_tools, run
from bench_trainer import Ours

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.train import Tokenizer, build_model, make_task, preset_config
from gspo_dynamics.train import model as model_module

VARIANTS = {"packed": {}, "1 bucket": {"PAD_BUCKETS": 1}, "unpacked": {"PAD_SAVING": 1.01}}


def variant_times(ours: Ours, steps: int) -> dict[str, dict[str, float]]:
    """Per VARIANTS entry: the update's median and least seconds over `steps` steps and the mean tokens a step."""
    out = {}
    for name, overrides in VARIANTS.items():
        saved = {k: getattr(model_module, k) for k in overrides}
        try:
            for k, v in overrides.items():
                setattr(model_module, k, v)
            r = [ours.step() for _ in range(steps)]
        finally:
            for k, v in saved.items():
                setattr(model_module, k, v)
        updates = [x["update"] for x in r]
        out[name] = {"median": statistics.median(updates), "least": min(updates),
                     "tokens": statistics.mean(x["tokens"] for x in r)}
    return out


def profile_table(ours: Ours, device: str, rows: int) -> str:
    """torch.profiler's table of one shipped step's ops (the rollout's and scoring's included), by self time."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=activities) as prof:
        ours.step()
    key = "self_cuda_time_total" if device == "cuda" else "self_cpu_time_total"
    return prof.key_averages().table(sort_by=key, row_limit=rows, max_name_column_width=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--preset", default="100k", help="the built-in model preset")
    parser.add_argument("--prompts", type=int, default=4, help="N prompts per step (G = 8 completions each)")
    parser.add_argument("--length", type=int, default=None, help="count task length (default: 16 on CPU, 256 on CUDA)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=5, help="timed steps per variant")
    parser.add_argument("--rows", type=int, default=20, help="rows of the profiler's table")
    args = parser.parse_args()
    autocast, _ = device_tools(args.device)
    if min(args.prompts, args.steps, args.rows) < 1 or args.warmup < 0:
        raise ConfigError("--prompts, --steps and --rows must be >= 1, --warmup >= 0")
    tok = Tokenizer()
    task = make_task("count", tok, length=args.length or (256 if args.device == "cuda" else 16))
    model = build_model(preset_config(args.preset, tok.vocab_size, max_seq_len=task.max_new_tokens + 2),
                        torch.Generator().manual_seed(0))
    ours = Ours(model, task, tok, args.prompts, 8, device=args.device, autocast=autocast if args.device == "cuda" else None)
    for _ in range(args.warmup):
        ours.step()
    for name, t in variant_times(ours, args.steps).items():
        print(f"{name:10s} update {1e3 * t['median']:8.1f} ms (least {1e3 * t['least']:8.1f}), "
              f"{t['tokens']:,.0f} tokens a step", flush=True)
    print(profile_table(ours, args.device, args.rows))


if __name__ == "__main__":
    run(main)
