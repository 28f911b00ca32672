"""The chance that one run loses its reward: the regime forecast's verdict as a calibrated probability.

The pilot forecast calls a point (lr, T) unstable when one of its rules passes its threshold: the linear
model's critical refresh interval T_c(lr) (the pilot's stiffness scaled to lr, `theory.linear`), the
displacement between samplers past its limit, and the entropy overshoot (`theory.collapse` (6)-(8)). Each
rule is a ratio to its threshold, and the margin is the log of the largest:

    m(lr, T) = max( log(T / (T_c - 1/2)),  log(D(lr, T) / L),  log(r lr / (lr_p R)) )             (1)

with L = max(S H / (1 - z), D_p) the displacement limit in force (`theory.collapse` (7), (8)), r the pilot's
entropy rise and R = OVERSHOOT_RISE ((6)); T_c - 1/2 lies midway between the last stable and the first
unstable integer T, so m > 0 exactly where the verdict is unstable. A rule the pilot cannot assess adds
nothing (the linear one where the pilot gives no stiffness or `max_safe_lr` is withheld, the overshoot where
the entropy did not rise). The chance that one run at (lr, T) loses its reward (`fit._fall`'s loss, as the
protocol's seeds are scored):

    P(fall | m) = 1 / (1 + exp(-(a + b m))),     m clipped to [-M_CLIP, M_CLIP],                   (2)

a and b (`FALL_CHANCE`) the maximum-likelihood fit of (2) to every seed of the 102 grids of
paper_repro/pilot_forecast.py (2,040 cells, 4 seeds each; `fit_fall_chance`, Newton's method on the binomial
log-likelihood). How it fared as a forecast, each round of grids scored with (a, b) fitted on the earlier ones
only: docs/validation.md and paper_repro `_fall_chance_report`. The probability is calibrated on our trainer's tasks; on another model and task it is the same map from margin to
chance, assumed (said where `predict` prints it).
"""

from __future__ import annotations

import math

import numpy as np

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.predict._pilot_fields import PilotFields
from gspo_dynamics.theory import collapse
from gspo_dynamics.theory.linear import STABLE, critical_refresh_interval

# The held-out score `predict` quotes beside the chance (docs/validation.md gives each round's): the per-run Brier
# score of (2) over HELD_OUT_ROUNDS rounds of grids scored after (a, b) were frozen, and that of a lookup of the
# task's earlier grids at the same lr factor and T on the same seeds.
HELD_OUT_ROUNDS = 7  # rounds of grids, 800 seeds each but the last's 640
BRIER_HELD_OUT = 0.0928  # the mean of their per-run Brier scores, as `predict` quotes it
LOOKUP_HELD_OUT = 0.1188  # the lookup of the task's earlier grids on the same seeds, quoted beside it
# (a, b) of (2): the maximum-likelihood fit on all 8,160 seeds of the 102 grids of paper_repro/pilot_forecast.py
FALL_CHANCE = (-1.5011, 1.3680)
M_CLIP = 5.0  # |m| beyond which (2) is within 0.5% of 0 or 1 at FALL_CHANCE: the clip keeps a fit off the far tail
RISK_LEVEL = 0.1  # the chance of a fall at which `predict` bounds T and lr (`risk_bounds`)
T_LIMIT = 1024  # the largest T `risk_bounds` looks at
LR_SPAN = 1e3  # `risk_bounds` looks for the lr bound within lr / LR_SPAN .. lr x LR_SPAN
MARGIN_AT_THRESHOLD = 1e-9  # |m| below this is the threshold itself, m = 0 (`by_construction`)
# the largest factor over a pilot's own lr at which the forecast was put to the test: the top of the grids (a, b)
# were fitted on (paper_repro/_pilot_protocol.py's LR_FACTORS). An lr bound past LR_REACH x lr is said as "none below
# LR_REACH x lr" (`fall_chance_lines`, the safe verdict's margin): above it the stiffness's and the drift's scaling
# with lr, Adam's linear regime and the collapse limit are extrapolated, never checked
LR_REACH = 30.0


def lr_bound_in_reach(bound: float | None, lr: float, note: str) -> tuple[float | None, str]:
    """(the bound, its note) where bound <= LR_REACH x lr; past it (None, the note with why): a number no check
    reached is not given (the JSON's max_safe_lr; the text says "none below LR_REACH x lr")."""
    if bound is None or bound <= LR_REACH * lr:
        return bound, note
    return None, (f"{note}; its reading {bound:.3g} lies past {LR_REACH:g}x the pilot's lr ({LR_REACH * lr:.3g}), "
                  "further than the forecast was checked: no bound is claimed above that")


def margin_grid(forecast: PilotFields, lrs, refresh_intervals, floor: float = -M_CLIP) -> np.ndarray | None:
    """m of (1) over a grid, (len(refresh_intervals), len(lrs)); None where the pilot assessed no rule (no drift
    or entropy, and no usable stiffness). The linear rule's T_c is looked for up to max(T) e^-floor + 1: past it
    its log ratio is below `floor` at every T of the grid (at the default, -M_CLIP, the same chance, (2)), and it is
    -inf there, as where the linear model is stable at every T; -inf in all where every assessed rule is silent."""
    hp = forecast.config.setup.hparams
    lrs = np.asarray(lrs, dtype=float)
    Ts = np.asarray(refresh_intervals, dtype=float)
    parts = []
    kappa = forecast.implications.stiffness_per_step
    if forecast.max_safe_lr is not None and kappa is not None and math.isfinite(kappa.value) and kappa.value > 0:
        t_max = int(Ts.max() * math.exp(-floor)) + 1
        t_c = critical_refresh_interval(kappa.value * lrs / hp.lr, 0.0, 1.0, hp.momentum, t_max=t_max).astype(float)
        linear = np.full((len(Ts), len(lrs)), -np.inf)
        tips = t_c != STABLE
        linear[:, tips] = np.log(Ts[:, None] / (t_c[None, tips] - 0.5))
        parts.append(linear)
    if forecast.displacement is not None:
        D = collapse.displacement_grid(forecast.drift_per_step / hp.lr, lrs, Ts, forecast.band_edge)
        parts.append(np.log(D / forecast.collapse_limit))
        rise = forecast.entropy_rise
        if rise is not None and rise > 0:
            parts.append(np.broadcast_to(np.log(rise * lrs / (hp.lr * collapse.OVERSHOOT_RISE))[None, :], D.shape))
    return np.maximum.reduce(parts) if parts else None


def fall_chance(margin, coefficients: tuple[float, float] = FALL_CHANCE) -> np.ndarray:
    """P(fall | m) of (2) for margins m (any shape; -inf and +inf allowed, clipped to [-M_CLIP, M_CLIP])."""
    a, b = coefficients
    m = np.clip(np.asarray(margin, dtype=float), -M_CLIP, M_CLIP)
    return 1.0 / (1.0 + np.exp(-(a + b * m)))


def fit_fall_chance(margins, falls, runs, *, iterations: int = 200) -> tuple[float, float]:
    """(a, b) of (2) by maximum likelihood: falls[i] of runs[i] runs at margin margins[i] (clipped as in (2)),
    the binomial log-likelihood

        l(a, b) = sum_i k_i log P_i + (n_i - k_i) log(1 - P_i),    P_i = 1 / (1 + exp(-(a + b m_i))),

    maximised by Newton's method (gradient X^T (k - n P), Hessian -X^T diag(n P (1 - P)) X, negative definite
    for two distinct margins), each step halved until l does not fall (a full step can overshoot where the run
    counts differ a lot). ConfigError on data that cannot identify the fit, naming what is wrong: shapes, a
    margin that is nan, counts outside [0, runs] or runs < 1, fewer than two distinct margins, falls separated by
    the margin (the likelihood then has no maximum), or no convergence."""
    m, k, n = _fit_data(margins, falls, runs)
    X = np.stack([np.ones_like(m), m], axis=1)
    w = np.array([math.log((k.sum() + 0.5) / (n.sum() - k.sum() + 0.5)), 0.0])
    for _ in range(iterations):
        z = X @ w
        p = np.exp(-np.logaddexp(0.0, -z))
        step = np.linalg.solve((X * (n * p * (1 - p))[:, None]).T @ X, X.T @ (k - n * p))
        before = _log_likelihood(z, k, n)
        while _log_likelihood(X @ (w + step), k, n) < before and np.max(np.abs(step)) > 1e-14:
            step = step / 2
        w = w + step
        if np.max(np.abs(step)) < 1e-10:
            return float(w[0]), float(w[1])
    raise ConfigError(f"the fall chance's fit did not converge in {iterations} Newton steps (last a, b = {w[0]:.4g}, {w[1]:.4g})")


def _log_likelihood(z: np.ndarray, k: np.ndarray, n: np.ndarray) -> float:
    """l of `fit_fall_chance` at linear predictors z, in the log-sum-exp form that stays finite."""
    return float(-(k * np.logaddexp(0.0, -z) + (n - k) * np.logaddexp(0.0, z)).sum())


def _fit_data(margins, falls, runs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`fit_fall_chance`'s arrays, checked (its docstring), the margins clipped to [-M_CLIP, M_CLIP]."""
    m, k, n = (np.asarray(v, dtype=float) for v in (margins, falls, runs))
    if m.ndim != 1 or m.shape != k.shape or m.shape != n.shape:
        raise ConfigError(f"fit_fall_chance needs 1-d margins, falls and runs of one length, got shapes {m.shape}, "
                          f"{k.shape}, {n.shape}")
    if np.isnan(m).any():
        raise ConfigError(f"fit_fall_chance: margin {int(np.flatnonzero(np.isnan(m))[0])} is nan")
    bad = ~((n >= 1) & (k >= 0) & (k <= n))  # nan counts fail these too
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ConfigError(f"fit_fall_chance needs 0 <= falls <= runs and runs >= 1; cell {i} has {k[i]:g} of {n[i]:g}")
    m = np.clip(m, -M_CLIP, M_CLIP)
    if len(np.unique(m)) < 2:
        raise ConfigError("fit_fall_chance needs at least two distinct margins to fit a slope")
    fell, held = m[k > 0], m[k < n]
    if not len(fell) or not len(held) or fell.min() >= held.max() or held.min() >= fell.max():
        raise ConfigError("the falls are separated by the margin (or all on one side): the chance has no maximum-likelihood fit")
    return m, k, n


def chance_grid(forecast: PilotFields, lrs, refresh_intervals, floor: float = -M_CLIP) -> np.ndarray | None:
    """P(fall | m) of (2) over a grid (`margin_grid`'s shape and floor); None where the pilot gives no drift or
    entropy: (a, b) were fitted on pilots that measured both (every one of the 102 grids' cells has the collapse
    rules), so a margin of the linear rule alone is outside what they were fitted on."""
    if forecast.displacement is None:
        return None
    return fall_chance(margin_grid(forecast, lrs, refresh_intervals, floor))


def config_fall_chance(forecast: PilotFields) -> dict | None:
    """{"margin": m, "chance": P(fall | m), "bounds": `risk_bounds` at RISK_LEVEL} at the config's own (lr, T), (1)
    and (2); None where the pilot gives no drift or entropy (`chance_grid`)."""
    if forecast.displacement is None:
        return None
    hp = forecast.config.setup.hparams
    margin = float(margin_grid(forecast, [hp.lr], [hp.refresh_interval])[0, 0])
    return {"margin": margin, "chance": float(fall_chance(margin)), "bounds": risk_bounds(forecast)}


def risk_bounds(forecast: PilotFields, level: float = RISK_LEVEL) -> dict | None:
    """Where the chance (2) stays at most `level` (in (0, 1)): the largest T at the config's lr among 1..T_LIMIT
    ("max_refresh_interval"; 0: not even T = 1) and the largest lr at its T within lr / LR_SPAN .. lr x LR_SPAN
    ("max_lr"; the crossing found on a grid and refined by bisection in log lr), each None where the scan ends
    first, with "beyond_scan" saying which way ("above": every T or lr scanned stays at most `level`; "below": no lr
    scanned does) and "scan" the ranges. The chance rises with T and lr (every rule's ratio does), so each bound is
    the first crossing. m is needed only down to the level's margin, a + b m = logit(level), so the linear rule's
    scan stops a unit below it (`margin_grid`'s floor, at least -M_CLIP). None where the pilot gives no drift or
    entropy (`chance_grid`)."""
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise ConfigError(f"the risk level must be a chance in (0, 1), got {level!r}")
    if forecast.displacement is None:
        return None
    hp = forecast.config.setup.hparams
    a, b = FALL_CHANCE
    floor = max((math.log(level / (1 - level)) - a) / b - 1.0, -M_CLIP)

    def chance(lrs, Ts) -> np.ndarray:
        return chance_grid(forecast, lrs, Ts, floor)

    lrs = np.geomspace(hp.lr / LR_SPAN, hp.lr * LR_SPAN, 121)
    out = {"level": float(level), "max_refresh_interval": None, "max_lr": None, "beyond_scan": {},
           "scan": {"refresh_interval": [1, T_LIMIT], "lr": [float(lrs[0]), float(lrs[-1])]}}
    over = np.flatnonzero(chance([hp.lr], np.arange(1, T_LIMIT + 1))[:, 0] > level)
    if len(over):
        out["max_refresh_interval"] = int(over[0])
    else:
        out["beyond_scan"]["refresh_interval"] = "above"
    over = np.flatnonzero(chance(lrs, [hp.refresh_interval])[0] > level)
    if not len(over) or over[0] == 0:
        out["beyond_scan"]["lr"] = "above" if not len(over) else "below"
        return out
    lo, hi = math.log(lrs[over[0] - 1]), math.log(lrs[over[0]])
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if chance([math.exp(mid)], [hp.refresh_interval])[0, 0] > level else (mid, hi)
    out["max_lr"] = math.exp(lo)
    return out


def ran_and_held(f: PilotFields) -> bool:
    """Whether the pilot itself ran at the config's displacement D and kept its reward (D <= D_p, `theory.collapse`
    (8)). Then the collapse limit in force is D_p, so the displacement rule's ratio D / L is 1 by construction at the
    config's own point and the fall chance (2) there is its value at the threshold, m = 0 (18%): a statement about
    cells where the limit is not known to hold, not about a point the pilot has run. Neither the D share nor that
    chance makes such a point at risk (`_pilot_headline._risks`); the pilot's own fall test (`fit._fall`), its swing
    and its entropy rise still do."""
    return f.displacement is not None and f.survived is not None and f.displacement <= f.survived


def by_construction(forecast: PilotFields, at: dict) -> bool:
    """Whether `config_fall_chance`'s chance `at` is the one the survived limit puts at the pilot's own point by
    construction (`ran_and_held`, and no other rule moves the margin off m = 0): for this run it is not identified
    (the limit lies at least at D, how far above is not known)."""
    return ran_and_held(forecast) and abs(at["margin"]) < MARGIN_AT_THRESHOLD


def fall_chance_lines(forecast: PilotFields) -> list[str]:
    """The summary's lines for `config_fall_chance` (the pilot assessed the collapse rules): the chance, and the
    bounds of `risk_bounds`."""
    at = config_fall_chance(forecast)
    margin, chance, bounds = at["margin"], at["chance"], at["bounds"]
    hp = forecast.config.setup.hparams
    T, lr, beyond, scan = bounds["max_refresh_interval"], bounds["max_lr"], bounds["beyond_scan"], bounds["scan"]
    bound_T = (f"every T up to {T_LIMIT}" if "refresh_interval" in beyond else "not even T = 1" if T == 0 else f"T <= {T}")
    reach = hp.lr * LR_REACH  # past it, no bound is claimed either way (LR_REACH)
    bound_lr = (f"no lr bound below {reach:.3g} ({LR_REACH:g}x, the furthest checked)"
                if beyond.get("lr") == "above" or (lr is not None and lr > reach)
                else f"no lr down to {scan['lr'][0]:.3g}" if beyond.get("lr") == "below" else f"lr <= {lr:.3g}")
    if by_construction(forecast, at):
        first = (f"  chance a run at lr {hp.lr:g} and T = {hp.refresh_interval} loses its reward: not identified (the "
                 "pilot ran at these settings and kept its reward, so the limit is at least here, m <= 0; "
                 f"{chance:.0%} is the chance at a rule's threshold, for settings no pilot ran)")
        return [first, _bounds_line(bounds, bound_T, bound_lr)]
    return [f"  chance a run at lr {hp.lr:g} and T = {hp.refresh_interval} loses its reward: {chance:.0%} (the rules' "
            f"log ratio to their thresholds m = {margin:+.2f}, > 0 where a rule says unstable, through a logistic fitted "
            f"on our trainer's 102 pilot-forecast grids; per-run Brier score {BRIER_HELD_OUT:.3f} over {HELD_OUT_ROUNDS} "
            f"rounds of grids held out, against 0.25 for their base rate and {LOOKUP_HELD_OUT:.3f} for a lookup of the "
            "task's earlier grids; predict._fall_chance. "
            + ("Under CISPO's clip the margin is one (a, b) were not fitted on: held out, it ran high where the "
               "displacement of runs that solve their prompts went uncapped, and held once capped there (theory.collapse "
               "(10)). " if hp.clip_mode == "cap" else "")
            + "On another model and task the same map from margin to chance is assumed)",
            _bounds_line(bounds, bound_T, bound_lr)]


def _bounds_line(bounds: dict, bound_T: str, bound_lr: str) -> str:
    return (f"  at most a {bounds['level']:.0%} chance of a fall: {bound_T} at this lr, {bound_lr} at this T (m = 0, a "
            f"rule at its threshold, is a chance of {float(fall_chance(0.0)):.0%})")
