"""Shared pieces of the trainer tests: a tiny model, a fast config, running the CLI in a subprocess."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from gspo_dynamics.train.config import TrainConfig

# Where a device-independent guarantee is checked: CPU always, CUDA when present (the `gpu` marker;
# `pytest -m gpu` on a GPU machine runs exactly the CUDA cases).
CUDA = pytest.param("cuda", marks=(pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")))
DEVICES = ("cpu", CUDA)

# A one-layer model (~10k parameters): every step of the tests takes milliseconds.
TINY_MODEL = {"preset": "100k", "d_model": 32, "n_layers": 1, "n_heads": 2, "d_ff": 64, "max_seq_len": 32}
TINY_MOE = {**TINY_MODEL, "n_experts": 4, "top_k": 2}
# pattern with partial credit: after a short cold start the groups' rewards differ (a learning signal)
TASK = {"task": "pattern", "task_options": {"length": 3, "partial_credit": True}}


def tiny_model_file(directory: Path, moe: bool = False) -> str:
    path = Path(directory) / ("tiny_moe.json" if moe else "tiny.json")
    path.write_text(json.dumps(TINY_MOE if moe else TINY_MODEL))
    return str(path)


def tiny_config(directory: Path, *, moe: bool = False, **fields) -> TrainConfig:
    base = dict(**TASK, model=tiny_model_file(directory, moe), objective="grpo", steps=6, group_size=4,
                prompts_per_step=4, warmup_steps=20, warmup_lr=3e-2, lr=1e-2, device="cpu")
    return TrainConfig(**{**base, **fields})


def config_file(directory: Path, config: TrainConfig) -> str:
    path = Path(directory) / "run.json"
    path.write_text(json.dumps(dataclasses.asdict(config)))
    return str(path)


def cli_env() -> dict:
    """The test's interpreter path and one thread per process (the machine is shared)."""
    return dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), OMP_NUM_THREADS="1")


def run_cli(args, timeout=300, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gspo_dynamics.cli.main", *args], capture_output=True, text=True,
                          env=cli_env(), timeout=timeout, **kwargs)


def read_rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in (Path(out) / "metrics.jsonl").read_text().splitlines()]


def final_parameters(out: Path) -> dict[str, torch.Tensor]:
    return torch.load(Path(out) / "checkpoint.pt", map_location="cpu", weights_only=True)["model"]


def sharp_model(vocab_size: int, seed=0, scale=10.0, device="cpu", **overrides):
    """A tiny built-in model with sharpened weights (x scale), so that samples vary and EOS comes at
    varied steps: the rollout tests' model (built on the CPU, the same weights on every device)."""
    from gspo_dynamics.train.model import ModelConfig, build_model

    base = dict(vocab_size=vocab_size, d_model=32, n_layers=2, n_heads=4, d_ff=48, max_seq_len=40)
    model = build_model(ModelConfig(**{**base, **overrides}), torch.Generator().manual_seed(seed))
    with torch.no_grad():
        for p in model.parameters():
            if p.ndim >= 2:
                p.mul_(scale)
    return model.eval().to(device)
