"""Batched sampling with a preallocated KV cache, keeping the sampler's own log-probs.

    ro = generate(model, prompt_ids, prompt_mask, max_new_tokens, temperature=1.0, top_p=1.0,
                  eos_id=tok.eos_id, pad_id=tok.pad_id, generator=g)
    logp, aux = completion_log_probs(model, ro.sequences, ro.attention_mask, ro.completion_mask)

Each row draws y_t ~ q_t, the sampler's distribution: softmax(logits_t / tau) restricted to the
top-p nucleus (the smallest set of most likely tokens whose mass reaches p) and renormalised.
`ro.sampler_logprobs` holds log q_t(y_t), so the train/sampler mismatch log pi(y_t) - log q_t(y_t)
is measurable; with tau = 1 and p = 1 it is 0 up to float32 rounding (the tests check this).
tau = 0 is greedy decoding (argmax; the sampler's distribution is a point mass, log q = 0).

Draws invert the CDF of q_t with uniforms U (N, B) made once per call from `generator` (`draw`),
row r of step t using U[t, r]; tau = 0 draws none.

A row stops at its first EOS (kept, completion mask 1); later positions hold `pad_id` with mask 0
and log-prob 0. The cache holds P + N slots, allocated once per call; the prompt runs in one
forward, then every step feeds one token per row. A dense built-in model in float32 (no autocast)
decodes with `_decode.Decoder` steps - the same function with fewer kernels, and rows that
finished are dropped from the batch (`_fast_loop`); other models (MoE, Hugging Face wrappers,
bf16) step through their own cached forward, the reference path (`fast=False` forces it). Both
paths draw the same tokens from the same uniforms (tests/train/test_decode.py). On CUDA a dense
built-in model (float32 weights, autocast off or bf16/fp16) decodes with `_graph_decode`: each step
one CUDA graph replay, every row decoded, in the cache's dtype (tests/train/test_graph_decode.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.train import _decode, _graph_decode

# The fast loop drops finished rows from its batch once at most this fraction of the batch is alive
# (each drop copies the live rows' cache; between drops, finished rows ride along).
COMPACT = 0.75


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
    logits = logits.float()
    log_q = torch.log_softmax(logits if temperature == 1.0 else logits / temperature, dim=-1)  # x / 1 = x exactly
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
    fast: bool = True,
    compile_decode: bool = False,
) -> Rollout:
    """Sample up to `max_new_tokens` tokens after each left-padded prompt (module docstring).

    Args:
        model: a `CausalLM` (or a wrapper with the same call and `new_kv_cache`).
        prompt_ids: (B, P) int64, left-padded; prompt_mask: (B, P), 1 for real tokens (None: all).
        max_new_tokens: N >= 1; temperature: tau >= 0 (0 = greedy); top_p: p in (0, 1].
        eos_id: the token that ends a completion (None: every row runs N tokens).
        pad_id: fills the positions after EOS.
        generator: the random stream of the draws, on the model's device (None: torch's global).
        fast: decode with `_graph_decode` (CUDA) or `_decode.Decoder` steps when the model supports
            them (a dense built-in model; module docstring); False: the model's own cached
            forward every step (the reference path; same draws, same numbers up to float32
            summation order).
        compile_decode: on the CUDA graph path, the decode step through torch.compile (`_graph_decode.decode`):
            faster rollouts for a one-off compile per rollout shape.
    """
    prompt_mask, tau, p = _checked_options(model, prompt_ids, prompt_mask, max_new_tokens, temperature, top_p, eos_id, pad_id)
    B, P = prompt_ids.shape
    N = max_new_tokens
    # the uniforms of every draw, row r of step t using U[t, r] on every path (greedy draws none)
    U = None if tau == 0.0 else torch.rand(N, B, generator=generator, device=prompt_ids.device)
    if fast and _graph_decode.supports(model, prompt_ids.device):  # the session owns its cache
        with torch.inference_mode():
            tokens, logprobs = _graph_decode.decode(model, prompt_ids, prompt_mask, N, tau, p, eos_id, U, draw,
                                                    compiled=compile_decode)
        tokens, logprobs = tokens.clone(), logprobs.clone()  # the session's buffers, reused by its next rollout
        return _finish(prompt_ids, prompt_mask, tokens, logprobs, eos_id, pad_id, None)
    cache = model.new_kv_cache(B, P + N)  # allocated once: every key and value of this call
    if fast and _decode.supports(model, prompt_ids.device):
        with torch.inference_mode():  # no autograd bookkeeping per kernel (~10% of a step at this size)
            tokens, logprobs = _fast_loop(model, cache, prompt_ids, prompt_mask, N, tau, p, eos_id, U)
        tokens, logprobs = tokens.clone(), logprobs.clone()  # normal tensors again: training may read them
        return _finish(prompt_ids, prompt_mask, tokens, logprobs, eos_id, pad_id, None)
    return _reference_loop(model, cache, prompt_ids, prompt_mask, N, tau, p, eos_id, pad_id, U)


def _checked_options(model, prompt_ids, prompt_mask, max_new_tokens, temperature, top_p, eos_id, pad_id):
    """(prompt_mask as int64 on the prompts' device, tau, top_p) after checking every option of `generate`."""
    if prompt_ids.ndim != 2 or prompt_ids.dtype != torch.long or prompt_ids.shape[1] < 1:
        raise ValueError(f"prompt_ids must be int64 (B, P >= 1), got {prompt_ids.dtype} {tuple(prompt_ids.shape)}")
    P = prompt_ids.shape[1]
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise ConfigError(f"max_new_tokens must be an integer >= 1, got {max_new_tokens!r}")
    tau = _check_number("temperature", temperature, 0.0, math.inf, low_open=False)
    p = _check_number("top_p", top_p, 0.0, 1.0, low_open=True)
    V = model.config.vocab_size
    for name, token in (("eos_id", eos_id), ("pad_id", pad_id)):
        if token is not None and (isinstance(token, bool) or not isinstance(token, int) or not 0 <= token < V):
            raise ConfigError(f"{name} must be a token id in [0, {V}), got {token!r}")
    if P + max_new_tokens > model.config.max_seq_len:
        raise ConfigError(f"prompt ({P}) plus max_new_tokens ({max_new_tokens}) exceed the model's max_seq_len "
                          f"{model.config.max_seq_len}")
    device = prompt_ids.device
    prompt_mask = torch.ones_like(prompt_ids) if prompt_mask is None else prompt_mask.to(device=device, dtype=torch.long)
    if prompt_mask.shape != prompt_ids.shape:
        raise ValueError(f"prompt_mask must have shape {tuple(prompt_ids.shape)}, got {tuple(prompt_mask.shape)}")
    return prompt_mask, tau, p


def _reference_loop(model, cache, prompt_ids, prompt_mask, N, tau, p, eos_id, pad_id, U) -> Rollout:
    """The reference path of `generate`: the model's own cached forward every step."""
    B, P = prompt_ids.shape
    device = prompt_ids.device
    logits, aux = model(prompt_ids, attention_mask=prompt_mask, kv_cache=cache)
    sequences = torch.full((B, P + N), pad_id, dtype=torch.long, device=device)
    sequences[:, :P] = prompt_ids
    completion_mask = torch.zeros(B, N, dtype=torch.long, device=device)
    logprobs = torch.zeros(B, N, dtype=torch.float32, device=device)
    alive = torch.ones(B, dtype=torch.bool, device=device)  # no EOS drawn yet
    routing = None
    if aux["routing"] is not None:  # (B, P + N, k) per layer, filled as the tokens are fed
        routing = tuple(torch.zeros(B, P + N, r.shape[-1], dtype=torch.long, device=device) for r in aux["routing"])
        for buffer, made in zip(routing, aux["routing"]):
            buffer[:, :P] = made
    for t in range(N):
        token, token_logp = draw(logits[:, -1], tau, p, None if U is None else U[t])
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
    return _finish(prompt_ids, prompt_mask, sequences[:, P:], logprobs, eos_id, pad_id, routing)


def draw(logits: torch.Tensor, tau: float, top_p: float, u: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """(y (B,) int64, log q(y) (B,) float32): one token per row from the sampler's q
    (`sampler_distribution`), by inversion of its CDF with the uniforms u (B,) in [0, 1):

        y = #{j : c_j <= u c_V},   c_j = sum_{i <= j} q_i,   so P(y = j) = (c_j - c_{j-1}) / c_V = q_j

    (up to float32 rounding of the cumulative sum). A token outside the nucleus has q_j = 0, so
    c_j = c_{j-1} and it is never drawn; u <= 1 - 2^-24 makes fl(u c_V) < c_V, so y <= V - 1. Logits that
    are not finite (a diverged model) give a nan CDF: y is then clamped to V - 1 and log q(y) is nan, which
    the trainer's rollout refuses (`TrainingDiverged`) without a sync per token here.
    tau = 0: y = argmax, log q = 0 (a point mass), and u is not used.
    """
    if tau == 0.0:
        return logits.argmax(-1), torch.zeros(logits.shape[0], device=logits.device)
    log_q = sampler_distribution(logits, tau, top_p)
    cdf = log_q.exp().cumsum(-1)  # (B, V)
    token = torch.searchsorted(cdf, (u * cdf[:, -1])[:, None], right=True).clamp_max_(cdf.shape[-1] - 1)  # (B, 1)
    return token[:, 0], log_q.gather(1, token)[:, 0]


def _fast_loop(model, cache, prompt_ids, prompt_mask, N, tau, p, eos_id, U):
    """The decode loop on `_decode.Decoder` steps: raw tokens and log q (B, N), meaningful up to
    each row's first EOS (`_finish` masks the rest).

    Rows that drew EOS are dropped from the batch once at most COMPACT of its rows are alive: the
    live rows' cache entries, tables and state move to the front of the same buffers (in place), so
    later steps compute n_alive rows. Until then, finished rows ride along computing garbage that
    nothing reads. Row r of step t draws with U[t, r] whatever its place in the batch.

    A one-token prompt (P = 1) is itself a decode step at slot 0 and position 0 (a padding prompt
    token attends only its own slot, as in the model's forward); a longer one runs the model's
    forward once, filling the cache."""
    B, P = prompt_mask.shape
    device = prompt_ids.device
    decoder = _decode.Decoder(model)
    tokens = torch.full((N, B), 0, dtype=torch.long, device=device)
    logprobs = torch.zeros(N, B, device=device)
    first = prompt_mask.sum(-1)  # (B,) position of completion token 0: the prompt's real tokens
    table = decoder.position_table(int(first.max()) + N, device)  # (positions, D) each
    if P == 1:
        last = decoder.step(prompt_ids[:, 0], tuple(x[:1] for x in table), list(cache.keys), list(cache.values), 0, None)
    else:
        last = model(prompt_ids, attention_mask=prompt_mask, kv_cache=cache)[0][:, -1]  # (B, V)
    shared = int(first[0]) if bool((first == first[0]).all()) else None  # all rows' first position, if one
    bias = _decode.padding_bias(prompt_mask, cache.capacity)  # (B, 1, 1, S) or None
    rows = None  # the original row of each batch row (None: all B, in order)
    alive = torch.ones(B, dtype=torch.bool, device=device)
    n = B
    keys, values = cache.keys, cache.values  # (n_layers, B, H_kv, S, d_h); rows [:n] in use
    layer_kv = list(keys), list(values)  # per layer (n, H_kv, S, d_h) views
    fed = 0
    for t in range(N):
        u = None if U is None else (U[t] if rows is None else U[t].index_select(0, rows))
        token, token_logp = draw(last, tau, p, u)
        if rows is None:
            tokens[t], logprobs[t] = token, token_logp
        else:
            tokens[t].index_copy_(0, rows, token)
            logprobs[t].index_copy_(0, rows, token_logp)
        if t + 1 == N:
            break
        if eos_id is not None:
            alive &= token != eos_id
            n_alive = int(alive.sum())
            if n_alive == 0:
                break  # every row finished
            if n_alive <= COMPACT * n:
                keep = alive.nonzero()[:, 0]  # (n_alive,) ascending
                rows = keep if rows is None else rows.index_select(0, keep)
                for buffer in (keys, values):
                    buffer[:, :n_alive] = buffer[:, :n].index_select(1, keep)  # gathered copy, then in place
                token, alive = token.index_select(0, keep), alive.index_select(0, keep)
                first = first.index_select(0, keep)
                bias = None if bias is None else bias.index_select(0, keep)
                n = n_alive
                layer_kv = list(keys[:, :n]), list(values[:, :n])
        if shared is not None:  # one position for every row: a (1, D) row of the table
            step_tables = tuple(x[shared + t : shared + t + 1] for x in table)
        else:
            position = first + t  # (n,) completion token t sits at position first + t
            step_tables = tuple(x.index_select(0, position) for x in table)  # (n, D)
        last = decoder.step(token, step_tables, *layer_kv, P + t, bias)
        fed = t + 1
    cache.length = P + fed  # slots filled; after compaction the cache rows are this loop's scratch
    return tokens.t(), logprobs.t()


def _finish(prompt_ids, prompt_mask, tokens, logprobs, eos_id, pad_id, routing) -> Rollout:
    """The `Rollout` of raw completion tokens and log q (B, N): a row's completion mask is 1 up to
    and including its first EOS; tokens after it become `pad_id`, log-probs 0."""
    if eos_id is None:
        completion_mask = torch.ones_like(tokens)
        truncated = torch.ones(tokens.shape[0], dtype=torch.bool, device=tokens.device)
    else:
        eos = (tokens == eos_id).long()
        completion_mask = (eos.cumsum(1) - eos == 0).long()  # no EOS strictly before t
        truncated = eos.sum(1) == 0
    real = completion_mask.bool()
    sequences = torch.cat([prompt_ids, torch.where(real, tokens, pad_id)], dim=1)
    logprobs = torch.where(real, logprobs, torch.zeros_like(logprobs))
    attention_mask = torch.cat([prompt_mask, completion_mask], dim=1)
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
