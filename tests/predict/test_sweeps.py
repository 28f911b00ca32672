import json
from pathlib import Path

import pytest

from gspo_dynamics import ConfigError
from gspo_dynamics.predict import load_sweep

SIMS = sorted((Path(__file__).parents[2] / "sims").glob("*.json"))


@pytest.mark.parametrize("path", SIMS, ids=lambda p: p.stem)
@pytest.mark.parametrize("quick", [True, False])
def test_every_bundled_sweep_loads(path, quick):
    sweep = load_sweep(path, quick=quick)
    assert sweep.configs and len(sweep.configs) == len(sweep.points)
    for hp, point in zip(sweep.configs, sweep.points):
        for key, value in point.items():
            actual = hp.optimizer.momentum if key == "momentum" else getattr(hp, key)
            assert actual == pytest.approx(value)


def test_grid_is_a_cartesian_product_in_written_order(tmp_path):
    spec = {"bandit": {"ref_logit": 0.0}, "base": {"kl_coef": 0.5},
            "grid": {"momentum": [0.0, 0.9], "lr": {"linspace": [1.0, 2.0], "quick": 3, "full": 5}}}
    path = tmp_path / "s.json"
    path.write_text(json.dumps(spec))
    sweep = load_sweep(path, quick=True)
    assert [(p["momentum"], p["lr"]) for p in sweep.points] == [(0.0, 1.0), (0.0, 1.5), (0.0, 2.0), (0.9, 1.0), (0.9, 1.5), (0.9, 2.0)]


@pytest.mark.parametrize("text, needle", [
    ("{not json", "cannot read"),
    ('{"base": {"lr": 1.0, "warp": 3}}', "unknown hyperparameter"),
    ('{"base": {"lr": -1.0}}', "learning rate"),
    ('{"base": {"lr": 1.0}, "grid": {"lr": []}}', "grid axis"),
    ('{"base": {"lr": 1.0, "optimizer": "lion"}}', "optimizer"),
])
def test_bad_sweeps_are_one_clear_error(tmp_path, text, needle):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(ConfigError, match=needle):
        load_sweep(path)
