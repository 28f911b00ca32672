import dataclasses

import pytest

from gspo_dynamics import ConfigError
from gspo_dynamics.theory.hyperparams import SGD, Adam, Hyperparams, effective_sgd


@pytest.mark.parametrize("kwargs, needle", [
    ({"lr": -1.0}, "learning rate"),
    ({"lr": float("inf")}, "lr"),
    ({"lr": 1.0, "refresh_interval": 0}, "refresh interval"),
    ({"lr": 1.0, "refresh_interval": 2.5}, "refresh interval"),
    ({"lr": 1.0, "group_size": 1}, "group size"),
    ({"lr": 1.0, "advantage": "median"}, "advantage"),
    ({"lr": 1.0, "correction": "tokens"}, "correction"),
    ({"lr": 1.0, "kl_coef": -0.1}, "KL"),
    ({"lr": 1.0, "clip_low": 1.5}, "clip_low"),
    ({"lr": 1.0, "kl_estimator": "k2"}, "KL estimator"),
    ({"lr": 1.0, "num_groups": 0}, "groups"),
])
def test_impossible_values_raise_one_clear_error(kwargs, needle):
    with pytest.raises(ConfigError, match=needle):
        Hyperparams(**kwargs)


@pytest.mark.parametrize("make, needle", [
    (lambda: SGD(momentum=1.0), "momentum"),
    (lambda: SGD(momentum=-0.1), "momentum"),
    (lambda: Adam(beta1=1.0), "beta1"),
    (lambda: Adam(eps=0.0), "eps"),
])
def test_optimizer_validation(make, needle):
    with pytest.raises(ConfigError, match=needle):
        make()


def test_frozen_and_replace_validates():
    hp = Hyperparams(lr=1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        hp.lr = 2.0  # type: ignore[misc]
    with pytest.raises(ConfigError):
        dataclasses.replace(hp, refresh_interval=0)


def test_effective_sgd_of_adam_is_preconditioned_heavy_ball():
    hp = Hyperparams(lr=1e-3, optimizer=Adam(beta1=0.9, eps=1e-8))
    lr, mu = effective_sgd(hp, second_moment=1e-4)
    assert mu == 0.9 and lr == pytest.approx(1e-3 * 0.1 / (1e-2 + 1e-8))
    assert effective_sgd(Hyperparams(lr=0.3, optimizer=SGD(momentum=0.5)), 123.0) == (0.3, 0.5)
