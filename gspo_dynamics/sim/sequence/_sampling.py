"""Batched autoregressive sampling that keeps the sampler's log-probs, and teacher-forced
log-probs of given responses: the two sides of an importance ratio pi_theta / pi_old.

    tokens, logp_old, mask, routing = sample(policy, prompts, L, generator)
    logp = log_probs(policy, prompts, tokens, mask, routing)     # equals logp_old before any update
"""

from __future__ import annotations

import math

import torch

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.sim.sequence._policy import Routing, SequencePolicy, check_max_len, check_prompts


def _check_temperature(temperature) -> float:
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not (
        math.isfinite(temperature) and temperature > 0
    ):
        raise ConfigError(f"temperature must be a finite number > 0, got {temperature!r}")
    return float(temperature)


@torch.no_grad()
def sample(
    policy: SequencePolicy,
    prompts: torch.Tensor,
    max_len: int,
    generator: torch.Generator | None = None,
    temperature: float = 1.0,
    eos: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, Routing | None]:
    """Draw one response per prompt, y_t ~ softmax(logits_t / tau), one batched step per position.

    Args:
        policy: a `SequencePolicy` (tabular, tiny transformer, tiny MoE transformer).
        prompts: (B, P) int64.
        max_len: L, response tokens to draw.
        generator: the random stream (None: torch's global generator).
        temperature: tau > 0; the log-probs are those of the tempered distribution actually sampled.
        eos: a token that ends a response: the positions after it are padding (mask 0, token
            `eos`, log-prob 0). None: every response has exactly L tokens.

    Returns:
        tokens (B, L) int64; logp (B, L) log pi_old(y_t | x, y_<t), 0 at padding; mask (B, L) bool,
        True for real tokens (the EOS included); routing: the expert choices (MoE) or None.
    """
    check_prompts(prompts)
    L, tau = check_max_len(max_len), _check_temperature(temperature)
    if eos is not None and not (isinstance(eos, int) and 0 <= eos < policy.vocab_size):
        raise ConfigError(f"eos must be a token id in [0, {policy.vocab_size}), got {eos!r}")
    logits, state = policy.begin(prompts, L)  # (B, V) for position 0
    B = prompts.shape[0]
    tokens = torch.empty(B, L, dtype=torch.long, device=prompts.device)
    logp = torch.zeros(B, L, dtype=logits.dtype, device=prompts.device)
    mask = torch.ones(B, L, dtype=torch.bool, device=prompts.device)
    alive = mask[:, 0].clone()  # (B,) no EOS drawn yet
    for t in range(L):
        log_dist = torch.log_softmax(logits / tau, dim=-1)  # (B, V)
        token = torch.multinomial(log_dist.exp(), 1, generator=generator)[:, 0]  # (B,)
        if eos is not None:
            token = torch.where(alive, token, eos)  # padding repeats EOS: a valid id for any policy
            mask[:, t] = alive
        tokens[:, t] = token
        logp[:, t] = torch.where(mask[:, t], log_dist.gather(1, token[:, None])[:, 0], 0.0)
        if eos is not None:
            alive &= token != eos
        if t + 1 < L:
            logits = policy.extend(state, token)
    return tokens, logp, mask, state.routing


def gather_log_probs(
    logits: torch.Tensor, tokens: torch.Tensor, mask: torch.Tensor | None = None, temperature: float = 1.0
) -> torch.Tensor:
    """log softmax(logits_t / tau)[y_t] per position, 0 where `mask` is 0.

    Args:
        logits: (B, L, V); tokens: (B, L) int64; mask: (B, L) or None (all real).

    Returns:
        (B, L) log-probs, differentiable in `logits`.
    """
    tau = _check_temperature(temperature)
    logp = torch.log_softmax(logits / tau, dim=-1).gather(-1, tokens[..., None])[..., 0]  # (B, L)
    if mask is None:
        return logp
    if tuple(mask.shape) != tuple(tokens.shape):
        raise ValueError(f"mask must have shape {tuple(tokens.shape)} like tokens, got {tuple(mask.shape)}")
    return torch.where(mask.bool(), logp, torch.zeros_like(logp))  # select: padding may be -inf


def log_probs(
    policy: SequencePolicy,
    prompts: torch.Tensor,
    tokens: torch.Tensor,
    mask: torch.Tensor | None = None,
    routing: Routing | None = None,
    temperature: float = 1.0,
) -> torch.Tensor:
    """Teacher-forced log pi_theta(y_t | x, y_<t), (B, L), differentiable; 0 where `mask` is 0.

    `routing` (MoE only) replays recorded expert choices; `policy(prompts, tokens, routing)`
    returns the logits and the routing used, for callers that also count routing changes.
    """
    logits, _ = policy(prompts, tokens, routing)
    return gather_log_probs(logits, tokens, mask, temperature)
