"""The labelled corpus: TRL files that `read_log` reads, whose numbers are those of the simulated runs.

Independent routes: the logged statistics of a run that barely moves (the stalled tiny-lr recipe)
against the closed forms at the reference policy (mean reward sum_p (1 - d_p) / P, zero-std
fraction mean_p [p^G + (1-p)^G], entropy and KL at step 1); the TRL rows against a loop
average of the per-step metrics; the instability recipe against the theory's T_c.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from gspo_dynamics import ConfigError
from gspo_dynamics.logs import read_log
from gspo_dynamics.predict import predict_bandit
from gspo_dynamics.sim.corpus import MODES, RECIPES, generate_corpus, run_logged
from gspo_dynamics.sim.corpus._trl_format import log_history
from gspo_dynamics.theory.bandit import TwoArmBandit

EXPECTED_SERIES = {"reward", "reward_std", "frac_zero_std", "entropy", "clip_frac", "mean_length",
                   "truncation_rate", "grad_norm", "learning_rate", "loss", "eval/reward"}



@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The quick subset: one seed of every mode (the full corpus has 5)."""
    out = tmp_path_factory.mktemp("corpus")
    return out, generate_corpus(out, seeds=1)


def test_every_mode_is_written_with_its_label(corpus):
    out, entries = corpus
    assert [e.mode for e in entries] == list(MODES)
    labels = json.loads((out / "labels.json").read_text())
    for entry in entries:
        label = json.loads((entry.path.parent / "label.json").read_text())
        assert label == labels[str(entry.path.relative_to(out))]
        assert label["mode"] == entry.mode and label["hparams"]["lr"] == entry.hparams.lr
        assert label["hparams"]["group_size"] == entry.hparams.group_size


def test_read_log_reads_every_file_as_trl_with_the_expected_series(corpus):
    _, entries = corpus
    for entry in entries:
        log = read_log(entry.path)
        label = entry.label
        assert (log.format, log.trainer, log.version) == ("trl_state", "trl", ">=0.20"), entry.mode
        assert EXPECTED_SERIES <= set(log.names), (entry.mode, sorted(log.names))
        assert {f"reward/{fn}" for fn in label["reward_components"]} <= set(log.names)
        assert ("kl_ref" in log) == (entry.hparams.kl_coef > 0)  # TRL logs kl only when beta != 0
        assert log.logging_interval == label["logging_steps"]
        assert log.n_points("reward") == label["steps"] // label["logging_steps"]  # summary row skipped
        assert log.n_points("eval/reward") == len(range(label["eval_every"], label["steps"] + 1, label["eval_every"]))
        assert not log.warnings, log.warnings
        raw = json.loads(entry.path.read_text())
        assert "train_runtime" in raw["log_history"][-1] and raw["global_step"] == label["steps"]


def test_trl_rows_are_window_means_of_the_per_step_metrics():
    rng = np.random.default_rng(0)
    steps, S, L = 23, 3, 5
    metrics = {name: rng.random((steps, S)) for name in ("reward", "loss", "completions/mean_length")}
    rows = [r for r in log_history(metrics, {}, 1, logging_steps=L, learning_rate=0.1, samples_per_step=4,
                                   steps_per_epoch=100, runtime_s=1.0) if "reward" in r]
    assert [r["step"] for r in rows] == [5, 10, 15, 20]  # steps 21-23 are past the last full window
    for r in rows:
        window = range(r["step"] - L, r["step"])
        assert r["reward"] == pytest.approx(sum(metrics["reward"][t, 1] for t in window) / L, rel=1e-12)


def test_logged_statistics_match_the_closed_forms_at_the_reference_policy():
    variant = RECIPES["stalled"]()[0]  # lr 300x too small: the policy stays at pi_ref (checked below)
    metrics, _ = run_logged(variant.task, variant.hp, variant.arms, steps=variant.steps, seeds=2)
    p = 1.0 / (1.0 + np.exp(-variant.task.ref_logits[:, 1]))  # (P,) pi_ref(correct)
    G = variant.hp.group_size
    # step 1 is at pi_ref exactly: exact entropy and zero KL (float64 rounding only)
    entropy = -(p * np.log(p) + (1 - p) * np.log(1 - p)).mean()
    np.testing.assert_allclose(metrics["entropy"][0], entropy, rtol=1e-12)
    np.testing.assert_allclose(metrics["kl"][0], 0.0, atol=1e-15)
    assert np.abs(metrics["entropy"] - entropy).max() < 0.01  # the policy barely moves: pi ~ pi_ref throughout
    # sampling statistics over steps x prompts x groups, each within 4 binomial standard errors
    n_groups = variant.steps * variant.task.num_prompts * variant.hp.num_groups * 2  # x 2 seeds
    zero_std = (p**G + (1 - p) ** G).mean()
    se = np.sqrt(zero_std * (1 - zero_std) / n_groups)
    assert abs(metrics["frac_reward_zero_std"].mean() - zero_std) < 4 * se
    mean_reward = p.mean()
    se = np.sqrt((p * (1 - p)).mean() / (n_groups * G))
    assert abs(metrics["reward"].mean() - mean_reward) < 4 * se


def test_instability_recipe_is_past_the_theory_threshold_and_oscillates():
    (unstable,) = RECIPES["dynamical_instability"]()
    (healthy,) = RECIPES["healthy_saturation"]()
    t_c = predict_bandit(TwoArmBandit(ref_logit=-1.0), unstable.hp, from_start=False)["critical_refresh_interval"]
    assert unstable.hp.refresh_interval > t_c == unstable.facts["critical_refresh_interval"]
    m_u, _ = run_logged(unstable.task, unstable.hp, unstable.arms, steps=unstable.steps, seeds=2)
    m_h, _ = run_logged(healthy.task, healthy.hp, healthy.arms, steps=healthy.steps, seeds=2)
    late_u = m_u["reward"][unstable.steps // 2:].std(0)
    late_h = m_h["reward"][healthy.steps // 2:].std(0)
    assert late_u.min() > 3 * late_h.max()  # a sustained oscillation, not sampling noise


def test_mode_signatures(corpus):
    _, entries = corpus
    logs = {e.mode: read_log(e.path) for e in entries}

    def early_late(name, mode):
        values = logs[mode].valid(name)[1]
        k = max(len(values) // 10, 1)  # first and last tenth of the rows
        return values[:k].mean(), values[-k:].mean()

    e0, e1 = early_late("entropy", "policy_concentration")
    assert e1 < 0.1 * e0
    r0, r1 = early_late("reward", "reward_hacking")
    v0, v1 = early_late("eval/reward", "reward_hacking")
    l0, l1 = early_late("mean_length", "reward_hacking")
    assert r1 > r0 and v1 < v0 - 0.5 and l1 > 2 * l0
    assert logs["advantage_degeneracy"].valid("frac_zero_std")[1].mean() > 0.7
    h0, h1 = early_late("reward", "healthy_saturation")
    s0, s1 = early_late("reward", "still_rising")
    assert h1 > h0 + 0.15 and s1 > s0 + 0.1 and s1 < h1


def test_bad_arguments_raise_config_error(tmp_path):
    with pytest.raises(ConfigError, match="seeds"):
        generate_corpus(tmp_path, seeds=0)
    with pytest.raises(ConfigError, match="unknown mode"):
        generate_corpus(tmp_path, modes=["exploding"])
