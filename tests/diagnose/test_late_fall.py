"""The collapse a user fears most: the reward rises clearly (0.2 -> 0.7 over the first 65% of the run), then falls and
stays down (0.7 -> 0.3). It is read as dynamical instability with a confidence its evidence gives, the step before the
fall, and a do line that goes back to a checkpoint from before it (`_fall`); with hyperparameters whose linear theory
calls the refresh interval stable as well (that theory bounds ringing, not a collapse); and the trend verdict beside
it is no "unsure: still rising or healthy saturation, train longer". A fall inside the late window (the last 15%) is
measured at the level it ends at. Logs made here: rows of 64 binary samples, logged every 5 steps."""

from __future__ import annotations

import numpy as np
import pytest

from gspo_dynamics.diagnose import diagnose
from gspo_dynamics.logs import RunLog
from gspo_dynamics.theory.hyperparams import Hyperparams

ROWS = 200
EVERY = 5
AT_PEAK = 0.05  # the checkpoint named: within a row's noise (sqrt(0.7 0.3 / 64) = 0.057) of the 0.7 peak
MIN_ROWS_BEFORE = 3  # a cliff's checkpoint: the hinge's knee, within fit._windows.MIN_WINDOW rows before the break
SURE = 0.9  # a fall of 0.4 after a rise of 0.5, at 64 samples a row, stands out by far more than Z_TREND


def rows_of(p: np.ndarray, seed: int) -> RunLog:
    rng = np.random.default_rng(seed)
    reward = rng.binomial(64, np.clip(p, 0, 1)) / 64
    return RunLog(steps=EVERY * np.arange(1, p.size + 1), series={"reward": reward}, format="jsonl",
                  source="<synthetic>", trainer="trl", reward_std_kind="unknown")


def rise_then_fall(top: float = 0.65, end: float = 0.3, last: float = 1.0) -> np.ndarray:
    """0.2 -> 0.7 linearly over the first `top` of the run, then linearly down to `end` by the last row: from `top` on,
    or (last < 1) after holding 0.7 until `last` of the run."""
    t = np.linspace(0.0, 1.0, ROWS)
    start = top if last == 1.0 else last
    rise = 0.2 + 0.5 * np.minimum(t / top, 1.0)
    return np.where(t < start, rise, 0.7 - (0.7 - end) * (t - start) / (1.0 - start))


def fall_item(d) -> dict | None:
    inst = d.verdict("dynamical_instability")
    falls = ("late drop below the peak", "sustained drop below the peak")
    return next((e for e in inst.evidence if e["signal"].startswith(falls)), None) if inst else None


def _trend(d):
    return next(v for v in d.verdicts if v.mode in ("healthy_saturation", "still_rising", "stalled", "noise_dominated"))


@pytest.mark.parametrize("seed", range(3))
def test_a_rise_then_a_fall_that_stays_down_is_an_instability_with_its_checkpoint(seed):
    onset = EVERY * int(0.65 * ROWS)  # the step the fall starts at (the peak)
    d = diagnose(rows_of(rise_then_fall(), seed))
    item = fall_item(d)
    assert d.primary == "dynamical_instability" and not d.unsure and d.verdicts[0].confidence >= SURE
    assert item is not None and "then a recovery" not in item["signal"]
    do = d.action()
    assert do.startswith("the reward fell from its peak") and "did not climb back" in do
    assert "at once" not in do  # a gradual fall is no cliff: its break lies on the way down
    step = int(do.split("checkpoint saved by step ")[1].split(",")[0])
    level = rise_then_fall()[step // EVERY - 1]  # the success rate the named checkpoint was trained to
    assert level >= 0.7 - AT_PEAK and step >= onset - 0.25 * EVERY * ROWS  # at the peak, before the fall
    assert "learning_rate" in do  # the key the user edits
    trend = _trend(d)  # the trend reading beside it: settled by the fall, not "train longer"
    assert not trend.unsure and trend.confidence < 0.5
    assert not any(a.startswith("train longer") for a in trend.advice)


def test_hyperparameters_whose_theory_calls_t_stable_do_not_hide_the_fall():
    """With lr 1e-6 at T = 1 the exact discrete theory calls the refresh interval stable and overdamped: that caps
    ringing evidence below the report level, but a fall is the collapse the linear theory does not model. The do line
    names the learning rate with a value."""
    hp = Hyperparams(lr=1e-6, refresh_interval=1, group_size=8)
    d = diagnose(rows_of(rise_then_fall(), 0), hp)
    assert d.primary == "dynamical_instability" and not d.unsure and d.verdicts[0].confidence >= SURE
    assert "now 1e-06, e.g. 5e-07" in d.action()


@pytest.mark.parametrize("seed", range(3))
def test_a_fall_in_the_last_fifteen_percent_is_measured_where_it_ends(seed):
    """The late window (a quarter of the rows) holds 10% of the run at the peak and the 15% of the fall: its mean
    reads a drop of about 0.3 of the rise, at the threshold (confidence near 0.5); the drawdown to the last rows reads
    the whole fall."""
    d = diagnose(rows_of(rise_then_fall(top=0.6, last=0.85), seed))
    item = fall_item(d)
    assert d.primary == "dynamical_instability" and d.verdicts[0].confidence >= SURE
    assert item is not None and item["value"] > 0.6 and "not climbed back" in item["signal"]


def test_a_fall_and_a_recovery_advise_no_checkpoint():
    """A fall the run climbed back from (0.7 -> 0.3 -> 0.7) is still an instability, read as recovered: no row after
    the trough is a fall to go back from."""
    t = np.linspace(0.0, 1.0, ROWS)
    p = np.where(t < 0.4, 0.2 + 0.5 * t / 0.4, np.where((t > 0.55) & (t < 0.7), 0.3, 0.7))
    d = diagnose(rows_of(p, 0))
    item = fall_item(d)
    assert d.primary == "dynamical_instability" and item is not None and "then a recovery" in item["signal"]
    assert "did not climb back" not in d.action()


def test_a_sag_within_the_noise_is_no_instability():
    """0.2 -> 0.7, then 0.7 -> 0.68 over the last third (0.02: under a tenth of a row's noise at 64 samples): no fall
    is read, and the answer is not a collapse."""
    t = np.linspace(0.0, 1.0, ROWS)
    p = np.where(t < 0.5, 0.2 + 0.5 * t / 0.5, 0.7 - 0.02 * np.clip((t - 0.67) / 0.33, 0, 1))
    for seed in range(3):
        d = diagnose(rows_of(p, seed))
        assert d.primary != "dynamical_instability" and fall_item(d) is None


def test_an_entropy_collapse_with_the_fall_is_not_excused_as_one_while_the_reward_rises():
    """The entropy holds at 0.6 until the fall, then falls with the reward to 0.1: the concentration is the fall's
    (ranked below the instability), never dropped with a note that the reward "still rises" (the unsure rise the
    falling reward was read as had excused it, `_ranking._concentration_while_rising`)."""
    t = np.linspace(0.0, 1.0, ROWS)
    for seed in range(3):
        log = rows_of(rise_then_fall(), seed)
        rng = np.random.default_rng(seed)
        entropy = np.where(t < 0.65, 0.6, 0.6 - 0.5 * (t - 0.65) / 0.35) + 0.02 * rng.standard_normal(ROWS)
        log = RunLog(steps=log.steps, series={"reward": log["reward"], "entropy": entropy}, format="jsonl",
                     source="<synthetic>", trainer="trl", reward_std_kind="unknown")
        d = diagnose(log)
        conc = d.verdict("policy_concentration")
        assert d.primary == "dynamical_instability" and conc is not None
        assert conc.confidence < d.verdicts[0].confidence
        assert not any("still rises" in n for n in d.notes)


@pytest.mark.parametrize("seed", range(3))
def test_a_plateau_held_to_a_cliff_names_the_step_before_the_cliff(seed):
    """A rise to 0.7 held until 75% of the run, then one step down to 0.2 (audit s38 D3: a verl run that held its
    plateau to step 300 was told to resume from step 249, the middle of the last window ending before the late one):
    the checkpoint named is the last step before the break, at the plateau, and a fall that sudden names what else
    changes a reward at once before the learning rate."""
    t = np.linspace(0.0, 1.0, ROWS)
    p = np.where(t < 0.75, 0.2 + 0.5 * np.minimum(t / 0.3, 1.0), 0.2)
    cliff = EVERY * int(np.argmax(t >= 0.75))  # the last step at the plateau
    d = diagnose(rows_of(p, seed))
    item = fall_item(d)
    assert d.primary == "dynamical_instability" and item["broke_at_step"] == cliff
    step = int(d.action().split("checkpoint saved by step ")[1].split(",")[0])
    assert step == item["last_at_peak"] and cliff - MIN_ROWS_BEFORE * EVERY <= step <= cliff  # at the plateau, by it
    assert p[step // EVERY - 1] >= 0.7 - AT_PEAK
    assert f"most of it at once after step {cliff}" in d.action() and "check what changed there first" in d.action()


def test_the_hinge_fits_are_least_squares_lines_at_every_knee():
    """hinge_fits' closed form against np.polyfit on y ~ max(0, j - tau), knee by knee (independent route)."""
    from gspo_dynamics.diagnose._fall import hinge_fits

    y = np.random.default_rng(0).standard_normal(50)
    slope, sse = hinge_fits(y)
    for tau in range(49):
        x = np.maximum(0, np.arange(50) - tau)
        b, a = np.polyfit(x, y, 1)
        assert slope[tau] == pytest.approx(b, abs=1e-10) and sse[tau] == pytest.approx(np.sum((y - a - b * x) ** 2))


@pytest.mark.parametrize("width", [5, 20, 40])
def test_a_fall_over_several_rows_names_the_row_before_it_starts(width):
    """A plateau at 0.7 to row 150, then a linear fall to 0.2 over `width` rows (review of session 38: a fall of 5-80
    steps resumed from half a window, ~50 rows, before it): the checkpoint named is at the plateau, within a few rows
    of the fall's start."""
    t = np.arange(ROWS)
    p = np.where(t < 60, 0.2 + 0.5 * t / 60, 0.7)
    p = np.where(t >= 150, np.maximum(0.7 - 0.5 * (t - 150) / width, 0.2), p)
    d = diagnose(rows_of(p, 1))
    step = int(d.action().split("checkpoint saved by step ")[1].split(",")[0])
    assert 150 - 15 <= step // EVERY <= 150 + 5 and p[step // EVERY - 1] >= 0.7 - AT_PEAK


def test_a_fall_in_a_log_numbered_by_its_rows_names_the_checkpoint_by_its_row():
    """A log that prints no step numbers is numbered by its rows (audit s40: a notebook's 30 rows, one every 10 of 300
    steps): 'a checkpoint saved by step 12' would be ten times early, so the row is named as a row."""
    rng = np.random.default_rng(1)
    p = np.concatenate([np.linspace(0.2, 0.8, 30), np.full(30, 0.8), np.full(30, 0.05)])
    reward = rng.binomial(64, p) / 64
    for axis, said in (("row numbers (no step found)", "its logged row"), ("column 'step'", "saved by step")):
        log = RunLog(steps=np.arange(1, 91), series={"reward": reward}, format="console", source="<synthetic>",
                     trainer="trl", reward_std_kind="unknown", step_axis=axis)
        d = diagnose(log)
        assert d.primary == "dynamical_instability" and said in d.verdicts[0].advice[0]
