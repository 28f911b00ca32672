"""A few printed dicts with a `step` key of their own, carrying none of a training step's readings (an environment's
records echoed in a W&B error, audit C2's shape), do not decide the step axis of a trainer's stepless rows: the
training rows are read, those records are said and set aside."""

from __future__ import annotations

import numpy as np

from gspo_dynamics.logs import read_log
from gspo_dynamics.logs._console_rows import read_console

N, EVERY, ECHOES = 30, 5, 6
REWARDS = 0.3 + 0.3 * (1 - np.exp(-np.arange(1, N + 1) / 8))


def _trl_console(echoes: int = ECHOES, readings: str = "'agent_id': 'market_maker', 'direction': 0.03") -> str:
    """A TRL run printing a stepless dict every EVERY steps, each after its progress bar, and `echoes` W&B error
    echoes of an environment's row (`{'step': 0, ..., 'reward': -0.67}`) among them."""
    lines = ["wandb: Detected [openai] in use."]
    for i, reward in enumerate(REWARDS, 1):
        step = EVERY * i
        lines += [f" {step // 2}%|#   | {step}/{EVERY * N} [00:{i:02d}<01:40, 27.5s/it]",
                  f"{{'loss': '0.01', 'grad_norm': '0.3', 'learning_rate': '1e-05', 'reward': '{reward:.4f}', "
                  f"'reward_std': '0.4', 'kl': '0.01', 'epoch': '{i / N:.3f}'}}",
                  f" {step // 2}%|#   | {step}/{EVERY * N} [00:{i:02d}<01:40, 27.5s/it]"]
        if i <= echoes:
            lines += ["[W&B] Episode snapshot failed: Data row contained incompatible types:",
                      f"{{'step': 0, {readings}, 'strike': 'N/A', 'reward': -0.6747}} of type {{'step': Number}}"]
    return "\n".join(lines) + "\n"


def test_echoed_records_with_a_step_do_not_hide_the_stepless_training_rows():
    log = read_log(_trl_console())
    np.testing.assert_array_equal(log.steps, EVERY * np.arange(1, N + 1))
    np.testing.assert_allclose(log["reward"], REWARDS, atol=1e-4)
    said = [w for w in log.warnings if "printed dict(s) with a step key" in w]
    assert len(said) == 1 and said[0].startswith(f"{ECHOES} printed dict(s)") and f"the {N} training rows" in said[0]
    assert not any("skipped" in w for w in log.warnings)


def test_step_keyed_dicts_are_kept_where_they_carry_a_training_reading_or_are_most_rows():
    # a callback printing its own step and loss: a training row, read as before (its step decides the axis)
    with_loss = read_console(_trl_console(readings="'loss': 0.2"))
    assert [step for step, _ in with_loss.rows] == [0] * ECHOES
    # step-keyed records on most rows decide the axis, as a step column on most rows does
    most = read_console(_trl_console(echoes=N))
    assert {step for step, _ in most.rows} == {0}
    assert not any("printed dict(s) with a step key" in w for w in most.warnings + with_loss.warnings)


def _loop_console(dump: bool) -> str:
    """A hand-written loop printing `Average Reward: ...`, then `Step: N/M, Loss: ..., Avg Reward: ...`, for three
    runs, each run's evaluation dump after it (generated answers with a `Step 4` line of their own, then
    `Expected: 344` lines)."""
    lines = []
    for run in range(3):
        for step, reward in enumerate(REWARDS, 1):
            lines += [f"2025-08-20 19:53:02-train.py:590-INFO >> Average Reward: {reward + run:.4f}",
                      f"2025-08-20 19:53:03-train.py:700-INFO >> Iter: 1/1, Step: {step}/{N}, Loss: 0.0001, "
                      f"Avg Reward: {reward + run:.4f}, Algorithm: GSPO"]
        if dump:
            lines += ["Completion: <reasoning>", "Step 1: Understand the sentence", "Step 4", ""]
            lines += [line for k in range(20) for line in (f"Extracted: {k}", f"Expected: {3 * k}")]
            lines += ["Accuracy: 58.00% (29/50)", "- Dimes: 2", "- Quarters: 6"]
    return "\n".join(lines) + "\n"


def test_a_dump_under_a_counter_only_line_below_the_printed_steps_is_no_training_row(tmp_path):
    """A generated answer's `Step 4` line after the loop printed step 30 gives the dump's `Expected: 344` lines no
    step of the run: they are left out, so the step does not go back and the last run keeps its 30 rows (audit s44,
    heldout2: yangminglei122's log read as 3 points)."""
    for dump in (False, True):
        path = tmp_path / f"train_{dump}.log"
        path.write_text(_loop_console(dump))
        log = read_log(path)
        assert log.n_points("reward") == N and log.n_runs == 3, (dump, log.warnings)
        assert np.allclose(log.valid("reward")[1], REWARDS + 2, atol=1e-4)
        assert not any("goes back" in w for w in log.warnings)


def test_a_row_under_a_counter_only_line_at_the_step_in_force_is_kept(tmp_path):
    """A counter-only line followed by the step's `key: value` lines (the usual printing of a loop without a
    counter on its metric lines) still gives them its step."""
    path = tmp_path / "train.log"
    path.write_text("".join(f"Step {s}\nreward: {r:.4f}\nloss: 0.1\n" for s, r in enumerate(REWARDS[:10], 1)))
    log = read_log(path)
    steps, rewards = log.valid("reward")
    assert list(steps) == list(range(1, 11)) and np.allclose(rewards, REWARDS[:10], atol=1e-4)
