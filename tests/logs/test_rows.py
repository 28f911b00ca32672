"""The rows of a log before they become series (`logs/_rows.py`, issue 48): evaluation rows apart, the run's own
step axis, several runs in one file, a resumed run, micro-batch rows, a `null` per series, row-list documents, and
what the RunLog says about them (`step_axis`, `n_runs`, `run_index`, `columns`, `unread`, `n_eval_points`,
`logged_non_finite`). Every log here is written by the test."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest
from _log_fixtures import event_file, trainer_state

from gspo_dynamics import ConfigError
from gspo_dynamics.cli.main import main
from gspo_dynamics.diagnose import diagnose
from gspo_dynamics.logs import read_log, read_log_history

N = 24
REWARD = [round(0.2 + 0.5 * (1 - math.exp(-i / 8)), 6) for i in range(N)]


def jsonl(rows) -> str:
    return "\n".join(json.dumps(row) for row in rows) + "\n"


def train_row(i: int, **extra) -> dict:
    return {"reward": REWARD[i], "reward_std": 0.3, "loss": 0.01, "kl": 0.001 * i, **extra}


# ---- 1. training rows and evaluation rows -------------------------------------------------------------------


def test_interleaved_eval_rows_without_the_training_keys_are_eval_series_not_training_nans():
    rows = []
    for i in range(N):
        rows.append(train_row(i))
        if i % 4 == 3:
            rows.append({"reward": 0.9, "accuracy": 0.5})  # an evaluation loop's row: no std, no loss, no kl
    log = read_log(jsonl(rows))
    np.testing.assert_array_equal(log.steps, np.arange(1, N + 1))  # numbered by training row only
    np.testing.assert_array_equal(log["reward"], REWARD)
    assert log.n_points("reward") == N and log.n_eval_points == N // 4
    assert log.n_points("eval/reward") == N // 4 and "eval/accuracy" in log
    np.testing.assert_array_equal(np.flatnonzero(np.isfinite(log["eval/reward"])) % 4, 3)  # at its training row
    assert not any(mask.any() for mask in log.logged_non_finite.values())
    assert not [f for f in diagnose(log).findings if f.name == "non_finite"]


@pytest.mark.parametrize("field", ["split", "mode", "type", "phase"])
def test_a_split_field_saying_eval_makes_an_eval_row(field):
    rows = []
    for i in range(N):
        rows.append({"step": i + 1, field: "train", **train_row(i)})
        if i % 5 == 4:
            rows.append({"step": i + 1, field: "Validation", "reward": 0.95, "reward_std": 0.1, "loss": 0.2, "kl": 0.0})
    log = read_log(jsonl(rows))
    np.testing.assert_array_equal(log["reward"], REWARD)  # the eval rows' reward is not averaged in
    assert log.n_points("eval/reward") == N // 5 and log.n_eval_points == N // 5
    assert field not in log and not any("non-numeric" in w for w in log.warnings)


def test_rows_of_evaluation_keys_only_and_verl_validation_inside_training_rows():
    rows = [{"step": 0, "val-core/acc/mean@1": 0.1}]  # verl's validation before training
    rows += [{"step": i + 1, "critic/score/mean": REWARD[i], **({"val-core/acc/mean@1": 0.5} if i == 9 else {})}
             for i in range(N)]
    rows.append({"step": N, "eval_loss": 0.3, "epoch": 2.0})
    log = read_log(jsonl(rows))
    assert log.steps[0] == 0 and np.isnan(log["reward"][0]) and not log.logged_non_finite["reward"][0]
    assert log.n_points("reward") == N and log.n_points("eval/acc/mean@1") == 2
    assert log["eval/loss"][-1] == 0.3 and "eval/epoch" not in log
    assert log.columns["eval/acc/mean@1"] == "val-core/acc/mean@1" and log.columns["reward"] == "critic/score/mean"


def test_eval_rows_without_a_reward_at_training_steps_and_eval_values_inside_training_rows():
    rows = []
    for i in range(N):
        rows.append({"step": 10 * i, **train_row(i), "val_accuracy": 0.5 if i % 6 == 5 else None, "val_score": 0.0})
        if i % 6 == 5:
            rows.append({"step": 10 * i, "recall@10": 0.3, "ndcg@10": 0.2})  # an evaluation at a training step
    rows.append({"step": 10 * N, "train_runtime": 100.0, "train_loss": 0.1})  # transformers' summary row
    log = read_log(jsonl(rows))
    assert log.n_points("eval/recall@10") == N // 6 and "recall@10" not in log and "train_runtime" not in log
    assert log.n_eval_points == N // 6  # val_score, written 0.0 on every row, is no evaluation's clock
    assert log.steps[-1] == 10 * (N - 1)


def test_an_evaluations_metrics_merged_into_training_rows_are_evaluation_values():
    rows = [{"iteration": 0, "accuracy": 0.1, "combined_score": 0.2, "lccp": 0.5}]  # the evaluation before training
    for i in range(N):
        rows.append({"iteration": i + 1, **train_row(i), "lccp": 0.5,
                     **({"accuracy": 0.1 + 0.01 * i, "combined_score": 0.3} if i % 5 == 4 else {})})
    log = read_log(jsonl(rows))
    assert "accuracy" not in log and log.n_points("eval/accuracy") == 1 + N // 5 and log.n_eval_points == 1 + N // 5
    assert log.n_points("reward") == N and log.n_points("lccp") == N


def test_the_last_rows_lacking_a_key_are_still_training_rows():
    rows = [{"step": i + 1, "reward": REWARD[i], "loss": 0.1} for i in range(N - 2)]
    rows += [{"step": i + 1, "reward": REWARD[i]} for i in range(N - 2, N)]
    log = read_log(jsonl(rows))
    assert log.n_points("reward") == N and log.n_eval_points == 0


def test_a_trainer_logging_two_rows_per_step_keeps_both_as_training():
    rows = []
    for i in range(N):
        rows += [{"step": i + 1, "reward": REWARD[i], "reward_std": 0.2, "kl": 0.01},
                 {"step": i + 1, "grad_norm": 1.0 + i, "learning_rate": 1e-6}]
    log = read_log(jsonl(rows))
    assert log.n_eval_points == 0 and log.n_points("grad_norm") == N and log.n_points("reward") == N


# ---- 2. the run's own step axis -----------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["iteration", "iter", "it", "update", "train_step", "train/step", "system/step",
                                 "trainer/global_step"])
def test_step_columns_by_rule(key):
    log = read_log(jsonl([{key: 3 * (i + 1), "reward": r} for i, r in enumerate(REWARD)]))
    np.testing.assert_array_equal(log.steps, 3 * np.arange(1, N + 1))
    assert log.step_axis == f"column {key!r}" and key not in log and log.logging_interval == 3


def test_a_trainers_step_wins_over_wandbs_step_and_epoch_is_the_last_resort():
    rows = [{"_step": i, "train/global_step": 2 * (i + 1), "reward": r} for i, r in enumerate(REWARD)]
    assert read_log(jsonl(rows)).step_axis == "column 'train/global_step'"
    by_epoch = read_log(jsonl([{"epoch": i + 1, "reward": r} for i, r in enumerate(REWARD)]))
    assert by_epoch.step_axis == "column 'epoch' (no step column)" and by_epoch.steps[-1] == N
    fractional = read_log(jsonl([{"epoch": 0.1 * (i + 1), "reward": r} for i, r in enumerate(REWARD)]))
    assert fractional.step_axis == "row numbers (no step found)" and "epoch" in fractional


def test_rows_without_steps_are_numbered_by_logging_steps_given_or_recorded():
    rows = [{"reward": r, "loss": 0.1} for r in REWARD]
    plain = read_log(jsonl(rows))
    assert plain.step_axis == "row numbers (no step found)" and plain.steps[-1] == N
    given = read_log(jsonl(rows), logging_steps=5)
    np.testing.assert_array_equal(given.steps, 5 * np.arange(1, N + 1))
    assert given.step_axis == "logging_steps 5 x row" and given.logging_interval == 5
    assert any("numbered 5, 10, ..." in w for w in given.warnings)
    recorded = read_log(trainer_state(rows, logging_steps=10))
    assert recorded.step_axis == "logging_steps 10 x row" and recorded.steps[-1] == 10 * N
    assert read_log_history(rows, logging_steps=4).steps[-1] == 4 * N
    with pytest.raises(ConfigError, match="logging_steps must be a positive integer"):
        read_log(jsonl(rows), logging_steps=0)


def test_micro_batch_rows_of_one_step_are_averaged():
    rows = [{"step": s + 1, "reward": REWARD[s] + d, "loss": 0.1 * k} for s in range(N)
            for k, d in enumerate((-0.03, -0.01, 0.01, 0.03))]  # 4 rows per step
    log = read_log(jsonl(rows))
    np.testing.assert_allclose(log["reward"], REWARD, atol=1e-12)
    np.testing.assert_allclose(log["loss"], 0.15)
    assert any("averaged" in w for w in log.warnings) and log.steps.size == N


def test_a_resumed_run_keeps_the_later_values():
    first = [{"step": s, "reward": 0.0} for s in range(1, 16)]  # crashed after step 15, resumed from step 10
    again = [{"step": s, "reward": REWARD[s - 1]} for s in range(10, N + 1)]
    log = read_log(jsonl(first + again))
    np.testing.assert_array_equal(log.steps, np.arange(1, N + 1))
    np.testing.assert_array_equal(log["reward"][9:], REWARD[9:])
    assert log.n_runs == 1 and any("goes back 1 time(s)" in w and "6 earlier row(s) dropped" in w for w in log.warnings)


# ---- 3. several runs in one file ----------------------------------------------------------------------------


def three_runs() -> str:
    return "".join(jsonl([{"step": 5 * (s + 1), "reward": REWARD[s] + k} for s in range(N - k)]) for k in range(3))


def test_a_restarting_counter_splits_the_runs_and_the_last_is_read():
    log = read_log(three_runs())
    assert (log.n_runs, log.run_index, log.steps.size) == (3, 3, N - 2)
    np.testing.assert_allclose(log["reward"], np.asarray(REWARD[: N - 2]) + 2)
    first = read_log(three_runs(), run=1)
    assert (first.run_index, first.steps.size) == (1, N) and first["reward"][0] == REWARD[0]
    assert any("the file holds 3 runs, of which run 1 was read" in w for w in first.warnings)
    with pytest.raises(ConfigError, match=r"run 4 is not in the log: there are 3 runs in it"):
        read_log(three_runs(), run=4)


def test_in_a_log_of_one_row_per_step_a_run_that_stopped_at_its_first_step_is_a_run():
    starts = [(1,), (1, 2, 3), (1, 2), (1,), tuple(range(1, N + 1))]
    rows = [{"iteration": s, "reward": REWARD[s - 1] + k} for k, run in enumerate(starts) for s in run]
    log = read_log(jsonl(rows))
    assert (log.n_runs, log.steps.size) == (5, N) and log["reward"][0] == REWARD[0] + 4
    assert read_log(jsonl(rows), run=2).steps.tolist() == [1, 2, 3]


def by_epoch(epochs, per_epoch: int = 8, start: int = 0, every: int = 1) -> list[dict]:
    """A hand-written loop's rows: the step counts start, start + every, ... again in each epoch."""
    return [{"epoch": e, "step": start + every * s, "reward": REWARD[(k * per_epoch + s) % N]}
            for k, e in enumerate(epochs) for s in range(per_epoch)]


def test_a_counter_that_restarts_with_each_epoch_counts_on_across_them():
    """Epochs 1-3 of 8 rows each, steps 0, 10, ..., 70 in each: one run of 24 rows at 0, 10, ..., 230."""
    log = read_log(jsonl(by_epoch([1, 2, 3], every=10)))
    assert (log.n_runs, log.steps.size) == (1, 24) and log.steps.tolist() == list(range(0, 240, 10))
    np.testing.assert_allclose(log["reward"], REWARD)
    assert "counted on where it restarts with the epoch (2 time(s))" in log.step_axis
    # the epoch as the fraction of the data seen (k + b / 8 in epoch k), as transformers logs it: the same one run
    fractional = [{**row, "epoch": (i // 8) + (i % 8 + 1) / 8} for i, row in enumerate(by_epoch([1, 2, 3], every=10))]
    assert read_log(jsonl(fractional)).steps.tolist() == list(range(0, 240, 10))


def test_runs_appended_with_their_epochs_from_1_again_stay_runs_and_a_resume_stays_a_resume():
    appended = read_log(jsonl(by_epoch([1, 2]) + by_epoch([1, 2])))  # two runs of two epochs each
    assert (appended.n_runs, appended.steps.tolist()) == (2, list(range(16)))
    resumed = [{"epoch": 0.1 * s, "step": s, "reward": 0.0} for s in range(1, 16)]  # resumed at step 10
    resumed += [{"epoch": 0.1 * s, "step": s, "reward": REWARD[s - 1]} for s in range(10, N + 1)]
    log = read_log(jsonl(resumed))
    assert log.n_runs == 1 and log.steps.tolist() == list(range(1, N + 1)) and log["reward"][-1] == REWARD[-1]


def test_counting_on_across_epochs_matches_a_loop():
    """`across_epochs`' cumulative offsets against a row-by-row loop, on random restarts, epochs and eval rows."""
    from gspo_dynamics.logs._epochs import across_epochs

    rng = np.random.default_rng(0)
    for _ in range(50):
        n = int(rng.integers(2, 60))
        steps = rng.integers(0, 20, n).astype(np.int64)
        epochs = rng.integers(1, 4, n).astype(float)  # a restart joins where the epoch rises
        is_eval = rng.random(n) < 0.2
        rows = [(int(s), {"epoch": float(e), "reward": 0.0}) for s, e in zip(steps, epochs)]
        got, joined = across_epochs(rows, {("epoch", "reward"): list(range(n))}, steps, is_eval)
        train = np.flatnonzero(~is_eval)
        diffs = np.diff(steps[train])
        d = int(np.median(diffs[diffs > 0])) if (diffs > 0).any() else 1
        want, offset, count, prev = steps.copy(), 0, 0, None
        for i in range(n):
            if not is_eval[i] and prev is not None and steps[i] < steps[prev]:
                if epochs[i] > epochs[prev]:
                    offset, count = offset + int(steps[prev] - steps[i]) + d, count + 1
                else:
                    offset = 0
            want[i] = steps[i] + offset
            prev = i if not is_eval[i] else prev
        if count == 0:
            want = steps
        assert joined == count and got.tolist() == want.tolist()


def test_a_console_loops_epoch_and_step_lines_read_as_one_run():
    lines = [f"INFO - Epoch {e}/3, Step {s}, Loss: 0.1, Reward: {REWARD[(e - 1) * 8 + s // 10]:.6f}"
             for e in (1, 2, 3) for s in range(0, 80, 10)]
    log = read_log("\n".join(lines) + "\n")
    assert (log.n_runs, log.steps.size) == (1, 24) and log.steps[-1] == 230
    np.testing.assert_allclose(log["reward"], REWARD, atol=1e-6)


def test_a_new_runs_evaluation_before_training_goes_with_it():
    run = [{"step": 0, "val/acc": 0.1}] + [{"step": s + 1, "critic/score/mean": REWARD[s]} for s in range(N)]
    run.append({"step": N, "val/acc": 0.6})
    log = read_log(jsonl(run + run))
    assert log.n_runs == 2 and log.n_eval_points == 2 and log["eval/acc"][0] == 0.1 and log["eval/acc"][-1] == 0.6


def test_diagnose_says_which_run_and_run_picks_another(tmp_path, capsys):
    path = tmp_path / "metrics.jsonl"
    path.write_text(three_runs())
    assert main(["diagnose", str(path)]) == 0
    out = capsys.readouterr().out
    assert "run 3 of 3 in the file (--run K picks another)" in out and "steps: column 'step'" in out
    assert main(["diagnose", str(path), "--run", "2", "--json"]) == 0
    log = json.loads(capsys.readouterr().out)["log"]
    assert (log["n_runs"], log["run_index"], log["step_axis"], log["eval_points"]) == (3, 2, "column 'step'", 0)
    assert main(["diagnose", str(path), "--run", "5"]) == 2
    assert "there are 3 runs" in capsys.readouterr().err


def test_watch_follows_the_last_run_and_run_picks_another_and_predict_needs_a_pilot_for_it(tmp_path, capsys):
    path = tmp_path / "metrics.jsonl"
    path.write_text(three_runs())
    assert main(["watch", str(path), "--once"]) == 0
    assert capsys.readouterr().out.startswith(f"step {5 * (N - 2)}:")
    assert main(["watch", str(path), "--once", "--run", "1"]) == 0
    assert capsys.readouterr().out.startswith(f"step {5 * N}:")
    assert main(["predict", "--run", "2"]) == 2
    assert "--run needs --pilot" in capsys.readouterr().err


# ---- 4. null per series; NaN as written --------------------------------------------------------------------


def test_a_json_null_is_missing_and_a_nan_as_written_is_non_finite():
    rows = [{"step": i + 1, "reward": r, "entropy": None if i == 3 else 0.5, "kl": 0.01} for i, r in enumerate(REWARD)]
    rows[6]["kl"] = float("nan")  # json.dumps writes NaN
    rows[7]["kl"] = "inf"
    log = read_log(jsonl(rows))
    assert np.isnan(log["entropy"][3]) and not log.logged_non_finite["entropy"].any()
    np.testing.assert_array_equal(np.flatnonzero(log.logged_non_finite["kl_ref"]), [6, 7])
    found = [f for f in diagnose(log).findings if f.name == "non_finite"]
    assert len(found) == 1 and "kl_ref" in found[0].summary and "entropy" not in found[0].summary


def test_verls_file_logger_null_is_a_logged_non_finite_value():
    rows = [{"step": i + 1, "data": {"critic/score/mean": r, "actor/grad_norm": None if i == 5 else 1.0}}
            for i, r in enumerate(REWARD)]
    log = read_log(jsonl(rows))
    np.testing.assert_array_equal(np.flatnonzero(log.logged_non_finite["grad_norm"]), [5])
    assert [f.name for f in diagnose(log).findings if f.name == "non_finite"] == ["non_finite"]


# ---- 5. row-list documents, TensorBoard folders ------------------------------------------------------------


@pytest.mark.parametrize("indent", [None, 2])
def test_a_document_holding_its_rows_under_steps_is_read_as_rows(indent):
    rows = [{"step": 10 * (i + 1), "reward": r, "entropy": 0.4} for i, r in enumerate(REWARD)]
    log = read_log(json.dumps({"total_steps": 10 * N, "steps": rows}, indent=indent))
    assert log.format == "jsonl" and log.logging_interval == 10
    np.testing.assert_array_equal(log["reward"], REWARD)


def test_a_document_of_columns_is_read_as_rows():
    columns = {"rewards_avg": REWARD, "kl_avg": [0.01] * N, "val_accuracies_avg": [0.5] * N, "notes": [1, 2]}
    log = read_log(json.dumps(columns, indent=2))
    np.testing.assert_array_equal(log["reward"], REWARD)
    assert log.step_axis == "row numbers (no step found)" and any("'notes'" in w for w in log.warnings)


def test_a_folder_with_tensorboard_events_only_in_subfolders_reads_the_newest(tmp_path):
    older, newer = tmp_path / "runs" / "Jan01", tmp_path / "runs" / "Feb02"
    for folder, shift in ((older, 0.0), (newer, 0.1)):
        folder.mkdir(parents=True)
        (folder / "events.out.tfevents.1.host").write_bytes(
            event_file([(i + 1, "train/reward", r + shift) for i, r in enumerate(REWARD)]))
    os.utime(older / "events.out.tfevents.1.host", (1, 1))
    log = read_log(tmp_path)
    assert "Feb02" in log.source and log.step_axis == "TensorBoard steps"
    np.testing.assert_allclose(log["reward"], np.asarray(REWARD) + 0.1, rtol=1e-6)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="nor one up to two folders below"):
        read_log(tmp_path / "empty")


def test_a_trl_output_folder_reads_its_latest_checkpoints_trainer_state(tmp_path):
    """TRL's output_dir holds checkpoint-N/trainer_state.json only: diagnose and report read the largest N's (its
    log history runs to that step), as watch follows it; checkpoint-100 comes after checkpoint-50 (by number)."""
    for n in (50, 100, 9):
        folder = tmp_path / f"checkpoint-{n}"
        folder.mkdir()
        rows = [{"step": i + 1, "reward": r} for i, r in enumerate(REWARD[: max(2, len(REWARD) * n // 100)])]
        (folder / "trainer_state.json").write_text(json.dumps({"log_history": rows}))
    log = read_log(tmp_path)
    assert log.source.endswith("checkpoint-100/trainer_state.json")
    np.testing.assert_array_equal(log["reward"], REWARD)


def test_tensorboard_tags_on_their_own_clocks_are_not_runs_nor_resumes():
    scalars = []
    for i, r in enumerate(REWARD):
        scalars.append((i + 1, "train/reward", r))
        if i % 8 == 7:
            scalars.append((i // 8, "epoch_lr", 1e-6))  # logged per epoch: its step is the epoch
    log = read_log(event_file(scalars))
    assert log.n_runs == 1 and log.n_points("reward") == N and not any("goes back" in w for w in log.warnings)


# ---- 6. which column became which series --------------------------------------------------------------------


def test_columns_unread_and_the_log_line(tmp_path, capsys):
    rows = [{"iteration": i + 1, "reward_mean": r, "policy_entropy": 0.5, "my_thing": 1.0, "other": 2.0}
            for i, r in enumerate(REWARD)]
    log = read_log(jsonl(rows))
    assert log.columns["reward"] == "reward_mean" and log.columns["entropy"] == "policy_entropy"
    assert log.unread == ("my_thing", "other")
    path = tmp_path / "m.jsonl"
    path.write_text(jsonl(rows))
    assert main(["diagnose", str(path)]) == 0
    out = capsys.readouterr().out
    assert ("columns    reward 'reward_mean', entropy 'policy_entropy', length none, kl none, grad norm none; "
            "2 column(s) unread (--explain lists them)") in out
    assert main(["diagnose", str(path), "--explain"]) == 0
    assert "unread     'my_thing', 'other'" in capsys.readouterr().out
    assert main(["diagnose", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)["log"]
    assert {"series": "reward", "column": "reward_mean"} in report["columns"] and report["unread"] == ["my_thing", "other"]


def test_a_row_its_writer_calls_a_rollout_is_a_training_row_whatever_its_keys():
    rows = []
    for step in range(1, 13):
        rows.append({"type": "rollout", "grpo_step": step, "reward": 0.05 * step, "avg_response_token_length": 300.0})
        rows.append({"type": "train", "grpo_step": step, "optimizer_step": step, "loss": 0.1, "grad_norm": 0.5,
                     "token_entropy": 0.9})  # the update rows' own counter: not the file's axis (not on every row)
        if step % 4 == 0:
            rows.append({"type": "eval", "grpo_step": step, "reward": 0.4})
    log = read_log("\n".join(json.dumps(row) for row in rows))
    assert log.n_points("reward") == 12 and log.n_points("mean_length") == 12 and log.n_eval_points == 3
    assert log.step_axis == "column 'grpo_step'" and log.columns["reward"] == "reward"


def test_a_verl_ppo_run_with_a_value_critic_is_refused_as_such():
    text = "\n".join(f"step:{s} - critic/score/mean:{0.1 * s} - critic/vf_loss:0.3 - critic/values/mean:0.2"
                     for s in range(1, 12))
    with pytest.raises(ConfigError, match="PPO with a learned value critic"):
        read_log(text)


def test_a_stable_baselines_ppo_log_is_refused_as_such():
    """SB3's PPO (audit s38b R6: refused as having no reward, with a map hint to rollout/ep_rew_mean): its value loss
    names the critic."""
    rows = [{"step": 2048 * s, "rollout/ep_rew_mean": 0.1 * s, "train/value_loss": 0.3, "train/clip_range": 0.2,
             "train/approx_kl": 0.01} for s in range(1, 12)]
    with pytest.raises(ConfigError, match="PPO with a learned value critic .*'value_loss'"):
        read_log("\n".join(json.dumps(r) for r in rows))


def test_a_trl_ppotrainer_log_is_refused_as_such():
    """TRL's PPOTrainer: objective/scores beside its value head's loss/value_avg and val/* (not a group advantage)."""
    rows = [{"step": s, "objective/scores": 0.1 * s, "objective/kl": 0.001 * s, "policy/clipfrac_avg": 0.1,
             "loss/value_avg": 0.3, "val/clipfrac_avg": 0.05} for s in range(1, 12)]
    with pytest.raises(ConfigError, match="PPO with a learned value critic .*'loss/value_avg'"):
        read_log("\n".join(json.dumps(r) for r in rows))


def test_a_q_learning_log_is_refused_as_such_even_with_a_map():
    """A tabular Q-learning loop's log (audit E's control: episode, avg_reward, epsilon, q_table_size): no policy
    gradient, so a map of its reward does not make it a GRPO run to advise on."""
    rows = [{"episode": e, "avg_reward": 0.02 + 0.001 * (e % 5), "epsilon": 0.995 ** e, "total_reward": 1.0,
             "q_table_size": 13 + e} for e in range(40)]
    text = "\n".join(json.dumps(row) for row in rows)
    for column_map in (None, {"reward": "avg_reward"}):
        with pytest.raises(ConfigError, match=r"value-based RL \(Q-learning or DQN: 'q_table_size'\)"):
            read_log(text, column_map=column_map)
    # a GRPO loop's clip `epsilon` or a `seq_len` is no sign of one
    grpo = [{"step": s, "reward": 0.1 * s, "loss": 0.1, "epsilon": 0.2, "seq_len": 300} for s in range(1, 12)]
    assert read_log("\n".join(json.dumps(row) for row in grpo)).n_points("reward") == 11


def test_a_jsonl_log_ending_with_a_log_history_line_is_jsonl():
    rows = [{"loss": 0.1, "reward": 0.1 * k, "global_step/max_steps": f"{k}/12"} for k in range(1, 13)]
    text = "\n".join(json.dumps(row) for row in rows) + "\n" + json.dumps({"log_history": rows}) + "\n"
    log = read_log(text)
    assert log.format == "jsonl" and log.n_points("reward") == 12 and int(log.valid("reward")[0][-1]) == 12


def test_ms_swift_jsonl_steps_come_from_global_step_over_max_steps_not_a_summary_rows_global_step():
    rows = [{"loss": 0.1, "reward": 0.05 * k, "global_step/max_steps": f"{10 * k}/120"} for k in range(1, 13)]
    tail = {"log_history": rows, "global_step": 120, "best_metric": None}
    log = read_log("\n".join(json.dumps(row) for row in rows + [tail]) + "\n")
    assert log.step_axis == "column 'global_step/max_steps'" and list(log.valid("reward")[0][[0, -1]]) == [10, 120]


def test_an_entropy_of_exact_zeros_on_every_row_is_a_placeholder_not_a_collapse():
    """A loop with the entropy's computation off (audit A8) logs entropy 0.0 on every row while a quarter of its groups
    have rewards that differ: set aside, said, unread. Kept: a measured entropy that reaches 0 late, and zeros where
    no group is shown to differ (a policy that may answer every prompt one way)."""
    log = read_log(jsonl([train_row(i, entropy=0.0, frac_reward_zero_std=0.75) for i in range(N)]))
    assert "entropy" not in log.series and "entropy" in log.unread and "entropy" not in log.columns
    assert any("'entropy' is exactly 0 on every row while groups' rewards differ: a placeholder" in w
               for w in log.warnings)
    falls = read_log(jsonl([train_row(i, entropy=max(0.0, 0.5 - 0.05 * i), frac_reward_zero_std=0.75)
                            for i in range(N)]))
    assert falls.n_points("entropy") == N and falls["entropy"][-1] == 0.0
    for spread in ({}, {"frac_reward_zero_std": 1.0}):
        assert read_log(jsonl([train_row(i, entropy=0.0, **spread) for i in range(N)])).n_points("entropy") == N
