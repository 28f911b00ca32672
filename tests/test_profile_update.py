"""benchmarks/profile_update.py on a CPU: each variant is timed and the model module's constants come back."""

import pytest
import torch


@pytest.fixture(scope="module")
def profiler(load_script):
    return load_script("benchmarks", "profile_update")


def test_variants_restore_the_packing_constants_and_the_table_names_ops(profiler):
    from gspo_dynamics.train import Tokenizer, build_model, make_task, preset_config
    from gspo_dynamics.train import model as model_module

    tok = Tokenizer()
    task = make_task("count", tok, length=8)
    model = build_model(preset_config("100k", tok.vocab_size, max_seq_len=task.max_new_tokens + 2),
                        torch.Generator().manual_seed(0))
    ours = profiler.Ours(model, task, tok, 2, 8)
    before = (model_module.PAD_BUCKETS, model_module.PAD_SAVING)
    times = profiler.variant_times(ours, 1)
    assert (model_module.PAD_BUCKETS, model_module.PAD_SAVING) == before
    assert set(times) == set(profiler.VARIANTS) and all(t["median"] > 0 and t["tokens"] > 0 for t in times.values())
    assert "aten::mm" in profiler.profile_table(ours, "cpu", 30)
