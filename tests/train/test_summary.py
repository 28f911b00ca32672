"""`train`'s summary line: the means of each series over the run's first and last WINDOW steps."""

from __future__ import annotations

import math

from gspo_dynamics.train._summary import WINDOW, moved


def _rows(n: int) -> list[dict]:
    return [{"reward": i / n, "entropy": 1.0 - i / n, "frac_reward_zero_std": 0.0} for i in range(n)]


def test_the_means_are_those_of_the_first_and_last_window():
    rows = _rows(100)
    first = sum(r["reward"] for r in rows[:WINDOW]) / WINDOW
    last = sum(r["reward"] for r in rows[-WINDOW:]) / WINDOW
    line = moved(rows)
    assert line.startswith(f"reward {first:.2g} -> {last:.2g}, entropy ")
    assert line.endswith(f"(means of the first and last {WINDOW} steps)")


def test_a_short_run_splits_in_halves_and_a_one_row_run_says_nothing():
    assert "first and last 3 steps" in moved(_rows(7))
    assert moved(_rows(1)) == "" and moved([]) == ""


def test_non_finite_and_absent_values_are_left_out_of_a_mean():
    rows = [{"reward": math.nan}, {"reward": 0.5}, {"reward": 1.0}, {"reward": None}]
    assert moved(rows) == "reward 0.5 -> 1 (means of the first and last 2 steps)"
    assert moved([{"loss": 1.0}, {"loss": 2.0}]) == ""  # no series it names
