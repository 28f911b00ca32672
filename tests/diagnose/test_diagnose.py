"""diagnose(): one synthetic log per mode, built from the mechanism's closed form plus sampling noise.

Each log is what a run with that failure would write (binary rewards averaged over B samples per
row, so the noise is binomial), not a hand-drawn curve; the simulator-made corpus (issue 4 section 4)
is checked separately.
"""

import json
import math

import numpy as np
import pytest

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.diagnose import CAUSE_MODES, MODES, TREND_MODES, diagnose
from gspo_dynamics.diagnose._verdict import confidence
from gspo_dynamics.fit import fisher_g
from gspo_dynamics.logs import RunLog
from gspo_dynamics.theory.finite_group import zero_variance_probability
from gspo_dynamics.theory.hyperparams import SGD, Adam, Hyperparams
from gspo_dynamics.theory.trajectory import oscillator_from_hyperparams, single_exponential, trajectory

G = 8
GROUPS = 16  # groups per row: B = 128 binary samples


def make_log(steps, series, **meta) -> RunLog:
    steps = np.asarray(steps, dtype=np.int64)
    return RunLog(steps=steps, series={k: np.asarray(v, dtype=float) for k, v in series.items()}, format="jsonl",
                  source="<synthetic>", trainer="trl", reward_std_kind="group_mean_std", **meta)


def sampled(p, seed=0, groups=GROUPS, group_size=G):
    """Per row: mean reward, mean within-group std (unbiased), zero-std fraction of `groups` groups of G."""
    rng = np.random.default_rng(seed)
    k = rng.binomial(group_size, np.clip(p, 0, 1)[:, None], size=(p.size, groups))  # (rows, groups)
    std = np.sqrt(k * (group_size - k) / (group_size * (group_size - 1)))
    return k.mean(1) / group_size, std.mean(1), ((k == 0) | (k == group_size)).mean(1)


def binary_log(p, seed=0, extra=None, **kw):
    steps = np.arange(1, p.size + 1)
    reward, std, zero = sampled(p, seed, **kw)
    series = {"reward": reward, "reward_std": std, "frac_zero_std": zero}
    series.update(extra or {})
    return make_log(steps, series)


T300 = np.arange(300.0)


def test_healthy_saturation():
    d = diagnose(binary_log(single_exponential(T300, 0.8, 0.3, 30.0)))
    assert d.primary == "healthy_saturation"
    assert d.implications.plateau_reached


def test_still_rising_says_how_long_to_the_plateau():
    t = np.arange(120.0)
    d = diagnose(binary_log(single_exponential(t, 0.8, 0.3, 100.0)))
    assert d.primary == "still_rising"
    assert "more steps" in " ".join(d.verdict("still_rising").advice)


def test_still_rising_toward_a_bound_counts_no_steps_to_a_plateau_past_it():
    """A curve heading for 1.2 on a success rate read with --reward-range 0 1: no "more steps to the plateau"
    (it lies past the task's top), the advice says the curve does not level off below the bound, and that where it
    levels off is not identified (audit s44live: "rising toward its bound 1" at 0.99, cut at the bend, and the run
    sat at 0.77 after)."""
    t = np.arange(60.0)
    p = np.clip(single_exponential(t, 1.2, 0.1, 80.0), 0, 1)
    d = diagnose(binary_log(p), reward_range=(0.0, 1.0))
    assert d.primary == "still_rising" and d.implications.reward_range == (0.0, 1.0)
    advice = " ".join(d.verdict("still_rising").advice)
    assert "does not level off below the bound 1" in advice and "more steps" not in advice


def test_a_plateau_at_the_lower_bound_is_not_one_the_reward_rises_toward():
    """A slow rise to 0.08 on [0, 1] (64 groups a row) whose fitted plateau's band reaches 0: interior_plateau False,
    still rising, and the advice does not name the bound (only the top is one it rises toward)."""
    t = np.arange(60.0)
    p = np.clip(single_exponential(t, 0.08, 0.0, 80.0), 0, 1)
    d = diagnose(binary_log(p, groups=64), reward_range=(0.0, 1.0))
    assert d.implications.interior_plateau is False and d.implications.plateau.value < 0.5
    advice = " ".join(d.verdict("still_rising").advice)
    assert "level off below the bound" not in advice and "train longer" in advice


def test_stalled_when_a_precise_log_shows_no_change():
    d = diagnose(binary_log(np.full(300, 0.5)))
    assert d.primary == "stalled"


def test_noise_dominated_when_the_log_is_too_noisy_to_tell():
    p = single_exponential(T300, 0.56, 0.5, 150.0)  # a small rise under heavy sampling noise
    d = diagnose(binary_log(p, groups=1, group_size=4))
    assert d.primary == "noise_dominated"
    assert "1/(N G)" in " ".join(d.verdict("noise_dominated").advice)  # the lever: a step's completions


def test_instability_from_an_oscillating_curve_and_advice_from_the_critical_refresh_interval():
    lam, lr, mu = 0.2, 1.0, 0.9
    from gspo_dynamics.theory import linear

    T_c = int(linear.critical_refresh_interval(lam, 0.0, lr, mu))
    osc = oscillator_from_hyperparams(lam, 0.0, lr, mu, T_c - 1)  # just stable: rings for a long time
    p = trajectory(osc, T300, 0.6, 0.2, 0.0)
    assert osc.damping_ratio < 0.1
    hp = Hyperparams(lr=lr, optimizer=SGD(momentum=mu), refresh_interval=T_c + 2, group_size=G)
    d = diagnose(binary_log(p), hp)
    assert d.primary == "dynamical_instability"
    advice = " ".join(d.verdict("dynamical_instability").advice)
    assert f"refresh interval {T_c + 2}" in advice and "use T <=" in advice


def test_advantage_degeneracy_compares_with_p_to_the_g():
    p = np.full(300, 0.03)  # hard prompts: most groups all-wrong
    d = diagnose(binary_log(p))
    assert d.primary == "advantage_degeneracy"
    theory = next(e for e in d.verdict("advantage_degeneracy").evidence if e["signal"].startswith("theory"))
    assert theory["G"] == G and theory["G_source"].startswith("estimated")
    assert theory["value"] == pytest.approx(zero_variance_probability(0.03, G), abs=0.02)  # p_hat s.e. ~0.005
    hp = Hyperparams(lr=1.0, group_size=G)
    d2 = diagnose(binary_log(p), hp)
    theory = next(e for e in d2.verdict("advantage_degeneracy").evidence if e["signal"].startswith("theory"))
    assert theory["G_source"] == "hparams"
    assert any("G >=" in a for a in d2.verdict("advantage_degeneracy").advice)


def test_policy_concentration_outranks_the_degeneracy_it_causes():
    # below the ceiling: the policy settles on one answer per prompt, right on 75% of them, so the
    # groups empty of signal (zero-std fraction 0.1 -> 0.95) while the entropy collapses
    p = single_exponential(T300, 0.75, 0.6, 40.0)
    entropy = 2.0 * np.exp(-T300 / 60.0) + 0.02
    zero_std = 0.95 - 0.85 * np.exp(-T300 / 60.0)
    d = diagnose(binary_log(p, extra={"entropy": entropy, "frac_zero_std": zero_std}))
    assert d.primary == "policy_concentration"
    assert any("KL" in a for a in d.verdict("policy_concentration").advice)
    assert d.verdict("advantage_degeneracy").confidence < d.verdict("policy_concentration").confidence
    series = {"entropy": entropy, "frac_zero_std": zero_std}
    token = diagnose(binary_log(p, extra=series), Hyperparams(lr=1.0, group_size=G, correction="token", clip_high=0.2))
    advice = " ".join(token.verdict("policy_concentration").advice)
    assert "TRL: epsilon_high; verl: actor_rollout_ref.actor.clip_ratio_high" in advice and "TRL: beta" in advice
    sequence = diagnose(binary_log(p, extra=series),
                        Hyperparams(lr=1.0, group_size=G, correction="sequence", clip_low=3e-4, clip_high=4e-4))
    advice = " ".join(sequence.verdict("policy_concentration").advice)  # GSPO: no token-level clip-higher of 0.28
    assert "bounds the sequence ratio" in advice and "raise the upper clip" not in advice


def test_entropy_collapse_at_the_ceiling_is_a_solved_task():
    p = single_exponential(T300, 0.99, 0.6, 40.0)
    entropy = 2.0 * np.exp(-T300 / 60.0) + 0.02
    d = diagnose(binary_log(p, extra={"entropy": entropy}))
    assert d.primary == "healthy_saturation"
    assert d.verdict("policy_concentration") is None
    assert any("solved task" in e["signal"] for e in d.verdict("healthy_saturation").evidence)
    assert any("a solved task concentrates" in n for n in d.notes)
    deg = d.verdict("advantage_degeneracy")  # all-correct groups: reported, ranked below the solved task
    assert deg is None or deg.confidence < d.verdict("healthy_saturation").confidence


def test_reward_hacking_from_eval_decoupling_and_length():
    p = single_exponential(T300, 0.9, 0.3, 40.0)
    eval_steps = np.arange(0, 300, 30)
    eval_reward = np.full(300, np.nan)
    eval_reward[eval_steps] = np.linspace(0.5, 0.2, eval_steps.size)
    length = 150 + 3.0 * T300  # linear growth to 6x
    d = diagnose(binary_log(p, extra={"eval/reward": eval_reward, "mean_length": length}))
    assert d.primary == "reward_hacking"
    signals = {e["signal"] for e in d.verdict("reward_hacking").evidence}
    assert any("eval" in s for s in signals) and any("length" in s for s in signals)


def test_a_reward_only_log_works_and_says_what_it_could_not_check():
    steps = np.arange(1, 201)
    reward = single_exponential(steps - 1.0, 2.0, 0.1, 30.0) + np.random.default_rng(0).normal(0, 0.05, 200)
    d = diagnose(make_log(steps, {"reward": reward}))
    assert d.primary in MODES
    text = " ".join(d.not_checked)
    for needle in ("advantage degeneracy", "policy concentration", "reward hacking", "no hyperparameters"):
        assert needle in text


def test_too_short():
    d = diagnose(make_log([1, 2, 3], {"reward": [0.1, 0.2, 0.3]}))
    assert d.primary == "too_short" and d.verdicts == [] and d.fit is None
    assert "too short" in "\n".join(d.report_lines())


def test_every_verdict_is_well_formed_and_json_is_plain():
    d = diagnose(binary_log(single_exponential(T300, 0.97, 0.6, 40.0), extra={"entropy": np.exp(-T300 / 60)}))
    confs = [v.confidence for v in d.verdicts]
    assert confs == sorted(confs, reverse=True)
    assert sum(v.mode in TREND_MODES for v in d.verdicts) == 1
    for v in d.verdicts:
        assert v.mode in MODES and 0 <= v.confidence <= 1
        for e in v.evidence:
            assert {"signal", "value", "steps"} <= e.keys()
        if v.mode in CAUSE_MODES:
            assert v.advice
    out = json.loads(json.dumps(d.to_json(), allow_nan=False))
    assert out["primary"] == d.primary and len(out["verdicts"]) == len(d.verdicts)


def test_confidence_is_a_logistic_of_the_excess():
    assert confidence(0.0, 1.0) == 0.5
    assert confidence(3.0, 1.0) == pytest.approx(1 / (1 + math.exp(-3)))
    xs = np.linspace(-5, 5, 21)
    assert np.all(np.diff([confidence(x, 0.7) for x in xs]) > 0)


def test_fisher_g_false_alarm_rate_and_power():
    """Under white noise P(p < 0.05) = 0.05 (400 series: binomial sd 0.011, band 3 sd); a sine is found."""
    rng = np.random.default_rng(0)
    false = np.mean([fisher_g(rng.normal(size=128))[1] < 0.05 for _ in range(400)])
    assert abs(false - 0.05) < 0.033
    t = np.arange(128)
    g, p, k = fisher_g(1.0 * np.sin(2 * np.pi * 8 * t / 128) + rng.normal(size=128))
    assert p < 1e-6 and k == 8


def test_fluctuation_of_a_binomial_log_matches_the_sampling_noise_theory():
    """Rows of G N = 4 binary samples: residual sd / sqrt(p(1-p)/(G N)) ~ 1 (300 rows: sd of the ratio
    ~ 1/sqrt(600) = 4%; 15% tolerance)."""
    p = single_exponential(T300, 0.56, 0.5, 150.0)
    d = diagnose(binary_log(p, groups=1, group_size=4), Hyperparams(lr=0.01, group_size=4, num_groups=1))
    ratio = next(e for e in d.verdicts[0].evidence if e["signal"].startswith("fluctuation around the fit"))
    assert ratio["samples_per_row"] == 4 and ratio["value"] == pytest.approx(1.0, abs=0.15)


def test_reward_hacking_from_one_component_carrying_the_gain():
    rng = np.random.default_rng(5)
    fmt = single_exponential(T300, 1.0, 0.1, 40.0) + rng.normal(0, 0.02, 300)
    acc = single_exponential(T300, 0.2, 0.5, 60.0) + rng.normal(0, 0.02, 300)
    steps = np.arange(1, 301)
    d = diagnose(make_log(steps, {"reward": fmt + acc, "reward/format": fmt, "reward/accuracy": acc}))
    v = d.verdict("reward_hacking")
    assert v is not None and any(e.get("component") == "reward/format" for e in v.evidence)
    assert "accuracy" in " ".join(v.advice)


def test_truncation_and_length_growth_under_a_collapsing_reward_are_not_hacking():
    """A run that collapses (reward to 0) while its completions lose EOS and hit the length cap: the
    growth is the collapse's symptom (noted), not reward hacking; the same growth under a rising
    reward is still hacking evidence."""
    t = np.arange(120.0)
    truncation = np.clip((t - 20) / 40, 0, 1) * 0.6  # 0 -> 60% of completions cut at the cap
    length = 10 + 20 * np.clip((t - 20) / 40, 0, 1)  # 10 -> 30 tokens (3x)
    falling = 0.4 * np.exp(-t / 15.0)
    d = diagnose(binary_log(falling, extra={"truncation_rate": truncation, "mean_length": length}))
    assert "reward_hacking" not in {v.mode for v in d.verdicts}
    assert any("symptom of the collapse" in n for n in d.notes)
    rising = single_exponential(t, 0.9, 0.3, 30.0)
    d = diagnose(binary_log(rising, extra={"truncation_rate": truncation, "mean_length": length}))
    signals = {e["signal"] for e in d.verdict("reward_hacking").evidence}
    assert {"truncation rate rise", "mean completion length late / early"} <= signals
    only_cut = diagnose(binary_log(rising, extra={"truncation_rate": truncation}))  # each signal has its advice
    advice = " ".join(only_cut.verdict("reward_hacking").advice)
    assert "completions cut at the maximum length rose" in advice and "overlong penalty" in advice
    assert "max_completion_length" in advice and "data.max_response_length" in advice


def test_a_given_reward_range_stops_thresholds_at_a_saturated_plateau():
    """A binary-reward run saturating at 1 with T = 16: the fitted stiffness puts the exact critical T
    near 9, so without the reward's range the theory calls it unstable; with range (0, 1) the plateau
    is the bound (no restoring force, `fit.implications`), no threshold is given and nothing is
    unstable. A bad range is one ConfigError."""
    t = np.arange(200.0)
    log = binary_log(1 - 0.7 * np.exp(-t / 10))
    hp = Hyperparams(lr=3e-3, optimizer=Adam(), refresh_interval=16, group_size=8)
    unknown = diagnose(log, hp)
    assert unknown.implications.critical_refresh_interval is not None and unknown.primary == "dynamical_instability"
    known = diagnose(log, hp, reward_range=(0, 1))
    assert known.implications.interior_plateau is False and known.implications.critical_refresh_interval is None
    assert "dynamical_instability" not in {v.mode for v in known.verdicts}
    assert any("reward's bound" in n for n in known.notes)
    with pytest.raises(ConfigError, match="reward range"):
        diagnose(log, hp, reward_range=(1, 0))
