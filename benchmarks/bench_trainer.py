"""Benchmark: tokens/s of our trainer's rollout and update against TRL's GRPOTrainer, same model.

CPU (default): one tiny Hugging Face Llama config built in code (never downloaded), the same
initial weights on both sides, the `count` task (binary reward, completions of up to L + 1
tokens), N prompts x G completions per optimizer step, on-policy (T = 1), GRPO loss, AdamW,
temperature 1, no KL, fp32, torch threads as given. One optimizer step is:

    ours    rollout = gspo_dynamics.train.rollout.generate (KV cache; the `_decode` fast path for the
                      native and built-in models) + decode + task reward +
                      group advantages;
            score   = `_step.score`: on-policy (T = 1, a dropout-free model) only the advantages, as
                      the trainer and TRL do (the update's own forward is pi_old; until 2026-11-26
                      ours also ran a teacher-forced pi_old forward here, counted in its step);
            update  = gspo_dynamics.train._step.update: forward, loss (objectives registry),
                      backward, grad clip, AdamW step (the trainer's own function)
    TRL     rollout = GRPOTrainer._generate_and_score_completions (transformers generate, decode,
                      reward, advantages), timed by wrapping the bound method;
            update  = the rest of the optimizer step between the Trainer callbacks on_step_begin
                      and on_step_end (compute_loss, backward, grad clip, AdamW, logging)

Rates: rollout tokens/s = generated completion tokens / rollout time; update tokens/s = real
(prompt + completion) tokens of the batch / update time; step tokens/s = completion tokens /
whole step. Best over --rounds rounds of --repeats steps each after --warmup steps, and the median
(with quartiles) of ours/TRL over the steps paired in time; a round is one
`train()` call of a fresh GRPOTrainer, and after each of its steps (outside its clock) one step of
ours on each model, so that the sides alternate step by step and see the same machine load; the
load average is recorded. Ours runs the HF model two ways: "native" (`hf.native_from_hf`: the
built-in model rebuilt with the Llama options and the HF weights copied in, so rollouts use our
preallocated KV cache, decode steps that skip finished rows and full passes packed to their real
positions; same logits as transformers to 1e-5, tests/train/test_hf_native.py) and
"wrapper" (`HFCausalLM`: transformers' own forward and DynamicCache). Ours is also run on our
built-in default model of the same width/depth (GELU, LayerNorm; its own random weights, so its
completion lengths differ).

GPU (`--device cuda`): the built-in "100m" preset, bf16 autocast; update tokens/s and MFU =
flops_per_token(seq) x tokens/s / PEAK_FLOPS, and the rollout's decode rate against the memory
bandwidth bound (`decode_bound`: every decode step reads all weights and the cached keys and values
once). The rollout runs on the CUDA graph path (`_graph_decode`; its graphs are captured in the
first rollout of a shape, a warm-up step); the reference path (eager, the model's own cached
forward) is measured on the same model and batch beside it.

    cd /work/main && .venv/bin/python benchmarks/bench_trainer.py            # CPU, ~2-4 min
    .venv/bin/python benchmarks/bench_trainer.py --device cuda               # on a GPU
    .venv/bin/python benchmarks/bench_trainer.py --gpu-pending               # write the GPU section as pending

Needs the benchmark extra: pip install 'gspo-dynamics[bench]' (trl, transformers, datasets).
"""

from __future__ import annotations

import argparse
import copy
import datetime
import os
import tempfile
import time

import torch
from _results import cpu_model, replace_section

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.objectives import get_loss, group_advantages
from gspo_dynamics.train import Tokenizer, build_model, generate, make_task, preset_config
from gspo_dynamics.train import _graph_decode
from gspo_dynamics.train._distributed import World
from gspo_dynamics.train._step import Buffer, dropout_free, score, update
from gspo_dynamics.train.hf import HFCausalLM, native_from_hf
from gspo_dynamics.train.hf_tiny import TINY, hf_model, hf_tokenizer
from gspo_dynamics.train.model import ModelConfig

SECTION_CPU = "## Trainer throughput vs TRL GRPOTrainer (CPU)"
SECTION_GPU = "## Trainer throughput and MFU (GPU)"
COMMAND = "cd /work/main && .venv/bin/python benchmarks/bench_trainer.py"
HIDDEN, LAYERS, HEADS, FF = TINY  # the tiny model (both sides)
# Tiny on purpose: the weights barely move over the timed steps, so the completion lengths (the work per
# step) stay those of the shared initial weights on both sides; the cost of a step does not depend on it.
LR = 1e-6
CLIP = 0.2  # GRPO's eps on both sides (on-policy it never bites)
# Peak dense bf16 tensor-core FLOP/s and HBM bandwidth (bytes/s) by device name (vendor datasheets).
GPU_SPECS = {"H100": (989e12, 3.35e12), "H200": (989e12, 4.8e12), "A100": (312e12, 2.0e12)}


class Ours:
    """Our trainer's step (module docstring) on any model with the CausalLM call."""

    def __init__(self, model, task, tok, N: int, G: int, device: str = "cpu", autocast=None, stop_at_eos: bool = True,
                 train_model=None, fast: bool = True):
        """`stop_at_eos` False: every completion runs to the task's max_new_tokens (a fixed amount of
        work per step, as a GPU throughput measurement wants); `train_model`: what the update calls
        (e.g. torch.compile(model)), default the model itself; `fast` False: rollouts on the
        reference path (`generate(fast=False)`)."""
        self.fast = fast
        self.model, self.task, self.tok, self.N, self.G = model.to(device), task, tok, N, G
        self.train_model = self.model if train_model is None else train_model
        self.device = torch.device(device)
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=LR)
        self.loss_fn = get_loss("grpo")
        self.autocast = autocast or (lambda: torch.autocast("cpu", enabled=False))
        self.generator = torch.Generator(self.device).manual_seed(0)
        self.eos_id = tok.eos_id if stop_at_eos else None
        self.on_policy = dropout_free(model)  # T = 1 always: no pi_old forward (as the trainer at T = 1, and TRL)

    def step(self) -> dict[str, float]:
        sync = torch.cuda.synchronize if self.device.type == "cuda" else (lambda: None)
        prompts = [p for p in self.task.sample_prompts(self.N) for _ in range(self.G)]  # (N G,)
        t0 = time.perf_counter()
        ids, mask = self.tok.batch_encode(prompts, device=self.device)
        self.model.eval()
        with torch.no_grad(), self.autocast():
            ro = generate(self.model, ids, mask, self.task.max_new_tokens, eos_id=self.eos_id, pad_id=self.tok.pad_id,
                          generator=self.generator, fast=self.fast)
        rewards = self.task.reward(prompts, self.tok.decode(ro.completion_ids, ro.completion_mask)).to(self.device)
        buf = Buffer(ro.sequences, ro.attention_mask, ro.completion_mask, ro.sampler_logprobs, ro.routing, ro.truncated, rewards)
        buf.advantages = group_advantages(rewards.view(-1, self.G), scale="group").view(-1)
        sync()
        t1 = time.perf_counter()
        buf = score(buf, self.model, None, group_size=self.G, scale="group", temperature=1.0, replay=False, autocast=self.autocast,
                    old=not self.on_policy)
        self.model.train()
        sync()
        t2 = time.perf_counter()
        update(self.train_model, buf, loss_fn=self.loss_fn, loss_kwargs={"clip_low": CLIP, "clip_high": CLIP}, objective="grpo",
               kl_coef=0.0, temperature=1.0, replay=False, sampler_params=None, optimizer=self.optimizer, max_grad_norm=1.0,
               world=World(), autocast=self.autocast)
        sync()
        t3 = time.perf_counter()
        return {"rollout": t1 - t0, "score": t2 - t1, "update": t3 - t2, "step": t3 - t0,
                "completion_tokens": float(ro.completion_mask.sum()), "tokens": float(ro.attention_mask.sum())}


class TRLSide:
    """TRL's GRPOTrainer run for `max_steps` steps (timing split in the module docstring); `between()`
    is called after each of its steps, outside its timing. On CUDA in bf16 mixed precision (float32
    weights), as ours runs there."""

    def __init__(self, model, task, tok, N: int, G: int, max_steps: int, out_dir: str, between=None, device: str = "cpu"):
        from datasets import Dataset
        from transformers import TrainerCallback
        from trl import GRPOConfig, GRPOTrainer

        self.times: list[dict[str, float]] = []
        current: dict[str, float] = {}
        side = self
        sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)  # the GPU's work inside the clock

        def reward_fn(prompts, completions, completion_ids, **_):  # our task's reward on our decoding
            texts = [tok.decode(torch.tensor(ids)) for ids in completion_ids]
            return task.reward([""] * len(texts), texts).tolist()

        class Clock(TrainerCallback):
            def on_step_begin(self, args, state, control, **kw):
                current.clear()
                sync()
                current["begin"] = time.perf_counter()

            def on_step_end(self, args, state, control, **kw):
                sync()
                step = time.perf_counter() - current["begin"]
                side.times.append({"rollout": current["rollout"], "update": step - current["rollout"], "step": step,
                                   "completion_tokens": current["completion_tokens"], "tokens": current["tokens"]})
                if between is not None:  # the other side's step, outside TRL's clock: both see the same load
                    between()

        args = GRPOConfig(output_dir=out_dir, per_device_train_batch_size=N * G, num_generations=G,
                          max_completion_length=task.max_new_tokens, temperature=1.0, learning_rate=LR, beta=0.0,
                          loss_type="grpo", epsilon=CLIP, max_steps=max_steps, logging_steps=10**6, save_strategy="no",
                          report_to="none", use_cpu=device == "cpu", bf16=device != "cpu", gradient_accumulation_steps=1,
                          max_grad_norm=1.0, gradient_checkpointing=False,  # on by default in TRL 1.x: not ours either
                          lr_scheduler_type="constant", warmup_steps=0, seed=0, dataloader_num_workers=0)
        data = Dataset.from_dict({"prompt": [""] * (N * max_steps * 2)})
        self.trainer = GRPOTrainer(model=model, reward_funcs=reward_fn, args=args, train_dataset=data,
                                   processing_class=hf_tokenizer(tok), callbacks=[Clock()])
        inner = self.trainer._generate_and_score_completions

        def timed(inputs):
            sync()
            t0 = time.perf_counter()
            out = inner(inputs)
            sync()
            current["rollout"] = time.perf_counter() - t0
            current["completion_tokens"] = float(out["completion_mask"].sum())
            current["tokens"] = float(out["completion_mask"].sum() + out["prompt_mask"].sum())
            return out

        self.trainer._generate_and_score_completions = timed

    def run(self) -> list[dict[str, float]]:
        self.trainer.train()
        return self.times


def rates(times: list[dict[str, float]], skip: int) -> dict[str, float]:
    """Best tokens/s of each phase over the timed steps (module docstring for the token counts)."""
    t = times[skip:]
    if not t:
        raise ConfigError("no timed steps: --repeats must be >= 1")
    out = {"rollout": max(x["completion_tokens"] / x["rollout"] for x in t),
           "update": max(x["tokens"] / x["update"] for x in t),
           "step": max(x["completion_tokens"] / x["step"] for x in t),
           "completion_tokens": sum(x["completion_tokens"] for x in t) / len(t)}
    if "score" in t[0]:
        out["score"] = max(x["tokens"] / x["score"] for x in t)
    return out


def paired_ratios(ours: list[dict[str, float]], trl: list[dict[str, float]]) -> dict[str, tuple[float, float, float]]:
    """Per phase, (median, first quartile, third quartile) over adjacent step pairs (same load) of
    ours' tokens/s over TRL's."""
    def rate(x, phase):
        return (x["completion_tokens"] if phase != "update" else x["tokens"]) / x[phase]

    out = {}
    for ph in ("rollout", "update", "step"):
        r = torch.tensor([rate(a, ph) / rate(b, ph) for a, b in zip(ours, trl)], dtype=torch.float64)
        out[ph] = (float(r.median()), float(r.quantile(0.25)), float(r.quantile(0.75)))
    return out


def bench_cpu(args) -> None:
    torch.set_num_threads(args.threads)
    tok = Tokenizer()
    task = make_task("count", tok, length=args.length)
    max_len = task.max_new_tokens + 2
    base = hf_model(tok, max_len)
    steps = args.warmup + args.repeats
    ours_hf = Ours(HFCausalLM(copy.deepcopy(base)), task, tok, args.prompts, args.group_size)
    ours_native = Ours(native_from_hf(copy.deepcopy(base)), task, tok, args.prompts, args.group_size)
    builtin = build_model(ModelConfig(vocab_size=tok.vocab_size, d_model=HIDDEN, n_layers=LAYERS, n_heads=HEADS, d_ff=FF,
                                      max_seq_len=max_len), torch.Generator().manual_seed(0))
    ours_builtin = Ours(builtin, task, tok, args.prompts, args.group_size)
    load_before = os.getloadavg()
    ours_times, native_times, builtin_times, trl_times = [], [], [], []
    for _ in range(args.rounds):
        ours_round, native_round, builtin_round = [], [], []

        def between():
            native_round.append(ours_native.step())
            ours_round.append(ours_hf.step())
            builtin_round.append(ours_builtin.step())

        with tempfile.TemporaryDirectory() as d:
            trl_times += TRLSide(copy.deepcopy(base), task, tok, args.prompts, args.group_size, steps, d, between).run()[args.warmup:]
        ours_times += ours_round[args.warmup:]
        native_times += native_round[args.warmup:]
        builtin_times += builtin_round[args.warmup:]
    load_after = os.getloadavg()
    r = {"ours (HF Llama, native)": rates(native_times, 0), "ours (HF Llama, wrapper)": rates(ours_times, 0),
         "TRL GRPOTrainer (HF Llama)": rates(trl_times, 0), "ours (built-in model)": rates(builtin_times, 0)}
    paired = {"ours (HF Llama, native)": paired_ratios(native_times, trl_times),
              "ours (HF Llama, wrapper)": paired_ratios(ours_times, trl_times), "TRL GRPOTrainer (HF Llama)": None,
              "ours (built-in model)": paired_ratios(builtin_times, trl_times)}
    params = {"hf": sum(p.numel() for p in base.parameters()), "builtin": builtin.num_parameters()}
    trl = r["TRL GRPOTrainer (HF Llama)"]
    lines = [SECTION_CPU, "",
             f"`{COMMAND}` ({datetime.date.today()}, {cpu_model()}, {os.cpu_count()} cores, torch {torch.__version__}, "
             f"{args.threads} thread(s), trl {_version('trl')}, transformers {_version('transformers')}; load average "
             f"{load_before[0]:.1f} before, {load_after[0]:.1f} after on {os.cpu_count()} cores).",
             "",
             f"Tiny Llama (hidden {HIDDEN}, {LAYERS} layers, {HEADS} heads, SwiGLU {FF}, {params['hf']:,} parameters; built in "
             f"code, same initial weights on both sides); `count` task, N = {args.prompts} prompts x G = {args.group_size}, "
             f"up to {task.max_new_tokens} completion tokens, GRPO, AdamW (lr {LR:g}: lengths stay those of the initial weights), fp32, on-policy. Best of {args.rounds} rounds x "
             f"{args.repeats} steps, each round after {args.warmup} warm-up steps. What is timed: see the module docstring (TRL's rollout = "
             "`_generate_and_score_completions`; its update = the rest of the step between the step callbacks; on-policy "
             "neither side runs a separate pi_old forward, ours since 2026-11-26). TRL runs without gradient "
             "checkpointing (TRL 1.x turns it on by default; ours never recomputes activations; until 2026-11-26 this "
             "table was measured with it on, which put the update at 2.16x). Native: the same HF weights in our "
             "built-in model (RMSNorm, SwiGLU, fused W_qkv; preallocated KV cache); wrapper: transformers' forward and "
             "DynamicCache. Native and built-in rollouts decode with `_decode.Decoder` steps (the same function as the "
             "model's cached forward with fewer kernels: queries, keys, values and their RoPE partners in one matmul, "
             "cache written in place, residuals in `addmm`; inverse-CDF draws, the same tokens as the reference path). "
             "Part of their gains is work skipped, not faster kernels: finished rows are dropped from the decode batch "
             "(once at most 3/4 of it is alive; until then they ride along), and their update/score forwards compute "
             "only the real positions, packed, with attention in 4 length buckets, each only up to its longest row "
             "(gspo_dynamics/train/model.py docstring; packing since 2026-11-26: update 1.94x -> 2.54x paired); TRL "
             "and the wrapper compute every padded position. Built-in model: same width/depth, "
             f"GELU MLP, LayerNorm, its own weights, {params['builtin']:,} parameters.",
             "",
             "| trainer | rollout tokens/s | update tokens/s | whole step (completion tokens/s) | best vs TRL's best (rollout / update / step) | median (interquartile range) of paired step ratios vs TRL | completion tokens per step |",
             "|---|---|---|---|---|---|---|"]
    for name, x in r.items():
        ratio = f"{x['rollout'] / trl['rollout']:.2f}x / {x['update'] / trl['update']:.2f}x / {x['step'] / trl['step']:.2f}x"
        pr = "-" if paired[name] is None else " / ".join(f"{paired[name][ph][0]:.2f}x ({paired[name][ph][1]:.2f}-{paired[name][ph][2]:.2f})"
                                                          for ph in ("rollout", "update", "step"))
        lines.append(f"| {name} | {x['rollout']:,.0f} | {x['update']:,.0f} | {x['step']:,.0f} | {ratio} | {pr} | {x['completion_tokens']:,.0f} |")
        print(f"{name:28s} rollout {x['rollout']:9,.0f}  update {x['update']:9,.0f}  step {x['step']:8,.0f} tok/s  ({ratio}; paired {pr})")
    ours = r["ours (HF Llama, native)"]
    po = paired["ours (HF Llama, native)"]
    met = po["rollout"][0] >= 2 and po["update"][0] >= 2
    lines += ["", f"Target >= 2x TRL on the same HF model in rollout and in update (native path, paired medians): "
                  f"{'met' if met else 'NOT met'} (paired medians, interquartile range of the {len(native_times)} pairs in brackets: "
                  f"rollout {po['rollout'][0]:.2f}x ({po['rollout'][1]:.2f}-{po['rollout'][2]:.2f}), "
                  f"update {po['update'][0]:.2f}x ({po['update'][1]:.2f}-{po['update'][2]:.2f}), "
                  f"step {po['step'][0]:.2f}x ({po['step'][1]:.2f}-{po['step'][2]:.2f}); best-of: rollout {ours['rollout'] / trl['rollout']:.2f}x, "
                  f"update {ours['update'] / trl['update']:.2f}x). The machine's load swings best-of figures by up to ~2x "
                  "between runs; the paired medians are the steadier figure.", ""]
    if args.write:
        replace_section(SECTION_CPU, "\n".join(lines))
    else:
        print("\n".join(lines))


def _version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


def decode_bound(config: ModelConfig, batch: int, prompt_len: int, new_tokens: int, bandwidth: float,
                 weight_bytes_per_param: int = 2, cache_bytes: int = 2) -> float:
    """Tokens/s of a rollout if every decode step were limited by memory bandwidth alone: step t
    (t = 1 .. n new tokens) reads every weight once and the cached keys and values of all earlier
    positions of every row,

        bytes_t = w P + 2 n_layers H_kv d_h c B (P_0 + t - 1),     tokens/s <= B n BW / sum_t bytes_t

    (P parameters of w bytes, c bytes per cached number, B rows, P_0 prompt tokens; the prefill is one
    more pass over the weights, counted as t = 0 with no cache read). FLOPs and launches ignored."""
    per_position = 2 * config.n_layers * config.kv_heads * config.head_dim * cache_bytes * batch
    weights = weight_bytes_per_param * config.parameter_count()
    steps = torch.arange(new_tokens, dtype=torch.float64)  # t - 1 = 0 .. n - 1
    total = weights * (new_tokens + 1) + per_position * float((prompt_len + steps).sum())
    return batch * new_tokens * bandwidth / total


def profile_step(ours: Ours, path: str, path_label: str) -> None:
    """One step under torch.profiler: the kernels' summed GPU time against the wall time of the step
    (how busy the GPU was: near 1 when compute- or bandwidth-bound, far below when the host's launches
    are the limit) and the top operators by GPU and by host time, appended to `path` under `path_label`."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        t = ours.step()
    from torch.autograd import DeviceType

    events = prof.key_averages()
    # kernels only: an operator's entry repeats the time of the kernels it launched
    gpu = sum(e.self_device_time_total for e in events if e.device_type == DeviceType.CUDA) / 1e6  # us -> s
    head = (f"step {t['step']:.3f} s (rollout {t['rollout']:.3f}, score {t['score']:.3f}, update {t['update']:.3f}); "
            f"kernels {gpu:.3f} s: GPU busy {gpu / t['step']:.0%} of the step (profiler overhead included)")
    print(head, flush=True)
    with open(path, "a") as f:
        f.write(f"==== {path_label} ====\n" + head + "\n\n" + events.table(sort_by="self_device_time_total", row_limit=25)
                + "\n\n" + events.table(sort_by="cpu_time_total", row_limit=25))


def rollout_rate(model, ids, mask, new_tokens: int, *, fast: bool, autocast, eos_id=None, pad_id: int = 0,
                 generator=None, repeats: int = 2, warmup: int = 0, compile_decode: bool = False) -> float:
    """Best completion tokens/s of `repeats` CUDA rollouts of `generate` (after `warmup` untimed ones: the
    graph path compiles (`compile_decode`) and captures in the first rollout of a shape)."""
    best = 0.0
    for i in range(warmup + repeats):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.no_grad(), autocast():
            ro = generate(model, ids, mask, new_tokens, eos_id=eos_id, pad_id=pad_id, generator=generator, fast=fast,
                          compile_decode=compile_decode)
        torch.cuda.synchronize()
        if i >= warmup:
            best = max(best, float(ro.completion_mask.sum()) / (time.perf_counter() - t0))
    return best


def reference_rollout(ours: Ours, repeats: int = 2) -> float:
    """Rollout tokens/s of the same model, autocast and batch on the reference path (the model's own
    cached forward every step, eagerly: `generate(fast=False)`), best of `repeats`: what the CUDA
    graph path (`_graph_decode`) is measured against."""
    prompts = [p for p in ours.task.sample_prompts(ours.N) for _ in range(ours.G)]
    ids, mask = ours.tok.batch_encode(prompts, device=ours.device)
    return rollout_rate(ours.model, ids, mask, ours.task.max_new_tokens, fast=False, autocast=ours.autocast,
                        eos_id=ours.eos_id, pad_id=ours.tok.pad_id, generator=ours.generator, repeats=repeats)


def gpu_spec(hint: str = "") -> tuple[str, float, float]:
    """(device name, peak dense bf16 FLOP/s, HBM bytes/s) of CUDA device 0 (GPU_SPECS); ConfigError when
    there is no GPU (its message ends with `hint`) or its numbers are unknown."""
    if not torch.cuda.is_available():
        raise ConfigError(f"this benchmark needs a CUDA GPU; none is available{hint}")
    name = torch.cuda.get_device_name(0)
    spec = next((v for k, v in GPU_SPECS.items() if k in name), None)
    if spec is None:
        raise ConfigError(f"no peak FLOP/s and bandwidth known for {name!r}; add it to GPU_SPECS")
    return name, *spec


def bench_gpu(args) -> None:
    """Built-in presets on CUDA, bf16 autocast, fixed-length completions (no EOS stop): update MFU
    (eager and, with --gpu-compile, torch.compile) and rollout vs the bandwidth bound, one row each."""
    name, peak, bandwidth = gpu_spec(" (use --gpu-pending to record the section as pending)")
    tok = Tokenizer()
    task = make_task("count", tok, length=args.gpu_length)
    seq = task.max_new_tokens + 1  # BOS + completion: every row runs to the end
    autocast = lambda: torch.autocast("cuda", dtype=torch.bfloat16)  # noqa: E731
    rows = []
    presets = args.gpu_model.split(",")
    try:
        prompts = [int(n) for n in args.gpu_prompts.split(",")]
    except ValueError:
        prompts = []
    if len(prompts) == 1:
        prompts *= len(presets)
    if len(prompts) != len(presets) or min(prompts) < 1:
        raise ConfigError(f"--gpu-prompts needs one positive count, or one per preset of --gpu-model; got {args.gpu_prompts!r}")
    for preset, N in zip(presets, prompts):
        config = preset_config(preset, tok.vocab_size)
        variants = [("eager", False)] + ([("compiled", True)] if args.gpu_compile else [])
        for label, compiled in variants:
            model = build_model(config, torch.Generator().manual_seed(0))
            ours = Ours(model, task, tok, N, args.group_size, device="cuda", autocast=autocast, stop_at_eos=False,
                        train_model=torch.compile(model) if compiled else None, fast=not args.gpu_reference_rollout)
            torch.cuda.reset_peak_memory_stats()
            times = [ours.step() for _ in range(args.warmup + args.repeats)]
            if args.gpu_profile:
                profile_step(ours, args.gpu_profile, f"{preset} {label}, B = {N * args.group_size}")
            r = rates(times, args.warmup)
            B = N * args.group_size
            bound = decode_bound(config, B, 1, task.max_new_tokens, bandwidth)
            rows.append(dict(preset=preset, label=label, params=config.parameter_count(), B=B, rates=r,
                             mfu=config.flops_per_token(seq) * r["update"] / peak, bound=bound,
                             memory=torch.cuda.max_memory_allocated() / 2**30,
                             reference=None if args.gpu_reference_rollout or args.gpu_skip_reference else reference_rollout(ours)))
            print(f"{preset} {label}: update {r['update']:,.0f} tok/s MFU {rows[-1]['mfu']:.1%}; rollout {r['rollout']:,.0f} tok/s "
                  f"= {r['rollout'] / bound:.1%} of {bound:,.0f} (reference path: {'-' if rows[-1]['reference'] is None else format(rows[-1]['reference'], ',.0f')} tok/s); peak memory "
                  f"{rows[-1]['memory']:.1f} GiB", flush=True)
            _graph_decode.release(model)  # its rollout sessions (KV caches, graphs) with it
            del ours, model
            torch.cuda.empty_cache()
    lines = [SECTION_GPU, "",
             f"`{COMMAND} --device cuda --gpu-model {args.gpu_model} --gpu-prompts {args.gpu_prompts}{' --gpu-compile' if args.gpu_compile else ''}` "
             f"({datetime.date.today()}, {name}, torch {torch.__version__}); built-in presets, bf16 autocast (float32 master "
             f"weights, AdamW), `count` task, B = N prompts x G = {args.group_size} sequences of {seq} tokens "
             f"(BOS + {task.max_new_tokens} completion tokens, no stop at EOS: a fixed amount of work per step), best of "
             f"{args.repeats} steps after {args.warmup} warm-up steps. MFU = flops_per_token(seq) x update tokens/s / peak "
             f"({peak / 1e12:.0f} TFLOP/s dense bf16); flops_per_token = 6 N_mm + 12 n_layers d T (PaLM appendix B: matmul "
             "weights and attention, no elementwise work). The rollout bound: every decode step reads all weights (bf16) "
             f"and the bf16 KV cache of the earlier positions at {bandwidth / 1e12:.2f} TB/s (`decode_bound`).",
             "",
             "| preset | parameters | B | update | update tokens/s | MFU (target >= 40%) | rollout tokens/s | bandwidth bound tokens/s | rollout / bound (target >= 50%) | rollout path | reference path (eager) / bound | peak memory | command |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    lines += kept_rows(SECTION_GPU, [(x["preset"], x["B"], x["label"]) for x in rows])
    for x in rows:
        r = x["rates"]
        lines.append(f"| {x['preset']} | {x['params']:,} | {x['B']} | {x['label']} | {r['update']:,.0f} | {x['mfu']:.1%} | {r['rollout']:,.0f} | "
                     f"{x['bound']:,.0f} | {r['rollout'] / x['bound']:.1%} | {'reference' if args.gpu_reference_rollout else 'CUDA graphs'} | "
                     f"{'-' if x['reference'] is None else format(x['reference'] / x['bound'], '.1%')} | {x['memory']:.1f} GiB | "
                     f"`--gpu-model {x['preset']} --gpu-prompts {x['B'] // args.group_size}` ({datetime.date.today()}) |")
    print("\n".join(lines))
    if args.write:
        replace_section(SECTION_GPU, "\n".join(lines))


def kept_rows(section: str, measured: list[tuple[str, int, str]]) -> list[str]:
    """The GPU table's rows of (preset, B, update) variants this run does not measure, as RESULTS.md has
    them (measured by an earlier command, named in their last cell), so that presets, batches and the
    compiled update can be measured one command each."""
    from _results import RESULTS

    text = RESULTS.read_text() if RESULTS.exists() else ""
    body = text.split(section, 1)[1].split("\n## ", 1)[0] if section in text else ""
    rows = [line for line in body.splitlines() if line.startswith("| ") and not line.startswith("| preset")]
    key = lambda line: (line.split("|")[1].strip(), int(line.split("|")[3].strip()), line.split("|")[4].strip())  # noqa: E731
    return [line for line in rows if key(line) not in measured]


def gpu_pending() -> None:
    replace_section(SECTION_GPU, "\n".join([
        SECTION_GPU, "",
        f"Pending (needs a GPU): `{COMMAND} --device cuda` measures the built-in 100m preset (bf16 autocast) - update "
        "tokens/s and MFU (target >= 40%), rollout tokens/s against the weight-bandwidth bound. No GPU was available "
        "to the session that wrote the CPU section."]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--prompts", type=int, default=8, help="N prompts per step (CPU)")
    parser.add_argument("--group-size", type=int, default=8, help="G completions per prompt")
    parser.add_argument("--length", type=int, default=32, help="count task length L (CPU): up to L + 1 completion tokens")
    parser.add_argument("--gpu-prompts", default="32", help="N prompts per step (GPU): one count, or one per --gpu-model preset")
    parser.add_argument("--gpu-length", type=int, default=256, help="count task length L (GPU)")
    parser.add_argument("--gpu-model", default="100m", help="comma-separated built-in presets to measure (GPU), e.g. 100m,1b")
    parser.add_argument("--gpu-compile", action="store_true", help="also measure the update through torch.compile (GPU)")
    parser.add_argument("--gpu-reference-rollout", action="store_true",
                        help="GPU rollouts on the reference path instead of the CUDA graph path (and no separate reference column)")
    parser.add_argument("--gpu-skip-reference", action="store_true", help="do not measure the reference path's rollout beside (GPU)")
    parser.add_argument("--gpu-profile", default="", help="profile one step of each GPU variant, appended to this file")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    parser.add_argument("--repeats", type=int, default=8, help="timed steps per round (best of)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of TRL then ours (CPU)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (CPU; 1: a tiny model gains nothing from more on a shared machine)")
    parser.add_argument("--no-write", dest="write", action="store_false", help="print only")
    parser.add_argument("--gpu-pending", action="store_true", help="write the GPU section as pending and exit")
    args = parser.parse_args()
    for name in ("prompts", "group_size", "length", "gpu_length", "repeats", "rounds", "threads"):
        if getattr(args, name) < 1:
            raise SystemExit(f"bench_trainer: --{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.gpu_pending:
        return gpu_pending()
    try:
        (bench_gpu if args.device == "cuda" else bench_cpu)(args)
    except ConfigError as e:  # no GPU, an unknown one, a bad --gpu-prompts: one line
        raise SystemExit(f"bench_trainer: {e}")


if __name__ == "__main__":
    main()
