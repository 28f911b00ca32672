"""TRL 1.16's own metric code on a given batch: the oracle for the keys our trainer logs under TRL's names.

`trl_compute_loss` runs the real `GRPOTrainer._compute_loss` (trl/trainer/grpo_trainer.py, TRL 1.16
lines 3020-3290) on an instance built without `__init__` (no dataset or Accelerator): only the
attributes that method reads are set, to a one-process, no-accumulation, no-vLLM setup. The
policy's log-probs and entropies come from TRL's own forward of a transformers model (its fused
LM head, `add_fused_lm_head`), or, for batches without a model, are given (the forward
`_get_per_token_logps_and_entropies` replaced). The rest, ratios, clip conditions, loss
aggregation and every `_metrics` entry, is TRL's code as installed. On one process accelerate's
`reduce` and `gather` return their input, as the stub here does.

`trl_reward_metrics` copies TRL's reward statistics, inline in `_generate_and_score_completions`
(trl/trainer/grpo_trainer.py, TRL 1.16 lines 2761-2830: `std_rewards`, `is_std_zero`, the
`reward`, `reward_std`, `frac_reward_zero_std` and `rewards/<fn>/*` entries), with TRL's `nanstd`.
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from types import SimpleNamespace

import pytest
import torch

trl = pytest.importorskip("trl")
from trl import GRPOTrainer  # noqa: E402
from trl.trainer.utils import nanstd  # noqa: E402

# (loss_type, importance_sampling_level) of the TRL run that computes what a registry entry computes;
# gspo_token and pg have no TRL loss (gspo_token is checked through grpo on its ratio, see the tests)
TRL_TWINS = {"grpo": ("grpo", "token"), "dr_grpo": ("dr_grpo", "token"), "dapo": ("dapo", "token"),
             "cispo": ("cispo", "token"), "gspo": ("grpo", "sequence")}


class _OneProcess:
    """accelerate.Accelerator's collectives on one process: the identity."""

    num_processes = 1
    is_main_process = True  # read by TRL's profiling decorator

    def reduce(self, tensor, reduction="sum"):
        return tensor

    def gather(self, tensor):
        return tensor

    gather_for_metrics = gather

    def autocast(self):
        return contextlib.nullcontext()


def trl_compute_loss(*, loss_type: str, level: str, old, advantages, completion_mask, eps_low: float, eps_high: float,
                     logps=None, entropies=None, model=None, prompt_ids=None, completion_ids=None, ref=None,
                     beta: float = 0.0, max_completion_length=None):
    """(loss, {key: value}) of TRL's `_compute_loss` on (B, L) pi_old (and pi_ref) log-probs, (B,) advantages
    and a (B, L) completion mask; the policy's log-probs and entropies given (`logps`, `entropies`: the forward
    stubbed), or computed by TRL's own forward of `model` (a transformers causal LM patched with TRL's
    `add_fused_lm_head`) on `prompt_ids` (B, P), unpadded, and `completion_ids` (B, L). TRL's cispo caps the
    ratio at eps_high itself."""
    B, L = completion_mask.shape
    trainer = object.__new__(GRPOTrainer)
    trainer.__dict__.update(
        aux_loss_enabled=False, top_entropy_quantile=1.0, off_policy_mask_threshold=None,
        importance_sampling_level=level, beta=beta, loss_type=loss_type, epsilon_low=eps_low, epsilon_high=eps_high,
        args=SimpleNamespace(delta=None, use_bias_correction_kl=False, steps_per_generation=1),
        use_vllm=False, model=SimpleNamespace(training=True), current_gradient_accumulation_steps=1,
        max_completion_length=max_completion_length, _entropy_bonus_enabled=False, accelerator=_OneProcess(),
        _metrics={"train": defaultdict(list), "eval": defaultdict(list)},
    )
    if model is None:
        entropies = torch.zeros_like(logps) if entropies is None else entropies
        trainer._get_per_token_logps_and_entropies = lambda *args, **kwargs: (logps, entropies, None)
        prompt_ids, completion_ids = torch.zeros(B, 1, dtype=torch.long), torch.zeros(B, L, dtype=torch.long)
    inputs = {"prompt_ids": prompt_ids, "prompt_mask": torch.ones_like(prompt_ids), "completion_ids": completion_ids,
              "completion_mask": completion_mask.long(), "advantages": advantages, "old_per_token_logps": old,
              "num_items_in_batch": completion_mask.sum()}
    if ref is not None:
        inputs["ref_per_token_logps"] = ref
    loss = trainer._compute_loss(model, inputs)
    return loss, {key: values[-1] for key, values in trainer._metrics["train"].items()}


def trl_reward_metrics(rewards: torch.Tensor, scale: str, name: str) -> dict[str, float]:
    """TRL's reward keys of (N, G) rewards, one reward function of weight 1, advantage scale `scale`."""
    num_generations = rewards.shape[1]
    rewards = rewards.reshape(-1)
    if scale in ["group", "none"]:
        std_rewards = nanstd(rewards.view(-1, num_generations), dim=1)
        std_rewards = std_rewards.repeat_interleave(num_generations, dim=0)
    else:  # "batch"
        std_rewards = nanstd(rewards).expand_as(rewards)
    is_std_zero = torch.isclose(std_rewards, torch.zeros_like(std_rewards))
    return {f"rewards/{name}/mean": torch.nanmean(rewards).item(), f"rewards/{name}/std": nanstd(rewards).item(),
            "reward": torch.nanmean(rewards).item(), "reward_std": nanstd(rewards).item(),
            "frac_reward_zero_std": is_std_zero.float().mean().item()}
