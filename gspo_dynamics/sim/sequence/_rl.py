"""A compact GRPO-family RL loop on the synthetic sequence tasks; every loss comes from the registry.

Schedule (DESIGN.md's refresh interval T; TRL's `steps_per_generation`, with num_iterations = 1):

    every T optimizer steps (a refresh):
        pi_old <- pi_theta                                     the sampling policy
        one rollout: T N prompts x G responses from pi_old     log pi_old(y_t) and MoE routing kept
        A = group advantages of the rollout's rewards          once per rollout (scale "batch": over it all)
    optimizer step at window position j = 0..T-1 uses minibatch j (N prompts x G responses):
        logp = log pi_theta(y_t | x, y_<t), teacher-forced     routing replayed or not (MoE)
        loss = objective(logp, logp_old, A, mask) [+ beta mean_i mean_t k3(pi_theta, pi_ref)(y_it)]

At j = 0 the policy is the sampler, so every ratio is 1 up to the rounding between the cached
sampler and the teacher-forced pass (exactly 1 for the tabular policy); at j > 0 the minibatch is
j optimizer steps stale. The reference pi_ref of the k3 penalty is a frozen copy of the initial
policy. `pg` (no off-policy correction) takes its gradient at the sampling policy (a copy taken at
the refresh), so a stale rollout's gradient is applied as is; its ratio metrics still compare the
current policy with the sampler. (For the tabular policy the stale and the current gradient of pg
coincide: the score e_y - pi_t is weighted by advantages that sum to zero over each group.) DAPO's dynamic sampling (`dynamic_sampling`) drops
a minibatch's flat groups without refilling it; a minibatch left empty skips its optimizer step
(the update's metrics are NaN at that step; the reward metrics count every group).

Per-step metrics (`SequenceRun.metrics`, each (steps,) float64; TRL's names where TRL has one):
    reward, reward_std, frac_reward_zero_std   minibatch mean reward, mean within-group std
                                               (unbiased), share of zero-variance groups
    advantages/frac_positive, .../frac_negative  share of the update's sequences with A > 0, A < 0
    losses/loss and the loss's own metrics     losses/clip_frac{,_low,_high}, ratio_mean/std,
                                               approx_kl (counting as the loss counts, see objectives)
    ratios/token_log_mean, ratios/token_log_var   mean and variance of log w_t over real tokens
    ratios/seq_log_mean, ratios/seq_log_var       of log s_i = mean_t log w_it over sequences
    grad_norm                                  L2 norm of the whole gradient, before the step
    completions/mean_length                    mean real response tokens
    kl                                         mean k3 to pi_ref per token (kl_coef > 0 only)
    routing/churn                              MoE only: share of (layer, real input position)
                                               decisions whose expert set differs between the
                                               sampler and the current router (measured without
                                               replay, so also when replay is on)
    groups/kept_frac                           dynamic_sampling only: share of groups kept
`SequenceRun.expected_reward` (steps + 1,) is the exact E[r] after t steps where the task and
policy allow it (a `TabularPolicy` on `PatternMatch` or `CountParity`), else None.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass, field
from typing import Callable, Mapping, NamedTuple

import numpy as np
import torch

from gspo_dynamics._checks import positive_int
from gspo_dynamics._errors import ConfigError
from gspo_dynamics.objectives import (
    ADVANTAGE_SCALES, STALE_GRADIENT, ObjectiveDefaults, filter_informative_groups, get_loss, group_advantages, kl_k3,
)
from gspo_dynamics.sim.sequence._counting import CountParity, PatternMatch
from gspo_dynamics.sim.sequence._moe import TinyMoETransformer, routing_changes
from gspo_dynamics.sim.sequence._policy import Routing, SequencePolicy
from gspo_dynamics.sim.sequence._sampling import gather_log_probs, log_probs, sample
from gspo_dynamics.sim.sequence._tabular import TabularPolicy
from gspo_dynamics.sim.sequence._task import SequenceTask
from gspo_dynamics.theory.hyperparams import SGD, Adam

ROUTING_REPLAYS: tuple[str, ...] = ("none", "full", "experts")
OPTIMIZERS: Mapping[str, type] = {"sgd": SGD, "adam": Adam}


def _check_number(name: str, value, *, positive: bool) -> None:
    """ConfigError unless value is a finite real > 0 (positive) or >= 0."""
    ok = not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)
    if not (ok and (value > 0 if positive else value >= 0)):
        raise ConfigError(f"{name} must be a finite number {'>' if positive else '>='} 0, got {value!r}")


@dataclass(frozen=True, kw_only=True)
class SequenceRLConfig(ObjectiveDefaults):
    """Hyperparameters of `run_sequence_rl` (module docstring for the schedule)."""

    objective: str  # registry name (`objectives.LOSSES`): pg, grpo, dr_grpo, dapo, cispo, gspo, gspo_token
    lr: float = 0.05  # eta, learning rate
    # SGD(momentum=mu) | Adam(beta1, beta2, eps); the strings "sgd" and "adam" stand for SGD() and Adam()
    optimizer: SGD | Adam | str = field(default_factory=Adam)
    refresh_interval: int = 1  # T, optimizer steps per rollout (1 = on-policy)
    group_size: int = 8  # G, responses per prompt
    prompts_per_step: int = 4  # N, groups per optimizer step: a minibatch holds N G responses
    clip_low: float | None = None  # eps_low: ratios below 1 - eps_low stop pushing down; None: see `eps_low`
    clip_high: float | None = None  # eps_high: ratios above 1 + eps_high stop pushing up; None: see `eps_high`
    advantage_scale: str | None = None  # "group" | "none" | "batch" (`group_advantages`); None: see `scale`
    kl_coef: float = 0.0  # beta, weight of the k3 KL to the frozen initial policy
    routing_replay: str = "none"  # MoE: "none" | "full" (choices and gates) | "experts" (choices; GSPO's replay)
    dynamic_sampling: bool = False  # drop flat groups from each minibatch (DAPO), no refill

    def __post_init__(self) -> None:
        get_loss(self.objective)  # ConfigError listing the valid names
        if isinstance(self.optimizer, str):
            if self.optimizer not in OPTIMIZERS:
                raise ConfigError(f"optimizer must be one of {', '.join(OPTIMIZERS)}; got {self.optimizer!r}")
            object.__setattr__(self, "optimizer", OPTIMIZERS[self.optimizer]())
        if not isinstance(self.optimizer, (SGD, Adam)):
            raise ConfigError(f"optimizer must be SGD(...), Adam(...), 'sgd' or 'adam', got {self.optimizer!r}")
        _check_number("learning rate", self.lr, positive=True)
        positive_int("refresh interval", self.refresh_interval)
        positive_int("group size", self.group_size, minimum=2)
        positive_int("prompts per step", self.prompts_per_step)
        for name in ("clip_low", "clip_high"):
            if getattr(self, name) is not None:
                _check_number(name, getattr(self, name), positive=True)
        if self.advantage_scale is not None and self.advantage_scale not in ADVANTAGE_SCALES:
            raise ConfigError(f"advantage scale must be one of {', '.join(ADVANTAGE_SCALES)}; got {self.advantage_scale!r}")
        _check_number("KL coefficient", self.kl_coef, positive=False)
        if self.routing_replay not in ROUTING_REPLAYS:
            raise ConfigError(f"routing replay must be one of {', '.join(ROUTING_REPLAYS)}; got {self.routing_replay!r}")

    @property
    def minibatch_size(self) -> int:
        """N G responses per optimizer step."""
        return self.prompts_per_step * self.group_size


@dataclass(frozen=True, eq=False)
class SequenceRun:
    """What one `run_sequence_rl` recorded (numpy arrays on the host)."""

    config: SequenceRLConfig
    metrics: Mapping[str, np.ndarray]  # name (module docstring) -> (steps,) float64
    window_position: np.ndarray  # (steps,) int, j = optimizer steps since the rollout's refresh
    expected_reward: np.ndarray | None  # (steps + 1,) exact E[r] after t = 0..steps steps, or None
    response_len: int  # L, the task's longest response

    @property
    def steps(self) -> int:
        return len(self.window_position)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.metrics[name]


class _Batch(NamedTuple):
    """Responses of one rollout or minibatch, rows grouped by prompt (G consecutive rows each)."""

    prompts: torch.Tensor  # (B, P)
    tokens: torch.Tensor  # (B, L)
    logp_old: torch.Tensor  # (B, L) log pi_old, 0 at padding
    mask: torch.Tensor  # (B, L) bool
    routing: Routing | None  # experts and gates (n_layers, B, P + L - 1, k), or None
    rewards: torch.Tensor  # (B,)
    advantages: torch.Tensor  # (B,)

    def rows(self, index) -> _Batch:
        """The rows `index` (a slice or a bool mask over B) of every field."""
        routing = None if self.routing is None else Routing(*(x[:, index] for x in self.routing))
        return _Batch(*(x[index] for x in self[:4]), routing, self.rewards[index], self.advantages[index])


@torch.no_grad()
def _rollout(task: SequenceTask, policy: SequencePolicy, config: SequenceRLConfig, generator) -> _Batch:
    """T N prompts x G responses from the current policy, in one batched `sample`."""
    T, N, G = config.refresh_interval, config.prompts_per_step, config.group_size
    prompts = task.prompts(T * N, generator=generator, device=generator.device)  # (T N, P)
    prompts = prompts.repeat_interleave(G, dim=0)  # (T N G, P): G consecutive rows per prompt
    tokens, logp_old, mask, routing = sample(policy, prompts, task.response_len, generator, eos=task.eos)
    rewards = task.reward(prompts, tokens, mask)  # (T N G,)
    advantages = group_advantages(rewards.view(T * N, G), scale=config.scale).view(-1)  # (T N G,)
    return _Batch(prompts, tokens, logp_old, mask, routing, rewards, advantages)


def _replayed(routing: Routing | None, mode: str) -> Routing | None:
    if mode == "none" or routing is None:
        return None
    return routing if mode == "full" else routing.experts_only()


def _frozen(policy: SequencePolicy) -> SequencePolicy:
    """A copy whose parameters train nothing: the KL reference."""
    return copy.deepcopy(policy).requires_grad_(False)


def _masked_mean_var(x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and (population) variance of x over the True entries of mask."""
    n = mask.sum().clamp_min(1)
    mean = torch.where(mask, x, 0.0).sum() / n
    return mean, torch.where(mask, (x - mean) ** 2, 0.0).sum() / n


@torch.no_grad()
def _reward_metrics(rewards: torch.Tensor) -> dict[str, torch.Tensor]:
    """TRL's reward statistics of one minibatch's (N, G) rewards."""
    return {
        "reward": rewards.mean(),
        "reward_std": rewards.std(dim=1).mean(),  # within-group, unbiased
        "frac_reward_zero_std": (rewards == rewards[:, :1]).all(dim=1).float().mean(),
    }


@torch.no_grad()
def _ratio_metrics(batch: _Batch, logp: torch.Tensor) -> dict[str, torch.Tensor]:
    """Advantage signs and log-ratio statistics of the responses an update uses (current log-probs `logp`)."""
    real = batch.mask
    log_w = torch.where(real, logp - batch.logp_old, 0.0)  # (B, L) token log-ratios
    lengths = real.sum(-1)  # (B,)
    log_s = log_w.sum(-1) / lengths.clamp_min(1)  # (B,) log of GSPO's sequence ratio
    token_mean, token_var = _masked_mean_var(log_w, real)
    seq_mean, seq_var = _masked_mean_var(log_s, lengths > 0)
    return {
        "advantages/frac_positive": (batch.advantages > 0).float().mean(),
        "advantages/frac_negative": (batch.advantages < 0).float().mean(),
        "ratios/token_log_mean": token_mean,
        "ratios/token_log_var": token_var,
        "ratios/seq_log_mean": seq_mean,
        "ratios/seq_log_var": seq_var,
        "completions/mean_length": lengths.float().mean(),
    }


@torch.no_grad()
def _churn(policy, batch: _Batch, used: Routing | None, replayed: bool) -> torch.Tensor:
    """Share of (layer, real input position) routing decisions changed since sampling."""
    fresh = policy(batch.prompts, batch.tokens)[1] if replayed else used  # the router's own choices
    n_layers, P = batch.routing.experts.shape[0], batch.prompts.shape[1]
    decisions = n_layers * (P + batch.mask[:, :-1].sum(-1))  # (B,) the positions routing_changes counts
    return routing_changes(batch.routing, fresh, batch.mask).sum() / decisions.sum()


def _exact_reward(task: SequenceTask, policy: SequencePolicy) -> Callable[[], torch.Tensor] | None:
    """E[r] of the current policy, where the task has a closed form for it, else None."""
    if isinstance(policy, TabularPolicy) and isinstance(task, (PatternMatch, CountParity)):
        return torch.no_grad()(lambda: task.expected_reward(policy.probs()))
    return None


def _make_optimizer(config: SequenceRLConfig, params) -> torch.optim.Optimizer:
    opt = config.optimizer
    if isinstance(opt, SGD):  # torch's heavy ball (dampening 0) is v <- mu v + g, theta <- theta - lr v
        return torch.optim.SGD(params, lr=config.lr, momentum=opt.momentum)
    return torch.optim.Adam(params, lr=config.lr, betas=(opt.beta1, opt.beta2), eps=opt.eps)


def _resolve(config: SequenceRLConfig | None, hyperparams: dict) -> SequenceRLConfig:
    names = {f.name for f in dataclasses.fields(SequenceRLConfig)}
    unknown = sorted(set(hyperparams) - names)
    if unknown:
        raise ConfigError(f"unknown hyperparameter {unknown[0]!r}; valid names are {', '.join(sorted(names))}")
    if config is None:
        if "objective" not in hyperparams:
            raise ConfigError("run_sequence_rl needs an objective (a loss registry name) or a SequenceRLConfig")
        return SequenceRLConfig(**hyperparams)
    return dataclasses.replace(config, **hyperparams)


def _update(policy, batch: _Batch, config: SequenceRLConfig, optimizer, loss_fn, clip: dict,
            sampler, reference, moe: bool) -> dict[str, torch.Tensor]:
    """One optimizer step on `batch`; its metrics (detached tensors)."""
    replay = _replayed(batch.routing, config.routing_replay)
    logits, used = policy(batch.prompts, batch.tokens, replay)
    logp = gather_log_probs(logits, batch.tokens, batch.mask)  # (B, L) under the current policy
    loss_args = (batch.logp_old, batch.advantages, batch.mask)
    if sampler is None:
        loss, m = loss_fn(logp, *loss_args, **clip)
    else:  # pg: the stale gradient as is, log-probs (and their gradient) at the sampler
        loss, _ = loss_fn(log_probs(sampler, batch.prompts, batch.tokens, batch.mask, replay), *loss_args, **clip)
        _, m = loss_fn(logp.detach(), *loss_args, **clip)  # ratio metrics of the current policy
    m = {**_ratio_metrics(batch, logp), **m, "losses/loss": loss.detach()}
    if reference is not None:
        with torch.no_grad():
            logp_ref = log_probs(reference, batch.prompts, batch.tokens, batch.mask)
        k3 = torch.where(batch.mask, kl_k3(logp, logp_ref), 0.0)  # (B, L)
        kl = (k3.sum(-1) / batch.mask.sum(-1).clamp_min(1)).mean()  # token mean per sequence, batch mean
        loss = loss + config.kl_coef * kl
        m["kl"] = kl.detach()
    if moe:
        m["routing/churn"] = _churn(policy, batch, used, replayed=replay is not None)

    optimizer.zero_grad(set_to_none=True)
    if sampler is not None:
        sampler.zero_grad(set_to_none=True)  # a deep copy also copied the policy's last gradient
    loss.backward()
    if sampler is not None:  # the gradient taken at the sampler is the policy's update direction
        for p, q in zip(policy.parameters(), sampler.parameters()):
            if q.grad is not None:
                p.grad = q.grad if p.grad is None else p.grad + q.grad
    grads = [p.grad for p in policy.parameters() if p.grad is not None]
    m["grad_norm"] = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
    optimizer.step()
    return m


def run_sequence_rl(
    task: SequenceTask,
    policy: SequencePolicy,
    config: SequenceRLConfig | None = None,
    *,
    steps: int,
    seed: int = 0,
    device=None,
    progress: Callable[[int, int], None] | None = None,
    **hyperparams,
) -> SequenceRun:
    """Train `policy` in place on `task` for `steps` optimizer steps (schedule: module docstring).

    Args:
        task: a `SequenceTask` (PatternMatch, CountParity, Addition).
        policy: a `SequencePolicy` whose responses fit the task (a `TabularPolicy` needs
            length >= task.response_len; a transformer needs max_len >= P + L).
        config: the hyperparameters; `hyperparams` (SequenceRLConfig field names) override its
            fields, or build one: `run_sequence_rl(task, policy, objective="gspo", steps=50)`.
        steps: optimizer steps (>= 1).
        seed: seeds the prompts and the sampler (the policy's weights are the caller's):
            a run on the CPU is a deterministic function of the policy, config and seed.
        device: where to run; the policy is moved there (None: where its parameters are).
        progress: called as progress(step, steps) after every optimizer step.
    """
    config = _resolve(config, hyperparams)
    positive_int("steps", steps)
    if device is not None:
        policy.to(device)
    device = next(policy.parameters()).device
    moe = isinstance(policy, TinyMoETransformer)
    if config.routing_replay != "none" and not moe:
        raise ConfigError(f"routing replay {config.routing_replay!r} needs a MoE policy, got {type(policy).__name__}")

    generator = torch.Generator(device=device).manual_seed(seed)
    loss_fn = get_loss(config.objective)
    clip = {"clip_low": config.eps_low, "clip_high": config.eps_high}
    if config.objective == "dr_grpo":
        clip["max_tokens"] = task.response_len  # its constant normaliser L_max: the generation budget
    stale = config.objective in STALE_GRADIENT
    reference = _frozen(policy) if config.kl_coef > 0 else None
    optimizer = _make_optimizer(config, policy.parameters())
    exact = _exact_reward(task, policy)
    T, NG, G = config.refresh_interval, config.minibatch_size, config.group_size

    history: list[dict[str, torch.Tensor]] = []
    expected = [exact()] if exact else None
    for step in range(steps):
        j = step % T
        if j == 0:
            rollout = _rollout(task, policy, config, generator)
            sampler = copy.deepcopy(policy) if stale else None  # pi_old's parameters, for pg's gradient
        batch = rollout.rows(slice(j * NG, (j + 1) * NG))  # minibatch j: N groups of G
        m = _reward_metrics(batch.rewards.view(-1, G))  # of all N groups, before any filter
        if config.dynamic_sampling:
            keep = filter_informative_groups(batch.rewards.view(-1, G))  # (N,)
            m["groups/kept_frac"] = keep.float().mean()
            batch = batch.rows(keep.repeat_interleave(G))
        if batch.tokens.shape[0] > 0:  # else nothing informative is left: no update this step
            m.update(_update(policy, batch, config, optimizer, loss_fn, clip, sampler, reference, moe))
        history.append(m)
        if expected is not None:
            expected.append(exact())
        if progress is not None:
            progress(step + 1, steps)

    nan = torch.tensor(math.nan, dtype=torch.float64)
    names = dict.fromkeys(name for m in history for name in m)  # first-seen order
    metrics = {name: torch.stack([m[name].detach().double().cpu() if name in m else nan for m in history]).numpy()
               for name in names}
    return SequenceRun(
        config=config,
        metrics=metrics,
        window_position=np.arange(steps) % T,
        expected_reward=None if expected is None else torch.stack(expected).double().cpu().numpy(),
        response_len=task.response_len,
    )
