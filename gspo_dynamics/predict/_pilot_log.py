"""Reading a pilot's log (`load_pilot`, `pilot_reward_range`), and what it says beyond its reward curve (`predict.pilot_forecast`): its
logged learning rate, window positions, zero-std share and KL against the config's (a pilot run at another lr, under
a schedule or warm-up, at another T, at a larger G, or with a KL term the config's beta = 0 leaves out is said), and
the zero-std share its success rate gives by G."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy.special import erfc, stdtrit

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.fit import TrajectoryFit, fit_trajectory
from gspo_dynamics.logs import RunLog, read_log, trl_release_bound
from gspo_dynamics.theory.zero_std import fit_difficulty_log, zero_std_share_beta

GROUP_SIZES = (2, 4, 8, 16, 32, 64)
MIN_PILOT_POINTS = 8  # a closed-form fit of fewer reward points says nothing about the stiffness
LR_MATCH = 0.01  # a logged lr within 1% of the config's is the config's (bf16 logs, rounding)
LR_MISMATCH = 2.0  # a logged peak lr this many times the config's, either way: likely another run's config (said first)
LENGTH_SLACK = 0.05  # a log running past the config's run length by more than this share (a resumed step or two: no)
# `logged_group_size`: a mean gap below the t quantile of a one-sided Phi(-Z_GROUP) test and below -MIN_GAP says another
# G. The gaps are skewed, so the level is not Phi(-3) = 0.13%: correct pilots of 20-60 rows at N <= 4 are said in
# 0.3-1.6% of 20,000 simulated seeds (a review's measurement, 2026-11-26)
Z_GROUP = 3.0
MIN_GAP = 0.01  # a share below the least by less than this is not said (a log's rounding, a share of few groups)
MIN_GROUP_ROWS = 5  # rows with both a reward and a zero-std share before the check is made


def _logged(log: RunLog, name: str, n: int) -> np.ndarray:
    """The finite values of series `name` over the pilot's first n rows (none where the log lacks it)."""
    values = log[name][:n] if name in log else np.array([])
    return values[np.isfinite(values)]


def pilot_rows(log: RunLog, n: int) -> np.ndarray:
    """The log's row indices of the pilot's first n reward points."""
    return np.flatnonzero(np.isfinite(log["reward"]))[:n]


def _reward_rows(log: RunLog, name: str, n: int) -> np.ndarray:
    """The finite values of series `name` on the rows of the pilot's first n reward points."""
    if name not in log:
        return np.array([])
    values = log[name][pilot_rows(log, n)]
    return values[np.isfinite(values)]


def lr_mismatch(log: RunLog, n: int, lr: float, key: str, what: str = "pilot") -> str | None:
    """A pilot that logged a learning rate LR_MISMATCH times the config's or more, either way, at its peak (and not
    in a warm-up still climbing to it): the config is likely not the pilot's, and every bound scales from the
    config's lr; said first (`PilotForecast.brief_lines`). None where it agrees, or logs none."""
    logged = _logged(log, "learning_rate", n)
    if not len(logged) or not np.any(logged):
        return None
    lo, hi = float(logged.min()), float(logged.max())
    climbing = hi - lo > LR_MATCH * hi and float(logged[-1]) >= hi * (1 - LR_MATCH)  # a warm-up not done by its end
    if max(hi / lr, lr / hi) < LR_MISMATCH or (hi < lr and climbing):
        return None
    return (f"the {what}'s {key} reaches {hi:.3g}, {max(hi / lr, lr / hi):.3g}x {'above' if hi > lr else 'below'} the "
            f"config's {lr:.3g}: is this the {what}'s config? every bound here scales from the config's lr "
            f"(--set {key}={hi:.3g} reads the {what}'s)")


def first_lines(log: RunLog, n: int, setup) -> dict:
    """The pilot's fields said first (`PilotForecast.brief_lines`) for a `RunSetup`: its logged lr against the
    config's, a log past the config's run, reward rows that are not numbers."""
    keys = getattr(setup, "keys", None)
    return {"mismatch": lr_mismatch(log, n, setup.hparams.lr, keys.lr if keys is not None else "lr"),
            "past_run": past_the_run(log, setup.run_steps, keys.run_length if keys is not None else "run length"),
            "unread": reward_not_finite(log, n)}


def config_disagrees(log: RunLog, setup) -> list[str]:
    """diagnose --config: where the log and the config cannot be one run's, said first (audit s43u D3: a config of lr
    1e-6 and 300 steps read beside a log of a constant 5e-4 over 150 steps, unsaid): its logged peak lr
    LR_MISMATCH times the config's or more, either way (`lr_mismatch`), or its steps past the config's length."""
    keys = getattr(setup, "keys", None)
    lr = lr_mismatch(log, log.n_points("reward"), setup.hparams.lr, keys.lr if keys is not None else "lr", "log")
    past = past_the_run(log, setup.run_steps, keys.run_length if keys is not None else "run length", pilot=False)
    return [f"config and log disagree: {line}" for line in (lr, past) if line]


def past_the_run(log: RunLog, run_steps: int | None, key: str, pilot: bool = True) -> str | None:
    """The log's last reward step past the run's length the config gives (by more than LENGTH_SLACK): a pilot is
    its run's start, so the config may be another run's (said first; the verdict stands, a shorter run of the same
    settings being a fair question). None where it is within, or the length is unknown. `pilot` False: a whole run's
    log beside its config (diagnose --config, which has no --run-steps)."""
    steps = log.valid("reward")[0]
    if run_steps is None or not steps.size or steps[-1] <= run_steps * (1 + LENGTH_SLACK):
        return None
    if not pilot:
        return f"the log runs to step {int(steps[-1])}, past the config's {key} {run_steps}: is this its config?"
    return (f"the log runs to step {int(steps[-1])}, past the config's {key} {run_steps}: a pilot is its run's start; "
            f"is this its config? (--run-steps {int(steps[-1])} reads the log's own length)")


def reward_not_finite(log: RunLog, n: int) -> str | None:
    """The pilot's reward rows logged as NaN or +-inf (or out of scale, `logs._out_of_scale`) up to its n-th reward
    point: the fit reads the pilot without them, and a user should know (said first, `PilotForecast.brief_lines`).
    None where there are none."""
    rows = pilot_rows(log, n)
    if not rows.size:
        return None
    x = log["reward"][:rows[-1] + 1]
    bad = np.isinf(x) | log.logged_non_finite.get("reward", np.zeros(log.steps.shape, dtype=bool))[:rows[-1] + 1]
    if not bad.any():
        return None
    at = log.steps[:rows[-1] + 1][bad]
    where = f"at step {int(at[0])}" if at.size == 1 else f"on {at.size} rows, steps {int(at[0])}-{int(at[-1])}"
    return (f"the pilot's reward is not a number {where}: the pilot is read without it; look at the reward function "
            "on that step's batch (gspo-dynamics diagnose on the pilot says more)")


def logged_lr(log: RunLog, n: int, lr: float) -> list[str]:
    """What the pilot's logged learning rate (TRL's learning_rate, verl's actor/lr) says against the config's:
    every bound here scales from the config's lr, so a pilot run at another, or under a schedule, is said; one
    logged as 0 on every row is a print's rounding, said and not read."""
    logged = _logged(log, "learning_rate", n)
    if not len(logged):
        return []
    if not np.any(logged):  # no run trains at lr 0 throughout: a print rounded it (verl's console: actor/lr:0.000)
        return [f"the pilot logs its learning rate as 0 on every row (a print's rounding, as verl's console writes "
                f"3 decimals), which is no reading: every bound here scales from the config's {lr:.3g}"]
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


# Where a config gives a KL weight, per framework (`predict.RunSetup.framework`), for `logged_kl`'s advice.
KL_WEIGHT_KEYS = {"TRL GRPOConfig": "--set beta=VALUE",
                  "verl": "--set actor_rollout_ref.actor.use_kl_loss=true --set actor_rollout_ref.actor.kl_loss_coef=VALUE",
                  "gspo-dynamics trainer": "--set kl_coef=VALUE",
                  "OpenRLHF": "--set use_kl_loss=true --set init_kl_coef=VALUE"}


def logged_kl(log: RunLog, n: int, beta: float, framework: str) -> list[str]:
    """A pilot that logs a nonzero KL to the reference (TRL's kl, verl's actor/kl_loss) under a config whose KL weight
    is 0 is said, with where the config gives one (a TRL config that leaves beta out under a TRL log is read as 0.04
    before this, `beta_from_logged_kl`; one that gives 0 under a log of TRL < 0.16, which logged the KL at any beta,
    is no contradiction, so the log's release is named where its keys date it)."""
    logged = _logged(log, "kl_ref", n)
    if beta != 0 or not len(logged) or not np.any(logged != 0):
        return []
    dated = f"; its keys date it to TRL {log.version}" if log.trainer == "trl" and log.version else ""
    where = KL_WEIGHT_KEYS.get(framework, "the config's KL weight")
    trl = "; a TRL config without beta reads as 0, TRL's default now, but older releases defaulted to 0.04" \
        if framework == "TRL GRPOConfig" else ""
    return [f"the pilot logs a KL to the reference (mean {float(np.mean(logged)):.3g} over its first {n} rows{dated}), but "
            f"the config's KL weight is 0{trl}: if the run had one, give it ({where}); it enters the restoring force "
            "and the KL pull"]


# TRL's GRPOTrainer logs `kl` only at beta != 0 from 0.16 on, and at any beta before (grpo_trainer.py, 0.14-0.15); its
# GRPOConfig's default beta was 0.04 up to 0.18 and is 0 from 0.19 (checked on TRL's tags), and from 0.18 on it logs
# frac_reward_zero_std on every row (from 0.20 entropy too). So a TRL log with a nonzero KL and neither key, from a
# config without beta, ran at its release's default 0.04: beta != 0 from 0.16, the default before. A log of 0.18 or
# later says beta was set outside the file, to a value it does not give (`logged_kl` asks for it).
TRL_LOGGED_KL_BETA = 0.04
TRL_DEFAULT_BETA_UNTIL = (0, 18)  # the last release whose GRPOConfig defaulted beta to TRL_LOGGED_KL_BETA


def beta_from_logged_kl(setup, log: RunLog, n: int):
    """`setup` with TRL's beta at TRL_LOGGED_KL_BETA where its config leaves beta out (read as TRL's default now, 0)
    and the pilot, a TRL log whose keys date it before 0.18 (`_before_beta_change`), logs a nonzero KL to the
    reference over its first n rows; the note of the default replaced. Else `setup` unchanged."""
    if setup.framework != "TRL GRPOConfig" or ("beta", 0.0) not in setup.assumed or log.trainer != "trl" \
            or not _before_beta_change(log.version):
        return setup
    logged = _logged(log, "kl_ref", n)
    if not len(logged) or not np.any(logged != 0):
        return setup
    assumed = tuple(("beta", TRL_LOGGED_KL_BETA) if pair == ("beta", 0.0) else pair for pair in setup.assumed)
    notes = tuple(f"beta not given: {TRL_LOGGED_KL_BETA:g}, the default of the TRL release the log's keys date it to "
                  f"({log.version}), whose log holds a KL" if note.startswith("beta not given") else note
                  for note in setup.notes)
    hparams = dataclasses.replace(setup.hparams, kl_coef=TRL_LOGGED_KL_BETA)
    return dataclasses.replace(setup, hparams=hparams, assumed=assumed, notes=notes)


def _before_beta_change(version: str | None) -> bool:
    """Whether a TRL log's dated release range (`logs` guess_trl_version: "<0.16", ">=0.17", ...) lies at or below
    TRL_DEFAULT_BETA_UNTIL: below it where its newest key predates 0.18's frac_reward_zero_std (logged on every
    row from 0.18), an upper bound "<x" at most it. Undated: no."""
    if not version:
        return False
    operator, bound = trl_release_bound(version)
    return bound < TRL_DEFAULT_BETA_UNTIL if operator == ">=" else bound <= TRL_DEFAULT_BETA_UNTIL


def other_refresh(log: RunLog, n: int, T: int) -> int | None:
    """The log's own T where its first n rows say it (our trainer's window/position runs 0 .. T - 1) and it is
    not T; None where it is T or not logged."""
    position = _logged(log, "window/position", n)
    if not len(position):
        return None
    own = int(position.max()) + 1  # a log shorter than its T shows fewer positions: only a larger T, or a
    return None if own == T or (own < T and len(position) < T) else own  # smaller one over at least T steps


def logged_refresh(log: RunLog, n: int, T: int) -> list[str]:
    """The pilot's own T (`other_refresh`) against the config's: the fit reads the stiffness as if the pilot
    ran at the config's T, so another one is said."""
    own = other_refresh(log, n, T)
    if own is None:
        return []
    return [f"the pilot ran at T = {own} (its window positions), the config asks about T = {T}: the "
            "stiffness is read as if the pilot ran at the config's T; give the pilot's own config for its own reading"]


def zero_std_shares(log: RunLog, reward: np.ndarray, n: int, reward_range, measured: list[str], group_size: int | None = None):
    """(mean success rate, {G': share}, the logged zero-std share's mean) for a reward in [0, 1]; (None, {}, None) for
    another range. Where the pilot logs its zero-std share at the config's G, prompts of mixed difficulty are read
    from it (`theory.zero_std`): per-prompt success p ~ Beta(m_t c, (1 - m_t) c) at each step's mean m_t, one
    concentration c fitted to the logged shares (`fit_difficulty_log`), and the share at G' is
    mean_t E[p^G' + (1 - p)^G']. Otherwise (or where the fit finds no spread) the batch law mean_t m_t^G' + (1 - m_t)^G',
    the least any mixture gives (Jensen)."""
    if reward_range != (0.0, 1.0):
        return None, {}, None
    shares = {g: float(np.mean(reward**g + (1.0 - reward) ** g)) for g in GROUP_SIZES}
    logged = None
    rows = pilot_rows(log, n)
    z = log["frac_zero_std"][rows] if "frac_zero_std" in log else np.array([])
    ok = np.isfinite(z)
    if ok.any():
        logged = float(np.mean(z[ok]))
        measured.append("the logged zero-std share")
        m, s = reward[: rows.size][ok], z[ok]
        inner = (m > 0) & (m < 1) & (s < 1)
        if group_size is not None and group_size >= 2 and inner.sum() >= MIN_GROUP_ROWS:
            try:
                c = fit_difficulty_log(m[inner], s[inner], group_size)
            except ConfigError:  # shares too near 1 to resolve a spread: the batch law stands
                c = None
            if c is not None:
                shares = {g: float(np.mean(zero_std_share_beta(m[inner] * c, (1 - m[inner]) * c, g))) for g in GROUP_SIZES}
                measured.append(f"prompts of mixed difficulty: per-prompt success ~ Beta around each step's mean with "
                                f"concentration {c:.3g}, fitted to the logged zero-std share at G = {group_size} "
                                "(theory.zero_std); the shares by G are that mixture's")
    measured.append(f"the success rate, mean {reward.mean():.3g}")
    return float(reward.mean()), shares, logged


def least_zero_std_share(p: np.ndarray, G: int, draws: int) -> np.ndarray:
    """An estimate of the least expected share of all-equal groups of G pass/fail rewards, from each step's
    measured success rate p^ = k / D, the mean of D = `draws` rewards: the chance that G of its D draws, taken
    without replacement, are all equal,

        z^ = prod_{r<G} (k - r) / (D - r)  +  prod_{r<G} (D - k - r) / (D - r)   (a factor <= 0 counts as 0).

    Any G distinct draws are independent, so E z^ = e_G(p) / C(D, G) + e_G(1 - p) / C(D, G), the elementary
    symmetric means of the draws' own rates: exactly p^G + (1 - p)^G when every prompt has rate p, and by
    Maclaurin's inequality at most mean(p)^G + mean(1 - p)^G <= mean_i (p_i^G + (1 - p_i)^G), the expected share,
    when prompts differ. The measured share can fall below it only by noise, or where G or the rewards differ."""
    D = float(draws)
    k = np.clip(p, 0.0, 1.0) * D
    near = np.round(k)
    k = np.where(np.abs(k - near) < 0.01, near, k)  # k counts draws: a logged float32 or 4-decimal mean is snapped
    r = np.arange(G)[:, None]
    ones = np.prod(np.clip(k - r, 0.0, None) / (D - r), axis=0)
    zeros = np.prod(np.clip(D - k - r, 0.0, None) / (D - r), axis=0)
    return ones + zeros


def logged_group_size(log: RunLog, n: int, G: int, N: int | None) -> list[str]:
    """The pilot's logged zero-std share against the least the config's G allows at its success rates
    (`least_zero_std_share`, N G draws a step; N = 1 where the config does not say): a mean of the per-row
    differences below the one-sided t quantile of Z_GROUP normal standard errors and below -MIN_GAP contradicts
    G (or N), and is said; a share above it says nothing (unequal prompts raise it)."""
    if G < 2 or "frac_zero_std" not in log or "reward" not in log:
        return []
    rows = pilot_rows(log, n)
    p, z = log["reward"][rows], log["frac_zero_std"][rows]
    both = np.isfinite(z)
    if both.sum() < MIN_GROUP_ROWS or (p < 0).any() or (p > 1).any():
        return []
    least = least_zero_std_share(p[both], G, (N or 1) * G)
    gap = z[both] - least
    mean, se = float(np.mean(gap)), float(np.std(gap, ddof=1)) / np.sqrt(len(gap))
    critical = stdtrit(len(gap) - 1, 0.5 * erfc(Z_GROUP / np.sqrt(2)))  # the t quantile at Phi(-Z_GROUP), < 0
    if not (np.isfinite(mean) and np.isfinite(se)) or mean >= min(critical * se, -MIN_GAP):
        return []
    return [f"the pilot's logged zero-std share, {float(np.mean(z[both])):.3g}, is below the least G = {G} gives at its "
            f"success rates, {float(np.mean(least)):.3g} (one-sided, {Z_GROUP:g} standard errors' level): the pilot ran "
            f"with a larger G than the config's, or fewer prompts a step than its N = {N or 1}, or its rewards are not "
            "pass/fail (partial credit makes equal groups rarer); the zero-std shares by G below assume pass/fail rewards"]


def load_pilot(source: str | RunLog, pilot_steps: int | None = None,
               logging_steps: int | None = None) -> tuple[RunLog, np.ndarray, np.ndarray]:
    """(log, steps, reward): the pilot's log, read (any format `read_log` takes; rows without a step of their own
    numbered by `logging_steps`, the config's, as `diagnose --config` reads them), and its first `pilot_steps` reward
    points (all of them when None); ConfigError when too short."""
    log = source if isinstance(source, RunLog) else read_log(source, logging_steps=logging_steps)
    steps, reward = log.valid("reward")
    if pilot_steps is not None:
        if not isinstance(pilot_steps, int) or pilot_steps < MIN_PILOT_POINTS:
            raise ConfigError(f"--pilot-steps {pilot_steps!r} keeps too few reward points: a forecast needs at least "
                              f"{MIN_PILOT_POINTS} (the pilot has {len(steps)})")
        steps, reward = steps[:pilot_steps], reward[:pilot_steps]
    if len(steps) < MIN_PILOT_POINTS:
        raise ConfigError(f"the pilot has {len(steps)} reward points; a forecast needs at least {MIN_PILOT_POINTS}")
    return log, steps, reward


def pilot_fit(steps: np.ndarray, reward: np.ndarray, fit: TrajectoryFit | None = None) -> TrajectoryFit:
    """The closed-form fit of the pilot's reward points (`fit.fit_trajectory`): `fit` where the caller has it of these
    same points (a report's `diagnose` of a log that is all pilot), else fitted here. A given fit of other points (its
    count, first and last step or reward range not the pilot's) is a ValueError: a caller's mistake, never the user's."""
    if fit is None:
        return fit_trajectory(steps, reward)
    same = (fit.n == steps.size and fit.t_start == float(np.min(steps)) and fit.t_end == float(np.max(steps))
            and all(math.isclose(a, float(b), rel_tol=1e-9, abs_tol=1e-12) for a, b in
                    zip(fit.r_range, (np.min(reward), np.max(reward)))))
    if not same:
        raise ValueError(f"the fit given to the pilot forecast is of {fit.n} points, steps {fit.t_start:g}-{fit.t_end:g}, "
                         f"not of the pilot's {steps.size} points, steps {np.min(steps):g}-{np.max(steps):g}")
    return fit


def pilot_entropy(log: RunLog, steps: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(steps, token entropy) over the pilot's reward steps where the entropy is logged, finite and positive (the
    entropy law's input, `_end_blend.law_readings`), or None with fewer than 5 such points."""
    if "entropy" not in log:
        return None
    at = np.isin(log.steps, steps) & np.isfinite(log["entropy"]) & (log["entropy"] > 0)
    return (log.steps[at], log["entropy"][at]) if at.sum() >= 5 else None


def pilot_reward_range(reward: np.ndarray, given, assumed: list[str]) -> tuple[float, float] | None:
    """The reward's range for the forecast: the `given` one, which must hold the pilot's rewards (ConfigError: one
    line), else [0, 1] where every pilot reward lies there (said), else None (said)."""
    if given is not None:
        lo, hi = given
        if reward.min() < lo or reward.max() > hi:
            raise ConfigError(f"reward range [{lo:g}, {hi:g}] does not hold the pilot's rewards, which run from "
                              f"{reward.min():.4g} to {reward.max():.4g}")
        return (float(lo), float(hi))
    if reward.min() >= 0.0 and reward.max() <= 1.0:
        assumed.append("the reward is a success rate in [0, 1] (every pilot reward lies there); give the range if not")
        return (0.0, 1.0)
    assumed.append("the reward's bounds are unknown: the interior-plateau premise is not checked")
    return None
