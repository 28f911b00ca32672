"""Policy losses and group advantages as pure tensor functions, behind one registry.

    get_loss(name)(logp, logp_old, advantages, mask, *, clip_low, clip_high, weights=None)
        -> (loss, metrics)

Registered names (`LOSSES`), contract and metrics in `_losses`:
    pg          REINFORCE at the sampling policy, no ratio (the "none" off-policy correction)
    grpo        token ratios, PPO clip, token mean per sequence then batch mean (Shao et al. 2024)
    dr_grpo     GRPO's token terms over a constant budget L_max (`max_tokens`) (Liu et al. 2025)
    dapo        token terms summed over the batch / total tokens, clip-higher (Yu et al. 2025)
    cispo       sg(clipped token IS weight) * A * log pi, over total tokens (MiniMax 2025)
    gspo        sequence ratio s_i = exp(mean_t log w_it), whole sequences clipped (Zheng et al. 2025)
    gspo_token  s_it = sg[s_i] pi(y_t) / sg[pi(y_t)], per-token advantages (Zheng et al. 2025)

Advantages: `group_advantages(rewards, scale="group"|"none"|"batch", std_estimator=...)`;
`filter_informative_groups(rewards)` is DAPO's dynamic sampling. KL to a reference: `kl_k3`
(sampled tokens), `kl_exact_categorical`. Each objective's defaults (clip range, advantage
scale, stale gradient) for any config that names one: `ObjectiveDefaults`, `OBJECTIVE_CLIPS`; the
objectives whose clipped ratio is one per sequence: `SEQUENCE_LEVEL`. Every trainer and
simulator uses these; no loss is written twice.
"""

from gspo_dynamics.objectives._advantages import (
    ADVANTAGE_SCALES,
    STD_ESTIMATORS,
    filter_informative_groups,
    group_advantages,
)
from gspo_dynamics.objectives._defaults import OBJECTIVE_CLIPS, SEQUENCE_LEVEL, STALE_GRADIENT, ObjectiveDefaults
from gspo_dynamics.objectives._kl import kl_exact_categorical, kl_k3
from gspo_dynamics.objectives._losses import LOSSES, LossFn, get_loss
from gspo_dynamics.objectives._token_losses import cispo_loss, dapo_loss, dr_grpo_loss, grpo_loss, pg_loss
from gspo_dynamics.objectives._sequence_losses import gspo_loss, gspo_token_loss  # isort: skip (registry order)

__all__ = [
    "ADVANTAGE_SCALES",
    "LOSSES",
    "STD_ESTIMATORS",
    "LossFn",
    "OBJECTIVE_CLIPS",
    "ObjectiveDefaults",
    "SEQUENCE_LEVEL",
    "STALE_GRADIENT",
    "cispo_loss",
    "dapo_loss",
    "dr_grpo_loss",
    "filter_informative_groups",
    "get_loss",
    "group_advantages",
    "grpo_loss",
    "gspo_loss",
    "gspo_token_loss",
    "kl_exact_categorical",
    "kl_k3",
    "pg_loss",
]
