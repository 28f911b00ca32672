"""Per-step metrics under TRL's names with TRL's meaning, ours under our own, and the two files.

TRL GRPOTrainer (1.16, trl/trainer/grpo_trainer.py) keys, each computed as TRL computes it (the readers
in `gspo_dynamics.logs` map them to standard names). "Global mean": TRL's `global_masked_mean`, the sum
over all processes' entries over their count (our `mean_metrics` with `counts`). TRL logs the reward and
length keys once per generation, over the whole generation batch; we log them every optimizer step,
over that step's minibatch (all processes): the same statistic of a 1/steps_per_generation share of the
batch (the whole of it when steps_per_generation = 1).
    reward                  mean reward (`nanmean`)
    reward_std              std of all the rewards, Bessel-corrected (TRL's `nanstd`; TRL <= 0.26
                            logged the mean within-group std: ours is groups/reward_std_mean)
    frac_reward_zero_std    share of completions whose std_rewards is ~0 (`torch.isclose`): the
                            within-group std for advantage_scale "group" and "none", so the share of
                            groups whose G rewards are equal; the batch std for "batch" (0 or 1)
    rewards/<task>/mean, /std   the one reward function's mean and std (equal to reward, reward_std)
    entropy                 global mean over completion tokens of -sum_v pi(v) log pi(v) (logits / tau)
    kl                      global mean over completion tokens of k3(pi_theta, pi_ref) (kl_coef > 0);
                            the loss's KL term itself is its token mean per sequence, then the batch
                            mean (TRL's aggregation of it for loss_type "grpo")
    clip_ratio/low_mean     global mean over the entries of the clipped ratio (completion tokens; one
                            per sequence for gspo, TRL's importance_sampling_level="sequence") of
                            1[ratio < 1 - eps_low and A < 0]
    clip_ratio/high_mean    the same of 1[ratio > 1 + eps_high and A > 0]
    clip_ratio/region_mean  their sum (the two sets are disjoint: TRL's low | high)
                            (the three for the PPO-clipped objectives; none for pg, which clips nothing)
    cispo_clip_ratio        cispo only, instead: global token mean of 1[w > 1 + eps_high and A > 0]
                            (TRL's cap epsilon_high is our 1 + eps_high)
    completions/mean_length, /min_length, /max_length   of the completion lengths (EOS included)
    completions/clipped_ratio   share of completions cut at max_new_tokens (no EOS)
    grad_norm               global L2 norm of the (process-averaged) gradient before clipping
    learning_rate           the learning rate this step used (transformers' Trainer logs it before
                            the scheduler steps)
    num_tokens              cumulative prompt + completion tokens (all processes) of the rollouts so far
    epoch                   step / steps: the run's fraction (our prompts are drawn, not a dataset read)
    step                    optimizer steps done
Not written: TRL's clip_ratio/low_min and /high_max, completions/*_terminated_length, loss (ours is
losses/loss, without the KL term) and the vLLM-only sampling/* (ours: mismatch/*).
Ours:
    losses/*                      the loss and its own metrics (`objectives._losses`): clip_frac_low,
                                  _high, clip_frac counted as the loss weighs (per sequence for grpo),
                                  ratio_mean/std, approx_kl (KL(pi_old || pi), k3)
    groups/reward_std_mean        mean over groups of the within-group std (Bessel-corrected)
    ratios/token_log_mean, _var   of log w_t = logp - logp_old over completion tokens
    ratios/seq_log_mean, _var     of log s_i = mean_t log w_it over sequences (GSPO's ratio)
    mismatch/logp_abs_mean, _max  |log pi_sampler - log pi_old| over completion tokens: the
                                  sampler (KV-cache, maybe bf16) against the teacher-forced trainer
    mismatch/k3                   mean k3 estimate of KL(pi_sampler || pi_old) from the samples
    routing/churn                 MoE: share of routing decisions changed since sampling
    window/position               j, optimizer steps since the rollout (0 .. T - 1)
Across processes our token means (ratios/token_*, mismatch/*) are the mean of the processes' means.
Files: `metrics.jsonl` (one JSON object per optimizer step, appended and flushed) and a
TRL-style `trainer_state.json` ({"log_history": rows, "global_step", "max_steps", ...}).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Mapping

import torch

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.objectives import SEQUENCE_LEVEL, STALE_GRADIENT, kl_k3
from gspo_dynamics.train._checkpoint import atomic_write_text

METRICS_NAME = "metrics.jsonl"
STATE_NAME = "trainer_state.json"
TOKEN_MEANS = ("entropy", "kl")  # TRL's global means over completion tokens
CLIP_MEANS = ("clip_ratio/low_mean", "clip_ratio/high_mean", "clip_ratio/region_mean", "cispo_clip_ratio")


def masked_mean_var(x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and population variance of x over the True entries of mask (0, 0 when none)."""
    n = mask.sum().clamp_min(1)
    mean = torch.where(mask, x, 0.0).sum() / n
    return mean, torch.where(mask, (x - mean) ** 2, 0.0).sum() / n


@torch.no_grad()
def reward_metrics(rewards: torch.Tensor, task: str, scale: str) -> dict[str, torch.Tensor]:
    """TRL's reward statistics of (N, G) rewards (all processes' groups), advantage scale `scale`
    (module docstring; trl/trainer/grpo_trainer.py `_generate_and_score_completions`)."""
    flat = rewards.reshape(-1)
    within = rewards.std(dim=1)  # (N,) Bessel-corrected, as TRL's nanstd
    std_rewards = flat.std().expand(rewards.shape[0]) if scale == "batch" else within  # what TRL divides by
    return {
        "reward": flat.mean(),
        "reward_std": flat.std(),
        "frac_reward_zero_std": torch.isclose(std_rewards, torch.zeros_like(std_rewards)).float().mean(),
        f"rewards/{task}/mean": flat.mean(),
        f"rewards/{task}/std": flat.std(),
        "groups/reward_std_mean": within.mean(),
    }


def clip_metrics(loss_metrics: Mapping[str, torch.Tensor], objective: str) -> dict[str, torch.Tensor]:
    """The loss's metrics with its entry shares (`losses/entry_clip_*`) under TRL's clip keys: the
    three clip_ratio means for a PPO-clipped objective, cispo_clip_ratio for cispo, none for pg."""
    m = dict(loss_metrics)
    low, high = m.pop("losses/entry_clip_low"), m.pop("losses/entry_clip_high")
    if objective == "cispo":
        m["cispo_clip_ratio"] = high
    elif objective not in STALE_GRADIENT:  # pg: no ratio is clipped
        m.update({"clip_ratio/low_mean": low, "clip_ratio/high_mean": high, "clip_ratio/region_mean": low + high})
    return m


def entry_counts(mask: torch.Tensor, objective: str) -> dict[str, torch.Tensor]:
    """The count behind each of this process's global means (`mean_metrics`): its completion
    tokens, or its sequences for the clip keys of an objective with a sequence ratio."""
    tokens = mask.sum()
    entries = torch.tensor(mask.shape[0], device=mask.device) if objective in SEQUENCE_LEVEL else tokens
    return {**dict.fromkeys(TOKEN_MEANS, tokens), **dict.fromkeys(CLIP_MEANS, entries)}


@torch.no_grad()
def ratio_metrics(logp: torch.Tensor, logp_old: torch.Tensor, mask: torch.Tensor) -> dict[str, torch.Tensor]:
    """Log-ratio statistics of token (w_t) and sequence (s_i = exp mean_t log w_t) ratios."""
    log_w = torch.where(mask, logp - logp_old, 0.0)  # (B, L)
    lengths = mask.sum(-1)  # (B,)
    log_s = log_w.sum(-1) / lengths.clamp_min(1)  # (B,)
    token_mean, token_var = masked_mean_var(log_w, mask)
    seq_mean, seq_var = masked_mean_var(log_s, lengths > 0)
    return {"ratios/token_log_mean": token_mean, "ratios/token_log_var": token_var,
            "ratios/seq_log_mean": seq_mean, "ratios/seq_log_var": seq_var}


@torch.no_grad()
def mismatch_metrics(logp_sampler: torch.Tensor, logp_old: torch.Tensor, mask: torch.Tensor) -> dict[str, torch.Tensor]:
    """Sampler vs trainer log-probs of the same tokens (module docstring)."""
    diff = torch.where(mask, logp_sampler - logp_old, 0.0)  # (B, L)
    k3 = torch.where(mask, kl_k3(logp_sampler, logp_old), 0.0)  # KL(pi_sampler || pi_old) from samples
    return {"mismatch/logp_abs_mean": masked_mean_var(diff.abs(), mask)[0],
            "mismatch/logp_abs_max": diff.abs().max() if diff.numel() else diff.sum(),
            "mismatch/k3": masked_mean_var(k3, mask)[0]}


@torch.no_grad()
def length_metrics(mask: torch.Tensor, truncated: torch.Tensor) -> dict[str, torch.Tensor]:
    lengths = mask.sum(-1).float()  # (B,)
    return {"completions/mean_length": lengths.mean(), "completions/min_length": lengths.min(),
            "completions/max_length": lengths.max(), "completions/clipped_ratio": truncated.float().mean()}


def to_row(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """Plain JSON values: tensors -> float, non-finite -> None (JSON has no NaN)."""
    row = {}
    for name, value in metrics.items():
        if isinstance(value, torch.Tensor):
            value = value.item()
        if isinstance(value, float) and not math.isfinite(value):
            value = None
        row[name] = value
    return row


class MetricsLog:
    """metrics.jsonl (appended, one flushed line per step) and trainer_state.json (rewritten atomically)."""

    def __init__(self, out_dir: Path, *, rows: list[dict[str, Any]] | None = None, write: bool = True) -> None:
        """Open the log of `out_dir`, starting with `rows`: a resumed run keeps the rows up to its
        checkpoint (`read_rows`) and drops the rest (the steps it re-logs)."""
        self.path = Path(out_dir) / METRICS_NAME
        self.state_path = Path(out_dir) / STATE_NAME
        self.write = write
        self.rows: list[dict[str, Any]] = list(rows or [])
        if write:
            atomic_write_text(self.path, "".join(json.dumps(r) + "\n" for r in self.rows))
            self._fh = open(self.path, "a")

    def append(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        if self.write:
            self._fh.write(json.dumps(row) + "\n")
            self._fh.flush()

    def write_state(self, *, global_step: int, max_steps: int, extra: Mapping[str, Any] | None = None) -> None:
        """A TRL-style trainer_state.json of the rows so far."""
        if not self.write:
            return
        state = {"global_step": global_step, "max_steps": max_steps, "logging_steps": 1,
                 "epoch": global_step / max_steps, "log_history": self.rows, **(extra or {})}
        atomic_write_text(self.state_path, json.dumps(state, indent=1))

    def close(self) -> None:
        if self.write:
            self._fh.close()


def read_rows(path: Path, n: int) -> list[dict[str, Any]]:
    """The first n rows of a metrics.jsonl; ConfigError if it has fewer complete rows."""
    try:
        lines = Path(path).read_text().splitlines(keepends=True)
    except OSError as exc:
        raise ConfigError(f"cannot read {str(path)!r} to resume: {exc.strerror or exc}") from None
    complete = [line for line in lines[:n] if line.endswith("\n")]
    try:
        rows = [json.loads(line) for line in complete]
    except ValueError:
        raise ConfigError(f"{str(path)!r} has a damaged row before the checkpoint's step") from None
    if len(rows) < n:
        raise ConfigError(f"{str(path)!r} has {len(rows)} complete rows but the checkpoint needs {n}")
    return rows
