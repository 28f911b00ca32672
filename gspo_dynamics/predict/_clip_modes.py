"""How each framework's clip acts on the gradient: a loss whose clip caps a detached importance weight and keeps
the gradient (CISPO: Hyperparams.clip_mode "cap") against PPO's min, which switches a clipped token's gradient off
("stop"; `theory.collapse.band_edge` reads the difference), and TRL's CISPO bounds in the theory's terms; a lower
clip bound at or past 1 read as none (`no_lower_clip`); and whether a config has a clip that bounds the policy's
move between sampler refreshes at all (`unclipped`).

Why the last matters before any pilot. With T > 1 optimizer steps per rollout, step j of a window trains on samples
drawn j steps ago: only its first step is on-policy. The sampler the next window draws from is T steps past the
last, and consecutive samplers differ by the displacement (`theory.collapse` (2))

    D(lr, T) = T lr s                                          (no band edge: grows with T without bound)
    D_clip(lr, T) = min(T lr s, max(lr s, log(1 + eps_high)))  (PPO's clip: bounded whatever T, (4))

so the clip's band edge is the only term of a config that bounds how far a window moves the policy; the run is at
risk of collapse once D passes S H / (1 - z) ((7): s, H and z are the model's and the task's, which only a pilot
measures). Without a ratio at all (pg, verl's gpg; SAPO's and VESPO's soft gates, which the model reads as none)
every force is stale too, so the linear bound is the all-stale x_max(T, mu), smaller than on-policy by the factor
`predict` states, and the critical refresh interval T_c is finite at every lr (docs/theory.md 2, 3). A config
without a band edge at T > 1 is therefore at risk before any pilot; its remedies are a clip or T = 1 (on-policy:
D = lr s, no stale step). "Without a band edge" (`unclipped`):

  no ratio           correction none: pg, gpg, or a soft gate (TRL loss_type sapo / vespo, verl loss_mode sapo)
  a capped weight    CISPO (clip_mode "cap"): the push goes on past the cap; (10) caps D only where the run's success
                     is absorbing, which only a pilot's held success rate tells (`theory.collapse.band_edge` with none)
  an edge too wide   log(1 + eps_high) >= NO_CLIP_EDGE: a band edge past every collapse limit S H / (1 - z) of the
                     pilots S was set on caps no displacement the collapse model has flagged (TRL epsilon: 1e9, verl
                     clip_ratio=1e9, the usual ways to switch the clip off)
"""

from __future__ import annotations

import math
from typing import Any

from gspo_dynamics.theory import collapse

# nats, set only on our own trainer's grids: the largest collapse limit S H / (1 - z) among the 170 pilots of
# paper_repro/pilot_forecast.py's cells (pattern-grpo-1m, H = 1.05 nats, 1 - z = 0.021; the median is 0.38): a band
# edge log(1 + eps_high) past it, an eps_high above ~1.2e4, stops no push the collapse model has called too far on any
# run it was set on
NO_CLIP_EDGE = 9.39

# losses whose clip caps a detached importance weight and keeps the gradient (Hyperparams.clip_mode "cap"), by the
# name our objective, TRL's loss_type and verl's policy_loss.loss_mode give them
WEIGHT_CAPPING_LOSSES = {"cispo"}


def clip_mode(loss: Any) -> str:
    """Hyperparams.clip_mode of a loss named `loss` (our objective, TRL's loss_type, verl's loss_mode)."""
    return "cap" if loss in WEIGHT_CAPPING_LOSSES else "stop"


def trl_cispo(level: str, cap: float, notes: list[str]) -> tuple[str, float, float]:
    """(correction, eps_low, eps_high) of TRL's CISPO, whose weight is sg[min(w, epsilon_high)] with no lower bound
    (`predict._frameworks`' docstring): eps_high = `cap` - 1 and no floor (eps_low just below 1, the theory's limit) where the cap is
    above 1; at or below 1 every token's weight is capped from the first step, read as pg (correction "none"): on the
    safe side, since a negative token's push still fades once its weight falls under the cap, log(1 / cap) nats on,
    which theory.collapse (10) would count."""
    if cap > 1.0:
        notes.append(f"loss_type cispo: TRL caps the importance weight at epsilon_high = {cap:g} itself, with no lower "
                     f"bound: the theory's eps_high = {cap - 1:g}, no eps_low")
        return level, 1.0 - 1e-6, cap - 1.0
    notes.append(f"loss_type cispo with epsilon_high = {cap:g} <= 1 (TRL's default for it is epsilon): TRL caps every "
                 "token's importance weight there from the first step, so the gradient is pg's scaled until a weight "
                 "falls under it; read as pg, no correction, so its displacement is never capped (on the safe side: "
                 "past log(1 / epsilon_high) nats a negative token's push fades; ScaleRL recommends epsilon_high = 5.0)")
    return "none", 1.0 - 1e-6, cap


NO_LOWER_CLIP = 1.0 - 1e-6  # eps_low standing for no lower clip: a bound 1 - eps_low just above 0


def no_lower_clip(key: str, low: float, notes: list[str]) -> float:
    """eps_low as the theory takes it: a lower bound 1 - eps_low at or below 0 (`key` >= 1: TRL's epsilon, verl's
    clip_ratio_low, our clip_low; `torch.clamp` then never raises a ratio) is no lower clip, just below 1 (said)."""
    if low < 1.0:
        return low
    notes.append(f"{key} {low:g} >= 1: the ratio's lower bound 1 - {key} <= 0 clips nothing (no lower clip bound); "
                 "the theory's eps_low is just below 1")
    return NO_LOWER_CLIP


def unclipped(hp) -> str | None:
    """Why no band edge bounds the displacement between samplers of a run with `hp` before a pilot (module
    docstring), in the theory's words; None where a clip's band edge does."""
    if hp.correction == "none":
        return "no importance ratio, so no clip (or a soft gate the model reads as none)"
    if collapse.band_edge(hp, None) is None:
        return ("a clip that caps a detached weight (CISPO) and keeps pushing past it: its move is capped only where "
                "the run's success is absorbing (theory.collapse (10)), which only a pilot tells")
    if math.log1p(hp.clip_high) >= NO_CLIP_EDGE:
        return (f"eps_high = {hp.clip_high:g}: its band edge log(1 + eps_high) = {math.log1p(hp.clip_high):.3g} nats "
                f"lies past every collapse limit of the pilots the limit was set on ({NO_CLIP_EDGE:g} nats): no clip")
    return None
