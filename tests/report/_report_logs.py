"""Logs for the report's tests, written as JSONL files (so the readers read them as a user's logs are read)."""

import json

import numpy as np


def saturating_rows(n=120, seed=0, tau=25.0, shift_at=None, shift=0.0, step_time=2.0, entropy=True):
    """Rows of a run whose reward saturates (0.2 -> 0.8, time constant tau) with noise; from `shift_at` on its reward
    is moved by `shift`; the entropy decays 1.0 -> 0.3 (time constant 30); each row logs `step_time` seconds."""
    rng = np.random.default_rng(seed)
    rows = []
    for step in range(1, n + 1):
        r = 0.8 - 0.6 * np.exp(-step / tau) + rng.normal(0, 0.03) + (shift if shift_at and step >= shift_at else 0.0)
        row = {"step": step, "reward": float(r), "reward_std": 0.3, "frac_reward_zero_std": float(0.2 + 0.1 * step / n),
               "completions/clipped_ratio": 0.05, "completions/mean_length": float(100 + rng.normal(0, 3)),
               "grad_norm": float(abs(rng.normal(0.5, 0.05))), "kl": float(0.01 * step / n), "step_time": step_time}
        if entropy:
            row["entropy"] = float(0.3 + 0.7 * np.exp(-step / 30.0) + rng.normal(0, 0.01))
        rows.append(row)
    return rows


def write_jsonl(path, rows):
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return str(path)
