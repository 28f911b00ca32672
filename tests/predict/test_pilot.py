"""gspo_dynamics.fit on pilot logs made here: each measured quantity against an
independent route (the linear recurrence that made the curve, Monte Carlo groups, normal draws)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.predict import pilot_forecast, read_run_config


def write_log(path, columns: dict[str, np.ndarray]) -> str:
    n = len(next(iter(columns.values())))
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"step": i + 1, **{k: float(v[i]) for k, v in columns.items()}}) + "\n")
    return str(path)


def heavy_ball_curve(kappa: float, mu: float, steps: int, r_inf=0.8, r0=0.2) -> np.ndarray:
    """R_t = r_inf - x_t with x from the on-policy heavy-ball recurrence v <- mu v - kappa x, x <- x + v."""
    x, v, out = r0 - r_inf, 0.0, []
    for _ in range(steps):
        out.append(r_inf + x)
        v = mu * v - kappa * x
        x = x + v
    return np.asarray(out)


def stable(x: float, mu: float, T: int, periods: int = 3000) -> bool:
    pos, vel = 1.0, 0.0
    for _ in range(periods):
        sampled = pos
        for _ in range(T):
            vel = mu * vel - x * sampled
            pos += vel
    return math.hypot(pos, vel) < 10


def test_max_safe_lr_recovers_the_stiffness_that_made_the_curve(tmp_path):
    """A noise-free heavy-ball curve (SGD, mu = 0.5, eta K = 0.05 at lr 0.1): the fitted stiffness is the
    true one within 5% (the fit's closed form is the continuous limit of the recurrence), and the lr bound
    at T = 8 sits where the recurrence, scaled in lr, turns unstable (within the same 5%)."""
    mu, kappa, lr, T = 0.5, 0.05, 0.1, 8
    reward = heavy_ball_curve(kappa, mu, 60)
    log = write_log(tmp_path / "pilot.jsonl", {"reward": reward})
    setup = read_run_config({"lr": lr, "refresh_interval": T, "group_size": 8, "optimizer": "sgd", "momentum": mu})
    f = pilot_forecast(setup, log, reward_range=(0.0, 1.0))
    assert f.implications.stiffness_per_step.value == pytest.approx(kappa, rel=0.05)
    bound = f.max_safe_lr * kappa / lr  # the true stiffness at the forecast lr bound
    assert stable(0.93 * bound, mu, T) and not stable(1.07 * bound, mu, T)


def test_a_pilot_a_flat_line_fits_as_well_as_its_curve_bounds_no_lr(tmp_path):
    """Pure noise around 0.35 at T = 2 (40 rows, 60 seeds): before, the fitted stiffness of noise gave an lr bound below
    the config's on 5 seeds, "unsafe" with a 20x lr cut (audit s37: a healthy verl run's 10% pilot); now the bound is
    withheld wherever BIC(flat) - BIC(fit) <= 6, said, and no seed reads unsafe; a noisy rise keeps its bound."""
    from gspo_dynamics.predict import pilot_headline

    setup = read_run_config({"lr": 1e-3, "refresh_interval": 2, "group_size": 8, "num_groups": 8})
    verdicts, said = [], 0
    for seed in range(60):
        reward = 0.35 + 0.04 * np.random.default_rng(seed).standard_normal(40)
        f = pilot_forecast(setup, write_log(tmp_path / f"p{seed}.jsonl", {"reward": reward}), reward_range=(0, 1))
        if f.fit.selection["delta_bic_flat"] <= 6:  # withheld, for this reason where no earlier premise failed
            assert f.max_safe_lr is None
            said += "a flat line fits its rewards as well as its curve or nearly" in f.lr_note
        verdicts.append(pilot_headline(f).verdict)
    assert "unsafe" not in verdicts and said >= 3
    rise = heavy_ball_curve(0.05, 0.9, 40, r_inf=0.6, r0=0.2) + 0.02 * np.random.default_rng(0).standard_normal(40)
    f = pilot_forecast(setup, write_log(tmp_path / "rise.jsonl", {"reward": rise}), reward_range=(0, 1))
    assert f.fit.selection["delta_bic_flat"] > 6 and f.max_safe_lr is not None


def test_zero_std_shares_match_monte_carlo_groups(tmp_path):
    """E_t[p_t^G + (1 - p_t)^G] against 40 000 simulated Bernoulli groups per G (4 s.e.)."""
    rng = np.random.default_rng(0)
    p = np.clip(np.linspace(0.2, 0.9, 30) + rng.normal(0, 0.02, 30), 0, 1)
    log = write_log(tmp_path / "p.jsonl", {"reward": p})
    f = pilot_forecast(read_run_config({"lr": 0.1, "group_size": 8}), log)
    assert f.success_rate == pytest.approx(p.mean())
    for G in (2, 8, 32):
        draws = rng.random((40_000, G)) < rng.choice(p, 40_000)[:, None]
        zero = (draws.all(1) | ~draws.any(1)).astype(float)
        assert abs(zero.mean() - f.zero_std_by_group[G]) <= 4 * zero.std() / math.sqrt(len(zero)) + 1e-12


def test_a_fit_past_the_rewards_bound_is_read_as_saturation(tmp_path):
    """A 60-step pilot of our trainer on pattern with GSPO (deterministic on CPU), whose success
    rate's noisy fit puts the plateau past 1: the summary names the bound, not a plateau the reward cannot
    reach, and the premise note withholds the linear threshold."""
    from gspo_dynamics.logs import read_log
    from gspo_dynamics.train.config import TrainConfig
    from gspo_dynamics.train.trainer import train

    cfg = TrainConfig(task="pattern", model="100k", objective="gspo", steps=60, device="cpu")
    train(cfg, tmp_path / "run")
    f = pilot_forecast(read_run_config(cfg.to_dict()), read_log(tmp_path / "run" / "trainer_state.json"))
    assert f.implications.plateau.value > 1 and f.max_safe_lr is None
    line = next(x for x in f.summary_lines() if x.startswith("  reward curve"))
    assert line.startswith("  reward curve: saturates at the reward's bound 1 (the fit's plateau") and "lies at or past it" in line


def test_the_group_size_for_a_target_noise_matches_binomial_noise(tmp_path):
    """A flat pilot of N = 2 groups of G = 2 Bernoulli(0.3) responses per step over 400 steps: the residual
    noise s estimates sqrt(p (1 - p) / (N G)), so G_sigma for sigma = 0.05 is within 15% of the binomial
    answer p (1 - p) / (N sigma^2) = 42 (s from 400 steps: ~4% error, 8% in s^2). G_sigma is the smallest
    G' with s sqrt(G / G') <= sigma (the formula against a scan), and an exact integer stays itself."""
    rng = np.random.default_rng(3)
    reward = rng.binomial(4, 0.3, 400) / 4
    log = write_log(tmp_path / "flat.jsonl", {"reward": reward})
    f = pilot_forecast(read_run_config({"lr": 0.1, "group_size": 2, "num_groups": 2}), log, target_noise=0.05)
    s = f.noise_by_group[2]
    assert f.group_size_for_target_noise == pytest.approx(0.3 * 0.7 / (2 * 0.05**2), rel=0.15)
    scan = next(g for g in range(1, 10_000) if s * math.sqrt(2 / g) <= 0.05)
    assert f.group_size_for_target_noise == scan
    from gspo_dynamics.predict._pilot import group_size_for_noise

    assert group_size_for_noise(0.1, 4, 0.05) == 16 and group_size_for_noise(0.01, 4, 0.05) == 1
    default = pilot_forecast(read_run_config({"lr": 0.1, "group_size": 2, "num_groups": 2}), log)
    assert default.target_noise == pytest.approx(0.05) and any("5% of the reward's range" in a for a in default.assumed)
    wide = write_log(tmp_path / "wide.jsonl", {"reward": 3.0 * reward})  # rewards past 1: no range inferred
    unknown = pilot_forecast(read_run_config({"lr": 0.1, "group_size": 2, "num_groups": 2}), wide)
    assert unknown.group_size_for_target_noise is None and any("range is unknown" in a for a in unknown.assumed)


def test_drift_and_clip_fractions_from_window_positions(tmp_path):
    """Var_j = (j delta)^2 gives delta back exactly; the clip fraction per T is the window mean of the share
    clipped in the advantage's direction, checked with 200 000 normal draws and signs per position (4 s.e.)."""
    delta, T_log = 0.05, 4
    j = np.tile(np.arange(T_log), 10)
    reward = heavy_ball_curve(0.05, 0.5, len(j))
    log = write_log(tmp_path / "d.jsonl", {"reward": reward, "window/position": j, "ratios/token_log_var": (j * delta) ** 2})
    setup = read_run_config({"lr": 0.1, "group_size": 8, "refresh_interval": T_log, "clip_high": 0.2, "clip_low": 0.2})
    f = pilot_forecast(setup, log)
    assert f.drift_per_step == pytest.approx(delta, rel=1e-12)
    rng = np.random.default_rng(1)
    for T in (1, 4, 16):
        shares = []
        for k in range(1, T):
            log_r, positive = rng.normal(0, k * delta, 200_000), rng.random(200_000) < 0.5
            shares.append(np.mean((positive & (log_r > math.log1p(0.2))) | (~positive & (log_r < math.log1p(-0.2)))))
        mc = sum(shares) / T
        assert abs(f.clip_by_refresh[T] - mc) <= 4 * math.sqrt(0.25 / 200_000) + 1e-12


def drift_pilot(tmp_path, correction: str, clip: float, entropy: np.ndarray | None, delta=0.05, lr=0.1, zero_std=0.6):
    """A pilot forecast on a log whose stale window positions drift by delta per step (Var_j = (j delta)^2)
    and whose zero-std share averages `zero_std` (None: not logged)."""
    j = np.tile(np.arange(4), 10)
    columns = {"reward": heavy_ball_curve(0.05, 0.5, len(j)), "window/position": j, "ratios/token_log_var": (j * delta) ** 2}
    if zero_std is not None:
        columns["frac_reward_zero_std"] = zero_std + 0.2 * np.cos(np.arange(len(j)) * math.pi)  # mean zero_std over 40 rows
    if entropy is not None:
        columns["entropy"] = entropy
    log = write_log(tmp_path / "d.jsonl", columns)
    setup = read_run_config({"lr": lr, "group_size": 8, "refresh_interval": 4, "clip_high": clip, "clip_low": 0.2,
                             "correction": correction})
    return pilot_forecast(setup, log)


@pytest.mark.parametrize("correction, clip", [("none", 0.2), ("token", 0.2), ("token", 1e6)])
def test_collapse_bounds_invert_the_displacement_between_samplers(tmp_path, correction, clip):
    """delta = 0.05 per step at lr 0.1 (s = 0.5 per unit lr), entropy H = 0.8 nats, zero-std share 0.6: the
    pilot's share 0.4 and the run's 1 - z by equation (9) at its held success rate; the limit is S H / (1 - z)
    (equations (5), (7)). Without a clip the displacement T lr s passes it past T = S H / delta; a clip whose band
    edge log(1 + eps) lies within S H leaves no T bound; a wide one bounds T as without a clip. Checked by
    stepping T and lr along D itself (theory.collapse.displacement)."""
    from gspo_dynamics.fit import HELD_STEPS
    from gspo_dynamics.predict import COLLAPSE_SPREAD
    from gspo_dynamics.theory import collapse

    lr, H = 0.1, 0.8
    f = drift_pilot(tmp_path, correction, clip, np.full(40, H))
    assert f.pilot_signal_share == pytest.approx(0.4, rel=1e-12)
    share = collapse.run_signal_share(0.4, float(np.mean(f.pilot[1][-HELD_STEPS:])), 8)
    assert f.signal_share == pytest.approx(share, rel=1e-12)
    limit = COLLAPSE_SPREAD * H / share
    eps = None if correction == "none" else clip
    unbounded = eps is not None and math.log1p(eps) <= limit
    s_lr = f.drift_per_step / lr  # = delta / lr to rounding; the bounds are checked against the drift they used
    assert s_lr == pytest.approx(0.05 / lr, rel=1e-12) and f.entropy == pytest.approx(H) and f.overshoot is False
    safe_T = [T for T in range(1, 2000) if collapse.displacement(s_lr, lr, T, eps) <= limit]
    assert f.collapse_max_refresh == (None if unbounded else max(safe_T))
    lr_max = f.collapse_max_lr
    assert collapse.displacement(s_lr, lr_max * 0.999, 4, eps) <= limit < collapse.displacement(s_lr, lr_max * 1.001, 4, eps)
    assert f.displacement == pytest.approx(collapse.displacement(s_lr, lr, 4, eps))
    verdict = "collapse risk" if f.displacement > limit else "within the limit"
    assert any(verdict in line and "displacement" in line for line in f.summary_lines())


def test_an_entropy_overshoot_caps_the_safe_lr_below_the_pilots(tmp_path):
    """The pilot's entropy rises 0.5 -> 0.8 on its first updates: its own step is past the basin, so at its
    lr no T is safe and the safe lr lies below its own, whatever D says; the summary says why."""
    entropy = np.r_[0.5, 0.8, 0.85, np.full(37, 0.6)]
    f = drift_pilot(tmp_path, "none", 0.2, entropy)
    assert f.overshoot is True and f.collapse_max_refresh == 0 and f.collapse_max_lr < 0.1
    assert f.entropy_rise == pytest.approx(0.7) and f.collapse_max_lr <= 0.1 * 0.25 / 0.7  # equation (6)
    assert any("collapse risk" in line and "entropy rose" in line for line in f.summary_lines())
    assert any("no T (the pilot's own step overshoots)" in line for line in f.summary_lines())


def test_no_entropy_in_the_pilot_withholds_the_collapse_forecast(tmp_path):
    f = drift_pilot(tmp_path, "none", 0.2, None)
    assert f.displacement is None and f.collapse_max_lr is None and f.drift_per_step == pytest.approx(0.05)
    assert any("no token entropy" in a for a in f.assumed)


def test_an_on_policy_pilot_with_entropy_says_the_overshoot_test_it_read(tmp_path):
    """At T = 1 there is no move between samplers, but the entropy's first updates are read (theory.collapse (6)):
    the detail says what they showed, as the verdict does, never "not assessed (no token entropy)"."""
    t = np.arange(40)
    columns = {"reward": 0.7 - 0.3 * np.exp(-t / 8) + 0.01 * np.cos(t), "entropy": 0.6 - 0.2 * t / 40}
    f = pilot_forecast(read_run_config({"lr": 1e-3, "refresh_interval": 1, "group_size": 8}),
                       write_log(tmp_path / "on_policy.jsonl", columns))
    assert f.displacement is None and f.overshoot is False and f.entropy_rise <= 0
    line = next(line for line in f.summary_lines() if line.startswith("  collapse"))
    assert "the entropy rose at most" in line and "no overshoot" in line and "not assessed" not in line


def test_a_reward_range_the_pilot_leaves_and_a_short_pilot_are_errors(tmp_path):
    log = write_log(tmp_path / "r.jsonl", {"reward": np.linspace(-9.7, 10.9, 20)})
    setup = read_run_config({"lr": 0.1, "group_size": 8})
    with pytest.raises(ConfigError, match="does not hold the pilot's rewards"):
        pilot_forecast(setup, log, reward_range=(0.0, 1.0))
    f = pilot_forecast(setup, log)
    assert f.success_rate is None and any("bounds are unknown" in a for a in f.assumed)
    with pytest.raises(ConfigError, match=r"--pilot-steps 5 keeps too few reward points: a forecast needs at least 8 \(the pilot has 20\)"):
        pilot_forecast(setup, log, pilot_steps=5)
    short = write_log(tmp_path / "s.jsonl", {"reward": np.linspace(0.1, 0.5, 6)})
    with pytest.raises(ConfigError, match="at least 8"):
        pilot_forecast(setup, short)


def test_clip_region_share_matches_monte_carlo_tokens():
    """c(delta) against 200 000 simulated tokens per window position: log r ~ N(0, (j delta)^2), an
    advantage sign drawn independently, clipped when r > 1 + eps_high with A > 0 or r < 1 - eps_low with
    A < 0 (TRL's region); 4 s.e. of the window mean."""
    from gspo_dynamics.predict._drift import clip_region_share

    rng = np.random.default_rng(5)
    delta, T, lo, hi = 0.08, 6, 0.2, 0.28
    shares = []
    for j in range(1, T):
        log_r = rng.normal(0, j * delta, 200_000)
        positive = rng.random(200_000) < 0.5
        shares.append(np.mean((positive & (log_r > math.log1p(hi))) | (~positive & (log_r < math.log1p(-lo)))))
    mc = sum(shares) / T
    assert abs(clip_region_share(delta, T, lo, hi) - mc) <= 4 * math.sqrt(0.25 / 200_000)


def test_drift_inverted_from_a_clip_fraction(tmp_path):
    """A TRL-style log at T = 4 whose clip fraction is c(delta) gives delta back (bisection: 1e-9), and the
    forecast says it was inverted from the clip fraction."""
    from gspo_dynamics.predict._drift import clip_region_share

    delta = 0.05
    c = clip_region_share(delta, 4, 0.2, 0.2)
    reward = heavy_ball_curve(0.05, 0.5, 40)
    log = write_log(tmp_path / "trl.jsonl", {"reward": reward, "clip_ratio/region_mean": np.full(40, c)})
    setup = read_run_config({"lr": 0.1, "group_size": 8, "refresh_interval": 4, "correction": "token"})
    f = pilot_forecast(setup, log)
    assert f.drift_per_step == pytest.approx(delta, rel=1e-9)
    assert any("inverted from the mean clip fraction" in m for m in f.measured)


GSPO_CLIP = {"correction": "sequence", "clip_low": 3e-4, "clip_high": 4e-4}


def test_a_sequence_run_forecasts_the_sequences_clip_fraction(tmp_path):
    """Under a sequence-level correction the drift of log s is measured from ratios/seq_log_var (exact), or
    inverted from the sequences' logged clip fraction (1e-9), and the clip fraction by T is the sequences'
    (`clip_region_share` at GSPO's band); no token clip forecast is made for a ratio that is not clipped."""
    from gspo_dynamics.predict._drift import clip_region_share

    j = np.tile(np.arange(4), 10)
    reward = heavy_ball_curve(0.05, 0.5, len(j))
    setup = read_run_config({"lr": 0.1, "group_size": 8, "refresh_interval": 4, **GSPO_CLIP})
    log = write_log(tmp_path / "seq.jsonl", {"reward": reward, "window/position": j, "ratios/token_log_var": (j * 0.05) ** 2,
                                              "ratios/seq_log_var": (j * 0.004) ** 2})
    f = pilot_forecast(setup, log)
    assert f.sequence_drift == pytest.approx(0.004, rel=1e-12) and f.drift_per_step == pytest.approx(0.05, rel=1e-12)
    assert f.clip_by_refresh == {} and f.sequence_clip_by_refresh[16] == pytest.approx(clip_region_share(0.004, 16, 3e-4, 4e-4))
    c = clip_region_share(0.004, 4, 3e-4, 4e-4)
    trl = write_log(tmp_path / "trl.jsonl", {"reward": heavy_ball_curve(0.05, 0.5, 40), "clip_ratio/region_mean": np.full(40, c)})
    g = pilot_forecast(setup, trl)
    assert g.sequence_drift == pytest.approx(0.004, rel=1e-9) and any("sequence log-ratio drift" in m for m in g.measured)
    assert g.drift_per_step == g.sequence_drift and any("on another scale" in a for a in g.assumed)


def test_the_sequence_drift_from_a_token_drift_matches_independent_tokens(tmp_path):
    """With only the token drift and the completion length L = 25 logged, delta_s = delta / sqrt(L) (said);
    the sequences' clip fraction at T = 4 against 100 000 simulated responses of L independent token
    log-ratios N(0, (j delta)^2) per window position, each with an advantage sign (4 s.e.)."""
    delta, L, T = 0.01, 25, 4
    j = np.tile(np.arange(4), 10)
    log = write_log(tmp_path / "tok.jsonl", {"reward": heavy_ball_curve(0.05, 0.5, len(j)), "window/position": j,
                                              "ratios/token_log_var": (j * delta) ** 2, "completions/mean_length": np.full(len(j), L)})
    f = pilot_forecast(read_run_config({"lr": 0.1, "group_size": 8, "refresh_interval": T, **GSPO_CLIP}), log)
    assert f.sequence_drift == pytest.approx(delta / math.sqrt(L)) and any("over sqrt(L)" in a for a in f.assumed)
    rng = np.random.default_rng(7)
    shares = []
    for k in range(1, T):
        log_s = rng.normal(0, k * delta, (100_000, L)).mean(axis=1)
        positive = rng.random(100_000) < 0.5
        shares.append(np.mean((positive & (log_s > math.log1p(4e-4))) | (~positive & (log_s < math.log1p(-3e-4)))))
    assert abs(f.sequence_clip_by_refresh[T] - sum(shares) / T) <= 4 * math.sqrt(0.25 / 100_000)


def test_the_two_drift_routes_on_a_trainer_run_measure_different_things(tmp_path):
    """Our trainer at T = 4 (GRPO, seed 0: deterministic on CPU) logs both the window's token log-ratio
    variance and the clip fraction. The two drifts differ ~11x (0.55 vs 0.049 per stale step): the
    variance is carried by a few tokens that move far (heavy tails), while the clip fraction counts the
    bulk under a normal model. Both routes are measured and finite; which one forecasts collapse is an
    open question of the forecast model (the variance route is the one its limit S was set with)."""
    from gspo_dynamics.predict._drift import _from_clip_fraction, _from_variance
    from gspo_dynamics.logs import read_log
    from gspo_dynamics.train.config import TrainConfig
    from gspo_dynamics.train.trainer import train

    cfg = TrainConfig(task="pattern", model="100k", objective="grpo", steps=32, steps_per_generation=4, lr=1e-2,
                      group_size=8, prompts_per_step=4, device="cpu", warmup_steps=20)
    train(cfg, tmp_path / "run")
    log = read_log(tmp_path / "run" / "trainer_state.json")
    hp = read_run_config(cfg.to_dict()).hparams
    by_variance = _from_variance(log, 32, "ratios/token_log_var", "token", [])
    by_clip = _from_clip_fraction(log, 32, hp, "token", [])
    assert by_variance > 0 and by_clip > 0 and by_variance / by_clip > 5, (by_variance, by_clip)


@pytest.mark.parametrize("correction, entropy", [("none", np.full(40, 0.8)), ("token", np.r_[0.5, 0.8, 0.85, np.full(37, 0.6)])])
def test_collapse_grid_agrees_with_the_forecasts_own_bounds(tmp_path, correction, entropy):
    """The map's collapse region cell by cell against the scalar route: D(lr, T) > S H (`collapse.displacement`)
    or lr past the overshoot's bound (equation (6)); at the config's lr its first safe-free T is the
    forecast's collapse_max_refresh + 1, and at its T the region starts past collapse_max_lr."""
    from gspo_dynamics.predict import COLLAPSE_SPREAD, collapse_grid
    from gspo_dynamics.theory import collapse

    f = drift_pilot(tmp_path, correction, 0.2, entropy)
    lrs, Ts = np.geomspace(1e-3, 10, 41), np.arange(1, 65)
    grid = collapse_grid(f, lrs, Ts)
    s, clip = f.drift_per_step / 0.1, None if correction == "none" else 0.2
    bound = collapse.overshoot_max_learning_rate(f.entropy_rise, 0.1)
    limit = max(COLLAPSE_SPREAD * f.entropy / f.signal_share, f.survived or 0.0)  # theory.collapse (7), (8)
    loop = np.array([[collapse.displacement(s, lr, int(T), clip) > limit
                      or (bound is not None and lr > bound) for lr in lrs] for T in Ts])
    assert np.array_equal(grid, loop)
    at_lr = collapse_grid(f, [0.1], Ts)[:, 0]
    assert (f.collapse_max_refresh is None and not at_lr.any()) or not at_lr[:f.collapse_max_refresh].any()
    at_T = collapse_grid(f, lrs, [4])[0]
    assert not at_T[lrs <= f.collapse_max_lr * (1 - 1e-9)].any() and at_T[lrs > f.collapse_max_lr * (1 + 1e-9)].all()


def low_entropy_pilot(tmp_path, reward, config_T=4, entropy=None):
    """A pilot logged at T = 4 (window positions 0-3) drifting 0.05 per stale step, entropy 0.1 (so S H / (1 - z)
    = 0.076 at the logged zero-std share 0.6, under its own D = 4 x 0.05 = 0.2; no clip), for a config at
    lr 0.1 and `config_T`."""
    j = np.tile(np.arange(4), 10)
    columns = {"reward": reward, "window/position": j, "ratios/token_log_var": (j * 0.05) ** 2,
               "entropy": np.full(len(j), 0.1) if entropy is None else entropy, "frac_reward_zero_std": np.full(len(j), 0.6)}
    setup = read_run_config({"lr": 0.1, "group_size": 8, "refresh_interval": config_T, "correction": "none"})
    return pilot_forecast(setup, write_log(tmp_path / "d.jsonl", columns))


@pytest.mark.parametrize("reward, kept", [
    (heavy_ball_curve(0.05, 0.5, 40), True),  # a rise: kept
    (np.r_[np.full(12, 0.6), np.zeros(28)] + 0.01 * (1 + np.cos(np.arange(40))), False),  # lost 0.6
    (np.r_[np.full(12, 0.1), np.zeros(28)] + 0.001 * (1 + np.cos(np.arange(40))), False),  # lost all of 0.1 (fit._fall)
])
def test_a_pilot_that_kept_its_reward_raises_the_limit_to_its_own_displacement(tmp_path, reward, kept):
    """When the pilot's reward rose without a fall its own point is not at risk by displacement (theory.collapse
    (8)), the safe T at its lr is its own T = 4 (D = 0.2 exactly), the summary says the limit was raised and
    the JSON gives the limit in force; when its reward fell (0.6 -> 0, or 0.1 -> 0, a fall under a tenth
    of the range that lost all it had) the limit stays S H / (1 - z), 1 - z the pilot's own share, and its own
    point is at risk."""
    from gspo_dynamics.predict import COLLAPSE_SPREAD, collapse_grid

    f = low_entropy_pilot(tmp_path, reward)
    assert f.pilot_signal_share == pytest.approx(0.4)
    bound = COLLAPSE_SPREAD * 0.1 / f.signal_share
    assert f.displacement == pytest.approx(0.2) and bound < 0.2
    assert f.fall is not None and f.fall.lost is not kept
    own = bool(collapse_grid(f, [0.1], [4])[0, 0])
    lines = "\n".join(f.summary_lines())
    if kept:
        assert f.survived == pytest.approx(0.2) and not own and f.collapse_max_refresh == 4
        assert "raised to the pilot's own D = 0.2" in lines and "within the limit (D at most the pilot's own)" in lines
        assert f.to_json()["collapse_limit"] == pytest.approx(0.2)
    else:
        safe_T = max([T for T in range(1, 5) if T * 0.05 <= bound], default=0)  # D = T delta, no clip
        assert f.survived is None and own and f.collapse_max_refresh == safe_T and "collapse risk" in lines
        assert f.signal_share == f.pilot_signal_share  # (9) reads a held level only where the pilot kept it
        assert any("the pilot did not keep its reward" in a for a in f.assumed)
        assert f.to_json()["collapse_limit"] == pytest.approx(bound)


def test_the_pilots_own_displacement_is_at_its_own_T_not_the_configs(tmp_path):
    """A pilot logged at T = 4 asked about a config at T = 8: the limit is raised to the pilot's D = 0.2, not to
    the config's 0.4, so the config's point is at risk; the safe T at the config's lr is the pilot's 4."""
    f = low_entropy_pilot(tmp_path, heavy_ball_curve(0.05, 0.5, 40), config_T=8)
    assert f.survived == pytest.approx(0.2) and f.displacement == pytest.approx(0.4)
    assert f.collapse_max_refresh == 4 and any("collapse risk (margin -100%)" in line for line in f.summary_lines())


def test_a_pilot_that_kept_its_reward_is_still_flagged_by_its_entropy_rise(tmp_path):
    """Equation (8) bounds the displacement rule only: a pilot whose entropy rose 0.1 -> 0.15 (r = 0.5 > 1/4)
    on its first updates is at risk at its own lr and T although it kept its reward (equation (6))."""
    from gspo_dynamics.predict import collapse_grid

    entropy = np.r_[0.1, 0.15, 0.12, np.full(37, 0.1)]
    f = low_entropy_pilot(tmp_path, heavy_ball_curve(0.05, 0.5, 40), entropy=entropy)
    assert f.survived is not None and f.overshoot and f.entropy_rise == pytest.approx(0.5)
    assert bool(collapse_grid(f, [0.1], [4])[0, 0]) and f.collapse_max_refresh == 0


def test_collapse_grid_is_withheld_without_drift_or_entropy(tmp_path):
    from gspo_dynamics.predict import collapse_grid

    assert collapse_grid(drift_pilot(tmp_path, "none", 0.2, None), [0.1], [1]) is None


def test_the_map_hatches_the_collapse_region_and_withholds_a_failed_linear_map(tmp_path):
    """`predict --plot` with a pilot that overshot: the (lr, T) panel carries the collapse region (its edge
    and legend entry) and the config's point."""
    from gspo_dynamics.plots.stability_map import stability_map_figure

    f = drift_pilot(tmp_path, "token", 0.2, np.r_[0.5, 0.8, 0.85, np.full(37, 0.6)])
    assert f.to_json()["collapse_assessed"] is True
    ax = stability_map_figure(f).axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("collapse risk" in label for label in labels) and any(label.startswith("this config") for label in labels)
    assert ax.get_xlabel() == "learning rate (config key lr)"  # the theory's own hyperparameters: their own name
    assert ax.get_ylim() == (0.8, 64)  # the map's whole T range (from below 1: a T = 1 point whole), whatever is drawn
    lr = f.config.setup.hparams.lr
    assert ax.get_xlim() == pytest.approx((lr / 100, lr * 100))
    withheld = [t.get_text() for t in ax.texts if t.get_text().startswith("linear map withheld")]
    assert not withheld or all(len(line) <= 60 for line in withheld[0].splitlines())  # wrapped, not cut


def test_the_signal_share_is_one_minus_the_logged_zero_std_share_and_at_least_one_group(tmp_path):
    """The pilot's 1 - z_p from the logged share, and the run's by equation (9) from it and the held success rate
    (said); a pilot whose every group was flat keeps the smallest share it can measure, one group of its n N (40
    steps x N = 4 groups at 32 per-device responses, G = 8), and so does the run's."""
    from gspo_dynamics.fit import HELD_STEPS
    from gspo_dynamics.theory import collapse

    f = drift_pilot(tmp_path, "token", 0.2, np.full(40, 0.8), zero_std=0.25)
    assert f.pilot_signal_share == pytest.approx(0.75, rel=1e-12)
    held = float(np.mean(f.pilot[1][-HELD_STEPS:]))
    assert f.signal_share == pytest.approx(0.25 * 0.75 + 0.75 * (1 - held**8 - (1 - held) ** 8), rel=1e-12)
    assert f.signal_share == pytest.approx(collapse.run_signal_share(0.75, held, 8), rel=1e-12)
    assert any("the run's share of groups with signal" in a and "held success rate" in a for a in f.assumed)
    assert f.to_json()["pilot_signal_share"] == pytest.approx(0.75) and f.to_json()["signal_share"] == f.signal_share
    flat = drift_pilot(tmp_path, "token", 0.2, np.full(40, 0.8), zero_std=1.0)
    N = flat.config.setup.hparams.num_groups
    assert flat.pilot_signal_share == pytest.approx(1 / (40 * N), rel=1e-12)
    held = float(np.mean(flat.pilot[1][-HELD_STEPS:]))
    assert flat.signal_share == pytest.approx(0.25 / (40 * N) + 0.75 * (1 - held**8 - (1 - held) ** 8), rel=1e-12)


def test_the_runs_share_is_the_pilots_where_the_reward_is_no_success_rate_or_was_not_kept(tmp_path):
    """Equation (9) needs a held success rate the run settles at (`signal_shares` directly: `pilot_forecast`
    reads no zero-std share outside a [0, 1] reward, and sees a fall or not in any pilot long enough to fit): a
    logged zero-std share without a success rate, and a pilot that did not keep its reward, keep the pilot's
    share and say why; a log without token entropy applies no limit and says nothing of a share."""
    from gspo_dynamics.predict._collapse_risk import held_success, signal_shares

    hp = read_run_config({"lr": 0.1, "group_size": 8, "refresh_interval": 4, "clip_high": 0.2, "clip_low": 0.2}).hparams
    assumed = []
    assert signal_shares(0.3, None, hp, 40, held_success(None, True), assumed) == pytest.approx((0.7, 0.7))
    assert assumed[-1].startswith("the reward is not a success rate: the collapse limit's share")
    assert signal_shares(0.3, np.full(40, 0.9), hp, 40, held_success(np.full(40, 0.9), False), assumed) == pytest.approx((0.7, 0.7))
    assert assumed[-1].startswith("the pilot did not keep its reward")
    kept = signal_shares(0.3, np.full(40, 0.9), hp, 40, held_success(np.full(40, 0.9), True), assumed)
    assert kept[1] == pytest.approx(0.25 * 0.7 + 0.75 * (1 - 0.9**8 - 0.1**8)) and "weighted 25%" in assumed[-1]
    bare = drift_pilot(tmp_path, "token", 0.2, None)
    assert bare.signal_share is None and not any("share of groups with signal" in a for a in bare.assumed)


def test_without_a_logged_share_the_signal_share_is_the_success_rates_prediction(tmp_path):
    """No frac_zero_std: 1 - z with z = E_t[p_t^G + (1 - p_t)^G] at the run's G, against a Monte Carlo of
    groups of G Bernoulli(p_t) rewards (200,000 groups per step: standard error <= 0.0011, 5 sigma allowed);
    a reward outside [0, 1] predicts nothing, and every group counts (said)."""
    f = drift_pilot(tmp_path, "token", 0.2, np.full(40, 0.8), zero_std=None)
    p = f.pilot[1]
    rng = np.random.default_rng(3)
    flat = [np.mean(np.ptp((rng.random((200_000, 8)) < pt).astype(int), axis=1) == 0) for pt in p]
    assert abs(f.pilot_signal_share - (1 - np.mean(flat))) < 5 * math.sqrt(0.25 / (200_000 * len(p)))
    assert any("the zero-std share is not logged" in a for a in f.assumed)
    columns = {"reward": 3 + heavy_ball_curve(0.05, 0.5, 40), "window/position": np.tile(np.arange(4), 10),
               "ratios/token_log_var": (np.tile(np.arange(4), 10) * 0.05) ** 2, "entropy": np.full(40, 0.8)}
    setup = read_run_config({"lr": 0.1, "group_size": 8, "refresh_interval": 4, "clip_high": 0.2, "clip_low": 0.2})
    wide = pilot_forecast(setup, write_log(tmp_path / "w.jsonl", columns))
    assert wide.signal_share == wide.pilot_signal_share == 1.0 and any("counts every group" in a for a in wide.assumed)


def test_the_held_level_is_the_mean_of_the_pilots_last_rewards(tmp_path):
    """The naive final-reward forecast beside the fit: the mean of the last HELD_STEPS rewards used (of the
    first --pilot-steps only), against a loop; in the summary and the JSON."""
    from gspo_dynamics.fit import HELD_STEPS

    reward = heavy_ball_curve(0.05, 0.5, 60)
    log = write_log(tmp_path / "r.jsonl", {"reward": reward})
    setup = read_run_config({"lr": 0.1, "group_size": 8, "refresh_interval": 1})
    f = pilot_forecast(setup, log, pilot_steps=30)
    expected = sum(reward[30 - HELD_STEPS:30]) / HELD_STEPS
    assert f.held == pytest.approx(expected, rel=1e-12) and f.to_json()["held_reward"] == f.held
    assert any(line.startswith(f"  held level: the pilot's last {HELD_STEPS} rewards average {expected:.3g}")
               for line in f.summary_lines())


def solved_columns(entropy: bool = True) -> dict:
    """A solved pilot's log (reward ~0.99, nine groups in ten flat) with stale steps, and an entropy or none."""
    j = np.tile(np.arange(4), 10)
    columns = {"reward": np.full(len(j), 0.99) - 0.01 * np.cos(np.arange(len(j))), "window/position": j,
               "ratios/token_log_var": (j * 0.05) ** 2, "frac_reward_zero_std": np.full(len(j), 0.9)}
    return {**columns, "entropy": np.full(len(j), 1.0)} if entropy else columns


def solved_pilot(tmp_path, entropy: bool = True, **config):
    """A pilot forecast on `solved_columns` for a config at lr 0.1 whose fields `config` sets (defaults: Adam,
    T = 16, beta = 0.04)."""
    setup = read_run_config({"lr": 0.1, "group_size": 8, "correction": "token", "clip_high": 0.28,
                             **{"optimizer": "adam", "refresh_interval": 16, "kl_coef": 0.04, **config}})
    return pilot_forecast(setup, write_log(tmp_path / "solved.jsonl", solved_columns(entropy)))


@pytest.mark.parametrize("config, warned", [
    ({}, True),  # beta > 0, Adam, T = 16, most of the run's groups flat
    ({"refresh_interval": 4}, False),  # T = 4: the refresh comes before the pull costs reward
    ({"refresh_interval": 5}, True),  # the smallest T warned about
    ({"kl_coef": 0.0}, False),  # no KL weight: nothing pulls back
    ({"optimizer": "sgd"}, False),  # measured with Adam only
])
def test_the_kl_pull_warning_needs_a_kl_weight_adam_a_long_window_and_flat_groups(tmp_path, config, warned):
    """`kl_pull_risk`'s conditions, each one alone switching the warning off, on a pilot forecast of a solved
    run: the summary says it (with beta, the run's flat share and T) and the JSON carries it."""
    f = solved_pilot(tmp_path, **config)
    assert 1 - f.signal_share >= 0.5  # the run's share by (9): the held success rate ~0.99 flattens most groups
    assert f.kl_pull is warned and f.to_json()["kl_pull"] is warned
    lines = [line for line in f.summary_lines() if "KL pull" in line]
    assert len(lines) == int(warned)
    if warned:
        T = config.get("refresh_interval", 16)
        assert "beta = 0.04" in lines[0] and f"{1 - f.signal_share:.0%} of the run's groups flat" in lines[0]
        assert f"T = {T} steps" in lines[0]


def test_the_kl_pull_warning_needs_most_of_the_runs_groups_flat():
    """The share condition alone, at its threshold (`kl_pull_risk` on hyperparameters directly): a run with half
    its groups flat is warned about, one with less is not."""
    from gspo_dynamics.predict._collapse_risk import KL_PULL_FLAT_SHARE, kl_pull_risk
    from gspo_dynamics.theory.hyperparams import Adam, Hyperparams

    hp = Hyperparams(lr=1e-3, optimizer=Adam(), refresh_interval=16, kl_coef=0.04)
    assert kl_pull_risk(hp, 1.0 - KL_PULL_FLAT_SHARE) and not kl_pull_risk(hp, 1.0 - KL_PULL_FLAT_SHARE + 1e-9)


def test_the_kl_pull_is_not_read_without_the_pilots_entropy_and_is_read_for_our_trainers_adamw(tmp_path):
    """Without an entropy the run's share of groups with signal is not read, and neither is the pull: None in
    the forecast and null in the JSON (not read, not "no risk"), and no line; the same without a zero-std share
    or a success rate to predict it from (the collapse limit then counts every group); False where the
    hyperparameters alone rule the pull out. Our trainer's config (count/cispo,
    AdamW, steps_per_generation 16, kl_coef 0.04), as `pilot_forecast.py` hands it, gets the warning."""
    from gspo_dynamics.train.config import TrainConfig

    bare = solved_pilot(tmp_path, entropy=False)
    assert bare.kl_pull is None and bare.to_json()["kl_pull"] is None
    assert not any("KL pull" in line for line in bare.summary_lines())
    assert solved_pilot(tmp_path, entropy=False, kl_coef=0.0).kl_pull is False  # the hyperparameters rule it out
    unread = solved_columns()
    del unread["frac_reward_zero_std"]
    unread["reward"] = unread["reward"] * 3 - 1  # not a success rate either: the share is not read
    setup = read_run_config({"lr": 0.1, "group_size": 8, "correction": "token", "clip_high": 0.28, "optimizer": "adam",
                             "refresh_interval": 16, "kl_coef": 0.04})
    blind = pilot_forecast(setup, write_log(tmp_path / "unread.jsonl", unread))
    assert blind.signal_share == 1.0 and blind.kl_pull is None
    cfg = TrainConfig(task="count", model="100k", objective="cispo", lr=1e-3, steps_per_generation=16, kl_coef=0.04,
                      device="cpu")
    ours = pilot_forecast(read_run_config(cfg.to_dict()), write_log(tmp_path / "ours.jsonl", solved_columns()))
    assert ours.config.setup.hparams.refresh_interval == 16 and ours.kl_pull is True


def test_a_dead_pilot_is_not_warned_of_the_kl_pull(tmp_path):
    """A pilot whose reward sits near 0 with nine groups in ten flat (all wrong) has as high a zero-std share as a
    solved one, but its held success rate is under 1/2: a dead run, not a solved one, and no warning (False, read)."""
    columns = solved_columns()
    columns["reward"] = 1.0 - columns["reward"]  # ~0.01
    setup = read_run_config({"lr": 0.1, "group_size": 8, "correction": "token", "clip_high": 0.28, "optimizer": "adam",
                             "refresh_interval": 16, "kl_coef": 0.04})
    dead = pilot_forecast(setup, write_log(tmp_path / "dead.jsonl", columns))
    assert 1 - dead.signal_share >= 0.5 and dead.kl_pull is False
    assert not any("KL pull" in line for line in dead.summary_lines())


def test_the_held_rate_gates_the_kl_pull_only_where_the_pilot_kept_its_reward(tmp_path):
    """A pilot that sat at 0.95 with nine groups in ten flat and then fell to 0.2 did not keep its reward: its held
    rate (0.2) is no level the run settles at, so it does not rule the pull out (the fall from a solved level is
    what the warning is about). At the boundary, a held rate of exactly 1/2 (`SOLVED_SHARE`) does not either."""
    from gspo_dynamics.predict._collapse_risk import SOLVED_SHARE, kl_pull_risk
    from gspo_dynamics.theory.hyperparams import Adam, Hyperparams

    columns = solved_columns()
    columns["reward"] = np.r_[np.full(24, 0.95), np.full(16, 0.2)] + 0.005 * np.cos(np.arange(40))
    setup = read_run_config({"lr": 0.1, "group_size": 8, "correction": "token", "clip_high": 0.28, "optimizer": "adam",
                             "refresh_interval": 16, "kl_coef": 0.04})
    fell = pilot_forecast(setup, write_log(tmp_path / "fell.jsonl", columns))
    assert fell.fall is not None and fell.fall.lost and fell.kl_pull is True
    hp = Hyperparams(lr=1e-3, optimizer=Adam(), refresh_interval=16, kl_coef=0.04)
    assert kl_pull_risk(hp, 0.1, SOLVED_SHARE) is True and kl_pull_risk(hp, 0.1, SOLVED_SHARE - 1e-9) is False


def test_a_pilot_logged_at_another_lr_or_under_a_schedule_is_said(tmp_path):
    """The logged learning_rate against the config's: within 1% nothing is said; a peak 10x the config's, and a
    warm-up to it, are each one assumed line; the reader's own warnings (a non-numeric reward) come through."""
    reward = heavy_ball_curve(0.05, 0.5, 40)
    setup = read_run_config({"lr": 1e-3, "refresh_interval": 1, "group_size": 8})
    same = write_log(tmp_path / "same.jsonl", {"reward": reward, "learning_rate": np.full(40, 1.004e-3)})
    assert not any("learning rate" in a for a in pilot_forecast(setup, same).assumed)
    other = write_log(tmp_path / "other.jsonl", {"reward": reward, "learning_rate": np.linspace(1e-3, 1e-2, 40)})
    said = [a for a in pilot_forecast(setup, other).assumed if "learning rate" in a]
    assert len(said) == 2 and "up to 0.01, the config says 0.001" in said[0]
    assert "0.001 at its first point, 0.01 at most, 0.01 at its last" in said[1]
    warm = write_log(tmp_path / "warm.jsonl", {"reward": reward, "learning_rate": np.linspace(1e-5, 5e-4, 40)})
    said = [a for a in pilot_forecast(setup, warm).assumed if "learning rate" in a]
    assert len(said) == 1 and "still in its warm-up: its learning rate reached 0.0005 of the config's 0.001" in said[0]
    rounded = write_log(tmp_path / "rounded.jsonl", {"reward": reward, "learning_rate": np.zeros(40)})  # actor/lr:0.000
    said = [a for a in pilot_forecast(setup, rounded).assumed if "learning rate" in a]
    assert len(said) == 1 and "as 0 on every row" in said[0] and "warm-up" not in said[0]
    path = tmp_path / "odd.jsonl"
    path.write_text(open(same).read() + json.dumps({"step": 41, "reward": "lost"}) + "\n")
    f = pilot_forecast(setup, str(path))
    assert any("non-numeric values were ignored in 'reward'" in n for n in f.log_notes)
    assert any(line.startswith("note: the pilot log: non-numeric") for line in f.summary_lines())
    assert f.to_json()["pilot_log_notes"] == list(f.log_notes)


def test_a_pilot_logged_far_from_the_configs_lr_is_said_first_and_decides_nothing(tmp_path):
    """A pilot whose logged peak lr is LR_MISMATCH times the config's or more, either way, is likely another run's:
    said first (`brief_lines`, JSON config_mismatch), and the verdict unsure (it vouches for neither lr). Within 2x
    (a schedule's peak, rounding) and a warm-up still climbing below it, nothing is said."""
    from gspo_dynamics.predict import pilot_headline
    from gspo_dynamics.predict._pilot_log import LR_MISMATCH

    reward = heavy_ball_curve(0.05, 0.5, 40)
    setup = read_run_config({"lr": 1e-3, "refresh_interval": 1, "group_size": 8})
    for logged, said in ((np.full(40, 5e-1), "500x above the config's 0.001"), (np.full(40, 1e-5), "100x below"),
                         (np.full(40, 1e-3 * LR_MISMATCH * 0.99), None), (np.linspace(1e-6, 3e-4, 40), None)):
        f = pilot_forecast(setup, write_log(tmp_path / "lr.jsonl", {"reward": reward, "learning_rate": logged}))
        if said is None:
            assert f.mismatch is None and f.brief_lines() == [] and f.to_json()["config_mismatch"] is None
            continue
        assert said in f.mismatch and "--set lr=" in f.mismatch
        assert f.brief_lines() == [f"config and pilot disagree: {f.mismatch}"]
        assert pilot_headline(f).verdict == "unsure" and f.to_json()["config_mismatch"] == f.mismatch


def test_a_stiffness_the_pilot_does_not_identify_gives_no_regime(tmp_path):
    """A flat noisy pilot (this seed's fit leaves the stiffness within its noise of zero): the regime line says not
    identified, with only the max safe T's one-standard-error range: the fitted stiffness's own value is no number
    to print."""
    reward = np.clip(0.5 + 0.1 * np.random.default_rng(1).standard_normal(40), 0, 1)
    setup = read_run_config({"lr": 1e-3, "refresh_interval": 4, "group_size": 8})
    f = pilot_forecast(setup, write_log(tmp_path / "flat.jsonl", {"reward": reward}))
    assert "does not identify" in f.lr_note and f.max_safe_lr is None
    line = next(line for line in f.summary_lines() if "regime at T = 4" in line)
    low, high = f.implications.max_safe_refresh_interval_range
    assert line.startswith("  regime at T = 4: not identified") and f"from {low} to beyond 1000 within one standard error" in line and high == 1000
    assert f"max safe T {f.implications.max_safe_refresh_interval}," not in line and "at the fitted stiffness" not in line


def test_the_lr_bound_carries_the_stiffness_range_and_an_unassessed_collapse_is_said(tmp_path):
    """The linear lr bound with its range over the stiffness +- one standard error (lr x_max / (kappa +- se),
    recomputed here); a pilot without drift says the collapse was not assessed."""
    from gspo_dynamics.theory.linear import critical_learning_rate

    reward = heavy_ball_curve(0.05, 0.5, 60) + 0.01 * np.random.default_rng(0).standard_normal(60)
    setup = read_run_config({"lr": 0.1, "refresh_interval": 4, "group_size": 8, "optimizer": "sgd", "momentum": 0.5})
    f = pilot_forecast(setup, write_log(tmp_path / "p.jsonl", {"reward": reward}), reward_range=(0.0, 1.0))
    k = f.implications.stiffness_per_step
    x_max = float(critical_learning_rate(1.0, 0.0, 0.5, 4))
    assert f.max_safe_lr == pytest.approx(0.1 * x_max / k.value)
    assert f"{0.1 * x_max / (k.value + k.stderr):.3g} to {0.1 * x_max / (k.value - k.stderr):.3g} within one standard error" in f.lr_note
    assert any(line.startswith("  collapse: not assessed") for line in f.summary_lines())
    assert f.to_json()["collapse_assessed"] is False and f.to_json()["collapse_max_refresh_interval"] is None


def test_a_pilot_run_at_another_T_than_the_config_is_said(tmp_path):
    """Our trainer logs window/position 0 .. T - 1: a pilot at T = 2 read against a config at T = 16 is said; at the
    config's own T nothing is."""
    reward = heavy_ball_curve(0.05, 0.5, 40)
    log = write_log(tmp_path / "p.jsonl", {"reward": reward, "window/position": np.arange(40) % 2})
    at = lambda T: pilot_forecast(read_run_config({"lr": 0.1, "refresh_interval": T, "group_size": 8}), log).assumed  # noqa: E731
    assert any("the pilot ran at T = 2 (its window positions), the config asks about T = 16" in a for a in at(16))
    assert not any("the pilot ran at T" in a for a in at(2))
    short = write_log(tmp_path / "s.jsonl", {"reward": reward[:20], "window/position": np.arange(20)})  # T = 32, 20 steps
    assert not any("the pilot ran at T" in a for a in pilot_forecast(
        read_run_config({"lr": 0.1, "refresh_interval": 32, "group_size": 8}), short).assumed)


def test_a_linear_lr_bound_read_from_a_pilot_that_lost_reward_is_no_safe_lr(tmp_path):
    """A pilot that rose to 0.6 and fell to 0.15 (a loss by fit._fall) under SGD: the linear model's bound is kept (on
    our grids it flagged unstable cells) but printed as no safe lr, and the JSON says the pilot lost reward; a
    pilot that kept its reward prints it as the max safe lr. The regime line says the pilot lost reward before the
    linear reading of the fall's curve (which called it stable at T = 1 on a real run: "oscillatory, max safe T 6")."""
    t = np.arange(40)
    fell = np.r_[heavy_ball_curve(0.1, 0.5, 20, r_inf=0.6, r0=0.1), np.full(20, 0.15)] + 0.01 * np.cos(t)
    setup = read_run_config({"lr": 0.1, "refresh_interval": 1, "group_size": 8, "optimizer": "sgd", "momentum": 0.5})
    f = pilot_forecast(setup, write_log(tmp_path / "fell.jsonl", {"reward": fell}), reward_range=(0.0, 1.0))
    assert f.lost and f.to_json()["pilot_lost_reward"] is True
    lines = f.summary_lines()
    assert f.max_safe_lr is not None
    # the JSON gives it only within LR_REACH x the pilot's lr (here 145x: past it, null with why)
    assert f.to_json()["max_safe_lr"] is None and "past 30x the pilot's lr" in f.to_json()["lr_note"]
    assert any(line.startswith("  linear lr bound at T = 1, no safe lr (the pilot lost reward") for line in lines)
    assert not any(line.startswith("  linear lr bound at T = 1 (the reward's oscillation, not collapse): 0") for line in lines)
    regime = next(line for line in lines if line.startswith("  regime at T = 1: "))  # the fit's verdict is the fall's
    assert regime.startswith("  regime at T = 1: lost reward at this lr") and "would say" in regime
    kept = pilot_forecast(setup, write_log(tmp_path / "kept.jsonl", {"reward": heavy_ball_curve(0.05, 0.5, 40)}),
                          reward_range=(0.0, 1.0))
    assert not kept.lost and kept.to_json()["pilot_lost_reward"] is False
    # --explain gives the bound as the answer does: within LR_REACH x the lr, else withheld with why (audit s42p: a
    # 1276x reading under a headline that said "none shown below 30x")
    shown = kept.to_json()["max_safe_lr"]
    said = f"{shown:.3g} (" if shown is not None else "withheld ("
    line = next(line for line in kept.summary_lines() if line.startswith("  linear lr bound at T = 1 (the reward's"))
    assert line.startswith(f"  linear lr bound at T = 1 (the reward's oscillation, not collapse): {said}")
    assert shown is not None or "past 30x the pilot's lr" in line
    assert not any("lost reward at this lr" in line for line in kept.summary_lines())


def group_pilot(rng, p_curve: np.ndarray, G: int, N: int, spread: float = 0.0, partial: bool = False) -> dict:
    """Per-step mean reward and zero-std share of N groups of G rewards, prompt i's success rate
    p_t + spread u_i (u uniform in [-1, 1], clipped); pass/fail rewards, or partial credit: the rate plus
    normal noise of 0.15, clipped to [0, 1]."""
    reward, zero = [], []
    for p in p_curve:
        q = np.clip(p + spread * rng.uniform(-1, 1, N), 0, 1)
        if partial:
            draws = np.clip(q[:, None] + 0.15 * rng.standard_normal((N, G)), 0, 1)
        else:
            draws = (rng.random((N, G)) < q[:, None]).astype(float)
        reward.append(draws.mean())
        zero.append(np.mean(np.ptp(draws, axis=1) == 0))
    return {"reward": np.asarray(reward), "frac_reward_zero_std": np.asarray(zero)}


def test_least_zero_std_share_is_unbiased_for_equal_prompts_and_below_the_share_for_unequal_ones():
    """Its expectation over the measured rate k / D, k ~ Binomial(D, p) (exact sums over k), is p^G + (1 - p)^G
    to 1e-12 for D = N G, N = 1, 2, 4; for N unequal prompts (k a sum of binomials, its law by convolution) it
    is at most the expected share mean_i (p_i^G + (1 - p_i)^G); and at N = 1 it is 1 exactly when the group is
    all equal (the logged share itself)."""
    from scipy.stats import binom

    from gspo_dynamics.predict._pilot_log import least_zero_std_share

    for G in (2, 4, 8, 16):
        for N in (1, 2, 4):
            D = N * G
            k = np.arange(D + 1)
            for p in (0.05, 0.5, 0.8, 0.95):
                mean = float(np.sum(binom.pmf(k, D, p) * least_zero_std_share(k / D, G, D)))
                assert mean == pytest.approx(p**G + (1 - p) ** G, abs=1e-12)
            rates = np.linspace(0.1, 0.95, N)
            law = np.array([1.0])
            for q in rates:
                law = np.convolve(law, binom.pmf(np.arange(G + 1), G, q))
            expected_share = float(np.mean(rates**G + (1 - rates) ** G))
            assert float(np.sum(law * least_zero_std_share(k / D, G, D))) <= expected_share + 1e-12
    assert list(least_zero_std_share(np.array([0.0, 0.5, 1.0]), 8, 8)) == [1.0, 0.0, 1.0]


def test_a_pilots_zero_std_share_below_what_its_g_allows_is_said(tmp_path):
    """Pass/fail pilots (60 steps, success rising 0.3 -> 0.9): at the config's G = 8 the check is silent with equal
    prompts (the bound is tight there: N = 4, 0.3% of correct pilots said in a review's 20,000 seeds; 1 of 20
    allowed here), with one prompt a step (where the share is the estimate itself; G = 12, rewards rounded to
    float32 as TRL logs them, which an unsnapped count turned into a warning), and with unequal prompts; a pilot
    run at G = 16 (N = 4: 200 of 200 said), or with partial credit, is said in every seed. The seeds go through
    the check itself (`logged_group_size`, on the log as read); two pilots go through the whole forecast."""
    from gspo_dynamics.predict._pilot_log import logged_group_size
    from gspo_dynamics.logs import read_log

    rng = np.random.default_rng(5)
    curve = 0.9 - 0.6 * np.exp(-np.arange(60) / 15)

    def said(columns, N=4, G=8) -> bool:
        log = read_log(write_log(tmp_path / "g.jsonl", columns))
        return any(f"below the least G = {G} gives" in a for a in logged_group_size(log, len(curve), G, N))

    assert sum(said(group_pilot(rng, curve, 8, 4)) for _ in range(20)) <= 1
    assert not any(said(group_pilot(rng, curve, 8, 1), N=1) for _ in range(5))

    def float32(columns):
        return {k: v.astype(np.float32).astype(np.float64) for k, v in columns.items()}

    assert not any(said(float32(group_pilot(rng, curve, 12, 1)), N=1, G=12) for _ in range(5))
    assert not any(said(group_pilot(rng, curve, 8, 4, spread=0.3)) for _ in range(5))
    assert all(said(group_pilot(rng, curve, 16, 4)) for _ in range(5))
    assert all(said(group_pilot(rng, curve, 8, 4, partial=True)) for _ in range(5))
    setup = read_run_config({"lr": 0.1, "group_size": 8, "num_groups": 4, "refresh_interval": 1})
    for G, expected in ((8, False), (16, True)):
        f = pilot_forecast(setup, write_log(tmp_path / "g.jsonl", group_pilot(rng, curve, G, 4)), reward_range=(0.0, 1.0))
        assert any("below the least G = 8 gives" in a for a in f.assumed) == expected


def test_a_pilot_that_logs_a_kl_under_a_config_without_beta_is_said(tmp_path):
    """A pilot with a nonzero `kl` column: said where the config's KL weight is 0, with the key that gives one in the
    config's framework and, for a TRL log its keys date, the release; silent where the config gives a weight, and for
    a KL logged as 0."""
    from gspo_dynamics.predict._pilot_log import KL_WEIGHT_KEYS, logged_kl
    from gspo_dynamics.logs import read_log
    from gspo_dynamics.predict._configs import apply_overrides

    t = np.arange(30)
    reward = 0.8 - 0.5 * np.exp(-t / 10) + 0.01 * np.cos(t)

    def said(kl, beta) -> list[str]:
        setup = read_run_config({"lr": 0.1, "refresh_interval": 1, "group_size": 8, "kl_coef": beta})
        f = pilot_forecast(setup, write_log(tmp_path / "k.jsonl", {"reward": reward, "kl": kl}), reward_range=(0.0, 1.0))
        return [a for a in f.assumed if "the pilot logs a KL to the reference" in a]

    rising = 0.001 + 0.0001 * t
    assert len(said(rising, 0.0)) == 1 and "KL weight is 0" in said(rising, 0.0)[0]
    assert not said(rising, 0.04) and not said(np.zeros(30), 0.0)
    trl = read_log(write_log(tmp_path / "trl.jsonl", {"reward": reward, "kl": rising, "completion_length": np.full(30, 50.0)}))
    (line,) = logged_kl(trl, 30, 0.0, "TRL GRPOConfig")
    assert "its keys date it to TRL <0.16" in line and "older releases defaulted to 0.04" in line
    assert KL_WEIGHT_KEYS["TRL GRPOConfig"] in line
    (line,) = logged_kl(trl, 30, 0.0, "verl")
    assert KL_WEIGHT_KEYS["verl"] in line and "0.04" not in line
    verl = {"data": {"train_batch_size": 64}, "algorithm": {"adv_estimator": "grpo"},
            "actor_rollout_ref": {"actor": {"optim": {"lr": 1e-6}, "ppo_mini_batch_size": 64}, "rollout": {"n": 8}}}
    overrides = [pair.split("=", 1)[0] + "=0.02" if pair.endswith("VALUE") else pair
                 for pair in KL_WEIGHT_KEYS["verl"].replace("--set ", "").split()]
    assert read_run_config(apply_overrides(verl, overrides)).hparams.kl_coef == 0.02  # the keys named are the ones read


@pytest.mark.parametrize("given, logged, dated, beta", [
    ({}, 0.001, "completion_length", 0.04),  # beta left out, a KL logged, TRL < 0.16: its default, 0.04
    ({}, 0.001, "completions/mean_length", 0.04),  # >= 0.17 and no 0.18 key (frac_reward_zero_std): < 0.18
    ({}, 0.001, "frac_reward_zero_std", 0.0),  # 0.18 or 0.19 (default 0.04 or 0): not read, asked for
    ({}, 0.001, "entropy", 0.0),  # >= 0.20, default 0: a KL says beta was set elsewhere, to a value not known
    ({"beta": 0.0}, 0.001, "completion_length", 0.0),  # given: as written (the KL line says it), never replaced
    ({}, 0.0, "completion_length", 0.0),  # a KL logged as 0 says nothing
    ({"beta": 0.1}, 0.001, "completion_length", 0.1),
])
def test_a_trl_config_without_beta_under_a_trl_pilot_that_logs_a_kl_reads_beta_as_its_releases_default(
        tmp_path, given, logged, dated, beta):
    """TRL logs `kl` only at beta != 0 from 0.16 and at any beta before, and defaulted beta to 0.04 up to 0.18 (0
    from 0.19); from 0.18 it logs frac_reward_zero_std on every row. A config that leaves beta out under a TRL pilot
    with a nonzero KL and no key of 0.18 or later ran at 0.04: the answer's first lines say it was read from the
    pilot (JSON source "the log"), and the notes no longer call it TRL's default 0; a beta the config gives is
    never replaced, and a log of 0.18 or later is asked for its beta (the KL line)."""
    t = np.arange(1, 31)
    reward = 0.8 - 0.5 * np.exp(-t / 10) + 0.01 * np.cos(t)
    rows = {"reward": reward, "kl": np.full(30, logged), dated: np.full(30, 0.5),
            "learning_rate": np.full(30, 1e-6), "epoch": t / 30}
    setup = read_run_config({"learning_rate": 1e-6, "num_generations": 8, "max_steps": 300, **given})
    f = pilot_forecast(setup, write_log(tmp_path / "trl.jsonl", rows), reward_range=(0.0, 1.0))
    assert f.config.setup.hparams.kl_coef == beta
    assumed = {a["key"]: a for a in f.config.setup.brief_json()["assumed"]}
    if given:
        assert "beta" not in assumed
    else:
        assert assumed["beta"]["value"] == beta and (assumed["beta"]["source"] == "the log") == (beta == 0.04)
        text = "\n".join(f.config.setup.brief_lines())
        assert ("beta 0.04 (the log holds a KL, and its keys date it before TRL 0.18" in text) == (beta == 0.04)
        beta_notes = [n for n in f.config.setup.notes if n.startswith("beta not given")]
        assert len(beta_notes) == 1 and ("TRL's default 0.0" in beta_notes[0]) == (beta == 0.0)
        assert any("logs a KL to the reference" in a for a in f.assumed) == (beta == 0.0 and logged > 0)


def test_pilot_steps_past_the_logs_end_are_refused(tmp_path):
    """--pilot-steps larger than the log's reward points is refused, naming how many there are: what the user asked
    for is never silently replaced by the whole log."""
    t = np.arange(30)
    log = write_log(tmp_path / "p.jsonl", {"reward": 0.8 - 0.5 * np.exp(-t / 10) + 0.01 * np.cos(t)})
    setup = read_run_config({"lr": 0.1, "refresh_interval": 1, "group_size": 8})
    with pytest.raises(ConfigError, match=r"--pilot-steps 1000 asks for more reward points than the pilot holds \(30\): "
                                          "give at most 30"):
        pilot_forecast(setup, log, pilot_steps=1000, reward_range=(0.0, 1.0))
    assert pilot_forecast(setup, log, pilot_steps=30, reward_range=(0.0, 1.0)).pilot_steps == 30
    assert not any("--pilot-steps" in a for a in pilot_forecast(setup, log, pilot_steps=30, reward_range=(0.0, 1.0)).assumed)


def test_a_pilot_whose_completions_halve_vouches_for_no_run(tmp_path):
    """The reward held while the mean completion length fell 350 -> 130 tokens (audit s37: a verl run that then fell
    to 0.03 with 5-token answers): not safe, said with the lengths, and no end reward extending that course; the same
    pilot with a steady length reads as it does without the column, and one whose reward rose meanwhile (a verbose start
    trimmed as the task is learned, audit s36's textcraft run) is not flagged."""
    from gspo_dynamics.predict import pilot_headline

    rng = np.random.default_rng(0)
    steps = 30
    reward = 0.5 + 0.02 * rng.standard_normal(steps)
    entropy = 0.6 + 0.005 * rng.standard_normal(steps)
    setup = read_run_config({"learning_rate": 1e-6, "num_generations": 8, "per_device_train_batch_size": 8,
                             "max_steps": 150})
    shrinking = np.linspace(350, 130, steps) + 5 * rng.standard_normal(steps)
    heads = {}
    for name, length in (("shrinking", shrinking), ("steady", 240 + 5 * rng.standard_normal(steps)), ("none", None)):
        columns = {"reward": reward, "entropy": entropy} | ({} if length is None else {"completions/mean_length": length})
        f = pilot_forecast(setup, write_log(tmp_path / f"{name}.jsonl", columns))
        heads[name] = (f, pilot_headline(f))
    f, head = heads["shrinking"]
    assert head.verdict == "unsure" and "its completions shrank from" in head.reason and f.length_fall
    assert head.forecast["end_reward"] is None and "completions are shrinking" in " ".join(head.forecast["text"])
    assert heads["steady"][1].verdict == heads["none"][1].verdict and heads["steady"][0].length_fall is None
    rising = np.linspace(0.3, 0.7, steps) + 0.02 * rng.standard_normal(steps)  # a verbose start trimmed while learning
    f = pilot_forecast(setup, write_log(tmp_path / "rising.jsonl", {"reward": rising, "entropy": entropy,
                                                                    "completions/mean_length": shrinking}))
    assert f.length_fall is None
    ceiling = np.clip(0.93 + 0.02 * rng.standard_normal(steps), 0, 1)  # at its ceiling a reward cannot rise (review s37)
    f = pilot_forecast(setup, write_log(tmp_path / "ceiling.jsonl", {"reward": ceiling, "entropy": entropy,
                                                                     "completions/mean_length": shrinking}))
    assert f.length_fall is None and f.reward_range == (0.0, 1.0)
