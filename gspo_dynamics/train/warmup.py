"""The cold start: a short supervised phase so that RL starts with a success rate in (0, 1).

A random-init model almost never earns reward (every group has zero variance: GRPO and GSPO
learn nothing), and a fully trained one always does. `supervised_warmup` fits the task's
reference completions by maximum likelihood,

    L_SFT = - sum_{i,t} m_it log pi(y*_it | x_i, y*_<t) / sum_{i,t} m_it

(y* = `task.reference_completion(x)`, m the completion mask), and measures the success rate
(mean reward of completions sampled at `temperature`) every `eval_every` steps; it stops as soon
as the rate is inside `target_success` = (low, high), which it checks before the first step too.
"""

from __future__ import annotations

import math

import torch

from gspo_dynamics._checks import positive_int
from gspo_dynamics._errors import ConfigError
from gspo_dynamics.train.rollout import completion_log_probs, generate


def _device_generator(generator: torch.Generator | None, device: torch.device) -> torch.Generator | None:
    """A generator on `device` seeded from `generator` (the sampler needs one on the model's device)."""
    if generator is None or generator.device == device:
        return generator
    seed = int(torch.randint(0, 2**62, (1,), generator=generator))
    return torch.Generator(device).manual_seed(seed)


@torch.no_grad()
def success_rate(model, task, tokenizer, n: int, generator=None, temperature: float = 1.0) -> float:
    """Mean reward of one sampled completion for each of n fresh prompts."""
    device = next(model.parameters()).device
    prompts = task.sample_prompts(n, generator)
    ids, mask = tokenizer.batch_encode(prompts, device=device)
    was_training = model.training
    model.eval()
    try:
        ro = generate(
            model, ids, mask, task.max_new_tokens, temperature=temperature, eos_id=tokenizer.eos_id,
            pad_id=tokenizer.pad_id, generator=_device_generator(generator, device),
        )
    finally:
        model.train(was_training)
    completions = tokenizer.decode(ro.completion_ids, ro.completion_mask)
    return float(task.reward(prompts, completions).mean())


def reference_batch(task, tokenizer, prompts: list[str], device=None):
    """(sequences, attention_mask, completion_mask) of prompts followed by their reference
    completions, laid out like a `Rollout`: left-padded prompts, right-padded completions."""
    prompt_ids, prompt_mask = tokenizer.batch_encode(prompts, device=device)
    completions = [task.reference_completion(p) for p in prompts]
    comp_ids, comp_mask = tokenizer.batch_encode(completions, left_pad=False, add_bos=False, device=device)
    return torch.cat([prompt_ids, comp_ids], 1), torch.cat([prompt_mask, comp_mask], 1), comp_mask


def supervised_warmup(
    model,
    task,
    tokenizer,
    steps: int,
    lr: float,
    batch_size: int,
    generator: torch.Generator | None = None,
    target_success: tuple[float, float] = (0.2, 0.8),
    eval_size: int = 64,
    eval_every: int = 5,
    temperature: float = 1.0,
) -> float:
    """Fit reference completions (AdamW, `lr`) for at most `steps` steps of `batch_size` prompts,
    stopping once the success rate is in `target_success` (module docstring).

    Returns:
        the last measured success rate (inside the band unless the step budget ran out first or the
        model already succeeded more often than the band's top).
    """
    for name, value in (("steps", steps), ("batch_size", batch_size), ("eval_size", eval_size), ("eval_every", eval_every)):
        positive_int(name, value, minimum=0 if name == "steps" else 1)
    if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not (math.isfinite(lr) and lr > 0):
        raise ConfigError(f"lr must be a finite number > 0, got {lr!r}")
    low, high = target_success
    if not 0.0 <= low < high <= 1.0:
        raise ConfigError(f"target_success must be (low, high) with 0 <= low < high <= 1, got {target_success!r}")

    def inside(rate: float) -> bool:
        return low <= rate <= high

    rate = success_rate(model, task, tokenizer, eval_size, generator, temperature)
    if inside(rate) or rate > high or steps == 0:
        return rate
    device = next(model.parameters()).device
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    model.train()
    for step in range(1, steps + 1):
        sequences, attention, comp_mask = reference_batch(task, tokenizer, task.sample_prompts(batch_size, generator), device)
        logp, _ = completion_log_probs(model, sequences, attention, comp_mask)
        loss = -(logp * comp_mask).sum() / comp_mask.sum()  # L_SFT
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step % eval_every == 0 or step == steps:
            rate = success_rate(model, task, tokenizer, eval_size, generator, temperature)
            if inside(rate) or rate > high:
                break
    return rate
