"""A second labelled generator family for `diagnose`: GRPO on a contextual bandit with Adam.

    entries = generate_contextual_corpus(tmp_dir, seeds=5)   # 8 modes x 5 runs
    entries[0].path, entries[0].mode, entries[0].label["variant"], entries[0].label["facts"]

Different dynamics from the two-armed bandit corpus (`gspo_dynamics.sim.corpus`): many prompts
(8-256) with 3-8 answers each, graded rewards, per-prompt and shared low-rank logits, B prompts
per step, a stale sampling policy with clipped token ratios, Adam (heavy-ball SGD for a minority),
a KL to the reference in the loss or in the reward, a proxy reward against a true one. Each mode
is produced by its physical cause (`_recipes`, one docstring per recipe says why), with
randomised size, hyperparameters, length, logging interval, format (TRL trainer_state.json, its
W&B CSV export, verl JSONL) and optional series, so the family is not uniform.
"""

from gspo_dynamics.sim.corpus_contextual._engine import TRUTH, run_contextual
from gspo_dynamics.sim.corpus_contextual._generate import generate_contextual_corpus
from gspo_dynamics.sim.corpus_contextual._optim import adam_step, sgd_step
from gspo_dynamics.sim.corpus_contextual._recipes import MODES, RECIPES, Recipe
from gspo_dynamics.sim.corpus_contextual._task import UNREACHABLE, ContextualTask, RunConfig

__all__ = ["MODES", "RECIPES", "TRUTH", "UNREACHABLE", "ContextualTask", "Recipe", "RunConfig", "adam_step",
           "generate_contextual_corpus", "run_contextual", "sgd_step"]
