"""Claim: the closed-form oscillator trajectory fits simulated mean reward curves with R^2 >= 0.99.

Two-armed bandit (pi_ref(1) = sigmoid(-1), beta = 0.5, mean advantage), simulated in torch:
expected dynamics in the overdamped, near-critical, underdamped and stale (T = 4) regimes, and
the mean over seeds of finite-G runs. Each curve gets the 5-parameter oscillator fit and the
nested single exponential; the BIC says whether inertia/oscillation is supported.
A large-amplitude oscillatory transient (lr 0.5, mu 0.9: the first swing reaches R ~ 0.9, where
the sigmoid's curvature changes the frequency) is reported alongside, outside the claim.

    python paper_repro/closed_form_fit.py [--quick]
"""

from __future__ import annotations

import time
import warnings

from _results import Claim, parse_mode, record

from gspo_dynamics.fit import fit_exponential, fit_oscillator
from gspo_dynamics.sim import BanditTask, simulate
from gspo_dynamics.theory.bandit import TwoArmBandit
from gspo_dynamics.theory.hyperparams import SGD, Hyperparams

R2_TARGET = 0.99
CASES = {  # name: (lr, momentum, refresh interval, group size or None)
    "overdamped": (0.2, 0.0, 1, None),
    "near-critical": (0.2, 0.8, 1, None),
    "underdamped": (0.1, 0.9, 1, None),
    "stale T=4": (0.5, 0.5, 4, None),
    "finite G=8 (mean of seeds)": (0.2, 0.0, 1, 8),
    "underdamped G=8 (mean of seeds)": (0.1, 0.9, 1, 8),
}
OUTSIDE = {"large-amplitude oscillation": (0.5, 0.9, 1, None)}


def fit_case(bandit, lr, mu, T, G, steps, seeds):
    hp = Hyperparams(lr=lr, optimizer=SGD(momentum=mu), refresh_interval=T, group_size=G, kl_coef=0.5)
    run = simulate(BanditTask.from_theory(bandit), [hp], steps=steps, seeds=seeds if G else 1, expected=G is None)
    curve = run.mean_reward[:, 0, :].mean(axis=1)
    t = run.steps.astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return fit_oscillator(t, curve), fit_exponential(t, curve)


def main() -> None:
    args = parse_mode(__doc__.splitlines()[0])
    started = time.perf_counter()
    bandit = TwoArmBandit(ref_logit=-1.0)
    steps, seeds = (400, 128) if args.quick else (800, 1024)
    results = {}
    for name, case in {**CASES, **OUTSIDE}.items():
        osc, expo = fit_case(bandit, *case, steps, seeds)
        results[name] = (osc, expo)
        verdict = "oscillator" if osc.bic < expo.bic - 10 else "exponential"
        print(f"{name:34s} R^2 oscillator {osc.r_squared:.5f}  exponential {expo.r_squared:.5f}  BIC prefers {verdict}")
    in_claim = {k: v for k, v in results.items() if k in CASES}
    worst = min(o.r_squared for o, _ in in_claim.values())
    cmd = "python paper_repro/closed_form_fit.py" + (" --quick" if args.quick else "")
    outside = ", ".join(f"{k}: {o.r_squared:.3f}" for k, (o, _) in results.items() if k in OUTSIDE)
    record(Claim("closed-form-fit", f"oscillator closed form fits simulated mean reward curves, R^2 >= {R2_TARGET} ({len(CASES)} regimes)"),
           predicted=f"R^2 >= {R2_TARGET}",
           measured="; ".join(f"{k}: {o.r_squared:.4f} (exp {e.r_squared:.3f})" for k, (o, e) in in_claim.items())
           + f". Outside the claim: {outside}",
           passed=worst >= R2_TARGET, quick=args.quick, started=started, command=cmd, write=not args.no_record)


if __name__ == "__main__":
    main()
