"""Rows written newest first or shuffled (`logs._order`): read in step order, said on the step axis; runs appended
to one file and resumed runs (their steps repeat) are left to the run rules."""

from __future__ import annotations

import numpy as np
import pytest

from gspo_dynamics.logs import read_log
from gspo_dynamics.logs._order import step_order


def _csv(path, steps, rewards, extra=""):
    path.write_text("step,reward\n" + "".join(f"{s},{r}\n" for s, r in zip(steps, rewards)) + extra)
    return str(path)


@pytest.mark.parametrize("steps, expected", [
    (list(range(8, 0, -1)), list(range(7, -1, -1))),  # newest first
    ([3, 2, 1], None),  # too few rows to tell three runs from a table sorted newest first
    ([1, 2, 3, 4], None),  # in order
    ([1, 2, 3, 1, 2, 3], None),  # two runs appended: steps repeat
    ([1, 2, 3, 4, 2, 3, 5, 6], None),  # a resumed run: steps repeat
    ([1, 2, 10, 20, 30, 40, 50, 5], None),  # back once: too few to be a reordering
    ([2, 1], None),  # back once
])
def test_step_order_reorders_only_distinct_steps_that_fall_often(steps, expected):
    s = np.asarray(steps)
    order, said = step_order(s, np.zeros(s.size, bool))
    assert (order.tolist() if order is not None else None) == expected
    assert (said != "") == (expected is not None)


def test_an_evaluation_row_follows_the_training_row_of_its_step():
    steps = np.array([9, 9, 8, 7, 6, 5, 4, 3, 2, 1])
    is_eval = np.arange(10) == 0
    order, _ = step_order(steps, is_eval)
    assert order.tolist() == [9, 8, 7, 6, 5, 4, 3, 2, 1, 0]


def _rising(n):
    return 0.1 + 0.8 * (1 - np.exp(-np.arange(1, n + 1) / 40))


def test_a_table_sorted_newest_first_reads_as_the_run_in_order(tmp_path):
    r = _rising(150)
    forward = read_log(_csv(tmp_path / "f.csv", range(1, 151), r))
    backward = read_log(_csv(tmp_path / "b.csv", range(150, 0, -1), r[::-1]))
    assert backward.n_runs == 1 and backward.steps.tolist() == list(range(1, 151))
    np.testing.assert_array_equal(backward["reward"], forward["reward"])
    assert backward.step_axis == "column 'step', the rows read in step order (the file's are newest first)"


def test_shuffled_rows_read_in_step_order_and_say_how_far_out_they_were(tmp_path):
    r = _rising(150)
    perm = np.random.default_rng(0).permutation(150)
    log = read_log(_csv(tmp_path / "s.csv", (perm + 1).tolist(), r[perm]))
    assert log.n_runs == 1 and log.steps.tolist() == list(range(1, 151))
    np.testing.assert_allclose(log["reward"], r)
    backs = int(np.sum(perm[1:] < perm[:-1]))
    assert f"out of order: the step goes back on {backs} of 150 rows, no step repeated" in log.step_axis


def test_runs_appended_to_one_file_are_still_runs(tmp_path):
    r = _rising(40)
    log = read_log(_csv(tmp_path / "a.csv", list(range(1, 41)) * 3, np.tile(r, 3)))
    assert log.n_runs == 3 and "step order" not in log.step_axis
