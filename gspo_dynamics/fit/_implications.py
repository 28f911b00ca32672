"""What a fitted reward curve implies for the run's hyperparameters (continuous rule + exact discrete map).

The continuous rule (`theory.continuous`) for heavy-ball momentum mu, refresh interval T and per-step
stiffness kappa = eta lambda (learning rate times the total curvature lambda = a + b), a fraction f of
it acting through stale forces (a = f lambda):

    m = (1 + mu) / 2,    c = (1 - mu) - kappa f (T - 1) / 2,    k = kappa.

Only the product kappa = eta lambda shapes the trajectory (the update sees eta a and eta b), so a fit
measures kappa; the curvature scale is lambda = kappa / eta. From a fit:

  exponential   tau -> kappa by `theory.trajectory.curvature_from_timescale` (overdamped branch, eta = 1);
  oscillator    the fit has m = 1, so kappa = m k_fit and the measured damping is c = m c_fit; where that
                c disagrees with the rule's c at kappa (by > Z_MEASURED s.e.) a note says so: the
                fitted inertia then has other sources, and only the exact threshold decides stability.

  damping margin        c / (1 - mu) = 1 - kappa f (T - 1) / (2 (1 - mu))   (1 on-policy, 0 at the edge);
                        measured from c when the fit rings, predicted from kappa otherwise. A rule of
                        thumb: stability is decided by the exact discrete threshold below;
  exact regime          `theory.linear.discrete_regime` of the monodromy M(T) at kappa: overdamped,
                        oscillatory (stable, rings) or unstable (T >= critical T);
  critical T            continuous: smallest integer T >= 1 + 2 (1 - mu) / (kappa f);
                        exact: the monodromy scan `theory.linear.critical_refresh_interval`;
  max safe T            critical T - 1 (exact when both are available), with the range from kappa +- se;
  plateau, time to it   R_inf and the step after which R stays within 5% of the total rise.
                        Null, with the reason, where the data do not identify them (`fit._identified`).

Adam is analysed in its linear regime as heavy-ball with mu = b1 and eta_hb = lr (1 - b1)/sqrt(s_bar);
s_bar is not in a log, so lambda is reported per unit of lr (1 - b1) (it absorbs 1/sqrt(s_bar)); kappa,
the margin and the thresholds do not need it. Uncertainties: delta method from the fit covariance.

Two premises of the thresholds are checked against the fit (both were violated by the trainer's
binary `count` runs, where the thresholds above predicted T_c = 3 and pg stayed monotone to T = 32):

  interior plateau   the thresholds linearise around a fixed point z* with a restoring force. Given the
                     reward's range [lo, hi] (`reward_range`), a plateau at an end of it,
                     |R_inf - end| <= Z_MEASURED max(se(R_inf), residual scatter), is saturation,
                     not a fixed point: the policy runs to the bound (z* = +-inf;
                     `theory.bandit.fixed_point` reports interior=False without a KL restoring force),
                     every stale drive still points toward the bound, and no refresh interval is
                     unstable (`theory.nonlinear.critical_refresh_interval_from_start` is STABLE).
                     The thresholds are then withheld (None) and `interior_plateau` is False.
  linear regime      on-policy (T = 1) one step is M(1) = [[1 - eta l, eta mu], [-l, mu]] (l = a + b,
                     `theory.linear`), det M(1) = mu for every stiffness, so rho(M(1)) >= sqrt(mu): a linear
                     heavy-ball run relaxes at most at the rate r_max = -ln(mu) / 2 per step (tau >= 19
                     steps at mu = 0.9). A fit whose slowest decay rate r_fit (exponential 1/tau;
                     oscillator (c - sqrt(c^2 - 4k)) / 2, or c / 2 when it rings) exceeds r_max by more
                     than Z_MEASURED se is outside the optimizer's linear regime (Adam's normalised
                     steps, its bias-corrected start): `linear_regime` is False and a note says that the
                     thresholds extrapolate a model the curve does not follow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from gspo_dynamics._errors import ConfigError
from gspo_dynamics._plain import plain
from gspo_dynamics.fit._identified import check_reward_range, reward_reach_of, stiffness_unidentified, unidentified
from gspo_dynamics.fit._trajectory import EXTRAPOLATION_LIMIT, TrajectoryFit
from gspo_dynamics.fit._uncertainty import partial_derivative
from gspo_dynamics.theory import continuous, linear
from gspo_dynamics.theory.hyperparams import SGD, Hyperparams
from gspo_dynamics.theory.trajectory import curvature_from_timescale, fastest_relaxation_rate

# Fraction of the curvature acting through stale forces. 1 is the no-correction case with no KL
# (every force computed at the sampling policy): the most lag, so the smallest (safest) critical T.
STALE_FRACTION = 1.0
# The measured-damping threshold is used at margin + Z_MEASURED standard errors: noise alone
# (a margin estimate one s.e. low) must not move the advised refresh interval.
Z_MEASURED = 2.0
# Largest refresh interval scanned for the exact threshold; beyond it the run is called safe.
T_SCAN_MAX = 1000
BOUND_BAND = 0.05  # `_interior_plateau`: the scatter term's cap, as a share of the reward's range


@dataclass(frozen=True)
class Estimate:
    """A number and its standard error (None where it has none)."""

    value: float
    stderr: float | None = None

    def __str__(self) -> str:
        if self.stderr is None or not math.isfinite(self.stderr):
            return f"{self.value:.4g}"
        return f"{self.value:.4g} +- {self.stderr:.2g}"


@dataclass(frozen=True)
class Implications:
    """Quantities implied by a fit; those needing hyperparameters are None without them."""

    plateau: Estimate  # R_inf
    time_to_plateau: Estimate  # step at which R is within 5% of the rise for good (inf: never)
    plateau_reached: bool  # time_to_plateau <= last step of the log
    remaining_rise: Estimate  # R_inf - fitted R at the last step (> 0: still rising)
    damping_ratio: Estimate | None  # zeta of the oscillator fit (None for the exponential: zeta -> inf)
    stiffness_per_step: Estimate | None = None  # kappa = eta lambda
    curvature_scale: Estimate | None = None  # lambda = kappa / eta (Adam: per unit lr (1 - b1))
    damping_margin: Estimate | None = None  # c / (1 - mu)
    damping_margin_source: str | None = None  # "measured" (oscillator c) | "predicted" (from kappa)
    refresh_interval: int | None = None  # the run's T
    critical_refresh_interval: int | None = None  # exact discrete (None: stable up to T_SCAN_MAX)
    critical_refresh_interval_continuous: int | None = None
    critical_refresh_interval_measured: int | None = None  # from the oscillator's measured damping (T > 1)
    exact_regime: str | None = None  # discrete_regime(M(T)) at kappa: overdamped | oscillatory | unstable
    plateau_extrapolated: bool = False  # R_inf lies > EXTRAPOLATION_LIMIT x the observed range outside it
    max_safe_refresh_interval: int | None = None  # one below the earliest threshold above
    max_safe_refresh_interval_range: tuple[int, int] | None = None  # from kappa +- stderr
    interior_plateau: bool | None = None  # False: R_inf at an end of reward_range (no threshold); None: not checked
    reward_range: tuple[float, float] | None = None  # as given: the least and greatest reward the task can give
    decay_rate: Estimate | None = None  # r_fit, the fit's slowest decay rate per step (module docstring)
    linear_regime: bool | None = None  # on-policy fits: r_fit <= -ln(mu)/2 within Z_MEASURED se; None: not checked
    notes: list[str] = field(default_factory=list)
    unidentified: dict[str, str] = field(default_factory=dict)  # plateau, remaining_rise, time_to_plateau,
    # stiffness_per_step: why not

    def theory_calls_stable(self) -> bool:
        """Whether the exact discrete theory, where it applies (an interior plateau, a damping margin), puts the
        refresh interval within its largest stable T in the overdamped regime: then no ringing is possible at the
        fitted stiffness, and oscillation-like evidence in the data is no instability to report."""
        if self.interior_plateau is False or self.damping_margin is None:
            return False
        safe = self.max_safe_refresh_interval
        return not (safe is not None and self.refresh_interval > safe) and self.exact_regime != "oscillatory"

    def to_json(self) -> dict:
        out = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if isinstance(value, Estimate):
                value = {"value": value.value, "stderr": value.stderr}
            out[name] = None if name in self.unidentified else value  # not identified: null, `unidentified` says why
        return plain(out)


def _exact_t(kappas, mu: float) -> list[int | None]:
    """The exact critical refresh interval of each per-step stiffness in `kappas` (kappa +- its se: one scan over
    them, `theory.linear.critical_refresh_interval` vectorised over configurations); None = stable to T_SCAN_MAX."""
    k = np.asarray(kappas, dtype=float)
    with np.errstate(over="ignore", invalid="ignore"):
        t = linear.critical_refresh_interval(k * STALE_FRACTION, k * (1.0 - STALE_FRACTION), 1.0, mu, t_max=T_SCAN_MAX)
    return [int(v) or None for v in np.atleast_1d(t)]


def _kappa_from_tau(tau: float, mu: float, T: int) -> float:
    return curvature_from_timescale(tau, 1.0, momentum=mu, refresh_interval=T, stale_fraction=STALE_FRACTION)


def _decay_rate(model: str, p: dict[str, float]) -> float:
    """r_fit, the slowest decay rate per step: 1/tau, or for m R'' + c R' + k R = 0 with m = 1 the
    slowest root rate (c - sqrt(c^2 - 4k)) / 2 (overdamped) or the envelope rate c / 2 (ringing)."""
    if model == "exponential":
        return 1.0 / p["tau"] if p["tau"] > 0.0 else math.inf
    c, k = p["damping"], p["stiffness"]
    disc = c * c - 4.0 * k
    return (c - math.sqrt(disc)) / 2.0 if disc >= 0.0 else c / 2.0


def _interior_plateau(fit: TrajectoryFit, reward_range) -> bool | None:
    """False when R_inf is within Z_MEASURED max(se(R_inf), min(s, BOUND_BAND (hi - lo))) of an end of
    reward_range (or beyond it), s the residual scatter of one logged point: a plateau that the curve's own
    noise cannot tell from the bound shows no interior equilibrium (and a saturating approach, algebraic in t,
    is fitted by a plateau a little short of the bound with a small se: the scatter term covers that shortfall).
    "A little" is at most BOUND_BAND of the range: a noisy log's scatter (a success rate over a few groups,
    s ~ 0.1-0.2) would otherwise put a plateau of 0.6-0.8 at the bound of 1, where its standard error places it
    well inside. None when that band reaches both ends, or when R_inf's standard error is not finite and the
    scatter term alone does not put it at a bound (the fit does not locate the plateau)."""
    lo, hi = reward_range
    se = fit.stderr["r_inf"]
    located = math.isfinite(se)
    tol = Z_MEASURED * max(se if located else 0.0, min(fit.residual_std, BOUND_BAND * (hi - lo)))
    if not math.isfinite(tol):
        return None
    r_inf = fit.params["r_inf"]
    at_hi, at_lo = r_inf >= hi - tol, r_inf <= lo + tol
    if at_hi and at_lo:  # the band reaches both ends: the fit cannot tell where the plateau is
        return None
    if not (at_hi or at_lo):
        return True if located else None
    return False


def max_safe_text(imp: Implications) -> str:
    """The largest stable T as text: the number, "withheld" at a plateau on the reward's bound, or "not bounded up
    to T_SCAN_MAX" (never Python's None)."""
    if imp.max_safe_refresh_interval is not None:
        return str(imp.max_safe_refresh_interval)
    if imp.interior_plateau is False:
        return "withheld (the plateau is at the reward's bound: no threshold)"
    return f"not bounded up to T = {T_SCAN_MAX}"


def max_safe_range_text(imp: Implications) -> str:
    """The largest stable T over the stiffness +- one standard error, "" without one ("beyond T_SCAN_MAX" at the
    scan's end)."""
    span = imp.max_safe_refresh_interval_range
    if span is None:
        return ""
    high = f"beyond {T_SCAN_MAX}" if span[1] >= T_SCAN_MAX else str(span[1])
    return f"from {span[0]} to {high} within one standard error of the stiffness"


def implications(fit: TrajectoryFit, hparams: Hyperparams | None = None, *,
                 reward_range: tuple[float, float] | None = None) -> Implications:
    """Curvature, damping margin, safe refresh interval and plateau implied by `fit` (module docstring).

    reward_range: (lo, hi), the least and greatest reward the task can give ((0, 1) for a binary
    reward), or None (not known: the interior-plateau premise is not checked).

    Steps: what the curve alone gives (`_curve_facts`); with hyperparameters, the linear-regime check
    at T = 1 (`_check_linear_regime`), the stiffness (`_stiffness`), the damping margin
    (`_damping_margin`) and the refresh-interval thresholds (`_thresholds`).
    """
    if not isinstance(fit, TrajectoryFit):
        raise TypeError(f"expected a TrajectoryFit, got {type(fit).__name__}")
    if hparams is not None and not isinstance(hparams, Hyperparams):
        raise ConfigError(f"hparams must be a Hyperparams or None, got {type(hparams).__name__}")
    check_reward_range(reward_range)
    notes: list[str] = []
    out = _curve_facts(fit, reward_range, notes)
    if hparams is None:
        notes.append("no hyperparameters given: curvature, damping margin and the safe refresh interval need them")
        return Implications(**out, notes=notes)
    mu, T = hparams.momentum, hparams.refresh_interval
    if T == 1 and not stiffness_unidentified(fit):  # a time scale the data do not identify gives no rate to check
        out["linear_regime"] = _check_linear_regime(out["decay_rate"], mu, notes)
    kappa, kappa_se, measured = _stiffness(fit, mu, T, notes)
    out["refresh_interval"] = T
    if kappa is None or not kappa > 0:
        unread = stiffness_unidentified(fit)
        if unread:
            out["unidentified"] = {**out["unidentified"], "stiffness_per_step": unread[0]}
        return Implications(**out, notes=notes)
    lr_nominal = hparams.lr if isinstance(hparams.optimizer, SGD) else hparams.lr * (1.0 - mu)
    if not isinstance(hparams.optimizer, SGD):
        notes.append("Adam: the curvature scale is per unit of lr (1 - beta1) and absorbs 1/sqrt(second moment)")
    out["stiffness_per_step"] = Estimate(kappa, kappa_se)
    out["curvature_scale"] = Estimate(kappa / lr_nominal, None if kappa_se is None else kappa_se / lr_nominal)
    out["damping_margin_source"] = "measured" if measured else "predicted"
    out["damping_margin"] = _damping_margin(fit, kappa, kappa_se, mu, T, measured, notes)
    if out.get("interior_plateau") is False:
        lo, hi = reward_range
        notes.append(f"the plateau {fit.params['r_inf']:.4g} cannot be told from the reward's bound ({lo:g} or {hi:g}) "
                     "within the curve's own noise: saturation, "
                     "not a fixed point with a restoring force; every stale drive points toward the bound, so no "
                     "refresh interval is unstable in the reduced model (no threshold given)")
        return Implications(**out, notes=notes)
    out.update(_thresholds(kappa, kappa_se, out["damping_margin"], mu, T, measured, notes))
    notes.append(f"stale fraction of the curvature assumed {STALE_FRACTION:g} (all forces stale: the safe side)")
    return Implications(**out, notes=notes)


def _delta_stderr(fit: TrajectoryFit, f) -> float | None:
    """se of f(params) by the delta method, None where a gradient or the covariance is not finite
    (an inf covariance: a parameter not identified)."""
    grad = np.array([partial_derivative(f, fit.params, n) for n in fit.fitted])
    ok = np.all(np.isfinite(grad)) and np.all(np.isfinite(fit.cov))
    var = float(grad @ fit.cov @ grad) if ok else math.nan
    return math.sqrt(var) if var >= 0 else None


def _curve_facts(fit: TrajectoryFit, reward_range, notes: list[str]) -> dict:
    """What the curve alone gives: plateau, time to it, the rise left, damping ratio, decay rate;
    with a reward range, whether the plateau is interior; a note on an extrapolated plateau."""
    q, se = fit.params, fit.stderr
    t_p, t_p_se = fit.time_to_plateau()
    remaining = q["r_inf"] - float(fit.predict(fit.t_end))

    def rise_left(p):
        return p["r_inf"] - float(TrajectoryFit.predict(_with(fit, p), fit.t_end))

    out = dict(
        plateau=Estimate(q["r_inf"], se["r_inf"]),
        time_to_plateau=Estimate(t_p, t_p_se),
        plateau_reached=bool(t_p <= fit.t_end),
        remaining_rise=Estimate(remaining, _delta_stderr(fit, rise_left)),
        damping_ratio=Estimate(fit.damping_ratio, fit.damping_ratio_stderr) if fit.model == "oscillator" else None,
    )
    out["decay_rate"] = Estimate(_decay_rate(fit.model, q), _delta_stderr(fit, lambda p: _decay_rate(fit.model, p)))
    out["unidentified"] = unidentified((q["r_inf"], se["r_inf"]), out["remaining_rise"].stderr, (t_p, t_p_se), fit.t_end,
                                       reward_reach_of(fit.r_range, reward_range), fit.regime == "unstable")
    if reward_range is not None:
        out["interior_plateau"] = _interior_plateau(fit, reward_range)
        out["reward_range"] = (float(reward_range[0]), float(reward_range[1]))
        if out["interior_plateau"] is None:
            notes.append("the fit does not identify the plateau: whether it is the reward's bound is not known")
    if fit.plateau_extrapolation > EXTRAPOLATION_LIMIT:
        out["plateau_extrapolated"] = True
        lo, hi = fit.r_range
        notes.append(f"the fitted plateau lies outside the observed rewards [{lo:.4g}, {hi:.4g}] by "
                     f"{min(fit.plateau_extrapolation, 10):.2g}{'+' if fit.plateau_extrapolation > 10 else ''} x their "
                     "range: an extrapolation, not a measurement")
    return out


def _check_linear_regime(decay: Estimate, mu: float, notes: list[str]) -> bool:
    """On-policy (T = 1): False when the curve relaxes faster than linear heavy-ball can."""
    r_max = -math.log(mu) / 2.0 if mu > 0.0 else math.inf
    r_se = decay.stderr
    linear_regime = not decay.value - Z_MEASURED * (r_se if r_se is not None and math.isfinite(r_se) else 0.0) > r_max
    if not linear_regime:
        notes.append(f"the curve relaxes at {decay} per step, faster than a linear heavy-ball run with "
                     f"mu = {mu:g} can (rho(M(1)) >= sqrt(mu): at most {r_max:.3g} per step, tau >= {1 / r_max:.3g}): "
                     "it is outside the optimizer's linear regime (for Adam: normalised steps, the bias-corrected "
                     "start), and the thresholds below extrapolate a model the curve does not follow")
    return linear_regime


def _stiffness(fit: TrajectoryFit, mu: float, T: int, notes: list[str]) -> tuple[float | None, float | None, bool]:
    """(kappa, se, measured): the per-step stiffness, measured by the oscillator fit (m = 1, so
    kappa = m k with m = (1 + mu) / 2) or inferred from the exponential's time scale; none (a note says why) where
    the data do not identify the parameter it is read from (`TrajectoryFit.unidentified_params`)."""
    q, se = fit.params, fit.stderr
    unread = stiffness_unidentified(fit)
    if unread:  # no stiffness, nor any threshold read from one
        notes.append(f"{unread[0]} ({unread[1]}): no stiffness is read from it; a longer pilot may give one")
        return None, None, False
    if fit.model == "oscillator":  # the fit's m = 1 oscillator carries c and k
        m = (1.0 + mu) / 2.0
        return m * q["stiffness"], m * se["stiffness"], True
    tau_c = 1.0 / fastest_relaxation_rate(1.0, mu, T, STALE_FRACTION)
    tau, tau_se = q["tau"], se.get("tau")
    if tau < tau_c:  # no curvature relaxes this fast: none is read, the note says how far off it is
        noisy = tau_se is not None and math.isfinite(tau_se) and tau + Z_MEASURED * tau_se >= tau_c
        notes.append(f"the fitted time scale tau = {tau:.4g}"
                     + (f" +- {tau_se:.2g}" if tau_se is not None and math.isfinite(tau_se) else "")
                     + f" is shorter than any curvature gives these hyperparameters (tau >= {tau_c:.4g} steps, "
                     "critical damping): no stiffness is read from it"
                     + ("; it lies within its noise of that bound, so a longer pilot may give one" if noisy else ""))
        return None, None, False
    try:  # the standard error's finite differences step tau by a little: past tau_c they have no curvature either
        return _kappa_from_tau(tau, mu, T), _delta_stderr(fit, lambda p: _kappa_from_tau(p["tau"], mu, T)), False
    except ConfigError:
        notes.append(f"the fitted time scale tau = {tau:.4g} lies at the fastest relaxation these hyperparameters "
                     f"allow (tau >= {tau_c:.4g} steps): no stiffness with a standard error is read from it")
        return None, None, False


def _damping_margin(fit: TrajectoryFit, kappa: float, kappa_se: float | None, mu: float, T: int, measured: bool,
                    notes: list[str]) -> Estimate:
    """The damping margin: measured (c of the oscillator fit) or predicted by the rule at kappa; a
    note when the measured one disagrees with the rule."""
    m = (1.0 + mu) / 2.0
    slope = STALE_FRACTION * (T - 1) / (2.0 * (1.0 - mu))
    if not measured:
        return Estimate(1.0 - kappa * slope, None if kappa_se is None else kappa_se * slope)
    margin = m * fit.params["damping"] / (1.0 - mu)
    margin_se = m * fit.stderr["damping"] / (1.0 - mu)
    rule = 1.0 - kappa * STALE_FRACTION * (T - 1) / (2.0 * (1.0 - mu))  # what the rule gives at this kappa
    if margin_se is not None and abs(margin - rule) > Z_MEASURED * margin_se:
        notes.append(f"the measured damping margin {margin:.3g} +- {margin_se:.2g} disagrees with the rule's {rule:.3g} "
                     f"for these hyperparameters (T = {T}, mu = {mu:g}): the fitted inertia is not only the optimizer's "
                     "(e.g. averaged rows, a curvature that changes along the run); stability follows the exact theory")
    return Estimate(margin, margin_se)


def _thresholds(kappa: float, kappa_se: float | None, damping_margin: Estimate, mu: float, T: int, measured: bool,
                notes: list[str]) -> dict:
    """Critical refresh intervals (exact, continuous, from the measured damping), the exact regime at
    T, the largest safe T and its range over the stiffness's se."""
    margin, margin_se = damping_margin.value, damping_margin.stderr
    exact = _exact_t([kappa], mu)[0]
    cont = int(continuous.critical_refresh_interval(kappa * STALE_FRACTION, kappa * (1.0 - STALE_FRACTION), 1.0, mu,
                                                    t_max=T_SCAN_MAX)) or None
    out = {"critical_refresh_interval": exact, "critical_refresh_interval_continuous": cont}
    t_c = exact if exact is not None else cont
    from_measured = False
    optimistic = margin + Z_MEASURED * (margin_se if margin_se is not None and math.isfinite(margin_se) else math.inf)
    out["exact_regime"] = str(linear.discrete_regime(
        linear.monodromy(kappa * STALE_FRACTION, kappa * (1.0 - STALE_FRACTION), 1.0, mu, T)))
    if measured and T > 1 and optimistic < 1.0:
        # The measured damping extrapolated along the rule's line c(T') = c0 (1 - (1 - margin)(T'-1)/(T-1)):
        # zero at T' = 1 + (T - 1) / (1 - margin). Taken at margin + Z_MEASURED se (the latest threshold
        # the data allow), and kept when even that is earlier than the stiffness-based threshold.
        t_measured = math.ceil(1.0 + (T - 1) / (1.0 - optimistic)) if optimistic > 0 else T
        out["critical_refresh_interval_measured"] = t_measured
        if t_c is None or t_measured < t_c:
            t_c, from_measured = t_measured, True
            notes.append(f"the measured damping puts the threshold at T = {t_measured}, before the stiffness-based one")
    out["max_safe_refresh_interval"] = None if t_c is None else max(t_c - 1, 0)
    if kappa_se is not None and math.isfinite(kappa_se) and not from_measured:
        lo_k, hi_k = max(kappa - kappa_se, kappa * 1e-6), kappa + kappa_se
        hi_t, lo_t = _exact_t([lo_k, hi_k], mu)  # less stiffness: a later threshold
        if lo_t is not None:
            out["max_safe_refresh_interval_range"] = (max(lo_t - 1, 0), T_SCAN_MAX if hi_t is None else max(hi_t - 1, 0))
    if t_c is None:
        notes.append(f"no refresh interval up to {T_SCAN_MAX} is unstable at this stiffness")
    return out


def _with(fit: TrajectoryFit, params: dict[str, float]) -> TrajectoryFit:
    from dataclasses import replace

    return replace(fit, params=params)
