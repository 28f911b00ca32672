"""benchmarks/bench_decode_attention.py off a GPU: what it counts and that every compared call runs
(on a CPU through Triton's interpreter, a small cache, an untimed stand-in for the CUDA-event timer)."""

import pytest
import torch

from gspo_dynamics.train import _triton_attention


@pytest.fixture(scope="module")
def bench(load_script):
    return load_script("benchmarks", "bench_decode_attention")


def test_attended_bytes_count_keys_and_values_up_to_the_slot(bench):
    """2 (keys, values) x B x H x (s + 1) slots x d_h x 2 bytes (bf16), against a loop over the slots."""
    B, H, d_h, slot = 3, 5, 16, 9
    assert bench.attended_bytes(B, H, d_h, slot) == sum(2 * B * H * d_h * 2 for _ in range(slot + 1))


@pytest.mark.skipif(not _triton_attention.available(torch.device("cpu")),
                    reason="needs Triton, on a CPU through its interpreter (tests/conftest.py)")
def test_every_compared_call_runs_and_agrees(bench, monkeypatch):
    """Each row's call runs (none fails), one row per launch option and two sdpa rows; the Triton calls
    give the masked sdpa's attention over the real slots up to the slot (bf16 tolerance: test_triton_attention.py)."""
    monkeypatch.setattr(bench, "OPTIONS", {"block": (32, 64), "num_warps": (4,), "num_stages": (2,), "chunks": (1, 2),
                                           "flags_in_loads": (True,)})
    outputs = []

    def run_once(fn, repeats):
        outputs.append(fn())
        return 1.0

    rows = list(bench.cases((2, 2, 16), 40, 1, device="cpu", timer=run_once))
    assert len(rows) == 2 + 4 and all(us == 1.0 for _, us in rows)
    masked, triton = outputs[0][:, :, 0].float(), [o.float() for o in outputs[2:]]
    assert all(torch.allclose(t, masked, atol=0.02, rtol=0) for t in triton)
