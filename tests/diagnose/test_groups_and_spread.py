"""Zero-std groups read for what they are (helper J): a collapse from a solved state to failing every sample makes the
late all-wrong groups, so the degeneracy ranks below the collapse (`_solved_groups.solved_to_failed`); a reward at its
ceiling is a solved task (`_solved_groups.solved_at_ceiling`); a G the log does not give is not stated in the advice
(inverted from the zero-std share it assumes prompts alike in difficulty: a real run at G = 8 read as G = 2)."""

from __future__ import annotations

import numpy as np
import pytest

from gspo_dynamics.diagnose import diagnose
from gspo_dynamics.logs import RunLog
from gspo_dynamics.theory.hyperparams import Hyperparams

G = 4


def grouped_log(p: np.ndarray, seed: int = 0, prompts: int = 16) -> RunLog:
    """Rows of `prompts` groups of G binary samples at success p: the mean reward and the zero-std share."""
    rng = np.random.default_rng(seed)
    hits = rng.binomial(1, np.clip(p, 0, 1)[:, None, None], size=(p.size, prompts, G))
    per_group = hits.sum(axis=2)
    zero = np.mean((per_group == 0) | (per_group == G), axis=1)
    return RunLog(steps=5 * np.arange(1, p.size + 1), series={"reward": hits.mean(axis=(1, 2)), "frac_zero_std": zero},
                  format="jsonl", source="<synthetic>", trainer="trl", reward_std_kind="unknown")


def test_a_fall_from_solved_groups_to_failed_ones_leads_with_the_collapse():
    p = np.concatenate([np.full(8, 0.9), np.linspace(0.9, 0.01, 4), np.full(28, 0.01)])
    for seed in range(3):
        d = diagnose(grouped_log(p, seed))
        assert d.primary == "dynamical_instability", d.headline()
        deg = d.verdict("advantage_degeneracy")
        assert deg is not None and deg.confidence < d.verdicts[0].confidence
        flip = next(e for e in deg.evidence if e["signal"].startswith("zero-std groups turned from all-correct"))
        assert flip["value"] > 0.5 > flip["late_success_rate"]


def test_zero_std_groups_of_a_task_failed_throughout_stay_the_degeneracy():
    d = diagnose(grouped_log(np.full(40, 0.02)))
    assert d.primary == "advantage_degeneracy"
    assert not any(e["signal"].startswith("zero-std groups turned") for e in d.verdicts[0].evidence)


def test_a_reward_at_its_ceiling_is_advised_as_a_solved_task_and_an_estimated_g_is_said_to_be_estimated():
    d = diagnose(grouped_log(np.full(40, 0.97), seed=1))
    deg = d.verdict("advantage_degeneracy")
    assert deg is not None and deg.advice[0].startswith("the reward is at its ceiling")
    assert not any("too easy" in a for a in deg.advice)
    assert not any(a.startswith("raise the group size") for a in deg.advice)  # no G the log does not give is stated
    assert not any(" G = " in a for a in deg.advice)
    low = diagnose(grouped_log(np.full(40, 0.06), seed=1)).verdict("advantage_degeneracy")  # far from the ceiling
    assert low is not None and not low.advice[0].startswith("the reward is at its ceiling")


def test_without_a_known_g_the_advice_names_the_share_and_asks_for_g():
    """Far from the ceiling, no G given: the advice says the measured share and both fixes, and asks for the G that
    tells them apart; with the G given, it names it."""
    d = diagnose(grouped_log(np.full(40, 0.06), seed=1))
    deg = d.verdict("advantage_degeneracy")
    text = " ".join(deg.advice)
    assert "of groups carry no signal at success rate" in text and "--config" in text and " G = " not in text
    hp = Hyperparams(lr=1e-6, refresh_interval=1, group_size=G, num_groups=16)
    given = diagnose(grouped_log(np.full(40, 0.06), seed=1), hp).verdict("advantage_degeneracy")
    assert any(a.startswith(f"raise the group size: at success rate 0.06, G = {G} leaves") for a in given.advice)


def test_a_groups_mean_std_is_no_per_sample_spread_of_a_success_rate():
    """TRL before 0.15 logs the mean of the groups' own stds: at G = 2 on a 0/1 reward it reads ~0.14 where the
    per-sample spread is sqrt(p(1-p)) ~ 0.49 (p(1-p) = E[p_i(1-p_i)] + Var(p_i), the prompts' spread left out);
    the larger is read. A batch std, or a std of unknown kind, is read as logged."""
    from gspo_dynamics.diagnose._context import reward_spread

    rng = np.random.default_rng(0)
    p_i = rng.choice([0.0, 0.1, 0.9, 1.0], size=(60, 16))  # prompts mostly solved or failed
    hits = rng.binomial(1, p_i[..., None], size=(60, 16, 2))
    within = hits.std(axis=2, ddof=1).mean(axis=1)
    series = {"reward": hits.mean(axis=(1, 2)), "reward_std": within}
    old = RunLog(steps=np.arange(1, 61), series=series, format="jsonl", source="<synthetic>", trainer="trl",
                 reward_std_kind="group_mean_std")
    spread, source = reward_spread(old)
    p = float(np.mean(np.clip(series["reward"], 0, 1)))
    assert spread == pytest.approx(np.sqrt(p * (1 - p))) and source.startswith("sqrt(p(1-p))")
    assert spread > 2 * within.mean()
    new = RunLog(steps=np.arange(1, 61), series=series, format="jsonl", source="<synthetic>", trainer="trl",
                 reward_std_kind="unknown")
    assert reward_spread(new)[0] == pytest.approx(within.mean())


def test_a_zero_std_share_that_g_would_decide_is_said_undecided_without_g():
    """Prompts of mixed difficulty (half solved at 0.97, half failed at 0.03: a mean near 0.5) at G = 8: most groups
    zero-std. Without G the share inverts to a small G that would give it alone (no degeneracy), so the answer says
    it is undecided and what tells (--explain's line, and the brief's `also`); with G = 8 it is the degeneracy."""
    from gspo_dynamics.diagnose._signals import UNDECIDED_WITHOUT_G

    rng = np.random.default_rng(3)
    rows, prompts, g = 40, 16, 8
    p = np.where(rng.random((rows, prompts)) < 0.5, 0.97, 0.03)
    hits = rng.binomial(1, p[:, :, None], size=(rows, prompts, g))
    per_group = hits.sum(axis=2)
    log = RunLog(steps=5 * np.arange(1, rows + 1), series={
        "reward": hits.mean(axis=(1, 2)), "frac_zero_std": np.mean((per_group == 0) | (per_group == g), axis=1)},
        format="jsonl", source="<synthetic>", trainer="trl", reward_std_kind="unknown")
    blind = diagnose(log)
    said = [n for n in blind.not_checked if UNDECIDED_WITHOUT_G in n]
    assert blind.verdict("advantage_degeneracy") is None and len(said) == 1 and "--config" in said[0]
    assert any("advantage degeneracy undecided without G" in line for line in blind.report_lines(explain=False))
    hp = Hyperparams(lr=1e-6, refresh_interval=1, group_size=g, num_groups=prompts)
    known = diagnose(log, hp)
    assert known.verdict("advantage_degeneracy") is not None
    assert not any(UNDECIDED_WITHOUT_G in n for n in known.not_checked)

