"""logs.Follower: only appended bytes are parsed, a half-written line or record waits, a rotated file is read again
from its start, a file not there yet (or a banner before the first metric line) is waited for."""

from __future__ import annotations

import json
import os

import pytest

from _log_fixtures import event_file, trainer_state
from gspo_dynamics._errors import ConfigError
from gspo_dynamics.logs import Follower


def verl_line(step: int, reward: float) -> str:
    """One line of verl's file logger ({"step", "data"})."""
    return json.dumps({"step": step, "data": {"critic/score/mean": reward, "actor/entropy": 1.0}}) + "\n"


def console_line(step: int, reward: float) -> str:
    """One line of verl's console logger."""
    return f"step:{step} - critic/score/mean:{reward} - actor/entropy:1.0\n"


def append(path, text: str | bytes, mode: str = "a") -> None:
    data = text.encode() if isinstance(text, str) else text
    with open(path, mode.replace("b", "") + "b") as handle:
        handle.write(data)


def rewards(follower: Follower) -> list[float]:
    return list(follower.run_log().valid("reward")[1])


def test_only_the_appended_bytes_are_parsed(tmp_path):
    path = tmp_path / "run.jsonl"
    append(path, "".join(verl_line(i, i / 100) for i in range(1, 11)), "w")
    follower = Follower(path)
    assert follower.poll().rows == 10 and follower.offset == path.stat().st_size
    with open(path, "r+b") as handle:  # an earlier line rewritten in place (same size) is not read again
        handle.write(verl_line(1, 0.99).encode())
    append(path, verl_line(11, 0.11))
    update = follower.poll()
    assert update.rows == 1 and follower.offset == path.stat().st_size
    assert rewards(follower)[0] == pytest.approx(0.01) and rewards(follower)[-1] == pytest.approx(0.11)
    assert follower.poll().rows == 0 and not follower.poll().grew  # nothing new


@pytest.mark.parametrize("make_line", [verl_line, console_line], ids=["jsonl", "verl_console"])
def test_a_half_written_line_waits_for_its_end(tmp_path, make_line):
    path = tmp_path / "run.log"
    append(path, "".join(make_line(i, 0.1) for i in range(1, 6)), "w")
    follower = Follower(path)
    assert follower.poll().rows == 5
    offset, text = follower.offset, make_line(6, 0.6)
    append(path, text[:17])  # the writer stopped mid-line: no error, nothing lost
    update = follower.poll()
    assert update.grew and update.rows == 0 and follower.offset == offset
    append(path, text[17:])
    assert follower.poll().rows == 1 and rewards(follower)[-1] == pytest.approx(0.6)


def test_a_jsonl_line_without_its_newline_is_read_once_it_parses(tmp_path):
    path = tmp_path / "run.jsonl"
    text = "".join(verl_line(i, 0.1) for i in range(1, 5)) + verl_line(5, 0.5)[:-1]  # the last "\n" not yet written
    append(path, text, "w")
    follower = Follower(path)
    assert follower.poll().rows == 5
    append(path, "\n" + verl_line(6, 0.6))
    assert follower.poll().rows == 1 and rewards(follower) == pytest.approx([0.1] * 4 + [0.5, 0.6])


def test_a_rotated_log_is_read_again_from_its_start(tmp_path):
    path = tmp_path / "run.jsonl"
    append(path, "".join(verl_line(i, 0.1) for i in range(1, 9)), "w")
    follower = Follower(path)
    assert follower.poll().rows == 8
    os.rename(path, tmp_path / "run.jsonl.1")  # renamed away, a new file under the old name
    append(path, "".join(verl_line(i, 0.5) for i in range(1, 4)), "w")
    update = follower.poll()
    assert update.restarted and update.rows == 3 and "truncated or replaced" in update.messages[0]
    assert rewards(follower) == pytest.approx([0.5] * 3)
    append(path, verl_line(1, 0.2), "w")  # truncated in place (the same inode) and rewritten, shorter
    update = follower.poll()
    assert update.restarted and update.rows == 1 and rewards(follower) == pytest.approx([0.2])


def test_a_file_that_does_not_exist_yet_is_waited_for_and_said_once(tmp_path):
    path = tmp_path / "later.jsonl"
    follower = Follower(path)
    first = follower.poll()
    assert first.rows == 0 and "does not exist yet" in str(first.waiting)
    assert follower.poll().waiting is None  # said once
    with pytest.raises(ConfigError, match="does not exist yet"):
        follower.run_log()
    append(path, "".join(verl_line(i, 0.1) for i in range(1, 6)), "w")
    assert follower.poll().rows == 5 and follower.waiting is None


def test_a_banner_before_the_first_metric_line_is_waited_for(tmp_path):
    """A console log starts with other output (a comma in its first line reads as a CSV header until a metric
    line shows what it is): the format is fixed only once the content builds a run log."""
    path = tmp_path / "train.log"
    append(path, "Creating file logger, please wait\nloading the model\n", "w")
    follower = Follower(path)
    assert follower.poll().waiting is not None
    append(path, "".join(console_line(i, i / 10) for i in range(1, 4)) + "other output\n")
    assert follower.poll().rows == 3 and follower.run_log().format == "verl_console"
    append(path, console_line(4, 0.4))
    assert follower.poll().rows == 1 and list(follower.run_log().steps) == [1, 2, 3, 4]


def test_rows_without_steps_are_numbered_on_across_pieces(tmp_path):
    console = tmp_path / "hf.log"
    row = "{'loss': 0.1, 'reward': %g, 'epoch': 0.1}\n"
    append(console, "  Total optimization steps = 100\n" + "".join(row % (i / 10) for i in range(1, 4)), "w")
    follower = Follower(console)
    follower.poll()
    append(console, "".join(row % (i / 10) for i in range(4, 7)))
    follower.poll()
    assert list(follower.run_log().steps) == [1, 2, 3, 4, 5, 6]
    assert rewards(follower) == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    table = tmp_path / "metrics.csv"  # a CSV's later pieces are read under its header
    append(table, "reward,kl\n0.1,0\n0.2,0\n", "w")
    follower = Follower(table)
    follower.poll()
    append(table, "0.3,0\n0.4,0\n")
    assert follower.poll().rows == 2 and list(follower.run_log().steps) == [1, 2, 3, 4]


def test_a_folder_follows_its_newest_checkpoint_and_keeps_the_last_good_reading(tmp_path):
    follower = Follower(tmp_path)
    assert "holds no trainer_state.json" in str(follower.poll().waiting)
    rows = [{"step": i, "reward": i / 10, "loss": 0.0} for i in range(1, 11)]
    first = tmp_path / "checkpoint-10" / "trainer_state.json"
    first.parent.mkdir()
    first.write_text(trainer_state(rows, summary=False))
    assert follower.poll().rows == 10
    first.write_text(trainer_state(rows, summary=False)[:40])  # a rewrite half done: the last good reading stays
    assert follower.poll().rows == 0 and len(rewards(follower)) == 10
    second = tmp_path / "checkpoint-12" / "trainer_state.json"
    second.parent.mkdir()
    second.write_text(trainer_state(rows + [{"step": 11, "reward": 1.1}, {"step": 12, "reward": 1.2}], summary=False))
    os.utime(second, ns=(first.stat().st_mtime_ns + 10**9,) * 2)
    update = follower.poll()
    assert update.restarted and "newest log" in update.messages[0] and len(rewards(follower)) == 12


def test_a_tensorboard_record_cut_short_waits_for_its_end(tmp_path):
    data = event_file([(step, "train/reward", step / 20) for step in range(1, 13)])
    path = tmp_path / "runs" / "run1" / "events.out.tfevents.1.host"
    path.parent.mkdir(parents=True)
    append(path, data[:-7], "w")  # the writer is mid-record
    follower = Follower(tmp_path)  # a TRL output folder: its runs/<name>/ event file
    assert follower.poll().rows == 11 and follower.offset < len(data) - 7  # the whole records only
    append(path, data[-7:])
    assert follower.poll().rows == 1 and follower.offset == len(data)
    assert rewards(follower)[-1] == pytest.approx(12 / 20)


def test_bad_arguments_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        Follower(tmp_path / "nowhere" / "run.jsonl")
    with pytest.raises(ConfigError, match="unknown log format"):
        Follower(tmp_path / "run.jsonl", format="yaml")


def test_a_document_saved_over_itself_atomically_grows_and_another_restarts(tmp_path):
    """trainer_state.json written to a temporary file and moved over the old one (a new inode): a longer version of
    the same log is growth, said nothing; a document whose rows are not a continuation is a new log, read afresh."""
    path = tmp_path / "trainer_state.json"
    rows = [{"step": i, "reward": i / 10, "loss": 0.0} for i in range(1, 11)]

    def save(rows):
        temporary = tmp_path / "tmp.json"
        temporary.write_text(trainer_state(rows, summary=False))
        os.replace(temporary, path)

    save(rows)
    follower = Follower(path)
    assert follower.poll().rows == 10
    save(rows + [{"step": 11, "reward": 1.1, "loss": 0.0}])
    grown = follower.poll()
    assert not grown.restarted and grown.messages == () and len(rewards(follower)) == 11
    save([{"step": 1, "reward": 0.9, "loss": 0.0}, {"step": 2, "reward": 0.8, "loss": 0.0}])
    other = follower.poll()
    assert other.restarted and "truncated or replaced" in other.messages[0] and rewards(follower) == [0.9, 0.8]


def test_a_document_saved_again_gives_its_new_rows_alone_and_a_rewrite_in_place_restarts(tmp_path):
    """A trainer_state.json saved again (in place or atomically) adds the rows past those it held: a live guard adds
    those alone, so its eval rows are counted once (they were counted at every save); a document rewritten in place
    with another log's rows is a restart, as a replaced one is."""
    from gspo_dynamics.integrations._view import LogView

    path = tmp_path / "trainer_state.json"
    rows = []
    for i in range(1, 31):
        rows.append({"step": i, "reward": i / 30, "loss": 0.0})
        if i % 10 == 0:
            rows.append({"step": i, "eval_reward": 0.5, "eval_loss": 0.1})
    follower, view = Follower(path), LogView()
    for end in (11, 22, 33):  # three saves, each holding an eval row more
        path.write_text(trainer_state(rows[:end], summary=False))
        update = follower.poll()
        assert update.rows == 11 and not update.restarted
        view.add(follower.run_log(start=len(follower.rows) - update.rows))
    assert view.run_log().n_eval_points == follower.run_log().n_eval_points == 3
    path.write_text(trainer_state([{"step": 1, "reward": 0.9, "loss": 0.0}], summary=False))
    other = follower.poll()
    assert other.restarted and "truncated or replaced" in other.messages[0] and rewards(follower) == [0.9]


def test_a_pretty_printed_json_object_holding_the_rows_is_followed_as_a_document(tmp_path):
    """{"total_steps": ..., "steps": [rows]} over many lines (a script's own metrics file): read as diagnose reads it,
    whole at each save, not refused as lines holding no JSON object; a save with more rows gives those rows."""
    path = tmp_path / "training_metrics.json"
    rows = [{"step": 10 * i, "reward": i / 20, "loss": 0.1} for i in range(1, 21)]
    path.write_text(json.dumps({"total_steps": 20, "steps": rows[:12]}, indent=2))
    follower = Follower(path)
    assert follower.poll().rows == 12 and rewards(follower)[-1] == pytest.approx(0.6)
    path.write_text(json.dumps({"total_steps": 20, "steps": rows}, indent=2))
    assert follower.poll().rows == 8 and len(rewards(follower)) == 20
    one = tmp_path / "one_line.json"  # json.dump's default: the same object on one line, rewritten in place
    one.write_text(json.dumps({"steps": rows[:12]}))
    follower = Follower(one)
    assert follower.poll().rows == 12
    one.write_text(json.dumps({"steps": rows}))
    assert follower.poll().rows == 8 and len(rewards(follower)) == 20 and follower.pending == 0


def test_a_notebook_saved_without_a_final_newline_is_followed_as_a_document(tmp_path):
    """A notebook is saved whole, often without a final newline (Colab, VS Code): read as diagnose reads it, and a save
    with more printed rows gives those rows (audit s38b R2: cut at its last newline, it was refused as no notebook)."""
    path = tmp_path / "train.ipynb"

    def save(n: int) -> None:
        printed = [f"{{'loss': 0.01, 'reward': {i / 40}, 'reward_std': 0.3, 'epoch': {i / 40}}}\n" for i in range(1, n + 1)]
        cells = [{"cell_type": "code", "source": ["trainer.train()"],
                  "outputs": [{"output_type": "stream", "name": "stdout", "text": printed}]}]
        path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1))

    save(20)
    assert not path.read_text().endswith("\n")
    follower = Follower(path)
    assert follower.poll().rows == 20 and rewards(follower)[-1] == pytest.approx(0.5)
    save(30)
    assert follower.poll().rows == 10 and len(rewards(follower)) == 30
