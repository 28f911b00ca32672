"""predict_bandit: the report the `predict` command prints."""

import json
import math

import pytest

from gspo_dynamics import ConfigError
from gspo_dynamics.predict import as_json_ready, predict_bandit, summary_lines
from gspo_dynamics.theory.bandit import TwoArmBandit, sigmoid
from gspo_dynamics.theory.hyperparams import SGD, Adam, Hyperparams

ISSUE_EXAMPLE = dict(lr=2.0, optimizer=SGD(momentum=0.9), refresh_interval=4, kl_coef=0.5)
REQUIRED = ("fixed_point_reward", "stiffness", "stiffness_stale", "stiffness_fresh", "critical_refresh_interval",
            "critical_refresh_interval_from_start", "critical_refresh_interval_continuous", "spectral_radius",
            "damping_ratio", "regime")


def test_issue_example_values():
    r = predict_bandit(TwoArmBandit(ref_logit=-1.0), Hyperparams(**ISSUE_EXAMPLE))
    assert all(k in r for k in REQUIRED)
    # mean baseline, exact KL: z* = z_ref + 1/beta = 1, and k = lr beta p*(1-p*) (stale + fresh).
    p = float(sigmoid(1.0))
    assert r["fixed_point_reward"] == pytest.approx(p, abs=1e-12)
    assert r["stiffness"] == pytest.approx(2.0 * 0.5 * p * (1 - p), rel=1e-10)
    assert r["stiffness"] == pytest.approx(r["stiffness_stale"] + r["stiffness_fresh"], rel=1e-12)
    # stale part: lr * -d/dz [p (1-p)] = lr p (1-p)(2p - 1)
    assert r["stiffness_stale"] == pytest.approx(2.0 * p * (1 - p) * (2 * p - 1), rel=1e-10)
    assert r["critical_refresh_interval"] == 3 and r["regime"] == "unstable" and r["spectral_radius"] > 1
    assert r["regime_continuous"] in ("overdamped", "oscillatory", "unstable")
    json.dumps(as_json_ready(r), allow_nan=False)


def test_stable_configuration_is_consistent():
    r = predict_bandit(TwoArmBandit(ref_logit=-1.0), Hyperparams(lr=1.0, optimizer=SGD(momentum=0.5), refresh_interval=2,
                                                                 kl_coef=0.5, group_size=16, num_groups=4))
    assert r["regime"] in ("overdamped", "oscillatory") and r["spectral_radius"] < 1
    assert r["critical_refresh_interval"] > 2
    assert r["relaxation_steps"] == pytest.approx(-2 / math.log(r["spectral_radius"]))
    assert 0 < r["zero_variance_group_fraction"] < 1 and r["stationary_reward_std"] > 0
    assert any("refresh T" in line for line in summary_lines(r))


def test_no_kl_saturates_without_thresholds():
    r = predict_bandit(TwoArmBandit(ref_logit=0.0), Hyperparams(lr=1.0, kl_coef=0.0))
    assert r["fixed_point_reward"] == 1.0 and r["critical_refresh_interval"] is None and r["notes"]


def test_adam_needs_a_group_size():
    with pytest.raises(ConfigError, match="group size"):
        predict_bandit(TwoArmBandit(ref_logit=0.0), Hyperparams(lr=1e-2, optimizer=Adam(), kl_coef=0.5))
    r = predict_bandit(TwoArmBandit(ref_logit=-1.0), Hyperparams(lr=1e-2, optimizer=Adam(), kl_coef=0.5, group_size=8),
                       from_start=False)
    assert r["effective_momentum"] == 0.9 and r["adam_second_moment"] > 0
