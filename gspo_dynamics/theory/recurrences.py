"""Success-probability recurrences of KL-regularised GRPO with verifiable rewards (G -> infinity).

Mroueh (2025), "Reinforcement Learning with Verifiable Rewards: GRPO's Effective Loss, Dynamics,
and Success Amplification", arXiv:2503.06639. At iteration n the policy is the exact optimum of

    pi_n = argmax_pi  E_pi[A_{n-1}] - beta_ref KL(pi || pi_ref) - beta_prev KL(pi || pi_{n-1}),

where A_{n-1} is the group advantage of a verifiable reward computed under pi_{n-1} (infinite
group, success probability p = p_{n-1}):

    mean:       A(1) = 1 - p,                          A(0) = -p
    mean + std: A(1) = (1 - p) / (sqrt(p (1-p)) + eps), A(0) = -p / (sqrt(p (1-p)) + eps)

(eps = 0 gives Mroueh's A(1) = sqrt((1-p)/p), A(0) = -sqrt(p/(1-p))). With beta = beta_ref +
beta_prev, the stationarity condition of the Lagrangian (normalisation multiplier lambda),
A(a) - beta_ref (log pi/pi_ref + 1) - beta_prev (log pi/pi_{n-1} + 1) = lambda, gives the
Gibbs policy

    pi_n(a) ∝ pi_ref(a)^(beta_ref/beta) pi_{n-1}(a)^(beta_prev/beta) exp(A(a) / beta),

the unique maximiser (the objective is strictly concave in pi). For the two-armed bandit
(pi(1) = sigmoid(z), reward 1 for action 1) the log-odds of the Gibbs policy are

    z_n = (beta_ref z_ref + beta_prev z_{n-1} + Delta(p_{n-1})) / beta,     p_n = sigmoid(z_n),
    Delta(p) = A(1) - A(0) = 1 (mean),   1 / (sqrt(p (1-p)) + eps) (std).

So p_n = h(p_{n-1}). Special cases: mean advantage with beta_prev = 0 makes h constant,
p_1 = sigmoid(z_ref + 1/beta_ref); std advantage with eps = 0 and beta_prev = 0 is Mroueh's
h(p) = 1 / (1 + ((1 - q)/q) exp(-1 / (beta sqrt(p (1-p))))), q = sigmoid(z_ref).

Fixed points (p* = h(p*)): z* = (beta_ref z_ref + beta_prev z* + Delta)/beta, i.e.

    r(z*) = beta_ref (z* - z_ref) - Delta(sigmoid(z*)) = 0,

which does not involve beta_prev: the proximal term changes how fast, not where. These are the
roots of the on-policy gradient force of `bandit` (G -> infinity, exact KL, kl_coef = beta_ref):
its drive is m(p) = p (1-p) Delta(p) for both advantages, so F(z, z) = -p (1-p) r(z).
Since Delta > 0, every fixed point has z* > z_ref: success is amplified, p* > p_ref. With
beta_ref = 0 there is none in (0, 1): z_n = z_{n-1} + Delta / beta_prev increases without bound
and p_n -> 1. Stability: h'(p*) = (beta_prev + dDelta/dz) / beta = 1 - r'(z*) / beta, and the
fixed point attracts iff |h'(p*)| < 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.optimize import brentq
from scipy.special import expit, logit

from gspo_dynamics._checks import positive_int
from gspo_dynamics._errors import ConfigError

Advantage = Literal["mean", "std"]
ADVANTAGES: tuple[str, ...] = ("mean", "std")

# Fixed-point scan: a fine uniform grid over the first DENSE_SPAN logits above z_ref (where
# Delta varies on an O(1) scale), then a geometric grid out to the bound on the roots (where
# Delta is monotone and saturated, so roots are isolated). Tangential double roots are missed.
DENSE_SPAN = 64.0
DENSE_POINTS = 16_385
SPARSE_POINTS = 4_097


@dataclass(frozen=True, kw_only=True)
class GibbsRecurrence:
    """One exactly-optimised GRPO iteration: the objective's weights and the advantage."""

    kl_ref: float  # beta_ref, weight of KL(pi || pi_ref)
    kl_prev: float = 0.0  # beta_prev, weight of KL(pi || pi_{n-1}) (proximal / trust-region term)
    ref_logit: float = 0.0  # z_ref, pi_ref(1) = sigmoid(z_ref)
    advantage: Advantage = "std"  # "mean": A = r - p;  "std": A = (r - p) / (sqrt(p (1-p)) + eps)
    std_eps: float = 0.0  # eps added to the std in the "std" advantage (Mroueh: 0; TRL: 1e-4)

    def __post_init__(self) -> None:
        for name in ("kl_ref", "kl_prev", "ref_logit", "std_eps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ConfigError(f"{name} must be a finite number, got {value!r}")
        if self.kl_ref < 0.0 or self.kl_prev < 0.0:
            raise ConfigError(f"KL weights must be >= 0, got kl_ref={self.kl_ref}, kl_prev={self.kl_prev}")
        if self.kl_ref + self.kl_prev <= 0.0:
            raise ConfigError(
                "kl_ref + kl_prev must be positive: without a KL term the optimum is the greedy policy p = 1"
            )
        if self.advantage not in ADVANTAGES:
            raise ConfigError(f"advantage must be one of {', '.join(ADVANTAGES)}; got {self.advantage!r}")
        if self.std_eps < 0.0:
            raise ConfigError(f"std eps must be >= 0, got {self.std_eps}")

    @property
    def beta(self) -> float:
        """beta = beta_ref + beta_prev, the temperature of the Gibbs policy."""
        return self.kl_ref + self.kl_prev


def _spread(z):
    """sqrt(p (1 - p)) at p = sigmoid(z), accurate in both tails (expit(-z) does not round to 0 - 1)."""
    z = np.asarray(z, dtype=float)
    return np.sqrt(expit(z) * expit(-z))


def group_advantages(p, advantage: Advantage, std_eps: float = 0.0):
    """(A(1), A(0)): the G -> infinity group advantages of reward 1 and 0 at success p in (0, 1)."""
    p = np.asarray(p, dtype=float)
    if advantage == "mean":
        return 1.0 - p, -p
    scale = np.sqrt(p * (1.0 - p)) + std_eps
    return (1.0 - p) / scale, -p / scale


def advantage_gap(z, rec: GibbsRecurrence):
    """Delta = A(1) - A(0) at p = sigmoid(z): 1 (mean) or 1 / (sqrt(p (1-p)) + eps) (std)."""
    z = np.asarray(z, dtype=float)
    if rec.advantage == "mean":
        return np.ones_like(z)
    with np.errstate(divide="ignore"):  # eps = 0 and p rounded to 0 or 1: Delta = inf, p -> 1
        return 1.0 / (_spread(z) + rec.std_eps)


def _advantage_gap_slope(z, rec: GibbsRecurrence):
    """dDelta/dz: 0 (mean); -s (1 - 2p) / (2 (s + eps)^2) with s = sqrt(p (1-p)) (std)."""
    z = np.asarray(z, dtype=float)
    if rec.advantage == "mean":
        return np.zeros_like(z)
    s = _spread(z)  # ds/dz = s (1 - 2p) / 2 and 1 - 2p = -tanh(z/2)
    return s * np.tanh(0.5 * z) / (2.0 * (s + rec.std_eps) ** 2)


def logit_recurrence(z, rec: GibbsRecurrence):
    """z_n = (beta_ref z_ref + beta_prev z_{n-1} + Delta(z_{n-1})) / beta; broadcasts over z."""
    z = np.asarray(z, dtype=float)
    # beta_prev = 0 drops the term outright: 0 * z would be nan once z has run off to +inf (p -> 1)
    proximal = rec.kl_prev * z if rec.kl_prev != 0.0 else 0.0
    return (rec.kl_ref * rec.ref_logit + proximal + advantage_gap(z, rec)) / rec.beta


def _check_success(p) -> np.ndarray:
    p = np.asarray(p, dtype=float)
    if not np.all((p > 0.0) & (p < 1.0)):
        raise ConfigError(f"success probabilities must lie in (0, 1), got {p[(p <= 0) | (p >= 1) | np.isnan(p)][:3]!r}")
    return p


def success_recurrence(p, rec: GibbsRecurrence):
    """p_n = h(p_{n-1}) = sigmoid(logit_recurrence(logit(p))), elementwise for p in (0, 1)."""
    return expit(logit_recurrence(logit(_check_success(p)), rec))


def recurrence_slope(p, rec: GibbsRecurrence):
    """h'(p) = h (1 - h) / (p (1 - p)) * (beta_prev + dDelta/dz) / beta, elementwise."""
    p = _check_success(p)
    z = logit(p)
    h = expit(logit_recurrence(z, rec))
    return h * (1.0 - h) / (p * (1.0 - p)) * (rec.kl_prev + _advantage_gap_slope(z, rec)) / rec.beta


def iterate(p0, rec: GibbsRecurrence, steps: int) -> np.ndarray:
    """p_0, p_1, ..., p_steps; shape (steps + 1, *shape(p0)).

    Iterated on the logit (exact in both tails); with beta_ref = 0 the logit grows without bound
    and p_n -> 1 (float64 rounds it to 1 once z > ~37).
    """
    positive_int("steps", steps, minimum=0)
    z = logit(_check_success(p0))
    out = [expit(z)]
    for _ in range(steps):
        z = logit_recurrence(z, rec)
        out.append(expit(z))
    return np.stack(out)


@dataclass(frozen=True)
class RecurrenceFixedPoint:
    logit: float  # z*, root of beta_ref (z - z_ref) = Delta(sigmoid(z))
    success: float  # p* = sigmoid(z*) (rounds to 1.0 for z* > ~37)
    slope: float  # h'(p*) = (beta_prev + dDelta/dz) / beta
    stable: bool  # |h'(p*)| < 1: iterations started nearby converge to it


def _root_residual(z, rec: GibbsRecurrence):
    """r(z) = beta_ref (z - z_ref) - Delta(sigmoid(z)): zero exactly at the fixed points."""
    return rec.kl_ref * (np.asarray(z, dtype=float) - rec.ref_logit) - advantage_gap(z, rec)


def _root_span(rec: GibbsRecurrence) -> float:
    """L such that every fixed point lies in (z_ref, z_ref + L) and r(z_ref + L) != 0.

    Bounded gap (mean: Delta = 1; std with eps > 0: Delta <= 1/eps): beta_ref (z - z_ref) <= Delta_max.
    std with eps = 0: Delta = 1/sqrt(p (1-p)) >= exp(|z|/2), so a root has exp(|z|/2) <=
    beta_ref (|z| + |z_ref|); the convex phi(y) = exp(y/2) - beta_ref (y + |z_ref|) is positive
    for all y >= Y once phi(Y) > 0 and Y >= 2 log(2 beta_ref) (phi increasing there).
    """
    if rec.advantage == "mean" or rec.std_eps > 0.0:
        gap_max = 1.0 if rec.advantage == "mean" else 1.0 / rec.std_eps
        return 2.0 * gap_max / rec.kl_ref + 1.0
    y = max(1.0, 2.0 * math.log(max(2.0 * rec.kl_ref, 1.0)))
    while math.exp(y / 2.0) <= rec.kl_ref * (y + abs(rec.ref_logit)):
        y *= 2.0
    return max(y - rec.ref_logit, 0.0) + 1.0


def fixed_points(rec: GibbsRecurrence) -> tuple[RecurrenceFixedPoint, ...]:
    """Every fixed point of h in (0, 1), in increasing order, with its stability.

    Scans r(z) (module docstring) on z in (z_ref, z_ref + L] for sign changes and refines each
    with brentq; r(z_ref) = -Delta < 0. Mean advantage: exactly one, z* = z_ref + 1/beta_ref.
    std advantage, eps = 0: none or two (lower stable when |h'| < 1, upper unstable: above it
    p -> 1). beta_ref = 0: none, the iteration runs to p = 1. The roots do not depend on beta_prev;
    their stability does.
    """
    if rec.kl_ref == 0.0:
        return ()
    span = _root_span(rec)
    t = np.linspace(0.0, min(span, DENSE_SPAN), DENSE_POINTS)
    if span > DENSE_SPAN:
        t = np.concatenate([t, np.geomspace(DENSE_SPAN, span, SPARSE_POINTS)[1:]])
    z = rec.ref_logit + t
    r = _root_residual(z, rec)
    nonzero = np.flatnonzero(np.sign(r) != 0)  # exact zeros sit inside a bracket of nonzero ends
    out = []
    for i, j in zip(nonzero[:-1], nonzero[1:]):
        if np.sign(r[i]) == np.sign(r[j]):
            continue
        z_star = brentq(lambda x: float(_root_residual(x, rec)), z[i], z[j], xtol=1e-14, rtol=4 * np.finfo(float).eps)
        slope = float((rec.kl_prev + _advantage_gap_slope(z_star, rec)) / rec.beta)
        out.append(RecurrenceFixedPoint(logit=z_star, success=float(expit(z_star)), slope=slope, stable=abs(slope) < 1.0))
    return tuple(out)
