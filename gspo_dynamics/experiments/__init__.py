"""The runs and the theory behind each figure: frozen dataclasses, computed here, drawn by
`gspo_dynamics.plots.figures` (which never computes). Above the testbeds and the fits.

    phase_diagram_data(bandit, base, momenta, lr, sim_lr, t_max)   stability phase diagram
    regime_data(bandit, regime_configs(...), steps=, seeds=)       damping regimes, theory vs sim
    slow_start_data(bandit, hp, steps=)                            the slow start from rest
    group_size_data(bandit, base, groups, curve_groups, ...)       mean curves and 1/G fluctuation
    zero_variance_data(groups, p_points, samples=)                 zero-variance groups
    ratio_data(lengths, seeds=, refresh_interval=, lr_per_token=)  GRPO vs GSPO ratios vs length
    churn_data(intervals, steps=, seeds=)                          MoE routing churn

And the machinery of the claims in paper_repro/ (each script prints predicted vs measured):

    measured_cells(curves, lrs, Ts), score(fc, measured, forecasts, lrs, Ts), misses, passed
        a pilot forecast scored against a measured (lr, T) grid (`_forecast_scores`: a seed is unstable
        when a SEED_BLOCK-step mean falls past DRAWDOWN_MARGIN, or past COLLAPSE_SHARE of a running best
        >= DRAWDOWN_MARGIN / 2, below its running best; the forecast final reward is
        mean_s clip(R(1 + (PILOT_T - 1) / 2 + rho T floor(s / T)), 0, 1) over the last PLATEAU_STEPS steps)
    final_reward_reach, window_progress, pilot_plateau_gap, exact_forecast_reach, own_pilot_reach
        readings of such grids, each a sentence (`_forecast_readings`)
    regime_reach(results, roles)
        the regime targets against the measurement's own noise: a beta-binomial prior of the cells'
        unstable-seed counts, P(k) = C(n, k) B(alpha + k, beta + n - k) / B(alpha, beta), and the forecaster
        that knows each cell's rate q (`_regime_reach`)
    rolling_origin(cells), brier_score(p, k, n), fall_chance_baselines, reliability
        the chance one run falls judged on held-out rounds: per-run Brier score
        B = sum [k (1 - P)^2 + (n - k) P^2] / sum n against the earlier rounds' rate and a lookup (`_fall_chance_score`)
    task_prior_rows, task_prior_reach, prior_plateau_error, shrunk_rows, shrunk_plateau_error, shrunk_reach
        the final reward a pilot cannot see, from the task's other grids: the mean final reward of their stable
        cells at the cell's T (leave one out, or earlier rounds only), and that prior shrunk toward the cells of the
        same loss, then optimizer and lr, m_k = (sum F_k + kappa m_{k-1}) / (|F_k| + kappa) (`_task_prior`)
    tabular_ratio_run, first_step_drift, predicted_drifts, signed_advantage,
    lognormal_ratio_prediction, walk_ratio_prediction
        GRPO's token and GSPO's sequence log-ratios of a tabular policy trained by SGD, measured and
        predicted from the hyperparameters: sigma^2(j) = j^2 mean_t d_t^2 + j mean_t n_t^2 (lognormal) or
        the clip-aware walk from the advantage's signed moments given each token (`_ratio_tabular`)
"""

from gspo_dynamics.experiments._fall_chance_score import (
    brier_score,
    fall_chance_baselines,
    reliability,
    rolling_origin,
)
from gspo_dynamics.experiments._forecast_readings import (
    exact_forecast_reach,
    final_reward_reach,
    own_pilot_reach,
    pilot_plateau_gap,
    window_progress,
)
from gspo_dynamics.experiments._forecast_scores import (
    ACCURACY_MIN,
    FORECASTERS,
    PILOT_T,
    PLATEAU_STEPS,
    PLATEAU_TOL,
    SAFE_BUT_UNSTABLE_MAX,
    STEPS,
    flat_forecast,
    forecast_final_reward,
    initial_rewards,
    measured_cells,
    misses,
    passed,
    score,
    seed_falls,
)
from gspo_dynamics.experiments._group_size import GroupSizeData, ZeroVarianceData, group_size_data, zero_variance_data
from gspo_dynamics.experiments._ratio_tabular import (
    first_step_drift,
    lognormal_ratio_prediction,
    predicted_drifts,
    signed_advantage,
    tabular_ratio_run,
    walk_ratio_prediction,
)
from gspo_dynamics.experiments._regime_reach import regime_reach
from gspo_dynamics.experiments._sequence import (
    OBJECTIVES,
    ChurnData,
    RatioData,
    churn_data,
    ratio_data,
    walk_prediction,
)
from gspo_dynamics.experiments._stability import REGIMES, PhaseDiagram, phase_diagram_data, stiffness
from gspo_dynamics.experiments._task_prior import (
    prior_plateau_error,
    shrunk_plateau_error,
    shrunk_reach,
    shrunk_rows,
    task_prior_reach,
    task_prior_rows,
)
from gspo_dynamics.experiments._trajectories import (
    RegimeCurves,
    SlowStart,
    critical_momentum,
    regime_configs,
    regime_data,
    slow_start_data,
)

__all__ = [
    "ACCURACY_MIN",
    "ChurnData",
    "FORECASTERS",
    "GroupSizeData",
    "OBJECTIVES",
    "PILOT_T",
    "PLATEAU_STEPS",
    "PLATEAU_TOL",
    "PhaseDiagram",
    "REGIMES",
    "RatioData",
    "RegimeCurves",
    "SAFE_BUT_UNSTABLE_MAX",
    "STEPS",
    "SlowStart",
    "ZeroVarianceData",
    "brier_score",
    "churn_data",
    "critical_momentum",
    "exact_forecast_reach",
    "fall_chance_baselines",
    "final_reward_reach",
    "first_step_drift",
    "flat_forecast",
    "forecast_final_reward",
    "group_size_data",
    "initial_rewards",
    "lognormal_ratio_prediction",
    "measured_cells",
    "misses",
    "own_pilot_reach",
    "passed",
    "phase_diagram_data",
    "pilot_plateau_gap",
    "predicted_drifts",
    "prior_plateau_error",
    "ratio_data",
    "regime_configs",
    "regime_data",
    "regime_reach",
    "reliability",
    "rolling_origin",
    "score",
    "seed_falls",
    "shrunk_plateau_error",
    "shrunk_reach",
    "shrunk_rows",
    "signed_advantage",
    "slow_start_data",
    "stiffness",
    "tabular_ratio_run",
    "task_prior_reach",
    "task_prior_rows",
    "walk_prediction",
    "walk_ratio_prediction",
    "window_progress",
    "zero_variance_data",
]
