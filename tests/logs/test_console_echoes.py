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
