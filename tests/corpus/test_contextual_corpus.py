"""The contextual generator family: its optimizer and gradients against references, and each
recipe's physics as read back from the files a user would have.

Oracles: Adam and heavy-ball against a plain loop of Kingma & Ba's Algorithm 1 and against their
closed forms for a constant gradient; the logit gradients against central finite differences;
the physical facts of each recipe (zero-std fraction, period 2T, eval falling while train rises,
entropy collapse below the ceiling, ...) measured on the log `read_log` returns.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from gspo_dynamics import ConfigError
from gspo_dynamics.logs import read_log
from gspo_dynamics.sim.corpus_contextual import (
    MODES, RECIPES, UNREACHABLE, RunConfig, adam_step, generate_contextual_corpus, run_contextual, sgd_step,
)
from gspo_dynamics.sim.corpus_contextual._engine import Policy, kl_grad, sample_actions, surrogate_grad
from gspo_dynamics.sim.corpus_contextual._formats import (
    FILE_NAMES, FORMATS, trl_rows, write_trl, write_verl_jsonl, write_wandb_csv,
)
from gspo_dynamics.sim.corpus_contextual._generate import dominant_period
from gspo_dynamics.sim.corpus_contextual._optim import init_state
from gspo_dynamics.sim.corpus_contextual._task import log_softmax, softmax
from gspo_dynamics.sim.corpus_contextual._tasks import graded_task
from gspo_dynamics.theory.hyperparams import SGD, Adam, Hyperparams

EXACT = 1e-12  # float64 agreement of two routes through the same arithmetic
FD_STEP, FD_TOL = 1e-6, 1e-7  # central differences: O(h^2) truncation, O(eps / h) rounding
PERIOD_TOL = 0.15  # the limit cycle's spectral period within 15% of 2T (row spacing and drift blur it)
READ_FORMAT = {"trl_state": "trl_state", "wandb_csv": "csv", "verl_jsonl": "jsonl"}  # ours -> read_log's


# ---- optimizer and gradients ---------------------------------------------------------------


def adam_loop(theta, grads, lr, b1, b2, eps):
    """Kingma & Ba (2015) Algorithm 1 (ascent), one coordinate at a time, in plain Python."""
    theta, m, v = list(theta), [0.0] * len(theta), [0.0] * len(theta)
    for t, g in enumerate(grads, start=1):
        for i, gi in enumerate(g):
            m[i] = b1 * m[i] + (1 - b1) * gi
            v[i] = b2 * v[i] + (1 - b2) * gi * gi
            theta[i] += lr * (m[i] / (1 - b1**t)) / (math.sqrt(v[i] / (1 - b2**t)) + eps)
    return np.array(theta)


def run_optimizer(step, opt, theta, grads, lr):
    state = init_state(theta)
    for g in grads:
        theta, state = step(theta, g, state, lr, opt)
    return theta, state


def test_adam_matches_the_loop_reference():
    rng = np.random.default_rng(0)
    theta0, grads = rng.normal(size=5), rng.normal(size=(40, 5)) * np.array([1e-3, 0.1, 1.0, 10.0, 0.0])
    opt = Adam(beta1=0.9, beta2=0.99, eps=1e-8)
    theta, state = run_optimizer(adam_step, opt, theta0, grads, 0.05)
    assert state.t == 40
    np.testing.assert_allclose(theta, adam_loop(theta0, grads, 0.05, 0.9, 0.99, 1e-8), rtol=EXACT, atol=EXACT)


def test_adam_with_a_constant_gradient_moves_lr_per_step_whatever_its_size():
    # bias correction makes m_hat = g and v_hat = g^2 exactly: theta_n = theta_0 + n lr g / (|g| + eps)
    g, lr, n, opt = np.array([1e-4, -3.0, 250.0]), 0.01, 30, Adam(eps=1e-8)
    theta, _ = run_optimizer(adam_step, opt, np.zeros(3), [g] * n, lr)
    np.testing.assert_allclose(theta, n * lr * g / (np.abs(g) + opt.eps), rtol=1e-10)


def test_heavy_ball_with_a_constant_gradient_follows_its_closed_form():
    # v_k = g (1 - mu^k) / (1 - mu), theta_n = theta_0 + lr sum_k v_k
    g, lr, n, mu = np.array([0.5, -2.0]), 0.1, 25, 0.9
    theta, _ = run_optimizer(sgd_step, SGD(momentum=mu), np.zeros(2), [g] * n, lr)
    expected = lr * g * sum((1 - mu**k) / (1 - mu) for k in range(1, n + 1))
    np.testing.assert_allclose(theta, expected, rtol=EXACT)


def numeric_grad(f, z):
    out = np.zeros_like(z)
    for idx in np.ndindex(z.shape):
        dz = np.zeros_like(z)
        dz[idx] = FD_STEP
        out[idx] = (f(z + dz) - f(z - dz)) / (2 * FD_STEP)
    return out


def test_surrogate_and_kl_gradients_match_finite_differences():
    rng = np.random.default_rng(1)
    B, K, G = 3, 4, 5
    z, ref = rng.normal(size=(B, K)), rng.normal(size=(B, K))
    actions, coef = rng.integers(K, size=(B, G)), rng.normal(size=(B, G))

    def surrogate(z):  # 1/(B G) sum coef log pi_z(a)
        return (coef * np.take_along_axis(log_softmax(z), actions, 1)).sum() / coef.size

    def kl(z):  # sum_b KL(pi_z(b) || pi_ref(b))
        return (softmax(z) * (log_softmax(z) - log_softmax(ref))).sum()

    pi = softmax(z)
    np.testing.assert_allclose(surrogate_grad(pi, actions, coef), numeric_grad(surrogate, z), atol=FD_TOL)
    np.testing.assert_allclose(kl_grad(pi, log_softmax(z) - log_softmax(ref)), numeric_grad(kl, z), atol=FD_TOL)


def test_the_policy_chain_rule_matches_finite_differences():
    task = graded_task(np.random.default_rng(2), prompts=6, actions=3, types=2, best_prob=(0.2, 0.5))
    policy = Policy(task)
    rng = np.random.default_rng(3)
    theta, prompts, g = rng.normal(size=policy.size), np.array([4, 1]), rng.normal(size=(2, 3))
    np.testing.assert_allclose(policy.grad(prompts, g), numeric_grad(lambda th: (g * policy.logits(th)[prompts]).sum(), theta),
                               atol=FD_TOL)


def test_an_unreachable_action_is_never_drawn_even_at_u_equal_one():
    p = softmax(np.array([[UNREACHABLE, 0.0, UNREACHABLE, 1.0, UNREACHABLE]] * 2))
    u = np.array([[1e-300, 0.5, 1.0], [0.2689, 0.27, 1.0]])
    drawn = sample_actions(p, u)
    assert set(drawn.ravel()) <= {1, 3} and drawn[0, 2] == 3


def test_run_config_rejects_what_it_cannot_run():
    hp = Hyperparams(lr=0.1, group_size=4)
    with pytest.raises(ConfigError, match="group_size"):
        RunConfig(hp=Hyperparams(lr=0.1), steps=10)
    with pytest.raises(ConfigError, match="sequence"):
        RunConfig(hp=Hyperparams(lr=0.1, group_size=4, correction="sequence"), steps=10)
    with pytest.raises(ConfigError, match="warmup"):
        RunConfig(hp=hp, steps=10, warmup_steps=10)


# ---- the family: generation, formats, physics ------------------------------------------------


@pytest.fixture(scope="module")
def family(tmp_path_factory):
    """Two runs of every mode (variants alternate with the run index, so both of most modes' causes)."""
    out = tmp_path_factory.mktemp("contextual")
    return out, generate_contextual_corpus(out, seeds=2, seed=0)


def logged(entry, name):
    """(steps, values) of a series as `read_log` returns it."""
    steps, values = read_log(entry.path).valid(name)
    return steps, values


def quarter(values, late: bool) -> float:
    q = max(values.size // 4, 3)
    return float(values[-q:].mean() if late else values[:q].mean())


def by_variant(entries, mode, variant):
    return [e for e in entries if e.mode == mode and e.label["variant"] == variant]


def test_every_run_is_written_read_back_and_labelled(family):
    out, entries = family
    assert [e.mode for e in entries] == [m for m in MODES for _ in range(2)]
    labels = json.loads((out / "labels.json").read_text())
    for e in entries:
        label = json.loads((e.path.parent / "label.json").read_text())
        assert label == labels[str(e.path.relative_to(out))] == e.label
        assert e.path.name == FILE_NAMES[label["format"]]
        log = read_log(e.path)
        assert log.format == READ_FORMAT[label["format"]], e.path
        assert log.n_points("reward") == label["steps"] // label["logging_steps"]
        assert e.hparams.group_size == label["hparams"]["group_size"] and e.hparams.num_groups == label["run"]["prompts_per_step"]
        values = log.valid("reward")[1]
        assert np.all((values >= 0) & (values <= 1)), "rewards are graded values in [0, 1]"


def test_generation_is_deterministic(tmp_path):
    a = generate_contextual_corpus(tmp_path / "a", seeds=1, modes=("policy_concentration", "noise_dominated"))
    b = generate_contextual_corpus(tmp_path / "b", seeds=1, modes=("policy_concentration", "noise_dominated"))
    for x, y in zip(a, b):
        assert x.path.read_bytes() == y.path.read_bytes()


def test_healthy_runs_reach_their_plateau_and_the_solved_ones_their_ceiling(family):
    _, entries = family
    for e in by_variant(entries, "healthy_saturation", "kl_plateau") + by_variant(entries, "healthy_saturation", "solved"):
        f = e.label["facts"]
        assert f["reward_end"] - f["reward_start"] > 0.1
        assert abs(f["reward_end"] - f["reward_at_horizon"]) < 0.03  # the log ends on the plateau
    for e in by_variant(entries, "healthy_saturation", "solved"):
        f = e.label["facts"]
        assert f["reward_end"] > f["reward_ceiling"] - 0.1 and f["entropy_end"] < 0.3 * f["entropy_start"]


def test_still_rising_runs_stop_well_below_where_the_run_was_heading(family):
    _, entries = family
    for e in [e for e in entries if e.mode == "still_rising"]:
        f = e.label["facts"]
        assert f["horizon_steps"] > e.label["steps"]
        assert f["reward_end"] - f["reward_start"] < 0.65 * (f["reward_at_horizon"] - f["reward_start"])
        _, r = logged(e, "reward")
        assert quarter(r, True) > quarter(r, False)


def test_stalled_runs_do_not_move(family):
    _, entries = family
    for e in [e for e in entries if e.mode == "stalled"]:
        assert abs(e.label["facts"]["reward_end"] - e.label["facts"]["reward_start"]) < 0.002
        _, r = logged(e, "reward")
        assert abs(quarter(r, True) - quarter(r, False)) < 0.02


def test_the_limit_cycle_has_period_two_refresh_intervals(family):
    _, entries = family
    for e in by_variant(entries, "dynamical_instability", "limit_cycle"):
        steps, r = logged(e, "reward")
        T = e.hparams.refresh_interval
        period = dominant_period(r[r.size // 4:]) * e.label["logging_steps"]
        assert abs(period / (2 * T) - 1) < PERIOD_TOL, (period, T)
        assert e.label["facts"]["period_of_reward"] == pytest.approx(2 * T, rel=PERIOD_TOL)


def test_the_collapse_falls_far_below_its_peak_and_stays(family):
    _, entries = family
    for e in by_variant(entries, "dynamical_instability", "collapse"):
        _, r = logged(e, "reward")
        smooth = np.convolve(r, np.ones(5) / 5, "valid")
        assert smooth.max() - quarter(r, True) > 0.3 and smooth.argmax() < 0.75 * smooth.size


def test_degenerate_runs_have_mostly_zero_std_groups(family):
    _, entries = family
    for e in [e for e in entries if e.mode == "advantage_degeneracy"]:
        assert read_log(e.path).valid("frac_zero_std")[1].mean() > 0.5


def test_an_unreachable_reward_gives_exact_zeros_at_every_step():
    recipe = RECIPES["advantage_degeneracy"](np.random.default_rng(4), 2)
    assert recipe.variant == "unreachable"
    metrics, _, _ = run_contextual(recipe.task, recipe.run, seed=5)
    for name in ("reward", "reward_std", "grad_norm"):
        assert np.all(metrics[name] == 0.0), name
    assert np.all(metrics["frac_reward_zero_std"] == 1.0)


def test_concentration_collapses_the_entropy_below_the_ceiling(family):
    _, entries = family
    for e in [e for e in entries if e.mode == "policy_concentration"]:
        _, h = logged(e, "entropy")
        _, r = logged(e, "reward")
        assert quarter(h, True) < 0.3 * quarter(h, False)
        assert quarter(r, True) < e.label["facts"]["reward_ceiling"] - 0.2


def test_hacking_raises_the_train_reward_while_the_eval_reward_falls(family):
    _, entries = family
    for e in [e for e in entries if e.mode == "reward_hacking"]:
        _, r = logged(e, "reward")
        _, ev = logged(e, "eval/reward")
        assert quarter(r, True) > quarter(r, False)
        assert ev.max() - quarter(ev, True) > 0.1 and int(ev.argmax()) < ev.size - 2
    for e in by_variant(entries, "reward_hacking", "length_bonus"):
        _, length = logged(e, "mean_length")
        assert quarter(length, True) > 1.2 * length[:3].mean()  # the hack's share of the responses is at the budget


def test_noise_hides_a_real_drift(family):
    _, entries = family
    for e in [e for e in entries if e.mode == "noise_dominated"]:
        f = e.label["facts"]
        _, r = logged(e, "reward")
        row_sd = np.std(np.diff(r)) / math.sqrt(2)
        assert 0.03 <= abs(f["reward_end"] - f["reward_start"]) < row_sd


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_writer_is_read_back_with_the_same_numbers(tmp_path, fmt):
    recipe = RECIPES["reward_hacking"](np.random.default_rng(6), 0)
    run = RunConfig(hp=recipe.run.hp, steps=60, eval_every=20, warmup_steps=10)
    metrics, evals, _ = run_contextual(recipe.task, run, seed=7)
    path = tmp_path / FILE_NAMES[fmt]
    L = 1 if fmt == "verl_jsonl" else 5
    if fmt == "verl_jsonl":
        write_verl_jsonl(path, metrics, evals, run)
    else:
        rows = trl_rows(metrics, evals, run, logging_steps=L, samples_per_step=8)
        if fmt == "trl_state":
            write_trl(path, rows, steps=60, logging_steps=L, eval_every=20, batch_size=8)
        else:
            write_wandb_csv(path, rows)
    log = read_log(path)
    steps, reward = log.valid("reward")
    np.testing.assert_allclose(reward, metrics["reward"].reshape(-1, L).mean(1), rtol=EXACT)
    np.testing.assert_allclose(log.valid("learning_rate")[1], [run.lr_at(int(s)) for s in steps], rtol=EXACT)
    if fmt != "verl_jsonl":  # verl names its validation keys by data source
        np.testing.assert_allclose(log.valid("eval/reward")[1], [evals[s]["eval_reward"] for s in (20, 40, 60)], rtol=EXACT)
        assert "frac_zero_std" in log and "reward/judge_reward" in log
