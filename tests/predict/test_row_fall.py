"""predict._row_fall: one row's fall against the rows' largest sampling noise. The bound (1) against simulated rows
of prompts of differing difficulty; a planted one-row crash that block means hide is found; null pilots are not
called a fall; the pilot path (a TRL pilot at steps_per_generation 8) reads the crash as a dip."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gspo_dynamics.fit import Z_FALL, reward_fall
from gspo_dynamics.predict import pilot_forecast, pilot_headline, read_run_config
from gspo_dynamics.predict._row_fall import prompts_per_row, row_fall


def _rows(rng, p_mean: float, n_rows: int, prompts: int, G: int, spread: float) -> np.ndarray:
    """Row means of `prompts` prompts of G 0/1 responses, each prompt's success chance Beta-distributed around p_mean
    (spread -> 0: all alike; large: prompts solved or failed outright)."""
    a = p_mean / spread
    b = (1 - p_mean) / spread
    p = rng.beta(a, b, size=(n_rows, prompts))  # (rows, prompts)
    return rng.binomial(G, p).sum(axis=1) / (prompts * G)


@pytest.mark.parametrize("spread", [0.01, 1.0, 100.0])
@pytest.mark.parametrize("p_mean", [0.1, 0.5, 0.9])
def test_the_bound_holds_for_prompts_of_any_difficulty(p_mean, spread):
    """Var(row mean) <= m (1 - m) / P (1): simulated rows of 16 prompts x 8 responses, from prompts all alike
    (variance m (1 - m) / (P G)) to prompts solved or failed outright (variance m (1 - m) / P, the bound itself)."""
    rows = _rows(np.random.default_rng(0), p_mean, 20_000, 16, 8, spread)
    bound = p_mean * (1 - p_mean) / 16
    assert rows.var() <= bound * 1.05  # 20k rows: the variance's own sampling error is ~1%
    if spread == 100.0:
        assert rows.var() > 0.9 * bound  # reached where every prompt is all-or-nothing


def test_a_one_row_crash_that_block_means_hide_is_a_loss():
    steps = np.arange(1, 80, 8)  # T = 8: one row per rollout, 10 rows
    reward = np.array([0.25, 0.44, 0.72, 0.38, 0.01, 0.8, 0.81, 0.93, 0.96, 0.95])  # a TRL atlas pilot
    assert not reward_fall(steps, reward, (0.0, 1.0)).lost
    P = prompts_per_row(steps, 8)
    assert P == 64
    fall = row_fall(steps, reward, (0.0, 1.0), P)
    z = (0.72 - 0.01) / np.sqrt((0.72 * 0.28 + 0.01 * 0.99) / 64)
    assert fall.lost and fall.best == 0.72 and fall.after == 0.01 and fall.z == pytest.approx(z)
    assert fall.best_steps == (17, 17) and fall.after_steps == (33, 33)


def test_no_range_or_no_prompt_count_reads_nothing():
    steps, reward = np.arange(10), np.linspace(0.2, 0.8, 10)
    assert row_fall(steps, reward, None, 64) is None and row_fall(steps, reward, (0, 1), None) is None
    assert prompts_per_row(steps, None) is None and prompts_per_row(steps[:1], 8) is None


@pytest.mark.parametrize("spread", [0.01, 100.0])
def test_null_pilots_are_not_a_fall(spread):
    """2,000 pilots of 10 rows at a constant success chance (no fall): none called a loss at Z_FALL (the bound's
    one-sided tail at 5 sigma over 45 pairs is below 1.3e-5; where prompts are all-or-nothing, the bound is tight)."""
    rng = np.random.default_rng(1)
    steps = np.arange(1, 80, 8)
    lost = sum(row_fall(steps, _rows(rng, p, 10, 64, 8, spread), (0.0, 1.0), 64).lost
               for p in rng.uniform(0.2, 0.8, 2000))
    assert lost == 0
    assert Z_FALL == 5.0


def test_a_trl_pilot_at_t8_with_a_crashed_row_is_not_safe(tmp_path):
    config = {"learning_rate": 3e-3, "num_generations": 8, "per_device_train_batch_size": 64, "steps_per_generation": 8,
              "max_steps": 400}
    reward = np.array([0.25, 0.44, 0.72, 0.38, 0.01, 0.8, 0.81, 0.93, 0.96, 0.95])
    rows = [{"step": int(s), "reward": float(r), "entropy": 0.5} for s, r in zip(range(1, 80, 8), reward)]
    path = tmp_path / "pilot.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    f = pilot_forecast(read_run_config(config), str(path), reward_range=(0.0, 1.0))
    assert f.fall.lost and f.fall.after_steps == (33, 33)
    head = pilot_headline(f)
    assert head.verdict != "safe" and "step 17" in head.reason and "step 33" in head.reason
    assert any("predict._row_fall (2)" in line for line in f.measured)


def test_a_drop_at_the_pilots_end_against_a_loop_and_simulated_noise():
    """(3): the last row against the median of the rows before, in their own scatter. Equals the formula written out
    (a loop over the differences); on pilots of normal rows (no drop) it fires on under 1e-3 at 8, 12 and 20 rows (the
    Student-t threshold); a last row 12 scatters down fires; one under a range's tenth does not, in that range."""
    from gspo_dynamics.predict._row_fall import end_drop, end_threshold

    rng = np.random.default_rng(3)
    steps = np.arange(1, 21)
    reward = 0.6 + 0.02 * rng.standard_normal(20)
    reward[-1] = 0.6 - 12 * 0.02
    d = end_drop(steps, reward, None)
    before = list(reward[:-1])
    diffs = [before[i + 1] - before[i] for i in range(len(before) - 1)]
    mean = sum(diffs) / len(diffs)
    s = (sum((x - mean) ** 2 for x in diffs) / (len(diffs) - 1)) ** 0.5 / 2 ** 0.5
    z = (sorted(before)[9] - reward[-1]) / (s * (1 + np.pi / (2 * 19)) ** 0.5)  # the median of 19 rows: the 10th
    assert d.lost and d.z == pytest.approx(z) and d.after_steps == (20, 20) and d.best == sorted(before)[9]
    assert not end_drop(steps, reward, (0.0, 10.0)).lost  # 0.24 is under a tenth of a reach of 10: not a drop that matters
    assert end_threshold(8) == pytest.approx(5.893, abs=1e-3) and end_threshold(40) == Z_FALL
    for n in (8, 12, 20):
        rows = rng.standard_normal((10_000, n))
        fired = sum(bool((x := end_drop(np.arange(n), row, None)) and x.lost) for row in rows)
        assert fired <= 20, (n, fired)  # a rate at most 2e-3 (simulated at 2e5 pilots: 9e-4, 4e-4, 7e-5)
    assert end_drop(steps, np.linspace(0.1, 0.9, 20), None) is None  # a rising pilot's last row is its best


def test_a_pilot_whose_last_row_drops_is_unsure_not_kept(tmp_path):
    config = {"learning_rate": 1e-4, "num_generations": 4, "per_device_train_batch_size": 8, "max_steps": 200,
              "logging_steps": 5}
    reward = [0.85, 0.975, 0.85, 0.725, 1.0, 0.95, 0.875, 0.9, 0.875, 0.95, 0.9, 0.1]  # a public run's shape
    rows = [{"step": 5 * (i + 1), "reward": r, "entropy": 0.5, "loss": 0.0} for i, r in enumerate(reward)]
    path = tmp_path / "pilot.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    f = pilot_forecast(read_run_config(config), str(path))
    head = pilot_headline(f)
    assert f.end_drop is not None and f.end_drop.after_steps == (60, 60)
    assert head.verdict in ("unsure", "at risk", "unsafe") and "kept its reward" not in head.reason
    assert f.to_json()["pilot_end_drop"]["after"] == 0.1


def test_a_fall_after_the_first_row_mirrors_the_end_drop_and_reads_as_the_formula():
    """(3'): the first row against the median of the rows after it, in their own scatter. Equals the formula written
    out; equals (3) on the pilot reversed in time and sign (its null chance is (3)'s); a rising pilot has none."""
    from gspo_dynamics.predict._row_fall import end_drop, start_drop

    rng = np.random.default_rng(4)
    steps = np.arange(1, 21)
    reward = 0.3 + 0.02 * rng.standard_normal(20)
    reward[0] = 0.3 + 12 * 0.02
    d = start_drop(steps, reward, None)
    after = list(reward[1:])
    diffs = [after[i + 1] - after[i] for i in range(len(after) - 1)]
    mean = sum(diffs) / len(diffs)
    s = (sum((x - mean) ** 2 for x in diffs) / (len(diffs) - 1)) ** 0.5 / 2 ** 0.5
    z = (reward[0] - sorted(after)[9]) / (s * (1 + np.pi / (2 * 19)) ** 0.5)
    assert d.lost and d.z == pytest.approx(z) and d.best_steps == (1, 1) and d.after_steps == (2, 20)
    for row in rng.standard_normal((200, 12)):
        a, b = start_drop(np.arange(12), row, None), end_drop(np.arange(12), -row[::-1], None)
        assert (a is None) == (b is None) and (a is None or (a.z == pytest.approx(b.z) and a.lost == b.lost))
    assert start_drop(steps, np.linspace(0.1, 0.9, 20), None) is None


def test_a_pilot_that_falls_to_its_floor_after_its_first_row_is_unsafe(tmp_path):
    """A real TRL run's shape (the lr 0.01 atlas run, seed 5): 0.266 at step 1, then 0 for 79 rows. The block means
    dilute the one high row and the floor has no scatter: (3') reads the loss; the verdict is unsafe, with its change."""
    config = {"learning_rate": 1e-2, "num_generations": 8, "per_device_train_batch_size": 64, "max_steps": 400}
    rows = [{"step": s, "reward": 0.266 if s == 1 else 0.0, "loss": 0.0} for s in range(1, 81)]
    path = tmp_path / "pilot.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    f = pilot_forecast(read_run_config(config), str(path))
    head = pilot_headline(f)
    assert f.fall.lost and f.fall.best_steps == (1, 1) and f.fall.after_steps == (2, 80)
    assert head.verdict == "unsafe" and "kept its reward" not in head.reason and "step 1" in head.reason
    assert head.changes and any("predict._row_fall (3')" in line for line in f.measured)


def test_an_unsafe_verdict_gives_no_end_reward_forecast(tmp_path):
    """Under unsafe, a forecast of the run's end would extend the pilot's course the verdict says may fall: none, said
    (the first-row fall above: 0 for 79 rows would otherwise be forecast as held)."""
    config = {"learning_rate": 1e-2, "num_generations": 8, "per_device_train_batch_size": 64, "max_steps": 400}
    rows = [{"step": s, "reward": 0.266 if s == 1 else 0.0, "loss": 0.0} for s in range(1, 81)]
    path = tmp_path / "pilot.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    head = pilot_headline(pilot_forecast(read_run_config(config), str(path)))
    assert head.verdict == "unsafe" and head.forecast["end_reward"] is None
    assert any(t.startswith("reward at the run's end: not forecast (the verdict is unsafe") for t in head.forecast["text"])


def test_a_pilot_that_never_fell_compares_no_blocks_in_json():
    steps, reward = np.arange(1, 41), np.linspace(0.1, 0.8, 40)
    fall = reward_fall(steps, reward)
    assert fall.fall == 0 and fall.to_json() == {"fall": 0.0, "best": None, "best_steps": None, "after": None,
                                                "after_steps": None, "z": 0.0, "lost": False}


def _dip_pilot(seed: int = 0, n: int = 144) -> tuple[np.ndarray, np.ndarray]:
    """A pilot held near 0.94 whose rows are means of 2 prompts (partial credit: rows near the level, a few far below
    it), with two such rows in one block at rows 85-86: the shape of a TRL run at N = 2, G = 16 that kept rising."""
    rng = np.random.default_rng(seed)
    reward = np.clip(0.94 + rng.normal(0, 0.015, n), 0, 1)
    reward[[84, 85]] = 0.65, 0.79
    return np.arange(1, n + 1), reward


def test_a_dip_within_the_rows_sampling_noise_that_came_back_is_no_loss():
    """The block test calls the two low rows a fall (its scatter, read off the rows' differences, understates their
    noise); against the sampling noise of 32 completions a row (4) it is within z 5 and the pilot came back: no loss,
    said. A collapse (the rows stay down) and a dip that does not come back stay losses."""
    from gspo_dynamics.predict._row_fall import noise_dip, row_noise_z

    steps, reward = _dip_pilot()
    block = reward_fall(steps, reward, (0, 1))
    assert block.lost
    z, n = row_noise_z(block, steps, (0, 1), None, 32)
    assert z <= Z_FALL and n == 32
    measured: list[str] = []
    kept = noise_dip(block, steps, reward, (0, 1), None, 32, measured)
    assert not kept.lost and kept.fall == block.fall and "not a loss" in measured[-1]
    assert noise_dip(block, steps, reward, (0, 1), None, 32 * 64, []).lost  # many completions a row: past the noise
    fell = reward.copy()
    fell[84:] = np.clip(0.55 + np.random.default_rng(1).normal(0, 0.015, fell.size - 84), 0, 1)
    collapse = reward_fall(steps, fell, (0, 1))
    assert collapse.lost and noise_dip(collapse, steps, fell, (0, 1), None, 32, []).lost  # never came back


def test_row_noise_z_is_the_block_difference_over_the_pass_fail_variance():
    """(4) by hand: b = 0.9, a = 0.7 over blocks of BLOCK rows of n completions: se = sqrt((0.09 + 0.21) / (BLOCK n))."""
    from gspo_dynamics.fit import BLOCK, Fall
    from gspo_dynamics.predict._row_fall import row_noise_z

    f = Fall(fall=0.2, best=0.9, best_steps=(1, 4), after=0.7, after_steps=(5, 8), z=9.0, lost=True)
    z, _ = row_noise_z(f, np.arange(1, 9), (0, 1), None, 10)
    assert z == pytest.approx(0.2 / np.sqrt((0.9 * 0.1 + 0.7 * 0.3) / (BLOCK * 10)))
    spread = np.r_[np.full(4, 0.3), np.full(4, 0.4)]  # the logged reward_std where the range is unknown
    z, _ = row_noise_z(f, np.arange(1, 9), None, spread, 10)
    assert z == pytest.approx(0.2 / np.sqrt((0.09 + 0.16) / (BLOCK * 10)))
    assert row_noise_z(f, np.arange(1, 9), None, None, 10) is None


@pytest.mark.parametrize("config", [
    {"learning_rate": 1e-6, "num_generations": 4, "per_device_train_batch_size": 4, "gradient_accumulation_steps": 2,
     "max_steps": 400},
    {"advantage_estimator": "group_norm", "n_samples_per_prompt": 4, "rollout_batch_size": 2, "train_batch_size": 8,
     "actor_learning_rate": 1e-6},  # OpenRLHF: n_samples_per_prompt moves T; the batches, a step's completions
    {"lr": 1e-3, "group_size": 4, "num_groups": 2, "refresh_interval": 1},
])
def test_a_fall_within_the_rows_noise_asks_for_rows_of_more_completions_in_the_configs_own_keys(tmp_path, config):
    """A fall of 0.15 over rows of 8 completions (z 1.4 against their pass/fail noise): unsure, no lr cut, and the
    change is rows of enough completions to tell. TRL's batch counts completions, so not num_generations but the
    accumulation with the rollout's size, one integer factor (read back: T kept, N G times it); G's key elsewhere."""
    rng = np.random.default_rng(0)
    reward = np.clip(0.85 + rng.normal(0, 0.01, 80), 0, 1)
    reward[60:] = np.clip(0.72 + rng.normal(0, 0.01, 20), 0, 1)
    path = tmp_path / "pilot.jsonl"
    path.write_text("".join(json.dumps({"step": s, "reward": float(r), "loss": 0.0}) + "\n"
                            for s, r in zip(range(1, 81), reward)))
    setup = read_run_config(config)
    head = pilot_headline(pilot_forecast(setup, str(path)))
    assert head.verdict == "unsure" and "it may be noise" in head.reason
    edits = {c.key: c.value for c in head.changes}
    assert not {"learning_rate", "lr"} & set(edits)
    edited = read_run_config({**config, **edits}).hparams
    hp = setup.hparams
    assert edited.refresh_interval == hp.refresh_interval
    factor = edited.num_groups * edited.group_size / (hp.num_groups * hp.group_size)
    assert factor >= 5 and all(f"rows of {factor:.3g}x the completions" in c.buys for c in head.changes)
    assert not {"num_generations", "n_samples_per_prompt"} & set(edits)
    assert len(edits) == 1 or all("(together they keep T)" in c.buys for c in head.changes)
