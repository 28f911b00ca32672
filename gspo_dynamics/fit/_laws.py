"""Published reward-curve laws, fitted to a pilot, as baselines for forecasting the rest of a run.

Each law is fitted to the pilot's points only (steps t, rewards R, and the policy entropy H for the entropy law) and
forecasts R at later steps through its `predict(steps)`:

  saturating exponential, after Nimmaturi et al. 2025, "Predictive scaling laws for efficient GRPO training of
  large reasoning models" (arXiv 2507.18014):
      R(t) = R_inf - (R_inf - R_0) exp(-(t - t_0) / tau),     t_0 the pilot's first step           (1)

  The paper's explicit equation was not found (only its v1 and v2 abstracts were): v2 calls GRPO reward curves "well-
  approximated by an exponential saturation"; its law also conditions on model size, initial reward and progress as
  a share of the epoch, across models, which for one run are the constants of (1). Other code citing the paper fits
  R_max (1 - exp(-lambda t)), (1) with R_0 = 0 at t_0 = 0.

  ScaleRL's sigmoid, Khatri et al. 2025, "The Art of Scaling Reinforcement Learning Compute for LLMs"
  (arXiv 2510.13786), its equation (1):
      R(C) = R_0 + (A - R_0) / (1 + (C_mid / C)^B),           A the asymptote, B > 0, C_mid > 0    (2)

  The paper's C is compute (GPU-hours); here C = the step (compute per step fixed; C_mid in steps). R_0 is fixed, as
  in the paper, at the initial reward: the mean of the pilot's first R0_POINTS. The paper leaves its first ~1.5k
  GPU-hours out of the fit; a pilot is too short to. R(C) = R_0 at C <= 0 (the limit C -> 0+).

  the entropy law, Cui et al. 2025, "The Entropy Mechanism of Reinforcement Learning for Reasoning Language Models"
  (arXiv 2505.22617): reward against policy entropy,
      R = -a exp(H) + b,     ceiling R(H = 0) = b - a (the reward when the entropy is spent)       (3)
  linear in exp(H), so fitted in closed form. Forecasting by step needs the future entropy: the pilot's entropy is
  fitted with the decay  H(t) = H_inf + (H_0 - H_inf) exp(-(t - t_0) / tau_H),  H_inf >= 0  (or, when that fit
  fails or is degenerate, a line held within [0, the pilot's largest entropy], `EntropyDecay`), mapped through (3).

  the naive baselines: the held level (the mean of the pilot's last k rewards) and the last value.

The fits never raise on noisy, flat or short pilots: with fewer than MIN_POINTS finite points, flat rewards, a failed
least-squares fit, or an optimum on a parameter's bound (the pilot does not identify it), the law falls back to the
held level, `fallback=True` with the reason, its parameters those of the law's flat member at that level. Points
with a non-finite step or value are dropped; points are sorted by step. Forecasts are finite; none is clipped unless
the caller passes `reward_range=(lo, hi)` to `predict`, which then clips to it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares
from scipy.special import expit

from gspo_dynamics._checks import positive_int
from gspo_dynamics._errors import ConfigError
from gspo_dynamics.fit._identified import check_reward_range

HELD_STEPS = 8  # the held level: the mean of the pilot's last HELD_STEPS rewards (`held_level`)
MIN_POINTS = 5  # fewer finite points than this: no 3-parameter law is fitted (too few spare points to see noise)
R0_POINTS = 3  # R_0 of (2): the mean of the first 3 rewards (the paper's initial value; one point is one step's noise)
TAU_STARTS = (0.05, 0.2, 0.6, 2.0)  # multistart: tau (and tau_H) at these fractions of the pilot's span
TAU_MIN_SPACING = 0.1  # tau below a tenth of the step spacing: saturated before the second point, a step, not a curve
TAU_MAX_SPANS = 100.0  # tau over 100 spans: exp(-t/tau) is a straight line over the pilot, R_inf not identified
B_BOUNDS = (0.1, 20.0)  # B of (2): under 0.1 a decade of C moves R < 6% of A - R_0 (A unidentified); over 20, a step
C_MID_SPANS = 100.0  # C_mid of (2) within [first positive step / 100, last step * 100]: beyond, A is not identified
B_STARTS = (1.0, 3.0)  # multistart for (2): B ...
C_MID_STARTS = (0.25, 1.0, 4.0)  # ... and C_mid at these fractions of the pilot's last step
BOUND_TOL = 1e-3  # a log-parameter within 0.1% of its bound sits on it: the optimum is not interior
FLAT_RTOL = 1e-12  # values whose spread is below this, relative to their largest size, are flat (float round-off)
EXP_MAX = 700.0  # |s| exp(x) is computed as exp(min(x + ln|s|, EXP_MAX)): float64 overflows near e^709


def _finish(values: np.ndarray, reward_range) -> np.ndarray:
    """`values` clipped to reward_range when the caller gives one (checked), as they are otherwise."""
    check_reward_range(reward_range)
    return values if reward_range is None else np.clip(values, *reward_range)


def _scaled_exp(scale: float, x) -> np.ndarray:
    """scale exp(x), its size capped at e^EXP_MAX (~1e304, reached only by an entropy of hundreds of nats or a step
    hundreds of time constants before the pilot), so a forecast built on it stays finite."""
    if scale == 0:
        return np.zeros(np.shape(x))
    return math.copysign(1.0, scale) * np.exp(np.minimum(np.asarray(x, dtype=float) + math.log(abs(scale)), EXP_MAX))


def _as_array(x, what: str) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if a.ndim > 1:
        raise ConfigError(f"{what} must be a number or a 1-d sequence, got shape {a.shape}")
    return a


@dataclass(frozen=True, kw_only=True)
class HeldLevel:
    """The naive forecast R(t) = level at every later step."""

    level: float  # the held reward
    k: int  # the pilot's last k finite rewards averaged (k = 1: the last value)

    def __post_init__(self):
        if not math.isfinite(self.level) or self.k < 1:
            raise ConfigError(f"a held level must be finite over k >= 1 points, got {self.level!r} over {self.k!r}")

    def __float__(self) -> float:
        return float(self.level)

    def predict(self, steps, reward_range=None) -> np.ndarray:
        return _finish(np.full(np.shape(_as_array(steps, "steps")), self.level), reward_range)


def held_level(reward, k: int = HELD_STEPS) -> HeldLevel:
    """The mean of the last k finite rewards (all of them when fewer), in the order given (the pilot's step order).
    ConfigError when none is finite or k < 1."""
    k = positive_int("k", k)
    r = _as_array(reward, "reward").ravel()
    r = r[np.isfinite(r)]
    if r.size == 0:
        raise ConfigError("the pilot has no finite reward to hold")
    return HeldLevel(level=float(np.mean(r[-k:])), k=min(k, r.size))


def last_value(reward) -> HeldLevel:
    """The last finite reward: `held_level(reward, k=1)`."""
    return held_level(reward, k=1)


def _pilot(steps, values, what: str) -> tuple[np.ndarray, np.ndarray]:
    """(steps, values) as 1-d float arrays, non-finite points dropped, sorted by step; ConfigError for mismatched
    shapes or no finite point (nothing to hold)."""
    t, v = _as_array(steps, "steps"), _as_array(values, what)
    if t.shape != v.shape or t.ndim != 1:
        raise ConfigError(f"steps and {what} must be 1-d arrays of equal length, got shapes {t.shape} and {v.shape}")
    keep = np.isfinite(t) & np.isfinite(v)
    if not keep.any():
        raise ConfigError(f"the pilot has no point with a finite step and {what}")
    order = np.argsort(t[keep], kind="stable")
    return t[keep][order], v[keep][order]


def _is_flat(v: np.ndarray) -> bool:
    return bool(np.ptp(v) <= FLAT_RTOL * np.max(np.abs(v)))


def _too_little(t: np.ndarray, r: np.ndarray) -> str:
    """Why no law can be fitted to the pilot (t, r), or "" when one can."""
    if t.size < MIN_POINTS:
        return f"{t.size} finite points, fewer than {MIN_POINTS}"
    if _is_flat(r):
        return "the pilot's rewards are flat"
    if t[-1] == t[0]:
        return "the pilot's points share one step"
    return ""


def _bound_hit(x, lo, hi, names) -> str:
    """"NAME on its lower (upper) bound (value)" for the first log-parameter within BOUND_TOL of a bound, else ""."""
    for xi, low, high, name in zip(x, lo, hi, names):
        if min(xi - low, high - xi) < BOUND_TOL:
            return f"{name} on its {'lower' if xi - low < BOUND_TOL else 'upper'} bound ({math.exp(xi):.3g})"
    return ""


def _saturation(t: np.ndarray, y: np.ndarray, asymptote_min: float = -math.inf):
    """Least-squares fit of (1) to (t, y), tau in log space within [TAU_MIN_SPACING * spacing, TAU_MAX_SPANS * span],
    from tau at TAU_STARTS of the span; the lowest cost kept. (y_inf, y_0, tau, rss), or a reason it failed."""
    span, gaps = t[-1] - t[0], np.diff(t)
    lo, hi = math.log(TAU_MIN_SPACING * float(np.median(gaps[gaps > 0]))), math.log(TAU_MAX_SPANS * span)

    def residual(x):
        return x[1] - (x[0] - x[1]) * np.expm1(-(t - t[0]) / math.exp(x[2])) - y

    tail = float(np.mean(y[-HELD_STEPS:]))
    fits = []
    for share in TAU_STARTS:
        x0 = [max(tail, asymptote_min), y[0], min(max(math.log(share * span), lo), hi)]
        try:
            fit = least_squares(residual, x0, bounds=([asymptote_min, -np.inf, lo], [np.inf, np.inf, hi]))
        except ValueError:  # a start scipy judges infeasible (only at a degenerate bound)
            continue
        if np.all(np.isfinite(fit.x)) and np.isfinite(fit.cost):
            fits.append(fit)
    if not fits:
        return "the least-squares fit failed from every start"
    best = min(fits, key=lambda f: f.cost)
    y_inf, y0, log_tau = best.x
    hit = _bound_hit([log_tau], [lo], [hi], ["tau"])
    if hit:
        return f"{hit}: the pilot does not identify the saturation"
    return float(y_inf), float(y0), math.exp(log_tau), 2.0 * float(best.cost)


@dataclass(frozen=True, kw_only=True)
class ExponentialSaturation:
    """Law (1) fitted to a pilot: R(t) = R_inf - (R_inf - R_0) exp(-(t - t_0) / tau)."""

    r_inf: float  # R_inf, the asymptote
    r0: float  # R_0, the reward at t_0
    tau: float  # tau > 0, the time constant in steps
    t0: float  # t_0, the pilot's first step
    n: int  # finite pilot points
    rss: float  # residual sum of squares over the pilot
    fallback: bool = False  # the held level stands in for the law (then r_inf = r0 = the held level)
    reason: str = ""  # why it fell back

    def __post_init__(self):
        if not (np.all(np.isfinite([self.r_inf, self.r0, self.t0])) and 0 < self.tau < math.inf):
            raise ConfigError(f"law (1) needs finite R_inf, R_0, t_0 and 0 < tau < inf, got {self!r}")

    def predict(self, steps, reward_range=None) -> np.ndarray:
        t = _as_array(steps, "steps")
        return _finish(self.r_inf - _scaled_exp(self.r_inf - self.r0, -(t - self.t0) / self.tau), reward_range)


def fit_exponential_saturation(steps, reward) -> ExponentialSaturation:
    """Fit law (1) (Nimmaturi et al. 2025, arXiv 2507.18014) to the pilot (steps, reward) by bounded least squares
    (`scipy.optimize.least_squares`, tau > 0 in log space, starts at TAU_STARTS of the span, the lowest cost kept);
    the held level when the fit fails or is degenerate (module docstring)."""
    t, r = _pilot(steps, reward, "reward")
    held = held_level(r).level
    why = _too_little(t, r)
    fit = _saturation(t, r) if not why else why
    if isinstance(fit, str):
        return ExponentialSaturation(r_inf=held, r0=held, tau=float(max(t[-1] - t[0], 1.0)), t0=float(t[0]), n=t.size,
                                     rss=float(np.sum((r - held) ** 2)), fallback=True, reason=fit)
    r_inf, r0, tau, rss = fit
    return ExponentialSaturation(r_inf=r_inf, r0=r0, tau=tau, t0=float(t[0]), n=t.size, rss=rss)


def scalerl_sigmoid(c, r0: float, asymptote: float, efficiency: float, c_mid: float) -> np.ndarray:
    """Law (2): R_0 + (A - R_0) / (1 + (C_mid / C)^B), evaluated as R_0 + (A - R_0) expit(B (ln C - ln C_mid)) (no
    overflow of (C_mid / C)^B at small C); R_0 at C <= 0."""
    c = _as_array(c, "C")
    f = np.zeros(c.shape)
    pos = c > 0
    f[pos] = expit(efficiency * (np.log(c[pos]) - math.log(c_mid)))
    return r0 + (asymptote - r0) * f


@dataclass(frozen=True, kw_only=True)
class ScaleRLSigmoid:
    """Law (2) fitted to a pilot, C = the step."""

    r0: float  # R_0, the initial reward (mean of the first R0_POINTS rewards)
    asymptote: float  # A, the reward as C -> infinity
    efficiency: float  # B > 0, the scaling exponent
    c_mid: float  # C_mid > 0, the step at which half the gain A - R_0 is made
    n: int  # finite pilot points
    rss: float  # residual sum of squares over the pilot
    fallback: bool = False  # the held level stands in for the law (then A = R_0 = the held level)
    reason: str = ""  # why it fell back

    def __post_init__(self):
        if not (np.all(np.isfinite([self.r0, self.asymptote])) and 0 < self.efficiency < math.inf
                and 0 < self.c_mid < math.inf):
            raise ConfigError(f"law (2) needs finite R_0, A and 0 < B, C_mid < inf, got {self!r}")

    def predict(self, steps, reward_range=None) -> np.ndarray:
        return _finish(scalerl_sigmoid(steps, self.r0, self.asymptote, self.efficiency, self.c_mid), reward_range)


def _sigmoid_fit(c: np.ndarray, r: np.ndarray, r0: float):
    """Least squares of (2) with R_0 fixed, by variable projection: A is linear, so for each (ln B, ln C_mid) it is
    solved in closed form, A - R_0 = f.(R - R_0) / f.f with f = 1 / (1 + (C_mid / C)^B), and least_squares searches
    (ln B, ln C_mid) within B_BOUNDS and C_MID_SPANS from B_STARTS x C_MID_STARTS. (A, B, C_mid, rss) or a reason."""
    lo = [math.log(B_BOUNDS[0]), math.log(c[c > 0][0] / C_MID_SPANS)]
    hi = [math.log(B_BOUNDS[1]), math.log(c[-1] * C_MID_SPANS)]
    g = r - r0

    def gain(x):
        f = scalerl_sigmoid(c, 0.0, 1.0, math.exp(x[0]), math.exp(x[1]))
        ff = float(f @ f)
        return (float(f @ g) / ff if ff > 0 else 0.0), f

    def residual(x):
        a, f = gain(x)
        return a * f - g

    fits = []
    for b in B_STARTS:
        for share in C_MID_STARTS:
            x0 = np.clip([math.log(b), math.log(share * c[-1])], lo, hi)
            fit = least_squares(residual, x0, bounds=(lo, hi))
            if np.all(np.isfinite(fit.x)) and np.isfinite(fit.cost):
                fits.append(fit)
    if not fits:
        return "the least-squares fit failed from every start"
    best = min(fits, key=lambda f: f.cost)
    hit = _bound_hit(best.x, lo, hi, ["B", "C_mid"])
    if hit:
        return f"{hit}: the pilot does not identify the sigmoid"
    return r0 + gain(best.x)[0], math.exp(best.x[0]), math.exp(best.x[1]), 2.0 * float(best.cost)


def fit_sigmoid_scalerl(steps, reward) -> ScaleRLSigmoid:
    """Fit law (2) (Khatri et al. 2025, arXiv 2510.13786, eq. 1) to the pilot with C = step and R_0 fixed at the mean
    of its first R0_POINTS rewards; the held level when the fit fails or is degenerate (module docstring)."""
    t, r = _pilot(steps, reward, "reward")
    held = held_level(r).level
    r0 = float(np.mean(r[:R0_POINTS]))
    why = _too_little(t, r) or ("no step above 0 (C = step must be positive)" if t[-1] <= 0 else "")
    fit = _sigmoid_fit(t, r, r0) if not why else why
    if isinstance(fit, str):
        return ScaleRLSigmoid(r0=held, asymptote=held, efficiency=1.0, c_mid=max(float(t[-1]), 1.0), n=t.size,
                              rss=float(np.sum((r - held) ** 2)), fallback=True, reason=fit)
    a, b, c_mid, rss = fit
    return ScaleRLSigmoid(r0=r0, asymptote=a, efficiency=b, c_mid=c_mid, n=t.size, rss=rss)


@dataclass(frozen=True, kw_only=True)
class EntropyDecay:
    """The pilot's entropy against the step: "exponential", H_inf + (H_0 - H_inf) exp(-(t - t_0) / tau_H), or
    "linear", H_0 + slope (t - t_0) held within [0, H_max] (entropy is never negative, and a line, unlike the decay,
    never levels off: it is not carried past the largest entropy the pilot saw); the other kind's fields are nan."""

    kind: str  # "exponential" | "linear"
    h0: float  # H_0, the entropy at t_0
    t0: float  # t_0, the pilot's first step
    h_inf: float = math.nan  # H_inf >= 0, the exponential's asymptote
    tau: float = math.nan  # tau_H > 0, the exponential's time constant in steps
    slope: float = math.nan  # the line's slope per step
    h_max: float = math.nan  # H_max, the pilot's largest entropy: where the line stops

    def __post_init__(self):
        ok = {"exponential": self.h_inf >= 0 and 0 < self.tau < math.inf,
              "linear": math.isfinite(self.slope) and 0 <= self.h_max < math.inf}
        if self.kind not in ok or not ok[self.kind] or not (math.isfinite(self.h0) and math.isfinite(self.t0)):
            raise ConfigError(f"not an entropy trajectory: {self!r} (kind 'exponential' or 'linear', finite values)")

    def predict(self, steps) -> np.ndarray:
        dt = _as_array(steps, "steps") - self.t0
        if self.kind == "linear":
            return np.clip(self.h0 + self.slope * dt, 0.0, self.h_max)
        return self.h_inf + _scaled_exp(self.h0 - self.h_inf, -dt / self.tau)


@dataclass(frozen=True, kw_only=True)
class EntropyLaw:
    """Law (3), R = -a exp(H) + b, fitted to a pilot, and the pilot's entropy trajectory to forecast by step."""

    a: float  # a, reward lost per unit of exp(H)
    b: float  # b, the law's offset
    entropy: EntropyDecay | None  # H(t) fitted on the pilot; None when fitted without steps
    n: int  # finite (entropy, reward) pairs
    rss: float  # residual sum of squares of (3) over the pilot
    fallback: bool = False  # the held level stands in for the law (then a = 0, b = the held level)
    reason: str = ""  # why it fell back

    def __post_init__(self):
        if not (math.isfinite(self.a) and math.isfinite(self.b)):
            raise ConfigError(f"the entropy law's a and b must be finite, got {self.a!r} and {self.b!r}")

    @property
    def ceiling(self) -> float:
        """The paper's predicted reward at entropy exhaustion, R(H = 0) = b - a."""
        return self.b - self.a

    def at_entropy(self, entropy) -> np.ndarray:
        """R = -a exp(H) + b."""
        return self.b - _scaled_exp(self.a, _as_array(entropy, "entropy"))

    def predict(self, steps, reward_range=None) -> np.ndarray:
        if self.entropy is None:
            raise ConfigError("this entropy law was fitted without steps: pass steps= to fit it, or use at_entropy")
        return _finish(self.at_entropy(self.entropy.predict(steps)), reward_range)


def _entropy_trajectory(steps, entropy) -> EntropyDecay | str:
    """H(t) on the pilot: the decay with H_inf >= 0 (`_saturation`), else a least-squares line, else a reason."""
    t, h = _pilot(steps, entropy, "entropy")
    if t.size < 2 or t[-1] == t[0]:
        return "the pilot's entropy has fewer than 2 distinct steps"
    if t.size >= MIN_POINTS and not _is_flat(h):
        fit = _saturation(t, h, asymptote_min=0.0)
        if not isinstance(fit, str):
            return EntropyDecay(kind="exponential", h_inf=fit[0], h0=fit[1], tau=fit[2], t0=float(t[0]))
    slope, h0 = np.polyfit(t - t[0], h, 1)
    return EntropyDecay(kind="linear", h0=float(h0), slope=float(slope), h_max=max(float(h.max()), 0.0), t0=float(t[0]))


def fit_entropy_law(entropy, reward, steps=None) -> EntropyLaw:
    """Fit law (3) (Cui et al. 2025, arXiv 2505.22617) in closed form: ordinary least squares of R on [exp(H), 1],
    a = -slope, b = intercept; with `steps`, the pilot's entropy trajectory too, for `predict`. The held level when
    fewer than MIN_POINTS pairs, flat rewards or flat entropy, or an entropy trajectory that cannot be fitted."""
    h, r = _as_array(entropy, "entropy"), _as_array(reward, "reward")
    if h.shape != r.shape or h.ndim != 1:
        raise ConfigError(f"entropy and reward must be 1-d arrays of equal length, got shapes {h.shape} and {r.shape}")
    held = held_level(r if steps is None else _pilot(steps, r, "reward")[1]).level  # in step order
    keep = np.isfinite(h) & np.isfinite(r) & (np.isfinite(_as_array(steps, "steps")) if steps is not None else True)
    h, r = h[keep], r[keep]
    trajectory = None if steps is None else _entropy_trajectory(steps, entropy)
    why = (_too_little(np.arange(h.size), r) or ("the pilot's entropy is flat" if _is_flat(h) else "")
           or (f"entropy above {EXP_MAX:g} nats (exp(H) overflows)" if h.max() > EXP_MAX else "")
           or (trajectory if isinstance(trajectory, str) else ""))
    if why:
        flat = trajectory if isinstance(trajectory, EntropyDecay) else (
            None if steps is None else EntropyDecay(kind="linear", h0=0.0, slope=0.0, h_max=0.0, t0=0.0))
        return EntropyLaw(a=0.0, b=held, entropy=flat, n=h.size, rss=float(np.sum((r - held) ** 2)),
                          fallback=True, reason=why)
    design = np.column_stack([np.exp(h), np.ones(h.size)])  # (n, 2): R = slope exp(H) + intercept
    (slope, intercept), *_ = np.linalg.lstsq(design, r, rcond=None)
    rss = float(np.sum((design @ [slope, intercept] - r) ** 2))
    return EntropyLaw(a=-float(slope), b=float(intercept), entropy=trajectory, n=h.size, rss=rss)
