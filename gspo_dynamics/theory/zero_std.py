"""Zero-std groups when prompts differ in difficulty: the Beta mixture law and its inverse.

A prompt solved with probability p gives a group of G all-equal 0/1 rewards (zero std, zero
advantage) with probability p^G + (1 - p)^G (`finite_group.zero_variance_probability`). A batch mixes
prompts; with p ~ F over the prompt set the expected share of zero-std groups is

    z(G) = E_F[p^G + (1 - p)^G]  >=  m^G + (1 - m)^G,    m = E_F[p],                      (1)

by Jensen (x^G is convex on [0, 1]): the batch law at the mean success rate is the minimum, reached
only when every prompt has the same p. Real prompt sets are far from it: a public verl math run at
m = 0.71 and G = 16 logged z = 0.44, where the batch law gives 0.004.

Beta prompts, p ~ Beta(a, b), mean m = a / (a + b), concentration c = a + b:

    E[p^G] = B(a + G, b) / B(a, b) = prod_{j=0}^{G-1} (a + j) / (a + b + j),                 (2)

and E[(1 - p)^G] with a and b swapped. At a fixed mean each factor (m c + j) / (c + j) falls with c
(its c-derivative is -j (1 - m) / (c + j)^2 <= 0, < 0 for j >= 1), so for G >= 2 the share falls
strictly from 1 (c -> 0: each prompt always solved or always failed) to the batch law (c -> infinity:
identical prompts). A logged share between the two fixes c (`fit_difficulty`). At fixed (a, b) the
share falls in G towards P(p in {0, 1}) = 0, but only as a power law (Gamma-ratio asymptotics of (2)):

    z(G) ~ Gamma(a + b) / Gamma(b) G^-a + Gamma(a + b) / Gamma(a) G^-b,                     (3)

so a wide spread (a or b below 1) needs far larger groups than the batch law suggests
(`group_size_for_zero_std`). From an eval of the starting model, `zero_std_share_pass_rates`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gspo_dynamics._checks import positive_int
from gspo_dynamics._errors import ConfigError

# Search range of the concentration c = a + b. Below C_MIN, 1 - z ~ 2 m (1 - m) c H_{G-1} < 1e-10:
# no logged share (a fraction of at most a few thousand groups) resolves it. Above C_MAX the share
# differs from the batch law by ~ G^2 / c < 1e-9 relative: indistinguishable from identical prompts.
C_MIN = 1e-12
C_MAX = 1e15
# A logged share within this relative distance above the batch law fits only c beyond ~1e10 G^2:
# the log shows no spread of difficulty, and `fit_difficulty` answers None (use the batch law).
BATCH_LAW_RTOL = 1e-9
# brentq's absolute tolerance on log c: c to ~1e-13 relative, far below any logged share's precision.
LOG_C_XTOL = 1e-13
# Grid points per decade of c for the least-squares fit over several steps, before Brent refines.
GRID_PER_DECADE = 8
# Pass rates given with `samples` k must be counts s / k; s may be off an integer by this much
# (rates printed to 3 decimals, k <= 100), no more: a rate that is no count of k is a wrong k.
COUNT_TOL = 0.05


@dataclass(frozen=True, kw_only=True)
class Difficulty:
    """The prompt set's spread of difficulty: per-prompt success probability p ~ Beta(a, b)."""

    a: float  # alpha, Beta shape on the success side (pseudo-count of solves)
    b: float  # beta, Beta shape on the failure side (pseudo-count of failures)

    def __post_init__(self) -> None:
        for name in ("a", "b"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise ConfigError(f"the Beta shape {name} must be a finite number > 0, got {value!r}")

    @classmethod
    def from_mean(cls, mean: float, concentration: float) -> Difficulty:
        """Beta(m c, (1 - m) c) from its mean m and concentration c = a + b."""
        return cls(a=float(mean * concentration), b=float((1.0 - mean) * concentration))

    @property
    def mean(self) -> float:
        """m = a / (a + b), the prompt set's mean success rate."""
        return self.a / (self.a + self.b)

    @property
    def concentration(self) -> float:
        """c = a + b: small c, prompts all-or-nothing; c -> infinity, identical prompts."""
        return self.a + self.b

    @property
    def std(self) -> float:
        """Std of p over prompts, sqrt(m (1 - m) / (c + 1))."""
        return math.sqrt(self.mean * (1.0 - self.mean) / (self.concentration + 1.0))


def _shapes(a, b) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    for name, value in (("a", a), ("b", b)):
        bad = ~(np.isfinite(value) & (value > 0))
        if bad.any():
            raise ConfigError(f"the Beta shape {name} must be finite and > 0, got {float(value[bad].flat[0])!r}")
    return a, b


def _group_sizes(G) -> np.ndarray:
    G = np.asarray(G)
    if G.dtype == bool or not (np.issubdtype(G.dtype, np.integer) or np.all(np.mod(G, 1) == 0)) or np.any(G < 1):
        raise ConfigError(f"the group size G must be an integer >= 1 (or an array of them), got {G.tolist()!r}")
    return G.astype(np.int64)


def _log_moment(a: np.ndarray, b: np.ndarray, G: np.ndarray) -> np.ndarray:
    """log E[p^G] = sum_{j<G} log((a + j) / (a + b + j)), broadcast over a, b and G.

    The exact product (2), not betaln: log B(a + G, b) - log B(a, b) cancels ~log(c) digits, 1e-5
    relative at c = 1e10, which is the whole gap to the batch law there. log1p(-b / (a + b + j)) errs
    by ~eps b / a relative where a << b, but E[p^G] <= a / (a + b) is then ~a / b of the share: the
    share keeps its digits.
    """
    out_shape = np.broadcast_shapes(a.shape, b.shape, G.shape)
    j = np.arange(int(G.max()) if G.size else 0, dtype=float)
    terms = np.log1p(-b[..., None] / ((a + b)[..., None] + j))  # (..., G_max)
    cum = np.concatenate([np.zeros(terms.shape[:-1] + (1,)), np.cumsum(terms, axis=-1)], axis=-1)  # (..., G_max + 1)
    cum = np.broadcast_to(cum, out_shape + cum.shape[-1:])
    return np.take_along_axis(cum, np.broadcast_to(G, out_shape)[..., None], axis=-1)[..., 0]


def zero_std_share_beta(a, b, G):
    """Expected share of zero-std groups of G 0/1 rewards over prompts with p ~ Beta(a, b):

        z(G) = E[p^G + (1 - p)^G] = B(a + G, b) / B(a, b) + B(a, b + G) / B(a, b).

    Derivation: E[p^G] = int p^G p^(a-1) (1-p)^(b-1) dp / B(a, b) = B(a + G, b) / B(a, b), a Beta
    integral; the all-failure term swaps a and b. Evaluated as the exact product (2) of the module
    docstring, in log space. `a`, `b` (> 0) and `G` (integers >= 1) broadcast like numpy operands;
    for every G against every (a, b) pass G[:, None]. Returns an array of the broadcast shape.
    """
    a, b = _shapes(a, b)
    G = _group_sizes(G)
    # at G = 1 the two moments are m and 1 - m, whose sum rounds to 1 + ulp: a probability, so clip
    return np.minimum(np.exp(_log_moment(a, b, G)) + np.exp(_log_moment(b, a, G)), 1.0)


def _share_at(mean: float, log_c, G) -> np.ndarray:
    c = np.exp(np.asarray(log_c, dtype=float))
    return zero_std_share_beta(mean * c, (1.0 - mean) * c, G)


def _open_unit(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)) or not 0.0 < value < 1.0:
        raise ConfigError(f"{name} must be a number strictly between 0 and 1 (a prompt set always or never "
                          f"solved has no spread to fit), got {value!r}")
    return float(value)


def _share(value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)) or not 0.0 <= value < 1.0:
        raise ConfigError(f"the zero-std share must be in [0, 1) (a share of 1 means every prompt is always solved "
                          f"or always failed: concentration 0, no Beta), got {value!r}")
    return float(value)


def fit_difficulty(mean_success: float, zero_std_share: float, G: int) -> Difficulty | None:
    """The Beta with mean m = `mean_success` whose zero-std share at group size G equals the logged one:

        solve  z(m c, (1 - m) c; G) = s  for c,   z from `zero_std_share_beta`.

    z falls strictly in c from 1 to the batch law m^G + (1 - m)^G (module docstring), so a share in
    between has exactly one root, found by brentq on log c. Returns None when the share is at or
    below the batch law (within BATCH_LAW_RTOL): the log shows no spread of difficulty beyond that of
    identical prompts (c = infinity, not a Beta); use `finite_group.zero_variance_probability` then.
    Raises ConfigError for m outside (0, 1), s outside [0, 1), G < 2, or s so close to 1 that c < C_MIN.
    """
    from scipy.optimize import brentq  # here: scipy.optimize costs ~0.2 s at import, most callers never fit

    m, s = _open_unit("mean_success", mean_success), _share(zero_std_share)
    G = positive_int("G", G, 2, hint=" (with G = 1 every group is zero-std)")
    if s <= (m**G + (1.0 - m) ** G) * (1.0 + BATCH_LAW_RTOL):
        return None
    lo, hi = math.log(C_MIN), math.log(C_MAX)
    if _share_at(m, lo, G) <= s:
        raise ConfigError(f"a zero-std share of {s!r} at mean success {m!r} and G = {G} needs a Beta concentration "
                          f"below {C_MIN:g}: the prompts are all-or-nothing, and the share does not resolve their spread")
    if _share_at(m, hi, G) >= s:
        return None
    log_c = brentq(lambda x: float(_share_at(m, x, G)) - s, lo, hi, xtol=LOG_C_XTOL)
    return Difficulty.from_mean(m, math.exp(log_c))


def fit_difficulty_log(means, shares, G: int) -> float | None:
    """The concentration c = a + b shared by logged steps t, each at its own mean success m_t:

        c* = argmin_c sum_t [z(m_t c, (1 - m_t) c; G) - s_t]^2,

    least squares on the share over log c in [C_MIN, C_MAX] (a grid, then Brent's bounded method
    between the best grid point's neighbours). Step t's difficulty is `Difficulty.from_mean(m_t, c*)`.
    Returns None when the best fit is at C_MAX (no spread beyond identical prompts: the batch law).
    """
    from scipy.optimize import minimize_scalar

    means, shares = np.asarray(means, dtype=float), np.asarray(shares, dtype=float)
    if means.ndim != 1 or means.shape != shares.shape or means.size == 0:
        raise ConfigError(f"means and shares must be two 1-D arrays of the same nonzero length, got shapes "
                          f"{means.shape} and {shares.shape}")
    for m, s in zip(means, shares):
        _open_unit("every mean success", float(m))
        _share(float(s))
    G = positive_int("G", G, 2, hint=" (with G = 1 every group is zero-std)")

    def loss(log_c):  # log_c: (K,) -> (K,)
        c = np.exp(np.asarray(log_c, dtype=float))[:, None]  # (K, 1) against the steps (T,)
        z = zero_std_share_beta(means * c, (1.0 - means) * c, G)  # (K, T)
        return ((z - shares) ** 2).sum(axis=-1)

    decades = math.log10(C_MAX / C_MIN)
    grid = np.linspace(math.log(C_MIN), math.log(C_MAX), int(decades * GRID_PER_DECADE) + 1)
    best = int(np.argmin(loss(grid)))
    if best == grid.size - 1:
        return None
    lo, hi = grid[max(best - 1, 0)], grid[min(best + 1, grid.size - 1)]
    res = minimize_scalar(lambda x: float(loss([x])[0]), bounds=(lo, hi), method="bounded",
                          options={"xatol": LOG_C_XTOL})
    return math.exp(res.x)


def group_size_for_zero_std(difficulty: Difficulty, target_share: float, g_max: int = 1024) -> int | None:
    """The smallest G with z(G) <= target: z from `zero_std_share_beta`, falling strictly in G.

    None when even G = g_max leaves a larger share. For a wide spread the fall is a power law,
    z(G) ~ Gamma(a + b) / Gamma(b) G^-a + Gamma(a + b) / Gamma(a) G^-b (module docstring, (3)):
    halving the share takes 2^(1 / min(a, b)) times the group, e.g. 4x at min(a, b) = 1/2.
    """
    if not isinstance(difficulty, Difficulty):
        raise ConfigError(f"difficulty must be a Difficulty, got {type(difficulty).__name__}")
    target = _share(target_share)
    if target <= 0.0:
        raise ConfigError(f"the target zero-std share must be > 0 (a Beta's share never reaches 0), got {target_share!r}")
    g_max = positive_int("g_max", g_max, 2)
    G = np.arange(2, g_max + 1)
    meets = zero_std_share_beta(difficulty.a, difficulty.b, G) <= target  # (g_max - 1,)
    return int(G[np.argmax(meets)]) if meets.any() else None


def _all_of_group(s: np.ndarray, k: int, G: int) -> np.ndarray:
    """C(s, G) / C(k, G) = prod_{i<G} (s - i) / (k - i): the share of the eval's G-subsets of samples
    that are all successes; 0 once s < G (the factor i = s is 0). Shape (n,) from (n,)."""
    i = np.arange(G, dtype=float)
    return np.prod(np.clip(s[:, None] - i, 0.0, None) / (k - i), axis=-1)  # (n, G) -> (n,)


def zero_std_share_pass_rates(pass_rates, G: int, samples: int | None = None) -> float:
    """The empirical mixture over per-prompt pass rates p_i of the starting model (n prompts):

        samples=None:  z = (1/n) sum_i [p_i^G + (1 - p_i)^G]                    (plug-in)
        samples=k:     z = (1/n) sum_i [C(s_i, G) + C(k - s_i, G)] / C(k, G),   s_i = k p_i.

    With exact p_i the plug-in is the mixture law (1). With estimates p_hat = s / k from k samples it
    is biased upward: x^G is convex, so E[p_hat^G] >= (E p_hat)^G = p^G (Jensen), by about
    C(G, 2) p^(G-2) p (1 - p) / k; sampling noise makes prompts look more all-or-nothing than they
    are. C(s, G) / C(k, G) is unbiased: it is the share of the k samples' G-subsets that are all
    successes, and each subset is all successes with probability p^G. For k < G no unbiased
    estimator exists (any estimator's mean is a polynomial of degree <= k in p, and p^G has degree
    G > k), so that raises ConfigError: pass samples=None for the plug-in and its upward bias.
    """
    p = np.asarray(pass_rates, dtype=float)
    if p.ndim != 1 or p.size == 0 or not np.all(np.isfinite(p) & (p >= 0.0) & (p <= 1.0)):
        raise ConfigError(f"pass_rates must be a nonempty 1-D array of numbers in [0, 1], got shape {p.shape} "
                          f"with range [{np.nanmin(p) if p.size else 'none'}, {np.nanmax(p) if p.size else 'none'}]")
    G = positive_int("G", G, 1)
    if samples is None:
        return float(np.mean(p**G + (1.0 - p) ** G))
    k = positive_int("samples", samples, 1)
    if k < G:
        raise ConfigError(f"an eval with samples = {k} per prompt has no unbiased estimate of the zero-std share at "
                          f"G = {G} (it needs samples >= G); pass samples=None for the plug-in, which is biased upward")
    s = np.rint(p * k)
    off = np.abs(p * k - s)
    if off.max() > COUNT_TOL:
        bad = int(np.argmax(off))
        raise ConfigError(f"pass rate {p[bad]!r} (prompt {bad}) is no count of samples = {k}: is samples the eval's "
                          f"samples per prompt?")
    return float(np.mean(_all_of_group(s, k, G) + _all_of_group(k - s, k, G)))
