"""A rise short of significance that the data favour over no change is "unsure: still rising or stalled" (issue 50).

`_trend._rise_or_stall`: where the data could have seen a meaningful change (power: noise-dominated is not a reading)
and the observed rise lies nearer a meaningful rise (MEANINGFUL_CHANGE per-sample stds) than none, a stall is not
the answer alone. The boundary is checked against the two hypotheses' normal likelihoods compared directly.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from scipy.stats import norm

from gspo_dynamics.diagnose import diagnose
from gspo_dynamics.diagnose._trend import RISE_OR_STALL, UNSURE_FLAT, _flat_verdict
from gspo_dynamics.diagnose._trend_advice import MEANINGFUL_CHANGE
from gspo_dynamics.diagnose._trend_stats import Z_POWER, Z_TREND, change
from gspo_dynamics.logs import RunLog

SPREAD = 1.0  # per-sample reward std
POWERED_SE = 0.05  # resolution (Z_TREND + Z_POWER) se / spread = 0.19 <= MEANINGFUL_CHANGE: a change would show
BLIND_SE = 0.2  # resolution 0.77: too noisy to see a meaningful change
NEAR_SE = 0.1  # resolution 0.38: unsure, and under 4x the samples per step resolve 0.2 stds


def flat(diff: float, se: float):
    trend = {"z": diff / se, "diff": diff, "se": se, "early": 0.0, "late": diff, "steps": (1, 100)}
    return _flat_verdict(diff / se, trend, (1, 100), (SPREAD, "test"), None, 1.0, 1.0)


@pytest.mark.parametrize("share", [0.05, 0.15, 0.25, 0.35, 0.45, 0.49, 0.51, 0.55, 0.65, 0.7])
def test_the_rise_is_named_where_its_likelihood_beats_no_change(share):
    # (with power, a change past 0.77 of the meaningful one is significant: the flat reading never sees it)
    # an independent route to the boundary: the observed change's density under "a meaningful rise" against "none"
    diff = share * MEANINGFUL_CHANGE * SPREAD
    assert (Z_TREND + Z_POWER) * POWERED_SE / SPREAD <= MEANINGFUL_CHANGE and diff / POWERED_SE < Z_TREND
    rise_likelier = norm.pdf(diff, MEANINGFUL_CHANGE * SPREAD, POWERED_SE) > norm.pdf(diff, 0.0, POWERED_SE)
    v = flat(diff, POWERED_SE)
    assert (v.unsure == RISE_OR_STALL) == rise_likelier == (share > 0.5)
    if rise_likelier:
        assert v.mode == "still_rising" and v.confidence == 0.5 and v.advice[0].startswith("train longer")
    else:
        assert v.mode == "stalled"


def test_a_fall_or_a_blind_window_is_never_read_as_a_rise():
    fall = flat(-0.6 * MEANINGFUL_CHANGE * SPREAD, POWERED_SE)
    assert fall.mode == "stalled" and "still_rising" not in fall.unsure
    assert (Z_TREND + Z_POWER) * BLIND_SE / SPREAD > MEANINGFUL_CHANGE  # noise is a live reading here
    blind = flat(0.9 * MEANINGFUL_CHANGE * SPREAD, BLIND_SE)
    assert blind.mode == "noise_dominated" and blind.unsure in ((), UNSURE_FLAT)


def test_a_late_creep_on_a_precise_log_says_so_end_to_end():
    # flat for 80 rows, then a creep of 0.007 over 80 rows under row noise 0.01: Welch z 2.5 (not significant), the
    # per-sample spread 22 standard errors of the change (power for 0.2 stds), the rise 0.11 stds (> 0.1: nearer 0.2)
    n, rng = 160, np.random.default_rng(3)
    t = np.arange(n)
    reward = 0.3 + 0.007 * np.clip((t - 80) / 80, 0, None) + rng.normal(0, 0.01, n)
    c = change(t, reward)
    spread = 22 * c["se"]
    assert 0 < c["z"] < Z_TREND and c["diff"] > MEANINGFUL_CHANGE * spread / 2
    log = RunLog(steps=np.arange(1, n + 1, dtype=np.int64), series={"reward": reward, "reward_std": np.full(n, spread)},
                 format="jsonl", source="<synthetic>")
    d = diagnose(log)
    assert d.primary == "still_rising" and d.unsure == RISE_OR_STALL
    assert d.headline()[0] == "verdict    unsure: still rising or stalled — a longer run tells"
    ev = {e["signal"]: e for e in d.verdicts[0].evidence}
    share = ev["no change against a meaningful rise: posterior share of no change"]
    assert share["value"] < 0.5 and math.isclose(share["rise_in_spreads"], c["diff"] / spread)
    assert d.to_json()["unsure"] == list(RISE_OR_STALL)


def test_an_unsure_flat_reading_says_how_many_more_samples_tell():
    # the factor it names, applied to the samples per row (se / sqrt(factor)), brings the resolution to 0.2 stds
    v = flat(0.1, NEAR_SE)
    assert v.unsure == UNSURE_FLAT
    factor = float(re.search(r"\(([0-9.]+)x the samples per step bring it to 0\.2\)", v.advice[0]).group(1))
    more = flat(0.1, NEAR_SE / math.sqrt(factor))
    res = next(e["value"] for e in more.evidence if e["signal"].startswith("change detectable with 80% power"))
    assert res == pytest.approx(MEANINGFUL_CHANGE, rel=0.02)  # the factor is printed to 2 significant digits


def test_the_unsure_flat_readings_g_names_each_frameworks_lever():
    """The G it names is each framework's lever on a step's samples: TRL's batch counts completions, so num_generations
    with per_device_train_batch_size alike; verl's rollout.n (its mini-batch counts prompts)."""
    from gspo_dynamics._keys import GROUP_SIZE_KEYS

    trend = {"z": 1.0, "diff": 0.1, "se": NEAR_SE, "early": 0.0, "late": 0.1, "steps": (1, 100)}
    v = _flat_verdict(1.0, trend, (1, 100), (SPREAD, "test"), 8, 1.0, 1.0)
    assert v.unsure == UNSURE_FLAT and "G 8 -> " in v.advice[0] and f"({GROUP_SIZE_KEYS})" in v.advice[0]
    assert "per_device_train_batch_size" in GROUP_SIZE_KEYS and "rollout.n" in GROUP_SIZE_KEYS


def test_a_saturation_whose_late_half_still_creeps_says_the_creep_not_a_bare_stop():
    """A rise 0.3 -> 0.8 over the first 150 of 2000 steps, then a creep of 0.045 over the last 1000 (significant, slope
    z >> 2, but under 0.2 per-sample stds of a 0.8 success rate): saturation, whose advice states the creep and leaves
    the stop to the user; without the creep, the plain "reached its plateau"."""
    rng = np.random.default_rng(4)
    t = np.arange(2000)
    base = 0.3 + 0.5 * (1 - np.exp(-t / 50))
    creep = base + 0.045 * np.clip((t - 1000) / 1000, 0, None)
    for reward, creeps in ((creep, True), (base, False)):
        log = RunLog(steps=t + 1, series={"reward": np.clip(reward + rng.normal(0, 0.02, t.size), 0, 1)},
                     format="synthetic", source="test")
        d = diagnose(log)
        assert d.primary == "healthy_saturation"
        assert ("the reward still creeps up (+0.04" in d.action()) == creeps
        assert ("reached its plateau" in d.action()) == (not creeps)


def test_a_flat_success_rate_at_zero_on_most_rows_leads_with_the_missing_signal():
    """A success rate exactly 0 on 70 of 100 rows (every response failed: no group carried a signal), a few successes
    on the rest: a flat reading whose advice starts with the rows that trained nothing (`_context.mostly_no_signal`),
    its evidence item beside; at 0 on 20 rows, the flat reading as before; at 0 on 95, the cause itself."""
    from gspo_dynamics.diagnose._context import MOSTLY_NO_SIGNAL, NO_SIGNAL_SHARE

    rng = np.random.default_rng(5)
    for zeros, said in ((70, True), (20, False)):
        reward = np.where(np.arange(100) < 100 - zeros, rng.choice([0.0625, 0.125, 0.1875], 100), 0.0)
        rng.shuffle(reward)
        d = diagnose(RunLog(steps=np.arange(1, 101), series={"reward": reward}, format="synthetic", source="test"))
        assert d.primary in ("stalled", "noise_dominated")
        assert d.action().startswith(f"on {zeros} of 100 rows no group carries a learning signal") == said
        assert any(e["signal"].startswith("share of rows whose success rate is exactly 0 or 1") and e["holds"]
                   for e in d.verdicts[0].evidence) == said
    assert MOSTLY_NO_SIGNAL == 0.5 < NO_SIGNAL_SHARE
    reward = np.where(np.arange(100) < 5, 0.125, 0.0)
    d = diagnose(RunLog(steps=np.arange(1, 101), series={"reward": reward}, format="synthetic", source="test"))
    assert d.verdict("advantage_degeneracy") is not None


def test_the_noise_advice_without_g_names_a_steps_completions_in_each_frameworks_keys():
    """Without G, the lever is a step's completions N G: TRL's batch (or its accumulation with the rollout, T kept),
    verl's rollout.n or batch; the factor squared from the std's."""
    from gspo_dynamics.diagnose._trend_advice import noise_advice

    (line,) = noise_advice(None, 1.5)
    assert line.startswith("raise the completions per step 2.2x (TRL: per_device_train_batch_size")
    assert "rollout.n" in line and line.endswith("scales as 1/(N G)")
    (line,) = noise_advice(8, 1.5)
    assert line.startswith("raise G from 8 to 18 (TRL: num_generations with per_device_train_batch_size")
