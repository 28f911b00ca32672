"""Where two runs part ways: the first step from which their rolling means differ, on one metric, by more than K
pooled standard errors and stay so to the end of their common steps.

For runs A and B of one metric, on the steps both cover (B's values linearly interpolated onto A's steps inside the
overlap; interpolation averages neighbours, so it can only shrink B's noise, never make a difference look larger):

    sigma_X^2  = sum_i (x_(i+1) - x_i)^2 / (2 (n - 1))            the von Neumann estimate of run X's row noise
                                                                    (a slow trend cancels in the differences)
    m_X(j)     = mean of x over rows j - w + 1 .. j                 the trailing rolling mean, w rows
    z(j)       = (m_A(j) - m_B(j)) / sqrt((sigma_A^2 + sigma_B^2) / w)                                        (1)

The runs part ways at the first row j* with |z(j)| > K and one sign of z for every j >= j*, where that stretch lasts at
least w rows (a whole window of new rows: one window's blip at the log's end is not a parting). The step reported is
the step of row j*; the statistic reported is z(j*) and the smallest |z| over the stretch. Without such a row the
runs "do not part ways" on that metric.

Why K = 3 and w rows: under no difference each z(j) is about N(0, 1) (P(|z| > 3) = 0.27%), and a parting needs
that for w consecutive windows (more than one independent window), so two seeds of one configuration are read as
parting rarely (tests/report/test_parting.py measures it on simulated pairs); a real shift of size d is found
once the window holds enough rows past it, (j - shift) / w > K sqrt(2 / w) sigma / d.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

K_SE = 3.0  # pooled standard errors the rolling means must stay apart by
MIN_WINDOW = 5  # the smallest rolling window, rows
WINDOW_SHARE = 0.1  # the window: this share of the common rows (at least MIN_WINDOW)
MIN_COMMON = 3 * MIN_WINDOW  # fewer common rows than this: no test (a window and its stretch need room)
# the metrics compared, in the order a parting is named when several part at the same step
METRICS: tuple[str, ...] = ("reward", "entropy", "mean_length", "truncation_rate", "kl_ref", "clip_frac", "grad_norm",
                            "frac_zero_std")


@dataclass(frozen=True, kw_only=True)
class Parting:
    """Where run B parts from run A on one metric (equation (1) of the module docstring)."""

    metric: str  # the canonical series name
    step: int | None  # the step of row j*; None: they do not part ways
    z: float | None  # z(j*) (its sign: B above A is negative, A - B); None where they do not part
    min_abs_z: float | None  # the smallest |z| over the stretch from j* to the end
    window: int  # w, rows
    common_rows: int  # rows both runs cover (A's steps in the overlap)
    sigma_a: float  # the von Neumann row noise of A
    sigma_b: float  # ... and of B
    reason: str = ""  # why no test was made (too few common rows, a metric one run lacks); "" when tested
    from_start: bool = False  # j* is the first full window: the runs differ from their first w rows on

    @property
    def parts(self) -> bool:
        return self.step is not None


def row_noise(x: np.ndarray) -> float:
    """sigma: sqrt(sum (x_(i+1) - x_i)^2 / (2 (n - 1))), the von Neumann estimate of the row noise."""
    d = np.diff(x)
    return math.sqrt(float(d @ d) / (2.0 * d.size)) if d.size else 0.0


def rolling_mean(x: np.ndarray, w: int) -> np.ndarray:
    """The trailing means over w rows, m(j) for j = w - 1 .. n - 1 (cumulative sums: O(n))."""
    c = np.concatenate(([0.0], np.cumsum(x)))
    return (c[w:] - c[:-w]) / w


def z_series(a: np.ndarray, b: np.ndarray, w: int) -> np.ndarray:
    """z(j) of equation (1) for j = w - 1 .. n - 1 (a and b on the same rows)."""
    se = math.sqrt((row_noise(a) ** 2 + row_noise(b) ** 2) / w)
    diff = rolling_mean(a, w) - rolling_mean(b, w)
    if se > 0:
        return diff / se
    with np.errstate(invalid="ignore", divide="ignore"):  # no noise at all: any difference is exact
        return np.where(diff == 0, 0.0, np.sign(diff) * np.inf)


def first_lasting(z: np.ndarray, k: float, min_run: int) -> int | None:
    """The first index from which |z| > k with one sign to the end, where that stretch is at least min_run long."""
    beyond = np.abs(z) > k
    if not beyond[-1]:
        return None
    sign = np.sign(z[-1])
    good = beyond & (np.sign(z) == sign)
    bad = np.flatnonzero(~good)
    start = int(bad[-1]) + 1 if bad.size else 0
    return start if z.size - start >= min_run else None


def _common(steps_a, a, steps_b, b) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(steps, a, b) on A's finite steps inside the overlap of both finite ranges, B interpolated there."""
    ka, kb = np.isfinite(a), np.isfinite(b)
    sa, va, sb, vb = np.asarray(steps_a, float)[ka], a[ka], np.asarray(steps_b, float)[kb], b[kb]
    if sa.size == 0 or sb.size == 0:
        return np.empty(0), np.empty(0), np.empty(0)
    inside = (sa >= max(sa[0], sb[0])) & (sa <= min(sa[-1], sb[-1]))
    return sa[inside], va[inside], np.interp(sa[inside], sb, vb)


def parting(metric: str, steps_a, a, steps_b, b) -> Parting:
    """Where B parts from A on `metric` (module docstring); a, b: float arrays on their steps, NaN where missing."""
    s, x, y = _common(steps_a, np.asarray(a, float), steps_b, np.asarray(b, float))
    n = s.size
    w = max(MIN_WINDOW, int(WINDOW_SHARE * n))
    base = dict(metric=metric, window=w, common_rows=n, sigma_a=row_noise(x), sigma_b=row_noise(y))
    if n < MIN_COMMON:
        return Parting(step=None, z=None, min_abs_z=None, reason=f"{n} common rows (at least {MIN_COMMON} are needed)",
                       **base)
    z = z_series(x, y, w)
    j = first_lasting(z, K_SE, w)
    if j is None:
        return Parting(step=None, z=None, min_abs_z=None, **base)
    return Parting(step=int(s[j + w - 1]), z=float(z[j]), min_abs_z=float(np.min(np.abs(z[j:]))), from_start=j == 0,
                   **base)


def partings(log_a, log_b, metrics: tuple[str, ...] = METRICS) -> list[Parting]:
    """B against A on every metric both logs hold, the earliest parting first (then in METRICS order), those that do
    not part after."""
    out = [parting(m, log_a.steps, log_a[m], log_b.steps, log_b[m]) for m in metrics if m in log_a and m in log_b]
    return sorted(out, key=lambda p: (not p.parts, p.step if p.parts else 0, metrics.index(p.metric)))
