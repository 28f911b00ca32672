"""Clip-aware drift of token log-ratios for a tabular policy: where the lognormal law of `ratios` stops.

`ratios` models log w after j steps as N(-sigma^2/2, sigma^2) with sigma^2(j) = (j d)^2 + j n^2: a
drift with no memory of the clip. Under the PPO-clipped loss that is wrong as soon as the ratios
reach the clip range: a sample whose ratio left [1 - eps_low, 1 + eps_high] on its advantage's side
carries no gradient, so a token whose log-ratio crossed a bound stops being pushed outward by its
own samples while the samples of the other sign keep pulling it back. The log-ratio is then a
random walk with soft walls, and its spread saturates. This module follows that walk per token.

Model. Tabular policy (positions independent, logits theta_t over V tokens), sampling law p = pi_s,
one SGD step per fresh minibatch of N sequences of length L from pi_s on the per-sequence token-mean
loss (GRPO). Sample i at position t has token y_i, advantage A_i and importance weight w_i; the
clipped loss keeps it with k_i = 1{A_i > 0, w_i <= 1 + eps_high} + 1{A_i < 0, w_i >= 1 - eps_low}.
To first order in the step the log-ratio X_y = log pi_k(y) - log pi_s(y) of token y changes by

    Delta X_y = (lr / (N L)) sum_i a_i c_{y, y_i},    a_i = A_i w_i k_i,
    c_{y y'} = 1{y = y'} - p_y - p_y' + S2,   S2 = sum_y p_y^2,

(the softmax Jacobian of theta_y and of the normaliser). The N samples are i.i.d. (group coupling
of the advantages neglected), so given the state the step has

    mean:      mu_y = (lr / L) sum_y' p_y' c_{y y'} E[a | y']
    variance:  s_y^2 = (lr^2 / (N L^2)) [sum_y' p_y' c_{y y'}^2 E[a^2 | y'] - (L mu_y / lr)^2].

The own term (y' = y) is where the clip feeds back: given X_y = x the weight is w = e^x and

    E[a | y] = e^x (m+_y 1{x <= b} + m-_y 1{x >= a}),  E[a^2 | y] = e^{2x} (s+_y 1{x <= b} + s-_y 1{x >= a}),

with a = log(1 - eps_low), b = log(1 + eps_high) and the signed conditional advantage moments
m+- = E[A 1{A >< 0} | y], s+- = E[A^2 1{A >< 0} | y] (inputs: they come from the reward law). Inside
[a, b] the token drifts with both signs; above b only its negative-advantage samples act (a pull
back of size (lr / L) p_y c_yy e^x m-_y per step, with half the variance), below a only the
positive ones. The other tokens' terms (y' != y) enter through their means over their own current
laws, E[a | y'] = E_{x'}[...] (a mean-field closure: exact for the mean step, it neglects the
correlation between tokens of one position). Unclipped (eps = None) the same walk with k = 1 gives
back the memoryless drift of `ratios`: for small steps, tokens independent of the advantage,
Var_{y ~ p}[X] = j n^2 with n = `ratios.tabular_noise_drift` (tested).

Numerics. Each token's law of X is a histogram on a uniform grid (cell width h, range +-x_max;
mass beyond is kept in the edge cells and reported as `edge_mass`). One step maps each atom x to
x + mu(x) + s(x) z_k over the Gauss-Hermite nodes z_k (weights omega_k): the Gaussian step of the
conditional law (the sum of N p_y ~ several samples, to second cumulant), deposited on the grid by
linear interpolation (mean exact, variance inflated by at most h^2/4 per step). From the
per-position mixtures over y ~ p:

    token:     law of log w_t pooled over positions (its mean, variance, P(w < 1 - e_lo), P(w > 1 + e_hi))
    sequence:  log s = (1/L) sum_t X_t with positions independent: the L-fold convolution (by FFT).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.theory.ratios import _integer, _real

GRID_STEP = 0.005  # h: cell width of log w; variance added by deposits <= h^2/4 per step (6e-6)
GRID_MAX = 1.5  # |log w| covered; a ratio beyond e^1.5 is far outside any clip range used here
GH_NODES = 12  # Gauss-Hermite nodes per step: exact moments of the Gaussian step up to order 23
POSITION_CHUNK = 8  # positions propagated together (arrays of P V G GH_NODES floats)


@dataclass(frozen=True)
class SignedAdvantage:
    """Moments of the advantage given the token, split by sign; arrays (L, V) (position, token).

    pos_mean = E[A 1{A > 0} | y] >= 0, neg_mean = E[A 1{A < 0} | y] <= 0,
    pos_sq = E[A^2 1{A > 0} | y], neg_sq = E[A^2 1{A < 0} | y] (A = 0 counts in neither).
    """

    pos_mean: np.ndarray
    neg_mean: np.ndarray
    pos_sq: np.ndarray
    neg_sq: np.ndarray

    def __post_init__(self):
        arrays = [np.asarray(x, dtype=float) for x in (self.pos_mean, self.neg_mean, self.pos_sq, self.neg_sq)]
        if any(a.shape != arrays[0].shape or a.ndim != 2 for a in arrays):
            raise ConfigError(f"signed advantage moments must be (L, V) arrays of one shape, got {[a.shape for a in arrays]}")
        pm, nm, ps, ns = arrays
        if not all(np.isfinite(a).all() for a in arrays):
            raise ConfigError("signed advantage moments must be finite")
        if (pm < 0).any() or (nm > 0).any() or (ps < 0).any() or (ns < 0).any():
            raise ConfigError("need pos_mean >= 0, neg_mean <= 0 and non-negative second moments")
        # Cauchy-Schwarz within each sign: E[A 1{.}]^2 <= E[A^2 1{.}] (P <= 1); a tolerance for Monte Carlo inputs
        if (pm**2 > ps * (1 + 1e-9) + 1e-12).any() or (nm**2 > ns * (1 + 1e-9) + 1e-12).any():
            raise ConfigError("signed advantage moments violate E[A 1{.}]^2 <= E[A^2 1{.}]")
        for name, a in zip(("pos_mean", "neg_mean", "pos_sq", "neg_sq"), arrays):
            object.__setattr__(self, name, a)

    @classmethod
    def from_samples(cls, samples_by_class: np.ndarray) -> "SignedAdvantage":
        """Moments from advantage samples (L, V, M): M draws of A given the token at each class."""
        A = np.asarray(samples_by_class, dtype=float)
        if A.ndim != 3:
            raise ConfigError(f"advantage samples must be (L, V, M), got shape {A.shape}")
        pos, neg = np.maximum(A, 0.0), np.minimum(A, 0.0)
        return cls(pos.mean(-1), neg.mean(-1), (pos**2).mean(-1), (neg**2).mean(-1))


@dataclass(frozen=True)
class LogRatioLaw:
    """Laws of the token log-ratio after j clipped SGD steps, one per window position.

    grid: (G,) atoms of log w; density: (J, L, G) per-position mixture over y ~ pi_s (rows sum to
    1); class_mean: (J, L, V) E[log w_t | y_t = y]; window: (J,) the j's; edge_mass: (J,) largest
    mass in an edge cell (should be ~0); class_density: the per-class laws, when kept.
    """

    grid: np.ndarray
    density: np.ndarray
    class_mean: np.ndarray
    window: tuple[int, ...]
    edge_mass: np.ndarray
    class_density: np.ndarray | None = None  # (J, L, V, G) law of log w_t given y_t = y (keep_classes=True)

    def conditional_sequence_mean(self, probs, weight) -> np.ndarray:
        """E[log s | event] for an event of the response whose probability given y_t = y is
        weight (L, V) (e.g. P(A > 0 | y_t = y)), positions independent given the event to first order:

            E[log s | e] = (1/L) sum_t sum_y p_ty P(e | y) E[log w_t | y] / sum_y p_ty P(e | y).

        Returns (J,); a position where the event has probability 0 counts with its plain mean.
        """
        p, q = np.asarray(probs, float), np.asarray(weight, float)
        if q.shape != p.shape or (q < 0).any() or (q > 1).any():
            raise ConfigError(f"weight must be an (L, V) array of probabilities like probs, got shape {q.shape}")
        joint = p * q  # (L, V)
        norm = joint.sum(-1, keepdims=True)
        tilted = np.where(norm > 0, joint / np.where(norm > 0, norm, 1.0), p)  # (L, V) law of y_t given the event
        return np.einsum("lv,jlv->j", tilted, self.class_mean) / p.shape[0]

    def token_clip_readouts(self, probs, advantage: "SignedAdvantage", clip_low: float, clip_high: float,
                            clip_mode: str = "drop") -> dict[str, np.ndarray]:
        """The stability model's read-outs of the token ratio w = e^X, from the per-class laws; each (J,).

        With a = log(1 - eps_low), b = log(1 + eps_high), m+- and s+- the signed advantage moments given
        the class (t, y) (`SignedAdvantage`), and sums over positions t and tokens y ~ p_t:

            clipped_fraction = sum p [m+ E[w 1{X > b} | ty] + |m-| E[w 1{X < a} | ty]]
                               / sum p (m+ + |m-|) E[w | ty]
            noise_factor     = sum p [s+ E[w^2 1{X <= b} | ty] + s- E[w^2 1{X >= a} | ty]] / sum p (s+ + s-)

        (the share of the |A|-weighted expected gradient the PPO min switches off, and E[rho^2 1{kept}]
        weighted by A^2: the sign of A is the class's, not independent of the ratio). clip_mode "stale"
        (CISPO: the capped weight keeps pushing, so use the unclipped law) counts every weight outside
        [1 - eps_low, 1 + eps_high] in clipped_fraction and keeps every sample in noise_factor with
        weight clip(w)^2. An atom at a bound counts as kept (error <= the mass of one cell).
        """
        if self.class_density is None:
            raise ConfigError("token read-outs need the per-class laws: compute the law with keep_classes=True")
        if clip_mode not in ("drop", "stale"):
            raise ConfigError(f"clip mode must be one of drop, stale; got {clip_mode!r}")
        p = np.asarray(probs, float)
        lo, hi = np.log1p(-clip_low), np.log1p(clip_high)
        x, w = self.grid, np.exp(self.grid)  # (G,)
        pm, nm, ps, ns = (p * getattr(advantage, k) for k in ("pos_mean", "neg_mean", "pos_sq", "neg_sq"))  # (L, V)

        def expect(f):  # E[f(X) | ty] weighted: (J, L, V)
            return self.class_density @ f

        if clip_mode == "drop":
            cut = np.einsum("lv,jlv->j", pm, expect(w * (x > hi))) - np.einsum("lv,jlv->j", nm, expect(w * (x < lo)))
            kept = np.einsum("lv,jlv->j", ps, expect(w**2 * (x <= hi))) + np.einsum("lv,jlv->j", ns, expect(w**2 * (x >= lo)))
        else:
            outside = w * ((x > hi) | (x < lo))
            cut = np.einsum("lv,jlv->j", pm - nm, expect(outside))
            capped = np.clip(w, 1.0 - clip_low, 1.0 + clip_high) ** 2
            kept = np.einsum("lv,jlv->j", ps + ns, expect(capped))
        total = np.einsum("lv,jlv->j", pm - nm, expect(w))
        return {"clipped_fraction": cut / total, "noise_factor": kept / (ps + ns).sum()}

    def _cdf(self, density: np.ndarray, grid: np.ndarray, bound) -> np.ndarray:
        """P(X < bound) with each atom's mass spread evenly over its cell (piecewise-linear CDF)."""
        h = grid[1] - grid[0]
        edges = np.concatenate([grid - h / 2, grid[-1:] + h / 2])  # (G + 1,)
        cdf = np.concatenate([np.zeros(density.shape[:-1] + (1,)), np.cumsum(density, -1)], -1)  # (..., G + 1)
        return np.array([np.interp(bound, edges, c) for c in cdf.reshape(-1, cdf.shape[-1])]).reshape(density.shape[:-1])

    def token(self, clip_low: float, clip_high: float) -> dict[str, np.ndarray]:
        """Pooled over positions: mean, var of log w and P(w < 1 - clip_low), P(w > 1 + clip_high); each (J,)."""
        pooled = self.density.mean(1)  # (J, G): positions weigh equally
        return self._stats(pooled, self.grid, np.log1p(-clip_low), np.log1p(clip_high))

    def sequence(self, clip_low: float, clip_high: float) -> dict[str, np.ndarray]:
        """Of log s = (1/L) sum_t log w_t (positions independent): the same four, each (J,)."""
        J, L, G = self.density.shape
        n = L * (G - 1) + 1  # support of the sum of L grid indices
        size = 1 << int(np.ceil(np.log2(n)))
        spec = np.ones((J, size // 2 + 1), dtype=complex)
        for t in range(L):  # product of the positions' transforms: the law of the index sum
            spec *= np.fft.rfft(self.density[:, t], size)
        dens = np.clip(np.fft.irfft(spec, size)[:, :n], 0.0, None)  # (J, n): round-off below 0 removed
        dens /= dens.sum(-1, keepdims=True)
        h = self.grid[1] - self.grid[0]
        grid = (L * self.grid[0] + h * np.arange(n)) / L  # atoms of log s
        return self._stats(dens, grid, np.log1p(-clip_low), np.log1p(clip_high))

    def _stats(self, density, grid, lo, hi) -> dict[str, np.ndarray]:
        mean = density @ grid
        var = density @ grid**2 - mean**2
        return {"mean": mean, "var": var, "below": self._cdf(density, grid, lo), "above": 1.0 - self._cdf(density, grid, hi)}


def deposit(mass: np.ndarray, target: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Point masses mass (..., G, K) at positions target (..., G, K) on the uniform grid (G,), each
    split between its two neighbouring atoms by linear interpolation: returns (..., G).

    The mean of every histogram is kept exactly and each mass's variance grows by at most h^2/4
    (h the cell width); mass beyond the grid is put in the edge cells.
    """
    G, h = grid.size, grid[1] - grid[0]
    lead = mass.shape[:-2]
    R = int(np.prod(lead, dtype=np.int64))
    pos = np.clip((target - grid[0]) / h, 0.0, G - 1.0)
    left = np.minimum(pos.astype(np.int64), G - 2)
    frac = (pos - left).ravel()
    idx = ((np.arange(R) * G)[:, None, None] + left.reshape(R, G, -1)).ravel()  # (R G K,) flat cell index
    m = mass.ravel()
    new = np.bincount(idx, m * (1.0 - frac), minlength=R * G)
    new += np.bincount(idx + 1, m * frac, minlength=R * G)
    return new.reshape(lead + (G,))


def _coefficients(p: np.ndarray) -> np.ndarray:
    """c_{y y'} = 1{y = y'} - p_y - p_y' + S2 per position: (L, V, V)."""
    s2 = (p**2).sum(-1)[:, None, None]
    return np.eye(p.shape[1]) - p[:, :, None] - p[:, None, :] + s2


def clipped_log_ratio_law(probs, advantage: SignedAdvantage, *, lr, batch_size, window, clip_low=None,
                          clip_high=None, grid_step=GRID_STEP, grid_max=GRID_MAX, nodes=GH_NODES,
                          keep_classes: bool = False) -> LogRatioLaw:
    """Law of log w_t after j = 1..max(window) steps of the clipped (or, clip None, unclipped) update.

    probs: (L, V) sampling policy pi_s per position; advantage: `SignedAdvantage` (L, V); lr: SGD
    learning rate; batch_size: N sequences per step; clip_low, clip_high: eps_low, eps_high (both or
    neither). The equations are in the module docstring. Cost O(J_max L V G nodes). keep_classes:
    also return the per-class laws (J, L, V, G) (`LogRatioLaw.token_clip_readouts`).
    """
    p = np.asarray(probs, dtype=float)
    if p.ndim != 2 or p.shape[1] < 2 or not np.isfinite(p).all() or (p < 0).any() or (np.abs(p.sum(-1) - 1) > 1e-9).any():
        raise ConfigError(f"probs must be an (L, V) array of distributions over V >= 2 tokens, got shape {p.shape}")
    if advantage.pos_mean.shape != p.shape:
        raise ConfigError(f"advantage moments have shape {advantage.pos_mean.shape}, probs {p.shape}")
    eta = float(_real("lr", lr, 0.0, lo_open=True))
    N = float(_integer("batch size", batch_size, 1))
    J = tuple(int(j) for j in np.atleast_1d(_integer("window position", window, 1)))
    if (clip_low is None) != (clip_high is None):
        raise ConfigError(f"give both clip_low and clip_high or neither, got {clip_low!r}, {clip_high!r}")
    if clip_low is None:
        lo, hi = -np.inf, np.inf
    else:
        lo = float(np.log1p(-_real("clip_low", clip_low, 0.0, 1.0, lo_open=True, hi_open=True)))
        hi = float(np.log1p(_real("clip_high", clip_high, 0.0, lo_open=True)))
    h = float(_real("grid step", grid_step, 0.0, lo_open=True))
    G = 2 * int(np.ceil(float(_real("grid max", grid_max, 0.0, lo_open=True)) / h)) + 1
    grid = h * (np.arange(G) - G // 2)  # (G,), 0 is an atom
    z, omega = np.polynomial.hermite_e.hermegauss(int(_integer("nodes", nodes, 2)))
    omega = omega / omega.sum()  # (K,) standard normal quadrature

    L = p.shape[0]
    lr_l = eta / L
    kept_pos, kept_neg = (grid <= hi).astype(float), (grid >= lo).astype(float)  # (G,)
    chunks = [slice(t, min(t + POSITION_CHUNK, L)) for t in range(0, L, POSITION_CHUNK)]
    density, edge = np.zeros((len(J), L, G)), np.zeros(len(J))
    class_mean = np.zeros((len(J), L, p.shape[1]))
    classes = np.zeros((len(J), L, p.shape[1], G)) if keep_classes else None
    for rows in chunks:  # positions are independent: propagate a few at a time (memory)
        moments = tuple(getattr(advantage, k)[rows] for k in ("pos_mean", "neg_mean", "pos_sq", "neg_sq"))
        d, e, cm, cd = _propagate(p[rows], moments, lr_l, N, J, grid, kept_pos, kept_neg, z, omega)
        density[:, rows], class_mean[:, rows] = d, cm
        if keep_classes:
            classes[:, rows] = cd
        edge = np.maximum(edge, e)
    return LogRatioLaw(grid=grid, density=density, class_mean=class_mean, window=J, edge_mass=edge,
                       class_density=classes)


def _propagate(p, moments, lr_l, N, J, grid, kept_pos, kept_neg, z, omega):
    """The walk of the module docstring for positions p (P, V): per-position mixtures (J, P, G) at
    the window positions J, the largest pi_s-weighted mass in an edge cell (J,), the class
    means (J, P, V) and the class laws (J, P, V, G)."""
    P, V = p.shape
    G = grid.size
    pos_mean, neg_mean, pos_sq, neg_sq = moments
    c = _coefficients(p)  # (P, V, V)
    own_c = np.diagonal(c, axis1=1, axis2=2)  # (P, V) c_yy
    other_c = c - own_c[..., None] * np.eye(V)  # (P, V, V) zero diagonal
    ex = np.exp(grid)  # w at each atom
    g = ex * (pos_mean[..., None] * kept_pos + neg_mean[..., None] * kept_neg)  # (P, V, G) E[a | y, x]
    g2 = ex**2 * (pos_sq[..., None] * kept_pos + neg_sq[..., None] * kept_neg)  # (P, V, G) E[a^2 | y, x]
    dens = np.zeros((P, V, G))
    dens[..., G // 2] = 1.0  # X = 0 at the refresh
    out, edge, means, laws = {}, {}, {}, {}
    for step in range(1, max(J) + 1):
        g_bar, g2_bar = (dens * g).sum(-1), (dens * g2).sum(-1)  # (P, V) mean-field E[a | y'], E[a^2 | y']
        mean_u = np.einsum("pyz,pz,pz->py", other_c, p, g_bar)[..., None] + (p * own_c)[..., None] * g  # (P, V, G)
        sq_u = np.einsum("pyz,pz,pz->py", other_c**2, p, g2_bar)[..., None] + (p * own_c**2)[..., None] * g2
        mu = lr_l * mean_u
        sd = lr_l * np.sqrt(np.maximum(sq_u - mean_u**2, 0.0) / N)
        # normaliser: the common shift of a position that keeps E_{pi_s}[w] = sum_y p_y E[e^X_y] = 1
        # (exact for the softmax; the linear step above conserves it only to first order)
        ew = np.einsum("pv,pvg->p", p, dens * np.exp(grid + mu + 0.5 * sd**2))
        shift = -np.log(ew)[:, None, None]  # (P, 1, 1)
        # Gauss-Hermite nodes of each atom, deposited by linear interpolation on the grid
        target = (grid + mu + shift)[..., None] + sd[..., None] * z  # (P, V, G, K)
        dens = deposit(dens[..., None] * omega, target, grid)
        if step in J:
            out[step] = np.einsum("pv,pvg->pg", p, dens)
            edge[step] = float(np.max(out[step][:, [0, -1]]))
            means[step] = dens @ grid
            laws[step] = dens
    return (np.stack([out[j] for j in J]), np.array([edge[j] for j in J]), np.stack([means[j] for j in J]),
            np.stack([laws[j] for j in J]))
