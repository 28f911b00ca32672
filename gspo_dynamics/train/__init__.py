"""The full trainer backend for causal language models: models, tasks, rollouts, cold start.

Models (`model`):
    ModelConfig(vocab_size=, d_model=, n_layers=, n_heads=, d_ff=, max_seq_len=, n_experts=0,
                top_k=2, dropout=0.0, positional="rope", tie_embeddings=True)   frozen, validated
    MODEL_PRESETS["100k" | "1m" | "10m" | "100m" | "1b"]   ModelConfig kwargs (vocab_size apart)
    preset_config(name, vocab_size, **overrides) -> ModelConfig
    model = build_model(config)      # CausalLM; model.config, model.num_parameters()
    logits, aux = model(input_ids, attention_mask=None, kv_cache=None, positions=None, routing=None)
        logits (B, T, V) float32; aux["routing"]: one (B, T, k) expert tensor per layer (MoE) or
        None; aux["load_balance_loss"]: scalar (MoE) or None; routing=aux["routing"] replays it
    config.parameter_count()         # analytic, equals model.num_parameters()
    config.flops_per_token(seq_len)  # 6 N + 12 n_layers d T (training), the numerator of MFU

Text and tasks (`tokenizer`, `tasks`):
    tok = Tokenizer()                # characters of the sequence tasks; pad_id, bos_id, eos_id
    ids, mask = tok.batch_encode(texts, left_pad=True);  tok.decode(ids, mask=None)
    task = make_task(name in TASKS, tok, **knobs)   # "pattern" | "count" | "addition"
    task.sample_prompts(n, generator); task.reward(prompts, completions) -> (n,) float32
    task.reference_completion(prompt); task.max_new_tokens

Rollouts (`rollout`):
    ro = generate(model, prompt_ids, prompt_mask, max_new_tokens, temperature=1.0, top_p=1.0,
                  eos_id=, pad_id=, generator=)   # preallocated KV cache, one token per step
    ro.sequences, ro.attention_mask, ro.completion_mask, ro.sampler_logprobs, ro.routing, ro.truncated
    logp, aux = completion_log_probs(model, ro.sequences, ro.attention_mask, ro.completion_mask,
                                     routing=None)   # teacher-forced, differentiable

Cold start (`warmup`):
    supervised_warmup(model, task, tok, steps, lr, batch_size, generator, target_success=(0.2, 0.8))

Hugging Face causal LMs (`hf`, optional extra `pip install gspo-dynamics[hf]`):
    load_hf_model(path_or_config, native=False|True|"auto") -> a model with the same call, local files
        only (never a download): transformers' forward wrapped, or (Llama/Mistral) the built-in
        CausalLM holding its weights
    model, hf_config, why_not_native = load_hf_policy(path, backend="auto"|"native"|"wrapper")
    save_hf(model, hf_config, directory)   # a folder AutoModelForCausalLM.from_pretrained loads
    The trainer takes hf:DIR as its model (`TrainConfig.hf_backend`, `--save-hf DIR`).

The training loop, metrics, checkpoints and DDP build on these (`trainer`, `config`).
"""

from gspo_dynamics.train.model import MODEL_PRESETS, CausalLM, ModelConfig, build_model, preset_config
from gspo_dynamics.train.rollout import Rollout, completion_log_probs, generate, sampler_distribution
from gspo_dynamics.train.tasks import TASKS, TextTask, make_task
from gspo_dynamics.train.tokenizer import Tokenizer
from gspo_dynamics.train.warmup import success_rate, supervised_warmup

__all__ = [
    "MODEL_PRESETS",
    "TASKS",
    "CausalLM",
    "ModelConfig",
    "Rollout",
    "TextTask",
    "Tokenizer",
    "build_model",
    "completion_log_probs",
    "generate",
    "make_task",
    "preset_config",
    "sampler_distribution",
    "success_rate",
    "supervised_warmup",
]
