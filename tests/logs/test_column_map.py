"""Column maps {name: column}: reading custom logs, and one validation for every spelling."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _log_fixtures import event_file

from gspo_dynamics import ConfigError
from gspo_dynamics.logs import read_log, read_log_history
from gspo_dynamics.logs._columns import ColumnMapError, check_column_map, no_reward_error, parse_map_option

REWARDS = [0.1, 0.2, 0.4, 0.5, 0.6, 0.65, 0.7, 0.72, 0.73, 0.74]
KL = [0.01 * i for i in range(len(REWARDS))]


def custom_csv(reward_column: str, step_column: str = "step") -> str:
    lines = [f"{step_column},{reward_column},my_kl"]
    lines += [f"{10 * (i + 1)},{r},{k}" for i, (r, k) in enumerate(zip(REWARDS, KL))]
    return "\n".join(lines) + "\n"


def custom_jsonl(reward_column: str, step_column: str = "step") -> str:
    rows = [{step_column: 10 * (i + 1), reward_column: r, "my_kl": k}
            for i, (r, k) in enumerate(zip(REWARDS, KL))]
    return "\n".join(json.dumps(row) for row in rows) + "\n"


@pytest.mark.parametrize("write", [custom_csv, custom_jsonl])
def test_a_common_custom_name_reads_without_a_map(write):
    log = read_log(write("reward_mean"))
    np.testing.assert_array_equal(log["reward"], REWARDS)
    np.testing.assert_array_equal(log.steps, 10 * np.arange(1, 11))


@pytest.mark.parametrize("write", [custom_csv, custom_jsonl])
def test_an_unusual_name_is_refused_with_a_map_hint_and_read_with_the_map(write):
    with pytest.raises(ColumnMapError) as error:
        read_log(write("goodness"))
    assert "'goodness'" in str(error.value)  # the columns are listed
    assert 'column_map={"reward": "COLUMN"}' in str(error.value) and "--map" not in str(error.value)
    assert "--map reward=COLUMN" in error.value.render(cli=True)
    log = read_log(write("goodness"), column_map={"reward": "goodness", "kl_ref": "my_kl"})
    np.testing.assert_array_equal(log["reward"], REWARDS)
    np.testing.assert_array_equal(log["kl_ref"], KL)
    assert "goodness" not in log.names and "my_kl" not in log.names


@pytest.mark.parametrize("write", [custom_csv, custom_jsonl])
def test_the_step_column_can_be_mapped_and_must_exist(write):
    log = read_log(write("reward", step_column="iteration"), column_map={"step": "iteration"})
    np.testing.assert_array_equal(log.steps, 10 * np.arange(1, 11))
    with pytest.raises(ColumnMapError, match="no column 'iter'.*'iteration'"):
        read_log(write("reward", step_column="iteration"), column_map={"step": "iter"})


def test_the_step_of_tensorboard_cannot_be_mapped():
    data = event_file([(i, "train/reward", r) for i, r in enumerate(REWARDS)])
    with pytest.raises(ColumnMapError, match="part of its format"):
        read_log(data, column_map={"step": "iter"})


def test_a_mapped_column_wins_over_the_canonical_one():
    text = "step,reward,score\n" + "".join(f"{i},{r},{1 - r}\n" for i, r in enumerate(REWARDS))
    log = read_log(text, column_map={"reward": "score"})
    np.testing.assert_allclose(log["reward"], [1 - r for r in REWARDS])
    np.testing.assert_array_equal(log["unmapped/reward"], REWARDS)
    assert any("'unmapped/reward'" in w for w in log.warnings)


def test_a_mapped_reward_column_without_numbers_is_named():
    text = "step,score\n" + "".join(f"{i},n/a\n" for i in range(10))
    with pytest.raises(ColumnMapError, match='column_map={"reward": "score"}: that column holds no numbers'):
        read_log(text, column_map={"reward": "score"})


@pytest.mark.parametrize(
    ("column_map", "message"),
    [
        ({"nonsense": "x"}, r'column_map=\{"nonsense": "x"\}: .*expected one of step, reward, '),
        ({"my_reward": "reward"}, r'did you mean column_map=\{"reward": "my_reward"\}\?'),
        ({"reward": ""}, "the column name is empty"),
        ({"reward": "a", "kl_ref": "a"}, "column 'a' is mapped to both 'reward' and 'kl_ref'"),
        ({"reward": 3}, "column_map must be a dict"),
        ([("reward", "a")], "column_map must be a dict"),
        ({"reward": "nope"}, r"no column 'nope'; its columns are 'goodness'"),
    ],
)
def test_bad_maps_are_one_sentence_errors_in_every_api(column_map, message):
    for read in (lambda m: read_log(custom_csv("goodness"), column_map=m),
                 lambda m: read_log_history([{"step": 1, "goodness": 0.5}], column_map=m)):
        with pytest.raises(ConfigError, match=message) as error:
            read(column_map)
        assert "\n" not in str(error.value)


def test_a_missing_column_error_shows_close_names_first():
    columns = [f"metric_{i}" for i in range(30)] + ["reward_avg_smoothed"]
    text = ",".join(["step", *columns]) + "\n" + ",".join(["1"] + ["0.5"] * len(columns)) + "\n"
    with pytest.raises(ColumnMapError) as error:
        read_log(text, column_map={"reward": "reward_avg_smooth"})
    assert "its columns are 'reward_avg_smoothed'" in str(error.value)
    assert "(31 in all)" in str(error.value)


@pytest.mark.parametrize(
    "items",
    [["reward=r,kl_ref=k,step=it"], ["reward=r", "kl_ref=k", "step=it"], [" reward = r , kl_ref=k", "step=it"],
     ["reward=r", "reward=r,kl_ref=k,step=it"]],
)
def test_map_option_spellings_give_one_map(items):
    assert parse_map_option(items) == {"reward": "r", "kl_ref": "k", "step": "it"}


@pytest.mark.parametrize(
    ("items", "message"),
    [
        (["reward"], "'reward' is not NAME=COLUMN"),
        (["=x"], "'=x' is not NAME=COLUMN"),
        (["reward="], "'reward=' is not NAME=COLUMN"),
        (["reward=a,"], "'reward=a,' is not NAME=COLUMN"),
        (["reward=a", "reward=b"], "gives 'reward' twice"),
    ],
)
def test_bad_map_option_syntax(items, message):
    with pytest.raises(ConfigError, match=message):
        parse_map_option(items)


def test_the_option_and_the_dict_share_one_validation():
    with pytest.raises(ColumnMapError) as error:
        check_column_map(parse_map_option(["nonsense=x"]))
    assert error.value.render(cli=True).startswith("--map nonsense=x: 'nonsense' is not a name")
    with pytest.raises(ColumnMapError) as error:
        check_column_map(parse_map_option(["reward=my col"]) | {"bad name": "y"})
    assert error.value.render(cli=True).startswith("--map 'bad name=y'")  # quoted for a shell


@pytest.mark.parametrize("column, held", [("Loss", "the loss"), ("train_mean_nll", "a loss"), ("test/ppl", "a loss"),
                                          ("grad_norm", "the grad norm"), ("actor/entropy", "the entropy")])
def test_a_reward_mapped_to_a_column_named_as_no_reward_is_refused(column, held):
    """A loss, an NLL, the grad norm... mapped as the reward would be read upside down or as no signal: refused in
    one sentence, in both spellings; a column that merely contains such letters is not ("lossless_score")."""
    with pytest.raises(ColumnMapError) as error:
        check_column_map({"reward": column})
    assert f"{column!r} is named as {held}, not a reward" in str(error.value)
    assert error.value.render(cli=True).startswith(f"--map reward={column}:")
    assert check_column_map({"reward": "lossless_score"}) == {"reward": "lossless_score"}
    assert check_column_map({"kl_ref": "my_kl", "reward": "goodness"}) == {"kl_ref": "my_kl", "reward": "goodness"}


def test_a_log_of_only_a_steps_readings_says_none_is_a_reward():
    """A log whose every column is a training reading (a GRPO console log of its loss alone) does not invite
    mapping the loss as the reward; one with any other column still names the map."""
    message = no_reward_error(["Loss"]).render(cli=True)
    assert "the log's columns, 'Loss', are a training step's readings, none of them a reward" in message
    assert "--map" not in message
    assert "--map reward=COLUMN" in no_reward_error(["Loss", "goodness"]).render(cli=True)


def test_a_log_whose_only_accuracies_are_evaluations_says_so_and_the_map_of_one_is_refused_plainly():
    """audit s41 #3 (aigoncharov/trainer_state_viz): an SFT-like trainer_state.json with `eval_g<k>_accuracy` rows
    beside loss, grad norm and learning rate. The refusal said "COLUMN one of the log's columns" with the evaluation
    columns among them, and the map of one then said it "holds no numbers" (it holds 31): a dead end. Now the refusal
    says the training rows hold no reward and the evaluation columns are read apart, and the map says why."""
    rows = [{"epoch": 0, "step": s, "loss": 1.0 / s, "grad_norm": 0.5, "learning_rate": 1e-5} for s in range(1, 31)]
    rows += [{"epoch": 0, "step": s, "eval_g0_accuracy": 0.5 + s / 100, "eval_g0_loss": 2.0} for s in range(5, 31, 5)]
    history = {"log_history": rows}
    with pytest.raises(ColumnMapError, match=r"none of them a reward, and its 2 evaluation column\(s\) "
                                             r"\('eval_g0_accuracy', 'eval_g0_loss'\) are read apart"):
        read_log(json.dumps(history))
    with pytest.raises(ColumnMapError, match="that column is an evaluation reading, read apart from the training"):
        read_log(json.dumps(history), column_map={"reward": "eval_g0_accuracy"})


def test_a_reward_column_of_text_is_not_offered_as_the_column_to_map():
    """Audit s43u D12: `reward` holding words ("good", "bad") was named as holding no numbers and then offered again
    among the columns to map (`--map reward=COLUMN, COLUMN one of ... 'reward'`)."""
    said = str(no_reward_error(["step", "reward", "loss"]))
    assert "(column 'reward' holds no numbers)" in said and "'reward'" not in said.split("holds no numbers)", 1)[1]
