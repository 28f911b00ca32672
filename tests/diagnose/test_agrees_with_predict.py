"""diagnose and predict on the same log do not contradict each other on stable against unstable (issue 48).

Every log the tests make is read once and answered twice: by `diagnose` and by `predict`'s pilot reading of it
(`pilot_forecast` + `pilot_headline`, what `predict --config C --pilot LOG` prints first), under a TRL config of
the run's own settings where the log comes with them (the simulator corpus), else a plain TRL config (its
settings change predict's margins, never whether the pilot kept its reward). The logs: the simulator corpus,
every mode (`gspo_dynamics.sim.corpus`, tests/corpus), TRL `trainer_state.json` logs written with the readers'
fixtures (tests/logs/_log_fixtures.py) for reward curves that saturate, stay flat, climb, swing (a cycle of many
rows, an alternation of rows, a growing swing) and crash, and the shared real logs (skipped where absent).

Unstable, for diagnose: its primary verdict is dynamical instability. For predict: its verdict is "unsafe". They
contradict each other when diagnose answers unstable and predict "safe", or predict "unsafe" and diagnose a sure
healthy saturation or still rising (an answer unsure between them says it cannot tell).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from gspo_dynamics.diagnose import diagnose
from gspo_dynamics.logs import read_log
from gspo_dynamics.predict import pilot_forecast, pilot_headline, read_run_config
from gspo_dynamics.real_logs import real_log_files

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "logs"))
from _log_fixtures import grpo_row, trainer_state  # noqa: E402

PLAIN_CONFIG = {"learning_rate": 1e-6, "num_generations": 8}  # a TRL GRPOConfig's two keys that every run sets
HEALTHY = ("healthy_saturation", "still_rising")
STEPS = np.arange(1, 201)


def _curves() -> dict[str, np.ndarray]:
    """Reward curves in [0, 1] over 200 logged steps, each with its own noise (seeded)."""
    rng = np.random.default_rng(48)
    t = STEPS.astype(float)
    return {
        "saturating": 0.2 + 0.6 * (1 - np.exp(-t / 30)) + rng.normal(0, 0.03, t.size),
        "flat": 0.4 + rng.normal(0, 0.03, t.size),
        "linear": 0.1 + 0.004 * t + rng.normal(0, 0.03, t.size),
        "noisy": 0.4 + 0.0005 * t + rng.normal(0, 0.2, t.size),
        "cycle": 0.5 + 0.3 * np.sin(2 * np.pi * t / 16) + rng.normal(0, 0.03, t.size),
        "alternating": 0.5 + 0.2 * (-1.0) ** t + rng.normal(0, 0.02, t.size),
        "growing_swing": 0.5 + 0.02 * np.exp(t / 50) * np.sin(2 * np.pi * t / 20) + rng.normal(0, 0.01, t.size),
        "crash": np.where(t < 100, 0.2 + 0.6 * (1 - np.exp(-t / 20)), 0.05) + rng.normal(0, 0.02, t.size),
    }


@pytest.fixture(scope="module")
def fixture_logs(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("agree")
    paths = {}
    for name, reward in _curves().items():
        paths[name] = out / f"{name}.json"
        paths[name].write_text(trainer_state([grpo_row(int(s), float(r)) for s, r in zip(STEPS, np.clip(reward, 0, 1))]))
    return paths


@pytest.fixture(scope="module")
def corpus_logs(tmp_path_factory) -> list[tuple[Path, dict]]:
    from gspo_dynamics.sim.corpus import generate_corpus

    out = tmp_path_factory.mktemp("corpus")
    return [(e.path, {"learning_rate": e.hparams.lr, "num_generations": e.hparams.group_size, "beta": e.hparams.kl_coef})
            for e in generate_corpus(out, seeds=2)]


def _answers(path: Path, config: dict) -> tuple[object, str, str]:
    """(the diagnosis, predict's verdict, its reason) for one log."""
    log = read_log(str(path))
    headline = pilot_headline(pilot_forecast(read_run_config(config), log))
    return diagnose(log), headline.verdict, headline.reason


def _contradiction(d, verdict: str) -> str | None:
    if d.primary == "dynamical_instability" and verdict == "safe":
        return "diagnose: dynamical instability, predict: safe"
    if verdict == "unsafe" and d.primary in HEALTHY and not d.unsure:
        return f"predict: unsafe, diagnose: {d.primary.replace('_', ' ')}"
    return None


@pytest.mark.parametrize("name", list(_curves()))
def test_diagnose_and_predict_agree_on_the_fixture_logs(fixture_logs, name):
    d, verdict, reason = _answers(fixture_logs[name], PLAIN_CONFIG)
    assert _contradiction(d, verdict) is None, f"{name}: {_contradiction(d, verdict)} ({reason})"


def test_the_fixture_logs_include_both_answers(fixture_logs):
    # the agreement is not vacuous: both sides call some of these logs unstable, and some stable
    answers = {name: _answers(path, PLAIN_CONFIG) for name, path in fixture_logs.items()}
    assert {"crash", "cycle"} <= {n for n, (d, _, _) in answers.items() if d.primary == "dynamical_instability"}
    assert answers["crash"][1] == "unsafe" and answers["saturating"][1] == "safe"
    assert answers["saturating"][0].primary in HEALTHY


def test_diagnose_and_predict_agree_on_the_simulator_corpus(corpus_logs):
    found = []
    for path, config in corpus_logs:
        d, verdict, reason = _answers(path, config)
        why = _contradiction(d, verdict)
        if why:
            found.append(f"{path.parent.name}: {why} ({reason})")
    assert not found, "; ".join(found)


@pytest.mark.real_logs
def test_diagnose_and_predict_agree_on_the_shared_real_logs(real_logs):
    from gspo_dynamics import ConfigError

    found, answered = [], 0
    for path in real_log_files(real_logs):
        try:
            d, verdict, reason = _answers(path, PLAIN_CONFIG)
        except ConfigError:  # refused or too short for a pilot: nothing to contradict
            continue
        answered += 1
        why = _contradiction(d, verdict)
        if why:
            found.append(f"{path.name}: {why} ({reason})")
    assert answered >= 4 and not found, "; ".join(found)
