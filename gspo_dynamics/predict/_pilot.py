"""A forecast from a config and a short pilot log of the same setup: what the pilot measures and what
it implies at the config's point and around it.

Measured from the pilot (its first `pilot_steps` steps, or all of it):

  reward curve      the closed-form fit (`fit.fit_trajectory`) and its implications at the config's
                    hyperparameters (`fit.implications`: regime, damping margin, plateau, time to it,
                    critical and max safe T, with the premises checked: interior plateau, linear regime);
  stiffness         kappa = eta lambda per step, from the fit. It scales with the learning rate at a fixed
                    curvature lambda (SGD exactly; Adam in its linear regime, eta_hb = lr (1 - b1) / sqrt(s)
                    at a fixed second moment s), so at the config's T the largest stable learning rate is

                        lr_max = lr_pilot x_max(T, mu) / kappa,   x_max = `theory.linear.critical_learning_rate`
                                                                 (all forces stale, as `implications`;
                                                                 `predict._lr_bound`, with its premises);

  success rate      p_t = the step's mean reward when every reward lies in [0, 1]; the zero-std share at a
                    group size G' is the mixture over prompts of mixed difficulty fitted to the logged
                    frac_reward_zero_std (`predict._pilot_log.zero_std_shares`, `theory.zero_std`), else the batch
                    law E_t[p_t^G' + (1 - p_t)^G'] (the least any mixture gives: the share is convex in p);
  noise             the fit's residual std s at the pilot's N G responses per step; the reward's noise
                    scales as 1 / sqrt(N G) (the 1/G law of the fluctuation theory), s(G') = s sqrt(G / G'),
                    so the smallest group size whose noise is at most a target sigma is

                        G_sigma = ceil(G (s / sigma)^2)     (at the pilot's N groups per step);
  policy drift      the log-ratio spread added per stale step, of the token ratio and (under a sequence-level
                    correction) of the sequence ratio, and the clip fractions by refresh interval it implies
                    (`predict._drift`: from the window's log-ratio variance, or inverted from a logged clip
                    fraction);
  the run's end     where the run's length is known: the fitted curve over its last sixth, with a 90%
                    split-conformal interval calibrated on our trainer's runs (`predict._end_reward`).

Everything else is assumed, and said so.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gspo_dynamics._errors import ConfigError
from gspo_dynamics._plain import plain
from gspo_dynamics.fit import (
    HELD_STEPS, Fall, Implications, TrajectoryFit, implications, max_safe_range_text, max_safe_text,
    plateau_unidentified,
)
from gspo_dynamics.logs import RunLog
from gspo_dynamics.predict._collapse_risk import COLLAPSE_SPREAD, collapse_fields
from gspo_dynamics.predict._collapse_text import collapse_lines
from gspo_dynamics.predict._config_forecast import ConfigForecast, config_forecast
from gspo_dynamics.predict._run_setup import RunSetup
from gspo_dynamics.predict._drift import measure_drift
from gspo_dynamics.predict._end_reward import EndReward, checked_run_steps, held_reward, pilot_end_reward
from gspo_dynamics.predict._fall_chance import config_fall_chance, lr_bound_in_reach
from gspo_dynamics.predict._pilot_headline import UNTIMED, plateau_identified, plateau_timed
from gspo_dynamics.predict._pilot_log import (
    GROUP_SIZES, beta_from_logged_kl, first_lines, load_pilot, logged_group_size, logged_kl, logged_lr, logged_refresh,
    pilot_entropy, pilot_fit, pilot_reward_range, zero_std_shares,
)
from gspo_dynamics.predict._lr_bound import FLAT_FIT, max_safe_lr
from gspo_dynamics.predict._pilot_validity import cap_tokens, length_fall, pilot_invalid
from gspo_dynamics.predict._prior import TaskPrior, task_prior
from gspo_dynamics.predict._row_fall import noise_dip, pilot_end_drop, pilot_fall, responses_per_row
from gspo_dynamics.predict._schedule import SAME, pilot_factor, with_run_length
from gspo_dynamics.theory import collapse

TARGET_NOISE_SHARE = 0.05  # the default target reward noise: this share of the reward's range


@dataclass(frozen=True)
class PilotForecast:
    """The pilot-calibrated answer (module docstring)."""

    config: ConfigForecast
    pilot_steps: int  # reward points used
    implications: Implications  # of the pilot's reward fit at the config's hyperparameters
    max_safe_lr: float | None  # at the config's T (None: withheld, `lr_note` says why)
    lr_note: str
    success_rate: float | None  # mean p over the pilot (None: the reward is not a success rate)
    zero_std_by_group: dict[int, float]  # predicted share per G'
    zero_std_logged: float | None  # mean frac_reward_zero_std of the pilot, where logged
    noise_by_group: dict[int, float]  # the reward's step-to-step noise per G'
    target_noise: float | None  # sigma: given, or TARGET_NOISE_SHARE of the reward's range (None: no range)
    group_size_for_target_noise: int | None  # G_sigma (module docstring)
    drift_per_step: float | None  # delta, the log-ratio spread added per stale step (token, else sequence)
    collapse_max_refresh: int | None  # the largest T whose displacement stays under COLLAPSE_SPREAD at the config's lr
    collapse_max_lr: float | None  # the largest lr whose displacement stays under COLLAPSE_SPREAD at the config's T
    displacement: float | None  # D at the config's (lr, T), theory.collapse equations (2)-(4)
    entropy: float | None  # the pilot's mean token entropy H: the limit is COLLAPSE_SPREAD x H (equation (5))
    overshoot: bool | None  # the pilot's entropy rose on its first updates (theory.collapse.overshoots)
    entropy_rise: float | None  # that rise r over its first value; lr > lr_pilot OVERSHOOT_RISE / r is at risk (6)
    signal_share: float | None  # 1 - z, the run's share of groups with signal (9): the limit is S H / (1 - z) (7)
    survived: float | None  # the pilot's own D when it kept its reward (the limit is at least that, (8)); None otherwise
    pilot_signal_share: float | None  # 1 - z_p, the pilot's own share of groups with signal (weighted w in (9))
    band_edge: float | None  # the clip's eps_high capping D (theory.collapse.band_edge, (4), (10)); None: uncapped
    clip_by_refresh: dict[int, float]  # predicted token clip fraction per T' (token-level correction)
    sequence_drift: float | None = None  # delta_s of log s, under a sequence-level correction (`predict._drift`)
    sequence_clip_by_refresh: dict[int, float] = field(default_factory=dict)  # the sequences' clip fraction per T'
    fit: TrajectoryFit | None = None  # the pilot's reward fit
    pilot: tuple[np.ndarray, np.ndarray] | None = None  # the pilot's (steps, reward) used
    reward_range: tuple[float, float] | None = None  # given, or inferred (said in `assumed`)
    fall: Fall | None = None  # the pilot's largest loss below its running best (`fit._fall`); None: too short
    end_drop: Fall | None = None  # its last row's drop below the rows before (`predict._row_fall` (3)); None: none
    end: EndReward | None = None  # the reward at the run's end with its interval (`predict._end_reward`); None: length unknown
    prior: TaskPrior | None = None  # the end level of finished runs of the task (`predict._prior`); None: none given
    kl_pull: bool | None = None  # exposed to the KL pull on a solved policy (`predict._collapse_risk.kl_pull_risk`), a
    # warning; None: not read (the hyperparameters allow it, and the pilot gives no run's share of groups with signal)
    measured: list[str] = field(default_factory=list)
    assumed: list[str] = field(default_factory=list)
    log_notes: tuple[str, ...] = ()  # the pilot log's reader warnings (`RunLog.warnings`): what it dropped or read oddly
    reward_spread: np.ndarray | None = None  # the logged reward_std at each reward point (`_pilot_headline.fall_in_row_noise`)
    length_fall: str | None = None  # the pilot's completions shrank below half (`predict._pilot_validity.length_fall`)
    invalid: str | None = None  # why the pilot is no evidence about its config (`predict._pilot_validity`); None: it is
    cap_tokens: int | None = None  # the completion cap to raise to where the pilot's answers were cut (`_pilot_validity`)
    mismatch: str | None = None  # the pilot's logged lr far from the config's (`_pilot_log.lr_mismatch`); said first
    unread: str | None = None  # the pilot's reward rows that are not numbers (`_pilot_log.reward_not_finite`); said first
    rise_unread: str | None = None  # why the first updates' entropy rise is no reading (its row scatter, (6'))
    past_run: str | None = None  # the log runs past the config's run length (`_pilot_log.past_the_run`); said first

    def brief_lines(self) -> list[str]:
        """The answer's first lines about the pilot against its config and its own rows: a logged lr far from the
        config's, reward rows that are not numbers."""
        return ([f"config and pilot disagree: {self.mismatch}"] if self.mismatch else []) + (
            [f"pilot longer than the run: {self.past_run}"] if self.past_run else []) + (
            [f"pilot rows not read: {self.unread}"] if self.unread else [])

    def to_json(self) -> dict[str, Any]:
        implied = self.implications.to_json()
        if not plateau_identified(self):  # a number the pilot does not identify is not given (docs/outputs.md)
            implied.update(plateau=None, time_to_plateau=None, remaining_rise=None, plateau_identified=False,
                           unidentified=plateau_unidentified(self.implications.unidentified))
        return plain({**self.config.to_json(), "pilot_steps": self.pilot_steps,  # the config-only keys, then the pilot's
                "implications": implied, **dict(zip(("max_safe_lr", "lr_note"), lr_bound_in_reach(
                    self.max_safe_lr, self.config.setup.hparams.lr, self.lr_note))),
                # true: the pilot lost reward at its own lr, so max_safe_lr is the linear model's reading, no safe lr
                "pilot_lost_reward": self.lost,
                "success_rate": self.success_rate, "zero_std_by_group": _keys(self.zero_std_by_group),
                "zero_std_logged": self.zero_std_logged, "noise_by_group": _keys(self.noise_by_group),
                "target_noise": self.target_noise, "group_size_for_target_noise": self.group_size_for_target_noise,
                "drift_per_step": self.drift_per_step, "clip_by_refresh_interval": _keys(self.clip_by_refresh),
                "sequence_drift_per_step": self.sequence_drift,
                "sequence_clip_by_refresh_interval": _keys(self.sequence_clip_by_refresh),
                "collapse_spread_limit": COLLAPSE_SPREAD, "collapse_assessed": self.displacement is not None,
                # with collapse_assessed, a null collapse_max_refresh_interval means any T; without, not measured
                "collapse_max_refresh_interval": self.collapse_max_refresh,
                "collapse_max_lr": self.collapse_max_lr, "displacement": self.displacement,
                "entropy": self.entropy, "overshoot": self.overshoot, "entropy_rise": self.entropy_rise,
                "entropy_rise_unread": self.rise_unread,
                "signal_share": self.signal_share, "pilot_signal_share": self.pilot_signal_share,
                "survived_displacement": self.survived, "displacement_band_edge": self.band_edge,
                "collapse_limit": self.collapse_limit,
                "fall_chance": config_fall_chance(self),  # predict._fall_chance (1), (2); null: the collapse rules not assessed
                "held_reward": self.held, "end_reward": None if self.end is None else self.end.to_json(),
                "task_prior": None if self.prior is None else self.prior.to_json(),
                "pilot_fall": None if self.fall is None else self.fall.to_json(), "kl_pull": self.kl_pull,
                "pilot_end_drop": None if self.end_drop is None else self.end_drop.to_json(),
                "config_mismatch": self.mismatch, "rows_not_read": self.unread, "log_past_run": self.past_run,
                "measured": self.measured, "assumed": self.assumed, "pilot_log_notes": list(self.log_notes)})

    @property
    def held(self) -> float | None:
        """The pilot's last HELD_STEPS rewards' mean (`held_reward`), the naive final-reward forecast (None: no rewards)."""
        return None if self.pilot is None else held_reward(self.pilot[1])

    @property
    def collapse_limit(self) -> float | None:
        """The absolute displacement limit in force: max(S H / (1 - z), D_pilot), theory.collapse (7), (8); None
        without the pilot's entropy and drift."""
        if self.entropy is None or self.signal_share is None:
            return None
        return collapse.survived_limit(collapse.relative_limit(COLLAPSE_SPREAD, self.entropy, self.signal_share), self.survived)

    def summary_lines(self) -> list[str]:
        imp = self.implications
        lines = self.config.summary_lines()[:2]
        span = "" if self.pilot is None else f", steps {self.pilot[0][0]:g}-{self.pilot[0][-1]:g}"
        lines.append(f"from the pilot ({self.pilot_steps} reward points{span}):")
        lines += self._curve_lines() + (self.prior.summary_lines() if self.prior else []) + self._regime_lines()
        lines += self._group_lines() + self._collapse_lines()
        lines += [f"measured: {m}" for m in self.measured] + [f"assumed: {a}" for a in self.assumed]
        return lines + [f"note: {n}" for n in imp.notes + list(self.config.setup.notes)] + [
            f"note: the pilot log: {w}" for w in self.log_notes]

    @property
    def lost(self) -> bool:
        """Whether the pilot lost reward it had (`fit._fall`)."""
        return self.fall is not None and self.fall.lost

    def _curve_lines(self) -> list[str]:
        """The reward curve: its plateau (or why none), the held level, the run's end, the pilot's fall."""
        imp, hp, plateau = self.implications, self.config.setup.hparams, self.implications.plateau
        lines = []
        past = self.reward_range is not None and not self.reward_range[0] < plateau.value < self.reward_range[1]
        if past and imp.interior_plateau is False and not imp.plateau_extrapolated:  # a fit at or past the bound
            bound = min(self.reward_range, key=lambda b: abs(b - plateau.value))
            lines.append(f"  reward curve: saturates at the reward's bound {bound:g} (the fit's plateau lies at or past it)")
        elif not plateau_identified(self):
            lines.append(f"  reward curve: the plateau is not identified by {self.pilot_steps} reward points ("
                         f"{plateau_unidentified(imp.unidentified)['plateau']}; a longer pilot, or one past the rise's start, tells)")
        else:
            lines.append(f"  reward curve: plateau {plateau.value:.3g}" + (f" +- {plateau.stderr:.2g}" if plateau.stderr else "")
                         + (f", within 5% of it from step {imp.time_to_plateau.value:.3g}" if plateau_timed(imp)
                            else f"; {UNTIMED}"))
        if self.held is not None:
            lines.append(f"  held level: the pilot's last {min(HELD_STEPS, self.pilot_steps)} rewards average {self.held:.3g} "
                         + ("(the pilot lost reward on the way: below)" if self.lost else "(as a forecast of a run's final reward "
                            "about as good as the fitted curve on our trainer's grids: paper_repro/pilot_forecast.md)"))
        if self.end is not None:
            lines.append(f"  {self.end.summary()}")
        if self.lost:
            f = self.fall
            lines.append(f"  the pilot lost reward it had: its mean fell from {f.best:.3g} (steps {f.best_steps[0]}-"
                         f"{f.best_steps[1]}) to {f.after:.3g} (steps {f.after_steps[0]}-{f.after_steps[1]}), z = {f.z:.3g}: "
                         f"at this lr and T = {hp.refresh_interval} the run already collapses or oscillates, and the "
                         "curve above is that fall's, not a plateau to forecast from; lower the lr")
        return lines

    def _regime_lines(self) -> list[str]:
        """The linear model's regime and max safe T at the config's T, and its lr bound (each withheld, or
        qualified, where its premises fail)."""
        imp, T = self.implications, self.config.setup.hparams.refresh_interval
        if imp.exact_regime is not None and self.max_safe_lr is None and "does not identify" in self.lr_note:
            why = ("the fitted plateau is an extrapolation beyond the pilot's rewards" if imp.plateau_extrapolated
                   else "a flat line fits the pilot as well as its curve" if FLAT_FIT in self.lr_note
                   else "the pilot's stiffness is within its noise of zero")
            within = max_safe_range_text(imp)  # the fitted stiffness's own max safe T is no number to print here
            regime = f"  regime at T = {T}: not identified ({why})" + (f"; max safe T {within}" if within else "")
        elif imp.exact_regime is not None and self.lost:  # the fit reads the fall's curve: its verdict is not the run's
            regime = (f"  regime at T = {T}: lost reward at this lr (above); the linear model, reading "
                      f"that fall's curve, would say {imp.exact_regime}, max safe T {max_safe_text(imp)}")
        elif imp.exact_regime is not None:
            regime = f"  regime at T = {T}: {imp.exact_regime}; max safe T {max_safe_text(imp)}"
        else:
            regime = f"  regime at T = {T}: withheld (premises below)"
        # within the answer's reach (`lr_bound_in_reach`); a reading past it is withheld here too, with its reason. A
        # pilot that lost reward keeps the linear model's reading of its fall (on our grids it flagged unstable cells)
        shown, note = lr_bound_in_reach(self.max_safe_lr, self.config.setup.hparams.lr, self.lr_note)
        reading = f"{shown:.3g} ({note})" if shown is not None else f"withheld ({note})"
        what = ", no safe lr (the pilot lost reward at its own lr)" if self.lost and self.max_safe_lr is not None \
            else " (the reward's oscillation, not collapse)"
        return [regime, f"  linear lr bound at T = {T}{what}: {reading}"]

    def _group_lines(self) -> list[str]:
        """Zero-std share and noise by G, the G for the target noise, the clip fractions by T."""
        hp, lines = self.config.setup.hparams, []
        if self.success_rate is not None:
            logged = "" if self.zero_std_logged is None else f" (the pilot logged {self.zero_std_logged:.3g})"
            law = ("over prompts of mixed difficulty fitted to the logged share" if any("mixed difficulty" in m for m in
                   self.measured) else "p^G + (1 - p)^G averaged over the pilot's steps, the least over any mix of prompts")
            lines.append(f"  zero-std share by G, {law} (mean success rate "
                         f"{self.success_rate:.3g}){logged}: "
                         + ", ".join(f"{g}: {v:.3g}" for g, v in self.zero_std_by_group.items()))
        lines.append("  reward noise by G: " + ", ".join(f"{g}: {v:.3g}" for g, v in self.noise_by_group.items()))
        if self.group_size_for_target_noise is not None:
            lines.append(f"  G for a reward noise <= {self.target_noise:.3g}: {self.group_size_for_target_noise} "
                         f"(at N = {hp.num_groups:g} group{'' if hp.num_groups == 1 else 's'} per step)")
        if self.clip_by_refresh:
            lines.append(f"  token log-ratio drift {self.drift_per_step:.3g} per stale step; token clip fraction by T: "
                         + ", ".join(f"{t}: {v:.3g}" for t, v in self.clip_by_refresh.items()))
        if self.sequence_clip_by_refresh:
            lines.append(f"  sequence log-ratio drift {self.sequence_drift:.3g} per stale step; sequence clip fraction by T: "
                         + ", ".join(f"{t}: {v:.3g}" for t, v in self.sequence_clip_by_refresh.items()))
        return lines

    def _collapse_lines(self) -> list[str]:
        return collapse_lines(self)


def _keys(d: dict) -> dict[str, float]:
    return {str(k): v for k, v in d.items()}


def pilot_forecast(setup: RunSetup, pilot: str | RunLog, *, pilot_steps: int | None = None,
                   reward_range: tuple[float, float] | None = None, target_noise: float | None = None,
                   run_steps: int | None = None, prior: Sequence[str | RunLog] | None = None,
                   prior_configs: Sequence[str | None] | None = None, fit: TrajectoryFit | None = None) -> PilotForecast:
    """The forecast for `setup` calibrated on `pilot` (module docstring). `reward_range`: the task's
    reward bounds; None infers [0, 1] when every pilot reward lies in it (said), else leaves it open.
    A given range that the pilot's rewards leave is a ConfigError. `target_noise`: the reward noise to
    find a group size for (None: TARGET_NOISE_SHARE of the reward's range, said; none without a range).
    `run_steps`: the run's length in the pilot log's steps, for the reward at its end (None: the config's,
    `setup.run_steps`). `prior`: finished runs of the same task and T (paths or logs) for the end level (`predict._prior`),
    `prior_configs` their configs where given (`predict._prior.task_prior`). `fit`: the closed-form fit of the pilot's
    reward points where the caller has it (`_pilot_log.pilot_fit`: a report's diagnose of a log that is all pilot)."""
    if target_noise is not None and (isinstance(target_noise, bool) or not isinstance(target_noise, (int, float))
                                     or not math.isfinite(target_noise) or target_noise <= 0):
        raise ConfigError(f"the target noise must be a number > 0, got {target_noise!r}")
    if setup.hparams.group_size is None:
        raise ConfigError("a pilot forecast needs the run's group size G (num_generations, rollout.n or group_size)")
    log, steps, reward = load_pilot(pilot, pilot_steps, getattr(setup, "logging_steps", None))
    n = len(steps)
    setup = beta_from_logged_kl(setup, log, n)
    measured = [f"the reward curve over {n} reward points, steps {steps[0]:g}-{steps[-1]:g} (closed-form fit)"]
    assumed = (logged_lr(log, n, setup.hparams.lr) + logged_refresh(log, n, setup.hparams.refresh_interval)
               + logged_kl(log, n, setup.hparams.kl_coef, setup.framework))
    if pilot_steps is not None and n < pilot_steps:  # the number asked for is not silently replaced by what there is
        raise ConfigError(f"--pilot-steps {pilot_steps} asks for more reward points than the pilot holds ({n}): give at "
                          f"most {n}, or leave it out to read all of them")
    if run_steps is not None:
        if checked_run_steps(run_steps) <= steps[-1]:
            raise ConfigError(f"the run's length (--run-steps {run_steps}) is not past the pilot's last step {steps[-1]:g}")
        setup = with_run_length(setup, run_steps, assumed)  # the JSON's config is the run's
    range_note = "" if reward_range is not None else " (inferred from the pilot's rewards: --reward-range gives the task's)"
    reward_range = pilot_reward_range(reward, reward_range, assumed)
    hp = setup.hparams
    fit = pilot_fit(steps, reward, fit)
    imp = implications(fit, hp, reward_range=reward_range)
    factor = pilot_factor(setup.schedule, steps)
    if abs(factor - 1.0) > SAME:
        measured.append(f"the pilot ran at {factor:.3g} of the peak lr on average ({setup.schedule.describe()}): the "
                        "stiffness at the peak is its fitted one over that (predict._schedule (1))")
    config = config_forecast(setup)  # x_max(T, mu) is its stiffness bound
    max_lr, lr_note = max_safe_lr(imp, hp, measured, config.stiffness_bound, factor,
                                   fit.selection.get("delta_bic_flat"))
    p, shares, logged = zero_std_shares(log, reward, n, reward_range, measured, hp.group_size)
    if shares:
        assumed += logged_group_size(log, n, hp.group_size, hp.num_groups)
    noise = {g: fit.residual_std * math.sqrt(hp.group_size / g) for g in GROUP_SIZES}
    measured.append(f"the reward's noise around the fit, {fit.residual_std:.3g} at N G = {hp.num_groups * hp.group_size}")
    assumed.append("the noise scales as 1 / sqrt(N G) (the fluctuation theory's 1/G law) and the pilot ran at the "
                   "config's N, G, T and lr")
    if target_noise is None and reward_range is not None:
        target_noise = TARGET_NOISE_SHARE * (reward_range[1] - reward_range[0])
        assumed.append(f"the target reward noise is {TARGET_NOISE_SHARE:.0%} of the reward's range, {target_noise:.3g} "
                       "(--target-noise for another)")
    elif target_noise is None:
        assumed.append("no target reward noise: the reward's range is unknown (--target-noise gives the G that reaches one)")
    g_sigma = None if target_noise is None else group_size_for_noise(fit.residual_std, hp.group_size, target_noise)
    drift = measure_drift(log, n, hp, measured, assumed)
    delta = drift.per_step
    fall, drop, spread = _falls(log, n, (steps, reward), reward_range, setup, measured)
    kept = fall is not None and not fall.lost and drop is None
    risk = collapse_fields(log, n, hp, delta, (logged, reward if shares else None), kept, measured, assumed)
    end = pilot_end_reward(fit, steps, reward, setup.run_steps if run_steps is None else run_steps, hp.refresh_interval,
                           reward_range, assumed, (setup.schedule, factor), pilot_entropy(log, steps))
    keys = getattr(setup, "keys", None)
    invalid = pilot_invalid(log, n, keys.group if keys is not None else "the group size G",
                            getattr(setup, "masks_truncated", None))
    return PilotForecast(config=config, pilot_steps=n, implications=imp, max_safe_lr=max_lr, invalid=invalid,
                         **first_lines(log, n, setup), lr_note=lr_note, success_rate=p, zero_std_by_group=shares, zero_std_logged=logged,
                         noise_by_group=noise, target_noise=target_noise, group_size_for_target_noise=g_sigma,
                         drift_per_step=delta, clip_by_refresh=drift.token_clips, sequence_drift=drift.sequence,
                         sequence_clip_by_refresh=drift.sequence_clips, fit=fit, **risk,
                         pilot=(steps, reward), reward_range=reward_range, fall=fall, end_drop=drop, end=end,
                         prior=None if prior is None else task_prior(prior, reward_range, refresh_interval=hp.refresh_interval,
                                                                     range_note=range_note, setup=setup,
                                                                     configs=prior_configs),
                         measured=measured, assumed=assumed, log_notes=tuple(log.warnings), reward_spread=spread,
                         length_fall=length_fall(log, n, reward_range), cap_tokens=cap_tokens(log, n))


def _falls(log: RunLog, n: int, pilot, reward_range, setup: RunSetup, measured: list[str]):
    """(the pilot's fall, its end drop, the logged reward_std at each reward point): the fall of `_row_fall.pilot_fall`
    unless its rows' sampling noise holds it and the pilot came back (`_row_fall.noise_dip`), the end drop (3)."""
    steps, reward = pilot
    spread = None if "reward_std" not in log else log["reward_std"][np.isfinite(log["reward"])][:n]
    fall = pilot_fall(steps, reward, reward_range, setup.hparams.num_groups, measured)
    fall = noise_dip(fall, steps, reward, reward_range, spread, responses_per_row(setup), measured)
    return fall, pilot_end_drop(steps, reward, reward_range, measured), spread


def group_size_for_noise(noise: float, group_size: int, target: float) -> int | None:
    """G_sigma = ceil(G (s / sigma)^2) (module docstring): the smallest G' with s sqrt(G / G') <= sigma,
    at least 1; None when the noise s is not finite. The product is rounded to 1e-9 relative first, so an
    exact integer is not pushed up by its floating-point error."""
    if not math.isfinite(noise):
        return None
    need = group_size * (noise / target) ** 2
    return max(1, math.ceil(need * (1 - 1e-9)))


