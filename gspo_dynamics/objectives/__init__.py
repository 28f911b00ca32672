"""Policy losses and group advantages as pure tensor functions, behind one registry.

    get_loss(name)(logp, logp_old, advantages, mask, *, clip_low, clip_high, weights=None)
        -> (loss, metrics)

Registered names: see `LOSSES` ("pg", "grpo", "gspo"). Every trainer and simulator uses these;
no loss is written twice.
"""

from gspo_dynamics.objectives._advantages import ADVANTAGE_SCALES, group_advantages
from gspo_dynamics.objectives._kl import kl_exact_categorical, kl_k3
from gspo_dynamics.objectives._losses import LOSSES, LossFn, get_loss, grpo_loss, gspo_loss, pg_loss

__all__ = [
    "ADVANTAGE_SCALES",
    "LOSSES",
    "LossFn",
    "get_loss",
    "group_advantages",
    "grpo_loss",
    "gspo_loss",
    "kl_exact_categorical",
    "kl_k3",
    "pg_loss",
]
