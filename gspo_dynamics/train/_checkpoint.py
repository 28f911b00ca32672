"""Checkpoints of a training run: atomic writes, complete state, and checks before any resume.

One file `<out>/checkpoint.pt` holds the latest checkpoint (replaced atomically: written to a
temporary file in the same directory, fsync'ed, then `os.replace`d, so a process killed at any
moment leaves either the old or the new checkpoint, never a torn one). It holds

    format, version          identify the file
    config, model_config     the run's TrainConfig and model description (plain dicts): a resume checks them;
                             for hf:DIR the backend, the transformers config (`hf.<key>`) and, on the
                             native path, the built-in config (`native.<key>`), see `_policy`
    step                     optimizer steps done (checkpoints fall on rollout boundaries)
    model, reference         state dicts of the policy and the frozen KL reference (or None)
    optimizer                the optimizer's state dict (moments, step counts)
    rng                      torch (CPU and CUDA), python `random` and numpy global states
    metrics_rows, num_tokens the number of metrics.jsonl rows written, the cumulative token count

The rollout sampler and the prompts use generators seeded from (seed, rollout index), so they
need no saved state: a run restarted at a rollout boundary draws exactly what it would have drawn.
"""

from __future__ import annotations

import io
import os
import random
import tempfile
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import torch

from gspo_dynamics._errors import ConfigError

FORMAT = "gspo-dynamics-train-checkpoint"
VERSION = 1
CHECKPOINT_NAME = "checkpoint.pt"


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write `data` to `path` so that readers see either the old file or the whole new one."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes the file private; give it a normal file's mode
        os.replace(tmp, path)  # atomic on POSIX within one filesystem
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode())


def rng_state() -> dict[str, Any]:
    """The global RNG states (torch CPU/CUDA, python, numpy), in a form `torch.load(weights_only=True)` reads."""
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    state = {
        "torch": torch.get_rng_state(),
        "python": random.getstate(),
        "numpy": (kind, torch.from_numpy(keys.astype(np.int64)), int(pos), int(has_gauss), float(cached)),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
    }
    return state


def set_rng_state(state: Mapping[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    py = state["python"]
    random.setstate((py[0], tuple(py[1]), py[2]))
    kind, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), pos, has_gauss, cached))
    if state.get("cuda") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(out_dir: Path, payload: Mapping[str, Any]) -> Path:
    """Atomically write `payload` (module docstring) as the run's checkpoint; its path."""
    buffer = io.BytesIO()
    torch.save({"format": FORMAT, "version": VERSION, **payload}, buffer)
    path = Path(out_dir) / CHECKPOINT_NAME
    atomic_write_bytes(path, buffer.getvalue())
    return path


def load_checkpoint(out_dir: Path) -> dict[str, Any]:
    """The checkpoint in `out_dir`; ConfigError if it is missing, truncated, corrupt or not ours."""
    path = Path(out_dir) / CHECKPOINT_NAME
    if not path.is_file():
        raise ConfigError(f"no checkpoint to resume from: {str(path)!r} does not exist")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - whatever a damaged file makes the unpickler raise (struct.error, ...)
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"the checkpoint {str(path)!r} is corrupt or truncated ({first[:120]})") from None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise ConfigError(f"{str(path)!r} is not a gspo-dynamics training checkpoint")
    if state.get("version") != VERSION:
        raise ConfigError(f"the checkpoint {str(path)!r} has version {state.get('version')!r}; this trainer reads version {VERSION}")
    missing = [k for k in ("config", "model_config", "step", "model", "optimizer", "rng", "metrics_rows", "num_tokens")
               if k not in state]
    if missing:
        raise ConfigError(f"the checkpoint {str(path)!r} is incomplete: it has no {missing[0]!r}")
    return state


def check_compatible(saved: Mapping[str, Any], current: Mapping[str, Any], what: str, allowed: tuple[str, ...] = ()) -> None:
    """ConfigError naming the first setting (outside `allowed`) whose saved and current values differ."""
    for key in sorted(set(saved) | set(current)):
        if key in allowed:
            continue
        if saved.get(key) != current.get(key):
            raise ConfigError(
                f"the checkpoint's {what} differs from this run's: {key} was {saved.get(key)!r}, now {current.get(key)!r} "
                "(resume with the same settings, or use another --out)"
            )
