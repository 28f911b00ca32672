"""Tiny Hugging Face stand-ins built in code (never downloaded), for running TRL on our tasks.

    tokenizer = hf_tokenizer(Tokenizer())           # our character vocabulary, transformers fast tokenizer
    model = hf_model(Tokenizer(), max_len=16)       # a tiny LlamaForCausalLM, seed-0 weights

Used by `benchmarks/bench_trainer.py` (TRL's GRPOTrainer against ours on the same model) and
`paper_repro/trl_family.py` (labelled logs written by TRL). Needs transformers and tokenizers.
"""

from __future__ import annotations

import torch

from gspo_dynamics.train.tokenizer import Tokenizer

TINY = (64, 2, 4, 256)  # (hidden, layers, heads, MLP width): ~0.1M parameters, steps in tens of ms on a CPU


def hf_tokenizer(tok: Tokenizer):
    """Our character vocabulary as a transformers fast tokenizer (BOS prepended, left padding)."""
    from tokenizers import Regex, models, pre_tokenizers, processors
    from tokenizers import Tokenizer as RawTokenizer
    from transformers import PreTrainedTokenizerFast

    raw = RawTokenizer(models.WordLevel({s: i for i, s in enumerate(tok.symbols)}, unk_token=tok.symbols[tok.pad_id]))
    raw.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    bos = tok.symbols[tok.bos_id]
    raw.post_processor = processors.TemplateProcessing(single=f"{bos} $A", special_tokens=[(bos, tok.bos_id)])
    return PreTrainedTokenizerFast(tokenizer_object=raw, bos_token=bos, eos_token=tok.symbols[tok.eos_id],
                                   pad_token=tok.symbols[tok.pad_id], padding_side="left")


def hf_model(tok: Tokenizer, max_len: int, sizes: tuple[int, int, int, int] = TINY, seed: int = 0):
    """A Hugging Face Llama built from its config (never downloaded): sizes = (hidden, layers, heads, MLP
    width), weights drawn under torch.manual_seed(seed)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    hidden, layers, heads, ff = sizes
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=tok.vocab_size, hidden_size=hidden, intermediate_size=ff, num_hidden_layers=layers,
                         num_attention_heads=heads, num_key_value_heads=heads, max_position_embeddings=max_len,
                         bos_token_id=tok.bos_id, eos_token_id=tok.eos_id, pad_token_id=tok.pad_id, tie_word_embeddings=True)
    return LlamaForCausalLM(config)
