"""A plateau is two-sided: a reward past its fitted plateau by more than STILL_RISING_FRACTION of the rise, or a late
half falling significantly, is no more saturated than one still short of it (a new user's audit: a collapsed run,
0.5 -> 0.06, listed "also healthy saturation (0.31)" on "remaining rise / total rise = -1.153 (threshold <= 0.1)" and
"late-half slope (z) = -8.571 (threshold < 2)", both counted as met). Logs made here."""

from __future__ import annotations

import numpy as np

from gspo_dynamics.diagnose import diagnose
from gspo_dynamics.diagnose._verdict import SIDES, _evidence_text, evidence
from gspo_dynamics.logs import RunLog


def make_log(reward) -> RunLog:
    n = len(reward)
    return RunLog(steps=np.arange(1, n + 1, dtype=np.int64), series={"reward": np.asarray(reward, float)},
                  format="jsonl", source="<synthetic>", trainer="trl")


def collapse_run(seed: int = 0) -> np.ndarray:
    """24 rows of a [0, 1] score: a slight rise 0.5 -> 0.57 over 10 steps, then a fall to ~0.1 (the audit's shape)."""
    rng = np.random.default_rng(seed)
    t = np.arange(1, 25)
    r = np.where(t <= 10, 0.50 + 0.007 * t, 0.57 - 0.47 * (1 - np.exp(-(t - 10) / 4.0)))
    return np.clip(r + rng.normal(0, 0.01, t.size), 0, 1)


def _item(verdict, signal):
    return next(e for e in verdict.evidence if e["signal"] == signal)


def test_magnitude_sides_hold_on_either_side_of_zero():
    assert SIDES["|<="](-0.1, 0.1) and SIDES["|<="](0.1, 0.1) and not SIDES["|<="](-1.153, 0.1)
    assert SIDES["|<"](-1.9, 2.0) and not SIDES["|<"](-8.571, 2.0) and not SIDES["|<"](2.0, 2.0)
    item = evidence("remaining rise / total rise", -1.153, None, threshold=0.1, side="|<=")
    assert item["holds"] is False
    assert "(threshold |x| <= 0.1: not met)" in _evidence_text(item)


def test_a_collapse_is_not_read_as_saturation_even_as_context():
    for seed in range(3):
        d = diagnose(make_log(collapse_run(seed)))
        sat = d.verdict("healthy_saturation")
        assert sat is not None and sat.confidence < 0.05  # the trend reading kept, but nothing supports it
        remaining = _item(sat, "remaining rise / total rise")
        slope = _item(sat, "late-half slope of the reward (z)")
        assert remaining["side"] == "|<=" and remaining["holds"] is False
        # past the plateau by more than a tenth of the rise; an unstable fit (seed 1) has no plateau to be past
        assert remaining["value"] < -0.1 if d.fit.regime != "unstable" else not np.isfinite(remaining["value"])
        assert slope["side"] == "|<" and slope["value"] <= -2 and slope["holds"] is False
        assert remaining["caveat"] and slope["caveat"]  # shown against it ("!"), not counted for it
        brief = "\n".join(d.report_lines(explain=False))
        if f"{sat.confidence:.2f}" == "0.00":  # seed 0: a verdict printed at 0.00 is not named on the `also` line
            assert "healthy saturation" not in brief
        else:
            assert f"healthy saturation ({sat.confidence:.2f})" in brief


def test_a_late_fall_after_a_rise_is_not_saturation():
    """A rise to 0.8, then a steady sag of 0.15 over the second half: the late half falls significantly and by a share
    of the rise, so saturation is not established (the same run without the sag is saturated)."""
    rng = np.random.default_rng(1)
    t = np.arange(1, 201)
    base = 0.2 + 0.6 * (1 - np.exp(-t / 20))
    flat = diagnose(make_log(np.clip(base + rng.normal(0, 0.03, t.size), 0, 1)))
    assert flat.primary == "healthy_saturation" and not flat.unsure
    sag = base - np.where(t > 100, 0.0015 * (t - 100), 0.0)
    d = diagnose(make_log(np.clip(sag + rng.normal(0, 0.03, t.size), 0, 1)))
    trend = d.verdict("healthy_saturation") or d.verdict("still_rising")
    assert trend.confidence < 0.5 and d.primary != "healthy_saturation"
    # unsure between rising and saturated, or, where the instability reads the fall and leads, a reading ranked below
    # it that the fall settles (`_ranking._fall_settles_rise`: sure, low, no "train longer")
    if not trend.unsure:
        assert d.primary == "dynamical_instability" and not any(a.startswith("train longer") for a in trend.advice)


def test_a_significant_but_negligible_late_creep_is_no_sure_rise():
    """The mirror of saturation's "a significant but negligible creep is a stop": where the late half's slope decides
    (a noisy fit), a climb below MEANINGFUL_CHANGE per-sample stds leaves still rising unsure (a new user's RDAN-GRPO
    log: still rising 0.51 on a late climb of 0.029, its own evidence saying 'meaningful False')."""
    from types import SimpleNamespace

    from gspo_dynamics.diagnose._settled import rise_shown

    late = {"slope_z": 2.03, "meaningful": False, "climb": 0.029}
    assert rise_shown(late, SimpleNamespace(r_squared=0.19)) == [
        "the late half's climb, 0.029, is below a meaningful change (0.2 per-sample reward stds)"]
    assert rise_shown({**late, "meaningful": True}, SimpleNamespace(r_squared=0.19)) == []
    assert rise_shown(late, SimpleNamespace(r_squared=0.6)) == []  # a good fit decides by its remaining rise
    # a late half too short for its own slope leaves a noisy fit's rise unread: lacking, not shown
    assert rise_shown({**late, "slope_z": float("nan")}, SimpleNamespace(r_squared=0.19)) == [
        "the fit is noisy (R^2 0.19 < 0.5) and the last half too short for a slope of its own"]
    assert rise_shown({**late, "slope_z": float("nan")}, SimpleNamespace(r_squared=0.4996))[0].startswith(
        "the fit is noisy (R^2 0.4996 < 0.5)")  # never "0.50 < 0.5"


def test_a_saturation_under_the_checked_confidence_does_not_say_stop_as_a_fact():
    """0.82 (a verl run read at 35 steps, which rose on from 0.48 to 0.57): "train on a while before you stop";
    at 0.95, the plain "reached its plateau (stop, ...)"."""
    from gspo_dynamics.diagnose import Diagnosis, Verdict
    from gspo_dynamics.diagnose._verdict import NOTHING_TO_DO

    def action(c):
        return Diagnosis(primary="healthy_saturation", verdicts=[Verdict("healthy_saturation", c, [], [])], fit=None,
                         implications=None, log_summary={}).action()

    assert action(0.82).startswith("nothing to change yet: the reward looks to have reached its plateau, at a "
                                   "confidence (0.82) under the 0.9 checked on real runs")
    assert action(0.95) == NOTHING_TO_DO["healthy_saturation"]
