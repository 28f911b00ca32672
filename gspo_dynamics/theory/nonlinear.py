"""The from-start stability check: iterate the expected nonlinear update from the initial policy.

The linear threshold (`linear.critical_refresh_interval`) is local: it says whether small
deviations from the fixed point die out. A run starts far from the fixed point, and a large
transient can leave the basin of attraction first, e.g. overshoot into the saturated region
p(1-p) ~ 0 where every force vanishes and the policy never comes back. This module iterates the
deterministic expected map (G -> infinity, or the exact finite-G expectation)

    every T steps: z_s <- z;     v <- mu v + F(z, z_s);     z <- z + lr v

(`bandit.force`; Adam in its linear regime as its heavy-ball equivalent) from the start z_0 and
asks whether it converges to the fixed point z*.

Outcome per T (vectorised over T, one row each):
  converged  |z - z*| < CONVERGED and lr |v| < CONVERGED at a refresh;
  escaped    the policy went deep into saturation: p (1 - p) < ESCAPE_RATIO p* (1 - p*), where
             every force is a thousand times weaker than at the fixed point (a return, if any,
             takes over a thousand relaxation times), or a non-finite state;
  stuck      neither within the horizon: HORIZON_RELAXATIONS on-policy relaxation times
             (tau_1 = -1 / ln rho(M(1)) steps) or MIN_PERIODS refresh periods, whichever is
             longer, capped at MAX_STEPS. Typically a limit cycle (e.g. one sustained by the ratio
             clip); a run that needs longer than that to settle is a failed run in practice.

Long refresh intervals are cheap: once a period has settled (the state no longer moves: the
stale drive is balanced by the fresh forces) the rest of the period is skipped. If every period
of the row T_B settled before its end, every T >= T_B produces the same sequence of refresh
states and so the same outcome; the scan uses this to answer up to t_max = 10^4 exactly. Under a ratio
clip the period may never settle (past the band edge the clipped map keeps the policy moving within the
period): then every T up to t_max is simulated, vectorised over T (seconds, not milliseconds).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gspo_dynamics.theory import linear
from gspo_dynamics.theory.bandit import TwoArmBandit, fixed_point, force, stiffness_partials

CONVERGED = 1e-8  # logit distance (and lr |v|) that counts as having reached the fixed point
SETTLED = 1e-14  # per-step movement below which a period is static (~ float64 rounding of z ~ 1)
ESCAPE_RATIO = 1e-3  # p (1-p) this far below its fixed-point value counts as escaped into saturation
MIN_PERIODS = 100
HORIZON_RELAXATIONS = 2000.0  # the training budget, in on-policy relaxation times
MAX_STEPS = 1_000_000  # per row
FIRST_BLOCK = 256  # refresh intervals simulated together before the settling argument is tried


@dataclass(frozen=True)
class FromStart:
    """Outcome of the from-start scan over T = 1..t_scanned."""

    critical_refresh_interval: int  # smallest T that does not converge; linear.STABLE (0) if none
    t_scanned: int  # largest T simulated; larger T answered by the settling argument
    outcome: str  # at the critical T: "escaped" | "stuck" | "linearly unstable"; "converged" if none


def _run_rows(T: np.ndarray, z0: float, z_star: float, bandit, hp, lr, mu, horizon: np.ndarray):
    """Simulate each row (one refresh interval) until it converges, escapes or runs out of periods.

    Returns (status array of str, settled_everywhere bool array, longest settle time per row).
    """
    n = T.size
    z = np.full(n, z0)
    v = np.zeros(n)
    z_s = z.copy()
    phase = np.zeros(n, dtype=np.int64)
    periods = np.zeros(n, dtype=np.int64)
    status = np.full(n, "", dtype=object)
    p_star = 0.5 * (1.0 + np.tanh(0.5 * z_star))
    saturated = ESCAPE_RATIO * p_star * (1.0 - p_star)
    always_settled = np.ones(n, dtype=bool)  # every finished period settled before its end
    longest_settle = np.zeros(n, dtype=np.int64)
    active = np.ones(n, dtype=bool)
    while active.any():
        idx = np.flatnonzero(active)
        # Refresh rows at a period boundary and test them there.
        at_refresh = idx[phase[idx] == 0]
        if at_refresh.size:
            zr, vr = z[at_refresh], v[at_refresh]
            done = (np.abs(zr - z_star) < CONVERGED) & (lr * np.abs(vr) < CONVERGED)
            pr = 0.5 * (1.0 + np.tanh(0.5 * zr))
            bad = ~np.isfinite(zr) | (pr * (1.0 - pr) < saturated)
            late = periods[at_refresh] * T[at_refresh] >= horizon[at_refresh]
            status[at_refresh[done]] = "converged"
            status[at_refresh[bad & ~done]] = "escaped"
            status[at_refresh[late & ~done & ~bad]] = "stuck"
            active[at_refresh[done | bad | late]] = False
            go = at_refresh[~(done | bad | late)]
            z_s[go] = z[go]
            periods[go] += 1
            idx = np.flatnonzero(active)
            if idx.size == 0:
                break
        F = force(z[idx], z_s[idx], bandit, hp)
        v[idx] = mu * v[idx] + F
        z[idx] = z[idx] + lr * v[idx]
        phase[idx] += 1
        # A static state stays static until the next refresh: skip the rest of the period.
        static = (lr * np.abs(v[idx]) < SETTLED) & (lr * np.abs(F) < SETTLED) & (phase[idx] < T[idx])
        longest_settle[idx[static]] = np.maximum(longest_settle[idx[static]], phase[idx[static]])
        ended = phase[idx] >= T[idx]
        always_settled[idx[ended & ~static]] = False
        phase[idx[static | ended]] = 0
    return status, always_settled, longest_settle


def critical_refresh_interval_from_start(
    bandit: TwoArmBandit, hp, lr: float, momentum: float, t_max: int = 10_000
) -> FromStart:
    """Smallest T in [1, t_max] from which the expected run does not reach the fixed point.

    `lr` and `momentum` are the heavy-ball values (`hyperparams.effective_sgd`); `hp` supplies
    the forces. A linearly unstable T cannot converge (generically), so the scan stops there.
    """
    fp = fixed_point(bandit, hp)
    if not fp.interior:
        return FromStart(linear.STABLE, 0, "converged")
    a, b = stiffness_partials(fp.logit, bandit, hp)
    t_linear = int(linear.critical_refresh_interval(a, b, lr, momentum, t_max))
    t_hi = t_linear - 1 if t_linear != linear.STABLE else t_max
    z0 = bandit.start_logit
    rho_1 = float(linear.spectral_radius(linear.monodromy(a, b, lr, momentum, 1)))
    budget = HORIZON_RELAXATIONS / -math.log(rho_1) if rho_1 < 1.0 else 0.0  # steps
    t_lo, block = 1, FIRST_BLOCK
    while t_lo <= t_hi:
        T = np.arange(t_lo, min(t_hi, t_lo + block - 1) + 1)
        horizon = np.minimum(np.maximum(budget, MIN_PERIODS * T), MAX_STEPS)
        status, settled, longest = _run_rows(T, z0, fp.logit, bandit, hp, lr, momentum, horizon)
        failed = np.flatnonzero(status != "converged")
        if failed.size:
            return FromStart(int(T[failed[0]]), int(T[-1]), str(status[failed[0]]))
        # Settling argument: the last row's periods all ended static before T, so every larger T
        # replays the same refresh states and converges as well.
        if settled[-1] and longest[-1] < T[-1]:
            return FromStart(linear.STABLE if t_linear == linear.STABLE else t_linear, int(T[-1]),
                             "converged" if t_linear == linear.STABLE else "linearly unstable")
        t_lo, block = int(T[-1]) + 1, block * 4
    if t_linear == linear.STABLE:
        return FromStart(linear.STABLE, t_hi, "converged")
    return FromStart(t_linear, t_hi, "linearly unstable")


def expected_trajectory(bandit: TwoArmBandit, hp, lr: float, momentum: float, steps: int) -> np.ndarray:
    """R_t = sigmoid(z_t) for t = 0..steps under the expected nonlinear map (one run)."""
    z, v, z_s = float(bandit.start_logit), 0.0, math.nan
    out = np.empty(steps + 1)
    for t in range(steps + 1):
        out[t] = 0.5 * (1.0 + math.tanh(0.5 * z))
        if t == steps:
            break
        if t % hp.refresh_interval == 0:
            z_s = z
        v = momentum * v + float(force(z, z_s, bandit, hp))
        z = z + lr * v
    return out
