"""Writers for synthetic logs in every supported format (test oracles for the readers).

The TensorBoard writer is an independent minimal encoder: TFRecord framing with its masked
CRC-32C (checked against a known CRC-32C test vector) and hand-encoded protobuf Events.
"""

from __future__ import annotations

import json
import struct

from gspo_dynamics.logs._tfevents import masked_crc


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, wire: int, payload: bytes) -> bytes:
    key = _varint(number << 3 | wire)
    if wire == 2:
        return key + _varint(len(payload)) + payload
    return key + payload


def scalar_event(step: int, tag: str, value: float, as_tensor: bool = False) -> bytes:
    """A serialized Event with one scalar (torch-style simple_value, or a TF2 rank-0 tensor)."""
    if as_tensor:
        tensor = _field(1, 0, _varint(2)) + _field(6, 2, struct.pack("<d", value))  # DT_DOUBLE
        val = _field(1, 2, tag.encode()) + _field(8, 2, tensor)
    else:
        val = _field(1, 2, tag.encode()) + _field(2, 5, struct.pack("<f", value))
    summary = _field(1, 2, val)
    wall_time = _field(1, 1, struct.pack("<d", 0.0))
    return wall_time + _field(2, 0, _varint(step)) + _field(5, 2, summary)


def tfrecord(data: bytes) -> bytes:
    length = struct.pack("<Q", len(data))
    crc_length = struct.pack("<I", masked_crc(length))
    return length + crc_length + data + struct.pack("<I", masked_crc(data))


def event_file(scalars, as_tensor: bool = False) -> bytes:
    """Bytes of an event file holding (step, tag, value) scalars, after a file_version event."""
    version = _field(1, 1, struct.pack("<d", 0.0)) + _field(3, 2, b"brain.Event:2")
    return tfrecord(version) + b"".join(
        tfrecord(scalar_event(step, tag, value, as_tensor)) for step, tag, value in scalars
    )


def trainer_state(rows, logging_steps: int = 1, summary: bool = True) -> str:
    history = list(rows)
    if summary and history:
        last_step = history[-1].get("step", 0)
        history.append({"step": last_step, "train_runtime": 1.0, "train_loss": 0.1})
    state = {"global_step": len(rows), "logging_steps": logging_steps, "log_history": history}
    return json.dumps(state)


def grpo_row(step: int, reward: float, modern: bool = True) -> dict:
    """One TRL GRPO log_history row (modern: TRL >= 0.20 keys; else TRL < 0.16 keys)."""
    if modern:
        return {
            "step": step,
            "reward": reward,
            "reward_std": 0.3,
            "frac_reward_zero_std": 0.25,
            "entropy": 0.5,
            "kl": 0.01,
            "clip_ratio/region_mean": 0.0,
            "completions/mean_length": 100.0,
            "completions/clipped_ratio": 0.1,
            "rewards/accuracy/mean": reward,
            "rewards/accuracy/std": 0.3,
            "grad_norm": 1.0,
            "learning_rate": 1e-6,
            "loss": 0.0,
            "epoch": step / 100,
        }
    return {
        "step": step,
        "reward": reward,
        "reward_std": 0.3,
        "kl": 0.01,
        "completion_length": 100.0,
        "rewards/accuracy": reward,
        "grad_norm": 1.0,
        "learning_rate": 1e-6,
        "loss": 0.0,
    }
