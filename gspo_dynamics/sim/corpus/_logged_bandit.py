"""Run the softmax bandit and measure, at every step, what a TRL GRPO trainer would log.

The bandit engine (`sim._engine.BanditEngine`) draws `num_groups` groups of G actions per prompt
from the sampling policy and trains on them. `LoggingEngine` keeps those very samples (actions,
advantages) and the ascent direction, so the logged statistics are those of the groups the
simulated run actually trained on, not of a second draw:

    reward               mean over the step's samples of r(a)                    (TRL `reward`)
    reward_std           mean over groups of the unbiased within-group std       (TRL < 0.27)
    frac_reward_zero_std share of groups whose G rewards are all equal
    rewards/<fn>/mean    mean of reward component fn at the sampled arms, and /std
    entropy              H(pi_p) = -sum_a pi_p(a) log pi_p(a), mean over prompts  (current policy)
    kl                   KL(pi_p || pi_ref,p), exact, mean over prompts (logged only when beta > 0)
    clip_ratio/region_mean  share of samples with A > 0 and w > 1 + eps_high or A < 0 and w < 1 - eps_low,
                         w = pi(a) / pi_s(a)  (TRL's region clip fraction)
    completions/mean_length, completions/clipped_ratio  the arms' response lengths, and the share
                         of samples at the length budget (truncated)
    grad_norm            ||g||_2 of the ascent direction over (prompts, arms)
    loss                 -mean_i min(w_i A_i, clip(w_i) A_i) + beta KL      (the clipped surrogate)
    eval_reward          E_pi[r_true] per prompt, estimated from `eval_samples` fresh draws per prompt

Shapes: every per-step metric is (S,), S seeds of one configuration; `run_logged` stacks them to
(steps, S).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.sim._engine import BanditEngine
from gspo_dynamics.sim._task import BanditTask
from gspo_dynamics.theory.hyperparams import Hyperparams


@dataclass(frozen=True, eq=False)
class ArmTables:
    """What a bandit arm stands for in a language-model run (all (P, K) or (P, K, F) arrays).

    components: reward components r_f(a), (P, K, F); their sum must equal the task's rewards.
    component_names: the F reward-function names (TRL's `rewards/<fn>/mean`).
    true_reward: (P, K), what an evaluation scores (the task reward unless the reward is a proxy).
    lengths: (P, K) response length in tokens of each arm.
    max_length: the generation budget; arms with length >= max_length count as truncated.
    """

    components: np.ndarray
    component_names: tuple[str, ...]
    true_reward: np.ndarray
    lengths: np.ndarray
    max_length: int

    def check(self, task: BanditTask) -> None:
        P, K = task.rewards.shape
        if self.components.shape != (P, K, len(self.component_names)):
            raise ConfigError(f"components must have shape {(P, K, len(self.component_names))}, got {self.components.shape}")
        if not np.allclose(self.components.sum(-1), task.rewards):
            raise ConfigError("the reward components must sum to the task's rewards")
        for name in ("true_reward", "lengths"):
            if getattr(self, name).shape != (P, K):
                raise ConfigError(f"{name} must have shape {(P, K)}, got {getattr(self, name).shape}")


def binary_arms(task: BanditTask, correct_length: float, wrong_length: float, max_length: int) -> ArmTables:
    """One 0/1 `accuracy` component; correct and wrong answers of given lengths."""
    rewards = task.rewards
    lengths = np.where(rewards > 0.5, correct_length, wrong_length)
    return ArmTables(rewards[..., None].copy(), ("accuracy_reward",), rewards.copy(), lengths, max_length)


class LoggingEngine(BanditEngine):
    """A `BanditEngine` that keeps the last step's samples, advantages and ascent direction."""

    def _sampled(self, pi_s):
        actions, weights, adv = super()._sampled(pi_s)
        self.last_actions, self.last_advantages = actions, adv  # (C, S, P, N) each
        return actions, weights, adv

    def ascent(self, logits, sampling_logits):
        g = super().ascent(logits, sampling_logits)
        self.last_ascent = g  # (C, S, P, K)
        return g


def _entropy(logp: torch.Tensor) -> torch.Tensor:
    """(..., K) log-probs -> (...) entropy -sum_a pi log pi (0 log 0 = 0)."""
    return -(logp.exp() * logp).nan_to_num().sum(-1)


@torch.no_grad()
def _step_metrics(engine: LoggingEngine, arms: ArmTables, logits: torch.Tensor, tables) -> dict[str, torch.Tensor]:
    """Metrics of the step just taken; `logits` are the pre-update logits (C, S, P, K), C = 1."""
    hp = engine.hp
    G = hp.group_size
    actions, adv = engine.last_actions[0], engine.last_advantages[0]  # (S, P, N)
    S, P, N = actions.shape
    comp, _, lengths = tables  # (P, K, F) components, (P, K) true reward (eval only), (P, K) lengths
    F = comp.shape[-1]
    rewards = engine.rewards.expand(S, P, -1).gather(-1, actions)  # (S, P, N)
    groups = rewards.reshape(S, P * N // G, G)  # (S, groups, G)
    out = {
        "reward": rewards.mean((1, 2)),
        "reward_std": groups.std(-1).mean(-1),  # unbiased within-group std, mean over groups
        "frac_reward_zero_std": (groups == groups[..., :1]).all(-1).double().mean(-1),
    }
    idx = actions.unsqueeze(-1).expand(S, P, N, F)
    parts = comp.expand(S, P, -1, F).gather(2, idx)  # (S, P, N, F)
    for f, name in enumerate(arms.component_names):
        out[f"rewards/{name}/mean"] = parts[..., f].mean((1, 2))
        out[f"rewards/{name}/std"] = parts[..., f].reshape(S, -1).std(-1)
    sample_len = lengths.expand(S, P, -1).gather(-1, actions)  # (S, P, N)
    out["completions/mean_length"] = sample_len.mean((1, 2))
    out["completions/clipped_ratio"] = (sample_len >= arms.max_length).double().mean((1, 2))
    logp = torch.log_softmax(logits[0], -1)  # (S, P, K) current policy, before this step's update
    logp_s = torch.log_softmax(engine.sampling_logits[0], -1)
    out["entropy"] = _entropy(logp).mean(-1)
    w = (logp.gather(-1, actions) - logp_s.gather(-1, actions)).exp()  # (S, P, N) importance ratios
    low, high = 1.0 - hp.clip_low, 1.0 + hp.clip_high
    clipped = ((adv > 0) & (w > high)) | ((adv < 0) & (w < low))
    out["clip_ratio/region_mean"] = clipped.double().mean((1, 2))
    surrogate = torch.minimum(w * adv, w.clamp(low, high) * adv).mean((1, 2))
    if hp.kl_coef > 0:
        logp_ref = torch.log_softmax(engine.ref_logits[0], -1)
        kl = (logp.exp() * (logp - logp_ref)).sum(-1).mean(-1)  # (S,)
        out["kl"] = kl
        out["loss"] = -surrogate + hp.kl_coef * kl
    else:
        out["loss"] = -surrogate
    out["grad_norm"] = engine.last_ascent[0].flatten(1).norm(dim=-1)
    return out


@torch.no_grad()
def _eval_metrics(engine: LoggingEngine, arms: ArmTables, tables, rng: np.random.Generator,
                  eval_samples: int) -> dict[str, np.ndarray]:
    """Scores of `eval_samples` fresh responses per prompt from the current policy, (S,) each."""
    _, true_r, lengths = (t.cpu().numpy() for t in tables)
    pi = torch.softmax(engine.logits[0], -1).cpu().numpy()  # (S, P, K)
    S, P, K = pi.shape
    u = rng.random((S, P, eval_samples))
    actions = np.minimum((pi.cumsum(-1)[..., None, :] < u[..., None]).sum(-1), K - 1)  # (S, P, n)
    p_idx = np.arange(P)[None, :, None]
    scores = true_r[p_idx, actions]  # (S, P, n)
    return {"eval_reward": scores.mean((1, 2)), "eval_reward_std": scores.std(-1, ddof=1).mean(-1),
            "eval_completions/mean_length": lengths[p_idx, actions].mean((1, 2))}


def run_logged(task: BanditTask, hp: Hyperparams, arms: ArmTables, *, steps: int, seeds: int, seed: int = 0,
               eval_every: int | None = None, eval_samples: int = 32) -> tuple[dict[str, np.ndarray], dict[int, dict]]:
    """Train `seeds` stochastic runs of `hp` on `task`; per-step TRL metrics and eval scores.

    Returns (metrics, evals): metrics[name] is (steps, S) for step 1..steps; evals maps an
    optimizer step (a multiple of eval_every, and the last step) to {name: (S,)}.
    """
    if hp.group_size is None:
        raise ConfigError("a logged run samples groups: group_size must be finite")
    arms.check(task)
    engine = LoggingEngine(task, [hp], seeds=seeds, seed=seed)

    def tensor(x):
        return torch.as_tensor(np.asarray(x, dtype=float), dtype=engine.dtype)

    tables = (tensor(arms.components), tensor(arms.true_reward), tensor(arms.lengths))
    rng = np.random.default_rng(seed + 7919)  # eval draws: independent of the training sampler
    history: list[dict[str, torch.Tensor]] = []
    evals: dict[int, dict] = {}
    for t in range(1, steps + 1):
        before = engine.logits
        engine.step()
        history.append(_step_metrics(engine, arms, before, tables))
        if eval_every and (t % eval_every == 0 or t == steps):
            evals[t] = _eval_metrics(engine, arms, tables, rng, eval_samples)
    metrics = {name: torch.stack([m[name] for m in history]).double().numpy() for name in history[0]}
    return metrics, evals
