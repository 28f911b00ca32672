"""The GRPO/GSPO trainer for causal language models: rollouts, updates, logs, checkpoints, DDP.

    result = train(TrainConfig(task="pattern", model="100k", objective="gspo", steps=100), "runs/a")
    result = train(config, "runs/a", resume=True)          # continue from runs/a/checkpoint.pt

Schedule (TRL's GRPOTrainer; T = steps_per_generation x num_iterations):

    every T optimizer steps (a refresh), rollout k:
        N x steps_per_generation prompts, G completions each, from the current policy (`_step`)
    optimizer step t, window position j = t mod T, uses minibatch j mod steps_per_generation
        (N prompts, N G completions, split over the processes), see `_step.update`

Determinism: the weights' init, the warm-up, the prompts and the sampler of rollout k (chunk c)
draw from generators seeded from (seed, purpose, k, c), so a CPU run is a function of its config
and a run resumed at a rollout boundary draws exactly what the uninterrupted run drew.
Chunks: rollout k is sampled as `rollout_chunks` independent streams, chunk c holding the prompts
c N/C .. (c+1) N/C - 1 of every minibatch; process r of W samples chunks r C/W .. (r+1) C/W - 1.
With C fixed, 1 process and W processes see the same completions (up to float rounding).

Models (`_policy`): `model` is a preset of `MODEL_PRESETS`, a JSON file of ModelConfig fields
(optionally {"preset": name, ...overrides}), or hf:DIR, a local Hugging Face causal LM (config.json
alone: a fresh model of it) whose vocabulary is the tasks' tokenizer's (never a download). An
hf:DIR of a supported Llama-family config runs natively (`hf_backend` "auto": the built-in
`CausalLM` holding its weights, same logits up to float32 summation order, faster rollouts and
updates; benchmarks/RESULTS.md), anything else through transformers' forward (`hf.HFCausalLM`);
trainer_state.json says which ("model": {"backend": ..., "why_not_native": ...}), and the
checkpoint records the transformers config so a resume rebuilds the same model. `save_hf=DIR`
writes the final policy as a transformers model directory (`hf.save_hf`).
Several processes: `torchrun --nproc-per-node W -m gspo_dynamics.cli.main train ...` (see
`_distributed`). A resume may use another number of processes; it reproduces the run up to float
rounding only when `rollout_chunks` was set (otherwise the chunks follow the process count).

Files in the run directory: config.json, grpo_config.json (the same run as a TRL GRPOConfig, `_trl_config`;
not for pg and gspo_token), metrics.jsonl (one row per optimizer step, TRL's names,
see `_metrics`), trainer_state.json (TRL-style, read by `gspo_dynamics.logs.read_log`), and
checkpoint.pt (`_checkpoint`), written every `checkpoint_every` steps and at the last rollout
boundary of the run.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import torch

from gspo_dynamics._errors import ConfigError, TrainingDiverged
from gspo_dynamics.objectives import get_loss
from gspo_dynamics.train import _checkpoint as C
from gspo_dynamics.train import _distributed as D
from gspo_dynamics.train import _metrics as M
from gspo_dynamics.train._step import Buffer, dropout_free, merge, score, update
from gspo_dynamics.train._policy import build_policy, check_save_hf, resolve_model_config  # noqa: F401 (re-exported)
from gspo_dynamics.train._threads import run_threads
from gspo_dynamics.train._summary import moved
from gspo_dynamics.train._trl_config import TRL_CONFIG_NAME, trl_config
from gspo_dynamics.train.config import CONFIG_NAME, FIELDS, RESUMABLE_CHANGES, STALE_GRADIENT, TrainConfig
from gspo_dynamics.train.rollout import generate
from gspo_dynamics.train.tasks import make_task
from gspo_dynamics.train.tokenizer import Tokenizer
from gspo_dynamics.train.warmup import supervised_warmup


@dataclass(frozen=True, eq=False)
class TrainResult:
    """What `train` returns: the config, the metric rows of the whole run, the trained model."""

    config: TrainConfig
    model_config: Any  # ModelConfig, or the HFConfigView of a Hugging Face model run by the wrapper
    out_dir: Path
    rows: list[dict[str, Any]]
    model: torch.nn.Module
    warmup_success: float | None  # success rate after the cold start (None on resume)
    is_main: bool  # rank 0 (the process that writes the files)
    backend: str  # builtin | native | wrapper (`_policy`): how the model runs

    def moved(self) -> str:
        """How the run's reward, entropy and zero-std share moved: their means over its first and last steps
        (`train._summary.moved`)."""
        return moved(self.rows)


def stream_seed(*keys) -> int:
    """A 63-bit seed determined by `keys` (the run seed, a purpose, indices): independent streams."""
    digest = hashlib.sha256(repr(keys).encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def _make_optimizer(config: TrainConfig, params) -> torch.optim.Optimizer:
    if config.optimizer == "sgd":  # heavy ball: v <- mu v + g, theta <- theta - lr v
        return torch.optim.SGD(params, lr=config.lr, momentum=config.momentum, weight_decay=config.weight_decay)
    return torch.optim.AdamW(params, lr=config.lr, betas=(config.beta1, config.beta2), eps=config.adam_eps,
                             weight_decay=config.weight_decay)


def _learning_rate(config: TrainConfig, step: int) -> float:
    """eta_t of optimizer step t (0-based): constant, or linear from eta to eta / steps."""
    return config.lr if config.lr_schedule == "constant" else config.lr * (1.0 - step / config.steps)


def _check_setup(config: TrainConfig, world: D.World, device: torch.device) -> int:
    """ConfigError for settings this launch cannot run; the number of rollout chunks."""
    chunks = config.rollout_chunks or world.size
    if chunks % world.size:
        raise ConfigError(f"rollout_chunks ({chunks}) must be a multiple of the number of processes ({world.size})")
    if config.prompts_per_step % chunks:
        raise ConfigError(f"prompts_per_step ({config.prompts_per_step}) must be a multiple of the rollout chunks ({chunks})")
    T = config.refresh_interval
    if config.checkpoint_every % T:
        raise ConfigError(f"checkpoint_every ({config.checkpoint_every}) must be a multiple of the refresh interval "
                          f"T = steps_per_generation x num_iterations = {T}: checkpoints fall on rollout boundaries")
    if config.precision == "bf16" and device.type != "cuda":
        raise ConfigError(f"precision bf16 needs a CUDA device; this run is on {device}")
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device cuda was asked for but CUDA is not available")
    return chunks


_DEFAULTS = {f.name: f.default for f in dataclasses.fields(TrainConfig) if f.default is not dataclasses.MISSING}


def _check_out_dir(out: Path, config: TrainConfig, model_description: dict, resume: bool) -> dict | None:
    """The checkpoint to resume from (checked against this run), or None for a fresh run."""
    if not resume:
        taken = [name for name in (C.CHECKPOINT_NAME, M.METRICS_NAME) if (out / name).exists()]
        if taken:
            raise ConfigError(f"{str(out)!r} already holds a run ({taken[0]}); pass --resume to continue it or choose another --out")
        return None
    state = C.load_checkpoint(out)
    allowed = RESUMABLE_CHANGES if config.lr_schedule == "constant" else tuple(f for f in RESUMABLE_CHANGES if f != "steps")
    # a setting added after the checkpoint was written ran at its default (defaults keep old behaviour)
    saved = {**_DEFAULTS, **{k: v for k, v in state["config"].items() if k in FIELDS}}
    C.check_compatible(saved, config.to_dict(), "config", allowed)
    C.check_compatible(state["model_config"], model_description, "model config")
    if state["step"] >= config.steps:
        raise ConfigError(f"the checkpoint is already at step {state['step']} of {config.steps}; pass a larger --steps to continue")
    return state


class _Run:
    """The state of one training run between steps (model, optimizer, rollout buffer, logs)."""

    def __init__(self, config: TrainConfig, out: Path, world: D.World, device: torch.device, chunks: int, resume: bool):
        self.config, self.out, self.world, self.device, self.chunks = config, out, world, device, chunks
        self.tokenizer = Tokenizer()
        self.task = make_task(config.task, self.tokenizer, **(config.task_options or {}))
        self.max_new_tokens = config.max_new_tokens or self.task.max_new_tokens
        start = config.seed if config.init_seed is None else config.init_seed  # the seed of the starting checkpoint
        self.policy = build_policy(config.model, self.tokenizer.vocab_size, stream_seed(start, "init"), config.hf_backend)
        model, self.model_config, self.model_description = self.policy.model, self.policy.config, self.policy.description
        threads = run_threads(getattr(self.model_config, "d_model", None), device)
        if threads is not None:  # before the warm-up: a narrow model runs fastest on one thread (`train._threads`)
            torch.set_num_threads(threads)
        if config.routing_replay != "none" and not getattr(self.model_config, "is_moe", False):
            raise ConfigError(f"routing_replay {config.routing_replay!r} needs a built-in mixture-of-experts model (n_experts > 0)")
        state = _check_out_dir(out, config, self.model_description, resume)
        D.barrier(world)  # every process has checked the directory before rank 0 writes to it
        bf16 = device.type == "cuda" and config.precision in ("auto", "bf16")
        self.autocast = (lambda: torch.autocast("cuda", dtype=torch.bfloat16)) if bf16 else contextlib.nullcontext
        self.model = model.to(device)
        self.warmup_success = None
        if state is None:  # cold start, identical on every process (and rank 0's weights broadcast)
            self.warmup_success = supervised_warmup(
                self.model, self.task, self.tokenizer, steps=config.warmup_steps, lr=config.warmup_lr,
                batch_size=config.prompts_per_step * config.group_size,
                generator=torch.Generator().manual_seed(stream_seed(start, "warmup")), temperature=config.temperature)
            D.broadcast_parameters(self.model, world)
        else:
            self.model.load_state_dict(state["model"])
        self.reference = None
        if config.kl_coef > 0:
            self.reference = copy.deepcopy(self.model).requires_grad_(False).eval()
            if state is not None:
                if state.get("reference") is None:
                    raise ConfigError("the checkpoint has no reference model, but kl_coef > 0")
                self.reference.load_state_dict(state["reference"])
        self.optimizer = _make_optimizer(config, self.model.parameters())
        self.train_model = torch.compile(self.model) if config.compile else self.model
        self.on_policy = config.refresh_interval == 1 and dropout_free(self.model)  # no pi_old forward (`score`)
        self.loss_fn = get_loss(config.objective)
        self.loss_kwargs = {"clip_low": config.eps_low, "clip_high": config.eps_high}
        if config.objective == "dr_grpo":
            self.loss_kwargs["max_tokens"] = self.max_new_tokens  # its constant normaliser L_max
        self.step, self.num_tokens, keep_rows = 0, 0, 0
        if state is not None:
            self.optimizer.load_state_dict(state["optimizer"])
            C.set_rng_state(state["rng"])
            self.step, self.num_tokens, keep_rows = state["step"], state["num_tokens"], state["metrics_rows"]
        kept = M.read_rows(out / M.METRICS_NAME, keep_rows) if keep_rows else []  # checked before any write
        if world.is_main:
            out.mkdir(parents=True, exist_ok=True)  # config.json: this run's settings (a resume may extend steps)
            C.atomic_write_text(out / CONFIG_NAME, json.dumps(config.to_dict(), indent=1))
            trl = trl_config(config, self.max_new_tokens)  # the same run in a GRPOConfig's keys, where TRL has the loss
            if trl is not None:
                C.atomic_write_text(out / TRL_CONFIG_NAME, json.dumps(trl, indent=1))
        self.log = M.MetricsLog(out, rows=kept, write=world.is_main)
        self.buffer: Buffer | None = None
        self.sampler_params: dict | None = None

    # ---- rollouts ----------------------------------------------------------------------------------

    @torch.no_grad()
    def rollout(self, k: int) -> Buffer:
        """This process's share of rollout k (module docstring), scored."""
        cfg, G, N, spg = self.config, self.config.group_size, self.config.prompts_per_step, self.config.steps_per_generation
        prompts = self.task.sample_prompts(N * spg, torch.Generator().manual_seed(stream_seed(cfg.seed, "prompts", k)))
        width = N // self.chunks  # prompts of one chunk in each minibatch
        per_rank = self.chunks // self.world.size
        mine = range(self.world.rank * per_rank, (self.world.rank + 1) * per_rank)
        self.model.eval()
        buffers = []
        for c in mine:
            chunk = [prompts[m * N + c * width + i] for m in range(spg) for i in range(width)]
            chunk = [p for p in chunk for _ in range(G)]  # (spg width G,) rows, G consecutive per prompt
            ids, mask = self.tokenizer.batch_encode(chunk, device=self.device)
            generator = torch.Generator(self.device).manual_seed(stream_seed(cfg.seed, "sample", k, c))
            with self.autocast():
                ro = generate(self.model, ids, mask, self.max_new_tokens, temperature=cfg.temperature, top_p=cfg.top_p,
                              eos_id=self.tokenizer.eos_id, pad_id=self.tokenizer.pad_id, generator=generator,
                              compile_decode=cfg.compile)
            if not bool(torch.isfinite(ro.sampler_logprobs).all()):  # one sync per rollout chunk
                raise TrainingDiverged("the sampling policy's log-probabilities are not finite: the model diverged "
                                       "(lower the learning rate)")
            completions = self.tokenizer.decode(ro.completion_ids, ro.completion_mask)
            rewards = self.task.reward(chunk, completions).to(self.device, torch.float32)
            buffers.append(Buffer(ro.sequences, ro.attention_mask, ro.completion_mask, ro.sampler_logprobs,
                                  ro.routing, ro.truncated, rewards))
        block = width * G  # rows of one chunk in one minibatch
        order = torch.tensor([ci * spg * block + m * block + r for m in range(spg) for ci in range(per_rank)
                              for r in range(block)], device=self.device)  # chunk-major -> minibatch-major
        buf = merge(buffers, order, self.tokenizer.pad_id)
        self.num_tokens += int(D.sum_scalar(buf.attention_mask.sum(), self.world).item())
        buf = score(buf, self.train_model, self.reference, group_size=G, scale=cfg.scale, temperature=cfg.temperature,
                    replay=cfg.routing_replay != "none", autocast=self.autocast,
                    old=not self.on_policy)  # pi_old in eval mode (no dropout)
        self.model.train()
        return buf

    # ---- one optimizer step --------------------------------------------------------------------------

    def train_step(self) -> dict[str, Any]:
        cfg, t = self.config, self.step
        T, G = cfg.refresh_interval, cfg.group_size
        k, j = divmod(t, T)
        if j == 0 or self.buffer is None:
            self.buffer = self.rollout(k)
            stale = cfg.objective in STALE_GRADIENT and T > 1
            self.sampler_params = ({n: p.detach().clone().requires_grad_(True) for n, p in self.model.named_parameters()}
                                   if stale else None)
        rows = (cfg.prompts_per_step // self.world.size) * G  # this process's rows of one minibatch
        m = j % cfg.steps_per_generation
        batch = self.buffer.rows(slice(m * rows, (m + 1) * rows))
        for group in self.optimizer.param_groups:
            group["lr"] = _learning_rate(cfg, t)
        metrics = M.reward_metrics(D.gather_rows(batch.rewards, self.world).view(-1, G), self.task.name, cfg.scale)
        metrics.update(update(
            self.model, batch, loss_fn=self.loss_fn, loss_kwargs=self.loss_kwargs, objective=cfg.objective,
            kl_coef=cfg.kl_coef, load_balance_coef=cfg.load_balance_coef, temperature=cfg.temperature, replay=cfg.routing_replay != "none",
            sampler_params=self.sampler_params, optimizer=self.optimizer, max_grad_norm=cfg.max_grad_norm,
            world=self.world, autocast=self.autocast, train_model=self.train_model))
        metrics = D.mean_metrics(metrics, self.world, M.entry_counts(batch.mask, cfg.objective))
        self.step = t + 1
        row = M.to_row(metrics)
        row.update({"learning_rate": self.optimizer.param_groups[0]["lr"], "window/position": j,
                    "num_tokens": self.num_tokens, "epoch": self.step / cfg.steps, "step": self.step})
        self.log.append(row)
        return row

    # ---- checkpoints -------------------------------------------------------------------------------

    def save(self) -> None:
        if not self.world.is_main:
            return
        C.save_checkpoint(self.out, {
            "config": self.config.to_dict(), "model_config": self.model_description,
            "step": self.step, "model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
            "reference": None if self.reference is None else self.reference.state_dict(),
            "rng": C.rng_state(), "metrics_rows": len(self.log.rows), "num_tokens": self.num_tokens,
            "world_size": self.world.size,
        })
        self.write_state()

    def write_state(self) -> None:
        model = {"backend": self.policy.backend, "parameters": sum(p.numel() for p in self.model.parameters())}
        if self.policy.why_not_native:
            model["why_not_native"] = self.policy.why_not_native
        self.log.write_state(global_step=self.step, max_steps=self.config.steps,
                             extra={"trainer": "gspo-dynamics", "num_generations": self.config.group_size, "model": model})

    def due(self) -> bool:
        """A checkpoint after this step: every checkpoint_every steps, and at the run's last rollout boundary."""
        cfg, s = self.config, self.step
        last_boundary = (cfg.steps // cfg.refresh_interval) * cfg.refresh_interval
        return (cfg.checkpoint_every > 0 and s % cfg.checkpoint_every == 0) or s == last_boundary


def train(config: TrainConfig, out_dir, *, resume: bool = False,
          progress: Callable[[int, int], None] | None = None, save_hf=None) -> TrainResult:
    """Run (or, with `resume`, continue) the training of `config` in `out_dir` (module docstring).

    Under torchrun (WORLD_SIZE > 1) every process calls this; rank 0 writes the files.
    progress: called as progress(steps_done, steps) after every optimizer step.
    save_hf: a new directory to write the final hf:DIR policy into, in transformers' format
    (`hf.save_hf`; checked before any training).
    """
    if not isinstance(config, TrainConfig):
        raise ConfigError(f"train needs a TrainConfig, got {type(config).__name__}")
    out = Path(out_dir)
    save_hf = None if save_hf is None else check_save_hf(config.model, save_hf)
    device = D.local_device(config.device)
    threads = torch.get_num_threads()  # a run may change it (`train._threads`); the caller gets its own back
    started = not torch.distributed.is_initialized()
    world = D.init_world(device)
    try:
        chunks = _check_setup(config, world, device)
        torch.manual_seed(stream_seed(config.seed, "global"))  # dropout and anything else on torch's global RNG
        run = _Run(config, out, world, device, chunks, resume)
        try:
            while run.step < config.steps:
                try:
                    run.train_step()
                except TrainingDiverged as exc:  # no step was taken with it: the parameters are those of step run.step
                    if world.is_main:
                        run.write_state()  # the steps before, as trainer_state.json too (`diagnose` reads it)
                    kept = f"the metrics of steps 1-{run.step} are in {out}" if run.step else "no step completed"
                    raise TrainingDiverged(f"step {run.step + 1} of {config.steps}: {exc}; {kept} (rerun with a new --out)",
                                           run.log.rows) from None
                if run.due():
                    run.save()
                if progress is not None:
                    progress(run.step, config.steps)
            if world.is_main:
                run.write_state()
                if save_hf is not None:
                    from gspo_dynamics.train.hf import save_hf as write_hf

                    write_hf(run.model, run.policy.hf_config, save_hf)
            # every rank reaches the teardown together: a rank that destroyed its process group while
            # rank 0 still wrote files made gloo abort the other at exit ("terminate called without
            # an active exception"); on an error path this is skipped (a peer may never arrive)
            D.barrier(world)
        finally:
            run.log.close()
        return TrainResult(config=config, model_config=run.model_config, out_dir=out, rows=run.log.rows,
                           model=run.model, warmup_success=run.warmup_success, is_main=world.is_main,
                           backend=run.policy.backend)
    finally:
        torch.set_num_threads(threads)
        if started:
            D.shutdown(world)
