"""The live guard: its view of the log is the log itself up to VIEW_ROWS rows (so its verdict is batch diagnose's but
for the warm-started fit's optimum), block means past it; a verdict that does not hold for HOLD_ROWS rows is never
reported; nothing is said before the rows can support it; each alert is said once; the summary's verdict is batch
diagnose's on the same rows."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.diagnose import Diagnosis, Verdict, diagnose
from gspo_dynamics.integrations._guard import (
    HOLD_ROWS, PENDING, TREND_ROWS, Guard, GuardSettings, headline_label, summary_line,
)
from gspo_dynamics.integrations._view import LogView
from gspo_dynamics.logs import read_log_history


def trl_rows(kind: str, n: int, seed: int = 0) -> list[dict]:
    """TRL log_history rows of one synthetic run: `kind` rising, flat, swinging, degenerate, collapsing or nan."""
    rng = np.random.default_rng(seed)
    t = np.arange(1, n + 1, dtype=float)
    reward = 0.8 - 0.6 * np.exp(-t / (n / 6))
    entropy = np.full(n, 1.0)
    zero_std = np.full(n, 0.1)
    if kind == "flat":
        reward = np.full(n, 0.3)
    elif kind == "swinging":
        reward = np.where(t > n / 2, 0.6 + 0.25 * np.where(t % 2 == 1, 1.0, -1.0), reward)
    elif kind == "degenerate":
        reward, zero_std = np.full(n, 0.02), np.full(n, 0.97)
    elif kind == "collapsing":
        reward = np.where(t > n / 2, 0.4, 0.2 + 0.4 * t / n)
        entropy = np.where(t > n / 3, 0.02, 1.0)
    reward = reward + 0.02 * rng.standard_normal(n)
    rows = []
    for i in range(n):
        grad = math.nan if kind == "nan" and i + 1 == int(0.7 * n) else 1.0
        rows.append({"step": i + 1, "reward": float(reward[i]), "reward_std": 0.3, "entropy": float(entropy[i]),
                     "frac_reward_zero_std": float(zero_std[i]), "grad_norm": grad, "loss": 0.0})
    return rows


def feed(guard: Guard, rows: list[dict], chunk: int = 10) -> list:
    checks = []
    for i in range(0, len(rows), chunk):
        guard.add(read_log_history(rows[i:i + chunk]))
        checks.append(guard.check())
    return checks


def test_the_view_is_the_log_up_to_its_size_and_block_means_past_it():
    rows = trl_rows("rising", 300)
    full = read_log_history(rows)
    view = LogView(512)
    for i in range(0, 300, 7):
        view.add(read_log_history(rows[i:i + 7]))
    log = view.run_log()
    assert np.array_equal(log.steps, full.steps) and set(log.series) == set(full.series)
    assert all(np.array_equal(log[k], full[k], equal_nan=True) for k in full.series)
    small = LogView(64)  # 300 rows in blocks of 8: 38 rows, the last of 4
    for i in range(0, 300, 7):
        small.add(read_log_history(rows[i:i + 7]))
    log = small.run_log()
    assert small.block == 8 and log.steps.size == 38 and np.all(np.diff(log.steps) > 0)
    assert log["reward"][0] == pytest.approx(np.mean(full["reward"][:8]), rel=1e-12)
    assert log["reward"][-1] == pytest.approx(np.mean(full["reward"][296:]), rel=1e-12)


def test_a_non_finite_value_stays_in_its_block_and_a_trailing_one_is_a_divergence():
    rows = trl_rows("rising", 200)
    rows[150]["grad_norm"] = math.nan
    for r in rows[190:]:
        r["loss"] = math.inf
    view = LogView(64)
    for i in range(0, 200, 9):
        view.add(read_log_history(rows[i:i + 9]))
    log = view.run_log()
    bad = np.flatnonzero(np.isnan(log["grad_norm"]))
    assert bad.size == 1 and log.steps[bad[0] - 1] < 151 <= log.steps[bad[0]] + view.block
    assert log.logged_non_finite["grad_norm"].sum() == 1
    assert view.diverged["loss"] == (191, 10) and read_log_history(rows).diverged["loss"] == (191, 10)


def held_at(checks, start: int) -> int:
    """The rows at the first diagnosis HOLD_ROWS after the first diagnosis at or after row `start` (past 64 rows a
    check diagnoses every ceil(rows / 64) rows)."""
    diagnosed = [c.rows for c in checks if c.diagnosed]
    first = min(r for r in diagnosed if r >= start)
    return min(r for r in diagnosed if r >= first + HOLD_ROWS)


def scripted(sequence: list[tuple[int, Diagnosis]]):
    """A diagnose_fn giving, for a view ending at row n, the last entry of `sequence` at or before n."""

    def fn(run, hparams):
        n = int(run.steps[-1])
        return [d for start, d in sequence if start <= n][-1]

    return fn


def dx(mode: str, confidence: float) -> Diagnosis:
    return Diagnosis(primary=mode, verdicts=[Verdict(mode, confidence, [], [f"advice for {mode}"])], fit=None,
                     implications=None, log_summary={})


def test_a_flicker_shorter_than_the_hold_is_never_reported_nor_alerted():
    # issue 50: healthy -> instability 0.97 -> healthy over rows 42-53, diagnosed every row
    fn = scripted([(1, dx("healthy_saturation", 0.8)), (42, dx("dynamical_instability", 0.97)),
                   (54, dx("healthy_saturation", 0.8))])
    guard = Guard(diagnose_fn=fn)
    checks = feed(guard, trl_rows("rising", 120), chunk=1)
    assert not any(c.alerts for c in checks) and guard.alerts == []
    assert {c.verdict for c in checks} == {PENDING, "healthy_saturation"}
    first = next(c for c in checks if c.verdict != PENDING)
    assert first.rows == held_at(checks, 54) and first.changed and first.previous == PENDING  # restarted at 54


def test_a_verdict_that_holds_is_reported_once_with_its_own_action():
    fn = scripted([(1, dx("healthy_saturation", 0.8)), (60, dx("dynamical_instability", 0.97))])
    guard = Guard(diagnose_fn=fn)
    checks = feed(guard, trl_rows("rising", 120), chunk=1)
    alerted = [c for c in checks if c.alerts]
    assert len(alerted) == 1 and alerted[0].rows == held_at(checks, 60) <= 60 + HOLD_ROWS + 1
    alert = alerted[0].alerts[0]
    assert alert.name == "dynamical_instability" and alert.action == "advice for dynamical_instability"
    assert alert.text == f"step {alerted[0].rows}: dynamical instability (confidence 0.97) — do advice for dynamical_instability"
    assert checks[-1].verdict == "dynamical_instability" and checks[-1].action == "advice for dynamical_instability"


def test_nothing_is_reported_before_the_rows_support_it():
    # a confident noise-dominated reading at step 10 (issue 50) is a trend verdict: it waits for TREND_ROWS
    guard = Guard(diagnose_fn=scripted([(1, dx("noise_dominated", 0.97))]))
    checks = feed(guard, trl_rows("rising", 60), chunk=1)
    assert all(c.verdict == PENDING for c in checks if c.rows < TREND_ROWS + HOLD_ROWS)
    assert [a.step for a in guard.alerts] == [TREND_ROWS + HOLD_ROWS]
    assert headline_label(dx("stalled", 0.99), TREND_ROWS - 1) is None
    assert headline_label(dx("advantage_degeneracy", 0.99), 8) == "advantage_degeneracy"


def test_a_check_diagnoses_only_when_a_blocks_worth_of_rows_arrived_or_a_value_turned_non_finite():
    calls = []

    def fn(run, hparams):
        calls.append(run.steps.size)
        return dx("healthy_saturation", 0.8)

    guard = Guard(GuardSettings(view_rows=64), diagnose_fn=fn)
    rows = trl_rows("rising", 1000)
    feed(guard, rows[:960], chunk=40)
    assert guard.view.block == 16 and max(calls) <= 64
    n = len(calls)
    guard.add(read_log_history(rows[960:970]))
    assert not guard.check().diagnosed and len(calls) == n  # 10 < 16 new rows: the last diagnosis stands
    rows[975]["grad_norm"] = math.nan
    guard.add(read_log_history(rows[970:980]))
    assert guard.check().diagnosed and len(calls) == n + 1


@pytest.mark.parametrize("kind", ["rising", "flat", "swinging", "degenerate", "collapsing", "nan"])
def test_the_summary_verdict_is_batch_diagnoses_on_the_same_rows(kind):
    rows = trl_rows(kind, 160, seed=1)
    guard = Guard()
    feed(guard, rows, chunk=40)
    batch = diagnose(read_log_history(rows))
    summary = guard.summary()
    assert summary["verdict"] == headline_label(batch, 160, final=True)
    assert summary["confidence"] == pytest.approx(batch.verdicts[0].confidence)
    # findings are said once and kept: every finding batch diagnose shows was seen by the guard
    assert {f.name for f in batch.findings if f.severity != "note"} <= {f["name"] for f in summary["findings"]}


def test_past_the_view_the_summary_given_every_row_is_batch_diagnose_of_them():
    """A view of block means answers a rule at its threshold otherwise than the rows do (audit s37: a decayed lr at
    25% of its peak): given the rows themselves (`whole`, as watch's follower keeps them), the final diagnosis is batch
    diagnose's of them; given rows that are not the view's, the view's block means answer."""
    rows = trl_rows("swinging", 300, seed=3)
    log = read_log_history(rows)
    batch = diagnose(log)
    guards = [Guard(GuardSettings(view_rows=64)) for _ in range(3)]
    for guard in guards:
        feed(guard, rows, chunk=50)
    assert guards[0].view.block > 1
    summary = guards[0].summary(whole=log)
    assert guards[0].diagnosis.log.steps.size == 300  # the rows, not the view's 64 or fewer
    assert summary["verdict"] == headline_label(batch, 300, final=True)
    assert summary["confidence"] == pytest.approx(batch.verdicts[0].confidence)
    assert summary["block_means"] is False and "diagnosed on means" not in summary_line(summary)
    other = guards[1].summary(whole=read_log_history(rows[:200]))  # not the rows the guard read
    guards[2].summary()
    assert guards[1].diagnosis.log.steps.size == guards[2].diagnosis.log.steps.size <= 64
    assert other["block_means"] is True  # said: the final diagnosis read the view's block means
    assert f"300 rows (diagnosed on means of {other['view_block']} rows each" in summary_line(other)


def test_settings_are_checked():
    with pytest.raises(ConfigError, match="min_confidence must be a number in"):
        GuardSettings(min_confidence=1.5)
    with pytest.raises(ConfigError, match="hold_rows must be"):
        GuardSettings(hold_rows=-1)
    with pytest.raises(ConfigError, match="warm_start must be True or False"):
        GuardSettings(warm_start="yes")


def test_checks_fit_from_the_last_optima_and_the_summary_from_batchs_multi_start():
    rows = trl_rows("swinging", 160, seed=2)
    guard = Guard()
    fits = [c.diagnosis.fit for c in feed(guard, rows, chunk=40)]
    assert "warm_start" not in fits[0].selection  # the first diagnosis has no optimum to start from
    assert all(f.selection["warm_start"]["from_step"] == prev.t_end for prev, f in zip(fits, fits[1:]))
    summary = guard.summary()  # no new rows, but the last diagnosis was warm: batch's fit gives the final verdict
    assert summary["diagnoses"] == 5 and "warm_start" not in guard.diagnosis.fit.selection


def test_without_warm_starts_every_check_is_batch_diagnose_of_its_rows():
    rows = trl_rows("swinging", 160, seed=2)
    guard = Guard(GuardSettings(warm_start=False))
    for i, check in enumerate(feed(guard, rows, chunk=40)):
        batch = diagnose(read_log_history(rows[:40 * (i + 1)]))
        assert check.diagnosis.primary == batch.primary
        assert check.diagnosis.verdicts[0].confidence == pytest.approx(batch.verdicts[0].confidence)


def test_the_benign_verdicts_hold_as_one_family():
    # a curve nearing its plateau: still rising and healthy saturation alternate from row 32 on; the benign family
    # holds from there, so the verdict is reported after HOLD_ROWS rows (then it moves only to a verdict that held)
    fn = scripted([(1, dx("still_rising", 0.9))] + [(r, dx("healthy_saturation" if r % 8 else "still_rising", 0.9))
                                                    for r in range(32, 120, 4)])
    guard = Guard(diagnose_fn=fn)
    checks = feed(guard, trl_rows("rising", 60), chunk=1)
    first = next(c for c in checks if c.verdict != PENDING)
    assert first.rows == TREND_ROWS + HOLD_ROWS and first.verdict in ("still_rising", "healthy_saturation")
    assert guard.alerts == []


@pytest.mark.slow
def test_the_guards_final_verdict_is_batch_diagnoses_on_the_labelled_corpus(tmp_path):
    """Every mode of the simulated TRL corpus (sim.corpus, one seed), fed in 25-row chunks as the callback reads them."""
    import json

    from gspo_dynamics.sim.corpus import generate_corpus

    for entry in generate_corpus(tmp_path, seeds=1):
        rows = [r for r in json.loads(entry.path.read_text())["log_history"] if "train_runtime" not in r]
        steps = entry.label.get("logging_steps")
        guard = Guard()
        for i in range(0, len(rows), 25):
            guard.add(read_log_history(rows[i:i + 25], logging_steps=steps))
        batch = diagnose(read_log_history(rows, logging_steps=steps))
        assert guard.summary()["verdict"] == headline_label(batch, guard.rows, final=True), entry.label


def test_a_reported_verdict_below_min_confidence_names_no_action():
    """A healthy saturation at 0.8 (below 0.9) is reported, without its advice ("stop, or harder prompts"): a lean is
    no ground for acting; at 0.95 its own advice; an unsure verdict keeps what would tell."""
    from gspo_dynamics.integrations._guard import WAIT

    weak = feed(Guard(diagnose_fn=scripted([(1, dx("healthy_saturation", 0.8))])), trl_rows("rising", 80), chunk=1)
    assert weak[-1].verdict == "healthy_saturation" and weak[-1].action == WAIT.format(0.9)
    sure = feed(Guard(diagnose_fn=scripted([(1, dx("healthy_saturation", 0.95))])), trl_rows("rising", 80), chunk=1)
    assert sure[-1].action == "advice for healthy_saturation"
    lower = feed(Guard(GuardSettings(min_confidence=0.7), diagnose_fn=scripted([(1, dx("healthy_saturation", 0.8))])),
                 trl_rows("rising", 80), chunk=1)
    assert lower[-1].action == "advice for healthy_saturation"


def test_the_guards_band_is_diagnoses_checked_one():
    """One calibrated band: the guard acts, and diagnose says "stop", from the same confidence."""
    from gspo_dynamics.diagnose._verdict import CHECKED_CONFIDENCE
    from gspo_dynamics.integrations._guard import MIN_CONFIDENCE

    assert MIN_CONFIDENCE == CHECKED_CONFIDENCE


def test_the_summary_names_the_final_failure_mode_without_touching_the_guard():
    """A summary (watch's idle one, a --once reading) lists the failure mode its final diagnosis names at
    min_confidence among the alerts though no streak held it, and leaves the guard's state alone: the mode is still
    alerted once, live, when it holds, and two summaries list it once (review s44: it was alerted twice, or never)."""
    rows = trl_rows("degenerate", 120, seed=1)
    guard = Guard()
    guard.add(read_log_history(rows[:40]))
    guard.check()
    idle = guard.summary()
    assert idle["verdict"] == "advantage_degeneracy" and [a["name"] for a in idle["alerts"]] == ["advantage_degeneracy"]
    assert not guard.alerts and "advantage_degeneracy" not in guard.flagged
    for start in range(40, 120, 16):
        guard.add(read_log_history(rows[start:start + 16]))
        guard.check()
    assert [a.name for a in guard.alerts] == ["advantage_degeneracy"]  # alerted live, once
    guard.summary()
    assert [a["name"] for a in guard.summary()["alerts"]] == ["advantage_degeneracy"]
