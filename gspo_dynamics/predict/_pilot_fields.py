"""What the collapse and fall-chance rules read of a pilot forecast, as a structural type.

`PilotForecast` (`predict._pilot`) carries these fields and is built by calling the rules of
`predict._collapse_risk` and `predict._fall_chance`; the rules' grids (`collapse_grid`, `margin_grid`,
`chance_grid`, `risk_bounds`) take a finished forecast back. Typing that argument as this Protocol, not as the
class, keeps the imports one way: `_pilot` imports the rules, the rules import this module only.
"""

from __future__ import annotations

from typing import Protocol

from gspo_dynamics.fit import Implications
from gspo_dynamics.predict._config_forecast import ConfigForecast


class PilotFields(Protocol):
    """The fields of `PilotForecast` that the collapse rules and the fall chance read (its docstring and
    `theory.collapse` for what each is)."""

    @property
    def config(self) -> ConfigForecast: ...  # the config's forecast: its hyperparameters (lr, T, momentum, clip)

    @property
    def implications(self) -> Implications: ...  # of the pilot's reward fit: the stiffness per step

    @property
    def max_safe_lr(self) -> float | None: ...  # the linear model's bound at the config's T (None: withheld)

    @property
    def drift_per_step(self) -> float | None: ...  # delta, the log-ratio spread added per stale step

    @property
    def displacement(self) -> float | None: ...  # D at the config's (lr, T); None: collapse not assessed

    @property
    def entropy(self) -> float | None: ...  # H, the pilot's mean token entropy

    @property
    def entropy_rise(self) -> float | None: ...  # r, the entropy's rise over its first updates

    @property
    def signal_share(self) -> float | None: ...  # 1 - z, the run's share of groups with signal

    @property
    def survived(self) -> float | None: ...  # D_p, the pilot's own displacement where it kept its reward

    @property
    def band_edge(self) -> float | None: ...  # the clip's band edge capping D; None: uncapped

    @property
    def collapse_limit(self) -> float | None: ...  # max(S H / (1 - z), D_p), the limit in force
