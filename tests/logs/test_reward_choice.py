"""Which column is the reward (`logs/_reward_choice.py`), on small logs written here: the reward on the rows that carry
a training reading wins over a per-sample key named `reward` on rows without one, and a sum over a step's samples
beside their count is read as their mean (a mapped column as it is)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gspo_dynamics.logs import read_log
from gspo_dynamics.logs._reward_choice import count_of

TOTALS = [100.0 + 3 * i for i in range(20)]  # a batch's summed reward at each step
N = 256  # samples per step


def _loop_log(totals=TOTALS, n=N, every=5) -> str:
    """A hand-written loop's logging lines: one step's readings and its batch totals on one line, a sampled answer's
    reward dict printed every `every` steps."""
    lines = []
    for i, total in enumerate(totals):
        lines.append(f"2025-09-23 09:01:00,984 - train - INFO - rl_loss: 0.01, time: 109.1, l2_norm: 0.14, "
                     f"token_entropy: {0.8 - 0.01 * i:.3f}, reward_data: {{'total_num': {n}, 'total_reward': {total}, "
                     f"'total_format_reward': {n - 10}.0}}")
        if i % every == 0:
            lines.append("2025-09-23 09:02:06,089 - train - INFO - reward: {'format_reward': 1.0, 'answer_reward': "
                         f"{i % 2}.0, 'reward': {i % 2}.0}}")
    return "\n".join(lines) + "\n"


def test_the_reward_is_on_the_training_rows_not_a_per_sample_key_named_reward():
    log = read_log(_loop_log())
    assert log.columns["reward"] == "total_reward" and log.columns["entropy"] == "token_entropy"
    assert log.n_points("reward") == len(TOTALS) and log.n_points("entropy") == len(TOTALS)
    np.testing.assert_allclose(log["reward"], np.asarray(TOTALS) / N)  # the mean reward of a sample
    assert any("'reward', the reward by name, is only on 4 row(s)" in w for w in log.warnings)
    assert "eval/reward" in log.series and "total_num" not in log.unread


def test_a_mapped_sum_is_read_as_it_is():
    log = read_log(_loop_log(), column_map={"reward": "total_reward"})
    np.testing.assert_allclose(log["reward"], TOTALS)
    assert not any("is a sum over" in w for w in log.warnings)


def test_a_map_of_the_per_sample_key_is_honoured_and_said_to_miss_the_training_rows():
    log = read_log(_loop_log(), column_map={"reward": "reward"})
    assert log.columns["reward"] == "reward" and log.n_points("reward") == 4
    assert any(w.startswith("the mapped reward 'reward' is only on 4 row(s) without a training reading, while 20 rows")
               for w in log.warnings)
    trained = read_log(_loop_log(), column_map={"reward": "total_reward"})  # on the training rows: nothing said
    assert not any(w.startswith("the mapped reward") for w in trained.warnings)


def _jsonl(rows) -> str:
    return "\n".join(json.dumps(row) for row in rows) + "\n"


@pytest.mark.parametrize("n", [32, 256])
def test_a_sum_beside_its_count_is_their_mean_whatever_the_batch(n):
    rows = [{"step": i + 1, "loss": 0.1, "total_reward": n * (0.3 + 0.01 * i), "num_samples": n} for i in range(12)]
    log = read_log(_jsonl(rows))
    np.testing.assert_allclose(log["reward"], [0.3 + 0.01 * i for i in range(12)])


def test_a_sum_without_a_count_or_with_a_non_integer_one_is_read_as_it_is():
    rows = [{"step": i + 1, "loss": 0.1, "total_reward": 10.0 + i} for i in range(12)]
    np.testing.assert_allclose(read_log(_jsonl(rows))["reward"], [10.0 + i for i in range(12)])
    odd = [{**row, "count": 2.5} for row in rows]
    np.testing.assert_allclose(read_log(_jsonl(odd))["reward"], [10.0 + i for i in range(12)])


@pytest.mark.parametrize("column, names, count", [
    ("total_reward", ["total_num", "loss"], "total_num"), ("reward_sum", ["count"], "count"),
    ("sum_score", ["num_samples"], "num_samples"), ("reward", ["total_num"], None),  # not a sum
    ("total_reward", ["num_epochs", "batch_size"], None),  # no count of samples
])
def test_count_of(column, names, count):
    assert count_of(column, [column, *names]) == count


def test_a_log_whose_reward_is_named_on_its_training_rows_is_unchanged():
    text = _loop_log().replace("reward_data: {", "reward_data: {'reward': 0.5, ")
    log = read_log(text)
    assert log.columns["reward"] == "reward" and log.n_points("reward") == len(TOTALS)


@pytest.mark.parametrize("k", [0, 5, 20])
def test_a_running_mean_beside_the_steps_own_reward_gives_way_to_it(tmp_path, k):
    """`avg_reward` = the mean of the last k `episode_reward` rows (0: the mean so far), printed to 3 decimals (audit
    s38b R3: the smoothed column was read, lagging a fall by ~k/2 rows): the raw column is the reward, the smoothed
    one kept under its own name, and a map reads the smoothed one as asked. Loop vs the vectorised windows."""
    rng = np.random.default_rng(k)
    raw = np.where(np.arange(60) < 30, 1.0, 0.2) + 0.2 * rng.standard_normal(60)
    smooth = [raw[:i + 1].mean() if k == 0 else raw[max(0, i - k + 1):i + 1].mean() for i in range(60)]
    path = tmp_path / "rewards.csv"
    path.write_text("step,episode_reward,avg_reward\n" + "".join(
        f"{i},{r:.3f},{a:.3f}\n" for i, (r, a) in enumerate(zip(raw, smooth))))
    log = read_log(path)
    assert log.columns["reward"] == "episode_reward" and "avg_reward" in log.unread
    assert not log.reward_guessed  # a named column replaced by a rule, not a pick (review s38)
    np.testing.assert_allclose(log["reward"], np.round(raw, 3))
    window = "the mean so far" if k == 0 else f"the mean of the last {k} rows"
    assert any(f"'avg_reward' is a running mean of 'episode_reward' ({window} on every row)" in w for w in log.warnings)
    assert read_log(path, column_map={"reward": "avg_reward"}).columns["reward"] == "avg_reward"


def test_a_column_that_is_no_running_mean_of_another_is_left_as_read(tmp_path):
    rng = np.random.default_rng(1)
    path = tmp_path / "rewards.csv"
    path.write_text("step,episode_reward,avg_reward\n" + "".join(
        f"{i},{a:.3f},{b:.3f}\n" for i, (a, b) in enumerate(rng.random((60, 2)))))
    log = read_log(path)
    assert log.columns["reward"] == "avg_reward" and not any("running mean" in w for w in log.warnings)


def test_a_running_mean_printed_to_two_decimals_is_found_and_two_constants_are_not(tmp_path):
    """`f"{avg:.2f}"` rounds by up to 0.005 (review s38: missed at a tolerance of 1e-3 of the range); two constant
    columns are each other's running mean, and stay as read."""
    from gspo_dynamics.logs._reward_choice import printed_step, running_mean_window

    rng = np.random.default_rng(5)
    raw = np.round(0.5 + 0.2 * rng.standard_normal(60), 2)
    smooth = np.round([raw[max(0, i - 9):i + 1].mean() for i in range(60)], 2)
    assert printed_step(raw) == pytest.approx(0.01) and running_mean_window(smooth, raw) == 10
    assert running_mean_window(np.full(20, 0.5), np.full(20, 0.5)) is None
