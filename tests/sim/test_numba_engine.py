"""The numba two-arm engine (`sim._numba`) against the torch engines, and `simulate`'s engine choice.

The numba engine consumes the torch engines' uniforms, so stochastic runs are compared path by
path; independent streams are also compared in distribution (mean and variance of R), and the
stationary variance is checked against the 1/G law of the discrete-Lyapunov theory.
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest
import torch

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.sim import BanditTask, simulate
from gspo_dynamics.sim import _numba
from gspo_dynamics.sim._engine import BanditEngine
from gspo_dynamics.sim._fast import TwoArmEngine
from gspo_dynamics.sim.bandit import engine_class
from gspo_dynamics.theory.bandit import TwoArmBandit
from gspo_dynamics.theory.fluctuations import stationary_reward_variance
from gspo_dynamics.theory.hyperparams import Adam, Hyperparams, SGD



@pytest.fixture
def _numba_installed():
    pytest.importorskip("numba")  # the optional "fast" extra


needs_numba = pytest.mark.usefixtures("_numba_installed")

# the same equations in another order (compiled scalar code vs torch tensor ops), float64, STEPS contracting steps
ENGINE_TOL = 1e-12
STEPS = 12
# same uniforms: paths differ by rounding only, amplified by Adam's lr / eps where g is near 0 (as tests/sim/test_fast.py)
PATH_TOL = 1e-10
ADAM_EPS = 1e-3  # Adam eps of the sequence-correction batch below (conftest: the default 1e-8 amplifies rounding)
Z_SE = 4.0  # statistical comparisons: |difference| <= Z_SE standard errors of the difference
# 1/G spot check: Var(R) over seeds is a sum over ~seeds x (steps / 2) / tau correlated samples; with 512 seeds its
# relative standard error is ~5%, and the Lyapunov prediction is leading order in the noise (paper_repro: 15%)
LEVEL_TOL = 0.15

TASKS = {
    "two_arm": BanditTask.two_arm(ref_logit=-1.0, init_logit=0.5),
    "prompts": BanditTask.prompts([0.2, 0.5, 0.9]),
}



def _both(task, configs, **kwargs):
    torch_run = simulate(task, configs, engine="fast", record_logits=True, **kwargs)
    numba_run = simulate(task, configs, engine="numba", record_logits=True, **kwargs)
    return torch_run, numba_run


@needs_numba
@pytest.mark.parametrize(
    "correction, advantage, kl_estimator, group_size, refresh",
    list(itertools.product(["none", "token", "sequence"], ["mean", "std"], ["exact", "k3"], [None, 4], [1, 3])),
)
def test_expected_mode_equals_torch_engine(correction, advantage, kl_estimator, group_size, refresh, mixed_configs):
    base = Hyperparams(
        lr=1.0, refresh_interval=refresh, group_size=group_size, advantage=advantage,
        correction=correction, kl_estimator=kl_estimator,
    )
    for task in TASKS.values():
        reference, run = _both(task, mixed_configs(base), steps=STEPS, expected=True)
        np.testing.assert_allclose(run.logits, reference.logits, rtol=0, atol=ENGINE_TOL)
        np.testing.assert_allclose(run.reward, reference.reward, rtol=0, atol=ENGINE_TOL)


@needs_numba
@pytest.mark.parametrize(
    "correction, advantage, kl_estimator",
    list(itertools.product(["none", "token", "sequence"], ["mean", "std"], ["exact", "k3"])),
)
def test_stochastic_mode_same_uniforms_same_paths(correction, advantage, kl_estimator, mixed_configs):
    base = Hyperparams(
        lr=1.0, refresh_interval=3, group_size=4, num_groups=2, advantage=advantage,
        correction=correction, kl_estimator=kl_estimator,
    )
    reference, run = _both(TASKS["prompts"], mixed_configs(base), steps=STEPS, seeds=16, seed=7, record_every=5)
    np.testing.assert_allclose(run.logits, reference.logits, rtol=0, atol=PATH_TOL)
    assert np.ptp(run.logits[-1, ..., 1], axis=1).min() > 0.0  # the seeds really differ


@needs_numba
def test_start_logits_with_a_nonzero_fixed_logit():
    """z = l1 - l0 with l0 != 0 (start_logits override): both engines, expected and stochastic."""
    hp = Hyperparams(lr=0.8, refresh_interval=2, group_size=8, kl_coef=0.5, optimizer=SGD(momentum=0.5))
    start = np.array([[0.7, 0.2]])  # (P, K) = (1, 2): l0 = 0.7
    for expected in (True, False):
        reference, run = _both(TASKS["two_arm"], [hp], steps=STEPS, seeds=4, seed=2, expected=expected, start_logits=start)
        np.testing.assert_allclose(run.logits, reference.logits, rtol=0, atol=PATH_TOL)
        assert np.all(run.logits[..., 0] == 0.7)  # the fixed logit stays put


@needs_numba
def test_chunks_and_single_steps_give_identical_runs(monkeypatch):
    """advance(n) in small chunks, one call, or n step() calls: bit-identical (refresh mid-chunk included)."""
    hp = Hyperparams(lr=1.0, refresh_interval=3, group_size=4, num_groups=2, kl_coef=0.3, kl_estimator="k3",
                     correction="token", optimizer=Adam(eps=ADAM_EPS))
    configs = [hp, dataclasses.replace(hp, refresh_interval=5, optimizer=SGD(momentum=0.9))]

    def run(advance):
        engine = _numba.NumbaEngine(TASKS["prompts"], configs, seeds=3, seed=11)
        advance(engine)
        return engine.logits.numpy(), engine.moment1.copy(), engine.t

    whole = run(lambda e: e.advance(17))
    stepped = run(lambda e: [e.step() for _ in range(17)])
    monkeypatch.setattr(_numba, "CHUNK_UNIFORMS", 3 * 3 * 8 * 2)  # 2 steps per chunk (S P N = 3 * 3 * 8)
    chunked = run(lambda e: e.advance(17))
    for other in (stepped, chunked):
        np.testing.assert_array_equal(other[0], whole[0])
        np.testing.assert_array_equal(other[1], whole[1])
        assert other[2] == whole[2] == 17


@needs_numba
def test_serial_and_parallel_kernels_give_identical_runs(monkeypatch):
    """1 torch thread runs the serial kernel, 2 the parallel one; same bits, and torch's thread count is kept."""
    monkeypatch.setattr(_numba, "PARALLEL_MIN_WORK", 0)  # the parallel kernel even for this small batch
    hp = Hyperparams(lr=1.0, refresh_interval=2, group_size=8, kl_coef=0.5)
    configs = [dataclasses.replace(hp, lr=lr) for lr in (0.5, 1.0, 1.5)]  # 3 x 9 x 3 runs: partial lane blocks too
    finals = []
    threads = torch.get_num_threads()
    try:
        for n in (1, 2):
            torch.set_num_threads(n)
            finals.append(simulate(TASKS["prompts"], configs, steps=20, seeds=9, seed=5, engine="numba").final_logits)
            assert torch.get_num_threads() == n  # numba's OpenMP layer would reset it
    finally:
        torch.set_num_threads(threads)
    np.testing.assert_array_equal(finals[0], finals[1])


@needs_numba
def test_draws_the_torch_engines_random_numbers():
    """After the same steps the generators of the numba and torch engines are in the same state."""
    hp = Hyperparams(lr=1.0, group_size=8, num_groups=3, kl_coef=0.1)
    engines = [cls(TASKS["prompts"], [hp], seeds=5, seed=3) for cls in (TwoArmEngine, _numba.NumbaEngine)]
    for engine in engines:
        for _ in range(4):
            engine.step()
    draws = [torch.rand(3, generator=e.generator, dtype=torch.float64) for e in engines]
    assert torch.equal(draws[0], draws[1])


@needs_numba
def test_independent_streams_agree_in_distribution():
    """Mean and variance of R over 4000 seeds at several steps: numba (seed 1) vs torch (seed 2), within Z_SE.

    Standard errors: of a mean, sd / sqrt(n); of a variance, sqrt((m4 - s^4 (n - 3)/(n - 1)) / n) from
    the sample fourth central moment m4 (no normality assumed). The stream is independent, so this
    checks the sampling law, not the shared uniforms.
    """
    hp = Hyperparams(lr=1.0, optimizer=SGD(momentum=0.9), refresh_interval=4, group_size=8, kl_coef=0.5)
    seeds, steps = 4000, 60
    runs = [simulate(TASKS["two_arm"], [hp], steps=steps, seeds=seeds, seed=seed, record_every=15, engine=engine)
            .reward[1:, 0, :, 0] for engine, seed in (("numba", 1), ("fast", 2))]  # (records, S) each

    def moments(r):
        mean, var = r.mean(1), r.var(1, ddof=1)
        m4 = ((r - mean[:, None]) ** 4).mean(1)
        return mean, var, var / seeds, (m4 - var**2 * (seeds - 3) / (seeds - 1)) / seeds

    (m_a, v_a, se2m_a, se2v_a), (m_b, v_b, se2m_b, se2v_b) = map(moments, runs)
    assert np.all(np.abs(m_a - m_b) <= Z_SE * np.sqrt(se2m_a + se2m_b))
    assert np.all(np.abs(v_a - v_b) <= Z_SE * np.sqrt(se2v_a + se2v_b))
    assert np.all(v_a > 1e-4)  # the runs really fluctuate


@needs_numba
def test_stationary_variance_follows_one_over_g():
    """Var(R) at G = 4 and 16 within LEVEL_TOL of the discrete-Lyapunov level, and their ratio near 4.

    The bandit of paper_repro/one_over_g.py (R* ~ 0.7, SGD lr 0.5, T = 2, beta = 0.5).
    """
    bandit = TwoArmBandit(ref_logit=-1.0)
    base = Hyperparams(lr=0.5, refresh_interval=2, kl_coef=0.5)
    task = BanditTask.two_arm(ref_logit=-1.0)
    measured, predicted = [], []
    for G in (4, 16):
        hp = dataclasses.replace(base, group_size=G)
        r = simulate(task, [hp], steps=1200, seeds=512, seed=G, record_every=10, engine="numba").reward[60:, 0, :, 0]
        measured.append(float(np.mean(r.var(axis=1, ddof=1))))
        predicted.append(stationary_reward_variance(bandit, hp))
    ratio = np.array(measured) / np.array(predicted)
    assert np.all(np.abs(ratio - 1.0) <= LEVEL_TOL), ratio
    assert math.log(measured[0] / measured[1]) / math.log(4.0) == pytest.approx(1.0, abs=0.1)  # slope -1


# ---- engine choice --------------------------------------------------------------------------------


@needs_numba
def test_numba_is_opt_in_and_auto_stays_on_torch():
    task = TASKS["two_arm"]
    assert engine_class(task, "numba") is _numba.NumbaEngine
    assert engine_class(task) is TwoArmEngine  # auto: never the compiled engine (seconds of compile on first use)
    assert engine_class(TASKS["prompts"], "auto") is TwoArmEngine
    assert engine_class(BanditTask.k_arm([0.0, 1.0, 0.5])) is BanditEngine


@needs_numba
@pytest.mark.parametrize(
    "task, kwargs, match",
    [
        (BanditTask.k_arm([0.0, 1.0, 0.5]), {}, "two-arm"),
        (BanditTask.k_arm([0.0, 1.0]), {}, "two-arm"),  # both logits trained
        (TASKS["two_arm"], {"dtype": torch.float32}, "float64"),
        (TASKS["two_arm"], {"seeds": 0}, "seeds"),
    ],
    ids=["three_arms", "all_trained", "float32", "no_seeds"],
)
def test_numba_engine_refuses_what_it_cannot_run(task, kwargs, match):
    with pytest.raises(ConfigError, match=match):
        simulate(task, [Hyperparams(lr=1.0, group_size=4)], steps=1, engine="numba", **kwargs)


def test_without_numba_auto_falls_back_to_torch_and_numba_is_a_config_error(monkeypatch):
    monkeypatch.setattr(_numba, "available", lambda: False)
    task, hp = TASKS["two_arm"], Hyperparams(lr=1.0, group_size=4)
    assert engine_class(task) is TwoArmEngine
    with pytest.raises(ConfigError, match=r"pip install 'gspo-dynamics\[fast\]'"):
        simulate(task, [hp], steps=1, engine="numba")
