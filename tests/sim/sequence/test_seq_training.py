"""A few GRPO/GSPO steps through the objectives registry raise the exact expected reward of a
tabular policy on an easy pattern-matching task (and a sampled reward for the tiny transformer)."""

from __future__ import annotations

import pytest
import torch

from gspo_dynamics.objectives import get_loss, group_advantages
from gspo_dynamics.sim.sequence import (
    PatternMatch,
    TabularPolicy,
    TinyTransformer,
    TransformerConfig,
    log_probs,
    sample,
)

from _seq_cases import V

CLIPS = {"grpo": (0.2, 0.28), "gspo": (3e-4, 4e-4)}  # (eps_low, eps_high): DAPO's and GSPO's papers
GROUPS, GROUP_SIZE = 4, 16  # prompts per batch, responses per prompt (G)
UPDATES_PER_ROLLOUT = 2  # refresh interval T: the second update is off-policy, ratios != 1


def _train(policy, task, loss_name: str, iterations: int, lr: float, seed: int = 0) -> list[dict]:
    """GRPO-style loop: sample groups, group advantages, T clipped updates per rollout."""
    g = torch.Generator().manual_seed(seed)
    loss_fn, (clip_low, clip_high) = get_loss(loss_name), CLIPS[loss_name]
    optimizer = torch.optim.Adam(policy.parameters(), lr=lr)
    metrics = []
    for _ in range(iterations):
        prompts = task.prompts(GROUPS, generator=g).repeat_interleave(GROUP_SIZE, dim=0)  # (B G, P)
        tokens, logp_old, mask, routing = sample(policy, prompts, task.response_len, g, eos=task.eos)
        rewards = task.reward(prompts, tokens, mask).view(GROUPS, GROUP_SIZE)
        advantages = group_advantages(rewards).view(-1)  # (B G,)
        for _ in range(UPDATES_PER_ROLLOUT):
            logp = log_probs(policy, prompts, tokens, mask, routing)
            loss, m = loss_fn(logp, logp_old, advantages, mask, clip_low=clip_low, clip_high=clip_high)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            metrics.append(m)
    return metrics


@pytest.mark.parametrize("loss_name", sorted(CLIPS))
def test_tabular_policy_learns_an_easy_pattern(loss_name):
    torch.manual_seed(0)
    task = PatternMatch(length=4, min_matches=2)
    policy = TabularPolicy(task.length, V)
    start = task.expected_reward(policy.probs()).item()  # P(Binomial(4, 1/15) >= 2) ~ 0.024
    metrics = _train(policy, task, loss_name, iterations=25, lr=0.1)
    end = task.expected_reward(policy.probs()).item()
    assert end > start + 0.5, (start, end)
    for m in metrics:
        assert 0.0 <= m["losses/clip_frac"].item() <= 1.0
    on_policy, off_policy = metrics[0::2], metrics[1::2]
    assert all(m["losses/clip_frac"].item() == 0.0 for m in on_policy)  # ratio 1 is never clipped
    if loss_name == "gspo":  # an Adam step of 0.1 leaves GSPO's 4e-4 band, not GRPO's 0.28
        assert max(m["losses/clip_frac"].item() for m in off_policy) > 0


def test_tiny_transformer_learns_an_easy_pattern():
    task = PatternMatch(length=2, min_matches=1)
    config = TransformerConfig(d_model=16, n_layers=1, n_heads=2, max_len=4)
    policy = TinyTransformer(config, generator=torch.Generator().manual_seed(0))
    g = torch.Generator().manual_seed(1)

    def success_rate() -> float:
        prompts = task.prompts(4000)
        tokens, _, mask, _ = sample(policy, prompts, task.length, g)
        return task.reward(prompts, tokens, mask).mean().item()

    start = success_rate()  # ~ 1 - (14/15)^2 = 0.13
    _train(policy, task, "grpo", iterations=20, lr=0.03)
    assert success_rate() > start + 0.4
