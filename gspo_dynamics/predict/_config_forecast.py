"""What a training config alone determines about stability, and what only a pilot run can tell.

The reduced model's update depends on the learning rate eta and the curvature of the objective
only through the per-step stiffness x = eta K (the linear map of `theory.linear` is a function of
eta a, eta b and mu). A config fixes the refresh interval T, the momentum mu (SGD's, or Adam's b1
in its linear regime) and the group size G; it does not fix K, which belongs to the model and the
task. So the config-only answer is a bound on the stiffness:

    x_max(T, mu) = the smallest eta K at which rho(M(T)) > 1, all forces stale (exact discrete),
    x_max_cont   = 2 (1 - mu) / (T - 1)   (the continuous rule's c = 0; no bound at T = 1),

with the on-policy bound x_max(1, mu) = 2 (1 + mu) for comparison; and, per stiffness a pilot might
measure, the largest stable T. Under Adam the stiffness per step is eta (1 - b1) K / sqrt(s),
s the gradient's second moment: a pilot's reward curve measures it at once. The zero-std law
p^G + (1 - p)^G needs the success rate p; the reward's variance scales as 1 / (N G), its noise (std) as 1 / sqrt(N G).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gspo_dynamics._plain import plain
from gspo_dynamics.predict._clip_modes import NO_LOWER_CLIP
from gspo_dynamics.predict._run_setup import RunSetup
from gspo_dynamics.theory.dual_clip import drift_for_share
from gspo_dynamics.theory.finite_group import zero_variance_probability
from gspo_dynamics.theory.linear import STABLE, critical_learning_rate, critical_refresh_interval

# per-step stiffnesses eta K a pilot might measure (an overdamped on-policy reward curve decays at a
# rate of about eta K / (1 - mu) per step)
STIFFNESSES = (1e-3, 1e-2, 0.1, 0.5)
SUCCESS_RATES = (0.1, 0.3, 0.5, 0.7, 0.9)
T_SCAN = 10_000  # the largest T the threshold scans look at
DUAL_CLIP_SHARE = 0.01  # the share of tokens silenced by the dual clip at which its reach is said
NEEDS_PILOT = (
    "the stiffness per step eta K (the reward curve's decay rate): the regime, the max safe T and lr",
    "the gradient-noise level: the stationary reward noise and the G for a target noise",
    "the success rate p: the zero-std share p^G + (1 - p)^G of this G",
    "the per-step policy drift (sampler-vs-current log-ratio spread, KL or clip fraction): the clip fractions vs T "
    "and the collapse risk of a large move",
)



def hparams_text(hp, refresh_exact: float | None = None) -> str:
    """One line of the theory's hyperparameters as a config maps them (`predict` and `diagnose` print it): lr, the
    optimizer with its heavy-ball mu, T (and the exact optimizer steps per rollout where they differ), G and N
    prompts per step, the clip range, beta and the correction."""
    T = hp.refresh_interval
    exact = "" if refresh_exact is None or refresh_exact == T else f" (exactly {refresh_exact:g})"
    groups = ("G -> infinity" if hp.group_size is None else
              f"G = {hp.group_size}, N = {hp.num_groups} group{'' if hp.num_groups == 1 else 's'} per step")
    return (f"lr {hp.lr:g}, {hp.optimizer.name} (mu = {hp.momentum:g}), T = {T}{exact} optimizer step"
            f"{'' if T == 1 else 's'} per rollout, {groups}, clip [{_low_clip(hp.clip_low)}, {hp.clip_high:g}], "
            f"beta = {hp.kl_coef:g}, correction {hp.correction}"
            + ("" if hp.ratio_cap is None else f", dual clip c = {hp.ratio_cap:g}"))

def _low_clip(low: float) -> str:
    """eps_low as a reader knows it: `none` where the config sets no lower clip (`_clip_modes.no_lower_clip`'s value
    just below 1, whose 0.999999 reads as a setting)."""
    return "none" if low >= NO_LOWER_CLIP else f"{low:g}"


@dataclass(frozen=True)
class ConfigForecast:
    """The config-only answer (module docstring)."""

    setup: RunSetup
    momentum: float
    stiffness_bound: float  # x_max(T, mu), exact discrete, all forces stale
    stiffness_bound_continuous: float | None  # 2 (1 - mu) / (T - 1); None at T = 1 (no stale-lag bound)
    stiffness_bound_on_policy: float  # x_max(1, mu)
    max_safe_refresh: dict[float, int | None]  # per stiffness x: the largest stable T (None: stable up to T_SCAN)
    zero_std_share: dict[float, float]  # per success rate p: p^G + (1 - p)^G at the config's G

    def to_json(self) -> dict[str, Any]:
        return plain({"config": self.setup.to_json(), "momentum": self.momentum,
                "stiffness_bound": self.stiffness_bound, "stiffness_bound_continuous": self.stiffness_bound_continuous,
                "stiffness_bound_on_policy": self.stiffness_bound_on_policy,
                "max_safe_refresh_interval_by_stiffness": {str(x): t for x, t in self.max_safe_refresh.items()},
                "zero_std_share_by_success_rate": {str(p): s for p, s in self.zero_std_share.items()},
                "needs_a_pilot": list(NEEDS_PILOT)})

    def summary_lines(self) -> list[str]:
        hp, s = self.setup.hparams, self.setup
        cont = "none at T = 1" if self.stiffness_bound_continuous is None else f"{self.stiffness_bound_continuous:.4g}"
        lines = [
            f"config: {s.framework}",
            f"  {hparams_text(hp, s.refresh_exact)}",
            "from the config alone:",
            f"  stable while the stiffness per step eta K < {self.stiffness_bound:.4g} (exact discrete, all forces stale; "
            f"continuous rule: {cont}; on-policy, T = 1: {self.stiffness_bound_on_policy:.4g})",
            "  largest stable T by stiffness per step: " + ", ".join(
                f"eta K = {x:g}: {'> ' + str(T_SCAN) if t is None else t}" for x, t in self.max_safe_refresh.items()),
            *self._group_lines(),
            *self._dual_clip_lines(),
            "needs a pilot log (predict --pilot LOG): " + "; ".join(NEEDS_PILOT),
        ]
        if hp.optimizer.name == "adam":
            lines.insert(4, "  (Adam: eta K = lr (1 - b1) K / sqrt(s), s the gradient's second moment; an LLM learning "
                            "rate says nothing about eta K without a pilot)")
        return lines + [f"note: {n}" for n in s.notes]

    def _dual_clip_lines(self) -> list[str]:
        """The dual clip's reach (`theory.dual_clip`): the drift at which it silences DUAL_CLIP_SHARE of the tokens."""
        hp = self.setup.hparams
        if hp.ratio_cap is None:
            return []
        if hp.refresh_interval < 2:
            return [f"  dual clip c = {hp.ratio_cap:g}: on-policy every ratio is 1, so it silences no token"]
        drift = drift_for_share(DUAL_CLIP_SHARE, hp.refresh_interval, hp.ratio_cap)
        return [f"  dual clip c = {hp.ratio_cap:g}: it silences {DUAL_CLIP_SHARE:.0%} of the tokens (negative advantage, "
                f"ratio past c) at T = {hp.refresh_interval} only past a per-step log-ratio drift of {drift:.3g} "
                "(a pilot measures the drift)"]

    def _group_lines(self) -> list[str]:
        hp = self.setup.hparams
        if hp.group_size is None:
            return ["  G -> infinity (no group size given): the expected dynamics, no sampling noise, no zero-std groups"]
        return [f"  zero-std share at G = {hp.group_size} by success rate: "
                + ", ".join(f"p = {p:g}: {v:.3g}" for p, v in self.zero_std_share.items()),
                f"  reward noise (std) scales as 1 / sqrt(N G) = 1 / sqrt({hp.num_groups * hp.group_size})"]


def config_forecast(setup: RunSetup) -> ConfigForecast:
    """The config-only answer for a `RunSetup` (module docstring for each quantity)."""
    hp = setup.hparams
    mu, T = hp.momentum, hp.refresh_interval
    bound = float(critical_learning_rate(1.0, 0.0, mu, T))
    on_policy = 2.0 * (1.0 + mu)  # x_max(1, mu) in closed form (heavy ball's edge; tests check it against the scan)
    t_c = critical_refresh_interval(np.asarray(STIFFNESSES), 0.0, 1.0, mu, t_max=T_SCAN)
    safe = {x: (None if int(t) == STABLE else int(t) - 1) for x, t in zip(STIFFNESSES, t_c)}
    G = hp.group_size
    shares = {p: float(zero_variance_probability(p, G)) for p in SUCCESS_RATES} if G else {}
    return ConfigForecast(setup=setup, momentum=mu, stiffness_bound=bound,
                          stiffness_bound_continuous=None if T == 1 else 2.0 * (1.0 - mu) / (T - 1),
                          stiffness_bound_on_policy=on_policy, max_safe_refresh=safe, zero_std_share=shares)


def stiffness_bounds(momentum: float, refresh_intervals) -> np.ndarray:
    """x_max(T, mu) for each T (exact discrete, all forces stale): the stable region of the (eta K, T) plane."""
    return np.array([float(critical_learning_rate(1.0, 0.0, momentum, int(T))) for T in refresh_intervals])


def stability_grid(stiffness_per_lr: float, momentum: float, lrs, refresh_intervals) -> np.ndarray:
    """rho(M(T)) > 1 at eta K = stiffness_per_lr x lr, on the grid (len(refresh_intervals), len(lrs)):
    the (lr, T) stability map when the stiffness scales with the learning rate (SGD; Adam in its
    linear regime at a fixed second moment)."""
    x = stiffness_per_lr * np.asarray(lrs, dtype=float)
    return stiffness_bounds(momentum, refresh_intervals)[:, None] <= x[None, :]
