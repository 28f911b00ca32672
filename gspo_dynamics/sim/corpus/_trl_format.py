"""Per-step metrics -> a TRL `trainer_state.json` (what `GRPOTrainer` saves with a checkpoint).

TRL (0.20 to 0.26, the versions that log `entropy` and define `reward_std` as the mean of the
per-group stds) logs every `logging_steps` optimizer steps one row holding the *mean* of each
metric over those steps, with `learning_rate`, `epoch`, `num_tokens` and `step` added; evaluation
rows carry the `eval_` prefix and their own `step`; the last row is the training summary
(`train_runtime`, `train_loss`, ...). Steps past the last full logging window are not logged
(TRL logs at multiples of `logging_steps` only).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

TRL_VERSION_WRITTEN = "0.20-0.26 key set"  # entropy present, reward_std = mean of group stds


def log_history(metrics: dict[str, np.ndarray], evals: dict[int, dict[str, np.ndarray]], seed_index: int, *,
                logging_steps: int, learning_rate: float, samples_per_step: int, steps_per_epoch: int,
                runtime_s: float) -> list[dict]:
    """TRL log_history rows of run `seed_index` (metrics[name]: (steps, S); evals[step][name]: (S,))."""
    steps = next(iter(metrics.values())).shape[0]
    tokens = np.cumsum(metrics["completions/mean_length"][:, seed_index] * samples_per_step)  # (steps,)
    rows: list[dict] = []
    eval_steps = sorted(evals)
    for end in range(logging_steps, steps + 1, logging_steps):
        window = slice(end - logging_steps, end)
        row = {name: float(np.mean(values[window, seed_index])) for name, values in sorted(metrics.items())}
        row.update(epoch=end / steps_per_epoch, learning_rate=float(learning_rate),
                   num_tokens=float(tokens[end - 1]), step=end)
        rows.append(row)
        while eval_steps and eval_steps[0] <= end:
            rows.append(_eval_row(evals, eval_steps.pop(0), seed_index, steps_per_epoch, runtime_s, steps))
    for at in eval_steps:  # evaluations after the last full logging window (the final step)
        rows.append(_eval_row(evals, at, seed_index, steps_per_epoch, runtime_s, steps))
    train_loss = float(np.mean(metrics["loss"][:, seed_index]))
    rows.append({
        "epoch": steps / steps_per_epoch, "step": steps, "total_flos": 0.0, "train_loss": train_loss,
        "train_runtime": round(runtime_s, 4), "train_samples_per_second": round(steps * samples_per_step / runtime_s, 3),
        "train_steps_per_second": round(steps / runtime_s, 3),
    })
    return rows


def _eval_row(evals, step: int, seed_index: int, steps_per_epoch: int, runtime_s: float, steps: int) -> dict:
    row = {name: float(values[seed_index]) for name, values in sorted(evals[step].items())}
    eval_runtime = runtime_s / max(steps, 1)  # one evaluation costs about one training step here
    row.update(eval_runtime=round(eval_runtime, 4), eval_samples_per_second=0.0, eval_steps_per_second=0.0,
               epoch=step / steps_per_epoch, step=step)
    return row


def trainer_state(history: list[dict], *, steps: int, logging_steps: int, eval_steps: int | None,
                  batch_size: int, steps_per_epoch: int) -> dict:
    """The whole trainer_state.json object around `history`."""
    return {
        "best_global_step": None,
        "best_metric": None,
        "best_model_checkpoint": None,
        "epoch": steps / steps_per_epoch,
        "eval_steps": eval_steps if eval_steps else 500,
        "global_step": steps,
        "is_hyper_param_search": False,
        "is_local_process_zero": True,
        "is_world_process_zero": True,
        "log_history": history,
        "logging_steps": logging_steps,
        "max_steps": steps,
        "num_input_tokens_seen": 0,
        "num_train_epochs": max(1, -(-steps // steps_per_epoch)),
        "save_steps": steps,
        "stateful_callbacks": {"TrainerControl": {"args": {
            "should_epoch_stop": False, "should_evaluate": False, "should_log": False,
            "should_save": True, "should_training_stop": True}, "attributes": {}}},
        "total_flos": 0.0,
        "train_batch_size": batch_size,
        "trial_name": None,
        "trial_params": None,
    }


def write_json(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, allow_nan=True) + "\n")
