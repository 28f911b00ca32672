"""What a pilot's log says beyond its reward curve (`fit.pilot_forecast`): its logged learning rate, window
positions and zero-std share against the config's (a pilot run at another lr, under a schedule or warm-up, at
another T, or at a larger G is said), and the zero-std share its success rate gives by G."""

from __future__ import annotations

import numpy as np

from gspo_dynamics.logs import RunLog

GROUP_SIZES = (2, 4, 8, 16, 32, 64)
LR_MATCH = 0.01  # a logged lr within 1% of the config's is the config's (bf16 logs, rounding)
Z_GROUP = 3.0  # standard errors below the least zero-std share the config's G allows: another G (`logged_group_size`)
MIN_GROUP_ROWS = 5  # rows with both a reward and a zero-std share before the check is made


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




def least_zero_std_share(p: np.ndarray, G: int, draws: int) -> np.ndarray:
    """The least expected share of all-equal groups of G pass/fail rewards at measured success rates p,
    each the mean of `draws` rewards:

        f_G(p) = p^G + (1 - p)^G  minus  f_G''(p) p (1 - p) / (2 draws),   f_G'' = G (G - 1) (p^(G-2) + (1 - p)^(G-2)).

    f_G is convex, so prompts of unequal difficulty around a step's mean rate only raise the share
    (Jensen: E_i f_G(p_i) >= f_G(mean_i p_i)); the second term takes off the plug-in's rise from the noise
    of the measured rate (E f(p^) = f(p) + f''(p) Var(p^) / 2 to second order, Var(p^) = p (1 - p) / draws)."""
    p = np.clip(p, 0.0, 1.0)
    curvature = G * (G - 1) * (p ** (G - 2) + (1 - p) ** (G - 2))
    return p**G + (1 - p) ** G - curvature * p * (1 - p) / (2 * draws)


def logged_group_size(log: RunLog, n: int, G: int, N: int | None) -> list[str]:
    """The pilot's logged zero-std share against the least the config's G allows at its success rates
    (`least_zero_std_share`, N G draws a step): a mean more than Z_GROUP standard errors (of the per-row
    differences) below it contradicts G, and is said; a share above it says nothing (unequal prompts raise it)."""
    if "frac_zero_std" not in log or "reward" not in log:
        return []
    rows = np.flatnonzero(np.isfinite(log["reward"]))[:n]
    p, z = log["reward"][rows], log["frac_zero_std"][rows]
    both = np.isfinite(z)
    if both.sum() < MIN_GROUP_ROWS or (p < 0).any() or (p > 1).any():
        return []
    gap = z[both] - least_zero_std_share(p[both], G, (N or 1) * G)
    se = float(np.std(gap, ddof=1)) / np.sqrt(len(gap))
    if float(np.mean(gap)) >= -Z_GROUP * se:
        return []
    least = float(np.mean(least_zero_std_share(p[both], G, (N or 1) * G)))
    return [f"the pilot's logged zero-std share, {float(np.mean(z[both])):.3g}, is below the least G = {G} gives at its "
            f"success rates, {least:.3g} ({Z_GROUP:g} standard errors or more): the pilot ran with a larger G than the "
            "config's, or its rewards are not pass/fail (partial credit makes equal groups rarer); the zero-std "
            "shares by G below assume pass/fail rewards"]
