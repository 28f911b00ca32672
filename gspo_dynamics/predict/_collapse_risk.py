"""The pilot's collapse fields (`theory.collapse`): the limit S and what a pilot log gives the collapse model.

From the pilot's first n steps: the share of groups with signal 1 - z, the pilot's and the run's (`signal_shares`), the mean
token entropy H and the rise r of its first updates, the displacement D at the config's (lr, T) and at the
pilot's own T (`pilot_refresh_interval`), which raises the limit when the pilot kept its reward (equation
(8)), and the bounds on T and lr they imply (`collapse_fields`); over an (lr, T) grid, the risk region
(`collapse_grid`). `predict.pilot_forecast` calls these and carries their fields in a `PilotForecast`.
"""

from __future__ import annotations

import numpy as np

from gspo_dynamics.logs import RunLog
from gspo_dynamics.predict._end_reward import held_reward
from gspo_dynamics.predict._pilot_fields import PilotFields
from gspo_dynamics.theory import collapse
from gspo_dynamics.theory.hyperparams import Adam, Hyperparams

# S of `theory.collapse`: the signal-weighted displacement between consecutive samplers relative to the
# policy's token entropy, (1 - z) D / H (D = T lr s, capped by a ratio clip's band edge after a window's first
# step where the clip switches the gradient off, CISPO's only where the run's success is absorbing:
# `theory.collapse.band_edge`, (10); 1 - z the share of groups with signal), past which a run is at risk of
# collapse (equation (7)). Fitted on the cells of the 22 development combinations of paper_repro/pilot_forecast.py
# (`--fit-limit`), never on its confirmation ones; how it was set and refitted: docs/validation.md.
COLLAPSE_SPREAD = 0.1868
# The KL pull on a solved policy (`theory.collapse`, "Outside this model too"): a warning beside the collapse
# bounds, not part of them; the rule (`kl_pull_risk`) is read off one combination, not fitted.
KL_PULL_FLAT_SHARE = 0.5  # the run's zero-std share (1 minus its share with signal, (9)) from which most groups are flat
KL_PULL_MIN_REFRESH = 5  # the smallest T warned about: no seed fell at T = 4, 3 of 16 at T = 6 (claim kl-pull-refresh)
SOLVED_SHARE = 0.5  # a run is on the solved side at this share of its reward's range or more: most flat groups all
# correct (a success rate p >= 1/2 has p^G >= (1 - p)^G), not all wrong


def collapse_grid(forecast: PilotFields, lrs, refresh_intervals) -> np.ndarray | None:
    """The collapse model's risk over (lr, T), (len(refresh_intervals), len(lrs)) booleans: (1 - z) D(lr, T)
    > S H (`theory.collapse` (5), (7)), the limit at least the displacement the pilot survived (8), or lr past
    the entropy overshoot's bound (6), from the pilot's drift, entropy, signal share, outcome and rise; None
    where the pilot measured no drift or entropy (the forecast withholds it too)."""
    if forecast.displacement is None:
        return None
    hp = forecast.config.setup.hparams
    return collapse.at_risk(forecast.drift_per_step / hp.lr, forecast.entropy, forecast.entropy_rise, hp.lr, lrs,
                            refresh_intervals, COLLAPSE_SPREAD, forecast.band_edge,
                            forecast.signal_share, forecast.survived)


def signal_shares(logged: float | None, success: np.ndarray | None, hp, n: int, held: float | None,
                  assumed: list[str]) -> tuple[float, float]:
    """(1 - z_p, 1 - z): the pilot's share of groups with signal and the run's, equations (7) and (9). z_p is the
    logged zero-std share, else the one the success rates p_t predict at the run's G, E_t[p_t^G + (1 - p_t)^G]
    (a lower bound: `predict._pilot._zero_std`), else 0 (assumed, said); the run's share weighs in the held success
    rate p_h = `held` (`held_success`: None where the reward is no success rate or the pilot did not keep it)
    (`theory.collapse.run_signal_share`; a pilot that fell holds the level of its fall, not one a run settles at),
    else is the pilot's (said). Each
    at least one group of the pilot's n N, the smallest share it can measure."""
    floor = 1.0 / (n * hp.num_groups)
    if logged is not None:
        z = logged
    elif success is not None:
        z = float(np.mean(success**hp.group_size + (1.0 - success) ** hp.group_size))
        assumed.append(f"the zero-std share is not logged: the collapse limit uses the one the success rate predicts, {z:.3g}")
    else:
        assumed.append("the zero-std share is neither logged nor predicted (the reward is not a success rate): the "
                       "collapse limit counts every group as carrying signal")
        return 1.0, 1.0
    pilot = max(1.0 - z, floor)
    if held is None:
        why = "the reward is not a success rate" if success is None else "the pilot did not keep its reward (or is too short to tell)"
        assumed.append(f"{why}: the collapse limit's share of groups with signal is the pilot's, not the run's "
                       "(theory.collapse (9))")
        return pilot, pilot
    run = max(collapse.run_signal_share(pilot, held, hp.group_size), floor)
    w = collapse.PILOT_SHARE_WEIGHT
    assumed.append(f"the run's share of groups with signal is {run:.3g} (theory.collapse (9)): the pilot's {pilot:.3g} "
                   f"weighted {w:.0%}, the {collapse.held_signal_share(held, hp.group_size):.3g} of its held success "
                   f"rate {held:.3g} weighted {1 - w:.0%}")
    return pilot, run


def held_success(success: np.ndarray | None, kept: bool) -> float | None:
    """p_h of (9) and (10): the pilot's held success rate (`held_reward` of its success rates, in [0, 1]) where the
    reward is one and the pilot kept it; None otherwise (a pilot that fell holds the level of its fall)."""
    return float(np.clip(held_reward(success), 0.0, 1.0)) if kept and success is not None else None


def collapse_fields(log: RunLog, n: int, hp, delta: float | None, zero_std: tuple[float | None, np.ndarray | None],
                    kept: bool, measured: list[str], assumed: list[str]) -> dict:
    """The pilot's collapse fields (`theory.collapse`): D at the config's point, the bounds on T and lr for
    the absolute limit S H / (1 - z) (equations (5) and (7), H the pilot's mean token entropy, 1 - z the run's
    share of groups with signal, (9), from `zero_std` = (the logged zero-std share, the success rates) by
    `signal_shares`), raised to that D when the pilot `kept` its reward (equation (8): it ran there without a
    fall), and the entropy rise r of its first updates, which caps the safe lr at lr_pilot OVERSHOOT_RISE / r
    (equation (6))."""
    out = dict(displacement=None, collapse_max_refresh=None, collapse_max_lr=None, entropy=None, overshoot=None,
               entropy_rise=None, signal_share=None, pilot_signal_share=None, survived=None, band_edge=None,
               kl_pull=kl_pull_risk(hp, None), rise_unread=None)
    entropy = np.asarray(log["entropy"][:n], dtype=float) if "entropy" in log else np.array([])
    entropy = entropy[np.isfinite(entropy)]
    if delta is None or not delta > 0 or not len(entropy) or not entropy.mean() > 0:
        if delta is not None:
            assumed.append("the log has no token entropy: the collapse limit, relative to it, is not applied")
        if len(entropy):  # the overshoot (6) reads the entropy alone: a step past the basin needs no stale drift
            out.update(_overshoot(log["entropy"][:n], hp.lr, measured))
        return out
    H, s = float(entropy.mean()), delta / hp.lr
    held = held_success(zero_std[1], kept)
    pilot_share, signal_share = signal_shares(*zero_std, hp, n, held, assumed)
    clip = displacement_cap(hp, held, measured)
    D = collapse.displacement(s, hp.lr, hp.refresh_interval, clip)
    survived = collapse.displacement(s, hp.lr, pilot_refresh_interval(log, n, hp, assumed), clip) if kept else None
    bound = collapse.relative_limit(COLLAPSE_SPREAD, H, signal_share)
    limit = collapse.survived_limit(bound, survived)
    first = log["entropy"][:n]
    out.update(entropy=H, signal_share=signal_share, pilot_signal_share=pilot_share, **_first_rise(first, measured),
               displacement=D, survived=survived, band_edge=clip,
               kl_pull=kl_pull_risk(hp, None if zero_std[0] is None and zero_std[1] is None else signal_share, held),
               collapse_max_refresh=collapse.max_safe_refresh_interval(s, hp.lr, limit, clip),
               collapse_max_lr=collapse.max_safe_learning_rate(s, hp.refresh_interval, limit, clip))
    measured.append(f"the mean token entropy, {H:.3g} nats, and the run's share of groups with signal, {signal_share:.3g}: "
                    f"the collapse limit is S H / (1 - z) = {bound:.3g}" + (f", raised to the pilot's own displacement "
                    f"{survived:.3g}, which it ran without losing reward (theory.collapse (8))" if limit > bound else ""))
    overshoot_lr = collapse.overshoot_max_learning_rate(out["entropy_rise"], hp.lr)
    if overshoot_lr is not None:
        out["collapse_max_lr"] = min(out["collapse_max_lr"], overshoot_lr)
    if out["overshoot"]:
        measured.append(_overshoot_line(out["entropy_rise"], overshoot_lr))
        out.update(collapse_max_refresh=0)
    assumed.append("the drift scales with lr at a fixed point of training (theory.collapse, equation (1)); "
                   f"the relative collapse limit S = {COLLAPSE_SPREAD:g} is one number set on other runs")
    return out


def _overshoot(entropy, lr: float, measured: list[str]) -> dict:
    """The entropy-only collapse fields where no drift is measured (T = 1, or no clip/ratio logged): the first
    updates' entropy rise r and, where it passes OVERSHOOT_RISE, the overshoot and its lr bound lr OVERSHOOT_RISE / r
    (`theory.collapse` (6): one step past the basin, whatever the staleness; T = 1 is no shelter)."""
    out = _first_rise(entropy, measured)
    rise, over = out["entropy_rise"], out["overshoot"]
    if over:
        out["collapse_max_lr"] = collapse.overshoot_max_learning_rate(rise, lr)
        measured.append(_overshoot_line(rise, out["collapse_max_lr"]))
    return out


def _first_rise(entropy, measured: list[str]) -> dict:
    """overshoot, entropy_rise and rise_unread of the first updates' entropy (`theory.collapse` (6), (6')): a rise
    past OVERSHOOT_RISE that the entropy's own row scatter could give is no reading (rise and overshoot None, the
    reason in rise_unread and `measured`); otherwise the rise r and whether it overshoots."""
    rise = collapse.entropy_rise(entropy)
    if rise is not None and rise > collapse.OVERSHOOT_RISE and collapse.rise_within_noise(entropy):
        noise = collapse.entropy_row_noise(entropy)
        level = collapse.rise_level(entropy)
        why = (f"the token entropy rose {rise:.0%} on the first updates, within its own row scatter (sd {noise:.2g} "
               f"nats a row: a rise must pass {level:.2g} sd of a difference of two rows, theory.collapse (6')), so "
               "no overshoot is read from it")
        measured.append(why)
        return {"overshoot": None, "entropy_rise": None, "rise_unread": why}
    return {"overshoot": collapse.overshoots(entropy), "entropy_rise": rise, "rise_unread": None}


def _overshoot_line(rise: float, overshoot_lr: float) -> str:
    return (f"the token entropy rose by {rise:.0%} in the first {collapse.OVERSHOOT_STEPS} steps, more than "
            f"{collapse.OVERSHOOT_RISE:.0%}: the pilot's own step crosses the basin, and so does every lr above "
            f"{overshoot_lr:.3g} (theory.collapse (6))")


def displacement_cap(hp: Hyperparams, held: float | None, measured: list[str]) -> float | None:
    """The clip's band edge that caps the run's displacement (`theory.collapse.band_edge`, equations (4) and (10)):
    under a clip that caps a detached weight (CISPO), the pilot's held success rate p_h (`held`: where the reward is
    one and the pilot kept it, as (9) reads it; None otherwise) decides whether the run's success is absorbing; said."""
    clip = collapse.band_edge(hp, held)
    if hp.correction == "none" or hp.clip_mode != "cap":
        return clip
    if not collapse.weight_fades(hp):
        why = (f"the weight is clipped from below at 1 - eps_low = {1.0 - hp.clip_low:.3g}, so the push on tokens with a negative "
               "advantage keeps that share and does not fade")
    elif held is None:
        why = "the success rate is unknown or the pilot did not keep its reward"
    else:
        why = f"held success rate {held:.3g}, p_h^G = {held ** hp.group_size:.2g}"
        if clip is not None:
            why += f" >= {collapse.ABSORBED_SHARE:g}: the run's success is absorbing"
        else:
            why += f" < {collapse.ABSORBED_SHARE:g}"
    measured.append("the clip caps a detached weight (CISPO's) and keeps moving the rewarded tokens past the band edge; "
                    + ("the displacement is capped at the band edge" if clip is not None else "the displacement is uncapped")
                    + f" (theory.collapse (10): {why})")
    return clip


def kl_pull_risk(hp: Hyperparams, signal_share: float | None, held: float | None = None) -> bool | None:
    """Whether a run is exposed to the KL pull on a solved policy (`theory.collapse`, "Outside this model too"):

        beta > 0  and  Adam  and  T >= KL_PULL_MIN_REFRESH  and  z = 1 - signal_share >= KL_PULL_FLAT_SHARE
        and  p_h >= SOLVED_SHARE = 1/2 (where the pilot kept its reward and p_h, its held success rate, is known),

    z the run's zero-std share (equation (9)): most of its groups will be flat, and with p_h >= 1/2 flat mostly
    because all correct (p^G + (1 - p)^G is as large for a run that fails every prompt, which is dead, not
    solved). A window whose sampler solves nearly every prompt has almost no policy gradient, so the KL term
    pulls the policy back toward the reference for the rest of the window. False where the hyperparameters or
    p_h rule it out; None where they do not and the share was not read (`signal_share` None). Read off
    count/cispo with a KL weight under AdamW (paper_repro claims kl-unwinding and kl-pull-refresh: of 16 seeds at
    the base lr none fell at T = 4, 3 at T = 6, 6 at T = 8, 15 at T = 12; at a third of it none up to T = 8 and 6 at
    T = 12); the rule also holds for count/grpo and count/gspo_token with the same
    weight, which held at T = 16, so it says what to watch, not a fall."""
    if not (hp.kl_coef > 0 and isinstance(hp.optimizer, Adam) and hp.refresh_interval >= KL_PULL_MIN_REFRESH):
        return False
    if held is not None and held < SOLVED_SHARE:
        return False
    return None if signal_share is None else 1.0 - signal_share >= KL_PULL_FLAT_SHARE


def pilot_refresh_interval(log: RunLog, n: int, hp, assumed: list[str]) -> int:
    """The pilot's own T: one more than its largest logged window position (our trainer's window/position),
    else the config's (said): its own displacement, theory.collapse (8), is D(lr_pilot, T_pilot) = T_pilot delta
    capped by the clip, whatever T the config asks about."""
    position = np.asarray(log["window/position"][:n], dtype=float) if "window/position" in log else np.array([])
    position = position[np.isfinite(position)]
    if len(position):
        return int(position.max()) + 1
    assumed.append(f"the pilot ran at the config's T = {hp.refresh_interval} (its log has no window/position): its own "
                   "displacement, which raises the collapse limit when it kept its reward, is taken there")
    return hp.refresh_interval
