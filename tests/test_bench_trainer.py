"""benchmarks/bench_trainer.py: the pieces the comparison with TRL rests on (no timing asserted)."""

from __future__ import annotations


import pytest
import torch



@pytest.fixture(scope="module")
def bench(load_script):
    return load_script("benchmarks", "bench_trainer")


def test_hf_tokenizer_speaks_our_ids(bench):
    """TRL tokenizes prompts with the HF tokenizer and we score with ours: the ids must agree."""
    pytest.importorskip("transformers")
    pytest.importorskip("tokenizers")
    from gspo_dynamics.train import Tokenizer

    tok = Tokenizer()
    hf = bench.hf_tokenizer(tok)
    for text in ("", "12+34=", "0101$"):
        assert hf(text)["input_ids"] == tok.encode(text, add_bos=True)
    assert (hf.bos_token_id, hf.eos_token_id, hf.pad_token_id) == (tok.bos_id, tok.eos_id, tok.pad_id)


def test_our_step_counts_its_tokens(bench):
    """One step of ours on a tiny built-in model: token counts equal the rollout's masks, phases add up."""
    from gspo_dynamics.train import Tokenizer, build_model, make_task
    from gspo_dynamics.train.model import ModelConfig

    tok = Tokenizer()
    task = make_task("count", tok, length=4)
    model = build_model(ModelConfig(vocab_size=tok.vocab_size, d_model=16, n_layers=1, n_heads=2, d_ff=32, max_seq_len=8),
                        torch.Generator().manual_seed(0))
    ours = bench.Ours(model, task, tok, N=2, G=3)
    before = [p.detach().clone() for p in model.parameters()]
    t = ours.step()
    assert 2 * 3 <= t["completion_tokens"] <= 2 * 3 * task.max_new_tokens
    assert t["tokens"] == t["completion_tokens"] + 2 * 3  # + one BOS per row
    assert t["step"] == pytest.approx(t["rollout"] + t["score"] + t["update"], rel=1e-6)
    assert bench.rates([t], 0)["rollout"] == pytest.approx(t["completion_tokens"] / t["rollout"])
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))  # the update stepped


def test_paired_ratios_are_the_median_and_quartiles_of_per_step_ratios(bench):
    def row(r, u, s):
        return {"rollout": r, "update": u, "step": s, "completion_tokens": 10.0, "tokens": 20.0}

    ours = [row(1, 1, 2), row(2, 1, 2), row(4, 1, 2)]
    trl = [row(2, 2, 2), row(2, 2, 2), row(2, 2, 2)]
    r = bench.paired_ratios(ours, trl)
    # rates are tokens / time: rollout ratios 2, 1, 0.5 -> median 1, quartiles 0.75 and 1.5 (linear interpolation)
    assert r == {"rollout": pytest.approx((1.0, 0.75, 1.5)), "update": pytest.approx((2.0, 2.0, 2.0)),
                 "step": pytest.approx((1.0, 1.0, 1.0))}


def test_decode_bound_sums_weights_and_cache_reads_step_by_step(bench):
    """The closed sum of `decode_bound` against a loop over decode steps that adds the bytes read at
    each one (float64 sums of integers: 1e-12 relative), and the two limits: no cache (bound = B BW /
    weight bytes) and a cache that dwarfs the weights (bound falls as 1/length)."""
    from gspo_dynamics.train.model import ModelConfig

    config = ModelConfig(vocab_size=20, d_model=64, n_layers=3, n_heads=4, d_ff=128, max_seq_len=512, n_kv_heads=2)
    B, P0, n, bw = 16, 5, 40, 1e12
    weights = 2 * config.parameter_count()
    total = weights  # the prefill's pass over the weights
    for t in range(1, n + 1):
        total += weights + 2 * config.n_layers * config.kv_heads * config.head_dim * 2 * B * (P0 + t - 1)
    assert bench.decode_bound(config, B, P0, n, bw) == pytest.approx(B * n * bw / total, rel=1e-12)
    assert bench.decode_bound(config, B, P0, n, bw, cache_bytes=0) == pytest.approx(B * n * bw / ((n + 1) * weights), rel=1e-12)
    long, longer = (bench.decode_bound(config, 10**4, P0, m, bw) for m in (400, 800))
    assert 1.8 < long / longer < 2.0  # cache-bound: twice the length, about half the rate


def test_kept_rows_are_the_preset_and_batch_pairs_not_measured(bench, tmp_path, monkeypatch):
    """A GPU command re-measures some (preset, B, update) variants; the table keeps the other rows as they were."""
    import _results

    rows = ["| 100m | 99 | 256 | eager | 1 | 1% |", "| 100m | 99 | 256 | compiled | 1 | 1% |", "| 100m | 99 | 512 | eager | 2 | 2% |",
            "| 1b | 9 | 64 | eager | 3 | 3% |"]
    results = tmp_path / "RESULTS.md"
    results.write_text("\n".join([bench.SECTION_GPU, "", "| preset | parameters | B | update |", "|---|---|---|---|", *rows,
                                  "", "## Next section", "| 100m | 99 | 256 | other |"]) + "\n")
    monkeypatch.setattr(_results, "RESULTS", results)
    assert bench.kept_rows(bench.SECTION_GPU, [("100m", 256, "eager")]) == rows[1:]
    assert bench.kept_rows(bench.SECTION_GPU, [("100m", 256, "eager"), ("100m", 256, "compiled"), ("100m", 512, "eager"),
                                               ("1b", 64, "eager")]) == []


def refusal(path, args, monkeypatch) -> str:
    """What the script at `path`, run as __main__ with `args` (in this process, `runpy`), exits with: its SystemExit's
    message (Python prints it to stderr as one line and exits 1, with no traceback); anything else raised fails."""
    import runpy
    import sys

    monkeypatch.setattr(sys, "argv", [str(path), *args])
    with pytest.raises(SystemExit) as exit:
        runpy.run_path(str(path), run_name="__main__")
    assert isinstance(exit.value.code, str), exit.value.code  # a message, so a non-zero exit
    return exit.value.code


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without a GPU")
def test_the_gpu_benchmarks_without_a_gpu_are_one_line(bench, monkeypatch):
    """The GPU benchmarks refuse a machine without CUDA with one line and a non-zero exit, no traceback (run as
    scripts in this process: a fresh interpreter each, ~3 s of CPU apiece, would check nothing more)."""
    from pathlib import Path

    folder = Path(__file__).resolve().parents[1] / "benchmarks"
    for script, args in (("bench_graph_decode.py", []), ("bench_decode_attention.py", []),
                         ("bench_trainer.py", ["--device", "cuda", "--no-write"])):
        message = refusal(folder / script, args, monkeypatch)
        assert len(message.strip().splitlines()) == 1 and "needs a CUDA GPU" in message
