"""The two halves of the trainer's cycle: a rollout buffer, and one optimizer step on a minibatch of it.

Rollout (once per T = steps_per_generation x num_iterations optimizer steps), per process:

    prompts  -> G completions each, sampled with the KV cache        log q (the sampler's) kept
    rewards  -> A = group advantages (objectives registry)           whole groups: no cross-process term
    log pi_old(y_t)  recomputed teacher-forced by the training model (routing replayed if asked);
                     on-policy (T = 1, no dropout) the update's own forward gives it instead (`score`)
    log pi_ref(y_t)  of the frozen reference (kl_coef > 0)

Update on minibatch rows (`update`):

    logp = log pi_theta(y_t | x, y_<t)                  teacher-forced, temperature-scaled as sampled
    loss = objective(logp, logp_old, A, mask) + beta mean_i mean_t k3(pi_theta, pi_ref)(y_it)
           [+ load_balance_coef x the MoE router's load-balance loss]
    g    = grad loss  (averaged over processes),  clipped to max_grad_norm,  optimizer step

`pg` (no off-policy correction) takes its gradient at the sampling policy: its logp comes from a
copy of the weights taken at the rollout, so a stale rollout's gradient is applied as is (as in
`gspo_dynamics.sim.sequence.run_sequence_rl`); its ratio metrics still compare the current policy
with the sampler.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import torch

from gspo_dynamics._errors import TrainingDiverged
from gspo_dynamics.objectives import group_advantages, kl_k3
from gspo_dynamics.train import _metrics as M
from gspo_dynamics.train._distributed import TOKEN_NORMALISED, World, average_gradients, sum_scalar


@dataclass
class Buffer:
    """One process's rollout, rows grouped by prompt (G consecutive rows), ordered by minibatch.

    sequences, attention_mask (B, P + L); completion_mask, logp_old, logp_sampler, logp_ref (B, L);
    routing: one (B, P + L, k) expert tensor per MoE layer or None; rewards, advantages (B,) float32;
    truncated (B,) bool.
    """

    sequences: torch.Tensor
    attention_mask: torch.Tensor
    completion_mask: torch.Tensor
    logp_sampler: torch.Tensor
    routing: tuple[torch.Tensor, ...] | None
    truncated: torch.Tensor
    rewards: torch.Tensor
    logp_old: torch.Tensor | None = None
    logp_ref: torch.Tensor | None = None
    advantages: torch.Tensor | None = None

    def rows(self, index: slice) -> Buffer:
        def take(x):
            if x is None:
                return None
            return tuple(r[index] for r in x) if isinstance(x, tuple) else x[index]

        return Buffer(**{f.name: take(getattr(self, f.name)) for f in fields(self)})

    @property
    def mask(self) -> torch.Tensor:
        return self.completion_mask.bool()


def _pad(x: torch.Tensor, left: int, right: int, value) -> torch.Tensor:
    """Pad dim 1 of x with `value` (a scalar, or a (k,) row for routing)."""
    shape = list(x.shape)
    parts = []
    for width in (left, right):
        shape[1] = width
        block = torch.empty(shape, dtype=x.dtype, device=x.device)
        block[...] = torch.as_tensor(value, dtype=x.dtype, device=x.device)
        parts.append(block)
    return torch.cat([parts[0], x, parts[1]], dim=1)


def merge(buffers: list[Buffer], order: torch.Tensor, pad_id: int) -> Buffer:
    """The rows of several rollouts in one buffer, re-padded to a common prompt width (left) and
    completion width (right), then rows reordered by `order` (indices into the concatenation)."""
    if len(buffers) == 1:
        return buffers[0].rows(order)
    P = max(b.sequences.shape[1] - b.completion_mask.shape[1] for b in buffers)
    L = max(b.completion_mask.shape[1] for b in buffers)
    out = []
    for b in buffers:
        p, l = b.sequences.shape[1] - b.completion_mask.shape[1], b.completion_mask.shape[1]
        routing = None
        if b.routing is not None:
            k = b.routing[0].shape[-1]
            filler = torch.arange(k)  # a valid (sorted, distinct) expert set at padding
            routing = tuple(_pad(r, P - p, L - l, filler) for r in b.routing)
        out.append(Buffer(
            sequences=_pad(b.sequences, P - p, L - l, pad_id),
            attention_mask=_pad(b.attention_mask, P - p, L - l, 0),
            completion_mask=_pad(b.completion_mask, 0, L - l, 0),
            logp_sampler=_pad(b.logp_sampler, 0, L - l, 0.0),
            routing=routing, truncated=b.truncated, rewards=b.rewards,
        ))
    joined = {f.name: None for f in fields(Buffer)}
    for name in ("sequences", "attention_mask", "completion_mask", "logp_sampler", "truncated", "rewards"):
        joined[name] = torch.cat([getattr(b, name) for b in out])[order]
    if out[0].routing is not None:
        joined["routing"] = tuple(torch.cat(layer)[order] for layer in zip(*(b.routing for b in out)))
    return Buffer(**joined)


def forward_logprobs(model, buf: Buffer, temperature: float, replay: bool, autocast):
    """Teacher-forced log-probs of the completion tokens and the mean entropy of their distributions,

        log pi(y_t) = log_softmax(z_{P+t-1} / tau)[y_t],   H = mean_t -sum_v pi_t(v) log pi_t(v)

    over real completion tokens (tau: the sampling temperature, as TRL scales the logits), from one
    forward (`rollout.completion_log_probs` computes the same log-probs, without the entropy);
    returns (logp (B, L) differentiable, 0 at padding; H (); the model's aux). `model` may be any
    callable with the model's signature. The rollout's routing is replayed when `replay`."""
    P = buf.sequences.shape[1] - buf.completion_mask.shape[1]
    with autocast():
        logits, aux = model(buf.sequences, attention_mask=buf.attention_mask, routing=buf.routing if replay else None)
    logp_all = torch.log_softmax(logits[:, P - 1 : -1].float() / temperature, dim=-1)  # (B, L, V)
    logp = logp_all.gather(-1, buf.sequences[:, P:, None])[..., 0]  # (B, L)
    mask = buf.mask
    with torch.no_grad():
        h = -(logp_all.exp() * logp_all).sum(-1)  # (B, L) token entropies
        entropy = M.masked_mean_var(h, mask)[0]
    return torch.where(mask, logp, torch.zeros_like(logp)), entropy, aux


STOCHASTIC_KEYS = ("dropout", "pdrop", "layerdrop", "jitter")  # config keys of train-only randomness (GPT-2, OPT, Mixtral...)


def dropout_free(model) -> bool:
    """Whether `model`'s train-mode forward is its eval-mode forward: no module drops anything (a torch dropout
    of any kind with p > 0, or a float `dropout` / `attention_dropout` above 0, as our and Hugging Face's
    attention keep), and no module's `config` (ours, Hugging Face's) sets a key naming STOCHASTIC_KEYS above 0
    (hidden or activation dropout, layer drop, router jitter)."""
    def positive(value) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0

    for module in model.modules():
        if isinstance(module, torch.nn.modules.dropout._DropoutNd) and module.p > 0:
            return False
        if any(isinstance(getattr(module, name, None), float) and getattr(module, name) > 0
               for name in ("dropout", "attention_dropout")):
            return False
        settings = getattr(getattr(module, "config", None), "__dict__", {})
        if any(positive(v) and any(k in key for k in STOCHASTIC_KEYS) for key, v in settings.items()):
            return False
    return True


@torch.no_grad()
def score(buf: Buffer, model, reference, *, group_size: int, scale: str, temperature: float, replay: bool, autocast,
          old: bool = True) -> Buffer:
    """Fill advantages, logp_old (training model) and logp_ref (reference) of a fresh rollout. `old` False leaves
    logp_old None: one optimizer step per rollout on a `dropout_free` model, whose update forward computes
    pi_old itself (the same weights; `update` takes it from there, as TRL does on-policy)."""
    buf.advantages = group_advantages(buf.rewards.view(-1, group_size), scale=scale).view(-1)  # (B,)
    if old:
        buf.logp_old = forward_logprobs(model, buf, temperature, replay, autocast)[0]
    if reference is not None:
        buf.logp_ref = forward_logprobs(reference, buf, temperature, replay, autocast)[0]
    return buf


def _churn(model, buf: Buffer, aux: dict, replayed: bool, autocast) -> torch.Tensor:
    """Share of (layer, real input position) expert sets that differ from the sampler's."""
    with torch.no_grad():
        fresh = aux["routing"]
        if replayed:  # the update used the sampler's routing: ask the router what it would choose
            with autocast():
                fresh = model(buf.sequences, attention_mask=buf.attention_mask)[1]["routing"]
        inputs = buf.attention_mask[:, :-1].bool()  # positions whose output predicts a token
        changed = sum(((s[:, :-1] != f[:, :-1]).any(-1) & inputs).sum() for s, f in zip(buf.routing, fresh))
        return changed.float() / (inputs.sum() * len(fresh)).clamp_min(1)


def update(model, batch: Buffer, *, loss_fn, loss_kwargs: dict[str, Any], objective: str, kl_coef: float,
           load_balance_coef: float = 0.0, temperature: float, replay: bool, sampler_params: dict | None, optimizer, max_grad_norm: float | None,
           world: World, autocast, train_model=None) -> dict[str, torch.Tensor]:
    """One optimizer step on the process's minibatch rows (module docstring); detached metrics. Without
    `batch.logp_old` (`score(old=False)`) pi_old is this forward's own log-probs, detached."""
    train_model = model if train_model is None else train_model
    mask = batch.mask
    logp, entropy, aux = forward_logprobs(train_model, batch, temperature, replay, autocast)
    logp_old = logp.detach() if batch.logp_old is None else batch.logp_old
    args = (logp_old, batch.advantages, mask)
    if sampler_params is None:
        loss, m = loss_fn(logp, *args, **loss_kwargs)
    else:  # pg: the gradient at the sampling policy's weights (module docstring)
        at_sampler = lambda *a, **k: torch.func.functional_call(model, sampler_params, a, k)  # noqa: E731
        logp_at_sampler = forward_logprobs(at_sampler, batch, temperature, replay, autocast)[0]
        loss, _ = loss_fn(logp_at_sampler, *args, **loss_kwargs)
        _, m = loss_fn(logp.detach(), *args, **loss_kwargs)
    m = M.clip_metrics(m, objective)  # the entry shares under TRL's clip keys
    m["losses/loss"] = loss.detach()  # this process's loss (the objective's own normaliser)
    if world.active and objective in TOKEN_NORMALISED:  # the global token normaliser (see _distributed)
        n_local = mask.sum().float()
        loss = loss * (world.size * n_local / sum_scalar(n_local, world).clamp_min(1))
    m["entropy"] = entropy
    if kl_coef > 0:
        k3 = torch.where(mask, kl_k3(logp, batch.logp_ref), 0.0)  # (B, L)
        kl = (k3.sum(-1) / mask.sum(-1).clamp_min(1)).mean()  # token mean per sequence, batch mean
        loss = loss + kl_coef * kl
        m["kl"] = M.masked_mean_var(k3.detach(), mask)[0]  # TRL logs the token mean (`_metrics`)
    balance = aux.get("load_balance_loss") if aux else None
    if load_balance_coef > 0 and balance is not None:  # MoE: Switch load balance, mean over layers (model.py)
        loss = loss + load_balance_coef * balance
        m["losses/load_balance"] = balance.detach()
    m.update(M.ratio_metrics(logp.detach(), logp_old, mask))
    m.update(M.mismatch_metrics(batch.logp_sampler, logp_old, mask))
    m.update(M.length_metrics(mask, batch.truncated))
    if batch.routing is not None:
        m["routing/churn"] = _churn(model, batch, aux, replay, autocast)

    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    params = [p for p in model.parameters() if p.requires_grad]
    if sampler_params is not None:  # move the gradient taken at the sampler onto the policy
        for name, p in model.named_parameters():
            q = sampler_params[name]
            if q.grad is not None:
                p.grad = q.grad if p.grad is None else p.grad + q.grad  # + the KL's, taken at the policy
                q.grad = None
    average_gradients(params, world)
    grads = [p.grad for p in params if p.grad is not None]
    norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g.float()) for g in grads]))
    if not bool(torch.isfinite(norm)):  # a step with it would write inf / nan into every parameter
        raise TrainingDiverged(f"the gradient norm is {float(norm)}: the run diverged (lower the learning rate"
                               + (" or the KL weight" if kl_coef > 0 else "") + ")")
    if max_grad_norm is not None:
        torch.nn.utils.clip_grad_norm_(params, max_grad_norm)
    m["grad_norm"] = norm
    optimizer.step()
    return m
