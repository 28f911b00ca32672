"""Reward hacking is the training reward rising for the wrong reason: evidence that rests on a change of the reward's
make-up (longer completions, one reward function carrying the gain) counts only beside a rise, and a component's
fall counts only where it matters to the reward (a new user's audit: 'reward hacking (0.59)' on a length grown 2.18x
while the reward did not move, Welch z 1.35). Logs made here."""

from __future__ import annotations

import numpy as np
import pytest

from gspo_dynamics.diagnose import diagnose
from gspo_dynamics.logs import RunLog

N = 120


def make_log(reward, **series) -> RunLog:
    data = {"reward": np.asarray(reward, float), **{k: np.asarray(v, float) for k, v in series.items()}}
    return RunLog(steps=np.arange(1, len(reward) + 1, dtype=np.int64), series=data, format="jsonl",
                  source="<synthetic>", trainer="trl")


def _length(seed: int) -> np.ndarray:
    """Completions growing 200 -> ~520 tokens (2.6x), with row noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(N)
    return 200 + 320 * t / (N - 1) + rng.normal(0, 10, N)


def test_length_growth_beside_a_flat_reward_is_a_warning_not_hacking():
    """Not hacking (the reward did not rise), and not hidden in a note either (audit s39 D3): a `length_growth`
    warning in the first lines, said once."""
    rng = np.random.default_rng(3)
    flat = 0.5 + rng.normal(0, 0.05, N)
    d = diagnose(make_log(flat, mean_length=_length(3)))
    assert d.verdict("reward_hacking") is None
    found = next(f for f in d.findings if f.name == "length_growth")
    assert found.severity == "warning" and "did not move significantly" in found.summary
    early, late = found.evidence[0]["early"], found.evidence[0]["late"]
    assert f"grew from {early:.0f} to {late:.0f} tokens" in found.summary and late > 2 * early and found.advice
    assert not any(n.startswith("the mean completion length grew") for n in d.notes)


def test_a_length_that_grew_beside_a_fall_or_a_rise_is_no_length_growth_warning():
    """Beside a significant fall the growth is the collapse's symptom (a note), beside a rise hacking's evidence."""
    rng = np.random.default_rng(5)
    t = np.arange(N)
    falling = 0.8 - 0.5 * t / (N - 1) + rng.normal(0, 0.03, N)
    rising = 0.2 + 0.6 * (1 - np.exp(-t / 40)) + rng.normal(0, 0.03, N)
    for reward in (falling, rising):
        assert all(f.name != "length_growth" for f in diagnose(make_log(reward, mean_length=_length(5))).findings)


def test_length_growth_beside_a_significant_rise_is_hacking_evidence():
    rng = np.random.default_rng(4)
    t = np.arange(N)
    rising = 0.2 + 0.6 * (1 - np.exp(-t / 40)) + rng.normal(0, 0.03, N)
    d = diagnose(make_log(rising, mean_length=_length(4)))
    hack = d.verdict("reward_hacking")
    assert hack is not None and hack.confidence >= 0.5
    item = next(e for e in hack.evidence if e["signal"] == "mean completion length late / early")
    assert item["holds"] and item["welch_z"] >= 3


def _components(fall: float, seed: int = 5) -> dict:
    """reward/a rising 0.2 -> 0.9 (Welch z far past 3), reward/b falling by `fall` over the log around 0.5 with a
    +-0.05 alternation (Welch z ~ -57 x fall), the reward their sum."""
    rng = np.random.default_rng(seed)
    t = np.arange(N)
    a = 0.2 + 0.7 * t / (N - 1) + rng.normal(0, 0.01, N)
    b = 0.5 - fall * t / (N - 1) + np.tile([0.05, -0.05], N // 2)
    return {"reward": a + b, "reward/a": a, "reward/b": b}


def _hacking(series: dict):
    from gspo_dynamics.diagnose._findings import reward_function_divergence
    from gspo_dynamics.diagnose._hacking import hacking
    from gspo_dynamics.diagnose._trend_stats import change

    log = make_log(series.pop("reward"), **series)
    return hacking(log, change(log.steps, log["reward"]), [], reward_function_divergence(log))[0], log


def test_one_constant_says_when_a_component_fell():
    """Both hacking rules (a component carrying the gain, the reward functions' divergence) read a fall at
    COMPONENT_FALL_Z = Z_TREND: a z of -2.5 is no fall for either (the component rule counted it at -2), -5 is."""
    from gspo_dynamics.diagnose._hacking import COMPONENT_FALL_Z
    from gspo_dynamics.diagnose._trend_stats import Z_TREND, change

    assert COMPONENT_FALL_Z == Z_TREND
    verdict, log = _hacking(_components(fall=0.044))
    assert -3 < change(log.steps, log["reward/b"])["z"] < -2
    assert verdict is None or verdict.confidence < 0.5
    verdict, log = _hacking(_components(fall=0.1))
    assert change(log.steps, log["reward/b"])["z"] < -4
    assert verdict is not None and verdict.confidence > 0.5


def _penalty_run(fall: float, seed: int = 6) -> dict:
    """A task reward rising 0.5 -> 0.9 beside an overlong penalty that falls from -0.003 by `fall` (significantly:
    its rows are precise), the reward their sum (the shape of a fresh schema-linking run: -0.003 -> -0.009 beside a
    reward up 0.3 read as an exploit)."""
    rng = np.random.default_rng(seed)
    t = np.arange(N)
    task = 0.5 + 0.4 * t / (N - 1) + rng.normal(0, 0.02, N)
    penalty = -0.003 - fall * t / (N - 1) + rng.normal(0, 0.0005, N)
    return {"reward": task + penalty, "reward/task": task, "reward/overlong_penalty": penalty}


def test_a_fall_too_small_to_matter_to_the_reward_is_no_exploit():
    """Both falls are significant (z far below -3) and the divergence finding fires on both; only the one of at least
    FALL_SHARE of the reward's rise is exploit evidence."""
    from gspo_dynamics.diagnose._hacking import FALL_SHARE

    small, log = _hacking(_penalty_run(fall=0.008))  # ~2% of the reward's rise
    item = next(e for e in small.evidence if e["signal"].endswith("fall / the reward's rise")) if small else None
    assert small is None or small.confidence < 0.5
    assert item is None or (item["value"] < FALL_SHARE and item["caveat"])
    big, log = _hacking(_penalty_run(fall=0.12))  # ~40% of it
    assert big is not None and big.confidence > 0.5
    item = next(e for e in big.evidence if e["signal"].endswith("fall / the reward's rise"))
    assert item["holds"] and item["value"] >= FALL_SHARE and item["reward_rise"] > 0
    d = diagnose(make_log(**_penalty_run(fall=0.008)))
    assert d.verdict("reward_hacking") is None
    assert any(f.name == "reward_function_divergence" for f in d.findings)  # the finding stays: the function lags


def test_a_gain_spread_over_several_reward_functions_is_no_exploit_of_one():
    """Three functions rising together (unit tests, compile checks, similarity) beside a penalty falling by a quarter of
    the reward's rise: the run learns, and no one function carries the gain (the riser's share of the rising ones'
    gains under DOMINANT_SHARE), so no hacking verdict, and the finding (a note) does not say "alone"; one riser with
    the same fall is the exploit's pattern, as before."""
    from gspo_dynamics.diagnose._finding import NOTE
    from gspo_dynamics.diagnose._findings import DOMINANT_SHARE, reward_function_divergence

    rng = np.random.default_rng(7)
    t = np.arange(N)
    rise = t / (N - 1)
    spread = {"reward/unit_test": 0.45 + 0.17 * rise, "reward/compile_check": 0.43 + 0.23 * rise,
              "reward/similarity": 0.02 + 0.14 * rise, "reward/penalty": -0.17 - 0.12 * rise}
    spread = {k: v + rng.normal(0, 0.01, N) for k, v in spread.items()}
    spread["reward"] = sum(spread.values())
    verdict, log = _hacking(dict(spread))
    assert verdict is None or verdict.confidence < 0.5
    found = reward_function_divergence(log)
    assert found.severity == NOTE and "alone" not in found.summary and "spread over them" in found.summary
    assert DOMINANT_SHARE == 0.9
    d = diagnose(make_log(**spread))
    assert d.verdict("reward_hacking") is None and d.primary != "reward_hacking"
    one = {k: v for k, v in spread.items() if k in ("reward/unit_test", "reward/penalty")}
    one["reward"] = one["reward/unit_test"] + one["reward/penalty"]
    verdict, log = _hacking(one)
    assert verdict is not None and verdict.confidence > 0.5 and "alone" in reward_function_divergence(log).summary


def test_a_rise_the_windows_miss_is_not_called_no_rise_beside_longer_answers():
    """A rise done in the first rows (read by the level-shift test) is a rise: no note that the reward "did not rise
    significantly" beside the completions' growth, and no length_growth warning (review s39: both contradicted the
    verdict's rise on a real run)."""
    rng = np.random.default_rng(0)
    n = 300
    reward = np.where(np.arange(n) < 20, 2.8, 4.5) + rng.normal(0, 1.4, n)
    length = 130 + 170 * np.arange(n) / (n - 1) + rng.normal(0, 10, n)
    d = diagnose(make_log(reward, mean_length=length))
    assert not any("did not rise significantly" in note for note in d.notes)
    assert all(f.name != "length_growth" for f in d.findings)


def test_a_growth_done_inside_the_first_quarter_is_read_from_the_runs_first_tenth():
    """Completions 200 -> 700 tokens (3.5x), most of it in the run's first third, the reward flat: the early
    quarter's mean already holds much of the growth (quarter to quarter ~1.7x), so the growth is read from the first
    tenth (~2.3x), and said from there; a run whose length grows 1.3x is no growth either way."""
    rng = np.random.default_rng(5)
    t = np.arange(N) / N
    flat = 0.5 + rng.normal(0, 0.05, N)
    fast = 200 + 500 * (1 - np.exp(-t / 0.2)) + rng.normal(0, 10, N)
    found = next(f for f in diagnose(make_log(flat, mean_length=fast)).findings if f.name == "length_growth")
    first_tenth = float(np.mean(fast[:12]))
    assert abs(found.evidence[0]["early"] - first_tenth) < 1e-9 and found.evidence[0]["value"] > 2
    mild = 400 * (1 + 0.3 * t) + rng.normal(0, 10, N)
    assert all(f.name != "length_growth" for f in diagnose(make_log(flat, mean_length=mild)).findings)


def test_a_growth_read_from_the_first_tenth_beside_a_reward_that_rose_from_there_is_no_length_growth():
    """Read from the first tenth, the reward's change is read from there too (review s40: a reward that rose early,
    0.3 -> 0.5 in row noise 0.12, flat quarter to quarter, got 'did not move significantly' beside a healthy
    saturation headline, the lengths 150 -> 750 over the same rows)."""
    rng = np.random.default_rng(24)
    rise = 1 - np.exp(-np.arange(N) / N / 0.1)
    reward, lengths = 0.3 + 0.2 * rise + rng.normal(0, 0.12, N), 150 + 600 * rise + rng.normal(0, 15, N)
    assert all(f.name != "length_growth" for f in diagnose(make_log(reward, mean_length=lengths)).findings)


@pytest.mark.parametrize("paying, found", [(1, True), (2, True), (3, True), (20, False)])
def test_a_task_function_paying_on_a_few_rows_beside_a_format_rise_lags(paying, found):
    """Review s42: the laggard rule (z <= 1) caught one paying row of the task's function among zeros beside a format
    reward's rise 0 -> 0.9, but not two (z 1.44): a rise short of significance and under a tenth of the riser's is a
    laggard too, said by its share. A task function that pays on most late rows rose: no laggard."""
    from gspo_dynamics.diagnose._findings import DOMINANT_SHARE, Z_RISE, reward_function_divergence
    from gspo_dynamics.diagnose._trend_stats import change

    n = 54
    t = np.arange(n, dtype=float)
    fmt = np.clip(0.9 * t / n + np.random.default_rng(2).normal(0, 0.03, n), 0, 1)
    task = np.zeros(n)
    task[n - 2 * paying:: 2] = 0.016 if paying <= 3 else 0.5
    log = make_log(fmt + task, **{"reward/format_reward": fmt, "reward/equation_reward": task})
    f = reward_function_divergence(log)
    g, h = change(log.steps, fmt), change(log.steps, task)
    if found:
        assert h["z"] < Z_RISE and h["diff"] <= (1 - DOMINANT_SHARE) * g["diff"]  # by hand: short and a small share
        assert f is not None and "the gain is format_reward's alone" in f.summary
    else:
        assert f is None or "alone" not in f.summary
