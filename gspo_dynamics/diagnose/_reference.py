"""The reference is not the starting policy: a finding (`_findings.findings` runs it).

A GRPO run starts its policy as its reference, so the KL to the reference is ~0 at the first steps (it grows from
there as the policy learns). A KL above KL_START_HIGH nats averaged over the logged rows of the first START_STEPS
steps (at most MIN_WINDOW of them; none in a log that begins later, a resumed run's) says the two differ from the
start (a LoRA adapter loaded as the starting policy over a base model that is the reference, a
reference from before SFT): with beta > 0 the KL term pulls the policy back toward a model it never was, from the
first step. A config change, so a warning among the first lines, not a note (audit s43u D4: a KL of 1 nat from step 1
beside a flat reward was said only under --explain).
"""

from __future__ import annotations

import numpy as np

from gspo_dynamics.diagnose._finding import Finding
from gspo_dynamics.diagnose._trend_stats import MIN_WINDOW
from gspo_dynamics.diagnose._verdict import evidence

KL_START_HIGH = 0.1  # nats; the policy starts as the reference, so its KL is ~0 at the first steps
START_STEPS = 10  # the run's first steps: a KL read later may be the training's own (0.1 by step 60 at a large lr)


def reference_not_start(log, hparams=None) -> Finding | None:
    """A warning where the KL to the reference averages more than KL_START_HIGH over the logged rows of the first
    START_STEPS steps (module docstring)."""
    if "kl_ref" not in log or log.n_points("kl_ref") < MIN_WINDOW:
        return None
    steps, kl = log.valid("kl_ref")
    first = np.flatnonzero(steps <= START_STEPS)[:MIN_WINDOW]  # a log that begins later (a resumed run): no start
    if not first.size or not (start := float(np.mean(kl[first]))) > KL_START_HIGH:
        return None
    span = (steps[first[0]], steps[first[-1]])
    summary = (f"the KL to the reference is {start:.2g} nats at the first logged steps ({span[0]}-{span[1]}), where a "
               "run that starts as its reference has ~0: the reference is not the starting policy, and with a KL "
               "weight it pulls the policy back toward it from the first step")
    advice = ["make the reference the starting checkpoint: TRL builds it from the model you pass (with peft, the base "
              "without the adapter: merge a starting adapter into the model first); verl from "
              "actor_rollout_ref.model.path; or drop the pull (TRL beta: 0.0; verl actor_rollout_ref.actor.use_kl_loss="
              "False) if the reference is meant"]
    ev = [evidence("KL to the reference over the first rows", start, span, threshold=KL_START_HIGH, side=">")]
    return Finding("reference_not_start", "warning", summary, ev, advice)
