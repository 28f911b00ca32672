"""The keys the trainer logs under TRL's names carry TRL 1.16's values: one update of a tiny transformers
Llama against TRL's own forward (its fused LM head) and `GRPOTrainer._compute_loss` on the same batch
(`tests/objectives/_trl_reference`), and the reward keys against TRL's lines."""

from __future__ import annotations

import contextlib
import copy

import pytest
import torch

from gspo_dynamics.objectives import get_loss
from gspo_dynamics.train import _metrics as M
from gspo_dynamics.train._distributed import World
from gspo_dynamics.train._step import Buffer, forward_logprobs, update
from gspo_dynamics.train.tokenizer import Tokenizer

pytest.importorskip("trl")
pytest.importorskip("transformers")

# Clip shares: TRL rounds them to float32 (6e-8); 1e-6 is far below one clipped entry (1/(B L) = 1/64).
CLIP_TOL = 1e-6
# entropy and KL: two float32 forwards of the same weights (TRL's chunked fused head, our full softmax)
# agree to ~1e-7 relative per token; 1e-5 leaves a wide margin and is far below a real difference
# (the per-sequence KL mean this replaced differed by 12%)
FORWARD_TOL = 1e-5
B, P, L, TAU, BETA = 8, 3, 8, 0.7, 0.05
EPS = {"grpo": (0.2, 0.28), "dapo": (0.2, 0.28), "dr_grpo": (0.2, 0.2), "cispo": (1.0, 0.28), "gspo": (0.003, 0.004)}


@pytest.fixture(scope="module")
def trl_ref(load_script):
    return load_script("tests/objectives", "_trl_reference")


@pytest.fixture(scope="module")
def batch():
    """A tiny Llama, its perturbed copies as pi_old and pi_ref, and a batch of unpadded prompts (TRL gives a
    transformers model no position ids: with left padding its positions would differ from ours) and right-padded
    completions of 1 to L tokens."""
    from gspo_dynamics.train.hf import HFCausalLM
    from gspo_dynamics.train.hf_tiny import hf_model

    torch.set_num_threads(1)
    tok = Tokenizer()
    model = hf_model(tok, max_len=P + L)
    g = torch.Generator().manual_seed(0)
    sequences = torch.randint(0, tok.vocab_size, (B, P + L), generator=g)
    lengths = torch.randint(1, L + 1, (B,), generator=g)
    completion_mask = (torch.arange(L)[None] < lengths[:, None]).long()
    sequences[:, P:] = torch.where(completion_mask.bool(), sequences[:, P:], tok.pad_id)
    buf = Buffer(sequences, torch.cat([torch.ones(B, P, dtype=torch.long), completion_mask], 1), completion_mask,
                 logp_sampler=torch.zeros(B, L), routing=None, truncated=lengths == L, rewards=torch.zeros(B),
                 advantages=torch.randn(B, generator=g))

    def perturbed(scale, seed):
        other = copy.deepcopy(model)
        with torch.no_grad():
            for p in other.parameters():
                p.add_(scale * torch.randn(p.shape, generator=torch.Generator().manual_seed(seed + p.numel())))
        return forward_logprobs(HFCausalLM(other), buf, TAU, False, contextlib.nullcontext)[0].detach()

    buf.logp_old, buf.logp_ref = perturbed(0.3, 1), perturbed(0.3, 2)
    return model, buf


@pytest.mark.parametrize("objective", list(EPS))
def test_one_update_logs_trls_clip_entropy_and_kl(trl_ref, batch, objective):
    from trl.trainer.utils import add_fused_lm_head

    from gspo_dynamics.train.hf import HFCausalLM

    model, buf = batch
    eps_low, eps_high = EPS[objective]
    ours = HFCausalLM(copy.deepcopy(model))
    kwargs = {"clip_low": eps_low, "clip_high": eps_high, **({"max_tokens": L} if objective == "dr_grpo" else {})}
    m = update(ours, buf, loss_fn=get_loss(objective), loss_kwargs=kwargs, objective=objective, kl_coef=BETA,
               temperature=TAU, replay=False, sampler_params=None, optimizer=torch.optim.SGD(ours.parameters(), lr=0.0),
               max_grad_norm=None, world=World(), autocast=contextlib.nullcontext)
    theirs = copy.deepcopy(model)
    add_fused_lm_head(theirs, temperature=TAU, outputs=("log_probs", "entropy"))
    loss_type, level = trl_ref.TRL_TWINS[objective]
    _, trl = trl_ref.trl_compute_loss(
        loss_type=loss_type, level=level, model=theirs, prompt_ids=buf.sequences[:, :P],
        completion_ids=buf.sequences[:, P:], old=buf.logp_old, ref=buf.logp_ref, beta=BETA,
        advantages=buf.advantages, completion_mask=buf.completion_mask, eps_low=eps_low, max_completion_length=L,
        eps_high=1.0 + eps_high if objective == "cispo" else eps_high)  # TRL's cispo cap is absolute
    clip_keys = [k for k in trl if k.endswith("_mean") and k.startswith("clip_ratio/") or k == "cispo_clip_ratio"]
    assert clip_keys and set(clip_keys) <= set(m)
    assert 0.0 < sum(trl[k] for k in clip_keys)  # something was clipped
    for key in clip_keys:
        assert float(m[key]) == pytest.approx(trl[key], abs=CLIP_TOL), key
    for key in ("entropy", "kl"):
        assert float(m[key]) == pytest.approx(trl[key], rel=FORWARD_TOL), key


@pytest.mark.parametrize("scale", ["group", "none", "batch"])
def test_reward_keys_are_trls(trl_ref, scale):
    rewards = torch.tensor([[1.0, 1.0, 1.0, 1.0], [0.0, 1.0, 0.5, 0.5], [0.0, 0.0, 0.0, 0.0]])
    ours = {k: float(v) for k, v in M.reward_metrics(rewards, "pattern", scale).items()}
    trl = trl_ref.trl_reward_metrics(rewards, scale, "pattern")
    assert set(trl) <= set(ours)
    for key, value in trl.items():
        assert ours[key] == pytest.approx(value, abs=1e-7), key
    assert ours["frac_reward_zero_std"] == pytest.approx(0.0 if scale == "batch" else 2 / 3)  # two flat groups
    flat = torch.zeros(2, 3)  # every group and the batch flat
    assert float(M.reward_metrics(flat, "pattern", scale)["frac_reward_zero_std"]) == 1.0
