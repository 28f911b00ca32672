"""The linear model's largest stable lr from a pilot's fitted stiffness (`max_safe_lr`): the config's stiffness bound
x_max(T, mu) (`predict._config_forecast`) over the stiffness per step the pilot's curve measured,

    lr_max = lr_pilot x_max(T, mu) m_p / kappa,    m_p the pilot's mean lr schedule factor (`predict._schedule` (1)),

withheld, with the reason, wherever its premises fail: a plateau at the reward's bound (no restoring force), a rise
faster than the optimizer's linear regime, a stiffness the pilot does not identify (its standard error as large as
itself, an extrapolated plateau), or a curve a flat line fits about as well (BIC(flat) - BIC(fit) <= EVIDENCE_BIC,
`fit_trajectory`'s selection: the bend is the noise's).
"""

from __future__ import annotations

import math

from gspo_dynamics.fit import EVIDENCE_BIC, Implications

FLAT_FIT = "a flat line fits"  # the reason's words where the bound is withheld on a pilot no more than a line


def max_safe_lr(imp: Implications, hp, measured: list[str], x_max: float, factor: float = 1.0,
                 moves: float | None = None) -> tuple[float | None, str]:
    """lr_pilot x_max(T, mu) m_p / kappa (module docstring; x_max `ConfigForecast.stiffness_bound`, m_p = `factor`,
    `predict._schedule` (1)), withheld where the premises fail: also where a flat line fits the pilot as well as its
    curve, `moves` = BIC(flat) - BIC(fit) <= fit.EVIDENCE_BIC (`fit_trajectory`'s selection): kappa is the noise's."""
    if imp.interior_plateau is False:
        return None, "the plateau cannot be told from the reward's bound: no restoring force, the linear threshold does not apply"
    if imp.linear_regime is False:
        return None, "the pilot rises faster than the optimizer's linear regime allows: the linear threshold extrapolates"
    if "stiffness_per_step" in imp.unidentified:
        return None, f"the pilot does not identify the stiffness ({imp.unidentified['stiffness_per_step']})"
    if moves is not None and moves <= EVIDENCE_BIC:
        return None, (f"the pilot does not identify the stiffness ({FLAT_FIT} its rewards as well as its curve"
                      f" or nearly: BIC(flat) - BIC(curve) = {moves:.2g}, not past {EVIDENCE_BIC:g}, so the curve's "
                      "bend is not told from its noise)")
    if imp.stiffness_per_step is None or not imp.stiffness_per_step.value > 0:
        return None, "the fit gives no stiffness"
    kappa, se = imp.stiffness_per_step.value / factor, imp.stiffness_per_step.stderr
    se = se if se is None else se / factor
    if imp.plateau_extrapolated or (se is not None and math.isfinite(se) and se >= kappa) or se == math.inf:
        return None, "the pilot does not identify the stiffness (its plateau is an extrapolation, or the stiffness's " \
                     "standard error exceeds it)"
    measured.append(f"the stiffness per step eta K = {kappa:.3g}")
    span = ""
    if se is not None and math.isfinite(se):  # the bound over the stiffness +- one standard error (se < kappa here)
        span = f"; {hp.lr * x_max / (kappa + se):.3g} to {hp.lr * x_max / (kappa - se):.3g} within one standard error of it"
    return hp.lr * x_max / kappa, (f"linear model: eta K = {kappa:.3g} at lr {hp.lr:g} against the bound {x_max:.3g} at "
                                   f"T = {hp.refresh_interval}{span}")
