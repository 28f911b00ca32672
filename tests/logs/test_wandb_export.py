"""W&B's chart export ("Export CSV" on a panel): `Step`, then `<run> - <metric>` with its `__MIN` / `__MAX` band
columns, for each run shown. Each run is read as one run of the file (the prefix off its keys, the band columns
unread), the last by default, `run=K` the K-th in column order; a user's own table with " - " in its names is not
taken for one."""

from __future__ import annotations

import numpy as np
import pytest

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.logs import read_log

STEPS = np.arange(1, 61)
A = 0.2 + 0.5 * (1 - np.exp(-STEPS / 20))
B = 0.1 + 0.2 * (1 - np.exp(-STEPS / 20))


def _export(runs: dict[str, np.ndarray], axis: str = "Step", band: bool = True, start: dict | None = None) -> str:
    start = start or {}
    header = [axis] + [f"{run} - {col}" for run in runs for col in
                       (("train/reward", "train/reward__MIN", "train/reward__MAX") if band else ("train/reward",))]
    lines = [",".join(header)]
    for i, step in enumerate(STEPS):
        cells = [str(step)]
        for run, values in runs.items():
            shown = step >= start.get(run, 1)
            cells += [f"{values[i]:.6f}" if shown else ""] * (3 if band else 1)
        lines.append(",".join(cells))
    return "\n".join(lines) + "\n"


def test_each_run_of_an_export_is_a_run_of_the_file_the_last_by_default():
    text = _export({"lr-1e-6": A, "lr-3e-6": B})
    last, first = read_log(text), read_log(text, run=1)
    assert (last.n_runs, last.run_index, first.run_index) == (2, 2, 1)
    assert (last.run_name, first.run_name) == ("lr-3e-6", "lr-1e-6")  # the file's own names, in the header
    np.testing.assert_allclose(last.series["reward"], B, atol=1e-6)
    np.testing.assert_allclose(first.series["reward"], A, atol=1e-6)
    np.testing.assert_array_equal(first.steps, STEPS)
    assert first.columns["reward"] == "train/reward"  # the prefix off, the band columns not read
    note = next(w for w in first.warnings if w.startswith("W&B's chart export"))
    assert "'lr-1e-6', 'lr-3e-6'" in note and "__MIN/__MAX band columns not read" in note


def test_one_run_reads_as_that_run_named():
    log = read_log(_export({"glorious-sunset-12": A}, band=False))
    assert log.n_runs == 1 and "run 'glorious-sunset-12'" in log.warnings[0]
    np.testing.assert_allclose(log.series["reward"], A, atol=1e-6)


def test_a_later_run_starting_past_the_first_is_one_clear_error():
    with pytest.raises(ConfigError, match="export the runs one at a time"):
        read_log(_export({"a": A, "b": B}, start={"b": 11}))


def test_a_users_own_table_with_dashes_is_not_an_export():
    text = "step,reward - mean,reward - std\n" + "".join(f"{s},{a:.4f},0.1\n" for s, a in zip(STEPS, A))
    log = read_log(text)  # no `Step` axis and no band columns: the user's own names, read as they are
    assert log.n_runs == 1 and not any("W&B" in w for w in log.warnings)
    assert log.columns["reward"] == "reward - mean" and log.columns["reward_std"] == "reward - std"
