"""The decode step's Triton attention kernel (`_triton_attention.decode_attention`) against softmax
attention computed densely in float64 with a boolean mask: an independent route (no running max, no
chunks). On a CPU the kernel runs through Triton's interpreter (tests/conftest.py); on CUDA compiled.

Tolerances: float32 inputs, 2e-6 on a CPU (float32 sums of <= 64 terms of size <= ~10 in another
order: a few ulps of outputs of size ~1) and 2e-5 on CUDA, where `tl.exp` compiles to the approximate
ex2 instruction on an argument scaled by log2(e) in float32 (relative errors of ~1e-6 per weight, ten
times the CPU's); bf16 inputs: the kernel rounds the softmax weights to bf16 for the tensor-core product
(relative 2^-9 each: at most 2^-9 max|v| in the output) and the output once (the reference is rounded
too: 2^-8 |o| between the two), plus the float32 sums and exp (1e-5 max|v|, the CUDA float32 tolerance's
size), so |o - round(o_ref)| <= 2^-8 |o_ref| + (2^-9 + 1e-5) max|v|."""

import pytest
import torch

from gspo_dynamics.train import _triton_attention
from _train_helpers import DEVICES

F32_TOL = {"cpu": 2e-6, "cuda": 2e-5}  # module docstring
pytestmark = pytest.mark.skipif(_triton_attention.triton is None, reason="needs Triton (ships with CUDA builds of torch)")


def reference(q, keys, values, real, slot):
    """softmax over the slots n <= slot with real[b, n], query head h reading key/value head h // g."""
    g = q.shape[1] // keys.shape[1]
    S = keys.shape[2]
    keep = real & (torch.arange(S, device=real.device) <= slot)
    K = keys.double().repeat_interleave(g, 1)
    V = values.double().repeat_interleave(g, 1)
    x = torch.einsum("bhd,bhsd->bhs", q.double(), K).masked_fill(~keep[:, None], -torch.inf)
    return torch.einsum("bhs,bhsd->bhd", x.softmax(-1), V)


def case(B, H, H_kv, S, D, device, dtype=torch.float32, seed=0):
    if not _triton_attention.available(torch.device(device)):
        pytest.skip("Triton runs on a CPU only through its interpreter (TRITON_INTERPRET=1, set by tests/conftest.py without CUDA)")
    gen = torch.Generator().manual_seed(seed)
    q, keys, values = (torch.randn(*shape, generator=gen).to(device, dtype)
                       for shape in ((B, H, D), (B, H_kv, S, D), (B, H_kv, S, D)))
    real = torch.ones(B, S, dtype=torch.bool)
    real[0, :5] = False  # left padding
    if B > 1:
        real[1, 3:9:2] = False  # holes: any boolean row, not only a padded prefix
    return q, keys, values, real.to(device)


HEADS = [(4, 4, 16), (4, 2, 16), (6, 2, 24), (8, 1, 8)]  # (H, H_kv, D): g = 1, 2, 3, 8; d_h not a power of 2
CHUNKS = [(None, None), (1, None), (2, None), (3, 16)]  # (chunks, block): C = 1 (one "SM" on a CPU), 1, 2, 3
# The default run takes half the product: every head layout with every chunking, and with both flag settings, as does
# every chunking (flags_in_loads where i + j is odd); the other half is slow (interpreted on a CPU, ~0.8 s a case).
ATTENTION_CASES = [pytest.param(*heads, *chunking, flags, marks=() if flags == bool((i + j) % 2) else pytest.mark.slow)
                   for i, heads in enumerate(HEADS) for j, chunking in enumerate(CHUNKS) for flags in (True, False)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("H, H_kv, D, chunks, block, flags_in_loads", ATTENTION_CASES)
def test_equals_masked_softmax_attention(H, H_kv, D, chunks, block, flags_in_loads, device):
    """Either way of applying the real-slot flags; the padding slots' values NaN (never read, or zeroed)."""
    q, keys, values, real = case(3, H, H_kv, 70, D, device)
    padding = (~real)[:, None, :, None].expand_as(keys)
    poisoned = [x.masked_fill(padding, float("nan")) for x in (keys, values)]
    for s in (5, 40, 69):  # the first real slot of row 0, mid-cache, the last slot
        out = _triton_attention.decode_attention(q, *poisoned, real, torch.tensor([s], device=device), chunks, block,
                                                 flags_in_loads=flags_in_loads)
        assert out.shape == q.shape and out.dtype == q.dtype
        assert torch.allclose(out.double(), reference(q, keys, values, real, s), atol=F32_TOL[device], rtol=0)


@pytest.mark.parametrize("device", DEVICES)
def test_bf16_cache_rounds_once(device):
    q, keys, values, real = case(2, 4, 4, 130, 32, device, torch.bfloat16)
    out = _triton_attention.decode_attention(q, keys, values, real, torch.tensor([129], device=device), 2)
    ref = reference(q, keys, values, real, 129)
    assert out.dtype == torch.bfloat16
    tol = 2.0 ** -8 * ref.abs() + (2.0 ** -9 + 1e-5) * values.double().abs().max()  # + float32 sums and exp
    assert ((out.double() - ref.to(torch.bfloat16).double()).abs() <= tol).all()


@pytest.mark.parametrize("device", DEVICES)
def test_reads_the_slot_from_the_device_and_a_chunk_with_nothing_to_attend_adds_nothing(device, monkeypatch):
    """The slot is a device tensor read by the kernel (a CUDA graph replays the same call as it
    advances): changing it in place changes the output. Three 16-slot chunks (merged: the merge kernel
    runs), chunk 0 of row 0 all padding (20 padded slots): no NaN, and the other chunks' result."""
    q, keys, values, real = case(2, 2, 2, 40, 8, device)
    real[0, :20] = False
    merges = []
    merge = _triton_attention._merge_kernel

    class Spy:
        def __getitem__(self, grid):
            merges.append(grid)
            return merge[grid]

    monkeypatch.setattr(_triton_attention, "_merge_kernel", Spy())
    slot = torch.tensor([25], device=device)
    first = _triton_attention.decode_attention(q, keys, values, real, slot, chunks=3, block=16)
    slot.add_(10)
    second = _triton_attention.decode_attention(q, keys, values, real, slot, chunks=3, block=16)
    assert len(merges) == 2 and torch.isfinite(first).all()
    assert torch.allclose(first.double(), reference(q, keys, values, real, 25), atol=F32_TOL[device], rtol=0)
    assert torch.allclose(second.double(), reference(q, keys, values, real, 35), atol=F32_TOL[device], rtol=0)


def test_chunk_count_fills_the_processors_and_never_exceeds_the_blocks(monkeypatch):
    cpu = torch.device("cpu")  # one "SM": PROGRAMS_PER_SM programs wanted
    assert _triton_attention.chunk_count(rows=1, slots=1000, block=64, device=cpu) == _triton_attention.PROGRAMS_PER_SM
    assert _triton_attention.chunk_count(rows=3072, slots=265, block=64, device=cpu) == 1
    assert _triton_attention.chunk_count(rows=1, slots=10, block=64, device=cpu) == 1
    monkeypatch.setattr(_triton_attention, "PROGRAMS_PER_SM", 100)
    assert _triton_attention.chunk_count(rows=1, slots=10_000, block=64, device=cpu) == _triton_attention.MAX_CHUNKS


def test_refuses_what_the_kernel_cannot_read():
    """Heads that do not group, mixed dtypes, a flag row of another length, a block that is no power of 2,
    no chunk: one ValueError each, naming the values."""
    q, keys, values, real = case(1, 4, 2, 8, 8, "cpu")
    slot = torch.tensor([3])
    for args, kwargs, match in (((q[:, :3], keys, values, real, slot), {}, r"H \(3\) a multiple of H_kv \(2\)"),
                                ((q.double(), keys, values, real, slot), {}, "one dtype"),
                                ((q, keys, values, real[:, :5], slot), {}, r"real of shape \(1, 8\)"),
                                ((q, keys, values, real, slot), {"block": 24}, "power of 2 >= 16, got 24"),
                                ((q, keys, values[:, :, :4], real, slot), {}, "keys and values of one shape"),
                                ((q, keys, values, real, slot), {"chunks": 0}, r"chunks must be in \[1, 8\], got 0")):
        with pytest.raises(ValueError, match=match):
            _triton_attention.decode_attention(*args, **kwargs)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("block, chunks", [(16, 1), (32, 3), (128, 1)])
def test_launch_options_change_nothing_computed(block, chunks, device):
    """Other blocks (a chunk of 16 to 128 slots a loop step), chunk counts and launch options: the same attention."""
    q, keys, values, real = case(2, 4, 2, 70, 16, device)
    out = _triton_attention.decode_attention(q, keys, values, real, torch.tensor([50], device=device), chunks,
                                             block=block, num_warps=2, num_stages=2)
    assert torch.allclose(out.double(), reference(q, keys, values, real, 50), atol=F32_TOL[device], rtol=0)
