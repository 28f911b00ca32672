"""Files that are not training logs (per-question records, evaluation results, a dataset) are refused by `read_log`
with what would read them, instead of row numbers read as steps and a per-item score as the reward."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gspo_dynamics import ConfigError
from gspo_dynamics.cli.main import main
from gspo_dynamics.logs import read_log
from gspo_dynamics.logs._algorithms import untrained_rows

RNG = np.random.default_rng(0)
N = 30
# the shape of a per-question comparison (UnitedSnakes/rlvr_behavior_probe_runpod's per_question.csv)
PER_QUESTION = "qid,question,gold,c_sft,c_rl,k,delta_correct\n" + "".join(
    f'{i},"What is {i} + {i}?",{2 * i},{a},{b},8,{b - a}\n'
    for i, (a, b) in enumerate(zip(RNG.integers(0, 9, N), RNG.integers(0, 9, N)))
)


def _jsonl(rows) -> str:
    return "\n".join(json.dumps(r) for r in rows) + "\n"


def test_per_question_records_are_refused_with_the_map_that_reads_them():
    with pytest.raises(ConfigError, match="does not read as a training log") as error:
        read_log(PER_QUESTION)
    assert 'column_map={"reward": "delta_correct"}' in str(error.value)
    # naming the reward column says the rows are steps: then they are read as such
    assert read_log(PER_QUESTION, column_map={"reward": "delta_correct"}).n_points("reward") == N
    assert read_log(PER_QUESTION, logging_steps=1).n_points("reward") == N


def test_evaluation_records_with_a_reward_by_name_are_refused():
    rows = [{"sample_idx": i, "reward": float(RNG.random()), "judge_success": int(RNG.random() > 0.5)}
            for i in range(N)]
    with pytest.raises(ConfigError, match="does not read as a training log"):
        read_log(_jsonl(rows))


@pytest.mark.parametrize("reading", ["loss", "grad_norm", "learning_rate", "kl", "entropy", "clip_ratio",
                                     "frac_reward_zero_std", "epoch"])
def test_rows_with_any_training_reading_or_a_step_are_read(reading):
    rows = [{"reward": 0.01 * i, reading: 0.1 + 0.01 * i} for i in range(N)]
    assert read_log(_jsonl(rows)).n_points("reward") == N
    stepped = [{"step": i + 1, "reward": 0.01 * i, "qid": i} for i in range(N)]
    assert read_log(_jsonl(stepped)).n_points("reward") == N


def test_untrained_rows_reads_training_keys_not_evaluation_keys():
    assert untrained_rows({"reward", "eval_loss", "val/entropy", "qid"})
    assert not untrained_rows({"reward", "train/loss"})
    assert not untrained_rows({"rewards_avg", "kl_avg"})


def test_cli_refuses_in_one_line_naming_the_map(tmp_path, capsys):
    path = tmp_path / "per_question.csv"
    path.write_text(PER_QUESTION)
    assert main(["diagnose", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "does not read as a training log" in err and "--map reward=delta_correct" in err
