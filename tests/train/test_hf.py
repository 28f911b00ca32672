"""Hugging Face causal LMs behind the built-in call: local files only, same rollout guarantees.

Skipped cleanly without transformers (the optional extra), except the check of that error."""

import sys

import pytest
import torch

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.train.hf import load_hf_model
from gspo_dynamics.train.rollout import completion_log_probs, generate
from gspo_dynamics.train.tokenizer import Tokenizer

TOK = Tokenizer()
LOGP_TOL = 1e-4  # float32, cached vs full pass: summation order only

LLAMA = dict(model_type="llama", vocab_size=TOK.vocab_size, hidden_size=32, intermediate_size=64,
             num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
GPT2 = dict(model_type="gpt2", vocab_size=TOK.vocab_size, n_embd=32, n_layer=2, n_head=4, n_positions=64)


def test_missing_transformers_is_a_clear_config_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)  # import fails as if not installed
    with pytest.raises(ConfigError, match=r"gspo-dynamics\[hf\]"):
        load_hf_model(LLAMA)


def sharp(model, seed):
    torch.manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            if p.ndim >= 2:
                p.normal_(0, 0.3)
    return model.eval()


@pytest.mark.parametrize("spec", [LLAMA, GPT2], ids=["llama", "gpt2"])
def test_hf_rollouts_match_teacher_forcing_and_uncached_greedy(spec):
    pytest.importorskip("transformers")
    model = sharp(load_hf_model(spec), 0)
    ids, mask = TOK.batch_encode(["12+34=", "5+6=", ""])
    ro = generate(model, ids, mask, 8, eos_id=TOK.eos_id, pad_id=TOK.pad_id, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        logp, aux = completion_log_probs(model, ro.sequences, ro.attention_mask, ro.completion_mask)
    assert torch.allclose(logp, ro.sampler_logprobs, atol=LOGP_TOL, rtol=0)
    assert aux == {"routing": None, "load_balance_loss": None}

    greedy = generate(model, ids, mask, 8, temperature=0.0, eos_id=TOK.eos_id, pad_id=TOK.pad_id)
    seq, att, alive = ids, mask, torch.ones(3, dtype=torch.bool)
    for _ in range(8):
        with torch.no_grad():
            logits, _ = model(seq, attention_mask=att)
        token = torch.where(alive, logits[:, -1].argmax(-1), TOK.pad_id)
        seq, att = torch.cat([seq, token[:, None]], 1), torch.cat([att, alive.long()[:, None]], 1)
        alive &= token != TOK.eos_id
    assert torch.equal(greedy.sequences, seq)


def test_local_directories_only(tmp_path):
    transformers = pytest.importorskip("transformers")
    model = sharp(load_hf_model(transformers.AutoConfig.for_model(**LLAMA)), 2)
    model.hf_model.save_pretrained(tmp_path / "saved")
    reloaded = load_hf_model(tmp_path / "saved").eval()
    ids, mask = TOK.batch_encode(["1+2=", "3="])
    with torch.no_grad():
        assert torch.equal(model(ids, mask)[0], reloaded(ids, mask)[0])
    (tmp_path / "config_only").mkdir()
    model.hf_model.config.to_json_file(tmp_path / "config_only" / "config.json")
    fresh = load_hf_model(str(tmp_path / "config_only"))  # a config alone: a fresh model of it
    assert fresh.num_parameters() == model.num_parameters()
    assert fresh.config.vocab_size == TOK.vocab_size and fresh.config.max_seq_len == 64
    with pytest.raises(ConfigError, match="never downloaded"):
        load_hf_model("gpt2")  # a hub name is not fetched
    with pytest.raises(ConfigError, match="config.json"):
        load_hf_model(tmp_path)
    with pytest.raises(ConfigError, match="model_type"):
        load_hf_model({"vocab_size": 15})


def test_routing_replay_is_refused_for_hf_models():
    pytest.importorskip("transformers")
    model = load_hf_model(GPT2)
    with pytest.raises(ValueError, match="routing"):
        model(torch.zeros(1, 2, dtype=torch.long), routing=(torch.zeros(1, 2, 2, dtype=torch.long),))
