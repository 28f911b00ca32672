"""Batched sampling with a preallocated KV cache, keeping the sampler's own log-probs.

    ro = generate(model, prompt_ids, prompt_mask, max_new_tokens, temperature=1.0, top_p=1.0,
                  eos_id=tok.eos_id, pad_id=tok.pad_id, generator=g)
    logp, aux = completion_log_probs(model, ro.sequences, ro.attention_mask, ro.completion_mask)

Each row draws y_t ~ q_t, the sampler's distribution: softmax(logits_t / tau) restricted to the
top-p nucleus (the smallest set of most likely tokens whose mass reaches p) and renormalised.
`ro.sampler_logprobs` holds log q_t(y_t), so the train/sampler mismatch log pi(y_t) - log q_t(y_t)
is measurable; with tau = 1 and p = 1 it is 0 up to float32 rounding (the tests check this).
tau = 0 is greedy decoding (argmax; the sampler's distribution is a point mass, log q = 0).

A row stops at its first EOS (kept, completion mask 1); later positions hold `pad_id` with mask 0
and log-prob 0. The cache holds P + N slots, allocated once per call; the prompt runs in one
forward, then every step feeds one token per row.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from gspo_dynamics._errors import ConfigError


@dataclass
class Rollout:
    """One batch of sampled completions.

    sequences (B, P + N) int64: the left-padded prompt, then the completion (pad after EOS).
    attention_mask (B, P + N) int64: 1 for real tokens (prompt and completion, EOS included).
    completion_mask (B, N) int64: 1 up to and including EOS.
    sampler_logprobs (B, N) float32: log q_t(y_t) under the sampler's distribution, 0 at padding.
    routing: one (B, P + N, k) int64 expert tensor per MoE layer (replay it with
        `completion_log_probs(..., routing=ro.routing)`), or None for a dense model.
    truncated (B,) bool: the row reached max_new_tokens without EOS.
    """

    sequences: torch.Tensor
    attention_mask: torch.Tensor
    completion_mask: torch.Tensor
    sampler_logprobs: torch.Tensor
    routing: tuple[torch.Tensor, ...] | None
    truncated: torch.Tensor

    @property
    def prompt_len(self) -> int:
        return self.sequences.shape[1] - self.completion_mask.shape[1]

    @property
    def completion_ids(self) -> torch.Tensor:
        """(B, N) the completion tokens."""
        return self.sequences[:, self.prompt_len :]


def _check_number(name: str, value, low: float, high: float, low_open: bool) -> float:
    bad = isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
    if bad or (value <= low if low_open else value < low) or value > high:
        interval = f"{'(' if low_open else '['}{low}, {high}]"
        raise ConfigError(f"{name} must be a number in {interval}, got {value!r}")
    return float(value)


def sampler_distribution(logits: torch.Tensor, temperature: float, top_p: float) -> torch.Tensor:
    """log q (..., V) float32: log softmax(logits / tau) on the top-p nucleus, renormalised,
    -inf outside it. The nucleus keeps a token when the mass of the strictly more likely tokens
    is < p, so it always holds the most likely token (ties are broken by sort order)."""
    log_q = torch.log_softmax(logits.float() / temperature, dim=-1)
    if top_p >= 1.0:
        return log_q
    sorted_lq, order = log_q.sort(dim=-1, descending=True)
    before = sorted_lq.exp().cumsum(-1) - sorted_lq.exp()  # mass of the tokens ranked above
    keep_sorted = before < top_p
    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
    return torch.log_softmax(log_q.masked_fill(~keep, -torch.inf), dim=-1)


@torch.no_grad()
def generate(
    model,
    prompt_ids: torch.Tensor,
    prompt_mask: torch.Tensor | None,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_p: float = 1.0,
    eos_id: int | None = None,
    pad_id: int = 0,
    generator: torch.Generator | None = None,
) -> Rollout:
    """Sample up to `max_new_tokens` tokens after each left-padded prompt (module docstring).

    Args:
        model: a `CausalLM` (or a wrapper with the same call and `new_kv_cache`).
        prompt_ids: (B, P) int64, left-padded; prompt_mask: (B, P), 1 for real tokens (None: all).
        max_new_tokens: N >= 1; temperature: tau >= 0 (0 = greedy); top_p: p in (0, 1].
        eos_id: the token that ends a completion (None: every row runs N tokens).
        pad_id: fills the positions after EOS.
        generator: the random stream of the draws, on the model's device (None: torch's global).
    """
    if prompt_ids.ndim != 2 or prompt_ids.dtype != torch.long or prompt_ids.shape[1] < 1:
        raise ValueError(f"prompt_ids must be int64 (B, P >= 1), got {prompt_ids.dtype} {tuple(prompt_ids.shape)}")
    B, P = prompt_ids.shape
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise ConfigError(f"max_new_tokens must be an integer >= 1, got {max_new_tokens!r}")
    tau = _check_number("temperature", temperature, 0.0, math.inf, low_open=False)
    p = _check_number("top_p", top_p, 0.0, 1.0, low_open=True)
    V = model.config.vocab_size
    for name, token in (("eos_id", eos_id), ("pad_id", pad_id)):
        if token is not None and (isinstance(token, bool) or not isinstance(token, int) or not 0 <= token < V):
            raise ConfigError(f"{name} must be a token id in [0, {V}), got {token!r}")
    N = max_new_tokens
    if P + N > model.config.max_seq_len:
        raise ConfigError(f"prompt ({P}) plus max_new_tokens ({N}) exceed the model's max_seq_len {model.config.max_seq_len}")
    device = prompt_ids.device
    prompt_mask = torch.ones_like(prompt_ids) if prompt_mask is None else prompt_mask.to(device=device, dtype=torch.long)
    if prompt_mask.shape != prompt_ids.shape:
        raise ValueError(f"prompt_mask must have shape {tuple(prompt_ids.shape)}, got {tuple(prompt_mask.shape)}")

    cache = model.new_kv_cache(B, P + N)  # allocated once: every key and value of this call
    sequences = torch.full((B, P + N), pad_id, dtype=torch.long, device=device)
    sequences[:, :P] = prompt_ids
    completion_mask = torch.zeros(B, N, dtype=torch.long, device=device)
    logprobs = torch.zeros(B, N, dtype=torch.float32, device=device)
    alive = torch.ones(B, dtype=torch.bool, device=device)  # no EOS drawn yet
    logits, aux = model(prompt_ids, attention_mask=prompt_mask, kv_cache=cache)
    routing = None
    if aux["routing"] is not None:  # (B, P + N, k) per layer, filled as the tokens are fed
        routing = tuple(torch.zeros(B, P + N, r.shape[-1], dtype=torch.long, device=device) for r in aux["routing"])
        for buffer, made in zip(routing, aux["routing"]):
            buffer[:, :P] = made
    for t in range(N):
        last = logits[:, -1]  # (B, V) the distribution of completion token t
        if tau == 0.0:
            token = last.argmax(-1)
            token_logp = torch.zeros(B, device=device)
        else:
            log_q = sampler_distribution(last, tau, p)
            token = torch.multinomial(log_q.exp(), 1, generator=generator)[:, 0]  # (B,)
            token_logp = log_q.gather(1, token[:, None])[:, 0]
        token = torch.where(alive, token, torch.full_like(token, pad_id))
        completion_mask[:, t] = alive.long()
        logprobs[:, t] = torch.where(alive, token_logp, torch.zeros_like(token_logp))
        sequences[:, P + t] = token
        if eos_id is not None:
            alive = alive & (token != eos_id)
        last_step = t + 1 == N
        if last_step and routing is None:
            break
        # feed the token (also the last one of an MoE model, to record its routing)
        logits, aux = model(token[:, None], attention_mask=completion_mask[:, t : t + 1], kv_cache=cache)
        if routing is not None:
            for buffer, made in zip(routing, aux["routing"]):
                buffer[:, P + t] = made[:, 0]
        if eos_id is not None and not last_step and not bool(alive.any()):
            break  # every row finished: the rest is padding already
    attention_mask = torch.cat([prompt_mask, completion_mask], dim=1)
    truncated = alive if eos_id is not None else torch.ones(B, dtype=torch.bool, device=device)
    return Rollout(sequences, attention_mask, completion_mask, logprobs, routing, truncated)


def completion_log_probs(
    model,
    sequences: torch.Tensor,
    attention_mask: torch.Tensor,
    completion_mask: torch.Tensor,
    temperature: float = 1.0,
    routing=None,
) -> tuple[torch.Tensor, dict]:
    """Teacher-forced log pi(y_t | x, y_<t) of the completion tokens, (B, N) float32,
    differentiable, 0 where `completion_mask` is 0; and the model's aux of that forward.

        log pi(y_t) = log_softmax(logits_{P+t-1} / tau)[y_t],   y_t = sequences[:, P + t]

    `routing` (MoE) replays the sampler's expert choices (`Rollout.routing`).
    """
    B, S = sequences.shape
    N = completion_mask.shape[1]
    P = S - N
    if P < 1 or completion_mask.shape[0] != B:
        raise ValueError(f"completion_mask must have shape ({B}, N < {S}), got {tuple(completion_mask.shape)}")
    logits, aux = model(sequences, attention_mask=attention_mask, routing=routing)
    logp = torch.log_softmax(logits[:, P - 1 : S - 1].float() / temperature, dim=-1)  # (B, N, V)
    logp = logp.gather(-1, sequences[:, P:, None])[..., 0]  # (B, N)
    return torch.where(completion_mask.bool(), logp, torch.zeros_like(logp)), aux
