"""predict._prior: the task's end level from finished runs, against independent routes (normal draws for the
prediction interval's coverage, scipy's t distribution for its quantile, the log's own arithmetic)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.predict import pilot_forecast, prior_interval, task_prior, read_run_config
from gspo_dynamics.predict._prior import LEVEL
from test_pilot import heavy_ball_curve, write_log


def finished_run(rng, end: float, steps: int = 96, noise: float = 0.02) -> np.ndarray:
    """A rise from 0.2 to `end` over the first third, then flat, with normal noise, clipped to [0, 1]."""
    t = np.arange(steps)
    return np.clip(end - (end - 0.2) * np.exp(-t / (steps / 12)) + rng.normal(0, noise, steps), 0, 1)


def test_the_interval_is_the_student_t_prediction_interval():
    """(3) against scipy.stats.t.interval scaled by s sqrt(1 + 1/n) (the same pivot, another route to its quantile)."""
    ends = [0.61, 0.66, 0.58, 0.7, 0.64]
    mean, lo, hi = prior_interval(ends)
    s = np.std(ends, ddof=1) * math.sqrt(1 + 1 / len(ends))
    want = stats.t.interval(LEVEL, len(ends) - 1, loc=np.mean(ends), scale=s)
    assert mean == pytest.approx(np.mean(ends), abs=1e-12) and (lo, hi) == pytest.approx(want, abs=1e-12)
    assert prior_interval([0.5]) is None


@pytest.mark.parametrize("n", [2, 4, 12])
def test_the_interval_covers_a_new_normal_draw_at_its_level(n):
    """20 000 draws of n + 1 i.i.d. normal levels: the interval from n covers the last at LEVEL within 4 s.e.
    (s.e. = sqrt(LEVEL (1 - LEVEL) / 20 000) = 0.0021)."""
    rng = np.random.default_rng(n)
    draws = rng.normal(0.6, 0.05, size=(20_000, n + 1))
    covered = [lo <= d[-1] <= hi for d in draws for _, lo, hi in [prior_interval(d[:-1])]]
    assert abs(np.mean(covered) - LEVEL) < 4 * math.sqrt(LEVEL * (1 - LEVEL) / 20_000)


def test_end_levels_are_the_last_sixth_and_a_run_that_lost_its_reward_is_left_out(tmp_path):
    rng = np.random.default_rng(0)
    kept = [finished_run(rng, e) for e in (0.9, 0.92, 0.88)]
    fell = finished_run(rng, 0.9)
    fell[60:] = 0.05  # lost its reward after step 60
    paths = [write_log(tmp_path / f"r{i}.jsonl", {"reward": r}) for i, r in enumerate(kept + [fell])]
    prior = task_prior(paths, reward_range=(0.0, 1.0))
    assert [r.lost for r in prior.runs] == [False, False, False, True]
    assert [r.end for r in prior.runs[:3]] == pytest.approx([float(np.mean(r[-16:])) for r in kept], abs=1e-12)
    assert prior.level == pytest.approx(np.mean([r.end for r in prior.runs[:3]]), abs=1e-12)
    assert prior.interval[0] < prior.level < prior.interval[1]
    text = "\n".join(prior.summary_lines())
    assert "prediction interval" in text and "left out, lost their reward" in text and "r3.jsonl" in text


def test_one_kept_run_gives_a_level_without_an_interval_and_none_kept_gives_none(tmp_path):
    rng = np.random.default_rng(1)
    one = task_prior([write_log(tmp_path / "a.jsonl", {"reward": finished_run(rng, 0.8)})], reward_range=(0, 1))
    assert one.interval is None and one.level == pytest.approx(0.8, abs=0.03) and "no interval" in one.summary_lines()[1]
    fell = finished_run(rng, 0.8)
    fell[50:] = 0.0
    none = task_prior([write_log(tmp_path / "b.jsonl", {"reward": fell})], reward_range=(0, 1))
    assert none.level is None and none.to_json()["level"] is None and "no run is left" in none.summary_lines()[1]


def test_bad_finished_runs_are_one_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="at least one finished run"):
        task_prior([])
    short = write_log(tmp_path / "s.jsonl", {"reward": np.linspace(0.1, 0.5, 6)})
    with pytest.raises(ConfigError, match="has 6 reward points; a prior needs at least 12"):
        task_prior([short])
    scaled = write_log(tmp_path / "x.jsonl", {"reward": np.linspace(-5, 8, 40)})
    with pytest.raises(ConfigError, match="outside the reward range .* same task"):
        task_prior([scaled], reward_range=(0.0, 1.0))


def test_the_pilot_forecast_carries_the_prior_in_text_and_json(tmp_path):
    """A still-rising 24-step pilot (its fit cannot see the level) and three finished runs at 0.9: the prior says 0.9."""
    rng = np.random.default_rng(2)
    pilot = write_log(tmp_path / "pilot.jsonl", {"reward": heavy_ball_curve(0.02, 0.0, 24, r_inf=0.9)})
    runs = [write_log(tmp_path / f"r{i}.jsonl", {"reward": finished_run(rng, 0.9)}) for i in range(3)]
    setup = read_run_config({"lr": 0.1, "group_size": 8})
    f = pilot_forecast(setup, pilot, reward_range=(0.0, 1.0), prior=runs)
    assert f.prior.level == pytest.approx(0.9, abs=0.02)
    report = f.to_json()["task_prior"]
    assert report["level"] == f.prior.level and len(report["runs"]) == 3 and report["interval_level"] == LEVEL
    assert any(line.startswith("the task's prior (3 finished runs") for line in f.summary_lines())
    assert pilot_forecast(setup, pilot).to_json()["task_prior"] is None


def test_a_run_whose_log_shows_another_T_is_left_out(tmp_path):
    """Our trainer logs each step's window position 0 .. T - 1: a run at T = 4 is no prior for a run at T = 1."""
    rng = np.random.default_rng(3)
    same = write_log(tmp_path / "t1.jsonl", {"reward": finished_run(rng, 0.9), "window/position": np.zeros(96)})
    other = write_log(tmp_path / "t4.jsonl", {"reward": finished_run(rng, 0.7), "window/position": np.arange(96) % 4})
    prior = task_prior([same, other], reward_range=(0, 1), refresh_interval=1)
    assert [r.refresh for r in prior.runs] == [None, 4] and prior.level == prior.runs[0].end and prior.interval is None
    assert "ran at another T" in "\n".join(prior.summary_lines())
    assert task_prior([same, other], reward_range=(0, 1), refresh_interval=4).runs[0].refresh == 1


def test_a_diverged_run_is_left_out_and_a_dip_without_a_range_is_no_loss(tmp_path):
    """A run whose reward turns NaN for good is left out (`RunLog.diverged`), not read off its finite start; with no
    reward range, a 1.2% dip that a fall test alone calls real is no loss (the run's own span sizes it)."""
    rng = np.random.default_rng(4)
    nan_tail = finished_run(rng, 0.9)
    nan_tail[70:] = np.nan
    good = write_log(tmp_path / "good.jsonl", {"reward": finished_run(rng, 0.9)})
    prior = task_prior([good, write_log(tmp_path / "nan.jsonl", {"reward": nan_tail})], reward_range=(0, 1))
    assert [r.diverged for r in prior.runs] == [None, 71] and prior.level == prior.runs[0].end
    assert "diverged (non-finite rewards to the end): " in "\n".join(prior.summary_lines())
    dipped = 2.0 + 6.0 * (1 - np.exp(-np.arange(96) / 8)) + rng.normal(0, 0.01, 96)
    dipped[60:64] -= 0.1
    path = write_log(tmp_path / "dip.jsonl", {"reward": dipped})
    assert not task_prior([path]).runs[0].lost
    from gspo_dynamics.fit._fall import reward_fall
    assert reward_fall(np.arange(96), dipped, None).lost  # the fall test alone reads the dip as a loss


def test_sources_given_once_as_a_string_or_twice(tmp_path):
    rng = np.random.default_rng(5)
    path = write_log(tmp_path / "a.jsonl", {"reward": finished_run(rng, 0.8)})
    assert len(task_prior(path).runs) == 1
    with pytest.raises(ConfigError, match="a.jsonl is given twice"):
        task_prior([path, path])


def test_a_range_inferred_from_the_pilot_is_named_when_a_finished_run_leaves_it(tmp_path):
    """The pilot's rewards lie in [0, 1], so [0, 1] is inferred; a finished run that reached 1.3 is refused with
    the way out (--reward-range), and accepted under the task's range."""
    rng = np.random.default_rng(6)
    pilot = write_log(tmp_path / "pilot.jsonl", {"reward": heavy_ball_curve(0.05, 0.0, 24, r_inf=1.3, r0=0.2).clip(0, 1)})
    above = write_log(tmp_path / "above.jsonl", {"reward": finished_run(rng, 1.3).clip(0, None) + 0.3 * (np.arange(96) > 40)})
    setup = read_run_config({"lr": 0.1, "group_size": 8})
    with pytest.raises(ConfigError, match=r"inferred from the pilot's rewards: --reward-range gives the task's"):
        pilot_forecast(setup, pilot, prior=[above])
    assert pilot_forecast(setup, pilot, reward_range=(0.0, 2.0), prior=[above]).prior.level > 1


def test_before_a_run_the_config_and_the_prior_without_a_pilot(tmp_path):
    """`prior_forecast`: the config-only answer with the prior's lines before its notes; [0, 1] taken, and said,
    when every run's rewards lie there (the interval clipped to it), none when one leaves it."""
    from gspo_dynamics.predict import prior_forecast
    from gspo_dynamics.predict import config_forecast

    rng = np.random.default_rng(7)
    runs = [write_log(tmp_path / f"r{i}.jsonl", {"reward": finished_run(rng, end)}) for i, end in enumerate((0.99, 0.9))]
    config = config_forecast(read_run_config({"lr": 0.1, "group_size": 8}))
    f = prior_forecast(config, runs)
    assert f.prior.interval[1] == 1.0 and "success rate in [0, 1]" in f.prior.assumed[0]
    assert f.to_json()["task_prior"]["assumed"] == list(f.prior.assumed) and "stiffness_bound" in f.to_json()
    scaled = [write_log(tmp_path / f"s{i}.jsonl", {"reward": 3 * finished_run(rng, 0.9)}) for i in range(2)]
    assert prior_forecast(config, scaled).prior.assumed == ()


def test_runs_whose_rewards_share_no_value_are_one_error_without_a_range(tmp_path):
    """Runs of one task start from the same policy; a run on another scale (rewards 3x) shares no value with them."""
    rng = np.random.default_rng(8)
    run = write_log(tmp_path / "run.jsonl", {"reward": finished_run(rng, 0.5)})
    scaled = write_log(tmp_path / "scaled.jsonl", {"reward": 3 + finished_run(rng, 0.9)})
    with pytest.raises(ConfigError, match="run.jsonl .* and .*scaled.jsonl .* share no reward value"):
        task_prior([run, scaled])
    assert task_prior([run, write_log(tmp_path / "b.jsonl", {"reward": finished_run(rng, 0.9)})]).level is not None


def test_runs_of_two_tasks_inside_an_inferred_range_are_still_refused(tmp_path):
    """[0, 1] taken from the rewards holds runs of another task too: the shared-scale check still applies."""
    from gspo_dynamics.predict import prior_forecast
    from gspo_dynamics.predict import config_forecast

    rng = np.random.default_rng(9)
    low = write_log(tmp_path / "low.jsonl", {"reward": 0.1 + rng.uniform(0, 0.02, 96)})
    high = write_log(tmp_path / "high.jsonl", {"reward": 0.8 + rng.uniform(0, 0.02, 96)})
    with pytest.raises(ConfigError, match="share no reward value"):
        prior_forecast(config_forecast(read_run_config({"lr": 0.1, "group_size": 8})), [low, high])
    assert task_prior([low, high], reward_range=(0.0, 1.0)).level is not None  # a given range: the user's word


# ---- (4): the level leaning toward the runs like the config ----------------------------------------------------

def gaussian_posterior_mean(ends, prior_mean: float, tau: float, sigma: float) -> float:
    """E[mu | e] for mu ~ N(prior_mean, tau^2), e_j = mu + N(0, sigma^2) i.i.d., by conditioning the joint normal
    of (mu, e) with numpy's solver: Cov(mu, e) Cov(e, e)^-1 (e - prior_mean) + prior_mean."""
    e = np.asarray(ends, dtype=float)
    cov_ee = tau**2 * np.ones((e.size, e.size)) + sigma**2 * np.eye(e.size)
    return float(prior_mean + (tau**2 * np.ones(e.size)) @ np.linalg.solve(cov_ee, e - prior_mean))


@pytest.mark.parametrize("n", [1, 3, 8])
def test_one_level_of_the_shrinkage_is_the_normal_posterior_mean(n):
    """(4) with kappa = sigma^2 / tau^2 against the joint normal's conditional mean (another route: linear algebra on
    the covariance, not the closed form); exact to rounding."""
    from gspo_dynamics.predict._prior import shrunk_level

    rng = np.random.default_rng(n)
    parent, own = list(rng.normal(0.6, 0.1, 12)), list(rng.normal(0.8, 0.05, n))
    sigma, tau = 0.05, 0.05 / math.sqrt(2.0)
    want = gaussian_posterior_mean(own, float(np.mean(parent)), tau, sigma)
    assert shrunk_level([parent, own], kappa=(sigma / tau) ** 2) == pytest.approx(want, abs=1e-12)


def test_the_shrinkage_between_its_limits_and_with_empty_levels():
    """kappa -> 0: the innermost runs' mean; kappa -> inf: every run's (2); an empty level is its parent's; no run:
    None; kappa not a positive number: one ConfigError naming it."""
    from gspo_dynamics.predict._prior import shrunk_level

    levels = [[0.5, 0.7, 0.9, 0.9], [0.9, 0.9, 0.7], [0.9]]
    assert shrunk_level(levels, kappa=1e-9) == pytest.approx(0.9, abs=1e-8)
    assert shrunk_level(levels, kappa=1e9) == pytest.approx(0.75, abs=1e-8)
    m1 = (2.5 + 2 * 0.75) / 5
    assert shrunk_level(levels) == pytest.approx((0.9 + 2 * m1) / 3, abs=1e-12)  # kappa = SHRINKAGE = 2, by hand
    assert shrunk_level([[0.5, 0.7], [], []]) == pytest.approx(0.6) and shrunk_level([[], [0.9]]) is None
    for bad in (0, -1.0, math.nan, math.inf, "2"):
        with pytest.raises(ConfigError, match="kappa"):
            shrunk_level(levels, kappa=bad)


def trainer_run(root, name: str, rng, end: float, objective: str, lr: float, optimizer: str = "adamw") -> str:
    """Our trainer's run directory: config.json beside metrics.jsonl (the log's path returned)."""
    import json

    run = root / name
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"task": "count", "model": "100k", "objective": objective, "lr": lr,
                                                 "optimizer": optimizer, "steps": 96}))
    return write_log(run / "metrics.jsonl", {"reward": finished_run(rng, end)})


def test_the_level_leans_toward_runs_with_the_configs_loss_and_step(tmp_path):
    """task_prior with the forecast run's setup: (4) over the configs beside the logs, checked by hand from the runs'
    own end levels; the counts and the pooled level (2) in JSON; a run beside a model's config.json counts at the
    task's level only; the interval keeps (3)'s half-width about the level."""
    from gspo_dynamics.predict._prior import SHRINKAGE, prior_interval

    rng = np.random.default_rng(11)
    runs = [trainer_run(tmp_path, "a", rng, 0.95, "grpo", 3e-3), trainer_run(tmp_path, "b", rng, 0.8, "grpo", 1e-3),
            trainer_run(tmp_path, "c", rng, 0.6, "gspo", 3e-3), trainer_run(tmp_path, "d", rng, 0.7, "gspo", 3e-3)]
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "config.json").write_text('{"architectures": ["Qwen2ForCausalLM"], "hidden_size": 896}')
    runs.append(write_log(tmp_path / "hf" / "metrics.jsonl", {"reward": finished_run(rng, 0.75)}))
    setup = read_run_config({"task": "count", "model": "100k", "objective": "grpo", "lr": 3e-3, "steps": 96})
    plain = task_prior(runs, (0.0, 1.0))
    prior = task_prior(runs, (0.0, 1.0), setup=setup)
    ends = {r.source.split("/")[-2]: r.end for r in prior.runs}
    m0 = np.mean(list(ends.values()))
    m1 = (ends["a"] + ends["b"] + SHRINKAGE * m0) / (2 + SHRINKAGE)
    assert prior.pooled == pytest.approx(m0) == pytest.approx(plain.level) and plain.matched is None
    assert prior.level == pytest.approx((ends["a"] + SHRINKAGE * m1) / (1 + SHRINKAGE), abs=1e-12)
    assert prior.matched == (2, 1) and prior.assumed == ()  # a model's config.json (a checkpoint's) is no run's: unsaid
    _, lo, hi = prior_interval(list(ends.values()))
    assert prior.interval == pytest.approx((max(lo - m0 + prior.level, 0.0), min(hi - m0 + prior.level, 1.0)))
    js = prior.to_json()
    assert (js["same_loss_runs"], js["same_loss_optimizer_lr_runs"], js["pooled_level"]) == (2, 1, pytest.approx(m0))
    assert js["runs"][0]["config"] == {"loss": "grpo", "optimizer": "adam", "lr": 3e-3} and js["runs"][4]["config"] is None
    assert any("leaning toward the runs like this config" in line and "2 with its loss, 1 of them" in line
               for line in prior.summary_lines())


@pytest.mark.parametrize("content, says", [("not json", "not valid JSON"), ("[1, 2]", "one mapping"),
                                           ('{"loss_type": ["grpo"], "learning_rate": 1e-6}', "loss_type must be a name"),
                                           ('{"algorithm": {"adv_estimator": ["grpo"]}, "actor_rollout_ref": {}}',
                                            "adv_estimator")])
def test_a_bad_config_beside_a_log_is_one_note_and_a_log_without_a_path_reads_none(tmp_path, monkeypatch, content, says):
    """config_beside: a config.json that no mapping reads is a note (its run's loss and step unknown), never an error;
    a log read from text has no directory, so the working directory's config.json is not its."""
    from gspo_dynamics.predict._prior import config_beside

    (tmp_path / "config.json").write_text(content)
    log = write_log(tmp_path / "m.jsonl", {"reward": np.linspace(0.2, 0.9, 20)})
    setup, why = config_beside(str(log))
    assert setup is None and "is not a run config" in why and says in why
    monkeypatch.chdir(tmp_path)
    assert config_beside("<text>") == (None, None) and config_beside("<bytes>") == (None, None)


def test_a_config_says_a_runs_T_only_where_its_log_does_not(tmp_path):
    """A run given with a config at another T is left out (its config's T said); one whose log's window positions
    show the forecast's T stays in whatever its config says: the log is what ran."""
    import json

    rng = np.random.default_rng(5)
    setup = read_run_config({"task": "count", "model": "100k", "objective": "grpo", "lr": 1e-3, "steps_per_generation": 4})
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"task": "count", "model": "100k", "objective": "grpo", "lr": 1e-3,
                                 "steps_per_generation": 8}))
    plain = write_log(tmp_path / "plain.jsonl", {"reward": finished_run(rng, 0.9)})
    logged = write_log(tmp_path / "logged.jsonl", {"reward": finished_run(rng, 0.9), "window/position": np.arange(96) % 4})
    prior = task_prior([plain, logged], (0.0, 1.0), refresh_interval=4, setup=setup, configs=[str(other), str(other)])
    assert [r.refresh for r in prior.runs] == [8, None] and len(prior.kept) == 1
