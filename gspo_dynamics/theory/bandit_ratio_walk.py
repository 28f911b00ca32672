"""Clip-aware walk of the two-armed bandit's importance ratio within a refresh window (L = 1).

The stability model of `ratio_stability` needs, per window position j, the clipped share c_j of
the expected gradient and the noise factor E[rho_j^2 1{kept}]. On the bandit both follow from the
law of one number, the logit moved since the refresh, D_j = z_j - z_s (D_0 = 0), because every
ratio is a function of it: with p = sigmoid(z_s + D) and p_s = sigmoid(z_s),

    w1 = p / p_s = pi(1) / pi_s(1),      w0 = (1 - p) / (1 - p_s),    log w_y = X_y(D).

Step law (same hyperparameters as `bandit` and `fluctuations`). One optimizer step with the ratio
correction applies the group gradient of `finite_group`, g_k = (k/G)(1 - k/G)/s_k, to the scores
weighted by the (clipped) ratios. For a group with k successes the successes carry A = (1 - k/G)/s_k
and score 1 - p, the failures A = -(k/G)/s_k and score -p, so the group's ascent direction is

    g_k h(D),    drop (PPO min):  h(D) = w1 (1 - p) 1{w1 <= 1 + eps_high} + w0 p 1{w0 >= 1 - eps_low}
                 stale (CISPO):   h(D) = clip(w1) (1 - p) + clip(w0) p,   clip(w) = min(max(w, 1 - eps_low), 1 + eps_high)
                 unclipped:       h(D) = w1 (1 - p) + w0 p = p (1 - p) / (p_s (1 - p_s))

(action 1 has A >= 0, action 0 has A <= 0: the PPO min drops the former above 1 + eps_high and the
latter below 1 - eps_low). h factors out of the sum over the group, so the step is exact in this form:

    D_{j+1} = D_j + eta' [ m(p_s) h(D_j) + K(z_s + D_j) + h(D_j) xi_j ],    Var xi = sigma^2,

with m the drive factor (`finite_group.drive_factor`), K the KL force (`bandit.kl_force`, fresh),
sigma^2 = Var_k[g_k] / num_groups (`fluctuations.gradient_noise_variance`). The walk is evaluated
at the fixed point, z_s = z*, where the mean step vanishes at D = 0 (m(p*) + K(z*) = 0): it is
the noise that spreads D, the fresh stiffness and the clip walls that hold it. With heavy-ball
momentum mu > 0 the walk is on (D, u), u the velocity, as the optimizer steps:

    u_{j+1} = mu u_j + m(p_s) h(D_j) + K(z_s + D_j) + h(D_j) xi_j,     D_{j+1} = D_j + eta u_{j+1},

started at D_0 = 0 with the velocity the refresh finds, u_0 ~ N(0, sigma^2 / (1 - mu^2)) (the
noise-driven stationary velocity; the forces' share of it is neglected), or, over a sampling
spread, u_0 | x ~ N(c x, P_vv - c^2 P_xx) with c = P_vx / P_xx from the stationary phase
covariance P_0 of `fluctuations` at hp's refresh interval. (eta' = eta / (1 - mu) below is the
velocity's response to a persistent force, used for the grid and the memoryless drift.) The
step's noise has its exact law: the mean of num_groups
i.i.d. g_k, k ~ Binomial(G, p_s), a lattice of at most C(G + num_groups, num_groups) atoms (a
Gaussian of the same variance, on Gauss-Hermite nodes, beyond MAX_ATOMS atoms).

Memoryless counterpart (`ratios`): without the drift and the walls, D_j has variance j eta'^2 sigma^2,
and the centred log-ratio X_y = D (1{y = 1} - p_s) + O(D^2) has Var_{y ~ pi_s} = p_s (1 - p_s) D^2:

    per-step log-ratio drift  n = eta' sigma sqrt(p_s (1 - p_s)),   coherent drift d = 0 at z*;

a sampling policy off the fixed point, z_s = z* + x, adds the coherent drift d = eta' |F(z_s, z_s)|
sqrt(p_s (1 - p_s)) ~ eta' (a + b) |x| sqrt(p_s (1 - p_s)) (the window drifts back towards z*):
the walk with sampling_spread > 0 has it, the local walk (z_s = z*) has not.

Read-outs of the law of D_j (`BanditRatioWalk`):

    c_j = E[w1 (1 - p) 1{w1 > 1 + eps_high} + w0 p 1{w0 < 1 - eps_low}] / E[w1 (1 - p) + w0 p]
          (drop; stale counts each weight outside [1 - eps_low, 1 + eps_high]): the ratio-weighted
          expected gradient's share that the clip changes; 0 at j = 0
    noise factor_j = E[h(D_j)^2]   (the step noise is sigma^2 h^2: E[rho^2 1{kept}] of the bandit)
    Var[log w]_j = E_{D, y ~ pi_s}[X_y^2] - (E X)^2.

Numerics: the law of D is a histogram propagated through the step's atoms by linear deposits
(`ratio_drift.deposit`); once a step changes it by less than SATURATION_TOL (L1) it is stationary.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.special import ndtri

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.theory import finite_group, fluctuations
from gspo_dynamics.theory.bandit import TwoArmBandit, kl_force, sigmoid, stiffness_partials
from gspo_dynamics.theory.hyperparams import SGD, Hyperparams
from gspo_dynamics.theory.ratio_drift import GH_NODES, deposit

ClipMode = Literal["drop", "stale", "none"]
CLIP_MODES: tuple[str, ...] = ("drop", "stale", "none")  # PPO min, CISPO's capped weight, no clip
GRID_SDS = 8.0  # grid half-width in stationary sds of the unclipped walk (a tail mass ~1e-15 beyond)
CELLS_PER_STEP_SD = 128  # cell width <= step sd / 128: a lattice atom is split across a clip bound only within 1/128 sd of it
MAX_CELLS = 8001  # cap on the grid (cost per step ~ cells x the step law's atoms)
SATURATION_TOL = 1e-9  # L1 change of the law in one step below which it is stationary (c_j then moves < 1e-9 a step)
MAX_ATOMS = 256  # exact law of the step's group mean up to this many atoms, else Gaussian (GH_NODES)
MOMENTUM_CELLS = (401, 121)  # (D, u) grid of the momentum walk: bilinear deposits, cost ~ cells x atoms
SPREAD_NODES = 25  # equal-probability nodes over the sampling logit's spread (error O(1/K) on discontinuous read-outs)


@dataclass(frozen=True)
class BanditRatioWalk:
    """Laws of D_j = z_j - z_s for j = 0..J-1, one per sampling logit z_s = z* + x_k (a quadrature
    over the sampling policy's spread; one node x = 0 by default), and the read-outs of the module
    docstring averaged over the nodes with their weights."""

    grid: np.ndarray  # (C,) atoms of D
    density: np.ndarray  # (K, J, C) law of D_j given z_s = z* + x_k, rows sum to 1
    sampling_prob: np.ndarray  # (K,) p_s = sigmoid(z* + x_k)
    weight: np.ndarray  # (K,) quadrature weights of the nodes, summing to 1
    clip_low: float  # eps_low (inf for clip mode "none")
    clip_high: float  # eps_high (inf for clip mode "none")
    clip_mode: str  # "drop", "stale" or "none"
    stationary_from: int | None  # first j whose laws are all stationary (None: still moving at J - 1)

    def _ratios(self):
        ps = self.sampling_prob[:, None]  # (K, 1)
        p = sigmoid(np.log(ps) - np.log1p(-ps) + self.grid)  # (K, C)
        return ps, p, p / ps, (1.0 - p) / (1.0 - ps)

    def _mean(self, f) -> np.ndarray:
        """E[f] over the nodes and D_j: f (K, C) -> (J,)."""
        return np.einsum("k,kjc,kc->j", self.weight, self.density, f)

    def kept_factor(self) -> np.ndarray:
        """h(D) on the grid per node, (K, C): the factor on the group gradient (module docstring)."""
        return step_factor(self.grid, self.sampling_prob[:, None], self.clip_low, self.clip_high, self.clip_mode)

    def clipped_fraction(self) -> np.ndarray:
        """c_j, (J,): the clip's share of the ratio-weighted expected gradient (drop: the PPO sides,
        w1 above 1 + eps_high and w0 below 1 - eps_low; stale: every weight outside the clip range)."""
        _, p, w1, w0 = self._ratios()
        lo, hi = 1.0 - self.clip_low, 1.0 + self.clip_high
        if self.clip_mode == "stale":
            cut = w1 * (1.0 - p) * ((w1 > hi) | (w1 < lo)) + w0 * p * ((w0 > hi) | (w0 < lo))
        else:
            cut = w1 * (1.0 - p) * (w1 > hi) + w0 * p * (w0 < lo)
        return self._mean(cut) / self._mean(w1 * (1.0 - p) + w0 * p)

    def noise_factor(self) -> np.ndarray:
        """E[h(D_j)^2], (J,): the factor on the per-step gradient-noise variance."""
        return self._mean(self.kept_factor() ** 2)

    def log_ratio_variance(self) -> np.ndarray:
        """Var[log w_j] over the nodes, D_j and y ~ pi_s, (J,)."""
        ps, _, w1, w0 = self._ratios()
        x1, x0 = np.log(w1), np.log(w0)
        mean = self._mean(ps * x1 + (1.0 - ps) * x0)
        return self._mean(ps * x1**2 + (1.0 - ps) * x0**2) - mean**2


def step_factor(D, sampling_prob, clip_low: float, clip_high: float, clip_mode: str) -> np.ndarray:
    """h(D): drop / stale / none of the module docstring, at sampling policy p_s = sampling_prob
    (broadcast with D)."""
    if clip_mode not in CLIP_MODES:
        raise ConfigError(f"clip mode must be one of {', '.join(CLIP_MODES)}; got {clip_mode!r}")
    ps = np.asarray(sampling_prob, dtype=float)
    p = sigmoid(np.log(ps) - np.log1p(-ps) + np.asarray(D, dtype=float))
    w1, w0 = p / ps, (1.0 - p) / (1.0 - ps)
    if clip_mode == "drop":
        return w1 * (1.0 - p) * (w1 <= 1.0 + clip_high) + w0 * p * (w0 >= 1.0 - clip_low)
    if clip_mode == "stale":
        lo, hi = 1.0 - clip_low, 1.0 + clip_high
        return np.clip(w1, lo, hi) * (1.0 - p) + np.clip(w0, lo, hi) * p
    return w1 * (1.0 - p) + w0 * p


@dataclass(frozen=True)
class WalkStep:
    """The step law of D from sampling logit z_s: mean eta' (m(p_s) h(D) + K(z_s + D)), sd eta' sigma(p_s) |h(D)|."""

    sampling_logit: float  # z_s
    lr: float  # eta' = eta / (1 - mu)
    drive: float  # m(p_s)
    noise_sd: float  # sigma(p_s), per-step sd of the ascent direction
    gradient: np.ndarray  # (A,) atoms of the step's group-mean gradient (1/num_groups) sum g_k
    gradient_prob: np.ndarray  # (A,) their probabilities
    clip_low: float
    clip_high: float
    clip_mode: str
    bandit: TwoArmBandit
    hp: Hyperparams

    def moments(self, D) -> tuple[np.ndarray, np.ndarray]:
        """(mean, sd) of D_{j+1} - D_j given D_j = D."""
        h = step_factor(D, sigmoid(self.sampling_logit), self.clip_low, self.clip_high, self.clip_mode)
        mean = self.lr * (self.drive * h + kl_force(self.sampling_logit + np.asarray(D, float), self.bandit, self.hp))
        return mean, self.lr * self.noise_sd * np.abs(h)

    def targets(self, D) -> np.ndarray:
        """D + eta' (K(z_s + D) + h(D) g_a) for every atom g_a of the group-mean gradient: (C, A)."""
        D = np.asarray(D, float)
        h = step_factor(D, sigmoid(self.sampling_logit), self.clip_low, self.clip_high, self.clip_mode)
        kl = kl_force(self.sampling_logit + D, self.bandit, self.hp)
        return D[:, None] + self.lr * (kl[:, None] + h[:, None] * self.gradient)


def group_mean_gradient_law(p: float, hp: Hyperparams, max_atoms: int = MAX_ATOMS) -> tuple[np.ndarray, np.ndarray]:
    """(atoms, probs) of (1/num_groups) sum_i g_{k_i}, k_i i.i.d. Binomial(G, p): the exact lattice
    (values equal to 1e-12 merged), or a Gaussian of the same mean and variance on GH_NODES
    Gauss-Hermite nodes when it would exceed max_atoms atoms."""
    args = (hp.group_size, hp.advantage, hp.std_estimator, hp.std_eps)
    coef = finite_group.group_gradient_coefficients(*args)  # (G + 1,)
    pmf = finite_group._binomial_pmf(p, hp.group_size)  # (G + 1,)
    n = hp.num_groups
    if math.comb(hp.group_size + n, n) > max_atoms:
        mean = float(pmf @ coef)
        sd = float(np.sqrt(finite_group.group_gradient_variance(p, *args) / n))
        z, omega = np.polynomial.hermite_e.hermegauss(GH_NODES)
        return mean + sd * z, omega / omega.sum()
    atoms, probs = np.zeros(1), np.ones(1)
    for _ in range(n):  # the law of the sum, one group at a time
        total = (atoms[:, None] + coef).ravel()
        mass = (probs[:, None] * pmf).ravel()
        atoms, index = np.unique(np.round(total, 12), return_inverse=True)
        probs = np.bincount(index.ravel(), mass)
    return atoms / n, probs


def walk_step(sampling_logit: float, bandit: TwoArmBandit, hp: Hyperparams, clip_mode: str = "drop") -> WalkStep:
    """The step law of the module docstring from the bandit theory's hyperparameters.

    hp: SGD (heavy-ball), finite group size (the noise), correction "token" or "sequence" (equal at
    L = 1). clip_mode "none" ignores hp's clip range (eps -> infinity).
    """
    if not isinstance(hp, Hyperparams):
        raise ConfigError(f"hp must be a Hyperparams, got {hp!r}")
    if not isinstance(hp.optimizer, SGD):
        raise ConfigError("the ratio walk steps heavy-ball SGD; got Adam (map it with hyperparams.effective_sgd "
                          "and pass an SGD Hyperparams)")
    if hp.group_size is None:
        raise ConfigError("the ratio walk needs a finite group size (G -> infinity has no noise, D stays 0)")
    if hp.correction == "none":
        raise ConfigError("the ratio walk follows an importance ratio: give correction 'token' or 'sequence'")
    if clip_mode not in CLIP_MODES:
        raise ConfigError(f"clip mode must be one of {', '.join(CLIP_MODES)}; got {clip_mode!r}")
    p = float(sigmoid(sampling_logit))
    args = (hp.group_size, hp.advantage, hp.std_estimator, hp.std_eps)
    var = float(finite_group.group_gradient_variance(p, *args)) / hp.num_groups
    lo, hi = (np.inf, np.inf) if clip_mode == "none" else (hp.clip_low, hp.clip_high)
    atoms, probs = group_mean_gradient_law(p, hp)
    return WalkStep(sampling_logit=float(sampling_logit), lr=hp.lr / (1.0 - hp.momentum),
                    drive=float(finite_group.drive_factor(p, *args)), noise_sd=float(np.sqrt(var)),
                    gradient=atoms, gradient_prob=probs,
                    clip_low=lo, clip_high=hi, clip_mode=clip_mode, bandit=bandit, hp=hp)


def bandit_noise_drift(z_star: float, bandit: TwoArmBandit, hp: Hyperparams) -> float:
    """n = eta' sigma sqrt(p* (1 - p*)): the memoryless per-step log-ratio drift (module docstring)."""
    step = walk_step(z_star, bandit, hp, "none")
    p = float(sigmoid(z_star))
    return step.lr * step.noise_sd * float(np.sqrt(p * (1.0 - p)))


def _grid(step: WalkStep, bandit: TwoArmBandit, hp: Hyperparams, window: int, offset: float) -> np.ndarray:
    """Atoms of D: half-width GRID_SDS stationary sds of the unclipped linear walk (AR(1) with the
    fresh stiffness b of the corrected force: Var = eta'^2 sigma^2 / (1 - (1 - eta' b)^2)), or of the
    free walk sqrt(J) eta' sigma where that is smaller or b gives no stationary law; widened by
    the sampling offset |x| (the walk from z* + x drifts back by about x)."""
    sd = step.lr * step.noise_sd
    free = sd * np.sqrt(window)
    _, b = stiffness_partials(step.sampling_logit, bandit, hp)
    r = 1.0 - step.lr * b
    half = GRID_SDS * (min(free, sd / np.sqrt(1.0 - r * r)) if abs(r) < 1.0 else free) + 2.0 * offset
    h = max(sd / CELLS_PER_STEP_SD, 2.0 * half / (MAX_CELLS - 1))
    n = int(np.ceil(half / h))
    return h * np.arange(-n, n + 1)


def bandit_ratio_walk(z_star: float, bandit: TwoArmBandit, hp: Hyperparams, window: int, *,
                      clip_mode: str = "drop", sampling_spread: float = 0.0,
                      spread_nodes: int = SPREAD_NODES) -> BanditRatioWalk:
    """Laws of D_j for j = 0..window-1 (module docstring; the step law is `walk_step`).

    z_star: the fixed point's logit. sampling_spread: sd of the sampling logit z_s around z*
    (0: z_s = z*, the local model of `ratio_stability`); > 0 mixes the walks from z_s = z* + x_k
    over spread_nodes equal-probability nodes x_k (the stationary spread of `fluctuations` makes the
    window drift back towards z*, a coherent part of the log-ratio's spread).
    """
    J = int(window)
    if J < 1:
        raise ConfigError(f"window must be an integer >= 1, got {window!r}")
    spread = float(sampling_spread)
    if not (np.isfinite(spread) and spread >= 0.0):
        raise ConfigError(f"sampling spread must be a finite sd >= 0, got {sampling_spread!r}")
    if spread > 0.0:
        # equal-probability nodes Phi^-1((k + 1/2) / K), scaled to unit variance: the read-outs are
        # discontinuous in z_s (lattice atoms against the clip bounds), where Gauss-Hermite rings
        K = int(spread_nodes)
        x = ndtri((np.arange(K) + 0.5) / K)
        x, wx = spread * x / np.sqrt(np.mean(x**2)), np.full(K, 1.0 / K)
    else:
        x, wx = np.zeros(1), np.ones(1)
    steps = [walk_step(z_star + xk, bandit, hp, clip_mode) for xk in x]
    grid = _grid(steps[len(steps) // 2], bandit, hp, J, float(np.max(np.abs(x))))
    if hp.momentum > 0.0:
        grid = np.linspace(grid[0], grid[-1], MOMENTUM_CELLS[0])
        dens, stationary = _momentum_laws(steps, x, z_star, bandit, hp, grid, J)
        return BanditRatioWalk(grid=grid, density=dens, sampling_prob=sigmoid(z_star + x), weight=wx,
                               clip_low=steps[0].clip_low, clip_high=steps[0].clip_high, clip_mode=clip_mode,
                               stationary_from=stationary)
    target = np.stack([step.targets(grid) for step in steps])  # (S, C, A): every atom's successors
    prob = np.stack([step.gradient_prob for step in steps])[:, None, :]  # (S, 1, A)
    dens = np.zeros((len(steps), J, grid.size))
    dens[:, 0, grid.size // 2] = 1.0  # D_0 = 0 at the refresh
    stationary = None
    for j in range(1, J):
        if stationary is not None:
            dens[:, j] = dens[:, j - 1]
            continue
        dens[:, j] = deposit(dens[:, j - 1, :, None] * prob, target, grid)
        if np.abs(dens[:, j] - dens[:, j - 1]).sum() < SATURATION_TOL:
            stationary = j
    return BanditRatioWalk(grid=grid, density=dens, sampling_prob=sigmoid(z_star + x), weight=wx,
                           clip_low=steps[0].clip_low, clip_high=steps[0].clip_high, clip_mode=clip_mode,
                           stationary_from=stationary)


def _velocity_law(x: np.ndarray, z_star: float, bandit: TwoArmBandit, hp: Hyperparams, sigma2: float):
    """(mean (S,), sd) of u_0 at the refresh given z_s = z* + x (module docstring)."""
    if np.all(x == 0.0):
        return np.zeros_like(x), float(np.sqrt(sigma2 / (1.0 - hp.momentum**2)))
    a, b = stiffness_partials(z_star, bandit, hp)
    P = fluctuations.phase_covariances(a, b, hp.lr, hp.momentum, hp.refresh_interval, sigma2)[0]  # (x, v, x_s)
    c = P[1, 0] / P[0, 0]
    return c * x, float(np.sqrt(max(P[1, 1] - c * c * P[0, 0], 0.0)))


def _momentum_laws(steps, x, z_star, bandit, hp, grid, J):
    """Marginal laws of D_j (S, J, C) of the (D, u) walk, bilinear deposits on grid x u-grid."""
    mu, eta = hp.momentum, hp.lr
    sigma2 = float(fluctuations.gradient_noise_variance(float(sigmoid(z_star)), hp))
    u_mean, u_sd = _velocity_law(x, z_star, bandit, hp, sigma2)
    half_u = GRID_SDS * np.sqrt(sigma2 / (1.0 - mu**2)) * 1.5 + np.max(np.abs(u_mean))  # h(D) <~ 1.5 at the walls
    ugrid = np.linspace(-half_u, half_u, MOMENTUM_CELLS[1])
    C, U = grid.size, ugrid.size
    hD, hU = grid[1] - grid[0], ugrid[1] - ugrid[0]
    out = np.zeros((len(steps), J, C))
    stationary = [None] * len(steps)
    for s_i, step in enumerate(steps):
        h = step_factor(grid, sigmoid(step.sampling_logit), step.clip_low, step.clip_high, step.clip_mode)  # (C,)
        kl = kl_force(step.sampling_logit + grid, bandit, hp)  # (C,)
        u_new = mu * ugrid[None, :, None] + kl[:, None, None] + h[:, None, None] * step.gradient  # (C, U, A)
        d_new = grid[:, None, None] + eta * u_new
        pd = np.clip((d_new - grid[0]) / hD, 0.0, C - 1.0)
        pu = np.clip((u_new - ugrid[0]) / hU, 0.0, U - 1.0)
        i0, k0 = np.minimum(pd.astype(np.int64), C - 2), np.minimum(pu.astype(np.int64), U - 2)
        fd, fu = (pd - i0).ravel(), (pu - k0).ravel()
        base = (i0 * U + k0).ravel()  # flat (D, u) cell of the lower corner
        prob = np.broadcast_to(step.gradient_prob, u_new.shape).ravel()
        weights = [(base, (1 - fd) * (1 - fu)), (base + U, fd * (1 - fu)), (base + 1, (1 - fd) * fu), (base + U + 1, fd * fu)]
        dens = np.zeros((C, U))
        dens[C // 2] = np.exp(-0.5 * ((ugrid - u_mean[s_i]) / max(u_sd, hU)) ** 2)  # D_0 = 0, u_0 Gaussian
        dens /= dens.sum()
        out[s_i, 0] = dens.sum(1)
        for j in range(1, J):
            if stationary[s_i] is not None:
                out[s_i, j] = out[s_i, j - 1]
                continue
            mass = np.repeat(dens.ravel(), step.gradient.size) * prob  # (C U A,) in u_new's order
            new = sum(np.bincount(idx, mass * w, minlength=C * U) for idx, w in weights).reshape(C, U)
            change = np.abs(new - dens).sum()
            dens = new
            out[s_i, j] = dens.sum(1)
            if change < SATURATION_TOL:
                stationary[s_i] = j
    done = [t for t in stationary if t is not None]
    return out, (max(done) if len(done) == len(steps) else None)


def stationary_sampling_spread(z_star: float, bandit: TwoArmBandit, hp: Hyperparams) -> float:
    """sd of z_s - z* at a refresh in the stationary state of the linear noisy update:
    sqrt(P_0[0, 0]) of `fluctuations.phase_covariances` with the corrected, unclipped stiffness
    (a, b) = `bandit.stiffness_partials(z*)`, hp's lr, momentum, refresh interval and the per-step
    noise sigma^2 = `fluctuations.gradient_noise_variance(p*)`. Raises ConfigError when unstable."""
    a, b = stiffness_partials(z_star, bandit, hp)
    sigma2 = fluctuations.gradient_noise_variance(float(sigmoid(z_star)), hp)
    P = fluctuations.phase_covariances(a, b, hp.lr, hp.momentum, hp.refresh_interval, sigma2)
    return float(np.sqrt(P[0, 0, 0]))
