"""Per-step metrics under TRL's names, and the two files they are written to.

TRL GRPOTrainer names (what `gspo_dynamics.logs` maps to its standard names):
    reward, reward_std            minibatch mean reward; mean of the within-group stds (unbiased)
    frac_reward_zero_std          share of groups whose G rewards are all equal
    rewards/<task>/mean           the task's reward (one reward function: equal to `reward`)
    entropy                       mean token entropy -sum_v pi(v) log pi(v) over completion tokens
    kl                            mean k3(pi_theta, pi_ref) over completion tokens (kl_coef > 0)
    clip_ratio/low_mean, /high_mean, /region_mean   the loss's clip fractions (objectives registry)
    completions/mean_length, /min_length, /max_length, /clipped_ratio (share cut at max length)
    grad_norm                     global L2 norm of the gradient before clipping
    learning_rate, num_tokens (cumulative prompt + completion tokens), epoch (fraction of the run), step
Ours:
    losses/*                      the loss and its own metrics (ratio_mean/std, approx_kl, ...)
    ratios/token_log_mean, _var   of log w_t = logp - logp_old over completion tokens
    ratios/seq_log_mean, _var     of log s_i = mean_t log w_it over sequences (GSPO's ratio)
    mismatch/logp_abs_mean, _max  |log pi_sampler - log pi_old| over completion tokens: the
                                  sampler (KV-cache, maybe bf16) against the teacher-forced trainer
    mismatch/k3                   mean k3 estimate of KL(pi_sampler || pi_old) from the samples
    routing/churn                 MoE: share of routing decisions changed since sampling
    window/position               j, optimizer steps since the rollout (0 .. T - 1)
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
from gspo_dynamics.objectives import kl_k3
from gspo_dynamics.train._checkpoint import atomic_write_text

METRICS_NAME = "metrics.jsonl"
STATE_NAME = "trainer_state.json"
# registry metric -> TRL's name
TRL_CLIP_NAMES = {
    "losses/clip_frac_low": "clip_ratio/low_mean",
    "losses/clip_frac_high": "clip_ratio/high_mean",
    "losses/clip_frac": "clip_ratio/region_mean",
}


def masked_mean_var(x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and population variance of x over the True entries of mask (0, 0 when none)."""
    n = mask.sum().clamp_min(1)
    mean = torch.where(mask, x, 0.0).sum() / n
    return mean, torch.where(mask, (x - mean) ** 2, 0.0).sum() / n


@torch.no_grad()
def reward_metrics(rewards: torch.Tensor, task: str) -> dict[str, torch.Tensor]:
    """TRL's reward statistics of (N, G) rewards."""
    return {
        "reward": rewards.mean(),
        "reward_std": rewards.std(dim=1).mean(),  # within-group, unbiased (TRL <= 0.26)
        "frac_reward_zero_std": (rewards == rewards[:, :1]).all(dim=1).float().mean(),
        f"rewards/{task}/mean": rewards.mean(),
    }


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
