"""How each framework's clip acts on the gradient: a loss whose clip caps a detached importance weight and keeps
the gradient (CISPO: Hyperparams.clip_mode "cap") against PPO's min, which switches a clipped token's gradient off
("stop"; `theory.collapse.band_edge` reads the difference), and TRL's CISPO bounds in the theory's terms."""

from __future__ import annotations

from typing import Any

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
