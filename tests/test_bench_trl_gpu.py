"""benchmarks/bench_trl_gpu.py off a GPU: `compare` runs both trainers on the CPU with a tiny Llama (the
same code path the GPU run takes, device apart), and the script refuses a machine without CUDA in one line."""

from pathlib import Path

import pytest
import torch

pytest.importorskip("trl")
pytest.importorskip("datasets")


@pytest.fixture(scope="module")
def bench(load_script):
    return load_script("benchmarks", "bench_trl_gpu")


def test_compare_runs_both_trainers_and_counts_their_tokens(bench):
    r = bench.compare("cpu", (32, 1, 2, 64), N=2, G=2, length=4, warmup=0, repeats=1)
    assert set(r) == {"TRL GRPOTrainer", "ours (native)"}
    for x in r.values():
        assert x["rollout"] > 0 and x["update"] > 0 and x["step"] > 0 and 0 < x["completion_tokens"] <= 2 * 2 * 5


@pytest.mark.skipif(torch.cuda.is_available(), reason="on a GPU machine the script would run the benchmark")
def test_refuses_a_machine_without_cuda_in_one_line(bench, monkeypatch):
    from test_bench_trainer import refusal

    message = refusal(Path(__file__).resolve().parents[1] / "benchmarks" / "bench_trl_gpu.py", [], monkeypatch)
    assert len(message.strip().splitlines()) == 1 and "needs a CUDA GPU" in message
