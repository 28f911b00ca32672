"""A flat reading (stalled, noise-dominated) beside an instability whose fall item holds is not named on the `also`
line (audit s40: "also noise dominated (0.85)" beside a drop at z 7.5; "unsure: noise dominated or stalled" beside a
cliff at z 16): a change the data show is no stall and is not hidden by noise. --explain keeps the reading."""

from __future__ import annotations

import numpy as np

from gspo_dynamics.diagnose import diagnose
from gspo_dynamics.diagnose._verdict import FALL_ITEMS, Verdict, _flat_beside_fall
from gspo_dynamics.logs import RunLog


def test_the_fall_items_named_are_the_ones_the_fall_rules_write():
    rng = np.random.default_rng(0)
    p = np.concatenate([np.linspace(0.2, 0.8, 40), np.full(40, 0.8), np.full(40, 0.1)])
    log = RunLog(steps=np.arange(1, 121), series={"reward": rng.binomial(64, p) / 64}, format="jsonl",
                 source="<synthetic>", trainer="trl", reward_std_kind="unknown")
    d = diagnose(log)
    assert d.primary == "dynamical_instability"
    assert any(e["signal"].startswith(FALL_ITEMS) for e in d.verdicts[0].evidence)


def test_a_flat_reading_beside_a_held_fall_is_context_and_beside_no_fall_an_answer():
    fall = {"signal": "sustained drop below the peak, not climbed back / rise to the peak", "value": 1.0, "steps": None}
    spike = {"signal": "oscillation amplitude", "value": 1.0, "steps": None}
    noise = Verdict("noise_dominated", 0.85, [], [])
    unsure = Verdict("noise_dominated", 0.5, [], [], unsure=("noise_dominated", "stalled"))
    assert _flat_beside_fall(noise, Verdict("dynamical_instability", 0.99, [fall], []))
    assert _flat_beside_fall(unsure, Verdict("dynamical_instability", 0.99, [fall], []))
    assert not _flat_beside_fall(noise, Verdict("dynamical_instability", 0.99, [spike], []))  # no fall: both stand
    assert not _flat_beside_fall(noise, Verdict("dynamical_instability", 0.4, [fall], []))  # a fall not held
    assert not _flat_beside_fall(Verdict("policy_concentration", 0.9, [], []),
                                 Verdict("dynamical_instability", 0.99, [fall], []))
