"""The runs and the theory behind each figure: frozen dataclasses, computed here, drawn by
`gspo_dynamics.plots.figures` (which never computes). Above the testbeds and the fits.

    phase_diagram_data(bandit, base, momenta, lr, sim_lr, t_max)   stability phase diagram
    regime_data(bandit, regime_configs(...), steps=, seeds=)       damping regimes, theory vs sim
    slow_start_data(bandit, hp, steps=)                            the slow start from rest
    group_size_data(bandit, base, groups, curve_groups, ...)       mean curves and 1/G fluctuation
    zero_variance_data(groups, p_points, samples=)                 zero-variance groups
    ratio_data(lengths, seeds=, refresh_interval=, lr_per_token=)  GRPO vs GSPO ratios vs length
    churn_data(intervals, steps=, seeds=)                          MoE routing churn
"""

from gspo_dynamics.experiments._group_size import GroupSizeData, ZeroVarianceData, group_size_data, zero_variance_data
from gspo_dynamics.experiments._sequence import (
    OBJECTIVES,
    ChurnData,
    RatioData,
    churn_data,
    ratio_data,
    signed_advantage,
    walk_prediction,
)
from gspo_dynamics.experiments._stability import REGIMES, PhaseDiagram, phase_diagram_data, stiffness
from gspo_dynamics.experiments._trajectories import (
    RegimeCurves,
    SlowStart,
    critical_momentum,
    regime_configs,
    regime_data,
    slow_start_data,
)

__all__ = [
    "OBJECTIVES",
    "REGIMES",
    "ChurnData",
    "GroupSizeData",
    "PhaseDiagram",
    "RatioData",
    "RegimeCurves",
    "SlowStart",
    "ZeroVarianceData",
    "churn_data",
    "critical_momentum",
    "group_size_data",
    "phase_diagram_data",
    "ratio_data",
    "regime_configs",
    "regime_data",
    "signed_advantage",
    "slow_start_data",
    "stiffness",
    "walk_prediction",
    "zero_variance_data",
]
