"""logs.Follower: only appended bytes are read, a half-written line waits, a rotated file is read again."""

from __future__ import annotations

import json
import os

import pytest

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.logs import Follower


def line(step: int, reward: float) -> str:
    return json.dumps({"step": step, "data": {"critic/score/mean": reward, "actor/entropy": 1.0}}) + "\n"


def write(path, text: str, mode: str = "a") -> None:
    with open(path, mode, encoding="utf-8") as handle:
        handle.write(text)


def test_only_the_appended_bytes_are_read(tmp_path):
    path = tmp_path / "run.jsonl"
    write(path, "".join(line(i, i / 100) for i in range(1, 11)), "w")
    follower = Follower(path)
    assert len(follower.poll().valid("reward")[0]) == 10
    offset = follower.state.offset
    with open(path, "r+b") as handle:  # an earlier line rewritten in place (same size) is not read again
        handle.write(line(1, 0.99).encode())
    write(path, line(11, 0.11))
    run = follower.poll()
    assert follower.state.offset == offset + len(line(11, 0.11))
    steps, reward = run.valid("reward")
    assert len(steps) == 11 and reward[0] == pytest.approx(0.01)
    assert follower.poll() is None  # nothing new


def test_a_half_written_line_waits_for_its_end(tmp_path):
    path = tmp_path / "run.jsonl"
    write(path, "".join(line(i, 0.1) for i in range(1, 6)), "w")
    follower = Follower(path)
    assert follower.poll() is not None
    text = line(6, 0.6)
    write(path, text[:17])  # the writer stopped mid-line
    assert follower.poll() is None and follower.state.pending == text[:17].encode()
    write(path, text[17:])
    steps, reward = follower.poll().valid("reward")
    assert steps[-1] == 6 and reward[-1] == pytest.approx(0.6)


def test_a_rotated_or_truncated_file_is_read_from_its_start(tmp_path):
    path = tmp_path / "run.jsonl"
    write(path, "".join(line(i, 0.1) for i in range(1, 9)), "w")
    follower = Follower(path)
    assert len(follower.poll().valid("reward")[0]) == 8
    os.rename(path, tmp_path / "run.jsonl.1")  # rotated: a new file under the old name
    write(path, "".join(line(i, 0.5) for i in range(9, 14)), "w")
    steps, reward = follower.poll().valid("reward")
    assert list(steps) == list(range(9, 14)) and reward.mean() == pytest.approx(0.5)
    write(path, "".join(line(i, 0.2) for i in range(1, 4)), "w")  # truncated and rewritten, shorter
    assert list(follower.poll().valid("reward")[0]) == [1, 2, 3]


def test_a_file_that_does_not_exist_yet_is_waited_for(tmp_path):
    path = tmp_path / "later.jsonl"
    follower = Follower(path)
    assert follower.poll() is None and follower.waiting
    write(path, "".join(line(i, 0.1) for i in range(1, 6)), "w")
    assert follower.poll() is not None and not follower.waiting


def test_a_folder_follows_its_newest_log_and_a_missing_folder_is_an_error(tmp_path):
    state = tmp_path / "checkpoint-10" / "trainer_state.json"
    state.parent.mkdir()
    history = [{"step": i, "reward": i / 10, "loss": 0.0} for i in range(1, 11)]
    state.write_text(json.dumps({"global_step": 10, "log_history": history}))
    follower = Follower(tmp_path)
    assert len(follower.poll().valid("reward")[0]) == 10
    state.write_text('{"global_step": 12, "log_hist')  # a rewrite half done: the last good reading stays
    assert follower.poll() is None
    state.write_text(json.dumps({"global_step": 12, "log_history": history + [{"step": 11, "reward": 1.1}]}))
    os.utime(state, (1e9 + 5, 1e9 + 5))
    assert len(follower.poll().valid("reward")[0]) == 11
    with pytest.raises(ConfigError, match="does not exist"):
        Follower(tmp_path / "nowhere" / "run.jsonl")


def test_a_tensorboard_file_holds_back_a_truncated_record(tmp_path):
    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(str(tmp_path))
    for step in range(1, 13):
        writer.add_scalar("train/reward", step / 20, step)
    writer.close()
    (event,) = tmp_path.glob("events.out.tfevents.*")
    data = event.read_bytes()
    cut = tmp_path / "cut" / event.name
    cut.parent.mkdir()
    cut.write_bytes(data[:-7])  # the writer is mid-record
    follower = Follower(cut.parent)
    first = follower.poll()
    assert len(first.valid("reward")[0]) == 11 and follower.state.pending
    write(cut, "")  # nothing
    with open(cut, "ab") as handle:
        handle.write(data[-7:])
    assert len(follower.poll().valid("reward")[0]) == 12
