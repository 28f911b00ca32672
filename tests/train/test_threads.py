"""A narrow model trains on one CPU thread unless the user set OMP_NUM_THREADS; the caller's count comes back."""

from __future__ import annotations

import pytest
import torch

from gspo_dynamics.train._threads import NARROW_WIDTH, run_threads
from gspo_dynamics.train.model import MODEL_PRESETS

CPU = torch.device("cpu")


def test_narrow_presets_take_one_thread_and_wider_ones_torch_s_own(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert run_threads(MODEL_PRESETS["100k"]["d_model"], CPU) == 1
    assert run_threads(MODEL_PRESETS["1m"]["d_model"], CPU) is None
    assert run_threads(MODEL_PRESETS["10m"]["d_model"], CPU) is None
    assert run_threads(NARROW_WIDTH + 1, CPU) is None
    assert run_threads(None, CPU) is None  # a model of unknown width: torch's count
    assert run_threads(64, torch.device("cuda")) is None


def test_the_users_omp_num_threads_wins(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert run_threads(64, CPU) is None


def test_a_run_gives_the_caller_its_thread_count_back(tmp_path, monkeypatch):
    from gspo_dynamics.train.config import TrainConfig
    from gspo_dynamics.train.trainer import train

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    seen = []
    before = torch.get_num_threads()
    config = TrainConfig(task="pattern", model="100k", objective="gspo", steps=1, prompts_per_step=2, group_size=2)
    train(config, tmp_path / "run", progress=lambda done, total: seen.append(torch.get_num_threads()))
    assert seen == [1] and torch.get_num_threads() == before
