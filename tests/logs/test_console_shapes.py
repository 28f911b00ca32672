"""Console shapes beyond one metric row a line, on small texts written here: a header line over a block of
`key: value` lines (one a line), box-drawn tables, a dict hard-wrapped at a terminal's width, the trainer's progress
bar after the row on its line, and the bar's total as the run's step count; and two naming rules for what such
logs hold: a key the evaluation rows share, and a "KL" negative on every step."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gspo_dynamics import ConfigError
from gspo_dynamics.logs import read_log
from gspo_dynamics.logs._console_lines import MAX_JOINED, logical_lines
from gspo_dynamics.logs._console_rows import read_console
from gspo_dynamics.logs._names import resolve_names

REWARDS = [0.1, 0.2, 0.3, 0.35, 0.4, 0.45, 0.5, 0.52]
PREFIX = "2026-01-01 12:00:00,000 - trainer - INFO - "


def rows_of(text: str) -> list[tuple[int, dict]]:
    """The rows of `text` as a whole file (its last line ended: one without a line end was cut mid-write,
    `_readers.cut_tail`)."""
    return read_console(text if text.endswith("\n") else text + "\n").rows


# ---- a header over a block of key: value lines ----------------------------------------------------------------------

def block_log(n: int = len(REWARDS)) -> str:
    lines = []
    for i, r in enumerate(REWARDS[:n], 1):
        lines += [f"{PREFIX}>> Iteration {i}/{n}", f"{PREFIX}update done: loss=-0.01, reward={r}",
                  f"{PREFIX}Iteration {i} metrics:", f"{PREFIX}  - KL Divergence: 0.02", f"{PREFIX}  - Entropy: 1.5",
                  f"{PREFIX}  - Iteration Time: 3.9s", f"{PREFIX}Validation results (iteration {i}):",
                  f"{PREFIX}  - success_rate: 0.{i}", f"{PREFIX}  - quality_score: 0.5", f"{PREFIX}saved"]
    return "\n".join(lines) + "\n"


def test_a_header_gives_its_step_to_the_block_of_one_pair_lines_below_it():
    rows = rows_of(block_log(2))
    assert rows == [(1, {"loss": -0.01, "reward": 0.1}), (1, {"KL Divergence": 0.02, "Entropy": 1.5}),
                    (1, {"eval/success_rate": 0.1, "eval/quality_score": 0.5}),
                    (2, {"loss": -0.01, "reward": 0.2}), (2, {"KL Divergence": 0.02, "Entropy": 1.5}),
                    (2, {"eval/success_rate": 0.2, "eval/quality_score": 0.5})]


def test_a_block_log_reads_its_series_and_its_evaluations():
    log = read_log(block_log())
    assert list(log.steps) == list(range(1, len(REWARDS) + 1))
    assert log.columns["reward"] == "reward" and log.columns["entropy"] == "Entropy"
    assert log.columns["kl_ref"] == "KL Divergence" and log.n_eval_points == len(REWARDS)
    np.testing.assert_allclose(log["reward"], REWARDS)


def test_a_counter_alone_after_a_loggers_prefix_gives_its_step_but_a_sentence_does_not():
    assert rows_of(f"{PREFIX}Step 7\n{PREFIX}reward: 0.3\n") == [(7, {"reward": 0.3})]
    sentence = f"{PREFIX}Evaluating at step 7\n{PREFIX}reward: 0.3\n"  # words beside the counter: not a counter line
    with pytest.raises(ConfigError, match="no metric lines"):
        read_console(sentence)


def test_a_block_without_any_step_needs_two_metrics():
    assert rows_of("Summary:\n  reward: 0.3\n  loss: 0.1\nConfig:\n  lr: 0.1\n") == [(1, {"reward": 0.3,
                                                                                              "loss": 0.1})]


# ---- box-drawn tables -----------------------------------------------------------------------------------------------

def rich_table(step: int, metrics: dict[str, float], key_width: int = 24) -> list[str]:
    """A metric table as rich draws one (heavy head), titled `Step N`, keys longer than `key_width` folded."""
    w = key_width + 2
    lines = [f"{PREFIX}", f"{'Step ' + str(step):^40}", "┏" + "━" * w + "┳" + "━" * 12 + "┓",
             "┃ " + "Metric".ljust(key_width) + " ┃ " + "Value".ljust(10) + " ┃", "┡" + "━" * w + "╇" + "━" * 12 + "┩"]
    for key, value in metrics.items():
        parts = [key[i:i + key_width] for i in range(0, len(key), key_width)]
        lines.append("│ " + parts[0].ljust(key_width) + " │ " + f"{value:.6f}".ljust(10) + " │")
        lines += ["│ " + part.ljust(key_width) + " │ " + " " * 10 + " │" for part in parts[1:]]
    return lines + ["└" + "─" * w + "┴" + "─" * 12 + "┘"]


def test_a_two_column_table_is_one_record_at_the_step_of_its_title():
    lines = []
    for step, r in enumerate(REWARDS):
        lines += rich_table(step, {"env/all/reward/total": r, "optim/lr": 4e-5,
                                   "env/all/a_key_longer_than_the_column": 0.25})
    rows = rows_of("\n".join(lines))
    assert [s for s, _ in rows] == list(range(len(REWARDS)))
    assert rows[2][1] == {"env/all/reward/total": 0.3, "optim/lr": 4e-5, "env/all/a_key_longer_than_the_column": 0.25}
    assert read_log("\n".join(lines)).columns["reward"] == "env/all/reward/total"


def test_a_wide_table_is_a_record_per_row_under_its_header():
    lines = ["╭──────┬────────┬──────╮", "│ step │ reward │ kl   │", "├──────┼────────┼──────┤"]
    lines += [f"│ {i}    │ {r}    │ 0.01 │" for i, r in enumerate(REWARDS, 1)] + ["╰──────┴────────┴──────╯"]
    rows = rows_of("\n".join(lines))
    assert rows == [(i, {"reward": r, "kl": 0.01}) for i, r in enumerate(REWARDS, 1)]


def test_a_table_of_text_is_not_a_metric_row():
    table = ["┌───────────┬──────────┐", "│ model     │ qwen     │", "│ loss_type │ grpo     │",
             "│ lr        │ 1e-5     │", "└───────────┴──────────┘"]
    records = [json.loads(line) for line in logical_lines(table) if line.startswith("{")]
    assert records == [{"model": "qwen", "loss_type": "grpo", "lr": 1e-5}]
    lines = table + [f"step {i} | reward: {r} | kl: 0.1" for i, r in enumerate(REWARDS, 1)]
    assert [s for s, _ in rows_of("\n".join(lines))] == list(range(1, len(REWARDS) + 1))


# ---- a dict hard-wrapped at the terminal's width ----------------------------------------------------------------------

def test_a_dict_wrapped_at_a_fixed_width_is_joined_whole():
    dicts = [f"{{'loss': 0.0123, 'grad_norm': 1.2345, 'learning_rate': 5e-06, 'reward': {r}, 'reward_std': 0.25, "
             f"'completion_length': 211.5, 'kl': 0.00123, 'epoch': 0.{i}}}" for i, r in enumerate(REWARDS, 1)]
    wrapped = [d[i:i + 37] for d in dicts for i in range(0, len(d), 37)]  # breaks inside keys and numbers
    assert [record["reward"] for _, record in rows_of("\n".join(wrapped))] == REWARDS


def test_a_dict_that_never_closes_leaves_the_lines_as_they_were():
    lines = ["{'config': 'a', 'nested': {'x': 1"] + [f"line {i}" for i in range(MAX_JOINED + 5)] + ["{'reward': 0.5}"]
    assert list(logical_lines(lines)) == lines


# ---- the trainer's bar after the row on its line; its total ---------------------------------------------------------

def test_a_bar_after_a_dict_on_its_line_gives_the_rows_step():
    lines = [f"{{'loss': 0.1, 'reward': {r}, 'epoch': 0.{i}}}   {i}%|#   | {5 * i}/400 [00:0{i}<01:40, 3.1s/it]"
             for i, r in enumerate(REWARDS, 1)]
    assert [s for s, _ in rows_of("\n".join(lines))] == list(range(5, 5 * len(REWARDS) + 1, 5))


def test_a_bar_after_a_key_value_row_gives_its_step_and_a_labelled_bar_is_not_the_trainers():
    lines = [f"reward: {r}, loss: 0.1  {i}%|#   | {5 * i}/400 [00:0{i}<01:40, 3.1s/it]" for i, r in
             enumerate(REWARDS, 1)]
    assert [s for s, _ in rows_of("\n".join(lines))] == list(range(5, 5 * len(REWARDS) + 1, 5))
    labelled = ["Map: 10%|#   | 9/90 [00:01<00:09, 9.0it/s]"] + [f"{{'reward': {r}, 'loss': 0.1}}" for r in REWARDS]
    assert [s for s, _ in rows_of("\n".join(labelled))] == list(range(1, len(REWARDS) + 1))


def test_a_finished_log_without_a_banner_is_numbered_by_its_bars_total():
    bars = "".join(f"\r  {i // 4}%|#   | {i}/400 [00:01<00:09, 9.0s/it]" for i in range(1, 401))
    dicts = [f"{{'loss': 0.1, 'reward': {i / 100}, 'epoch': {i / 20}}}" for i in range(1, 21)]
    summary = "{'train_runtime': 100.0, 'train_samples_per_second': 1.0, 'train_loss': 0.1, 'epoch': 1.0}"
    raw = read_console(bars + "\n" + "\n".join(dicts) + "\n" + summary + "\n")  # the bars all before the rows
    assert raw.logging_steps == 20 and [s for s, _ in raw.rows] == list(range(20, 401, 20))
    unfinished = read_console(bars + "\n" + "\n".join(dicts[:10]) + "\n")
    assert unfinished.logging_steps is None


# ---- names: a key the evaluation rows share; a negative "KL" ----------------------------------------------------------

def test_a_reward_key_the_evaluation_rows_share_gives_way_to_its_rows_own_spelling():
    keys = ["reward", "mean_reward", "train_reward", "loss"]
    groups = [("reward", "mean_reward", "std_reward"), ("train_reward", "loss")]
    names, _ = resolve_names(keys, eval_keys=["reward", "accuracy"], row_keys=groups)
    assert names["mean_reward"] == "reward" and names["reward"] == "unmapped/reward"  # not train_reward, of other rows
    assert resolve_names(keys)[0]["reward"] == "reward"  # without evaluation rows, the exact name wins
    rows = []
    for i, r in enumerate(REWARDS, 1):
        rows += [{"type": "rollout", "step": i, "reward": r, "mean_reward": r, "std_reward": 0.3},
                 {"type": "train", "step": i, "train_reward": r, "loss": 0.1}]
        if i % 4 == 0:
            rows.append({"type": "eval", "step": i, "reward": 0.9})
    log = read_log("\n".join(map(json.dumps, rows)) + "\n")
    assert log.columns["reward"] == "mean_reward" and log.n_eval_points == 2
    np.testing.assert_allclose(log["reward"], REWARDS)


@pytest.mark.parametrize(("kl", "read_as_kl"), [
    ([-0.5 + 0.01 * i for i in range(10)], False),  # negative on every step: a signed log-ratio, not a divergence
    ([0.01 * (-1) ** i for i in range(10)], True),  # a KL near 0 with noise: negative on some steps only
    ([-0.5] * 5, True),  # too few points to tell
])
def test_a_kl_negative_on_every_step_is_not_the_kl_to_the_reference(kl, read_as_kl):
    text = "".join(f"step:{i} - critic/score/mean:{0.1 * i} - actor/token_kl/mean:{v}\n" for i, v in enumerate(kl, 1))
    log = read_log(text)
    assert ("kl_ref" in log.series) == read_as_kl
    if not read_as_kl:
        np.testing.assert_allclose(log["actor/token_kl/mean"], kl)
        assert any("not a KL divergence" in w for w in log.warnings)
