"""--model hf:DIR in the trainer: Llama-family configs train on the native built-in model (and agree
with transformers' forward), checkpoints rebuild the same model and refuse a changed one, the
trained policy goes back to transformers' format, other architectures train through the wrapper.

Skipped cleanly without transformers (the optional extra), except the settings checks."""

import dataclasses
import json
import math
import os

import pytest
import torch
from _train_helpers import read_rows, tiny_config

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.cli.main import main
from gspo_dynamics.train import _checkpoint as C
from gspo_dynamics.train.config import TrainConfig
from gspo_dynamics.train.tokenizer import Tokenizer
from gspo_dynamics.train.trainer import train

TOK = Tokenizer()
# The native model and transformers compute the same float32 math in another summation order
# (fused W_qkv and gate-up matmuls, SDPA vs transformers' attention): logits agree to ~5e-7
# (tests/train/test_hf_native.py). The runs below sample the same tokens from those logits, so the
# metrics (means of log-probs, ratios, entropies, a gradient norm) differ by that rounding only:
# measured max |diff| ~4e-7 over every float metric of the first step.
METRIC_TOL = 1e-5
LOGIT_TOL = 1e-5
# Parameters after a 5-step AdamW warm-up (warmup_lr 3e-2) and one SGD step: AdamW's m / sqrt(v)
# normalises every entry, so an entry whose gradient is tiny carries its relative rounding into a
# full-size step; there is no a-priori bound below warmup_lr. Measured max |diff| 3.6e-6 (logits
# after the step: 1.2e-6); 1e-4 is ~30x that and 300x below one warm-up step.
PARAM_TOL = 1e-4


def llama_dir(directory, **overrides):
    transformers = pytest.importorskip("transformers")
    fields = dict(vocab_size=TOK.vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    path = directory / "llama"
    transformers.LlamaConfig(**{**fields, **overrides}).save_pretrained(path)  # a config alone: a fresh model of it
    return path


def hf_run(directory, **fields):
    torch.set_num_threads(1)
    base = dict(model=f"hf:{llama_dir(directory)}", steps=1, warmup_steps=5, optimizer="sgd")
    return tiny_config(directory, **{**base, **fields})


def batch():
    return TOK.batch_encode(["12+34=", "5+6=", "777", ""])


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """One step of the same hf:DIR config on the native path (auto) and through the wrapper."""
    directory = tmp_path_factory.mktemp("hf")
    config = hf_run(directory)
    return {b: train(dataclasses.replace(config, hf_backend=b), directory / b) for b in ("auto", "wrapper")}


def test_llama_trains_natively_and_matches_the_wrapper(pair):
    from gspo_dynamics.train.hf import HFCausalLM, hf_state_dict
    from gspo_dynamics.train.model import CausalLM

    native, wrapped = pair["auto"], pair["wrapper"]
    assert native.backend == "native" and type(native.model) is CausalLM
    assert wrapped.backend == "wrapper" and isinstance(wrapped.model, HFCausalLM)
    state = json.loads((native.out_dir / "trainer_state.json").read_text())
    assert state["model"] == {"backend": "native", "parameters": native.model.num_parameters()}
    assert json.loads((wrapped.out_dir / "trainer_state.json").read_text())["model"]["backend"] == "wrapper"

    a, b = native.rows[0], wrapped.rows[0]
    assert a.keys() == b.keys() and a["grad_norm"] > 0.1  # a real learning signal in the step
    for key in ("reward", "completions/mean_length", "num_tokens"):
        assert a[key] == b[key], key  # the same sampled tokens
    for key, value in a.items():
        if isinstance(value, float) and math.isfinite(value):
            assert abs(value - b[key]) <= METRIC_TOL, key

    ids, mask = batch()
    with torch.no_grad():
        la, _ = native.model.eval()(ids, mask)
        lb, _ = wrapped.model.eval()(ids, mask)
    assert torch.allclose(la[mask.bool()], lb[mask.bool()], atol=LOGIT_TOL, rtol=0)
    theirs = wrapped.model.hf_model.state_dict()
    for name, value in hf_state_dict(native.model, wrapped.model.config.hf).items():
        assert torch.allclose(value, theirs[name], atol=PARAM_TOL, rtol=0), name


def _snapshot(out):
    return {name: (out / name).read_bytes() for name in sorted(os.listdir(out))}


def test_resume_rebuilds_the_native_model_and_refuses_a_changed_one(tmp_path):
    config = hf_run(tmp_path, steps=2)
    whole = train(config, tmp_path / "whole")
    train(dataclasses.replace(config, steps=1), tmp_path / "split")
    saved = C.load_checkpoint(tmp_path / "split")["model_config"]
    assert saved["backend"] == "native" and saved["hf.model_type"] == "llama" and saved["native.n_kv_heads"] == 2
    assert "hf._name_or_path" not in saved  # the directory is the run's `model` setting, checked as such
    resumed = train(config, tmp_path / "split", resume=True)
    assert resumed.backend == "native"
    for name, value in whole.model.state_dict().items():
        assert torch.equal(value, resumed.model.state_dict()[name]), name
    assert [r["losses/loss"] for r in read_rows(tmp_path / "split")] == [r["losses/loss"] for r in whole.rows]

    out, more = tmp_path / "split", dataclasses.replace(config, steps=3)
    before = _snapshot(out)
    llama_dir(tmp_path / "other")
    changes = [(dataclasses.replace(more, model=f"hf:{tmp_path / 'other' / 'llama'}"), "model was"),
               (dataclasses.replace(more, hf_backend="wrapper"), "hf_backend was 'auto', now 'wrapper'")]
    for changed, needle in changes:
        with pytest.raises(ConfigError, match=needle) as info:
            train(changed, out, resume=True)
        assert "\n" not in str(info.value) and _snapshot(out) == before
    llama_dir(tmp_path, rms_norm_eps=1e-5)  # the run's own config.json, edited
    with pytest.raises(ConfigError, match=r"model config differs.*hf.rms_norm_eps was 1e-06, now 1e-05") as info:
        train(more, out, resume=True)
    assert "\n" not in str(info.value) and _snapshot(out) == before


def test_save_hf_writes_what_transformers_loads(tmp_path):
    transformers = pytest.importorskip("transformers")
    from gspo_dynamics.train.hf import hf_state_dict

    config = hf_run(tmp_path, steps=2, steps_per_generation=2)  # T = 2: the final model is the last checkpoint's
    result = train(config, tmp_path / "out", save_hf=tmp_path / "export")
    loaded = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "export", local_files_only=True).eval()
    ours = hf_state_dict(result.model, loaded.config)
    for name, value in loaded.state_dict().items():
        assert torch.equal(value, ours[name]), name  # a copy: bit for bit
    final = C.load_checkpoint(tmp_path / "out")["model"]
    assert all(torch.equal(final[k], v) for k, v in result.model.state_dict().items())
    ids, mask = batch()
    with torch.no_grad():
        theirs = loaded(input_ids=ids, attention_mask=mask, position_ids=(mask.cumsum(-1) - 1).clamp(min=0)).logits
        mine, _ = result.model.eval()(ids, mask)
    assert torch.allclose(theirs[mask.bool()], mine[mask.bool()], atol=LOGIT_TOL, rtol=0)

    for model, target, needle in [(config.model, tmp_path / "export", "not empty"),
                                  (str(tmp_path / "tiny.json"), tmp_path / "new", "is not hf:DIR")]:
        with pytest.raises(ConfigError, match=needle):
            train(dataclasses.replace(config, model=model), tmp_path / "refused", save_hf=target)
        assert not (tmp_path / "refused").exists() and not (tmp_path / "new").exists()


def test_gpt2_trains_through_the_wrapper_at_the_cli(tmp_path, capsys):
    transformers = pytest.importorskip("transformers")
    gpt2 = tmp_path / "gpt2"
    transformers.GPT2Config(vocab_size=TOK.vocab_size, n_embd=32, n_layer=1, n_head=2, n_positions=64,
                           bos_token_id=TOK.bos_id, eos_token_id=TOK.eos_id).save_pretrained(gpt2)
    config = tiny_config(tmp_path, model=f"hf:{gpt2}", steps=1, warmup_steps=2)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(config.to_dict()))
    out = tmp_path / "out"
    assert main(["train", "--config", str(path), "--out", str(out), "--no-progress", "--save-hf", str(tmp_path / "hf")]) == 0
    assert "on the wrapper path" in capsys.readouterr().out
    model = json.loads((out / "trainer_state.json").read_text())["model"]
    assert model["backend"] == "wrapper" and "model_type 'gpt2'" in model["why_not_native"]
    final = C.load_checkpoint(out)["model"]
    loaded = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "hf", local_files_only=True)
    for name, value in loaded.state_dict().items():
        assert torch.equal(value, final[f"hf_model.{name}"]), name

    capsys.readouterr()  # transformers' loading progress bar
    for args, needle in [(["--config", str(path), "--hf-backend", "native"], "no native built-in model"),
                         (["--config", str(path), "--hf-backend", "fast"], "--hf-backend fast: one of auto, native, wrapper"),
                         (["--config", str(path), "--save-hf", str(tmp_path / "hf")], "not empty")]:
        assert main(["train", "--out", str(tmp_path / "bad"), "--no-progress", *args]) == 2
        err = capsys.readouterr().err
        assert err.startswith("gspo-dynamics: error:") and err.count("\n") == 1 and needle in err, err
        assert not (tmp_path / "bad").exists()


def test_hf_backend_setting_needs_an_hf_model(tmp_path):
    with pytest.raises(ConfigError, match="applies to hf:DIR models only"):
        TrainConfig(task="pattern", model="100k", objective="grpo", hf_backend="native")
    with pytest.raises(ConfigError, match="hf_backend must be one of auto, native, wrapper"):
        TrainConfig(task="pattern", model="hf:x", objective="grpo", hf_backend="fast")


def test_a_checkpoint_from_before_a_setting_existed_resumes_at_its_default(tmp_path):
    """A checkpoint whose config lacks a later setting (here hf_backend) ran at that setting's default."""
    torch.set_num_threads(1)
    config = tiny_config(tmp_path, steps=1, warmup_steps=2)
    train(config, tmp_path / "out")
    state = C.load_checkpoint(tmp_path / "out")
    del state["config"]["hf_backend"]
    C.save_checkpoint(tmp_path / "out", state)
    assert len(train(dataclasses.replace(config, steps=2), tmp_path / "out", resume=True).rows) == 2
    with pytest.raises(ConfigError, match="lr was"):
        train(dataclasses.replace(config, steps=3, lr=0.5), tmp_path / "out", resume=True)
