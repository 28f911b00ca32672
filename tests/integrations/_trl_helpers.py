"""Diagnoses made by hand (real `Diagnosis`, `Verdict`, `Finding` objects) for driving the TRL callback, and the
tiny GRPOTrainer run the integration tests share."""

from __future__ import annotations

import math
import warnings

from gspo_dynamics.diagnose import Diagnosis, Verdict
from gspo_dynamics.diagnose._finding import Finding
from gspo_dynamics.diagnose._verdict import evidence


def healthy() -> Diagnosis:
    return Diagnosis(primary="healthy_saturation", verdicts=[Verdict("healthy_saturation", 0.8, [], [])], fit=None,
                     implications=None, log_summary={})


def degenerate(confidence: float, last_step: int) -> Diagnosis:
    """Advantage degeneracy at `confidence`, its evidence one line that holds."""
    line = evidence("frac_zero_std late mean", 0.97, (1, last_step), threshold=0.9, side=">=")
    verdict = Verdict("advantage_degeneracy", confidence, [line], ["raise G (num_generations) to 16"])
    return Diagnosis(primary="advantage_degeneracy", verdicts=[verdict], fit=None, implications=None, log_summary={})


def non_finite(step: int) -> Diagnosis:
    """A healthy curve with a non-finite loss from `step` on (a finding that invalidates the run)."""
    finding = Finding("non_finite", "invalidates", f"loss is NaN from step {step} on",
                      [evidence("loss", math.nan, (step, step))], ["restart before it with a lower learning_rate"])
    return Diagnosis(primary="healthy_saturation", verdicts=[Verdict("healthy_saturation", 0.8, [], [])], fit=None,
                     implications=None, log_summary={}, findings=[finding])


def scripted(fail_from: int, failing):
    """A diagnose_fn: healthy while the log ends before step `fail_from`, then `failing(last step)`."""

    def diagnose_fn(run, hparams):
        last = int(run.steps[-1])
        return healthy() if last < fail_from else failing(last)

    return diagnose_fn


def grpo_trainer(output_dir, reward, max_steps: int, callbacks=None, report_to=("tensorboard",)):
    """TRL's GRPOTrainer on a tiny Llama built in code (`train.hf_tiny`, never downloaded), the pattern task's
    prompts, 2 prompts x G 4 per step, logging every step, on the CPU."""
    import torch
    from datasets import Dataset
    from transformers import PrinterCallback
    from trl import GRPOConfig, GRPOTrainer

    from gspo_dynamics.train import Tokenizer, make_task
    from gspo_dynamics.train.hf_tiny import hf_model, hf_tokenizer

    tok = Tokenizer()
    task = make_task("pattern", tok)
    model = hf_model(tok, max_len=32, sizes=(32, 1, 2, 64))
    prompts, group = 2, 4
    data = Dataset.from_dict({"prompt": task.sample_prompts(prompts * max_steps, torch.Generator().manual_seed(0))})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # transformers' own deprecations (gradient_checkpointing)
        args = GRPOConfig(output_dir=str(output_dir), per_device_train_batch_size=prompts * group,
                          num_generations=group, max_completion_length=task.max_new_tokens, max_steps=max_steps,
                          logging_steps=1, report_to=list(report_to), save_strategy="no", use_cpu=True,
                          disable_tqdm=True, log_completions=False, learning_rate=1e-3, beta=0.0, seed=0)
    trainer = GRPOTrainer(model=model, reward_funcs=[reward], args=args, train_dataset=data,
                          processing_class=hf_tokenizer(tok), callbacks=callbacks)
    trainer.remove_callback(PrinterCallback)
    return trainer
