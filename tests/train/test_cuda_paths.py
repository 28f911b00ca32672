"""The trainer's CUDA-only paths: bf16 autocast through the decode-step row skipping and the
packed full pass, `torch.compile` on CUDA, and whole runs with the MoE options.

The float32 guarantees of the same paths are checked on every device by their own tests
(tests/train/test_decode.py, tests/train/test_hf_native.py, parametrised over `DEVICES`); here
the question is what bf16 and the compiler change. Every test is `gpu`-marked and skipped without
CUDA (`pytest -m gpu` on a GPU machine runs them)."""

import math

import pytest
import torch

from gspo_dynamics.train import model as model_module
from gspo_dynamics.train.model import ModelConfig, build_model
from gspo_dynamics.train.trainer import train
from _train_helpers import tiny_config

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]

CONFIG = ModelConfig(vocab_size=15, d_model=64, n_layers=2, n_heads=4, d_ff=128, max_seq_len=32, n_kv_heads=2,
                     mlp="swiglu", norm="rmsnorm")
# bf16 keeps 8 bits of mantissa: a product of O(1) entries is off by ~2^-8 = 4e-3 relative, and two
# passes that sum in different orders (fewer rows, shorter rows) differ by a few of those on logits
# of size ~1-3 after two layers. 5e-2 absolute is ~10 such roundings; float32 agrees to 1e-5.
BF16_TOL = 5e-2


def autocast():
    return torch.autocast("cuda", dtype=torch.bfloat16)


def right_padded(B=16, T=20, seed=4):
    """Ids and mask of B rows, two of full length and the rest ending at 3..7: mostly padding."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, CONFIG.vocab_size, (B, T), generator=g)
    ends = torch.randint(3, 8, (B,), generator=g)
    ends[:2] = T
    mask = (torch.arange(T) < ends[:, None]).long()
    return ids.cuda(), mask.cuda()


def test_bf16_packed_pass_matches_the_untrimmed_pass(monkeypatch):
    """Under bf16 autocast the packed pass and the single untrimmed pass give the same logits on real
    positions (BF16_TOL) and gradients of the same direction (cosine > 0.999, each parameter)."""
    ids, mask = right_padded()
    assert model_module.CausalLM._packing(mask.bool()) is not None

    def run(saving):
        monkeypatch.setattr(model_module, "PAD_SAVING", saving)
        model = build_model(CONFIG, torch.Generator().manual_seed(2)).cuda()
        with autocast():
            logits, _ = model(ids, mask)
            ((torch.log_softmax(logits.float(), -1)[..., 0] * mask).sum() / mask.sum()).backward()
        return logits.detach().float(), {n: p.grad.float() for n, p in model.named_parameters()}

    trimmed, grads = run(0.25)
    full, full_grads = run(1.0)
    real = mask.bool()
    assert torch.allclose(trimmed[real], full[real], atol=BF16_TOL, rtol=0)
    for name, grad in grads.items():
        cosine = torch.nn.functional.cosine_similarity(grad.flatten(), full_grads[name].flatten(), dim=0)
        assert cosine > 0.999 or full_grads[name].abs().max() < 1e-6, (name, float(cosine))


@pytest.mark.parametrize("n_kv_heads", [4, 2])  # multi-head, grouped-query (keys and values expanded)
def test_masked_passes_stay_off_cudnn_attention(n_kv_heads):
    """A padded batch's packed and unpacked passes (forward and backward, bf16) run their masked attention on the
    memory-efficient kernel, never cuDNN's (its per-shape plan building cost ~5 ms of CPU a call) or the math one
    (which builds every (rows, H, L, L) score): `_attention.masked_sdpa`."""
    from dataclasses import replace

    from torch.profiler import ProfilerActivity, profile

    ids, mask = right_padded()
    model = build_model(replace(CONFIG, n_kv_heads=n_kv_heads), torch.Generator().manual_seed(2)).cuda()
    for saving in (0.25, 1.0):  # packed, then every position with the padding mask
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(model_module, "PAD_SAVING", saving)
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof, autocast():
                logits, _ = model(ids, mask)
                logits.float().sum().backward()
                torch.cuda.synchronize()
        names = {e.key for e in prof.key_averages()}
        assert not [n for n in names if ("cudnn" in n.lower() and "attention" in n.lower()) or "attention_math" in n]
        assert [n for n in names if "efficient_attention" in n], sorted(names)


def test_bf16_decode_steps_skip_padding_rows():
    """A one-token cached step under bf16 computes only the real rows (the padding rows' logits are
    exactly 0) and the real rows match the teacher-forced pass within BF16_TOL; the cache is bf16."""
    model = build_model(CONFIG, torch.Generator().manual_seed(1)).eval().cuda()
    ids, mask = right_padded(B=8, T=10)
    mask[:, 8] = 0  # a step where every row is padding
    with torch.no_grad(), autocast():
        full, _ = model(ids, mask)
        cache = model.new_kv_cache(8, 10)
        steps = [model(ids[:, :5], mask[:, :5], kv_cache=cache)[0]]
        steps += [model(ids[:, t : t + 1], mask[:, t : t + 1], kv_cache=cache)[0] for t in range(5, 10)]
    assert cache.keys.dtype == torch.bfloat16
    cached, real = torch.cat(steps, dim=1).float(), mask.bool()
    assert torch.allclose(cached[real], full.float()[real], atol=BF16_TOL, rtol=0)
    assert (cached[:, 5:][~real[:, 5:]] == 0).all()


def test_compiled_training_on_cuda_matches_eager(tmp_path):
    """torch.compile on CUDA (inductor, Triton kernels), float32, SGD: the same rollouts (rewards) and
    parameters within 1e-5 (fused kernels sum in another order; SGD is linear in the gradient)."""
    fields = dict(steps=2, optimizer="sgd", momentum=0.9, lr=0.1, device="cuda", precision="fp32")
    eager = train(tiny_config(tmp_path, **fields), tmp_path / "eager")
    compiled = train(tiny_config(tmp_path, compile=True, **fields), tmp_path / "compiled")
    assert [r["reward"] for r in compiled.rows] == [r["reward"] for r in eager.rows]
    for name, value in eager.model.state_dict().items():
        assert torch.allclose(compiled.model.state_dict()[name], value, atol=1e-5), name


@pytest.mark.parametrize("fields", [dict(compile=True), dict(moe=True, routing_replay="experts", objective="gspo"),
                                    dict(moe=True, objective="gspo", steps_per_generation=2, load_balance_coef=0.01)])
def test_bf16_runs_train_and_log_the_mismatch(tmp_path, fields):
    """bf16 autocast runs (compiled; MoE with and without routing replay): every logged number is
    finite, the sampler/trainer mismatch is measured, and the parameters stay float32 and move."""
    run = train(tiny_config(tmp_path, device="cuda", steps=4, **fields), tmp_path / "out")
    for row in run.rows:
        bad = [k for k, v in row.items() if isinstance(v, float) and not math.isfinite(v)]
        assert not bad, bad
    assert run.rows[-1]["mismatch/logp_abs_mean"] >= 0.0
    assert all(p.dtype == torch.float32 for p in run.model.parameters())
