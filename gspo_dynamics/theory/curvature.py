"""The curvature scale of any expected update, by finite differences.

For an expected ascent direction F(z, z_s) (z the current parameters, z_s the sampling policy's;
scalar or a vector of logits) the linearisation at a fixed point z* (F(z*, z*) = 0) is

    F(z* + x, z* + x_s) ~ -B x - A x_s,    A = -dF/dz_s (stale),   B = -dF/dz (fresh),

and the curvature scale of the reduced-order model is the total A + B: a scalar a + b for the
two-armed bandit (`bandit.stiffness_partials` has it analytically), a matrix for K arms whose
slowest mode (the eigenvalue with the smallest positive real part) sets the relaxation time.
Central differences: error ~ h^2 |F'''| / 6 + eps |F| / h; STEP balances the two for F ~ O(1)
(truncation ~1e-10, rounding ~1e-12 in float64).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

STEP = 1e-5


def stiffness_by_finite_differences(force: Callable, z_star, step: float = STEP) -> tuple[np.ndarray, np.ndarray]:
    """(A, B) = (-dF/dz_s, -dF/dz) at (z*, z*) by central differences.

    force(z, z_s) takes and returns arrays of the shape of z_star (scalar or (K,)). Returns
    scalars for scalar z*, otherwise (K, K) matrices with [i, j] = -dF_i / dz_j.
    """
    z_star = np.asarray(z_star, dtype=float)
    scalar = z_star.ndim == 0
    z = np.atleast_1d(z_star)
    K = z.size
    A, B = np.empty((K, K)), np.empty((K, K))
    for j in range(K):
        e = np.zeros(K)
        e[j] = step
        fresh = np.atleast_1d(force(_shape(z + e, scalar), _shape(z, scalar))) - np.atleast_1d(force(_shape(z - e, scalar), _shape(z, scalar)))
        stale = np.atleast_1d(force(_shape(z, scalar), _shape(z + e, scalar))) - np.atleast_1d(force(_shape(z, scalar), _shape(z - e, scalar)))
        B[:, j] = -fresh / (2 * step)
        A[:, j] = -stale / (2 * step)
    return (A[0, 0], B[0, 0]) if scalar else (A, B)


def _shape(z: np.ndarray, scalar: bool):
    return z[0] if scalar else z


def curvature_scale(stale, fresh) -> float:
    """Total curvature: a + b for scalars; for matrices the slowest restoring mode of A + B.

    Directions with zero curvature (e.g. the softmax's shift invariance, or frozen logits) are
    not modes of the dynamics and are skipped: the smallest real part above a relative 1e-9.
    """
    total = np.asarray(stale, dtype=float) + np.asarray(fresh, dtype=float)
    if total.ndim == 0:
        return float(total)
    eig = np.linalg.eigvals(total).real
    floor = 1e-9 * max(np.abs(eig).max(), 1e-300)
    restoring = eig[eig > floor]
    return float(restoring.min()) if restoring.size else 0.0
