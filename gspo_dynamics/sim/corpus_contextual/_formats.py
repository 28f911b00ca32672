"""Per-step metrics -> the log files a user would have: TRL trainer_state.json, its W&B CSV export, verl JSONL.

TRL's rows (window means every `logging_steps`, eval rows, the summary row) come from the bandit
corpus's writer (`sim.corpus._trl_format`); the learning rate of each row is the schedule's value
at its step (TRL logs the scheduler's current lr). The W&B export is what `WandbCallback` makes
of the same rows (`eval_x` -> `eval/x`, other keys -> `train/x`, plus `train/global_step`), one CSV
row per logged dict. verl's file logger writes one JSON line per step,
{"step": t, "data": {...}}, under verl's names; it has no zero-std fraction or group std, and its
validation keys (`val-core/<data source>/reward/mean@1`) are what verl names them.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np

from gspo_dynamics.sim.corpus._trl_format import log_history, trainer_state, write_json
from gspo_dynamics.sim.corpus_contextual._task import RunConfig

FORMATS: tuple[str, ...] = ("trl_state", "wandb_csv", "verl_jsonl")
FILE_NAMES = {"trl_state": "trainer_state.json", "wandb_csv": "metrics.csv", "verl_jsonl": "metrics.jsonl"}
STEPS_PER_EPOCH = 500  # nominal dataset size in optimizer steps: only sets the `epoch` column
SECONDS_PER_STEP = 12.0  # nominal wall time of one step (train_runtime); a constant keeps files deterministic
VERL_DATA_SOURCE = "contextual"
_VERL_NAMES = {  # our TRL name -> verl's
    "reward": "critic/score/mean", "entropy": "actor/entropy", "clip_ratio/region_mean": "actor/pg_clipfrac",
    "grad_norm": "actor/grad_norm", "loss": "actor/pg_loss", "completions/mean_length": "response_length/mean",
    "completions/max_length": "response_length/max", "completions/min_length": "response_length/min",
    "completions/clipped_ratio": "response_length/clip_ratio",
}


def trl_rows(metrics: dict[str, np.ndarray], evals: dict[int, dict], run: RunConfig, *, logging_steps: int,
             samples_per_step: int) -> list[dict]:
    """TRL log_history rows of one run (metrics[name]: (steps,); evals[step][name]: float)."""
    steps = next(iter(metrics.values())).size
    rows = log_history({k: v[:, None] for k, v in metrics.items()},
                       {s: {k: np.array([v]) for k, v in e.items()} for s, e in evals.items()}, 0,
                       logging_steps=logging_steps, learning_rate=run.hp.lr, samples_per_step=samples_per_step,
                       steps_per_epoch=STEPS_PER_EPOCH, runtime_s=steps * SECONDS_PER_STEP)
    for row in rows:
        if "loss" in row and "train_loss" not in row:
            row["learning_rate"] = run.lr_at(row["step"])
    return rows


def write_trl(path: Path, rows: list[dict], *, steps: int, logging_steps: int, eval_every: int | None,
              batch_size: int) -> None:
    write_json(path, trainer_state(rows, steps=steps, logging_steps=logging_steps, eval_steps=eval_every,
                                   batch_size=batch_size, steps_per_epoch=STEPS_PER_EPOCH))


def write_wandb_csv(path: Path, rows: list[dict]) -> None:
    """The W&B run-history export of TRL `rows` (the summary row goes to W&B's summary, not the history)."""
    records = []
    for i, row in enumerate(r for r in rows if "train_runtime" not in r):
        rec = {"_step": i, "train/global_step": row["step"]}
        for key, value in row.items():
            if key != "step":
                rec[("eval/" + key[5:]) if key.startswith("eval_") else "train/" + key] = value
        records.append(rec)
    names = ["_step", "train/global_step"] + sorted({k for rec in records for k in rec} - {"_step", "train/global_step"})
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=names, restval="", lineterminator="\n")
    writer.writeheader()
    writer.writerows(records)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(out.getvalue())


def write_verl_jsonl(path: Path, metrics: dict[str, np.ndarray], evals: dict[int, dict], run: RunConfig) -> None:
    """verl's file logger: one line per step under verl's metric names (every step is logged)."""
    steps = next(iter(metrics.values())).size
    lines = []
    for t in range(1, steps + 1):
        data = {verl: float(metrics[ours][t - 1]) for ours, verl in _VERL_NAMES.items() if ours in metrics}
        data["actor/lr"] = run.lr_at(t)
        if "kl" in metrics:
            data["actor/reward_kl_penalty" if run.kl_in_reward else "actor/kl_loss"] = float(metrics["kl"][t - 1])
        data["training/global_step"] = t
        data["training/epoch"] = (t - 1) // STEPS_PER_EPOCH
        if t in evals:
            data[f"val-core/{VERL_DATA_SOURCE}/reward/mean@1"] = evals[t]["eval_reward"]
        lines.append(json.dumps({"step": t, "data": data}))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
