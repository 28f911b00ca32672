"""diagnose findings (`diagnose._findings.findings`): one test per finding on logs written here with TRL's keys
(trainer_state.json) and verl's (file-logger JSONL, orjson: NaN -> null), a healthy log that raises none, and the
shared real logs (read where they are)."""

from __future__ import annotations

import json
import math

import numpy as np
import orjson
import pytest
from _real_logs import ALEX_JSON, IMJONEZZ, SRINATH, SUNSHINE, VERL_SMOKE

from gspo_dynamics.diagnose._findings import FINDINGS, Finding, findings, kl_spikes
from gspo_dynamics.diagnose._mismatch import mismatch_numbers
from gspo_dynamics.logs import RunLog, read_log
from gspo_dynamics.theory import mismatch as th
from gspo_dynamics.theory.hyperparams import Hyperparams

N = 80
TRL_KEYS = {"reward": "reward", "kl_ref": "kl", "clip_frac": "clip_ratio/region_mean", "grad_norm": "grad_norm",
            "loss": "loss", "mean_length": "completions/mean_length", "truncation_rate": "completions/clipped_ratio",
            "logp_diff_mean": "sampling/sampling_logp_difference/mean",
            "is_ratio_mean": "sampling/importance_sampling_ratio/mean", "longest": "completions/max_length"}
VERL_KEYS = {"reward": "critic/score/mean", "kl_ref": "actor/kl_loss", "clip_frac": "actor/pg_clipfrac",
             "grad_norm": "actor/grad_norm", "loss": "actor/pg_loss", "mean_length": "response_length/mean",
             "truncation_rate": "response_length/clip_ratio", "kl_old_new": "actor/ppo_kl",
             "mismatch_k3_kl": "rollout_corr/k3_kl", "longest": "response_length/max"}


def healthy(trainer: str) -> dict[str, np.ndarray]:
    """A run that learns: reward 0.2 -> 0.7, small steady KL, clip and truncation, grad norm 0.5 with 20% noise."""
    rng = np.random.default_rng(0)
    t = np.arange(N) / N
    run = {"reward": 0.2 + 0.5 * (1 - np.exp(-t / 0.3)) + 0.02 * rng.standard_normal(N),
           "kl_ref": 0.03 * t + 0.001, "clip_frac": 0.005 * np.exp(0.3 * rng.standard_normal(N)),
           "grad_norm": 0.5 * np.exp(0.2 * rng.standard_normal(N)), "loss": 0.01 * rng.standard_normal(N),
           "mean_length": np.full(N, 400.0), "truncation_rate": np.full(N, 0.05)}
    if trainer == "verl":
        run["kl_old_new"] = 1e-3 * np.exp(0.3 * rng.standard_normal(N))
    else:
        run["reward/format"] = 0.3 + 0.6 * t
        run["reward/correct"] = 0.1 + 0.4 * t + 0.02 * rng.standard_normal(N)
    return run


def read(run: dict, trainer: str, tmp_path) -> RunLog:
    """Written as the trainer writes it, read back with read_log."""
    if trainer == "trl":
        keys = {**TRL_KEYS, **{k: f"rewards/{k[7:]}/mean" for k in run if k.startswith("reward/")}}
        rows = [{"step": i + 1, **{keys[k]: float(v[i]) for k, v in run.items()}} for i in range(N)]
        path = tmp_path / "trainer_state.json"
        path.write_text(json.dumps({"log_history": rows}))  # NaN / Infinity literals, as transformers writes them
    else:
        path = tmp_path / "metrics.jsonl"
        path.write_bytes(b"".join(orjson.dumps({"step": i + 1, "data": {VERL_KEYS[k]: v[i] for k, v in run.items()}},
                                               option=orjson.OPT_SERIALIZE_NUMPY) + b"\n" for i in range(N)))
    return read_log(path)


def names(log: RunLog, hparams=None) -> list[str]:
    return [f.name for f in findings(log, hparams)]


BOTH = pytest.mark.parametrize("trainer", ["trl", "verl"])


@BOTH
def test_a_healthy_run_has_no_finding(trainer, tmp_path):
    assert findings(read(healthy(trainer), trainer, tmp_path)) == []


@BOTH
def test_one_nan_gradient_norm_is_found_at_its_step_even_though_the_run_recovers(trainer, tmp_path):
    run = healthy(trainer)
    run["grad_norm"][29] = np.nan  # step 30; verl's orjson writes it as null
    f = findings(read(run, trainer, tmp_path))[0]
    assert (f.name, f.severity) == ("non_finite", "invalidates")
    assert f.summary.startswith("grad_norm is NaN or infinite from step 30 (1 rows")
    assert f.evidence[0]["recovered"] is True


@BOTH
def test_a_loss_that_overflows_and_stays_so_is_found_from_its_first_step(trainer, tmp_path):
    run = healthy(trainer)
    run["loss"][50:] = np.inf
    run["grad_norm"][50:] = np.nan
    f = next(f for f in findings(read(run, trainer, tmp_path)) if f.name == "non_finite")
    first = {e["signal"].split()[0]: e["first_step"] for e in f.evidence}
    assert first == {"grad_norm": 51, "loss": 51}


def test_a_series_logged_every_tenth_row_is_not_nan_in_between():
    """A series with its own cadence (every 10th row) is missing, not NaN, where the others are logged."""
    steps = np.arange(1, N + 1)
    every_tenth = np.where(steps % 10 == 0, 0.5, np.nan)
    log = RunLog(steps=steps, series={"reward": np.linspace(0.1, 0.6, N), "entropy": every_tenth}, format="jsonl",
                 source="<test>")
    assert "non_finite" not in names(log)


@BOTH
def test_a_gradient_norm_spike_is_found_with_its_multiple(trainer, tmp_path):
    run = healthy(trainer)
    run["grad_norm"][59] = 30 * np.median(run["grad_norm"][39:59])
    f = next(f for f in findings(read(run, trainer, tmp_path)) if f.name == "grad_norm_spike")
    assert f.evidence[0]["steps"] == [60, 60] and f.evidence[0]["value"] == pytest.approx(30.0)
    assert "max_grad_norm" in f.advice[0] and "actor_rollout_ref.actor.grad_clip" in f.advice[0]


def test_the_clip_advised_for_a_spike_is_the_typical_norm_of_steps_that_moved():
    """A run whose groups went flat logs a zero gradient for most steps: the clip advised is twice the median of the
    steps that moved (0.5 here), never the median of the zeros (max_grad_norm 0 turns the clip off). The spike after
    the flat stretch is measured against the steps that moved (6.0 is 12x 0.5)."""
    steps = np.arange(1, N + 1)
    norm = np.where(steps <= 40, 0.5, 0.0)
    norm[41:] = 1e-6
    norm[-5] = 6.0
    log = RunLog(steps=steps, series={"reward": np.linspace(0.1, 0.9, N), "grad_norm": norm}, format="jsonl",
                 source="<test>")
    f = next(f for f in findings(log) if f.name == "grad_norm_spike")
    assert "max_grad_norm: 1 /" in f.advice[0] and "(0.5)" in f.advice[0]
    flat = RunLog(steps=steps, series={"reward": np.linspace(0.1, 0.9, N), "grad_norm": np.where(steps == N - 4, 2.0,
                                                                                                  1e-7)},
                  format="jsonl", source="<test>")
    spike = next(f for f in findings(flat) if f.name == "grad_norm_spike")
    assert all("max_grad_norm" not in a for a in spike.advice) and "learning rate" in spike.advice[0]


def test_moving_steps_between_flat_ones_are_no_gradient_norm_spike():
    """Steps whose groups are all flat (norm ~5e-6) alternate with steps that move (0.12-0.18), as in a run whose
    groups mostly carry no signal: no moving step is a spike against the flat ones' median; a real 10x jump among
    them is."""
    rng = np.random.default_rng(0)
    steps = np.arange(1, N + 1)
    norm = np.where(rng.random(N) < 0.7, 5e-6 * (1 + 0.1 * rng.random(N)), 0.12 + 0.06 * rng.random(N))
    log = RunLog(steps=steps, series={"reward": np.linspace(0.1, 0.6, N), "grad_norm": norm}, format="jsonl",
                 source="<test>")
    assert "grad_norm_spike" not in names(log)
    norm[N - 10] = 2.5
    spiked = RunLog(steps=steps, series={"reward": np.linspace(0.1, 0.6, N), "grad_norm": norm}, format="jsonl",
                    source="<test>")
    f = next(f for f in findings(spiked) if f.name == "grad_norm_spike")
    assert f.evidence[0]["steps"] == [N - 9, N - 9] and 12 < f.evidence[0]["value"] < 21


def test_the_moved_rows_baseline_matches_a_loop():
    """`spike_rows(moved_only=True)`'s masked window medians against a row-by-row loop."""
    from gspo_dynamics.diagnose._spikes import SPIKE_WINDOW, moved_rows, spike_rows

    rng = np.random.default_rng(1)
    for _ in range(20):
        n = int(rng.integers(SPIKE_WINDOW + 1, 90))
        x = np.where(rng.random(n) < 0.6, 1e-6, 0.1 + rng.random(n)) * np.where(rng.random(n) < 0.05, 30, 1)
        rows, before = spike_rows(x, moved_only=True)
        moved = moved_rows(x)
        want = []
        for i in range(SPIKE_WINDOW, n):
            w = x[i - SPIKE_WINDOW:i][moved[i - SPIKE_WINDOW:i]]
            m = np.median(w) if w.size >= SPIKE_WINDOW // 2 else np.median(x[moved])
            if x[i] >= 10 * m and m > 0 and x[i] >= 2 * x[i - 1]:
                want.append((i, m))
        assert rows.tolist() == [i for i, _ in want]
        np.testing.assert_allclose(before, [m for _, m in want])


@BOTH
def test_a_kl_spike_is_found(trainer, tmp_path):
    run = healthy(trainer)
    run["kl_ref"][40] = 0.9
    f = next(f for f in findings(read(run, trainer, tmp_path)) if f.name == "kl_spike")
    assert "spiked at step 41: 0.9 nats" in f.summary


def test_kl_spikes_keeps_the_old_rule():
    """The cases of `_diagnose.kl_spikes`' tests: one jump with the reward around it, and four that are no spike."""
    def log(kl, reward=None):
        reward = np.linspace(0.2, 0.6, len(kl)) if reward is None else reward
        return RunLog(steps=np.arange(1, len(kl) + 1), series={"kl_ref": np.asarray(kl, float),
                      "reward": np.asarray(reward, float)}, format="jsonl", source="<test>")
    kl = np.full(60, 0.05)
    kl[40] = 0.9
    (s,) = kl_spikes(log(kl, np.r_[np.full(41, 0.5), np.full(19, 0.3)]))
    assert (s["step"], s["kl"], s["before"]) == (41, 0.9, 0.05) and s["reward_change"] == pytest.approx(-0.2)
    for kl in (np.linspace(0.0, 2.0, 80), np.r_[np.full(40, 0.001), 0.02, np.full(39, 0.001)],
               np.r_[np.full(40, 0.5), 0.95, np.full(39, 0.5)], np.full(20, 0.05)):
        assert kl_spikes(log(kl)) == []


@BOTH
def test_a_clip_fraction_jump_is_a_ratio_spike(trainer, tmp_path):
    run = healthy(trainer)
    run["clip_frac"][50] = 0.3
    if trainer == "verl":
        run["kl_old_new"][60] = 0.08
    f = next(f for f in findings(read(run, trainer, tmp_path)) if f.name == "ratio_spike")
    assert "the clip fraction jumped to 0.3 at step 51" in f.summary
    assert ("the old/new policy KL jumped to 0.08 at step 61" in f.summary) == (trainer == "verl")


@BOTH
def test_a_mismatch_past_the_clip_band_at_the_runs_length(trainer, tmp_path):
    """s = 0.03 per token at L = 2000: the sequence log-weight's sd is 1.3, so most completions' weight is outside
    [0.8, 1.2]; TRL logs an IS ratio (its correction is on) and verl none: a warning either way (an uncorrected
    mismatch biases the run by an amount the share does not give: audit s38 D1, a verl run that rose through it)."""
    run = healthy(trainer)
    run["mean_length"] = np.full(N, 2000.0)
    if trainer == "trl":
        run["logp_diff_mean"] = np.full(N, float(th.mean_abs_log_ratio(0.03)))
        run["is_ratio_mean"] = np.full(N, 0.9)
    else:
        run["mismatch_k3_kl"] = np.full(N, 0.03**2 / 2)
    log = read(run, trainer, tmp_path)
    f = next(f for f in findings(log) if f.name == "train_inference_mismatch")
    assert f.severity == "warning"
    mean, var = th.sequence_log_ratio_moments(0.03, 2000)
    share = float(th.outside_band_share(mean, var, 0.2, 0.2))
    assert mismatch_numbers(log)["s"] == pytest.approx(0.03) and f.evidence[1]["value"] == pytest.approx(share)
    assert f"at the run's 2000 tokens the true sequence weight leaves [0.8, 1.2] for {share:.0%}" in f.summary
    assert "vllm_importance_sampling_mode: token_truncate" in f.advice[0]
    assert "algorithm.rollout_correction.rollout_is: token" in f.advice[0]


def test_a_small_mismatch_at_short_lengths_is_no_finding(tmp_path):
    run = healthy("verl")
    run["mismatch_k3_kl"] = np.full(N, 0.002**2 / 2)  # s sqrt(L) = 0.04 at L = 400
    assert "train_inference_mismatch" not in names(read(run, "verl", tmp_path))


@BOTH
def test_a_clip_fraction_of_zero_on_policy_is_explained_not_flagged(trainer, tmp_path):
    run = healthy(trainer)
    run["clip_frac"] = np.zeros(N)
    if trainer == "verl":
        run["kl_old_new"] = 1e-5 * np.random.default_rng(1).standard_normal(N)  # recompute noise
    log = read(run, trainer, tmp_path)
    f = next(f for f in findings(log) if f.name == "clip_zero_on_policy")
    assert f.severity == "note" and "not a bug" in f.summary
    assert "clip_zero_on_policy" not in names(log, Hyperparams(lr=1e-6, refresh_interval=4))
    assert "clip_zero_on_policy" in names(log, Hyperparams(lr=1e-6, refresh_interval=1))


def test_a_zero_clip_fraction_with_a_moving_policy_is_not_on_policy(tmp_path):
    run = healthy("verl")
    run["clip_frac"] = np.zeros(N)  # kl_old_new stays at 1e-3: the policy moves within a rollout
    assert "clip_zero_on_policy" not in names(read(run, "verl", tmp_path))


@pytest.mark.parametrize(("correct", "found"), [
    (np.full(N, 0.3) + 0.02 * np.random.default_rng(2).standard_normal(N), True),  # flat below its ceiling
    (np.linspace(0.4, 0.2, N), True),  # falling
    (np.full(N, 1.0), False),  # always met: at its ceiling
    (np.zeros(N), False),  # never met: constant, no signal either way
])
def test_one_reward_function_rising_alone(correct, found, tmp_path):
    run = healthy("trl")
    run["reward/correct"] = correct
    assert ("reward_function_divergence" in names(read(run, "trl", tmp_path))) == found


@BOTH
def test_most_completions_truncated_late_invalidates(trainer, tmp_path):
    run = healthy(trainer)
    run["truncation_rate"] = np.linspace(0.2, 0.8, N)
    f = next(f for f in findings(read(run, trainer, tmp_path)) if f.name == "truncation")
    assert f.severity == "invalidates" and "max_completion_length" in f.advice[0] and "data.max_response_length" in f.advice[0]



@BOTH
def test_a_quarter_of_completions_truncated_throughout_is_a_warning_and_a_twentieth_is_nothing(trainer, tmp_path):
    """A quarter to a third cut at the cap from start to end (session 39's audit: 23-36% at a 256 cap on a flat run,
    said nowhere): a warning with the cap's keys; a twentieth, nothing; the same quarter where the lengths cannot hold
    it (mean a third of the longest), nothing."""
    run = healthy(trainer)
    run["truncation_rate"] = np.full(N, 0.27)
    f = next(f for f in findings(read(run, trainer, tmp_path)) if f.name == "truncation")
    assert f.severity == "warning" and f.summary.startswith("27% of the completions are cut") and f.advice
    assert f.evidence[0]["threshold"] == 0.2
    run["truncation_rate"] = np.full(N, 0.05)
    assert "truncation" not in names(read(run, trainer, tmp_path))
    run["truncation_rate"], run["longest"] = np.full(N, 0.45), np.full(N, 1200.0)
    assert "truncation" not in names(read(run, trainer, tmp_path))

@BOTH
def test_a_truncation_share_the_lengths_cannot_hold_is_a_note_not_a_cut(trainer, tmp_path):
    """Every completion 'clipped' while the mean length is a third of the longest (TRL counts completions a stop string
    ended, without an EOS token; audit H6): a cap cut at most a third, so the share is not the cap's: a note, no advice
    to raise the cap. Where the lengths allow it (mean near the longest), the cut stands."""
    run = healthy(trainer)
    run["truncation_rate"] = np.full(N, 1.0)
    run["longest"] = np.full(N, 1200.0)  # mean 400
    f = next(f for f in findings(read(run, trainer, tmp_path)) if f.name == "truncation")
    assert f.severity == "note" and not f.advice and "without the EOS token" in f.summary
    run["longest"] = np.full(N, 410.0)
    f = next(f for f in findings(read(run, trainer, tmp_path)) if f.name == "truncation")
    assert f.severity == "invalidates" and f.advice


def test_most_severe_first_and_the_type_checks_its_fields(tmp_path):
    run = healthy("trl")
    run["truncation_rate"] = np.full(N, 0.9)
    run["grad_norm"][59] = 100.0
    run["grad_norm"][20] = np.nan
    assert names(read(run, "trl", tmp_path)) == ["non_finite", "truncation", "grad_norm_spike"]
    with pytest.raises(ValueError, match="unknown finding"):
        Finding("nan", "warning", "", [], [])
    with pytest.raises(ValueError, match="unknown severity"):
        Finding(FINDINGS[0], "fatal", "", [], [])
    assert set(Finding("truncation", "warning", "s", [], []).to_json()) == {"name", "severity", "summary", "evidence",
                                                                            "advice"}


@pytest.mark.real_logs
def test_the_shared_real_logs(real_logs):
    """What fires on the real logs, read by eye: the Llama run's gradient-norm spike (16x at step 84) and KL spike
    (step 206); the Qwen3.5 run's spikes at step 50; the gpt-oss run's 83% truncation; TRL runs with num_iterations
    = 1 have a clip ratio of exactly 0; the verl GSPO smoke run logs a sampler-trainer k3 KL of 3.3e-4 per token at
    1700 tokens. No NaN anywhere."""
    assert names(read_log(real_logs / IMJONEZZ)) == ["grad_norm_spike", "kl_spike"]
    assert names(read_log(real_logs / SUNSHINE)) == ["grad_norm_spike", "kl_spike"]
    assert names(read_log(real_logs / SRINATH)) == ["truncation", "clip_zero_on_policy"]
    assert names(read_log(real_logs / ALEX_JSON)) == ["reference_not_start", "clip_zero_on_policy"]  # KL ~1 at step 1
    assert names(read_log(real_logs / VERL_SMOKE)) == ["train_inference_mismatch"]


def test_the_masked_mean_weight_inverts_to_its_spread_as_a_simulation_gives_it():
    """m = Phi((log 3 - sigma^2/2) / sigma) against the mean of simulated masked weights e^S 1{e^S <= 3}."""
    from gspo_dynamics.diagnose._mismatch import spread_from_masked_mean

    rng = np.random.default_rng(1)
    for sigma in (0.5, 1.0, 1.5, 2.5):
        w = np.exp(sigma * rng.standard_normal(2_000_000) - sigma**2 / 2)
        m = float(np.mean(np.where(w <= 3.0, w, 0.0)))
        assert spread_from_masked_mean(m) == pytest.approx(sigma, rel=0.03)
    assert spread_from_masked_mean(1.01) == 0.0


def _trl_is_only(run: dict, tmp_path, mean_weight: np.ndarray, length: float) -> RunLog:
    """A TRL log whose only mismatch keys are sampling/importance_sampling_ratio/{min,mean,max} (no log-prob gap)."""
    rows = [{"step": i + 1, **{TRL_KEYS[k]: float(v[i]) for k, v in run.items() if k in TRL_KEYS},
             "completions/mean_length": length, "sampling/importance_sampling_ratio/mean": float(mean_weight[i]),
             "sampling/importance_sampling_ratio/min": 0.0, "sampling/importance_sampling_ratio/max": 3.0}
            for i in range(N)]
    path = tmp_path / "trainer_state.json"
    path.write_text(json.dumps({"log_history": rows}))
    return read_log(path)


def test_a_mismatch_logged_only_as_trls_importance_ratios_is_found(tmp_path):
    """s = 0.03 at L = 2000 (sigma = 1.34): TRL's default sequence_mask at 3 keeps a mean weight of 0.79."""
    from scipy.stats import norm

    sigma = 0.03 * math.sqrt(2000)
    m = norm.cdf((math.log(3.0) - sigma**2 / 2) / sigma)
    rng = np.random.default_rng(2)
    log = _trl_is_only(healthy("trl"), tmp_path, m + 0.01 * rng.standard_normal(N), 2000.0)
    n = mismatch_numbers(log)
    assert n["name"] == "is_ratio_mean" and 0.02 < n["s"] < 0.03  # a lower bound, within the scatter's 2 s.e.
    assert "train_inference_mismatch" in names(log)


def test_trls_mean_weight_scattering_around_one_is_no_mismatch(tmp_path):
    """A healthy run's batch mean weight scatters around 1 (sd 0.02): no sigma is read from the scatter."""
    rng = np.random.default_rng(3)
    log = _trl_is_only(healthy("trl"), tmp_path, 1.0 + 0.02 * rng.standard_normal(N), 2000.0)
    assert mismatch_numbers(log)["s"] < 0.01 and "train_inference_mismatch" not in names(log)


@BOTH
def test_completions_that_shrink_to_near_empty_while_the_reward_falls_are_a_warning(trainer, tmp_path):
    """Length 350 -> 10 tokens while the reward falls (a length penalty's collapse): a warning naming both and what to
    read; the same shrink while the reward rises (a verbose start trimmed) is a note; a shrink by a third is none."""
    rng = np.random.default_rng(3)
    t = np.arange(N) / N
    run = healthy(trainer)
    run["mean_length"] = 350.0 * np.exp(-3.5 * t) + 5 * rng.standard_normal(N)
    run["reward"] = 0.55 - 0.45 * t + 0.02 * rng.standard_normal(N)
    found = next(f for f in findings(read(run, trainer, tmp_path)) if f.name == "length_collapse")
    assert found.severity == "warning" and "while the reward fell" in found.summary and found.advice
    assert found.evidence[0]["value"] < 0.5 and found.evidence[0]["z"] <= -3
    run["reward"] = healthy(trainer)["reward"]  # rising
    found = next(f for f in findings(read(run, trainer, tmp_path)) if f.name == "length_collapse")
    assert found.severity == "note" and "while the reward rose" in found.summary and not found.advice
    run["mean_length"] = 350.0 * (1 - t / 3) + 5 * rng.standard_normal(N)  # 350 -> ~240: no collapse
    assert "length_collapse" not in names(read(run, trainer, tmp_path))


def test_a_share_cut_at_the_cap_that_rose_beside_a_flat_reward_is_length_growths_alone(tmp_path):
    """5% -> 40% cut while the reward stands still: `length_growth` says it (tokens spent on nothing the reward shows);
    the fifth's truncation warning is not said beside it."""
    run = healthy("trl")
    run["reward"] = np.full(N, 0.5) + 0.02 * np.random.default_rng(0).standard_normal(N)
    run["truncation_rate"] = np.linspace(0.05, 0.4, N)
    got = names(read(run, "trl", tmp_path))
    assert "length_growth" in got and "truncation" not in got


@BOTH
def test_a_reward_nan_to_the_end_beside_finite_updates_is_the_reward_functions_not_a_divergence(trainer, tmp_path):
    """audit s42 #1 (a W&B CSV whose reward is `nan` for its last 120 rows, grad norm and loss finite there): it was
    "dynamical instability (1.00)", "the updates from that step on are not numbers", "lower the lr, check fp16". The
    gradient norm says the updates were numbers: a warning on the reward function, the verdict read on the rows
    before. Where the gradient norm is NaN too, it stays a divergence."""
    from gspo_dynamics.diagnose import diagnose

    run = healthy(trainer)
    run["reward"][60:] = np.nan
    log = read(run, trainer, tmp_path)
    f = next(f for f in findings(log) if f.name == "non_finite")
    assert f.severity == "warning" and "while the grad norm and loss are numbers on those rows" in f.summary
    d = diagnose(log)
    assert d.verdict("dynamical_instability") is None and d.primary in ("healthy_saturation", "still_rising")
    # the review of s42: every update reading must be a number there, and the gradient norm not exploding
    for grad, loss in ((np.inf, 0.01), (np.nan, 0.01), (1.6e6, 0.01), (np.nan, np.nan)):
        broken = {k: v.copy() for k, v in run.items()}
        broken["grad_norm"][60:], broken["loss"][60:] = grad, loss
        d = diagnose(read(broken, trainer, tmp_path))
        assert d.primary == "dynamical_instability" and d.verdict("dynamical_instability").confidence > 0.99, grad


@pytest.mark.parametrize("first, kl0, fires", [(1, 1.0, True), (10, 0.5, True), (1, 0.02, False), (501, 1.0, False),
                                                (20, 0.5, False)])  # logged every 20 steps: no row of the start
def test_a_kl_to_the_reference_far_from_zero_at_the_runs_start_is_a_warning(first, kl0, fires):
    """Audit s43u D4: a KL of ~1 nat from step 1 was a note under --explain; it is a config change (the reference), so a
    warning among the first lines. A log that begins later (a resumed run from step 501) has no start to read."""
    from gspo_dynamics.diagnose._reference import KL_START_HIGH, reference_not_start
    from gspo_dynamics.diagnose._trend_stats import MIN_WINDOW

    gap = first if first in (10, 20) else 1
    steps = first + gap * np.arange(60)
    kl = kl0 + 0.001 * np.arange(60)
    log = RunLog(steps=steps.astype(np.int64), series={"reward": np.full(60, 0.5), "kl_ref": kl}, format="jsonl",
                 source="<synthetic>")
    found = reference_not_start(log)
    assert (found is not None) == fires
    if fires:
        start = kl[steps <= 10][:MIN_WINDOW]
        assert found.severity == "warning" and found.evidence[0]["value"] == pytest.approx(np.mean(start))
        assert found.evidence[0]["value"] > KL_START_HIGH
