"""Routing replay and the stale token log-ratio variance of a top-k mixture-of-experts policy.

A minibatch used j optimizer steps after its rollout has token log-ratios, without replay,

    X   = log pi_{theta_j}(y | R_j) - log pi_{theta_0}(y | R_0)

where R_0 is the sampler's routing and R_j the current router's choices on the same inputs. With
routing replay r (the update recomputes with R_0: "full" keeps the sampler's gates, "experts"
only its choices and takes the gates from the current router)

    X_r = log pi_{theta_j}(y | R_0^r) - log pi_{theta_0}(y | R_0),      X = X_r + Delta_r,
    Delta_r = log pi_{theta_j}(y | R_j) - log pi_{theta_j}(y | R_0^r)   (same parameters).

Mixture model of Delta_r. A token is *flipped* (B = 1, probability q) when its log-prob depends on
a routing decision that differs between R_0 and R_j (`sim.sequence._moe.affected_tokens`); a
flipped token jumps by J (mean m_J, variance v_J), an unflipped one moves by G (mean m_G,
variance v_G): G = 0 exactly for experts replay (same experts, same gates), the drift of the
gates for full replay (the current router's probabilities vs the sampler's):

    Delta = B J + (1 - B) G,   Var(Delta) = q (v_J + m_J^2) + (1 - q)(v_G + m_G^2) - (q m_J + (1 - q) m_G)^2

and the variance replay removes is

    Var(X) - Var(X_r) = Var(Delta) + 2 Cov(X_r, Delta)  ~=  Var(Delta)                       (1)

taking the jumps independent of the drift at fixed routing (Cov = 0, the model's assumption).
With G = 0 (experts replay), Var(Delta) = q v_J + q (1 - q) m_J^2.

Over a refresh window of T steps the stale minibatches are j = 1..T-1; the relative change of
their summed log-ratio variance, replay against none, is

    rho_T = sum_j Var(X_r)(j) / sum_j Var(X)(j) - 1 = - sum_j dV(j) / sum_j Var(X)(j),          (2)

dV(j) from (1). If the fixed-routing drift grows as Var(X_r)(j) ~ a j^alpha and the flip part as
dV(j) ~ b j^beta with alpha > beta (parameter drift compounds, while a flip's jump is a discrete
event whose share q saturates), |rho_T| falls as T grows: replay removes a shrinking share.
"""

from __future__ import annotations

import numpy as np


def flip_mixture_variance(q, jump_mean, jump_var, base_mean=0.0, base_var=0.0) -> np.ndarray:
    """Var(Delta) of Delta = B J + (1 - B) G, B ~ Bernoulli(q) independent of J and G.

        Var(Delta) = q (v_J + m_J^2) + (1 - q)(v_G + m_G^2) - (q m_J + (1 - q) m_G)^2

    Args (broadcast together): q the flip probability in [0, 1]; jump_mean, jump_var m_J, v_J
    of a flipped token's jump; base_mean, base_var m_G, v_G of an unflipped token's (0 for
    experts replay).
    """
    q, mj, vj, mg, vg = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in
                                              (q, jump_mean, jump_var, base_mean, base_var)))
    if np.any((q < 0) | (q > 1)):
        raise ValueError(f"q must lie in [0, 1], got {q}")
    if np.any(vj < 0) or np.any(vg < 0):
        raise ValueError("variances must be >= 0")
    mean = q * mj + (1 - q) * mg
    return q * (vj + mj**2) + (1 - q) * (vg + mg**2) - mean**2


def replay_variance_reduction(q, jump_mean, jump_var, base_mean=0.0, base_var=0.0, cov=0.0) -> np.ndarray:
    """Var(X) - Var(X_r) = Var(Delta) + 2 Cov(X_r, Delta), equation (1); cov = 0 is the model."""
    return flip_mixture_variance(q, jump_mean, jump_var, base_mean, base_var) + 2 * np.asarray(cov, dtype=float)


def window_relative_change(var_none, reduction) -> float:
    """rho = - sum dV / sum Var(X), equation (2): the relative change of the summed stale
    log-ratio variance when replay removes `reduction` dV from each minibatch's `var_none` Var(X)
    (1-d arrays over the stale minibatches, e.g. j = 1..T-1 of every window)."""
    var_none, reduction = (np.asarray(x, dtype=float).ravel() for x in (var_none, reduction))
    if var_none.shape != reduction.shape or var_none.size == 0:
        raise ValueError(f"var_none and reduction must be non-empty and alike, got {var_none.shape}, {reduction.shape}")
    total = var_none.sum()
    if not total > 0:
        raise ValueError(f"the summed variance must be > 0, got {total}")
    return float(-reduction.sum() / total)


def jump_moments(delta, flipped) -> dict[str, float]:
    """Plug-in (population) moments of the mixture (1) from one minibatch's tokens.

    Args:
        delta: (n,) Delta_r of the real tokens; flipped: (n,) bool, B.

    Returns:
        q, jump_mean, jump_var (over flipped tokens; 0 when none), base_mean, base_var (over the
        others; 0 when none): `flip_mixture_variance(**jump_moments(d, b))` is np.var(d) up to
        rounding (the law of total variance).
    """
    delta, flipped = np.asarray(delta, dtype=float).ravel(), np.asarray(flipped, dtype=bool).ravel()
    if delta.shape != flipped.shape or delta.size == 0:
        raise ValueError(f"delta and flipped must be non-empty and alike, got {delta.shape}, {flipped.shape}")

    def moments(x):
        return (float(x.mean()), float(x.var())) if x.size else (0.0, 0.0)

    jm, jv = moments(delta[flipped])
    bm, bv = moments(delta[~flipped])
    return {"q": float(flipped.mean()), "jump_mean": jm, "jump_var": jv, "base_mean": bm, "base_var": bv}


def power_law_exponent(j, values) -> float:
    """Least-squares slope of log values against log j: the alpha of values ~ a j^alpha."""
    j, values = np.asarray(j, dtype=float), np.asarray(values, dtype=float)
    if j.shape != values.shape or j.size < 2 or np.any(j <= 0) or np.any(values <= 0):
        raise ValueError("power_law_exponent needs >= 2 positive (j, value) pairs")
    return float(np.polyfit(np.log(j), np.log(values), 1)[0])
