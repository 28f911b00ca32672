"""A loop's counter of batches or updates (`batch_index`) is its step; runs appended to one file, each counting its
rows from 1 again, are never read as one curve numbered 1, 2, ... (audit C10's shape: a refusal whose hint, followed,
read six runs as one and their boundaries as a collapse)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gspo_dynamics import ConfigError
from gspo_dynamics.cli.main import main
from gspo_dynamics.logs import read_log
from gspo_dynamics.logs._columns import ColumnMapError
from gspo_dynamics.logs._counters import restarts, row_counter
from gspo_dynamics.logs._vocabulary import classify

RUNS = (19, 6, 12, 10, 8, 200)  # rows per appended run, the last the long one


def _jsonl(rows) -> str:
    return "\n".join(json.dumps(r) for r in rows) + "\n"


def _appended(counter: str, **extra) -> list[dict]:
    """Runs appended to one file: each counts its rows 1, 2, ... in `counter` and rises from 0.1 to 0.3."""
    rng = np.random.default_rng(0)
    return [{counter: i, "reward_mean": 0.1 + 0.2 * (1 - np.exp(-i / 10)) + 0.01 * rng.standard_normal(),
             "reward_std": 0.1, **extra} for n in RUNS for i in range(1, n + 1)]


def test_a_loops_batch_index_is_the_step_and_each_run_is_read_apart():
    log = read_log(_jsonl(_appended("batch_index", zero_gradient_group_fraction=0.5)))
    assert log.step_axis == "column 'batch_index'"
    assert (log.n_runs, log.run_index) == (len(RUNS), len(RUNS))
    np.testing.assert_array_equal(log.steps, np.arange(1, RUNS[-1] + 1))
    # the share of groups whose rewards are all equal (no gradient from them) is the zero-std fraction
    assert log.columns["frac_zero_std"] == "zero_gradient_group_fraction"
    assert read_log(_jsonl(_appended("batch_index")), run=2).n_points("reward") == RUNS[1]


def test_a_counter_name_whose_value_repeats_row_after_row_is_no_step():
    # per-item records: every item of a batch holds its batch's `batch_idx`; not steps, so refused as items
    rows = [{"batch_idx": i // 4, "reward": float(i % 2)} for i in range(40)]
    with pytest.raises(ConfigError, match="does not read as a training log"):
        read_log(_jsonl(rows))


def test_rows_without_a_step_beside_a_counter_that_restarts_are_refused_with_the_step_to_map():
    text = _jsonl(_appended("round"))
    with pytest.raises(ColumnMapError, match="does not read as a training log") as error:
        read_log(text)
    assert error.value.render(cli=True).endswith("--map reward=reward_mean,step=round")
    # following the reward half of the hint alone is refused too: never numbered across the six runs
    with pytest.raises(ColumnMapError, match="starts again 5 time") as error:
        read_log(text, column_map={"reward": "reward_mean"})
    assert str(error.value).count('column_map={"reward": "reward_mean", "step": "round"}') == 1
    log = read_log(text, column_map={"reward": "reward_mean", "step": "round"})
    assert (log.n_runs, log.n_points("reward")) == (len(RUNS), RUNS[-1])


def test_a_counter_that_counts_on_is_neither_refused_nor_named():
    rows = [{"round": i, "reward_mean": 0.01 * i, "loss": 1.0} for i in range(1, 31)]
    log = read_log(_jsonl(rows))
    assert log.step_axis == "row numbers (no step found)" and log.n_points("reward") == 30
    items = [{"idx": i, "reward": float(i % 2)} for i in range(30)]
    with pytest.raises(ColumnMapError) as error:
        read_log(_jsonl(items))
    assert "step=" not in error.value.render(cli=True)


def test_cli_refusal_names_the_whole_map_in_one_line(tmp_path, capsys):
    path = tmp_path / "training_metrics.jsonl"
    path.write_text(_jsonl(_appended("round")))
    assert main(["diagnose", str(path), "--map", "reward=reward_mean"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--map reward=reward_mean,step=round" in err
    assert main(["diagnose", str(path), "--map", "reward=reward_mean,step=round"]) == 0
    assert "run 6 of 6" in capsys.readouterr().out


@pytest.mark.parametrize("values, expected", [
    ([1, 2, 3, 1, 2, 3, 4], 1), ([5, 10, 15, 5, 10], 1), ([0, 1, 2, 3], 0),  # restarts; an interval; none
    ([1, 1, 2, 3], None), ([1, 2, 4, 5], None), ([3, 2, 1], None), ([1, 2], None),  # repeats; gaps; falls; short
])
def test_restarts_counts_the_falls_of_a_counter_of_rows(values, expected):
    assert restarts(values) == expected


def test_row_counter_takes_the_integer_column_that_restarts_most():
    rows = [{"epoch_step": i % 5, "run_step": i % 10, "reward": 0.5, "n": 3} for i in range(30)]
    assert row_counter(rows) == ("epoch_step", 5)
    assert row_counter(rows, skip={"epoch_step"}) == ("run_step", 2)
    assert row_counter([{"flag": True}, {"flag": False}, {"flag": True}]) is None  # bools are no counts
    # as often restarted, the count of rows before a count of items, 4 a row (audit C10's `prompt_refreshes`)
    counted = [{"round": i % 10, "prompt_refreshes": 4 * (i % 10)} for i in range(30)]
    assert row_counter(counted) == ("round", 2)


@pytest.mark.parametrize("key, name", [
    ("zero_gradient_group_fraction", "frac_zero_std"), ("zero_grad_group_frac", "frac_zero_std"),
    ("zero_gradient_fraction", None), ("zero_gradient_group_count", None),
])
def test_zero_gradient_groups_are_the_zero_std_fraction_only_as_a_share_of_groups(key, name):
    found = classify(key)
    assert (found[0] if found else None) == name


def test_a_counter_restarting_as_the_epoch_rises_counts_within_one_run():
    # a loop's batch count within each epoch beside the fraction of data seen: one run, numbered by row as before
    rows = [{"batch": b, "epoch": e + b / 10, "reward_mean": 0.01 * (10 * e + b), "loss": 1.0}
            for e in range(3) for b in range(1, 11)]
    log = read_log(_jsonl(rows))
    assert (log.n_runs, log.n_points("reward")) == (1, 30)
    # runs appended to one file start their epoch again: refused, the counter named
    appended = [{**row, "epoch": row["epoch"] % 1} for row in rows]
    with pytest.raises(ColumnMapError, match="column 'batch' counts them and starts again 2 time"):
        read_log(_jsonl(appended))
