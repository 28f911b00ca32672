"""The step at which the policy's entropy reaches its floor: a fitted decay law with its uncertainty, or "not
identified" where the data do not identify it.

Law (the saturating exponential that diagnose fits to the reward, here for a falling entropy H(t)):

    H(t) = H_f + (H_0 - H_f) exp(-(t - t_0) / tau),       t_0 the first logged step                        (1)

fitted by least squares (tau in log space, several starts, the lowest residual kept). The floor is reached, as the
reward's plateau is (`fit.TrajectoryFit.time_to_plateau`), when H is within FLOOR_TOLERANCE = 5% of the fall
H_0 - H_f above H_f for good:

    t_f = t_0 + tau ln(1 / FLOOR_TOLERANCE) = t_0 + tau ln 20,       se(t_f) = ln 20 se(tau)                  (2)

Uncertainty: cov = s^2 (J^T J)^(-1), s^2 = RSS / (n - 3), J the analytic Jacobian of (1) in (H_f, H_0, tau) at the
optimum (the Gauss-Newton covariance; tests/report/test_entropy_floor.py checks it against scipy's curve_fit and
the coverage of (2) on simulated decays).

Identified only where all of these hold (else `reason` says which failed, and no step is given):
  - at least MIN_POINTS finite entropies;
  - the entropy falls: H_0 - H_f > Z_FALL se(H_0 - H_f);
  - the floor is not below zero by more than Z_FALL se(H_f) (an entropy cannot be: the curve has not bent);
  - tau off the search's bounds (a tenth of the step spacing, STEP_MULTIPLE x the span): the data bend;
  - t_f finite, t_f <= t_0 + STEP_MULTIPLE x the span (further is an extrapolation the data do not carry, as
    `fit._identified` rules for the reward's plateau) and se(t_f) <= t_f - t_0 (the interval excludes the start);
  - where the log goes on past t_f (at least MIN_POINTS points), the entropy there does not keep falling: a least-
    squares line through those points has slope z = b / se(b) > -Z_AFTER, or falls by less than FLOOR_TOLERANCE of
    the fall over them (a fast drop followed by a slow drift is two time scales; (1) has one, and its floor would be
    the end of the drop, not of the fall).
A flat entropy (every value equal: a trainer that logs 0.0 without computing it) has nothing to fit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares

FLOOR_TOLERANCE = 0.05  # the floor is reached within 5% of the fall (as the reward's plateau: PLATEAU_TOLERANCE)
MIN_POINTS = 8  # as the reward's fit: fewer points cannot show a bend from noise
Z_FALL = 2.0  # standard errors by which the fall must exceed zero (~95%)
Z_AFTER = 3.0  # a slope this many standard errors below zero after the floor step: the entropy keeps falling
STEP_MULTIPLE = 4.0  # the latest floor step given, in spans of the log (fit._identified.STEP_MULTIPLE)
TAU_STARTS = (0.05, 0.2, 0.6, 2.0)  # starts of tau, as shares of the span
TAU_MIN_SPACING = 0.1  # tau's lower bound, in step spacings: below it the fall is one step, not a curve
BOUND_TOL = 1e-3  # log tau within this of a bound sits on it


@dataclass(frozen=True, kw_only=True)
class EntropyFloor:
    """Law (1) fitted to a run's entropy, and the floor step (2) where identified."""

    identified: bool
    reason: str  # why not identified ("" when identified)
    n: int = 0  # finite entropies fitted
    t0: float = math.nan  # t_0, the first logged step
    t_end: float = math.nan  # the last logged step
    h0: float = math.nan  # H_0
    floor: float = math.nan  # H_f
    floor_se: float = math.nan
    tau: float = math.nan  # steps
    tau_se: float = math.nan
    step: float = math.nan  # t_f of (2)
    step_se: float = math.nan

    @property
    def reached(self) -> bool:
        """The floor step lies within the log."""
        return self.identified and self.step <= self.t_end

    def predict(self, t) -> np.ndarray:
        """H(t) of (1) at the fitted parameters."""
        return _law(np.asarray(t, float) - self.t0, self.floor, self.h0, self.tau)

    def text(self) -> str:
        """One line: the floor, the step and its standard error, or why not identified."""
        if not self.identified:
            return f"entropy floor: not identified ({self.reason})"
        when = "reached at step" if self.reached else f"{self.step - self.t_end:.0f} steps after the log's end, at step"
        return (f"entropy floor: {self.floor:.3g} +- {self.floor_se:.2g} nats, {when} {self.step:.0f} +- {self.step_se:.0f} "
                f"(H(t) = H_f + (H_0 - H_f) exp(-(t - t_0) / tau), tau = {self.tau:.3g} +- {self.tau_se:.2g} steps; "
                f"within {FLOOR_TOLERANCE:.0%} of the fall)")


def _law(dt: np.ndarray, h_f: float, h0: float, tau: float) -> np.ndarray:
    return h_f + (h0 - h_f) * np.exp(-dt / tau)


def _jacobian(dt: np.ndarray, h_f: float, h0: float, tau: float) -> np.ndarray:
    """(n, 3) d H / d (H_f, H_0, tau) of (1)."""
    e = np.exp(-dt / tau)
    return np.column_stack([1.0 - e, e, (h0 - h_f) * e * dt / tau**2])


def _least_squares(dt: np.ndarray, h: np.ndarray, lo: float, hi: float):
    """The lowest-cost fit of (1) over TAU_STARTS: (H_f, H_0, log tau) or None."""
    span = float(dt[-1])

    def residual(x):
        return _law(dt, x[0], x[1], math.exp(x[2])) - h

    best = None
    for share in TAU_STARTS:
        x0 = [float(np.mean(h[-max(3, h.size // 10):])), float(h[0]), min(max(math.log(share * span), lo), hi)]
        fit = least_squares(residual, x0, bounds=([-np.inf, -np.inf, lo], [np.inf, np.inf, hi]))
        if np.all(np.isfinite(fit.x)) and (best is None or fit.cost < best.cost):
            best = fit
    return best


def covariance(dt: np.ndarray, h: np.ndarray, h_f: float, h0: float, tau: float) -> np.ndarray:
    """cov of (H_f, H_0, tau): s^2 (J^T J)^-1, s^2 = RSS / (n - 3); inf where J^T J is singular."""
    j = _jacobian(dt, h_f, h0, tau)
    rss = float(np.sum((_law(dt, h_f, h0, tau) - h) ** 2))
    try:
        return rss / (dt.size - 3) * np.linalg.inv(j.T @ j)
    except np.linalg.LinAlgError:
        return np.full((3, 3), np.inf)


def entropy_floor(steps, entropy) -> EntropyFloor:
    """Fit (1) to (steps, entropy) (NaN dropped) and give the floor step (2) where identified (module docstring)."""
    t, h = np.asarray(steps, float), np.asarray(entropy, float)
    keep = np.isfinite(t) & np.isfinite(h)
    t, h = t[keep], h[keep]
    if t.size < MIN_POINTS:
        return EntropyFloor(identified=False, reason=f"{t.size} entropy points (at least {MIN_POINTS} are needed)",
                            n=int(t.size))
    if np.ptp(h) <= 1e-12 * max(float(np.max(np.abs(h))), 1.0):
        return EntropyFloor(identified=False, reason=f"the entropy is flat ({h[0]:.4g} on every row): nothing to fit",
                            n=int(t.size))
    order = np.argsort(t, kind="stable")
    t, h = t[order], h[order]
    dt, span = t - t[0], float(t[-1] - t[0])
    gaps = np.diff(t)
    lo, hi = math.log(TAU_MIN_SPACING * float(np.median(gaps[gaps > 0]))), math.log(STEP_MULTIPLE * span)
    fit = _least_squares(dt, h, lo, hi)
    base = dict(n=int(t.size), t0=float(t[0]), t_end=float(t[-1]))
    if fit is None:
        return EntropyFloor(identified=False, reason="the least-squares fit failed from every start", **base)
    h_f, h0, tau = float(fit.x[0]), float(fit.x[1]), math.exp(float(fit.x[2]))
    with np.errstate(invalid="ignore", over="ignore"):  # a singular J^T J: inf / nan standard errors, read below
        cov = covariance(dt, h, h_f, h0, tau)
        se = np.sqrt(np.clip(np.diag(cov), 0.0, np.inf))
        fall_var = cov[0, 0] + cov[1, 1] - 2 * cov[0, 1]
    fall_se = math.sqrt(fall_var) if fall_var >= 0 else math.nan
    step, step_se = t[0] + tau * math.log(1 / FLOOR_TOLERANCE), math.log(1 / FLOOR_TOLERANCE) * float(se[2])
    values = dict(h0=h0, floor=h_f, floor_se=float(se[0]), tau=tau, tau_se=float(se[2]), step=step, step_se=step_se)
    reason = (_why_not(h0 - h_f, fall_se, h_f, float(se[0]), fit.x[2], (lo, hi), step - t[0], step_se, span)
              or _still_falling(t, h, step, h0 - h_f))
    return EntropyFloor(identified=not reason, reason=reason, **base, **values)


def _why_not(fall, fall_se, h_f, h_f_se, log_tau, bounds, dt_floor, step_se, span) -> str:
    """The first identification rule of the module docstring that fails, or ""."""
    if not math.isfinite(fall_se) or not fall > Z_FALL * fall_se:
        return f"the entropy does not fall significantly (fall {fall:.3g} against {Z_FALL:g} s.e. {Z_FALL * fall_se:.2g})"
    if h_f < -Z_FALL * h_f_se:
        return f"the fitted floor {h_f:.3g} is below zero: the entropy falls without levelling off within the log"
    if min(log_tau - bounds[0], bounds[1] - log_tau) < BOUND_TOL:
        return "the decay's time scale sits on its search bound: the data do not bend"
    if not math.isfinite(step_se) or dt_floor > STEP_MULTIPLE * span:
        return f"the fit puts it past {STEP_MULTIPLE:g} x the log's span of {span:.0f} steps, further than the data reach"
    if step_se > dt_floor:
        return f"its standard error, {step_se:.0f} steps, exceeds its distance from the first step, {dt_floor:.0f}"
    return ""


def _still_falling(t: np.ndarray, h: np.ndarray, step: float, fall: float) -> str:
    """Why the floor is not one where the entropy keeps falling after it (module docstring), else ""."""
    after = t > step
    if after.sum() < MIN_POINTS:
        return ""
    x, y = t[after], h[after]
    x = x - x.mean()
    b = float(x @ (y - y.mean()) / (x @ x))
    resid = y - y.mean() - b * x
    se = math.sqrt(float(resid @ resid) / (x.size - 2) / float(x @ x))
    drop = -b * float(np.ptp(x))
    if se > 0 and b / se < -Z_AFTER and drop > FLOOR_TOLERANCE * fall:
        return (f"the entropy keeps falling after the fitted floor step {step:.0f} (slope z = {b / se:.1f}, down "
                f"{drop:.3g} nats more): the fall has a slower second time scale the law does not hold")
    return ""

