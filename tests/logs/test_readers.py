"""Each reader on small synthetic logs with known answers; names, steps, metadata, refusals."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from _log_fixtures import event_file, grpo_row, trainer_state

from gspo_dynamics import ConfigError
from gspo_dynamics.logs import FORMATS, STANDARD_NAMES, canonical_name, detect_format, read_log
from gspo_dynamics.logs._tfevents import crc32c

REWARDS = [0.1, 0.2, 0.4, 0.5, 0.6, 0.65, 0.7, 0.72, 0.73, 0.74]


def test_crc32c_matches_the_standard_check_value():
    assert crc32c(b"123456789") == 0xE3069283  # RFC 3720 / iSCSI check value


@pytest.mark.parametrize(
    ("raw", "name"),
    [
        ("reward", "reward"), ("train/reward", "reward"), ("kl", "kl_ref"),
        ("frac_reward_zero_std", "frac_zero_std"), ("completion_length", "mean_length"),
        ("completions/mean_length", "mean_length"),
        ("completions/clipped_ratio", "truncation_rate"),
        ("clip_ratio/region_mean", "clip_frac"), ("rewards/fmt", "reward/fmt"),
        ("rewards/fmt/mean", "reward/fmt"), ("rewards/fmt/std", "rewards/fmt/std"),
        ("eval_kl", "eval/kl_ref"), ("eval/reward", "eval/reward"),
        ("critic/score/mean", "reward"), ("critic/rewards/mean", "critic/rewards/mean"),
        ("actor/pg_clipfrac", "clip_frac"), ("actor/ppo_kl", "kl_old_new"),
        ("actor/entropy", "entropy"), ("actor/kl_loss", "kl_ref"),
        ("response_length/mean", "mean_length"), ("response_length/clip_ratio", "truncation_rate"),
        ("train/policy_loss", "loss"), ("train/ppo_clip_ratio", "clip_frac"),
        ("train/group_reward_std", "reward_std"), ("train/entropy_loss", "entropy"),
        ("train/response_length", "mean_length"), ("something/else", "something/else"),
    ],
)
def test_canonical_names(raw, name):
    assert canonical_name(raw) == name


@pytest.mark.parametrize("modern", [True, False])
def test_trl_state_across_versions(modern):
    rows = [grpo_row(10 * (i + 1), r, modern) for i, r in enumerate(REWARDS)]
    rows.insert(3, {"step": 30, "eval_reward": 0.9, "eval_loss": 0.2, "epoch": 0.3})
    log = read_log(trainer_state(rows, logging_steps=10))
    assert log.format == "trl_state" and log.trainer == "trl" and log.logging_interval == 10
    np.testing.assert_array_equal(log.steps, np.arange(10, 101, 10))
    np.testing.assert_array_equal(log["reward"], REWARDS)
    np.testing.assert_array_equal(log["reward/accuracy"], REWARDS)
    assert log["eval/reward"][2] == 0.9 and np.isnan(log["eval/reward"][0])
    assert "train_runtime" not in log.names and not log.warnings
    assert log.reward_std_kind == ("unknown" if modern else "group_mean_std")
    expected = {"reward", "reward_std", "kl_ref", "mean_length", "grad_norm", "learning_rate"}
    if modern:
        expected |= {"frac_zero_std", "entropy", "clip_frac", "truncation_rate"}
    assert expected <= set(log.names) and expected <= set(STANDARD_NAMES)


def test_logging_interval_from_step_spacing_when_not_recorded():
    text = "\n".join(json.dumps({"step": 5 * (i + 1), "reward": r}) for i, r in enumerate(REWARDS))
    log = read_log(text)
    assert log.format == "jsonl" and log.logging_interval == 5


def test_a_counter_that_goes_back_keeps_the_later_rows_and_rows_of_one_step_are_averaged():
    rows = [{"step": 1, "reward": 0.1}, {"step": 3, "reward": 0.3}, {"step": 2, "reward": 0.2},
            {"step": 2, "reward": 0.25}]
    log = read_log(trainer_state(rows))
    np.testing.assert_array_equal(log.steps, [1, 2])  # step 3, before the counter went back to 2, is dropped
    np.testing.assert_allclose(log["reward"], [0.1, 0.225])  # two rows of step 2: averaged
    assert any("goes back 1 time(s)" in w for w in log.warnings)
    assert any("averaged" in w for w in log.warnings)


def test_a_truncated_trainer_state_is_an_error_saying_where_it_ends():
    text = trainer_state([grpo_row(i + 1, r) for i, r in enumerate(REWARDS)])
    cut = text[: len(text) * 2 // 3]
    with pytest.raises(ConfigError, match=r"trainer_state.json is cut short: it ends at line (\d+), column (\d+)") as error:
        read_log(cut)
    line, column = map(int, re.search(r"line (\d+), column (\d+)", str(error.value)).groups())
    assert cut.splitlines()[line - 1][column - 1] == cut.rstrip()[-1]  # the last character read
    damaged = text.replace(",", ",,", 1)  # not cut short: where it is damaged
    with pytest.raises(ConfigError, match=r"not valid JSON: line \d+, column \d+"):
        read_log(damaged)


def test_a_json_array_log_cut_short_is_an_error_and_a_jsonl_last_line_cut_short_a_warning():
    rows = [json.dumps({"step": i + 1, "reward": r}) for i, r in enumerate(REWARDS)]
    with pytest.raises(ConfigError, match="cut short: it ends at line 1"):
        read_log("[" + ",".join(rows)[:-5])
    # a file's bytes, its writer killed mid-row (or still writing): the rows before it are read (text given in memory
    # is whole as given, its last line ended)
    log = read_log("\n".join(rows)[:-5].encode())
    assert log.n_points() == len(REWARDS) - 1
    assert any(f"line {len(rows)}, the last, is cut short" in w for w in log.warnings)
    assert not any("were not JSON objects" in w for w in log.warnings)


def test_hf_console_mixed_with_other_output():
    lines = ["***** Running training *****", "  Total optimization steps = 40",
             "Map: 100%|####| 10/10 [00:00<00:00]", "{'eos_token_id': 2}"]
    for r in REWARDS[:4]:
        progress = "  5%|#   | 1/40 [00:01<00:40]\r"
        record = f"{{'loss': '0.01', 'reward': '{r}', 'kl': '1e-3', 'epoch': '0.1'}}"
        lines.append(progress + record)
    lines.append("{'eval_loss': 0.5, 'eval_reward': 0.9, 'epoch': 0.4}")
    lines.append("{'train_runtime': '10', 'train_loss': '0.01', 'epoch': '0.4'}")
    log = read_log("\n".join(lines))
    assert log.format == "hf_console" and log.logging_interval == 10
    np.testing.assert_array_equal(log.steps, [10, 20, 30, 40])
    np.testing.assert_array_equal(log["reward"], REWARDS[:4])
    assert log["eval/reward"][-1] == 0.9 and log["kl_ref"][0] == 1e-3


def test_verl_console_lines():
    text = "\n".join(
        f"(main_task pid=1) step:{i} - critic/score/mean:{r} - actor/ppo_kl:np.float64(0.001) - "
        f"actor/pg_clipfrac:0.02 - response_length/mean:300.5 - val-core/gsm8k/reward/mean@1:0.5"
        for i, r in enumerate(REWARDS)
    )
    log = read_log("INFO starting\n" + text)
    assert log.format == "verl_console" and log.trainer == "verl"
    np.testing.assert_array_equal(log["reward"], REWARDS)
    assert log["kl_old_new"][0] == 0.001 and log["clip_frac"][0] == 0.02
    assert "eval/gsm8k/reward/mean@1" in log.names


def test_verl_file_logger_jsonl():
    text = "\n".join(
        json.dumps({"step": i + 1, "data": {
            "critic/score/mean": r, "critic/rewards/mean": r - 0.1,
            "actor/kl_loss": 0.01, "response_length/clip_ratio": 0.2,
        }})
        for i, r in enumerate(REWARDS)
    )
    log = read_log(text)
    assert log.format == "jsonl" and log.trainer == "verl" and not log.too_short
    np.testing.assert_allclose(log["critic/rewards/mean"], np.array(REWARDS) - 0.1)
    assert log["kl_ref"][0] == 0.01 and log["truncation_rate"][0] == 0.2


def test_wandb_csv_export_with_train_prefix_and_internal_step():
    header = "_step,train/global_step,train/reward,train/frac_reward_zero_std,eval/reward,_runtime"
    body = [
        f"{i},{2 * (i + 1)},{r},0.5,{'' if i % 2 else 0.8},{i * 3.0}" for i, r in enumerate(REWARDS)
    ]
    log = read_log("\n".join([header, *body]))
    assert log.format == "csv" and log.logging_interval == 2
    np.testing.assert_array_equal(log.steps, 2 * np.arange(1, 11))  # the trainer's step, not _step
    np.testing.assert_array_equal(log["reward"], REWARDS)
    assert np.isnan(log["eval/reward"][1]) and log["eval/reward"][0] == 0.8


def test_generic_csv_with_column_map():
    body = [f"{i}\t{r}\t{1 - r}" for i, r in enumerate(REWARDS)]
    log = read_log("iter\tscore\tmy_kl\n" + "\n".join(body),
                   column_map={"step": "iter", "reward": "score", "kl_ref": "my_kl"})
    np.testing.assert_array_equal(log.steps, np.arange(10))
    np.testing.assert_array_equal(log["reward"], REWARDS)
    np.testing.assert_allclose(log["kl_ref"], [1 - r for r in REWARDS])
    with pytest.raises(ConfigError, match="no column 'nope'"):
        read_log("iter,score\n1,2\n", column_map={"reward": "nope"})


def test_openrlhf_tensorboard_names():
    scalars = [(i, tag, r) for i, r in enumerate(REWARDS)
               for tag in ("train/reward", "train/kl", "train/response_length", "train/policy_loss",
                           "train/ppo_clip_ratio", "train/group_reward_std", "train/entropy_loss")]
    log = read_log(event_file(scalars))
    assert log.format == "tensorboard" and log.trainer == "openrlhf"
    mapped = {"reward", "kl_ref", "mean_length", "loss", "clip_frac", "reward_std", "entropy"}
    assert mapped <= set(log.names)
    np.testing.assert_allclose(log["reward"], REWARDS, rtol=1e-7)  # float32 storage


def test_tensorboard_tensor_scalars_and_truncation():
    data = event_file([(i, "train/reward", r) for i, r in enumerate(REWARDS)], as_tensor=True)
    np.testing.assert_array_equal(read_log(data)["reward"], REWARDS)  # doubles are exact
    cut = read_log(data[:-7])
    assert cut.n_points() == len(REWARDS) - 1 and any("truncated" in w for w in cut.warnings)


@pytest.mark.parametrize(
    ("rows", "algorithm"),
    [
        ([{"step": i, "loss": 1.0, "rewards/chosen": 0.1, "rewards/rejected": -0.1,
           "rewards/margins": 0.2} for i in range(3)], "DPO"),
        ([{"step": i, "loss": 1.0, "learning_rate": 1e-5, "grad_norm": 1.0,
           "mean_token_accuracy": 0.5} for i in range(3)], "SFT"),
    ],
)
def test_other_algorithms_are_refused(rows, algorithm):
    with pytest.raises(ConfigError, match=algorithm):
        read_log(trainer_state(rows))


def test_an_sft_run_appended_to_a_grpo_one_is_refused_as_the_run_read(tmp_path):
    """The algorithm is the run's, not the file's (audit s38b R1: a notebook's SFT cell after its GRPO cell was read
    as GRPO with mean_token_accuracy as the reward): the SFT run is refused, naming it; the GRPO run is read."""
    grpo = [{"loss": 0.01, "grad_norm": 0.5, "learning_rate": 1e-6, "reward": 0.2 + 0.03 * i, "reward_std": 0.3,
             "frac_reward_zero_std": 0.1, "epoch": (i + 1) / 12} for i in range(12)]
    sft = [{"loss": 1.5 - 0.05 * i, "grad_norm": 1.0, "learning_rate": 2e-5, "entropy": 1.4,
            "mean_token_accuracy": 0.6 + 0.01 * i, "epoch": (i + 1) / 12} for i in range(12)]
    summary = {"train_runtime": 9.0, "train_loss": 0.5, "epoch": 1.0}
    path = tmp_path / "console.log"
    path.write_text("".join(f"{row}\n" for row in [*grpo, summary, *sft, summary]))
    with pytest.raises(ConfigError, match=r"^run 2 of 2 in this file is from a run of SFT.*--run K picks another"):
        read_log(path)
    log = read_log(path, run=1)
    assert log.columns["reward"] == "reward" and log.n_points("reward") == 12
    path.write_text("".join(f"{row}\n" for row in [*sft, summary, *grpo, summary]))  # GRPO last: read as before
    assert read_log(path).columns["reward"] == "reward"


def test_short_run_is_kept_and_flagged():
    log = read_log(trainer_state([grpo_row(i + 1, r) for i, r in enumerate(REWARDS[:3])]))
    assert log.is_too_short() and not log.is_too_short(min_points=3)
    assert any("too short" in w for w in log.warnings)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"), ("   \n  ", "empty"), ("hello world\n", "recognise"),
        ('{"log_history": 5}', "log_history"), ("step,loss\n1,0.5\n", "no reward series"),
        # a GRPO run's export without its reward column is no SFT run (audit s38b R6): SFT's own keys decide that
        ("step,loss,grad_norm,learning_rate\n1,0.5,1.0,1e-6\n2,0.4,1.0,1e-6\n", "no reward series"),
        ("a,b\n1,2\n", "no reward"),
    ],
)
def test_bad_text_gives_one_sentence_config_error(text, message):
    with pytest.raises(ConfigError, match=message) as error:
        read_log(text)
    assert "\n" not in str(error.value)


def test_bad_arguments(tmp_path):
    with pytest.raises(ConfigError, match="unknown log format"):
        read_log("x\n", format="wandb")
    with pytest.raises(ConfigError, match="does not exist"):
        read_log(tmp_path / "missing.json")
    with pytest.raises(ConfigError, match="column_map"):
        read_log("a\n", column_map={"a": 1})
    with pytest.raises(ConfigError, match="expected a file path"):
        read_log(3.5)
    with pytest.raises(ConfigError, match="binary"):
        read_log(b"\x00\x01garbage" * 10)


@pytest.mark.parametrize("fmt", FORMATS)
def test_explicit_format_on_the_wrong_content_is_a_config_error(fmt):
    with pytest.raises(ConfigError):
        content = b"just some words without structure\n" if fmt == "tensorboard" else "just words\n"
        read_log(content, format=fmt)


def test_detect_format_rules():
    assert detect_format(event_file([(1, "train/reward", 0.5)])) == "tensorboard"
    assert detect_format('{"log_history": []}') == "trl_state"
    assert detect_format('[{"step": 1}]') == "jsonl"
    assert detect_format("x step:1 - a:1\n") == "verl_console"
    assert detect_format("{'loss': 1}\n") == "hf_console"
    assert detect_format("step,reward\n") == "csv"


def test_runlog_is_immutable_and_nan_infinities_are_kept():
    text = '{"step": 1, "reward": NaN}\n{"step": 2, "reward": Infinity}\n{"step": 3, "reward": 1}'
    log = read_log(text)
    assert math.isnan(log["reward"][0]) and math.isinf(log["reward"][1])
    assert log.n_points() == 1 and any("infinite" in w for w in log.warnings)
    with pytest.raises(ValueError):
        log["reward"][0] = 1.0
    with pytest.raises(TypeError):
        log.series["reward"] = np.zeros(3)
    with pytest.raises(KeyError, match="not in this log"):
        log["entropy"]


def test_every_detected_format_has_its_reader():
    from gspo_dynamics.logs._detect import FORMATS
    from gspo_dynamics.logs._read import READERS

    assert tuple(READERS) == FORMATS


def test_one_json_object_without_rows_says_what_it_holds():
    """W&B's summary beside an empty history (`{"summary": {...}, "rows": []}`, one document over many lines) is not a
    log of JSON lines: the error names its keys, the empty row list and what a summary is, not "no JSON objects"."""
    text = '{\n  "summary": {"train/loss": 0.0004, "train/mean_kl": 0},\n  "rows": []\n}\n'
    with pytest.raises(ConfigError, match=r"one JSON object of 2 key\(s\) \(summary, rows\) with no rows of metrics: "
                                          r"its 'rows' list is empty; a 'summary' holds a run's last values"):
        read_log(text, format="jsonl")
    with pytest.raises(ConfigError, match="no JSON objects were found"):
        read_log("not json\nnor this\n", format="jsonl")


def test_a_training_config_given_as_a_log_is_named_as_one():
    """A GRPOConfig's JSON passed to diagnose: said to be a config (`predict --config` reads it), not "no rows"."""
    config = {"output_dir": "out", "learning_rate": 1e-6, "num_generations": 8, "beta": 0.0}
    with pytest.raises(ConfigError, match=r"^the file is a training config \(output_dir, learning_rate, "
                                          r"num_generations, \.\.\.\), not a log of metrics: `predict --config`"):
        read_log(json.dumps(config, indent=2), format="jsonl")  # a document: its keys in the file's order
    with pytest.raises(ConfigError, match=r"^the file is a training config \(learning_rate, num_generations, "
                                          r"output_dir, \.\.\.\)"):
        read_log(json.dumps(config), format="jsonl")  # one line: read as a row, its keys in order


def test_a_csv_pandas_wrote_with_its_row_index_is_read_without_it():
    """`DataFrame.to_csv()` (W&B's run.history() saved by pandas) writes its row index first, under an empty name."""
    lines = [",_step,_runtime,train/reward,train/kl"] + [f"{i},{2 * i},{10.0 * i},{0.1 + 0.01 * i:.3f},0.001"
                                                         for i in range(30)]
    log = read_log("\n".join(lines) + "\n")
    assert log.format == "csv" and log.steps.tolist() == [2 * i for i in range(30)]
    assert log.columns["reward"] == "train/reward" and log.series["reward"][-1] == pytest.approx(0.39)
    assert any("row index (pandas' to_csv): not read" in w for w in log.warnings)
    assert "index" not in log.columns.values() and "" not in log.columns.values()


def test_tensorboards_csv_of_one_scalar_reads_its_value_under_the_tag_its_name_carries(tmp_path):
    """TensorBoard's "Download data" CSV: Wall time, Step, Value, the tag only in `run-<run>-tag-<tag>.csv`."""
    text = "Wall time,Step,Value\n" + "".join(f"{1.7e9 + i},{i},{0.1 + 0.01 * i}\n" for i in range(30))
    path = tmp_path / "run-grpo_qwen-tag-train_reward.csv"
    path.write_text(text)
    log = read_log(path)
    assert log.columns["reward"] == "train_reward" and log.n_points("reward") == 30
    assert any("its Value read as 'train_reward'" in w for w in log.warnings)
    renamed = tmp_path / "reward.csv"  # no tag in the name: Value stays Value, and the error says how to map it
    renamed.write_text(text)
    with pytest.raises(ConfigError, match="no reward series was found; map one .* columns: 'Value'"):
        read_log(renamed)
    assert read_log(renamed, column_map={"reward": "Value"}).n_points("reward") == 30


def test_a_summary_of_last_values_is_said_to_be_one_not_read_as_a_run(tmp_path):
    """W&B's wandb-summary.json (one row of last values) and any one JSON object of scalars over many lines."""
    path = tmp_path / "wandb-summary.json"
    path.write_text('{"train/reward": 0.51, "_step": 300, "_runtime": 5000.2}')
    with pytest.raises(ConfigError, match="W&B's summary of a run, its last values, not its curve"):
        read_log(path)
    other = tmp_path / "final.json"
    other.write_text('{\n "train/reward": 0.51,\n "_step": 300\n}\n')
    with pytest.raises(ConfigError, match=r"one JSON object of 2 key\(s\) \(train/reward, _step\) with no rows"):
        read_log(other)


def test_a_wandb_run_folder_reads_the_console_it_captured(tmp_path):
    """wandb/run-*/ (or its files/) with no log of its own: files/output.log, told by W&B's files beside it."""
    files = tmp_path / "run-20250101_000000-abc" / "files"
    files.mkdir(parents=True)
    (files / "output.log").write_text("".join(str(grpo_row(i + 1, 0.1 + 0.01 * i)) + "\n" for i in range(20)))
    (files / "wandb-summary.json").write_text('{"reward": 0.6}')
    for folder in (files.parent, files):
        assert read_log(folder).source == str(files / "output.log")
    (files / "wandb-summary.json").unlink()  # an output.log without W&B's files beside it is not taken for one
    with pytest.raises(ConfigError, match="or W&B run's output.log"):
        read_log(files.parent)


def test_a_csvs_true_and_false_read_as_a_jsons_do(tmp_path):
    """A loop's `skipped` column of True / False (barlowa124/llm-posttraining's grpo_log.csv) reads as 1 / 0, as a
    JSON true / false does; it is not a non-numeric column left out with a warning."""
    path = tmp_path / "grpo_log.csv"
    path.write_text("step,mean_reward,skipped\n" + "".join(f"{s},{r},{r == 1.0}\n" for s, r in
                                                          zip(range(1, 61), [0.5] * 30 + [1.0] * 30)))
    log = read_log(path)
    assert list(log["skipped"][-3:]) == [1.0, 1.0, 1.0] and log["skipped"][0] == 0.0
    assert not any("non-numeric" in w for w in log.warnings)


def test_a_gzip_compressed_log_is_read_as_its_text(tmp_path):
    """A rotated `metrics.jsonl.gz`: the same log as the plain file; a truncated stream is one error that says so."""
    import gzip

    text = "".join(json.dumps({"step": s, "reward": 0.1 + 0.005 * s}) + "\n" for s in range(1, 41))
    plain, packed = tmp_path / "metrics.jsonl", tmp_path / "metrics.jsonl.gz"
    plain.write_text(text)
    packed.write_bytes(gzip.compress(text.encode()))
    np.testing.assert_array_equal(read_log(str(packed))["reward"], read_log(str(plain))["reward"])
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(packed.read_bytes()[:30])
    with pytest.raises(ConfigError, match=r"is gzip-compressed but cannot be decompressed"):
        read_log(str(cut))


def test_a_console_of_progress_bars_alone_says_no_metrics_were_logged():
    """An Unsloth/TRL nohup log with tqdm bars and no metric line: not "could not recognise", but what is missing."""
    bars = "".join(f"  {i * 100 // 2196}%|▏          | {i}/2196 [01:{i % 60:02d}<60:00, 101.00s/it]\r" for i in range(1, 98))
    with pytest.raises(ConfigError, match=r"^the log holds progress bars \(step 97 of 2196\) but no metric rows"):
        read_log("Loading model...\n" + bars + "\n", format="auto")


def test_a_csv_reward_column_empty_on_every_row_is_named_as_such():
    """`reward` in the header, no value under it: "column 'reward' holds no numbers", not "none of them a reward"."""
    text = "step,reward,entropy\n" + "".join(f"{s},,0.5\n" for s in range(1, 21))
    with pytest.raises(ConfigError, match=r"^no reward series was found \(column 'reward' holds no numbers\)"):
        read_log(text)


@pytest.mark.parametrize("version, expected", [("<0.16", ("<", (0, 16))), (">=0.20", (">=", (0, 20))),
                                               (">=1.2.3", (">=", (1, 2, 3)))])
def test_a_dated_trl_range_parts_into_its_operator_and_release(version, expected):
    from gspo_dynamics.logs import trl_release_bound

    assert trl_release_bound(version) == expected


def test_runs_held_as_objects_of_columns_are_read_as_runs(tmp_path):
    """{"run A": {"steps": [...], "reward": [...]}, ...} (audit s38b R5: flattened into one row of lists, then the map
    the refusal offered was refused): each run's columns are its rows, one run after another, the last read by
    default and --run K another, `steps` its step column."""
    runs = {name: {"steps": list(range(1, 13)), "reward": [offset + 0.05 * i for i in range(12)], "kl": [0.01] * 12,
                   "component_rewards": {"format": [1.0] * 12}} for name, offset in (("a", 0.0), ("b", 0.5))}
    path = tmp_path / "training_curves.json"
    path.write_text(json.dumps(runs))
    log = read_log(path)
    assert (log.n_runs, log.run_index, log.steps.tolist()) == (2, 2, list(range(1, 13)))
    np.testing.assert_allclose(log["reward"], runs["b"]["reward"])
    assert any("the document holds 2 runs as columns ('a', 'b')" in w for w in log.warnings)
    np.testing.assert_allclose(read_log(path, run=1)["reward"], runs["a"]["reward"])


@pytest.mark.parametrize("document", [
    # one run split by train / eval: not two runs (the eval steps would splice into the curve)
    {"train": {"step": list(range(1, 41)), "reward": [0.01 * i for i in range(40)]},
     "eval": {"step": [10, 20, 30, 40], "reward": [0.1, 0.2, 0.3, 0.4]}},
    # grouped by metric, no step: not runs (the reward's and the KL's means would join into one curve)
    {"reward": {"mean": [0.01 * i for i in range(40)], "std": [0.1] * 40}, "kl": {"mean": [0.001] * 40}},
    # runs whose steps do not start again: no boundary the step counter can see
    {"a": {"step": list(range(1, 13)), "reward": [0.1] * 12}, "b": {"step": list(range(13, 25)), "reward": [0.2] * 12}},
])
def test_objects_of_columns_that_are_not_plainly_runs_are_not_read_as_runs(tmp_path, document):
    """The review of audit s38b R5's reader: each of these gave a confident verdict from spliced rows; refused now."""
    path = tmp_path / "curves.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ConfigError):
        read_log(path)


def test_a_grpo_run_after_a_ppo_run_in_one_file_is_read_with_run(tmp_path):
    """The file's runs are judged one by one (review s38: a PPO-with-critic run then a GRPO run was refused whole, even
    with --run 2): the GRPO run reads; the PPO run is refused naming --run."""
    ppo = [{"step": s, "reward": 0.1 * s, "value_loss": 0.3, "policy_loss": 0.1} for s in range(1, 13)]
    grpo = [{"step": s, "reward": 0.2 + 0.03 * s, "reward_std": 0.3, "loss": 0.01} for s in range(1, 13)]
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ppo + grpo))
    log = read_log(path)
    assert (log.n_runs, log.run_index) == (2, 2) and log.n_points("reward") == 12
    with pytest.raises(ConfigError, match=r"^run 1 of 2 in this file is from a run of PPO .*--run K picks another"):
        read_log(path, run=1)


def test_an_agents_episode_transcript_is_no_training_log():
    """`[STEP] {"step": 1, "action": ..., "reward": 0.07, "done": false}` (audit s38b R8: read as three training runs):
    refused; a training log that also logs a `done` count beside its loss is read."""
    steps = "".join(f'[STEP] {{"step": {s}, "action": "nginx -t", "reward": {0.05 + 0.01 * s:.2f}, "done": false, '
                    '"error": null}\n' for s in range(1, 13))
    text = f'[START] {{"task": "nginx", "env": "sysadmin-env"}}\n{steps}[END] {{"success": true, "steps": 12}}\n'
    text = text * 2
    with pytest.raises(ConfigError, match="an agent's steps through an environment episode"):
        read_log(text)
    rows = [{"step": s, "reward": 0.1 * s, "done": 3, "action": 1.0, "loss": 0.2} for s in range(1, 13)]
    assert read_log("\n".join(json.dumps(r) for r in rows)).n_points("reward") == 12


def _rising_csv(n: int = 40) -> str:
    return "step,reward,kl,len\n" + "".join(f"{i},{0.1 + 0.02 * i:.4f},0.01,{100 + i}\n" for i in range(1, n + 1))


def test_a_csv_cut_mid_row_leaves_its_last_row_out_and_says_so(tmp_path):
    """audit s41 #1: a CSV copied while its job wrote it ends `491,0.5,0.` (the cell of 0.4801): that cut cell was a
    reward of 0.0 at the last step, and it flipped "unsure: still rising" into a confident plateau. A last row without
    a line end is left out, wherever the cut falls (review s42: a cut in the last cell keeps the row's cell count),
    and the log line says so."""
    for cut in ("41,0.", "41,0.92,0.01,1"):  # a cell short, or every cell there with the last one cut
        path = tmp_path / "metrics.csv"
        path.write_text(_rising_csv() + cut)
        log = read_log(path)
        assert log.steps.tolist() == list(range(1, 41)) and log["reward"].min() > 0.1
        assert log.set_aside == ("the last row, cut mid-write, not read",)
        assert any("has no line end" in w for w in log.warnings)


def test_a_csvs_short_row_with_its_line_end_is_read_as_ragged_not_cut(tmp_path):
    """A row with fewer cells than the header that ends its line was written so: read (with the ragged-row warning),
    not set aside."""
    path = tmp_path / "metrics.csv"
    path.write_text(_rising_csv() + "41,0.95\n42,0.96,0.01,142\n")
    log = read_log(path)
    assert log.steps.tolist()[-2:] == [41, 42] and log.set_aside == ()
    assert any("different number of cells" in w for w in log.warnings)


def test_a_console_log_cut_mid_line_leaves_its_last_row_out(tmp_path):
    """The same for printed `key=value` rows: a last row without a line end (`step 41: reward=0.` of `reward=0.92
    kl=0.01`, or one cut in its last value) is not read; with its line end it is."""
    lines = "".join(f"step {i}: reward={0.1 + 0.02 * i:.3f} kl=0.01\n" for i in range(1, 41))
    for cut in ("step 41: reward=0.", "step 41: reward=0.920 kl=0.0"):
        path = tmp_path / "cut.log"
        path.write_text(lines + cut)
        log = read_log(path)
        assert log.steps.tolist() == list(range(1, 41)) and log.set_aside == ("the last line, cut mid-write, not read",)
    whole = tmp_path / "whole.log"
    whole.write_text(lines + "step 41: reward=0.920 kl=0.01\n")
    log = read_log(whole)
    assert log.steps.tolist()[-1] == 41 and log["reward"][-1] == pytest.approx(0.92) and log.set_aside == ()
