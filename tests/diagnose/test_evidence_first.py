"""Issue 38's symptoms, each on a log made here: verdicts never stand against their own evidence, a limit cycle
is found where it is (its swing against the noise and the reward's reach, its period against 2T), a noisy fit
feeds no advice, advice stays a change a user can make, and the report (and the figure's text panel) starts with
the verdict, the one thing to do and what invalidates the run."""

from __future__ import annotations

import numpy as np
import pytest

from gspo_dynamics.diagnose import diagnose
from gspo_dynamics.diagnose._diagnose import STRICT
from gspo_dynamics.diagnose._trend import MAX_SAMPLE_FACTOR, noise_advice
from gspo_dynamics.diagnose._verdict import Diagnosis, Verdict, evidence, inconsistencies
from gspo_dynamics.logs import RunLog
from gspo_dynamics.theory.hyperparams import Hyperparams


def make_log(reward, **series) -> RunLog:
    n = len(reward)
    data = {"reward": np.asarray(reward, float), **{k: np.asarray(v, float) for k, v in series.items()}}
    return RunLog(steps=np.arange(1, n + 1, dtype=np.int64), series=data, format="jsonl", source="<synthetic>",
                  trainer="trl")


def square_wave_run(seed: int, T: int = 4, n: int = 300, swing: float = 0.12, noise: float = 0.03) -> np.ndarray:
    """A rise to 0.86 on a [0, 1] score, then a square wave of period 2T steps and the given swing (peak to peak)
    on top of it, plus row noise: the refresh's limit cycle around a saturated reward."""
    rng = np.random.default_rng(seed)
    t = np.arange(1, n + 1)
    base = 0.86 - 0.66 * np.exp(-t / 25)
    flip = np.where(((t - 1) // T) % 2 == 0, 1.0, -1.0) * swing / 2 * (1 - np.exp(-t / 40))
    return np.clip(base + flip + rng.normal(0, noise, n), 0, 1)


def test_the_strict_invariant_is_on_in_the_tests():
    import os

    assert os.environ.get(STRICT) == "1"  # tests/conftest.py: every diagnosis below is checked


def test_inconsistencies_name_a_verdict_printed_against_its_evidence():
    good = Verdict("still_rising", 0.8, [evidence("late-half slope of the reward (z)", 3.1, None, threshold=2, side=">=")], [])
    bad = Verdict("still_rising", 0.8, [evidence("late-half slope of the reward (z)", 0.9, None, threshold=2, side=">=")], [])
    caveat = Verdict("healthy_saturation", 0.8, [evidence("R^2", 0.3, None, threshold=0.5, side=">=", caveat=True)], [])
    assert inconsistencies(Diagnosis("still_rising", [good, caveat], None, None, {})) == []
    problems = inconsistencies(Diagnosis("still_rising", [bad], None, None, {}))
    assert len(problems) == 1 and "needs >= 2" in problems[0]
    assert evidence("x", float("nan"), None, threshold=1, side="<")["holds"] is False
    with pytest.raises(ValueError):
        evidence("x", 1.0, None, side="<")  # a side needs a threshold


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_square_wave_limit_cycle_around_a_saturated_reward_is_instability(seed):
    d = diagnose(make_log(square_wave_run(seed)))
    assert d.primary == "dynamical_instability"
    item = next(e for e in d.verdict("dynamical_instability").evidence if "period_steps" in e)
    assert item["period_steps"] == pytest.approx(8.0, rel=0.1)  # 2T
    assert item["swing_to_noise"] > 1.5 and item["swing_to_reach"] > 0.08  # measured against noise and the range
    assert d.verdicts[0].confidence >= 0.8
    # without T, the advice names the period and what it would mean
    assert "period of 8" in d.verdict("dynamical_instability").advice[0]


def test_the_limit_cycle_period_is_tied_to_T_when_T_is_known():
    hp = Hyperparams(lr=1e-5, refresh_interval=4, group_size=8, num_groups=8)
    d = diagnose(make_log(square_wave_run(0)), hp)
    v = d.verdict("dynamical_instability")
    item = next(e for e in v.evidence if "period_steps" in e)
    assert item["period_over_2T"] == pytest.approx(1.0, abs=0.1)
    assert "= 2T" in v.advice[0] and "T = 4" in v.advice[0]
    assert d.primary == "dynamical_instability"  # the period is measured; the theory's stiffness only estimated


def test_a_small_swing_in_a_noisy_reward_is_not_a_confident_cycle():
    # a swing a third of the row noise: significant over 300 rows perhaps, but not one the curve shows
    d = diagnose(make_log(square_wave_run(0, swing=0.02, noise=0.06)))
    v = d.verdict("dynamical_instability")
    assert v is None or v.confidence < 0.5


def test_a_rise_then_a_flat_noisy_plateau_is_not_still_rising():
    """The public Unsloth run's shape: a rise, then 130 flat noisy rows; the late-half slope z is small, so the
    run is not read as still rising (its evidence would say otherwise), whatever a noisy fit extrapolates."""
    rng = np.random.default_rng(4)
    t = np.arange(250.0)
    mean = np.minimum(0.3 + 1.3 * t / 110, 1.6)
    reward = mean + rng.normal(0, 0.9, t.size)
    d = diagnose(make_log(reward))
    assert d.primary != "still_rising"
    rising = d.verdict("still_rising")
    assert rising is None


def test_a_fit_below_its_r2_threshold_feeds_no_advice():
    rng = np.random.default_rng(7)
    t = np.arange(200.0)
    reward = 0.4 + 0.1 * np.exp(-t / 80) * np.sin(2 * np.pi * t / 33) + rng.normal(0, 0.15, t.size)
    d = diagnose(make_log(reward))
    assert d.fit.r_squared < 0.5
    for v in d.verdicts:
        assert not any(e["signal"].startswith("damping ratio of the fit") for e in v.evidence)
        assert not any("fitted plateau" in a for a in v.advice)


@pytest.mark.parametrize("factor", [1.5, 3.9, 4.1, 40.0])
def test_noise_advice_is_a_bounded_change_or_an_eval_set(factor):
    advice = noise_advice(8, factor ** 0.5)[0]
    if factor <= MAX_SAMPLE_FACTOR:
        assert "num_generations" in advice and "rollout.n" in advice
    else:
        assert "eval set" in advice and "eval_steps" in advice and "test_freq" in advice


def test_the_report_and_the_figure_start_with_the_verdict_the_action_and_what_invalidates():
    rng = np.random.default_rng(0)
    t = np.arange(120.0)
    reward = 0.7 - 0.4 * np.exp(-t / 30) + rng.normal(0, 0.03, t.size)
    d = diagnose(make_log(reward, truncation_rate=np.full(t.size, 0.8)))
    lines = d.report_lines()
    assert lines[0].startswith("verdict") and lines[1].startswith("do ")
    assert lines[2].startswith("invalid") and "cut at the length cap" in lines[2]
    assert "max_completion_length" in d.action()  # what invalidates the run is fixed first
    # and the do line says so, so it does not read as the verdict's own remedy
    assert lines[1] == f"do         first fix what invalidates the run (below): {d.action()}; then diagnose again"
    assert lines.index(next(x for x in lines if x.startswith("fit "))) > 3
    assert d.to_json()["findings"][0]["name"] == "truncation" and d.to_json()["action"] == d.action()
    from gspo_dynamics.plots.diagnose import diagnosis_figure

    fig = diagnosis_figure(d)
    panel = fig.axes[-1].texts[0].get_text()
    assert panel.startswith("verdict") and "invalid" in panel and "do " in panel


def test_a_format_reward_rising_while_correctness_falls_is_reward_hacking():
    rng = np.random.default_rng(0)
    t = np.arange(200.0)
    fmt = np.clip(0.1 + 0.8 * (1 - np.exp(-t / 30)) + rng.normal(0, 0.05, t.size), 0, 1)
    correct = np.clip(0.3 - 0.2 * (1 - np.exp(-t / 30)) + rng.normal(0, 0.05, t.size), 0, 1)
    d = diagnose(make_log(fmt + correct, **{"reward/format": fmt, "reward/correct": correct}))
    assert d.primary == "reward_hacking"
    assert any(f.name == "reward_function_divergence" for f in d.findings)
    assert "reward_weights" in " ".join(d.verdict("reward_hacking").advice)
    # both functions learning: no hacking, no finding
    both = np.clip(0.1 + 0.5 * (1 - np.exp(-t / 30)) + rng.normal(0, 0.05, t.size), 0, 1)
    d = diagnose(make_log(fmt + both, **{"reward/format": fmt, "reward/correct": both}))
    assert d.verdict("reward_hacking") is None and not d.findings


@pytest.mark.parametrize("seed", [0, 1])
def test_the_swing_and_noise_of_a_periodic_component_match_what_made_them(seed):
    """Independent route: a known sinusoid of amplitude A on a trend, in white noise of std s. The fit's
    periodogram reads A = sqrt(2 g var) and s = sqrt((1 - g) var) (`fit._trajectory`); the alternation of rows
    reads a = sqrt(-rho_1 var) and s = sqrt((1 + rho_1) var) (`_instability.alternation`)."""
    from gspo_dynamics.diagnose._instability import alternation
    from gspo_dynamics.fit import fit_trajectory

    rng = np.random.default_rng(seed)
    t = np.arange(1.0, 801.0)
    trend = 0.8 - 0.5 * np.exp(-t / 60)
    reward = trend + 0.1 * np.sin(2 * np.pi * t / 40) + rng.normal(0, 0.05, t.size)
    pg = fit_trajectory(t, reward).selection["periodogram"]
    assert pg["amplitude"] == pytest.approx(0.1, rel=0.15) and pg["noise_std"] == pytest.approx(0.05, rel=0.2)
    flips = trend + 0.04 * (-1.0) ** t + rng.normal(0, 0.03, t.size)
    alt = alternation(t, flips, fit_trajectory(t, flips))
    assert alt["amplitude"] == pytest.approx(0.04, rel=0.15) and alt["noise_std"] == pytest.approx(0.03, rel=0.2)


def test_a_length_collapse_is_checked_before_the_verdicts_remedy():
    """Completions shrink 350 -> ~10 tokens while the reward falls (a length penalty's collapse, audit A5-A7): the
    do line reads completions and the reward's treatment of short answers first, the verdict's remedy after it; the
    same verdict without the shrink keeps its remedy alone."""
    rng = np.random.default_rng(4)
    t = np.arange(120.0) / 120
    reward = 0.55 - 0.45 * t + 0.02 * rng.standard_normal(t.size)
    d = diagnose(make_log(reward, mean_length=350.0 * np.exp(-3.5 * t) + 5 * rng.standard_normal(t.size)))
    shrink = next(f for f in d.findings if f.name == "length_collapse")
    remedy = d.verdicts[0].advice[0]
    assert d.action() == f"first {shrink.advice[0]}; if the reward is not the cause: {remedy}"
    assert d.report_lines()[1] == f"do         {d.action()}"
    plain = diagnose(make_log(reward, mean_length=np.full(t.size, 350.0) + 5 * rng.standard_normal(t.size)))
    assert all(f.name != "length_collapse" for f in plain.findings) and "short answer" not in plain.action()


def test_a_plateau_already_reached_is_no_count_of_steps_to_come():
    """0.2 + 0.6 (1 - exp(-t / 40)) over 150 rows: the fit comes within 5% of its plateau at about step 120, inside
    the log. The advice says so and what is left to gain, never 'about 0 more steps to come'."""
    rng = np.random.default_rng(0)
    t = np.arange(150.0)
    d = diagnose(make_log(0.2 + 0.6 * (1 - np.exp(-t / 40)) + rng.normal(0, 0.03, t.size)))
    advice = " ".join(a for v in d.verdicts for a in v.advice)
    assert "0 more steps" not in advice
    assert d.primary == "still_rising"
    assert "within 5% of it since step" in d.action() and "more is worth it" in d.action()


def test_a_plateau_reached_at_the_last_row_is_not_called_saturation():
    """An 8-row demo rising -0.05 -> 0.38, whose fit comes within 5% of its plateau at about its last row (audit C13):
    the plateau is not seen held (fewer than MIN_WINDOW rows at it), so the answer is unsure between a rise and a
    saturation, not 'healthy saturation, nothing to change'. The same curve held for 8 more rows is saturated."""
    rise = [-0.045, 0.108, 0.24, 0.25, 0.35, 0.268, 0.392, 0.383]
    d = diagnose(make_log(rise))
    assert d.unsure == ("still_rising", "healthy_saturation")
    assert any("not seen held" in str(e["value"]) for e in d.verdicts[0].evidence)
    rng = np.random.default_rng(0)
    held = diagnose(make_log(rise + list(0.385 + 0.01 * rng.standard_normal(8))))
    assert held.primary == "healthy_saturation" and not held.unsure


def test_an_unstable_fits_equilibrium_is_no_plateau():
    """A slow start then a steep rise to a level (audit C12), which the closed form fits as unstable (damping <= 0):
    its r_inf is the equilibrium the curve leaves, so no plateau, remaining rise or share of the rise is printed."""
    from gspo_dynamics.fit import fit_trajectory, implications

    rng = np.random.default_rng(3)
    t = np.arange(1.0, 61.0)
    reward = -0.3 + 1.45 / (1 + np.exp(-(t - 33) / 2.5)) + 0.12 * rng.standard_normal(t.size)
    fit = fit_trajectory(t, reward)
    assert fit.regime == "unstable"
    imp = implications(fit, None)
    assert {"plateau", "remaining_rise", "time_to_plateau"} <= set(imp.unidentified)
    assert "moves away from" in imp.unidentified["plateau"] and imp.to_json()["plateau"] is None
    assert f"{fit.params['r_inf']:.3g}" not in imp.unidentified["plateau"]  # the equilibrium is not printed either
    d = diagnose(make_log(reward))
    share = next(e for v in d.verdicts for e in v.evidence if e["signal"] == "remaining rise / total rise")
    assert share["value"] is None or not np.isfinite(share["value"])
    assert share["plateau"] is None


def test_a_stalls_advice_checks_the_signal_and_the_kl_before_changing_the_lr():
    """A stall's evidence is the reward alone (audit C7, B8: 'raise the learning rate' first on runs whose siblings at
    that lr saturate): the checks that need no new run come first, the lr change after them."""
    from gspo_dynamics.diagnose._trend_advice import STALLED_ADVICE

    text = STALLED_ADVICE[0]
    assert text.index("groups carry signal") < text.index("KL weight") < text.index("raise the learning rate")


def test_a_saturation_kept_only_as_the_context_of_a_fall_is_not_named_beside_it():
    """A reward that crashes 120 -> 0 and stays there (audit E): the trend reading that fits a plateau at the floor is
    kept under --explain as the fall's context, never named on the `also` line as 'healthy saturation (0.31)'."""
    rng = np.random.default_rng(5)
    reward = np.concatenate([120 * np.exp(-np.arange(10) / 3.0), np.zeros(20)]) + rng.uniform(0, 1, 30)
    d = diagnose(make_log(reward))
    sat = d.verdict("healthy_saturation") or d.verdict("still_rising")
    assert d.primary == "dynamical_instability" and sat is not None
    assert any(e["signal"] == "the reward fell (Welch z, late - early)" for e in sat.evidence)
    brief = "\n".join(d.report_lines(explain=False))
    assert "healthy saturation (" not in brief and "still rising (" not in brief
