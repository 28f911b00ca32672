"""What a pilot's log says beyond its reward curve (`fit.pilot_forecast`): its logged learning rate and window
positions against the config's (a pilot run at another lr, under a schedule or warm-up, or at another T is said),
and the zero-std share its success rate gives by G."""

from __future__ import annotations

import numpy as np

from gspo_dynamics.logs import RunLog

GROUP_SIZES = (2, 4, 8, 16, 32, 64)
LR_MATCH = 0.01  # a logged lr within 1% of the config's is the config's (bf16 logs, rounding)


def _logged(log: RunLog, name: str, n: int) -> np.ndarray:
    """The finite values of series `name` over the pilot's first n rows (none where the log lacks it)."""
    values = log[name][:n] if name in log else np.array([])
    return values[np.isfinite(values)]


def logged_lr(log: RunLog, n: int, lr: float) -> list[str]:
    """What the pilot's logged learning rate (TRL's learning_rate, verl's actor/lr) says against the config's:
    every bound here scales from the config's lr, so a pilot run at another, or under a schedule, is said."""
    logged = _logged(log, "learning_rate", n)
    if not len(logged):
        return []
    lo, hi = float(logged.min()), float(logged.max())
    out = []
    warming = hi < lr * (1 - LR_MATCH) and float(logged[-1]) >= hi * (1 - LR_MATCH)  # still climbing at its end
    if warming:
        out.append(f"the pilot is still in its warm-up: its learning rate reached {hi:.3g} of the config's {lr:.3g}; "
                   "every bound here scales from the config's lr, so the curve read is that of a smaller lr")
    elif abs(hi - lr) > LR_MATCH * lr:
        out.append(f"the pilot logged a learning rate up to {hi:.3g}, the config says {lr:.3g}: every bound here scales "
                   "from the config's lr as if the pilot ran at it; give the pilot's own config (or --set its lr)")
    if hi - lo > LR_MATCH * hi and not warming:
        out.append(f"the pilot's learning rate follows a schedule ({float(logged[0]):.3g} at its first point, {hi:.3g} at "
                   f"most, {float(logged[-1]):.3g} at its last): the stiffness is read per unit of the config's lr, "
                   "averaged over that schedule")
    return out


def logged_refresh(log: RunLog, n: int, T: int) -> list[str]:
    """The pilot's own T where its log says it (our trainer's window/position runs 0 .. T - 1) against the
    config's: the fit reads the stiffness as if the pilot ran at the config's T, so another one is said."""
    position = _logged(log, "window/position", n)
    if not len(position):
        return []
    own = int(position.max()) + 1  # a pilot shorter than its T shows fewer positions: only a larger T, or a
    if own == T or (own < T and len(position) < T):  # smaller one over at least T steps, is another T
        return []
    return [f"the pilot ran at T = {own} (its window positions), the config asks about T = {T}: the "
            "stiffness is read as if the pilot ran at the config's T; give the pilot's own config for its own reading"]


def zero_std_shares(log: RunLog, reward: np.ndarray, n: int, reward_range, measured: list[str]):
    """(mean success rate, {G: mean_t p_t^G + (1 - p_t)^G}, the logged zero-std share's mean) for a reward in [0, 1];
    (None, {}, None) for another range."""
    if reward_range != (0.0, 1.0):
        return None, {}, None
    shares = {g: float(np.mean(reward**g + (1.0 - reward) ** g)) for g in GROUP_SIZES}
    logged = None
    if "frac_zero_std" in log:
        _, z = log.valid("frac_zero_std")
        if len(z):
            logged = float(np.mean(z[:n]))
            measured.append("the logged zero-std share")
    measured.append(f"the success rate, mean {reward.mean():.3g}")
    return float(reward.mean()), shares, logged


