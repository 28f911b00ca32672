"""benchmarks/bench_packing.py on a CPU: its rows, and that both compared passes run on the same rows."""

import pytest
import torch

from gspo_dynamics._errors import ConfigError


@pytest.fixture(scope="module")
def bench(load_script):
    return load_script("benchmarks", "bench_packing")


def test_rows_hold_a_first_token_and_a_completion_of_an_eighth_to_all_of_the_rest(bench):
    ids, mask = bench.padded_rows(200, 64, seed=3)
    real = mask.sum(1)
    assert mask[:, 0].all() and real.min() >= 1 + 64 // 8 and real.max() <= 64
    assert torch.equal(mask, (torch.arange(64) < real[:, None]).long())  # right padding only
    assert (ids[mask == 0] == 0).all()


def test_a_row_times_both_passes_and_restores_the_threshold(bench):
    from gspo_dynamics.train import model as model_module

    saving = model_module.PAD_SAVING
    row = bench.measure("100k", 16, 32, "cpu", repeats=1, warmup=0)
    assert model_module.PAD_SAVING == saving
    assert row["real"] == int(bench.padded_rows(16, 32)[1].sum()) and 0.25 <= row["padding"] < 1
    assert row["packed"] > 0 and row["unpacked"] > 0 and row["speedup"] == pytest.approx(row["packed"] / row["unpacked"])


def test_rows_without_enough_padding_are_refused(bench, monkeypatch):
    from gspo_dynamics.train import model as model_module

    monkeypatch.setattr(model_module, "PAD_SAVING", 0.99)
    with pytest.raises(ConfigError, match="nothing to compare"):
        bench.measure("100k", 8, 16, "cpu", repeats=1, warmup=0)
