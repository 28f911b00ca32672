"""paper_repro/trainer_at_scale.py: its estimators against independent routes, and its PENDING rows.

The end-to-end quick run is covered by tests/test_paper_repro.py (slow); here only the pieces.
"""

from __future__ import annotations

import json
import math
import sys
from types import SimpleNamespace

import numpy as np
import pytest


@pytest.fixture(scope="module")
def script(load_script):
    return load_script("paper_repro", "trainer_at_scale")


@pytest.mark.parametrize("N,G,k", [(4, 4, 5), (2, 8, 9), (3, 4, 12), (4, 4, 0), (2, 16, 32)])
def test_zero_std_exact_matches_shuffled_groups(script, N, G, k):
    """[C(k,G) + C(n-k,G)] / C(n,G) is the expected zero-std share when k successes among n = N G
    exchangeable draws are dealt into N groups: checked by 20 000 random deals. Tolerance 4 s.e. of
    the Monte Carlo mean (a share in [0, 1]: s.e. <= 0.5 / sqrt(20 000 N))."""
    n, trials = N * G, 20_000
    rng = np.random.default_rng(0)
    draws = np.zeros((trials, n))
    draws[:, :k] = 1
    draws = rng.permuted(draws, axis=1).reshape(trials, N, G)
    share = (draws.min(-1) == draws.max(-1)).mean(-1)  # (trials,)
    predicted = script.zero_std_exact(np.array([k / n]), n, G)[0]
    assert abs(share.mean() - predicted) <= 4 * share.std() / math.sqrt(trials) + 1e-12


def test_zero_std_exact_tends_to_the_plug_in_form(script):
    """n -> inf: the hypergeometric form -> p^G + (1-p)^G (difference O(G^2 / n): < 1e-3 at n = 1e6)."""
    p, G, n = 0.3, 8, 10**6
    assert script.zero_std_exact(np.array([p]), n, G)[0] == pytest.approx(p**G + (1 - p) ** G, abs=1e-3)


def test_drawdown_matches_a_loop(script):
    rng = np.random.default_rng(1)
    for T in (1, 3, 16):
        r = rng.random(50)
        per = [r[i : i + T].mean() for i in range(0, len(r) // T * T, T)]
        worst, peak = 0.0, -math.inf
        for x in per:
            peak = max(peak, x)
            worst = max(worst, peak - x)
        assert script.drawdown(r, T) == pytest.approx(worst, abs=1e-12)
    assert script.drawdown(np.linspace(0, 1, 32), 4) == 0.0  # monotone saturation: no drawdown


def test_entropy_fit_recovers_the_relation(script):
    """Exact data R = -a exp(H) + b give a back and R^2 = 1 (float64 least squares: 1e-9)."""
    H = np.linspace(0.2, 2.0, 40)
    a, r2 = script.entropy_fit(H, -0.05 * np.exp(H) + 1.1)
    assert a == pytest.approx(0.05, rel=1e-9) and r2 == pytest.approx(1.0, abs=1e-9)
    a, r2 = script.entropy_fit(H, 0.05 * np.exp(H))  # reward rising with entropy: a < 0
    assert a < 0


def test_pending_rows_keep_real_full_rows(script, tmp_path, monkeypatch):
    """`--pending` (the script's main, in this process, its results moved to tmp_path as GSPO_DYNAMICS_RESULTS
    would move them) records every full-mode row PENDING, and a second run keeps a measured full-mode row."""
    results = script.record.__globals__  # the namespace of the script's own paper_repro/_results (not looked up
    monkeypatch.setitem(results, "RESULTS", tmp_path / "RESULTS.md")  # in sys.modules: another test's may be there)
    monkeypatch.setitem(results, "DATA", tmp_path / "data" / "claims.jsonl")
    monkeypatch.setitem(results, "APPENDIX", tmp_path / "RESULTS_APPENDIX.md")
    monkeypatch.setattr(sys, "argv", ["trainer_at_scale.py", "--pending"])
    data = tmp_path / "data" / "claims.jsonl"
    script.main()
    rows = [json.loads(line) for line in data.read_text().splitlines()]
    assert len(rows) == len(script.CLAIMS)
    assert all(r["verdict"] == "PENDING" and r["id"].endswith("-gpu") for r in rows)
    # a measured full-mode row is never replaced by a pending one
    data.write_text(data.read_text().replace("pending (needs a GPU): full mode, model 10m", "measured 0.97", 1))
    script.main()
    assert data.read_text().count("measured 0.97") == 1
    assert "measured 0.97" in (tmp_path / "RESULTS_APPENDIX.md").read_text()


def test_curve_gap_matches_a_loop_and_detects_a_shift(script):
    """Loop over bins and seeds vs the vectorised z; same law gives |z| small, a shift of 10 s.e. is seen."""
    rng = np.random.default_rng(2)
    a, b = rng.normal(0.5, 0.1, (4, 40)), rng.normal(0.5, 0.1, (6, 40))
    z = script.curve_gap(a, b, 8)
    for i in range(5):
        ma = [a[s, 8 * i : 8 * i + 8].mean() for s in range(4)]
        mb = [b[s, 8 * i : 8 * i + 8].mean() for s in range(6)]
        se = math.sqrt(np.var(ma, ddof=1) / 4 + np.var(mb, ddof=1) / 6)
        assert z[i] == pytest.approx((np.mean(ma) - np.mean(mb)) / se, rel=1e-10)
    shifted = script.curve_gap(a + 10 * 0.1 / math.sqrt(8), a, 8)  # 10 s.e. of one seed's bin mean
    assert np.all(shifted > 5)


def test_zero_std_exact_holds_where_the_binomials_overflow_int64(script):
    """N G = 128, G = 16 (the full mode's batch): C(128, 16) ~ 1.1e19 exceeds int64; the share is
    still the exact quotient (checked with Fractions, to float64 rounding)."""
    from fractions import Fraction

    n, G = 128, 16
    for k in (0, 20, 64, 100, 128):
        exact = Fraction(math.comb(k, G) + math.comb(n - k, G), math.comb(n, G))
        assert script.zero_std_exact(np.array([k / n]), n, G)[0] == pytest.approx(float(exact), rel=1e-15, abs=0)


def test_the_aggregates_skip_what_a_diverged_run_did_not_log(script):
    """A seed that diverged logs nan after it (`one_run`): the means and the entropy fit read the finite values,
    against the same computed on the finite entries by hand; nothing finite gives nan, never an error."""
    H = np.linspace(0.2, 2.0, 40)
    seeds = np.stack([H, np.r_[H[:10], np.full(30, np.nan)]])
    assert np.allclose(script.finite_mean(seeds, axis=0), H)
    assert script.finite_mean([1.0, np.nan, 3.0]) == pytest.approx(2.0)
    assert math.isnan(script.finite_mean([np.nan, np.nan]))
    R = -0.05 * np.exp(H) + 1.1
    a, r2 = script.entropy_fit(np.r_[H, np.nan], np.r_[R, 0.0])
    assert a == pytest.approx(0.05, rel=1e-9) and r2 == pytest.approx(1.0, abs=1e-9)
    assert all(math.isnan(x) for x in script.entropy_fit(np.full(5, np.nan), np.zeros(5)))


def test_a_diverged_run_is_a_collapse_to_reward_0(script, monkeypatch):
    """`one_run` on a run that diverges at step 3 of 5: the two logged rows, then reward 0 and nan elsewhere."""
    from gspo_dynamics._errors import TrainingDiverged

    rows = [{"reward": 0.4, "entropy": 1.0, "frac_reward_zero_std": 0.2, "ratios/token_log_var": 0.0},
            {"reward": 0.5, "entropy": 0.9, "frac_reward_zero_std": 0.1, "ratios/token_log_var": 0.01}]

    def diverging(cfg, out):
        raise TrainingDiverged("step 3 of 5: the gradient norm is nan", rows)

    monkeypatch.setattr(script, "train", diverging)
    series = script.one_run(SimpleNamespace(steps=5))
    assert series["reward"] == [0.4, 0.5, 0.0, 0.0, 0.0]
    assert series["entropy"][:2] == [1.0, 0.9] and all(math.isnan(x) for x in series["entropy"][2:])
