"""gspo-dynamics: a reduced-order model of GRPO/GSPO training dynamics, and the tools around it.

Layers (imports flow one way, docs/ARCHITECTURE.md):  theory <- objectives, logs <- fit <- predict <- sim,
diagnose <- train, experiments <- plots, integrations, repro <- cli. `gspo_dynamics.theory` and
`gspo_dynamics.predict` are numpy/scipy/sympy only and never import torch.
"""

from gspo_dynamics._errors import ConfigError

__version__ = "0.1.0"
__all__ = ["ConfigError", "__version__"]
