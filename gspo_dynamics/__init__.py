"""gspo-dynamics: a reduced-order model of GRPO/GSPO training dynamics, and the tools around it.

Layers (imports flow one way):  theory <- objectives <- sim <- predict/simulate <- cli.
`gspo_dynamics.theory` is numpy/scipy/sympy only and never imports torch.
"""

from gspo_dynamics._errors import ConfigError

__version__ = "0.1.0"
__all__ = ["ConfigError", "__version__"]
