"""benchmarks/bench_trl_gpu.py off a GPU: `compare` runs both trainers on the CPU with a tiny Llama (the
same code path the GPU run takes, device apart), and the script refuses a machine without CUDA in one line."""

import os
import subprocess
import sys
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
def test_refuses_a_machine_without_cuda_in_one_line():
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), *sys.path]))
    done = subprocess.run([sys.executable, "benchmarks/bench_trl_gpu.py"], cwd=root, capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode != 0 and "Traceback" not in done.stderr and "needs a CUDA GPU" in done.stderr
