"""Which came first, the concentration or the fall (`_concentrated_first.concentrated_first`): an entropy collapse while the
reward held below its ceiling, then a fall, is policy concentration (the fall follows it); the same collapse on the
way to a solved task, then a crash, stays the instability."""

from __future__ import annotations

import numpy as np

from gspo_dynamics.diagnose import diagnose
from gspo_dynamics.logs import RunLog

ROWS = 120


def log_of(p: np.ndarray, entropy: np.ndarray, seed: int = 0) -> RunLog:
    rng = np.random.default_rng(seed)
    reward = rng.binomial(64, np.clip(p, 0, 1)) / 64
    h = entropy * np.exp(0.05 * rng.standard_normal(p.size))
    return RunLog(steps=np.arange(1, p.size + 1), series={"reward": reward, "entropy": h}, format="trl_state",
                  source="<synthetic>", trainer="trl", reward_std_kind="unknown")


def test_a_collapse_held_below_the_ceiling_then_a_fall_is_concentration():
    t = np.arange(ROWS)
    p = np.where(t < 30, 0.2 + 0.3 * t / 30, 0.5)  # rises to 0.5 (partial credit), holds
    p[95:] = 0.2  # then falls
    entropy = 1.0 * np.exp(-t / 10) + 0.02  # collapsed by step ~10
    d = diagnose(log_of(p, entropy))
    assert d.primary == "policy_concentration"
    conc = d.verdicts[0]
    item = next(e for e in conc.evidence if e["signal"].startswith("entropy collapsed before the reward fell"))
    assert item["value"] < item["fell_at_step"] and abs(item["fell_at_step"] - 95) <= 5


def test_a_collapse_on_the_way_to_a_solved_task_then_a_crash_stays_an_instability():
    t = np.arange(ROWS)
    p = np.where(t < 30, 0.3 + 0.68 * t / 30, 0.98)  # solved
    p[70:] = 0.0  # crashed
    entropy = 1.0 * np.exp(-t / 10) + 0.02
    d = diagnose(log_of(p, entropy))
    assert d.primary == "dynamical_instability"


def test_a_collapse_long_before_a_fall_of_a_reward_without_a_ceiling_is_not_said_to_follow_the_fall():
    """A reward with no known ceiling (below 0 at times) whose entropy collapsed early, then a fall 80 rows later (audit
    s38 D4, a verl run: entropy down by step ~110, reward fell at 300): the ranking does not say "the reward fell
    while the entropy collapsed"; it names both steps."""
    t = np.arange(ROWS)
    p = np.where(t < 30, 0.2 + 0.3 * t / 30, 0.5)
    p[95:] = 0.2
    entropy = 1.0 * np.exp(-t / 10) + 0.02
    log = log_of(p, entropy)
    log = RunLog(steps=log.steps, series={"reward": log["reward"] - 0.3, "entropy": log["entropy"]},
                 format="trl_state", source="<synthetic>", trainer="trl", reward_std_kind="unknown")
    d = diagnose(log)
    conc = d.verdict("policy_concentration")
    assert d.primary == "dynamical_instability" and conc is not None
    said = " ".join(conc.advice)
    assert "while the entropy collapsed" not in said
    collapsed, fell = (int(x) for x in said.split("the entropy had collapsed by step ")[1].split(
        ": the fall came later")[0].split(", before the reward fell at step "))
    assert collapsed < 40 and abs(fell - 95) <= 5
