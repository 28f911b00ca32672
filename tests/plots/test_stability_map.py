"""`predict --plot`'s stability map in the config's own keys: over the config's learning rate where a pilot gives
the scale (its stiffness per unit lr), over eta K with the lr scale said to be unidentified where no pilot does."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gspo_dynamics.plots.stability_map import REFRESH_INTERVALS, stability_map_figure
from gspo_dynamics.predict import config_forecast, pilot_forecast, read_run_config, stiffness_bounds

TRL = {"learning_rate": 0.1, "optim": "sgd", "num_generations": 8, "per_device_train_batch_size": 32,
       "steps_per_generation": 4}
VERL = {"data": {"train_batch_size": 512}, "algorithm": {"adv_estimator": "grpo"},
        "actor_rollout_ref": {"actor": {"optim": {"lr": 0.1}, "ppo_mini_batch_size": 128, "ppo_epochs": 1},
                              "rollout": {"n": 8}}}
VERL_LR = "actor_rollout_ref.actor.optim.lr"


def pilot(tmp_path, config: dict, kappa: float = 0.05, mu: float = 0.5, steps: int = 60):
    """A noise-free rise from the heavy-ball recurrence v <- mu v - kappa x, x <- x + v (a stiffness a fit identifies),
    as a pilot of `config`."""
    x, v, reward = -0.6, 0.0, []
    for _ in range(steps):
        reward.append(0.8 + x)
        v = mu * v - kappa * x
        x += v
    path = tmp_path / "pilot.jsonl"
    path.write_text("".join(json.dumps({"step": i + 1, "reward": r}) + "\n" for i, r in enumerate(reward)))
    return pilot_forecast(read_run_config(config), str(path), reward_range=(0.0, 1.0))


def line(ax, prefix: str):
    (found,) = [ln for ln in ax.get_lines() if ln.get_label().startswith(prefix)]
    return found.get_xydata()


@pytest.mark.parametrize("config, key, factor", [(TRL, "learning_rate", 1.0), (VERL, VERL_LR, 1.0),
                                                 ({**TRL, "max_steps": 100}, "learning_rate", 0.705)])
def test_with_a_pilot_the_map_is_over_the_configs_learning_rate(tmp_path, config, key, factor):
    """The x axis names the config's lr key, the config's point sits at its own lr and T, and the exact discrete edge
    is x_max(T) over the pilot's stiffness per unit lr: at the config's T it is the printed max safe lr (under TRL's
    linear decay too: a 60-step pilot of a 100-step run at 1 - 29.5 / 100 of the peak lr on average), and it splits the
    shaded grid (stable left of it, unstable right) at every T."""
    f = pilot(tmp_path, config)
    assert f.max_safe_lr is not None  # the pilot identifies the stiffness: the linear map is drawn
    hp = f.config.setup.hparams
    ax = stability_map_figure(f).axes[0]
    assert ax.get_xlabel() == f"learning rate (config key {key})"
    assert ax.get_ylabel().startswith("optimizer steps per rollout T")
    assert [tuple(p) for p in line(ax, "this config")] == [(hp.lr, hp.refresh_interval)]
    edge = line(ax, "largest stable lr at each T")
    assert np.array_equal(edge[:, 1], REFRESH_INTERVALS)
    per_lr = f.implications.stiffness_per_step.value / (factor * hp.lr)  # kappa / (m_p lr), predict._schedule
    assert edge[:, 0] == pytest.approx(stiffness_bounds(hp.momentum, REFRESH_INTERVALS) / per_lr, rel=1e-9)
    assert edge[hp.refresh_interval - 1, 0] == pytest.approx(f.max_safe_lr, rel=1e-12)
    mesh = next(c for c in ax.collections if c.get_array() is not None and c.get_array().ndim == 2)
    lrs = np.geomspace(hp.lr / 100, hp.lr * 100, 121)
    assert np.array_equal(np.asarray(mesh.get_array(), dtype=bool), edge[:, [0]] <= lrs[None, :])
    assert "(the pilot's curvature)" in ax.child_axes[0].get_xlabel()  # the eta K it converts, on the top axis


@pytest.mark.parametrize("config, key, refresh", [(TRL, "learning_rate", "steps_per_generation"),
                                                  (VERL, VERL_LR, "ppo_mini_batch_size")])
def test_without_a_pilot_the_map_stays_over_eta_k_and_says_the_lr_scale_is_not_identified(config, key, refresh):
    """No pilot, no curvature: the axis stays eta K (the same exact discrete x_max(T) as the theory's), its label
    says the config's lr multiplies an unknown curvature; T's axis names the config's keys behind it."""
    f = config_forecast(read_run_config(config))
    ax = stability_map_figure(f).axes[0]
    label = " ".join(ax.get_xlabel().split())
    assert label.startswith(f"stiffness per step eta K = {key} x curvature")
    assert "not identified without a pilot" in label
    assert refresh in ax.get_ylabel().replace("\n", " ")
    edge = line(ax, "x_max(T)")
    assert np.array_equal(edge[:, 0], stiffness_bounds(f.momentum, REFRESH_INTERVALS))
    assert any(ln.get_label() == f"this config: T = {f.setup.hparams.refresh_interval}" for ln in ax.get_lines())


def test_the_theorys_own_hyperparameters_keep_plain_names(tmp_path):
    """Without a framework's keys (`lr`, `refresh_interval` given as the theory's): lr and T, no key formula."""
    f = pilot(tmp_path, {"lr": 0.1, "refresh_interval": 4, "group_size": 8, "optimizer": "sgd", "momentum": 0.5})
    ax = stability_map_figure(f).axes[0]
    assert ax.get_xlabel() == "learning rate (config key lr)" and ax.get_ylabel() == "optimizer steps per rollout T"


@pytest.mark.parametrize("max_steps, drawn_to", [(120, 120), (900, 60), (None, 60)])
def test_the_pilots_fit_is_drawn_only_as_far_as_an_answer_reaches(tmp_path, max_steps, drawn_to):
    """The pilot panel's fit runs to the run's end where the end reward is forecast (a 60-step pilot of 120 steps), and
    over the pilot alone where it is not: a run 15 times the pilot (no band calibrates it) or of unknown length."""
    config = {**TRL, **({} if max_steps is None else {"max_steps": max_steps}), "lr_scheduler_type": "constant"}
    f = pilot(tmp_path, config)
    assert (f.end is None) == (max_steps is None) and (f.end is None or f.end.identified == (max_steps == 120))
    fits = [ln.get_xydata() for ax in stability_map_figure(f).axes for ln in ax.get_lines()
            if ln.get_label().endswith(" fit")]
    assert len(fits) == 1 and fits[0][-1, 0] == pytest.approx(drawn_to)
