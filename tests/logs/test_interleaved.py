"""Runs written into one file in turn (`logs._interleaved`): two processes appending to one CSV are two runs, each
read whole; a resumed run, however often resumed, is not."""

from __future__ import annotations

import numpy as np
import pytest

from gspo_dynamics import ConfigError
from gspo_dynamics.logs import read_log
from gspo_dynamics.logs._interleaved import interleaved_runs


def interleave(a: list[int], b: list[int], seed: int = 0) -> list[tuple[str, int]]:
    """The rows of runs a and b (steps) in a random turn order, each run's own order kept."""
    rng = np.random.default_rng(seed)
    out, i, j = [], 0, 0
    while i < len(a) or j < len(b):
        if j == len(b) or (i < len(a) and rng.random() < len(a) / (len(a) + len(b))):
            out.append(("a", a[i]))
            i += 1
        else:
            out.append(("b", b[j]))
            j += 1
    return out


@pytest.mark.parametrize("seed", range(6))
def test_two_runs_in_turn_part_into_each_runs_rows(seed):
    """The gxx1435/grpo_cross_sectional shape: one run from step 1, another from 189, rows in turn (in 6 turn orders)."""
    rows = interleave(list(range(1, 57)), list(range(189, 216)), seed)
    steps, is_eval = np.array([s for _, s in rows]), np.zeros(len(rows), bool)
    runs = interleaved_runs(steps, is_eval)
    assert runs is not None and len(runs) == 2
    first = rows[0][0]  # the runs are numbered by their first row in the file
    expected = {"a": ["a"] * 56, "b": ["b"] * 27}
    assert [[rows[i][0] for i in run] for run in runs] == [expected[first], expected["b" if first == "a" else "a"]]


@pytest.mark.parametrize("steps", [
    list(range(1, 101)) + list(range(80, 201)),  # resumed once
    [s for lo, hi in ((1, 60), (50, 110), (100, 160), (150, 210), (200, 260)) for s in range(lo, hi)],  # 4 resumes
    list(range(1, 201)),  # one run
])
def test_a_resumed_run_is_not_runs_in_turn(steps):
    assert interleaved_runs(np.array(steps), np.zeros(len(steps), bool)) is None


def test_read_log_reads_either_run_and_says_the_file_holds_two(tmp_path):
    rows = interleave(list(range(1, 61)), list(range(189, 229)), seed=3)
    lines = ["step,reward"] + [f"{s},{(0.2 if who == 'a' else 0.7) + 0.001 * s:.4f}" for who, s in rows]
    path = tmp_path / "grpo_log.csv"
    path.write_text("\n".join(lines) + "\n")
    last, first = read_log(path), read_log(path, run=1)
    assert (last.n_runs, last.run_index, last.n_points("reward")) == (2, 2, 40)
    assert first.n_points("reward") == 60 and first.valid("reward")[0][0] == 1
    assert any("2 runs written into the file in turn" in w for w in last.warnings)
    with pytest.raises(ConfigError, match="there are 2 runs"):
        read_log(path, run=3)
