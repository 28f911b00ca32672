"""Rows a logger copies (its last values written at every step) are read once, at their first step; chance repeats
and a pinned run are kept (`logs._repeats`)."""

from __future__ import annotations

import json

import numpy as np

from gspo_dynamics.logs import read_log
from gspo_dynamics.logs._repeats import COPY_SHARE, MIN_BLOCKS, MIN_MEASURED, repeated_rows


def _jsonl(rows: list[dict]) -> str:
    return "\n".join(json.dumps(r) for r in rows) + "\n"


def _loop(series: dict, training: set) -> np.ndarray:
    """The module docstring's rule, one row at a time (an independent route to `repeated_rows`)."""
    names = [n for n in series if n in training]
    n = len(next(iter(series.values())))
    out = np.zeros(n, dtype=bool)
    for i in range(1, n):
        same = all(series[k][i] == series[k][i - 1] or (np.isnan(series[k][i]) and np.isnan(series[k][i - 1]))
                   for k in names)
        measured = sum(1 for k in names if k != "learning_rate" and np.isfinite(series[k][i]) and series[k][i] != 0)
        no_eval = all(np.isnan(series[k][i]) for k in series if k not in training)
        out[i] = same and measured >= MIN_MEASURED and no_eval
    lengths, run = [], 1  # the blocks' lengths, counted one row at a time
    for i in range(1, n + 1):
        if i < n and out[i]:
            run += 1
            continue
        lengths.append(run)
        run = 1
    periodic = any(lengths.count(k) >= MIN_BLOCKS for k in set(lengths) if k >= 2)
    return out if out.sum() >= COPY_SHARE * n and periodic else np.zeros(n, dtype=bool)


def test_a_logger_that_copies_its_last_values_each_step_is_read_once_per_value():
    rng = np.random.default_rng(0)
    values = [{"loss": float(rng.normal(0.02, 0.005)), "learning_rate": 1e-6, "reward_mean": float(0.4 + 0.001 * k
              + rng.normal(0, 0.01)), "kl_divergence": float(rng.uniform(1e-4, 1e-3))} for k in range(30)]
    rows = [{"step": 10 * k + j + 1, **v} for k, v in enumerate(values) for j in range(10)]  # each value 10 times
    log = read_log(_jsonl(rows))
    assert len(log.steps) == 30 and np.array_equal(log.steps, 10 * np.arange(30) + 1)
    np.testing.assert_array_equal(log["reward"], [v["reward_mean"] for v in values])
    assert any("270 rows repeat the row before them in every reading" in w for w in log.warnings)
    assert log.set_aside == ("270 repeated rows read once",)  # said where the rows are counted


def test_a_resumed_runs_dropped_rows_are_set_aside_where_the_rows_are_counted():
    from gspo_dynamics.diagnose import diagnose

    rows = [{"step": s, "reward": 0.1 + 0.01 * s, "loss": 0.5} for s in [*range(1, 21), *range(15, 41)]]
    log = read_log(_jsonl(rows))
    assert log.set_aside == ("6 rows dropped where the step counter went back",) and len(log.steps) == 40
    assert any("; 6 rows dropped where the step counter went back" in line for line in diagnose(log).report_lines(explain=False))


def test_chance_repeats_a_collapse_a_pinned_run_and_a_row_with_an_eval_value_are_kept():
    rng = np.random.default_rng(1)
    reward = np.round(rng.choice([0.25, 0.5, 0.75], 60), 2)
    std = np.round(rng.choice([0.25, 0.5], 60), 2)
    rows = [{"step": i + 1, "reward": float(r), "reward_std": float(s)} for i, (r, s) in enumerate(zip(reward, std))]
    log = read_log(_jsonl(rows))  # equal consecutive rows happen (a few-sample reward), but are not the pattern
    assert len(log.steps) == 60 and not any("repeat the row" in w for w in log.warnings)
    pinned = [{"step": i + 1, "reward": 1.0, "loss": 0.0, "kl": 0.0, "grad_norm": 0.0} for i in range(40)]
    assert len(read_log(_jsonl(pinned)).steps) == 40  # stays where it is: nothing measured repeats
    collapsed = [{"step": i + 1, "reward": 0.6 + 0.01 * np.sin(i), "clip_ratio": 0.1 + 0.01 * np.cos(i),
                  "completions/max_length": 1024.0} for i in range(20)]
    collapsed += [{"step": i + 21, "reward": 0.0, "clip_ratio": 1.0, "completions/max_length": 1024.0} for i in range(40)]
    assert len(read_log(_jsonl(collapsed)).steps) == 60  # one long pinned block is the collapse, not a copy
    eval_reward = np.full(12, np.nan)
    eval_reward[4] = 0.5  # a row that holds an evaluation value is no copy
    blocks = {"reward": np.repeat([0.3, 0.4, 0.5, 0.6], 3), "loss": np.repeat([0.1, 0.2, 0.3, 0.4], 3),
              "eval/reward": eval_reward}
    assert repeated_rows(blocks, {"reward", "loss"}).tolist() == [False, True, True, False, False, True,
                                                                  False, True, True, False, True, True]


def test_the_vectorised_rule_equals_the_loop():
    rng = np.random.default_rng(2)
    for trial in range(200):
        n = int(rng.integers(2, 30))
        base = rng.choice([0.0, 0.5, 1.0, np.nan, 0.123456789], size=(n, 3))
        copy = rng.random(n) < rng.random()
        for i in range(1, n):
            if copy[i]:
                base[i] = base[i - 1]
        series = {"reward": base[:, 0], "loss": base[:, 1], "learning_rate": base[:, 2],
                  "eval/reward": np.where(rng.random(n) < 0.2, 0.5, np.nan)}
        training = {"reward", "loss", "learning_rate"}
        assert repeated_rows(series, training).tolist() == _loop(series, training).tolist(), trial
