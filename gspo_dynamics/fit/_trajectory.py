"""Fit a measured reward curve with the closed forms, with uncertainties and model selection.

Three nested models of R(t) (t in optimizer steps since the first point; `_closed_form` fits them):

  exponential   R_inf - (R_inf - R_0) exp(-t/tau)                       3 parameters (massless limit)
  slow start    m R'' + c R' + k (R - R_inf) = 0,  R'(0) = 0            4 parameters (inertia from rest)
  oscillator    the same with a free initial velocity v_0               5 parameters

Selection (Schwarz 1978): BIC = n ln(RSS/n) + p ln n; 2 ln(Bayes factor) ~ BIC_simple - BIC_complex.
The exponential is kept unless an oscillator model beats it by `EVIDENCE_BIC` (Kass & Raftery 1995:
> 6 is "strong" evidence), so a curve is only called inertial or oscillatory when the data say so:

  inertia      the slow-start model beats the exponential by EVIDENCE_BIC;
  oscillation  the selected oscillator has complex roots with zeta + Z_SIGNIFICANT se(zeta) < 1, a
               periodic component around the exponential passes Fisher's g test at OSCILLATION_P, and it
               shows at least one full damped period over the data (w span >= 2 pi).
An oscillator whose period is shorter than MIN_PERIOD_ROWS logged rows is aliased noise and is
not selected.
An oscillator whose plateau lies more than EXTRAPOLATION_LIMIT x the observed range outside the
observed rewards, where the exponential's does not, wins only by extrapolating: the exponential is kept.
Whether the curve moves at all: the chosen model against a constant, delta_bic_flat = BIC(flat) - BIC(chosen), with
BIC(flat) = n ln(sum (r_i - mean r)^2 / n) + ln n on the same points; at most EVIDENCE_BIC, a flat line fits about as
well, and the curve's parameters (its stiffness) are its noise's (`predict` withholds the lr bound they would give).

Inside `fit.warm_start(previous)` (the live guard) the oscillator models are polished from `previous`'s optima instead
of the multi-start (`fit._warm`); `selection["warm_start"]` then says so.

Uncertainties: cov = s^2 (J^T J)^{-1}, s^2 = RSS / (n - p), J the Jacobian of the model with respect
to its natural parameters at the optimum (central differences); stderr = sqrt(diag cov). Derived
quantities (zeta, time to plateau) get theirs by the delta method, var f = g^T cov g (`fit._uncertainty`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from scipy.optimize import brentq

from gspo_dynamics._errors import ConfigError
from gspo_dynamics._plain import plain
from gspo_dynamics.fit._closed_form import FitResult, finite_sorted, fit_exponential
from gspo_dynamics.fit._identified import nulled, params_text, params_unidentified, reward_reach_of
from gspo_dynamics.fit._periodogram import periodic_component
from gspo_dynamics.fit._uncertainty import covariance, model_curve, partial_derivative, standard_errors
from gspo_dynamics.fit._warm import current_warm_start, multi_start, warm_models
from gspo_dynamics.theory.trajectory import Oscillator, single_exponential, trajectory

EVIDENCE_BIC = 6.0  # BIC gain an extra mechanism needs: "strong" evidence on the Kass-Raftery scale
Z_SIGNIFICANT = 2.0  # standard errors by which zeta must sit below 1 to call the roots complex (~95%)
CRITICAL_BAND = 0.05  # |zeta - 1| below this is reported as "critical": finer than noisy logs resolve
MAX_FIT_POINTS = 1000  # longer logs are fitted on equal-count bin means (R^2, residuals on all points)
OSCILLATION_P = 0.01  # Fisher g test level: oscillation also needs a periodic component at 1% significance
PERIODS_SEEN = 1.0  # oscillation needs at least one full damped period inside the data (w span >= 2 pi)
MIN_PERIOD_ROWS = 4.0  # a fitted period shorter than 4 logged rows is aliasing of noise, not a mode: rejected
PLATEAU_TOLERANCE = 0.05  # "reached the plateau": within 5% of the total rise R_inf - R_0, for good
EXTRAPOLATION_LIMIT = 0.25  # a plateau more than 1/4 of the observed range outside it is an extrapolation


@dataclass(frozen=True)
class TrajectoryFit:
    """The selected closed-form fit of one reward curve, with evidence and uncertainties.

    Times in `predict` are the log's own steps (the fit works on t - t_start internally).
    """

    model: str  # "exponential" | "oscillator"
    variant: str  # "exponential" | "slow_start" (v0 = 0) | "oscillator" (free v0)
    regime: str  # "overdamped" | "critical" | "underdamped" | "unstable" (fitted damping c <= 0)
    params: dict[str, float]  # exponential: r_inf, r0, tau; oscillator: r_inf, r0, damping, stiffness, v0 (m = 1)
    stderr: dict[str, float]  # same keys; 0 for a fixed parameter, inf where the data do not identify it
    cov: np.ndarray = field(repr=False)  # (p, p) covariance of the fitted parameters, order `fitted`
    fitted: tuple[str, ...] = ()  # names of the fitted parameters, the order of `cov`
    r_squared: float = math.nan  # 1 - SS_res/SS_tot over all finite points
    residual_std: float = math.nan  # sqrt(RSS / (n - p)) over all finite points
    n: int = 0  # finite points used
    t_start: float = 0.0  # step of the first finite point (t = 0 of the closed form)
    t_end: float = 0.0  # step of the last finite point
    inertia: bool = False  # data support a slow start (oscillator from rest beats the exponential)
    oscillation: bool = False  # data support oscillation (significantly complex roots, seen in the data)
    selection: dict = field(default_factory=dict)  # {"bic": {...}, "delta_bic": ..., "rule": ...}
    damping_ratio: float = math.nan  # zeta = c / (2 sqrt(k)) of the oscillator fit (inf for the exponential)
    damping_ratio_stderr: float = math.nan
    r_range: tuple[float, float] = (math.nan, math.nan)  # observed (min, max) of the finite rewards
    plateau_extrapolation: float = 0.0  # `plateau_extrapolation` of R_inf: > EXTRAPOLATION_LIMIT is mostly unseen
    models: dict = field(default_factory=dict, repr=False)  # name -> each model's parameters, reward units (`warm_start`)

    def predict(self, t) -> np.ndarray:
        """The fitted R at steps t >= t_start."""
        return model_curve(self.model, self.params, np.asarray(t, dtype=float) - self.t_start)

    def time_to_plateau(self) -> tuple[float, float]:
        """(t_p, stderr): first step after which |R - R_inf| <= PLATEAU_TOLERANCE |R_inf - R_0| for good.

        Exponential: t_p = t_start + tau ln(1 / PLATEAU_TOLERANCE) exactly. Oscillator: found on a
        grid by the last crossing of the band (inf if c <= 0). Stderr by the delta method.
        """
        value = _plateau_time(self.model, self.params)
        if not math.isfinite(value):
            return math.inf, math.nan
        grad = np.array([partial_derivative(lambda q: _plateau_time(self.model, q), self.params, name) for name in self.fitted])
        ok = np.all(np.isfinite(grad)) and np.all(np.isfinite(self.cov))  # inf cov: a parameter not identified
        var = float(grad @ self.cov @ grad) if ok else math.nan
        return self.t_start + value, math.sqrt(var) if var >= 0 else math.nan

    def unidentified_params(self, reach: tuple[float, float] | None = None, plateau_why: str | None = None) -> dict[str, str]:
        """{parameter: why} for the parameters the data do not identify (`fit._identified.params_unidentified`);
        reach: the reward's [lo, hi] (default the observed range widened by its span, `reward_reach_of`);
        plateau_why: a caller's reason the plateau is not identified (its `Implications.unidentified`)."""
        return params_unidentified(self.model, self.params, self.stderr, self.t_end - self.t_start,
                                   reward_reach_of(self.r_range, reach), plateau_why)

    def params_text(self, reach: tuple[float, float] | None = None, plateau_why: str | None = None) -> str:
        """The parameters as text, `r0 = 0.2 +- 0.01`; one the data do not identify (`unidentified_params(reach,
        plateau_why)`) as `r_inf not identified (the reason)`, never as a number."""
        return params_text(self.params, self.stderr, self.fitted, self.unidentified_params(reach, plateau_why))

    def to_json(self, reach: tuple[float, float] | None = None, plateau_why: str | None = None) -> dict:
        """Plain JSON-ready dict (no numpy types, inf/NaN as None). A parameter the data do not identify
        (`unidentified_params(reach, plateau_why)`) is null in `params`, `stderr` and the selection's trend (judged
        by value alone: the selection keeps no standard errors), with the reason in `unidentified`."""
        why = self.unidentified_params(reach, plateau_why)
        trend = self.selection.get("exponential_params")
        selection = self.selection if trend is None else {**self.selection, "exponential_params": nulled(
            trend, why if self.model == "exponential" else params_unidentified(
                "exponential", trend, {}, self.t_end - self.t_start, reward_reach_of(self.r_range, reach)))}
        return plain({
            "model": self.model, "variant": self.variant, "regime": self.regime, "params": nulled(self.params, why),
            "stderr": nulled(self.stderr, why), "unidentified": dict(why), "r_squared": self.r_squared,
            "residual_std": self.residual_std, "n": self.n,
            "t_start": self.t_start, "t_end": self.t_end, "inertia": self.inertia, "oscillation": self.oscillation,
            "damping_ratio": self.damping_ratio, "damping_ratio_stderr": self.damping_ratio_stderr,
            "selection": selection, "r_range": list(self.r_range),
            "plateau_extrapolation": self.plateau_extrapolation,
        })


def _plateau_time(model: str, q: dict[str, float]) -> float:
    """Time since the start after which R stays within PLATEAU_TOLERANCE of R_inf (see `time_to_plateau`)."""
    if model == "exponential":
        return q["tau"] * math.log(1.0 / PLATEAU_TOLERANCE) if q["tau"] > 0 else math.inf
    c, k = q["damping"], q["stiffness"]
    if c <= 0 or k <= 0:
        return math.inf
    band = PLATEAU_TOLERANCE * abs(q["r_inf"] - q["r0"])
    if band == 0:
        return 0.0
    osc = Oscillator(mass=1.0, damping=c, stiffness=k)
    r_slow = osc.decay_rates[0]
    # |x(t)| <= (|x0| + |v0 + alpha x0| t) e^{-r_slow t}: searching out to where that bound is far
    # below the band (plus 10 slow times for the polynomial factor) cannot miss a later crossing.
    amp = abs(q["r_inf"] - q["r0"]) + abs(q["v0"]) / r_slow
    horizon = (math.log(max(amp, band) / band) + 10.0) / r_slow

    def excess(x):
        return np.abs(trajectory(osc, x, q["r_inf"], q["r0"], q["v0"]) - q["r_inf"]) - band

    grid = np.linspace(0.0, horizon, 4001)
    outside = excess(grid) > 0
    if not outside.any():
        return 0.0
    last = int(np.flatnonzero(outside)[-1])
    if last + 1 >= grid.size:
        return math.inf
    # refine the last crossing (a smooth function of the parameters, so it can be differentiated)
    return float(brentq(lambda x: float(excess(x)), grid[last], grid[last + 1], xtol=1e-12 * horizon))


def _bin(t: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Equal-count bin means, so at most MAX_FIT_POINTS points go into the least-squares fits."""
    if t.size <= MAX_FIT_POINTS:
        return t, r
    size = math.ceil(t.size / MAX_FIT_POINTS)
    n = t.size // size * size  # the ragged tail joins no bin; it still counts in R^2
    return t[:n].reshape(-1, size).mean(axis=1), r[:n].reshape(-1, size).mean(axis=1)


def _flat_bic(r: np.ndarray) -> float:
    """The BIC of a constant, n ln(RSS / n) + ln n with RSS = sum (r_i - mean r)^2, on the fitted (binned,
    standardised) points: the model of a curve that does not move, against which the chosen model's BIC is judged."""
    rss = float(np.sum((r - r.mean()) ** 2))
    return r.size * math.log(max(rss, 1e-300) / r.size) + math.log(r.size)


def _standardise(r: np.ndarray) -> tuple[float, float, np.ndarray]:
    """(center, scale, (r - center)/scale) with mean 0 and std 1, computed without overflow (r is first
    divided by max|r|, so rewards of 1e300 or 1e-300 fit as well as rewards of 1); scale 1 if constant."""
    a = float(np.max(np.abs(r)))
    if a == 0.0:
        return 0.0, 1.0, r.copy()
    x = r / a
    c, sd = float(x.mean()), float(x.std())
    if sd == 0.0:
        return a * c, a, x - c
    return a * c, a * sd, (x - c) / sd


def _omega(q: dict[str, float]) -> float:
    """Damped angular frequency sqrt(k - c^2/4) of the m = 1 oscillator (0 when overdamped)."""
    return math.sqrt(max(q["stiffness"] - q["damping"] ** 2 / 4.0, 0.0))


def _zeta(q: dict[str, float]) -> float:
    return q["damping"] / (2.0 * math.sqrt(q["stiffness"]))


def _regime(model: str, zeta: float, damping: float) -> str:
    if model == "exponential":
        return "overdamped"
    if damping <= 0:
        return "unstable"
    if abs(zeta - 1.0) <= CRITICAL_BAND:
        return "critical"
    return "overdamped" if zeta > 1.0 else "underdamped"


class _Selection(NamedTuple):
    """The model selection of `fit_trajectory` (its `selection` dict reports these)."""

    variant: str  # exponential | slow_start | oscillator
    bic: dict[str, float]  # per model; inf for an aliased oscillator
    best_osc: str  # the oscillator variant with the lower BIC
    delta: float  # BIC(exponential) - BIC(best_osc)
    extrapolation: dict[str, float]  # per model, `plateau_extrapolation`
    overruled: bool  # an oscillator won only by extrapolating its plateau
    aliased: list[str]  # oscillator variants whose period spans < MIN_PERIOD_ROWS rows


def _fit_models(tb: np.ndarray, rb: np.ndarray, center: float, scale: float,
                t_start: float) -> tuple[dict[str, FitResult], dict | None]:
    """The exponential, the slow start (v0 = 0) and the free oscillator, fitted to the binned curve: the oscillator
    models by the multi-start, or inside `warm_start` from the previous fit's optima (`fit._warm`); with what the warm
    start did (None without one)."""
    fits = {"exponential": fit_exponential(tb, rb)}  # also the oscillator fits' starting point
    previous = current_warm_start()
    if previous is not None:
        fits, fallback = warm_models(tb, rb, fits["exponential"], previous, center, scale, t_start)
        return fits, {"from_step": previous.t_end, "multi_start": fallback}
    for name in ("slow_start", "oscillator"):  # the free-v0 fit also starts from the slow-start optimum (it nests it)
        fits[name] = multi_start(tb, rb, name, fits)
    return fits, None


def _select(fits: dict[str, FitResult], tb: np.ndarray, lo: float, hi: float) -> _Selection:
    """Exponential unless an oscillator lowers the BIC by more than EVIDENCE_BIC without aliasing or
    extrapolating its plateau (module docstring); lo, hi: the observed (standardised) rewards."""
    bic = {name: f.bic for name, f in fits.items()}
    # An oscillator whose period spans fewer than MIN_PERIOD_ROWS rows cannot be told from noise
    # sampled at the log's spacing (it aliases): it does not take part in the selection.
    spacing = float(np.median(np.diff(tb))) if tb.size > 1 else 1.0
    aliased = [name for name in ("slow_start", "oscillator") if _omega(fits[name].params) * MIN_PERIOD_ROWS * spacing > 2 * math.pi]
    for name in aliased:
        bic[name] = math.inf
    best_osc = min(("slow_start", "oscillator"), key=lambda n: bic[n])
    delta = bic["exponential"] - bic[best_osc]  # -inf when both oscillators aliased
    variant = best_osc if delta > EVIDENCE_BIC else "exponential"
    extrapolation = {name: plateau_extrapolation(f.params["r_inf"], lo, hi) for name, f in fits.items()}
    # An oscillator that beats the exponential only with a plateau far outside the data, where the
    # exponential's stays inside, wins by extrapolating: the nested model is kept.
    overruled = bool(variant != "exponential" and extrapolation[variant] > EXTRAPOLATION_LIMIT
                     and extrapolation["exponential"] <= EXTRAPOLATION_LIMIT)
    if overruled:
        variant = "exponential"
    return _Selection(variant, bic, best_osc, delta, extrapolation, overruled, aliased)


def _goodness(chosen: FitResult, tt: np.ndarray, r: np.ndarray, n_fitted: int) -> tuple[float, float, float]:
    """(R^2, residual std, total sum of squares) on every point (the binned fit's R^2 would flatter a
    long noisy log)."""
    fitted_all = chosen.predict(tt)
    rss = float(np.sum((r - fitted_all) ** 2))
    tss = float(np.sum((r - r.mean()) ** 2))
    r2 = 1.0 - rss / tss if tss > 0 else (1.0 if rss == 0 else 0.0)
    return r2, math.sqrt(rss / max(tt.size - n_fitted, 1)), tss


def _oscillation(chosen: FitResult, exponential: FitResult, names: tuple[str, ...], cov: np.ndarray, tt: np.ndarray,
                 r: np.ndarray, tss: float) -> tuple[float, float, bool, dict, float]:
    """(zeta, its se, oscillation, periodogram, periods seen): the damping ratio of an oscillator fit,
    the model-free periodogram around the exponential, and whether both show a sustained oscillation."""
    zeta, zeta_se = math.inf, math.nan
    if chosen.model == "oscillator":
        zeta = _zeta(chosen.params)
        grad = np.array([partial_derivative(_zeta, chosen.params, n) for n in names])
        var = float(grad @ cov @ grad) if np.all(np.isfinite(cov)) else math.nan
        zeta_se = math.sqrt(var) if var >= 0 else math.nan
    span = float(tt[-1])
    omega = _omega(chosen.params) if chosen.model == "oscillator" else 0.0
    # Model-free check of a periodic component around the trend-only (exponential) fit; it pays for
    # the search over frequencies that the oscillator's BIC does not.
    q = exponential.params
    trend_residual = r - single_exponential(tt, q["r_inf"], q["r0"], q["tau"])
    periodic_p, period, share = periodic_component(tt, trend_residual)
    # share of the reward's whole variance carried by that component: g x (residual / total variance)
    residual_fraction = float(np.sum(trend_residual**2) / tss) if tss > 0 else 0.0
    oscillation = bool(
        chosen.model == "oscillator" and zeta < 1.0 and math.isfinite(zeta_se)
        and zeta + Z_SIGNIFICANT * zeta_se < 1.0 and omega * span >= 2 * math.pi * PERIODS_SEEN
        and periodic_p < OSCILLATION_P
    )
    # the component's amplitude and the rest of the residual's std (standardised units; `fit_trajectory` rescales):
    # a sinusoid A sin(w t) holds a share g of the residual's power, A = sqrt(2 g var), the rest sqrt((1 - g) var)
    var = float(np.mean((trend_residual - trend_residual.mean()) ** 2))
    periodogram = {"p_value": periodic_p, "period": period, "share": share,
                   "variance_share": share * min(residual_fraction, 1.0), "cycles": span / period if period > 0 else 0.0,
                   "amplitude": math.sqrt(2.0 * share * var) if share >= 0 else math.nan,
                   "noise_std": math.sqrt(max(1.0 - share, 0.0) * var) if share >= 0 else math.nan}
    return zeta, zeta_se, oscillation, periodogram, omega * span / (2 * math.pi)


_SCALED = ("r_inf", "r0", "v0")  # parameters in reward units (times the scale); r_inf, r0 also shifted


def _params_in_reward_units(params: dict[str, float], center: float, scale: float) -> dict[str, float]:
    """Standardised fit parameters in the reward's units: R = center + scale R_std."""
    return {k: center * (k in ("r_inf", "r0")) + (scale if k in _SCALED else 1.0) * float(v) for k, v in params.items()}


def _errors_in_reward_units(stderr: dict[str, float], cov: np.ndarray, names: tuple[str, ...],
                            scale: float) -> tuple[dict[str, float], np.ndarray]:
    """Standard errors and covariance (of `names`) in the reward's units."""
    stderr = {k: (scale if k in _SCALED else 1.0) * v for k, v in stderr.items()}
    d = np.array([scale if n in _SCALED else 1.0 for n in names])
    with np.errstate(over="ignore"):  # rewards ~1e300: the covariance of r_inf, r0 is inf, their s.e. stay finite
        cov = cov * np.outer(d, d)
    return stderr, cov


def fit_trajectory(steps, reward) -> TrajectoryFit:
    """Fit the closed forms to (steps, reward) and select a model (see the module docstring).

    steps, reward: 1-d, equal length; NaN/inf points are dropped, steps may be irregular and unsorted.
    Raises ConfigError with fewer than `_closed_form.MIN_POINTS` finite points.

    Steps: fit the three closed forms to the binned, standardised curve (`_fit_models`), select one
    (`_select`), its errors and goodness of fit on every point (`standard_errors`, `_goodness`), the damping
    ratio and the periodogram check (`_oscillation`), then map back to the reward's units.
    """
    t, r = finite_sorted(steps, reward)
    observed = (float(r.min()), float(r.max()))  # as logged: mapped back from standardised units, 0 read 6.9e-18
    t_start = float(t[0])
    tt = t - t_start
    center, scale, r = _standardise(r)  # fit in standardised units; mapped back at the end
    tb, rb = _bin(tt, r)
    fits, warm = _fit_models(tb, rb, center, scale, t_start)
    lo, hi = float(r.min()), float(r.max())
    sel = _select(fits, tb, lo, hi)
    chosen = fits[sel.variant]
    names, cov = covariance(chosen, tb, rb)
    stderr = standard_errors(chosen, names, cov)
    r2, residual_std, tss = _goodness(chosen, tt, r, len(names))
    zeta, zeta_se, oscillation, periodogram, periods_seen = _oscillation(chosen, fits["exponential"], names, cov, tt, r, tss)
    selection = {
        "bic": sel.bic,
        "delta_bic": sel.delta,  # BIC(exponential) - BIC(best oscillator variant); > EVIDENCE_BIC selects the oscillator
        "best_oscillator": sel.best_osc,
        "evidence_threshold": EVIDENCE_BIC,
        "rule": f"exponential unless an oscillator model lowers the BIC by more than {EVIDENCE_BIC:g}",
        "bic_units": "BIC of the standardised curve (R - mean)/std; differences do not depend on units",
        "binned_points": int(tb.size) if tb.size != tt.size else None,
        "exponential_params": {k: float(v) for k, v in fits["exponential"].params.items()},  # the trend-only model
        "periodogram": periodogram,  # Fisher g test around the exponential
        "extrapolation": sel.extrapolation,  # plateau distance outside the observed range / the range, per model
        "extrapolation_overruled": sel.overruled,  # an oscillator won the BIC only by extrapolating its plateau
        "aliased": sel.aliased,  # oscillator variants rejected: period < MIN_PERIOD_ROWS rows
        "periods_seen": periods_seen,
        "delta_bic_flat": _flat_bic(rb) - sel.bic[sel.variant],  # > EVIDENCE_BIC: the curve moves, a flat line fits worse
    }
    if warm is not None:  # (only then: a batch fit's selection is as it was)
        selection["warm_start"] = warm  # the previous fit's last step; models the multi-start fitted instead
    inertia = bool(sel.bic["exponential"] - sel.bic["slow_start"] > EVIDENCE_BIC)
    # back to the reward's units: R = center + scale R_std
    params = _params_in_reward_units(chosen.params, center, scale)
    stderr, cov = _errors_in_reward_units(stderr, cov, names, scale)
    selection["exponential_params"] = _params_in_reward_units(selection["exponential_params"], center, scale)
    for key in ("amplitude", "noise_std"):
        selection["periodogram"][key] *= scale
    return TrajectoryFit(
        model=chosen.model, variant=sel.variant, regime=_regime(chosen.model, zeta, chosen.params.get("damping", 1.0)),
        params=params, stderr=stderr, cov=cov, fitted=names, r_squared=r2, residual_std=scale * residual_std,
        n=int(t.size), t_start=t_start, t_end=float(t[-1]), inertia=inertia, oscillation=oscillation,
        selection=selection, damping_ratio=zeta, damping_ratio_stderr=zeta_se,
        r_range=observed, plateau_extrapolation=sel.extrapolation[sel.variant],
        models={name: _params_in_reward_units(f.params, center, scale) for name, f in fits.items()},
    )


def plateau_extrapolation(r_inf: float, lo: float, hi: float) -> float:
    """How far a plateau lies outside the observed reward range [lo, hi], in units of that range:

        x = max(r_inf - hi, lo - r_inf, 0) / (hi - lo)      (0 inside the range; inf for a constant curve
                                                              with a plateau off it)
    """
    width = hi - lo
    out = max(r_inf - hi, lo - r_inf, 0.0)
    if out == 0.0:
        return 0.0
    return out / width if width > 0 else math.inf
