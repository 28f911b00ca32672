"""benchmarks/bench_moe.py on a CPU: its routings, and that a row times both paths on the same assignments."""

import pytest
import torch


@pytest.fixture(scope="module")
def bench(load_script):
    return load_script("benchmarks", "bench_moe")


def test_the_ramp_moves_the_tokens_to_the_last_experts(bench):
    for bias in (0.0, 4.0):
        sorted_e, counts, token = bench.assignments(1000, 8, bias)
        assert int(counts.sum()) == 1000 * bench.TOP_K and torch.equal(sorted_e, sorted_e.sort().values)
        assert torch.equal(torch.bincount(token, minlength=1000), torch.full((1000,), bench.TOP_K))  # k per token
    assert bench.assignments(1000, 8, 4.0)[1][-2:].sum() > 2 * bench.assignments(1000, 8, 0.0)[1][-2:].sum()


def test_a_row_times_both_paths(bench):
    row = bench.measure(4, 64, 1.5, "cpu", repeats=1, warmup=0)
    assert row["batched"] > 0 and row["grouped"] > 0 and row["speedup"] == pytest.approx(row["batched"] / row["grouped"])
    assert 0.25 <= row["busiest"] <= 0.5 + 1e-9 and row["padded"] >= 1  # the buffer never computes fewer rows
