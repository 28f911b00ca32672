"""The KL pull on a solved policy, read in a log (`theory.collapse`, "Outside this model too").

With a KL weight beta > 0 and a sampler refreshed every T steps, a window whose sampler solves nearly every prompt
(nearly every group zero-std) has almost no policy gradient, so the KL term pulls the policy back toward the
reference for the rest of the window while the logged reward (the sampler's) stays at its best. In the log it
shows per refresh window w of T logged steps t_w .. t_w + T - 1:

    solved    mean_t frac_zero_std_t >= PULL_FLAT_SHARE  and  mean_t R_t >= R_solved
    pulled    solved  and  KL_ref(t_w + T - 1) < KL_ref(t_w)  and  H(t_w + T - 1) > H(t_w)

(the KL to the reference falls and the token entropy rises back toward the reference's, the start's, which a
policy-gradient step only lowers). R_solved = lo + SOLVED_SHARE (hi - lo) of the reward's range [lo, hi]: [0, 1]
for a success rate, else the range given to `diagnose`; without one the windows are not read, since a window
flat because every group failed is a dead policy, not a solved one, and the KL pulling it back is no loss (on
our trainer pattern/cispo collapsed to reward 0 has such windows, its entropy rising over half of them).

Windows start where our trainer's window/position is 0 (checked against T: its largest position is T - 1), else
at the steps s with (s - 1) mod T = 0, TRL's generation steps (1-based, a generation every T optimizer steps; a run
resumed at a step that is no such one shifts them, and the reading with them).

paper_repro/kl_unwinding.py measured it on our trainer: count/cispo with beta = 0.04 under AdamW at T = 16, the
entropy rising over 83-97% of such windows and over none without the KL weight (claim kl-unwinding).
`kl_pull_windows` reads it where the run's hyperparameters allow it (`predict.kl_pull_risk`: beta > 0, Adam,
T >= 5) and the log is per step with the three series; it is a note, not a verdict: on the trainer the pull ended
in a fall from T = 6 at the base lr and from T = 12 at a third of it, and not at T = 4 (claim
kl-pull-refresh).
"""

from __future__ import annotations

import numpy as np

from gspo_dynamics.diagnose._signals import success_rate
from gspo_dynamics.predict import SOLVED_SHARE, kl_pull_risk
from gspo_dynamics.logs import RunLog
from gspo_dynamics.theory.hyperparams import Hyperparams

PULL_FLAT_SHARE = 0.95  # as paper_repro/kl_unwinding.py: at most 1 group in 20 of the window carries signal
SERIES = ("frac_zero_std", "kl_ref", "entropy")


def window_starts(log: RunLog, T: int) -> np.ndarray | None:
    """The indices of the rows that start a refresh window (module docstring); None where the log's window
    positions do not run 0 .. T - 1 (its T is not the one given)."""
    if "window/position" in log and np.isfinite(log["window/position"]).any():
        position = log["window/position"]
        if np.nanmax(position) != T - 1:
            return None
        return np.flatnonzero(position == 0)
    return np.flatnonzero((log.steps - 1) % T == 0)


def solved_level(log: RunLog, reward_range: tuple[float, float] | None) -> float | None:
    """R_solved of the module docstring; None for a reward that is no success rate and has no range given."""
    if reward_range is None and success_rate(log) is not None:
        reward_range = (0.0, 1.0)
    if reward_range is None:
        return None
    lo, hi = reward_range
    return lo + SOLVED_SHARE * (hi - lo)


def kl_pull_windows(log: RunLog, hparams: Hyperparams | None,
                    reward_range: tuple[float, float] | None = None) -> tuple[int, list[dict]] | None:
    """(the solved windows' count, the pulled ones, each {"steps", "kl", "entropy", "next_reward"}) of the module
    docstring; None where it cannot be read: no hyperparameters, or ones that rule the pull out, a log of
    averaged rows, one without the three series, a reward that is no success rate with no range given, or
    window positions that disagree with T. A window needs T consecutive steps with the three series and at least
    one reward finite. "next_reward": the next window's mean reward minus this one's (nan without a next window)."""
    if hparams is None or kl_pull_risk(hparams, None) is False or (log.logging_interval or 1) > 1:
        return None
    if not all(name in log and log.n_points(name) for name in SERIES):
        return None
    T = hparams.refresh_interval
    solved, starts = solved_level(log, reward_range), window_starts(log, T)
    if solved is None or starts is None:
        return None
    share, kl, entropy, reward = (log[name] for name in (*SERIES, "reward"))
    solved_windows, pulled = 0, []
    starts = [i for i in starts if i + T <= len(log.steps) and log.steps[i + T - 1] - log.steps[i] == T - 1]
    for i in starts:
        window = slice(i, i + T)
        if not all(np.isfinite(x[window]).all() for x in (share, kl, entropy)) or share[window].mean() < PULL_FLAT_SHARE:
            continue
        if not np.isfinite(reward[window]).any() or not np.nanmean(reward[window]) >= solved:  # unknown, or dead
            continue
        solved_windows += 1
        last = i + T - 1
        if kl[last] < kl[i] and entropy[last] > entropy[i]:
            after = reward[i + T:i + 2 * T]
            next_reward = float(np.nanmean(after) - np.nanmean(reward[window])) if np.isfinite(after).any() else float("nan")
            pulled.append({"steps": (int(log.steps[i]), int(log.steps[last])), "kl": (float(kl[i]), float(kl[last])),
                           "entropy": (float(entropy[i]), float(entropy[last])), "next_reward": next_reward})
    return solved_windows, pulled


def kl_pull_note(log: RunLog, hparams: Hyperparams | None, reward_range: tuple[float, float] | None = None) -> str | None:
    """The note for `kl_pull_windows`, naming the window whose KL fell most; None where nothing was pulled or
    nothing could be read."""
    found = kl_pull_windows(log, hparams, reward_range)
    if not found or not found[1]:
        return None
    solved_windows, pulled = found
    worst = min(pulled, key=lambda w: w["kl"][1] - w["kl"][0])
    after = ("" if not np.isfinite(worst["next_reward"])
             else f"; the next window's reward moved by {worst['next_reward']:+.3g}")
    return (f"the KL pull on a solved policy: in {len(pulled)} of the {solved_windows} refresh windows (T = {hparams.refresh_interval}) "
            f"whose groups were nearly all flat and solved (zero-std share >= {PULL_FLAT_SHARE}), the KL to the reference fell and "
            f"the entropy rose, e.g. steps {worst['steps'][0]}-{worst['steps'][1]}: KL {worst['kl'][0]:.3g} -> "
            f"{worst['kl'][1]:.3g}, entropy {worst['entropy'][0]:.3g} -> {worst['entropy'][1]:.3g}{after}. With no "
            f"policy gradient in a flat group, the KL term (beta = {hparams.kl_coef:g}) pulls the policy back toward "
            "the reference for the rest of the window, unseen in the logged reward until the next refresh (on our "
            "trainer it brought down count/cispo from T = 6 at its base lr, not at T = 4: paper_repro claims kl-unwinding, "
            "kl-pull-refresh); fewer steps "
            "per rollout bound it")
