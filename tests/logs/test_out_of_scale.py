"""A reward value no reward function gives (1e30 on a [0, 1] reward): `logs._out_of_scale` against a loop over
the values, and what the reader, diagnose and predict make of one (a row that is not a number, not the run's peak)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gspo_dynamics.diagnose import diagnose
from gspo_dynamics.logs import read_log
from gspo_dynamics.logs._out_of_scale import MIN_VALUES, OUT_OF_SCALE, out_of_scale
from gspo_dynamics.predict import pilot_forecast, read_run_config


def _loop(values):
    """The module docstring's rule, value by value."""
    finite = [v for v in values if np.isfinite(v)]
    if len(finite) < MIN_VALUES:
        return [False] * len(values)
    lo, hi = np.quantile(finite, 0.05), np.quantile(finite, 0.95)
    scale = max(abs(lo), abs(hi), hi - lo)
    return [bool(scale > 0 and np.isfinite(v) and abs(v) > OUT_OF_SCALE * scale) for v in values]


@pytest.mark.parametrize("seed", range(6))
def test_out_of_scale_matches_the_rule_value_by_value(seed):
    rng = np.random.default_rng(seed)
    values = rng.normal(0.5, 0.2, 60)
    values[rng.choice(60, 2, replace=False)] = rng.choice([1e30, -1e12, 3e7, 5.0])
    values[rng.integers(60)] = np.nan
    assert out_of_scale(values).tolist() == _loop(values.tolist())


def test_what_is_no_out_of_scale_value():
    sparse = np.zeros(100)
    sparse[[3, 50]] = 1.0  # a rare success: no scale to be out of
    assert not out_of_scale(sparse).any()
    short = np.r_[np.full(MIN_VALUES - 2, 0.5), 1e30]  # too few values to measure a scale by
    assert not out_of_scale(short).any()
    wide = np.linspace(-100.0, 100.0, 50)
    wide[10] = 5e7  # 2.5e5 times a scale of 200: within the rule's reach
    assert not out_of_scale(wide).any()


def _write(path, rewards, **other):
    rows = [{"step": i + 1, "reward": r, **{k: v[i] for k, v in other.items()}} for i, r in enumerate(rewards)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def _rising(n=120, seed=0):
    rng = np.random.default_rng(seed)
    return (0.2 + 0.6 * (1 - np.exp(-np.arange(n) / 30)) + rng.normal(0, 0.03, n)).tolist()


def test_the_reader_reads_1e30_as_not_a_number_and_says_so(tmp_path):
    rewards = _rising()
    rewards[60] = 1e30
    grad = [1.0] * 120
    grad[70] = 1e30  # a gradient norm may grow a million-fold: a reading, kept
    log = read_log(_write(tmp_path / "m.jsonl", rewards, grad_norm=grad))
    assert np.isposinf(log["reward"][60]) and log.logged_non_finite["reward"][60]
    assert log.logged_non_finite["reward"].sum() == 1
    assert log["grad_norm"][70] == 1e30
    assert log.set_aside == ("reward 1e+30 at step 61 read as not a number (out of scale)",)
    assert any("reward 1e+30 at step 61: over 1e+06 times the rest's scale" in w for w in log.warnings)


def test_diagnose_reads_one_bad_reward_row_as_the_reward_function_not_a_divergence(tmp_path):
    """1e30 (or inf) on one row of a rising run: no peak of 1e28 and no fall, a warning naming the step; the rows
    after it are finite, so the updates were numbers."""
    for bad in (1e30, float("inf")):
        rewards = _rising()
        rewards[60] = bad
        d = diagnose(read_log(_write(tmp_path / "m.jsonl", rewards)))
        assert d.primary != "dynamical_instability"
        (f,) = [f for f in d.findings if f.name == "non_finite"]
        assert f.severity == "warning" and "at step 61 only" in f.summary and "not a diverged update" in f.summary
        assert "reward function" in f.advice[0]
        assert d.fit is not None and d.fit.params["r_inf"] < 2 and d.fit.n == 119


def test_a_non_finite_update_reading_beside_the_reward_still_invalidates(tmp_path):
    rewards, loss = _rising(), [0.1] * 120
    rewards[60] = loss[60] = float("nan")
    d = diagnose(read_log(_write(tmp_path / "m.jsonl", rewards, loss=loss)))
    (f,) = [f for f in d.findings if f.name == "non_finite"]
    assert f.severity == "invalidates" and "from step 61" in f.summary


def test_predict_says_first_that_a_pilot_row_was_not_read(tmp_path):
    rewards = _rising(60)
    rewards[30] = 1e30
    config = read_run_config({"learning_rate": 1e-5, "num_generations": 8, "max_steps": 200})
    f = pilot_forecast(config, _write(tmp_path / "m.jsonl", rewards), pilot_steps=40)
    assert f.brief_lines() == ["pilot rows not read: the pilot's reward is not a number at step 31: the pilot is read "
                               "without it; look at the reward function on that step's batch (gspo-dynamics diagnose "
                               "on the pilot says more)"]
    assert f.to_json()["rows_not_read"] == f.unread
    assert f.fall is None or not f.fall.lost
