"""The collapse part of predict's --explain (`PilotForecast.summary_lines`): the displacement between samplers
against the collapse limit S H / (1 - z) (`predict._collapse_risk`, theory.collapse (5)) and the bounds it gives, the
entropy's first updates where that is all the pilot shows (theory.collapse (6)), and the KL pull's warning."""

from __future__ import annotations

from gspo_dynamics.predict._collapse_risk import COLLAPSE_SPREAD
from gspo_dynamics.predict._fall_chance import fall_chance_lines
from gspo_dynamics.theory import collapse


def collapse_lines(f) -> list[str]:
    """`PilotForecast` f's collapse lines under --explain: the displacement against the collapse limit and its bounds
    (or what the entropy's first updates showed, or that it was not assessed), then the KL pull."""
    hp, lines = f.config.setup.hparams, []
    if f.displacement is not None:
        T_max = f.collapse_max_refresh
        safe_T = ("any T (the ratio clip's band edge lies within the limit)" if T_max is None
                  else "no T (the pilot's own step overshoots)" if T_max == 0 and f.overshoot
                  else "no T (one step passes the limit)" if T_max == 0 else f"T = {T_max}")
        bound, limit = collapse.relative_limit(COLLAPSE_SPREAD, f.entropy, f.signal_share), f.collapse_limit
        risk, why = (("collapse risk", "; the pilot's entropy rose on its first updates") if f.overshoot else
                     ("collapse risk" if f.displacement > limit else "within the limit", ""))
        where = (f", raised to the pilot's own D = {f.survived:.3g}, which it ran without losing reward"
                 if (raised := limit > bound) else "")
        margin = ("D at most the pilot's own" if raised and f.displacement <= limit
                  else f"margin {1 - f.displacement / limit:+.0%}")
        lines.append(f"  displacement between samplers D = {f.displacement:.3g} against the collapse limit S H / (1 - z) "
                     f"= {COLLAPSE_SPREAD:g} x {f.entropy:.3g} / {f.signal_share:.3g} = {bound:.3g}{where}: {risk} "
                     f"({margin}{why})")
        lines.append(f"  collapse bounds: at this lr safe up to {safe_T}; at this T safe up to lr {f.collapse_max_lr:.3g}")
        lines += fall_chance_lines(f)
    elif f.entropy_rise is not None and not f.overshoot:  # T = 1, or T > 1 without a drift reading
        lines.append(f"  collapse: the move between samplers is not measured (the pilot gives no per-step drift"
                     f"{': none exists at T = 1' if hp.refresh_interval == 1 else ''}); on the first updates the entropy "
                     f"rose at most {f.entropy_rise:+.0%} over its first value, no overshoot (a rise past "
                     f"{collapse.OVERSHOOT_RISE:.0%}, theory.collapse (6))" + ("; the lr bound above is the linear "
                     "model's alone" if f.max_safe_lr is not None else ""))
    else:
        lines.append("  collapse: not assessed (the pilot gives no per-step drift or no token entropy: assumed, below)"
                     + (f"; but the entropy rose {f.entropy_rise:.0%} on the first updates: the step overshoots, safe "
                        f"only below lr {f.collapse_max_lr:.3g}" if f.overshoot else "") + ("; the lr bound above is "
                        "the linear model's alone" if f.max_safe_lr is not None else ""))
    if f.kl_pull:
        lines.append(f"  KL pull, not in the collapse bounds above: with beta = {hp.kl_coef:g} and {1 - f.signal_share:.0%} "
                     "of the run's groups flat, a window whose sampler solves nearly every prompt has almost no "
                     "policy gradient, and the KL term pulls the policy back toward the reference for the rest of "
                     f"its T = {hp.refresh_interval} steps, unseen in the logged reward until the next refresh. On "
                     "our trainer count/cispo held at T = 4 and fell from it from T = 6 at its base lr (3, 6 and 15 "
                     "of 16 seeds at T = 6, 8 and 12) and from T = 12 at a third of it (paper_repro claims "
                     "kl-unwinding, kl-pull-refresh), while count/grpo and count/gspo_token, which this warning "
                     "also names, held at T = 16. Watch for the KL falling while "
                     "frac_reward_zero_std stays near 1; a smaller T bounds the pull")
    return lines
