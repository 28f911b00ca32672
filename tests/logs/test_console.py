"""The generic console reader (`logs/_console.py`) on small console texts written here: metric dicts and key: value
lists after any prefix, step counters, tqdm fragments and colours, NaN kept, banners ignored, the interval rules of
dicts without steps, eval dicts, detection (a banner with commas is not a CSV), and speed."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gspo_dynamics import ConfigError
from gspo_dynamics.logs import Follower, detect_format, read_log
from gspo_dynamics.logs._console_rows import read_console

REWARDS = [0.1, 0.2, 0.3, 0.35, 0.4, 0.45, 0.5, 0.52]


def rows_of(text: str) -> list[tuple[int, dict]]:
    """The rows of `text` as a whole file (its last line ended: one without a line end was cut mid-write,
    `_readers.cut_tail`)."""
    return read_console(text if text.endswith("\n") else text + "\n").rows


@pytest.mark.parametrize("prefix", [
    "", "2026-01-01 12:00:00,123 - INFO - ", "[rank0]: ", "INFO:root:", "trainer.py:88 ", "(TaskRunner pid=7) ",
    "\x1b[32mINFO\x1b[0m ", "[2026-01-01 12:00:00] [train] ",
])
def test_a_metric_dict_after_any_prefix(prefix):
    text = "".join(f"{prefix}{{'step': {i + 1}, 'reward': {r}, 'kl': 0.01}}\n" for i, r in enumerate(REWARDS))
    assert detect_format("loading the model\n" + text) in ("hf_console", "console")
    rows = rows_of("loading the model\n" + text)
    assert [step for step, _ in rows] == list(range(1, len(REWARDS) + 1))
    assert [record["reward"] for _, record in rows] == REWARDS


def test_python_and_json_values_tensor_numpy_strings_and_non_finite():
    text = ("{'step': 1, 'loss': tensor(0.3, device='cuda:0'), 'reward': np.float64(0.2), 'lr': '9.8e-06', "
            "'kl': nan, 'grad_norm': inf, 'adv': -inf, 'entropy': None, 'ok': True}\n"
            '[rank1]: {"step": 2, "reward": NaN, "kl": Infinity, "loss": -Infinity, "entropy": null}\n')
    (s1, r1), (s2, r2) = rows_of(text)
    assert (s1, s2) == (1, 2)
    assert r1["loss"] == 0.3 and r1["reward"] == 0.2 and float(r1["lr"]) == 9.8e-06
    assert math.isnan(r1["kl"]) and r1["grad_norm"] == math.inf and r1["adv"] == -math.inf
    assert "entropy" not in r1 and "entropy" not in r2  # a logged None / null is missing, not a value
    assert math.isnan(r2["reward"]) and r2["kl"] == math.inf and r2["loss"] == -math.inf


def test_ms_swift_prints_its_step_over_the_total():
    text = "".join(f"{{'loss': 0.1, 'reward': {r}, 'global_step/max_steps': '{5 * i}/515', 'percentage': '1%'}}\n"
                   for i, r in enumerate(REWARDS, 1))
    rows = rows_of(text)
    assert [s for s, _ in rows] == list(range(5, 5 * len(REWARDS) + 1, 5))
    assert "global_step/max_steps" not in rows[0][1]


def test_nested_json_after_a_prefix_is_flattened():
    text = "".join(f'2026-01-01 INFO {{"step": {i}, "data": {{"critic/score/mean": {r}}}}}\n'
                   for i, r in enumerate(REWARDS, 1))
    rows = rows_of(text)
    assert [record["critic/score/mean"] for _, record in rows] == REWARDS


@pytest.mark.parametrize(("line", "step", "record"), [
    ("Step 12/200 | reward: 0.31 | kl: 0.002", 12, {"reward": 0.31, "kl": 0.002}),
    ("[step 5/100] reward=0.4 loss=1e-3", 5, {"reward": 0.4, "loss": 1e-3}),
    ("it 10 reward 0.3 loss 0.2", 10, {"reward": 0.3, "loss": 0.2}),
    ("iter 7: reward=0.3, loss=0.2", 7, {"reward": 0.3, "loss": 0.2}),
    ("2026-01-01 12:00:00 INFO step=3 mean_reward=0.5", 3, {"mean_reward": 0.5}),
    ("Epoch 1 Step 8 - reward: 0.3 - kl: 0.01", 8, {"reward": 0.3, "kl": 0.01}),
    ("Epoch:[2/2](3/10), Reward: 0.5, Adv Std: 0.9, Avg Response Len: 271.4", 13,
     {"Reward": 0.5, "Adv Std": 0.9, "Avg Response Len": 271.4}),
    ("global_step=40 step=4 reward=0.1", 40, {"step": 4.0, "reward": 0.1}),
    ("Episode 9: reward=0.25", 9, {"reward": 0.25}),
    ("step 5: reward = 0.3, kl = 0.01", 5, {"reward": 0.3, "kl": 0.01}),
    ("Step 6 - loss 0.3 - reward 0.5", 6, {"loss": 0.3, "reward": 0.5}),
    ("(main_task pid=1) step:6 - critic/score/mean:0.5 - actor/ppo_kl:np.float64(0.001) - "
     "val-core/gsm8k/reward/mean@1:0.25", 6,
     {"critic/score/mean": 0.5, "actor/ppo_kl": 0.001, "val-core/gsm8k/reward/mean@1": 0.25}),
])
def test_key_value_lists_and_their_step_counters(line, step, record):
    assert rows_of(f"starting\n{line}\n") == [(step, record)]


def test_key_value_lines_without_a_counter_are_numbered_by_row_and_said():
    raw = read_console("".join(f"2026-01-01 INFO reward: {r}, loss: 0.1\n" for r in REWARDS))
    assert [step for step, _ in raw.rows] == list(range(1, len(REWARDS) + 1))
    assert any("rows were numbered 1, 2, ..." in w for w in raw.warnings)


def test_a_counter_line_gives_its_step_to_the_metric_lines_below_it():
    text = "=== Step 10/200 ===\n  reward: 0.3\n  kl: 0.01\n=== Step 20/200 ===\n  reward: 0.4\n  kl: 0.02\n"
    assert rows_of(text) == [(10, {"reward": 0.3}), (10, {"kl": 0.01}), (20, {"reward": 0.4}), (20, {"kl": 0.02})]
    ended = "=== Step 10 ===\n  reward: 0.3\nStep 11 | reward: 0.4 | kl: 0.1\nloaded: 5\n"  # a line with its own step
    assert rows_of(ended) == [(10, {"reward": 0.3}), (11, {"reward": 0.4, "kl": 0.1})]


NOISE = """\
==((====))==  Unsloth - 2x faster free finetuning | Num GPUs used = 1
   \\\\   /|    Num examples = 7,473 | Num Epochs = 1 | Total steps = 250
***** Running training *****
  Total optimization steps = 1,000
trainable params: 16,056,320 || all params: 10,308,833,792 || trainable%: 0.1558
WARNING: the tokenizer has new PAD/BOS/EOS tokens, reward functions = 2
| Name | Type | Params |
| 0 | model | 124 M |
Step 1: generating 2 candidates for prompt 1/1...
INFO 05-06 07:59:41 llm_engine.py:234] Initializing with config: model='m', max_seq_len=4608, seed=0, tp=1
{'eos_token_id': 2, 'pad_token_id': 0}
FSDP config: {'min_num_params': 0, 'xla': False, 'xla_fsdp_grad_ckpt': False, 'backend': 'inductor'}
"""


def test_lines_that_are_not_metric_lines_are_ignored():
    with pytest.raises(ConfigError, match="no metric lines were found"):
        read_console(NOISE)
    lines = "".join(f"[step {i}/8] reward={r} kl=0.01\n" for i, r in enumerate(REWARDS, 1))
    assert rows_of(NOISE + lines) == rows_of(lines)


def test_a_banner_with_commas_is_not_a_csv_and_what_was_tried_is_said():
    banner = "Creating file logger, please wait\nloading the model, 4 shards\n"
    assert detect_format(banner + "Step 1/10 | reward: 0.5 | kl: 0.01\n") == "console"
    with pytest.raises(ConfigError, match="tried a TensorBoard .* console output .* CSV .* and a printed table"):
        detect_format(banner)
    assert detect_format("step,reward\n1,0.5\n2,0.6\n") == "csv"
    assert detect_format("step;reward\n") == "csv"  # a header alone, of names
    assert detect_format("[gating] base = model\n[step 1/10] reward=0.5 kl=0.1\n") == "console"  # not a JSON array


def test_metric_lines_after_a_long_preamble_are_found():
    """A dump of generations longer than the first window read (200k characters) before the first step."""
    preamble = "".join(f"<think> sample {i}: the answer is A </think>\n" for i in range(8000))
    assert len(preamble) > 200_000
    lines = "".join(f"step:{i} - critic/score/mean:{r} - actor/entropy:1.0\n" for i, r in enumerate(REWARDS, 1))
    assert detect_format(preamble + lines) == "verl_console"
    assert [s for s, _ in rows_of(preamble + lines)] == list(range(1, len(REWARDS) + 1))


def test_detection_names_the_kind_of_console():
    assert detect_format("x\nstep:1 - critic/score/mean:0.5 - actor/entropy:1.0\n") == "verl_console"
    assert detect_format("Map: 100%|###|\n{'loss': 0.1, 'reward': 0.5}\n") == "hf_console"
    assert detect_format('job 7: {"loss": 0.1, "reward": 0.5}\n') == "console"
    assert detect_format("Step 5 | reward: 0.5\n") == "console"


def test_tqdm_carriage_return_fragments_and_colours_are_split_off():
    bar = "\x1b[A\x1b[32m{pct}%|##   | {i}/8 [00:01<00:07,  1.2it/s]\x1b[0m\r"
    text = "".join(bar.format(pct=10 * i, i=i) + f"{{'loss': 0.1, 'reward': {r}, 'epoch': 0.1}}\r"
                   for i, r in enumerate(REWARDS, 1))
    raw = read_console(text)
    assert [record["reward"] for _, record in raw.rows] == REWARDS
    postfix = "".join(f"\r{10 * i}%|##  | {i}/8 [00:0{i}<00:07, 1.20it/s, step={i}, reward={r}]"
                      for i, r in enumerate(REWARDS, 1))
    assert [(s, rec["reward"]) for s, rec in rows_of(postfix)] == list(zip(range(1, 9), REWARDS))


def test_the_trainers_progress_bar_gives_the_steps_of_dicts_without_steps():
    """transformers redraws its bar right after printing a row: the bar after a dict shows the step it was logged at
    (a labelled bar, vLLM's `Processed prompts`, is another's)."""
    lines = []
    for i, r in enumerate(REWARDS[:5], 1):
        lines += [f"{i}%|#   | {5 * i - 1}/100 [00:0{i}<01:40, 3.1s/it]",
                  f"Processed prompts: 100%|####| 8/8 [00:01<00:00, 6.2it/s]",
                  f"{{'loss': 0.1, 'reward': {r}, 'epoch': 0.{i}}}", f"{i}%|#   | {5 * i}/100 [00:0{i}<01:40, 3.1s/it]"]
    raw = read_console("\r".join(lines))
    assert [s for s, _ in raw.rows] == [5, 10, 15, 20, 25] and not raw.warnings
    assert read_console("\r".join(lines[:-1])).rows[-1][0] == 24  # the last row's bar not drawn yet: the one before


def test_a_logged_nan_stays_non_finite_and_a_missing_key_is_missing():
    lines = [f"Step {i} | reward: {r} | entropy: 1.0" for i, r in enumerate(REWARDS, 1)]
    lines[3] = "Step 4 | reward: nan | entropy: 1.0"
    lines[5] = "Step 6 | entropy: 1.0"  # no reward this step
    log = read_log("\n".join(lines) + "\n")
    assert log.format == "console"
    i4, i6 = list(log.steps).index(4), list(log.steps).index(6)
    assert math.isnan(log["reward"][i4]) and math.isnan(log["reward"][i6])
    raw = rows_of("\n".join(lines))
    assert math.isnan(raw[3][1]["reward"]) and "reward" not in raw[5][1]


@settings(max_examples=40, deadline=None)
@given(values=st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), min_size=1, max_size=12),
       prefix=st.sampled_from(["", "2026-01-01 12:00:00 INFO ", "[rank0]: ", "(WorkerDict pid=3) "]),
       form=st.sampled_from(["dict", "pairs", "verl"]))
def test_printed_values_read_back_exactly(values, prefix, form):
    """Any float, NaN and infinities included, printed as Python prints it, reads back as the same float."""
    lines = []
    for i, v in enumerate(values, 1):
        if form == "dict":
            lines.append(f"{prefix}{{'step': {i}, 'reward': {v!r}, 'kl': 0.5}}")
        elif form == "pairs":
            lines.append(f"{prefix}Step {i}/{len(values)} | reward: {v!r} | kl: 0.5")
        else:
            lines.append(f"{prefix}step:{i} - critic/score/mean:np.float64({v!r}) - actor/entropy:0.5")
    rows = rows_of("\n".join(lines))
    assert [s for s, _ in rows] == list(range(1, len(values) + 1))
    got = [record.get("reward", record.get("critic/score/mean")) for _, record in rows]
    np.testing.assert_array_equal(got, values)  # NaN equals NaN here


# ---- dicts without steps: the logging interval ----------------------------------------------------------------------

def hf_log(n: int, every: int, per_epoch: int, banner: str = "", finished: bool = False, evals: tuple = ()) -> str:
    lines = ["***** Running training *****", *banner.splitlines()]
    for i in range(1, n + 1):
        lines.append(f"{{'loss': 0.1, 'reward': {i / 100}, 'epoch': {i * every / per_epoch!r}}}")
        if i in evals:
            lines.append(f"{{'eval_loss': 0.5, 'eval_reward': {i / 10}, 'epoch': {i * every / per_epoch!r}}}")
    if finished:
        lines.append("{'train_runtime': 100.0, 'train_samples_per_second': 1.0, 'train_loss': 0.1, 'epoch': 1.0}")
    return "\n".join(lines) + "\n"


def test_a_finished_log_is_numbered_by_its_total_steps():
    raw = read_console(hf_log(10, 5, 50, "  Total optimization steps = 50", finished=True))
    assert raw.logging_steps == 5 and [s for s, _ in raw.rows] == list(range(5, 51, 5)) and not raw.warnings


def test_runs_one_after_another_are_each_numbered_by_their_own_banner():
    """Two finished runs, each with its banner (audit s38b R7: a notebook's SFT run, then its GRPO run, numbered
    1, 2, ... and every step 10x too small): each run's rows by its own total; a run without a banner: its row
    numbers, the other's by its own (audit s40 #9: the SFT run printed none, the GRPO run's 30 rows of 300 steps)."""
    first = hf_log(6, 10, 60, "  Total optimization steps = 60", finished=True)
    second = hf_log(12, 10, 120, "  Total optimization steps = 120", finished=True)
    raw = read_console(first + second)
    assert [s for s, _ in raw.rows] == list(range(10, 61, 10)) + list(range(10, 121, 10))
    log = read_log(first + second)
    assert log.run_index == 2 and log.steps.tolist() == list(range(10, 121, 10)) and log.logging_interval == 10
    shared = read_console(first + hf_log(12, 10, 120, finished=True))  # the second run printed no banner
    assert [s for s, _ in shared.rows] == list(range(10, 61, 10)) + list(range(1, 13))
    after = read_log(hf_log(6, 10, 60, finished=True) + second)  # the first printed none: a run begun afresh at 10
    assert after.run_index == 2 and after.steps.tolist() == list(range(10, 121, 10)) and after.logging_interval == 10
    assert read_log(hf_log(6, 10, 60, finished=True) + second, run=1).steps.tolist() == list(range(1, 7))


def test_a_run_whose_own_bar_gives_its_steps_after_a_run_without_one():
    """An SFT stage printing its rows without a bar, then a GRPO run whose bar is redrawn at each row (Radar-Lei's
    log): the GRPO run's steps are its bar's, 5, 10, ..., a run of its own (not a resume of the first at step 5)."""
    sft = hf_log(8, 5, 40, finished=True)
    grpo = ["***** Running training *****"]
    for i in range(1, 13):
        grpo += [f"  {i}%|#   | {5 * i}/1000 [00:{i:02d}<10:00, 2.0s/it]", f"{{'loss': 0.1, 'reward': {i / 20}}}"]
    log = read_log(sft + "\n".join(grpo) + "\n")
    assert log.run_index == 2 and log.steps.tolist() == list(range(5, 61, 5)) and log.n_points("reward") == 12
    assert not any("goes back" in w for w in log.warnings)


def test_an_unfinished_log_is_not_numbered_by_its_total_steps():
    raw = read_console(hf_log(4, 5, 1000, "  Total optimization steps = 50"))  # 4 rows of 10 so far: not 12 apart
    assert raw.logging_steps is None and [s for s, _ in raw.rows] == [1, 2, 3, 4]
    assert any("rows were numbered 1, 2, ..." in w for w in raw.warnings)


@pytest.mark.parametrize("banner", [
    "  Num Epochs = 2\n  Total optimization steps = 468",  # 234 steps per epoch
    "  Num examples = 1,872\n  Total train batch size (w. parallel, distributed & accumulation) = 8",
    "steps per epoch: 234",
])
def test_an_unfinished_log_is_numbered_by_its_epoch_column_and_the_banner(banner):
    raw = read_console(hf_log(12, 5, 234, banner))
    assert raw.logging_steps == 5 and [s for s, _ in raw.rows] == list(range(5, 61, 5))


def test_epochs_that_disagree_with_the_banner_are_not_used():
    raw = read_console(hf_log(12, 5, 234, "  Num Epochs = 1\n  Total optimization steps = 300"))  # max_steps cut
    assert raw.logging_steps is None and [s for s, _ in raw.rows] == list(range(1, 13))


def test_epochs_printed_rounded_still_give_the_interval():
    lines = ["  Num Epochs = 1", "  Total optimization steps = 200"]
    lines += [f"{{'loss': 0.1, 'reward': 0.5, 'epoch': {round(i * 10 / 200, 2)}}}" for i in range(1, 16)]
    assert read_console("\n".join(lines)).logging_steps == 10


def test_runs_appended_to_one_console_log_restart_their_steps():
    """Each run of transformers prints its banner and ends with its summary dict: rows without steps are numbered
    within their run (`build_log` then reads the runs apart), and a progress bar that starts again is a new run."""
    two = hf_log(4, 5, 1000, finished=True) + hf_log(3, 5, 1000)
    raw = read_console(two)
    assert [s for s, _ in raw.rows] == [1, 2, 3, 4, 1, 2, 3]
    assert any("each of its 2 runs" in w for w in raw.warnings)
    bars = "".join(f"{{'loss': 0.1, 'reward': 0.{i}}}\r{i}%|#  | {i}/{total} [00:01<00:09]\n"
                   for total, n in ((4, 4), (9, 3)) for i in range(1, n + 1))
    assert [s for s, _ in rows_of(bars)] == [1, 2, 3, 4, 1, 2, 3]


def test_eval_dicts_take_the_step_of_the_train_row_before_them():
    raw = read_console(hf_log(6, 5, 30, "  Total optimization steps = 30", finished=True, evals=(2, 4)))
    evals = [(s, rec["eval_reward"]) for s, rec in raw.rows if "eval_reward" in rec]
    assert evals == [(10, 0.2), (20, 0.4)]
    first = read_console("{'eval_loss': 0.9, 'eval_reward': 0.0, 'epoch': 0.0}\n" + hf_log(3, 1, 100))
    assert first.rows[0] == (0, {"eval_loss": 0.9, "eval_reward": 0.0, "epoch": 0.0})  # before training: step 0


def test_an_eval_dict_at_the_start_of_a_new_chunk_is_kept(tmp_path):
    path = tmp_path / "train.log"
    path.write_text(hf_log(6, 5, 30, "  Num Epochs = 1\n  Total optimization steps = 30"))
    follower = Follower(path)
    assert follower.poll().rows == 6
    with open(path, "a") as handle:
        handle.write("{'eval_loss': 0.5, 'eval_reward': 0.9, 'epoch': 1.0}\n")
    assert follower.poll().rows == 1
    with open(path, "a") as handle:
        handle.write("{'loss': 0.1, 'reward': 0.07, 'epoch': 1.2}\n")
    assert follower.poll().rows == 1
    steps = [step for step, _ in follower.rows]
    assert steps == [5, 10, 15, 20, 25, 30, 30, 35]  # the eval at the last train step; the interval carried on
    assert follower.rows[6][1]["eval_reward"] == 0.9


def test_a_step_map_reads_the_printed_key():
    text = "".join(f"iter={i * 10} reward={r} kl=0.1\n" for i, r in enumerate(REWARDS, 1))
    raw = read_console(text, step_key="iter")
    assert [s for s, _ in raw.rows] == list(range(10, 90, 10))


def test_a_counter_too_large_for_a_step_is_no_step():
    raw = read_console(f"step:{2**70} - reward:0.5\nstep:2 - reward:0.6\n")
    assert raw.rows == [(2, {"reward": 0.6})]


def test_a_config_line_between_metric_lines_is_not_a_row():
    lines = [f"reward={r} loss=0.1" for r in REWARDS]
    lines.insert(3, "engine config: max_seq_len=4608, seed=0, block_size=16")
    raw = read_console("\n".join(lines) + "\n")
    assert [rec["reward"] for _, rec in raw.rows] == REWARDS


def test_a_hundred_thousand_console_lines_are_read_whole():
    """Every line a row, the last one's values intact (the time it takes: benchmarks/bench_diagnose.py)."""
    text = "\n".join(f"2026-01-01 12:00:{i % 60:02d},123 - INFO - train - Step {i}/100000 | reward: {i / 1e5:.4f} | "
                     f"kl: 0.0{i % 7} | loss: {i % 13 / 100}" for i in range(1, 100_001)) + "\n"
    raw = read_console(text)
    assert len(raw.rows) == 100_000 and raw.rows[-1][0] == 100_000
    assert [step for step, _ in raw.rows[:3]] == [1, 2, 3]
    np.testing.assert_allclose(raw.rows[-1][1]["reward"], 1.0)


def test_a_list_of_per_completion_rewards_is_read_as_its_mean():
    text = "".join(f"[step {k}/20] correct=2/4 rewards=['0.80', '0.01', '{k / 20:.2f}', '0.01'] loss=0.0020 lr=1e-06\n"
                   for k in range(1, 21))
    log = read_log(text)
    assert log.n_points("reward") == 20 and log["reward"][0] == pytest.approx((0.80 + 0.01 + 0.05 + 0.01) / 4)
    assert log.n_points("loss") == 20 and list(log.steps[[0, -1]]) == [1, 20]


def test_trainer_dicts_win_over_debug_prints_and_a_bar_ends_a_counter_lines_block():
    debug = "".join(f"Step {k}\n  Avg final reward: 0.5\n  Avg format reward: 1.0\n" for k in range(1, 4))
    dicts = "".join(f"  1%|          | {5 * k}/100 [00:0{k}<00:10, 1.0it/s]\n  Avg final reward: 0.5\n"
                    f"  Avg final reward: 0.4\n{{'loss': 0.01, 'reward': {0.1 * k:.2f}, 'epoch': {k / 20:.2f}}}\n"
                    for k in range(1, 13))
    log = read_log(debug + dicts)
    assert log.n_points("reward") == 12 and log["reward"][-1] == pytest.approx(1.2)


def test_per_step_lines_win_over_per_epoch_mean_dicts_beside_them():
    lines = []
    for epoch in range(10):
        lines += [f"[run] epoch={epoch} step={3 * epoch + k} mean_reward={0.1 + 0.01 * (3 * epoch + k):.3f} loss=0.0"
                  for k in range(1, 4)]
        lines.append(f"[run] epoch {epoch} mean metrics: {{'loss': 0.0, 'mean_reward': {0.1 + 0.03 * epoch:.3f}}}")
    log = read_log("\n".join(lines) + "\n")
    assert log.n_points("reward") == 30 and list(log.steps[[0, -1]]) == [1, 30]


def _sampling_loop(n: int) -> str:
    """nano-aha-moment's loop (audit s40 #8): an optimizer's param group printed once, then per iteration a counter,
    two sampled answers `(Reward: x, Response Length: y)`, the trainer bar and the step's `KEY METRICS: {...}`; the
    last iteration stops after its answers."""
    lines = ["{'lr': 1e-06, 'eps': 1e-08, 'weight_decay': 0.0}"]
    for i in range(n + 1):
        lines += [f"Iteration {i}/1000", f"########## Example 1 (Reward: {i % 2}.0, Response Length: {100 + i})",
                  f"########## Example 2 (Reward: 0.5, Response Length: {90 + i})"]
        if i < n:
            lines += [f"  {i // 10}%|          | {i + 1}/1000 [00:54<15:03:46, 54.28s/it]",
                      f"KEY METRICS: {{'train/kl_penalty': 0.0{i}, 'train/rewards': {0.01 * i:.2f}, "
                      f"'train/reward_metrics/format_reward': {0.02 * i:.2f}, 'eval/rewards': 0.02}}"]
    return "\n".join(lines) + "\n"


def test_a_loops_metric_dicts_win_over_its_printed_answers():
    """The step's dicts are the rows though the printed answers count one step more (the loop stopped before its
    last dict); the param group printed once is no row; a KL penalty, unread (it may be beta x KL), still marks the
    rows as a training step's; the reward_metrics functions are read."""
    log = read_log(_sampling_loop(20))
    assert log.columns["reward"] == "train/rewards" and log.steps.tolist() == list(range(1, 21))
    assert "kl_ref" not in log.columns and "train/kl_penalty" in log.unread and "reward/format_reward" in log.series
    assert "lr" not in log.series and "learning_rate" not in log.columns


def _tinker_console(n: int) -> str:
    """tinker-cookbook's console (audit s39 heldout): per step, sampled trajectories printed with their reward and
    per-turn metrics (`Step 0:` is the turn), then the step's metrics as a rich table titled `Step k`."""
    lines = []
    for k in range(n):
        for i in range(8):
            lines += [f"****** trajectory idx={i}, reward={0.3 + 0.01 * i:.3f} ******", "Per-step metrics:", "  Step 0:",
                      f"    pass_rate: {0.3 + 0.01 * i}", "    num_rubrics: 17", "---- datum ----"]
        lines += [f"{'Step ' + str(k):^40}", "┏━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━┓",
                  "┃ Metric                ┃ Value    ┃", "┡━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━┩",
                  f"│ env/all/reward/total  │ {0.5 + 0.02 * k:.6f} │", f"│ optim/entropy         │ {0.4:.6f} │",
                  "└───────────────────────┴──────────┘"]
    return "\n".join(lines) + "\n"


def test_a_steps_table_wins_over_its_sampled_trajectories_rewards():
    """The step's table is the row, not the trajectories' rewards printed eight times a step above it."""
    log = read_log(_tinker_console(7))  # fewer than a fit needs, as in the audit's log
    assert log.columns["reward"] == "env/all/reward/total" and log.steps.tolist() == list(range(7))
    np.testing.assert_allclose(log["reward"], 0.5 + 0.02 * np.arange(7))


def test_pairs_printed_before_a_dict_are_one_row_with_it():
    """A loop's `rl_loss: x, l2_norm: y, token_entropy: z, reward_data: {...}, metadata: {...}` (audit E): the pairs
    before the dicts and every dict's numbers are one row, so the entropy is read; a step counter before them stays
    the step, not a column."""
    lines = [f"2025-09-23 09:01:00,984 - train - INFO - rl_loss: 0.01, time: 109.1, l2_norm: 0.14, token_entropy: "
             f"{0.8 - 0.01 * i:.3f}, reward_data: {{'total_num': 256, 'reward': {(100 + i) / 256:.4f}}}, "
             f"metadata: {{'clamped_count': tensor(0.{i}, device='cuda:0')}}" for i in range(12)]
    log = read_log("\n".join(lines) + "\n")
    assert log.n_points("reward") == 12 and log.n_points("entropy") == 12 and log.columns["entropy"] == "token_entropy"
    assert log.steps.tolist() == list(range(1, 13)) and "clamped_count" in log.series
    stepped = read_log("\n".join(f"Step {i + 1} | loss: 0.1 | {{'reward': {0.1 * i:.2f}}}" for i in range(12)) + "\n")
    assert stepped.steps.tolist() == list(range(1, 13)) and "Step" not in stepped.columns.values()


def _appended_runs(sizes, prefix="2025-09-25 04:05:16,956 - train - INFO - ") -> str:
    """Runs appended to one file, each step's row printed without a step after the loop's own counter message."""
    lines = []
    for size in sizes:
        lines.append(f"{prefix}rollout batch 0 generated, length: 64")  # a start that printed nothing (a crash)
        for b in range(size):
            lines.append(f"{prefix}rollout batch {b} generated, length: 64")
            if size > 20:  # a debug print between the counter's message and its row
                lines.append(f"{prefix}length of old_log_probs: 64")
            lines.append(f"{prefix}{{'loss': 0.1, 'entropy': 0.5, 'reward': {0.2 + 0.01 * b:.2f}}}")
    lines.append(f"{prefix}rollout batch {sizes[-1]} generated, length: 64")
    return "\n".join(lines) + "\n"


def test_runs_appended_without_steps_are_told_apart_by_a_message_that_counts_them():
    """rl_grpo_clip_offpolicy.log (audit E): runs restarting at `rollout batch 0` are not glued into one curve."""
    text = _appended_runs([15, 1, 40, 14])
    log = read_log(text)
    assert (log.n_runs, log.run_index, log.n_points("reward")) == (4, 4, 14)
    assert log.steps.tolist() == list(range(1, 15))
    assert [read_log(text, run=k).n_points("reward") for k in (1, 2, 3)] == [15, 1, 40]
    assert any("'rollout batch # generated, length: #' starts again" in w for w in log.warnings)


def test_a_message_that_only_counts_up_or_numbers_something_else_makes_one_run():
    assert read_log(_appended_runs([20])).n_runs == 1
    # a number that is no counter of the rows (a length that varies) splits nothing
    lines = []
    for b in range(20):
        lines.append(f"INFO - generated, length: {[64, 12, 80, 7][b % 4]}")
        lines.append(f"INFO - {{'loss': 0.1, 'reward': {0.2 + 0.01 * b:.2f}}}")
    assert read_log("\n".join(lines) + "\n").n_runs == 1


def test_a_log_that_stopped_before_its_first_step_says_so_with_its_last_error():
    """Logic-RL-Lite's log.log (audit E): verl's config dump, an initial validation, then CUDA out of memory."""
    dump = "(main_task pid=19) {'actor_rollout_ref': {'actor': {'clip_ratio': 0.2,\n" + "".join(
        f"(main_task pid=19)     '{key}': {value},\n" for key, value in
        (("entropy_coeff", 0.001), ("grad_clip", 1.0), ("kl_loss_coef", 0.001), ("lr", 1e-06))) + \
        "(main_task pid=19)     'ppo_epochs': 1}}}\n"
    text = (dump + "(main_task pid=19) Initial validation metrics: {'val/test_score/kk_logic': 0.02}\n"
            "Traceback (most recent call last):\n  File \"main_ppo.py\", line 191, in main_task\n"
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.70 GiB.\n")
    with pytest.raises(ConfigError, match=r"holds no training step: .* its last error: 'torch.OutOfMemoryError: "
                                          r"CUDA out of memory"):
        read_log(text)
    with pytest.raises(ConfigError, match="holds no training step"):
        read_log(text, column_map={"reward": "ppo_epochs"})
    # one step's row with a reward is a step: a run too short to analyse, not one that logged none
    assert read_log(dump + "{'loss': 0.1, 'reward': 0.3}\n").n_points("reward") == 1


def test_a_bar_after_the_row_at_the_next_step_gives_way_to_the_bar_before_at_the_logging_interval():
    """A reward function printing between a row and the bar's redraw (an Unsloth run's `Reward Statistics` blocks):
    the bar before each row shows 5, 10, 15 (logging_steps 5: transformers logs at global_step % 5 == 0) and the bar
    after it the next step, 6, 11, 16; the rows are at 5, 10, 15. Where the bars after are at the interval (the bar
    before drawn a step early), they stay the steps (`test_the_trainers_progress_bar_gives_the_steps_...`)."""
    lines = []
    for i, r in enumerate(REWARDS[:5], 1):
        lines += [f"{i}%|#   | {5 * i}/100 [00:0{i}<01:40, 3.1s/it]", "Reward Statistics:\n  Avg final reward: 0.5",
                  f"{{'loss': 0.1, 'reward': {r}, 'epoch': 0.{i}}}", f"{i}%|#   | {5 * i + 1}/100 [00:0{i}<01:40, 3.1s/it]"]
    raw = read_console("\r".join(lines))
    assert [s for s, _ in raw.rows] == [5, 10, 15, 20, 25] and [rec["reward"] for _, rec in raw.rows] == REWARDS[:5]


def test_a_loops_bracketed_step_of_its_total_after_an_inner_bar_is_the_step():
    """audit s41 #3 (paulkroe/llm-rl's grpo.ipynb): `  0%|   | 0/64 [00:00<?, ?it/s][12/1000]  loss: ..., entropy:
    74.6`, a loop's row printed after its inner progress bar, with one DeepSpeed line `step=0, skipped=0, lr=[1e-06]`
    above. The rows' `[n/N]` was no counter and the bar's text hid it, so the only columns offered were the DeepSpeed
    line's 'lr' and 'skipped'. Now each row is read at its bracketed step."""
    bar = "  0%|          | 0/64 [00:00<?, ?it/s]"
    text = "[INFO] [logging.py:128:log_dist] [Rank 0] step=0, skipped=0, lr=[1e-06], mom=[(0.9, 0.999)]\n"
    text += "".join(f"{bar}[{i}/1000]  loss: {-i / 10}, reward: {0.1 + i / 50}, kl-penalty: {i / 100}, entropy:{87 - i}\n"
                    "INFO executor_base.py:226 It took 0.27 seconds to wake up tags\n" for i in range(30))
    log = read_log(text)
    assert log.steps.tolist()[-29:] == list(range(1, 30)) and log["reward"][-1] == pytest.approx(0.1 + 29 / 50)
    assert "entropy" in log and log["entropy"][-1] == 87 - 29


def test_a_bracketed_index_under_a_named_counter_is_an_item_not_the_step():
    """Under `Step 3` a loop's `[k/8] reward: ...` lines are its samples: they take the counter line's step (averaged
    there), as before."""
    text = "".join(f"Step {s}\n" + "".join(f"[{k}/8] reward: {0.1 * s + k / 100}, loss: 0.1\n" for k in range(1, 9))
                   for s in range(1, 16))
    log = read_log(text)
    assert log.steps.tolist() == list(range(1, 16))
    assert np.allclose(log["reward"], [0.1 * s + 0.045 for s in range(1, 16)])


def test_a_bare_counter_that_starts_again_each_epoch_is_no_step():
    """Review s42: `[k/20]` under `Epoch 2/3` lines counts within each epoch; read as steps it split the run into three
    and only the last epoch was judged. Bare counters that go back are dropped: the 60 rows are read in order."""
    text = "".join(f"Epoch {e}/3\n" + "".join(f"[{k}/20] loss: 0.1, reward: {0.01 * (20 * (e - 1) + k):.4f}, kl: 0.01\n"
                                               for k in range(1, 21)) for e in range(1, 4))
    log = read_log(text)
    assert log.n_runs == 1 and log.n_points("reward") == 60 and np.all(np.diff(log["reward"]) > 0)
