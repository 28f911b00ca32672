"""Rows on which no group carried a learning signal: every completion of the step scored alike, so GRPO's advantages
(r - mean) / std are all 0 and the step changed nothing. Each logged reading says so on its own row:

    reward_std                  <= NO_SIGNAL_TOL        (the spread of the batch's, or the groups', rewards is 0)
    frac_zero_std               >= 1 - NO_SIGNAL_TOL    (every group zero-std)
    reward_max - reward_min     <= NO_SIGNAL_TOL        (the batch's lowest reward equals its highest)
    reward at 0 or 1            within NO_SIGNAL_TOL    (a success rate, every row in [0, 1]: a row mean at a bound
                                                         is every completion scoring it)

`diagnose` reads the share of such rows over a run (`_context.no_signal`), `predict` over a pilot
(`_pilot_validity`).
"""

from __future__ import annotations

import numpy as np

from gspo_dynamics.logs._runlog import RunLog

NO_SIGNAL_TOL = 1e-9  # a reward_std (or grad norm) this small is zero


def flat_rows(log: RunLog, success_bounds: bool = True) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{reading: (the rows that log it (n,), the rows on which it says no group carried signal (n,))} for each reading
    of the module docstring the log holds ("reward_min" for the min-max pair, "reward" for a success rate's bounds,
    unless `success_bounds` is False); flat rows are read rows."""
    out = {}
    if "reward_std" in log:
        std = log["reward_std"]
        read = np.isfinite(std)
        out["reward_std"] = read, read & (np.abs(np.where(read, std, np.inf)) <= NO_SIGNAL_TOL)
    if "frac_zero_std" in log:
        frac = log["frac_zero_std"]
        read = np.isfinite(frac)
        out["frac_zero_std"] = read, read & (np.where(read, frac, -np.inf) >= 1.0 - NO_SIGNAL_TOL)
    if "reward_min" in log and "reward_max" in log:
        low, high = log["reward_min"], log["reward_max"]
        read = np.isfinite(low) & np.isfinite(high)
        out["reward_min"] = read, read & (np.abs(np.where(read, high - low, np.inf)) <= NO_SIGNAL_TOL)
    if success_bounds and "reward" in log:
        reward = log["reward"]
        read = np.isfinite(reward)
        value = np.where(read, reward, 0.5)
        if read.any() and value.min() >= -NO_SIGNAL_TOL and value.max() <= 1.0 + NO_SIGNAL_TOL:
            out["reward"] = read, read & ((value <= NO_SIGNAL_TOL) | (value >= 1.0 - NO_SIGNAL_TOL))
    return out
