"""A second labelled generator family for `diagnose`: GRPO on a contextual bandit with Adam.

Different dynamics from the two-armed bandit corpus (`gspo_dynamics.sim.corpus`): many prompts
with 3-8 answers each, graded rewards, per-prompt and shared low-rank logits, B prompts per step,
a stale sampling policy with clipped token ratios, Adam (heavy-ball SGD for a minority), a KL to
the reference in the loss or in the reward, a proxy reward against a true one.
"""

from gspo_dynamics.sim.corpus_contextual._engine import TRUTH, run_contextual
from gspo_dynamics.sim.corpus_contextual._optim import adam_step, sgd_step
from gspo_dynamics.sim.corpus_contextual._task import UNREACHABLE, ContextualTask, RunConfig

__all__ = ["TRUTH", "UNREACHABLE", "ContextualTask", "RunConfig", "adam_step", "run_contextual", "sgd_step"]
