"""Small version of paper_repro/critical_refresh_interval.py in the default suite."""

import numpy as np

from gspo_dynamics.sim import simulated_critical_refresh_interval
from gspo_dynamics.theory import linear
from gspo_dynamics.theory.bandit import TwoArmBandit, fixed_point, stiffness_partials
from gspo_dynamics.theory.hyperparams import SGD, Hyperparams
from gspo_dynamics.theory.nonlinear import critical_refresh_interval_from_start


def test_exact_and_from_start_thresholds_match_simulation_within_one():
    bandit = TwoArmBandit(ref_logit=-1.0)
    configs = [Hyperparams(lr=lr, optimizer=SGD(momentum=mu), kl_coef=0.5) for mu, lr in ((0.0, 2.0), (0.5, 1.0), (0.9, 0.5))]
    t_max = 16
    local = simulated_critical_refresh_interval(bandit, configs, t_max, start="local")
    start = simulated_critical_refresh_interval(bandit, configs, t_max, start="reference")
    for hp, sim_local, sim_start in zip(configs, local, start):
        fp = fixed_point(bandit, hp)
        a, b = stiffness_partials(fp.logit, bandit, hp)
        mu = hp.optimizer.momentum
        exact = int(linear.critical_refresh_interval(a, b, hp.lr, mu, t_max))
        fs = critical_refresh_interval_from_start(bandit, hp, hp.lr, mu, t_max).critical_refresh_interval
        assert exact != linear.STABLE and abs(exact - sim_local) <= 1
        assert abs(fs - sim_start) <= 1
    assert np.all(local > 0)
