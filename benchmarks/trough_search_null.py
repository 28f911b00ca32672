"""The trough search's false-alarm rate on white noise: the measurement behind `diagnose._fall.TROUGH_SEARCH`.

`_fall._trough` picks the deepest drawdown among every (peak, trough) window pair and tests the rows it chose with
the CUSUM bridge (`_changepoint.change_point`); the bridge's p on rows chosen for their drawdown is too small. Here,
for white-noise logs of each length, the share whose search p (the gate left open: ALPHA = 1, TROUGH_SEARCH = 1)
falls below each level; TROUGH_SEARCH reads p x 10 so that p_search < ALPHA fires on about ALPHA of them.

    python benchmarks/trough_search_null.py [--reps 10000] [--seed 1]     # ~1 min per 10000 reps on one core
"""

from __future__ import annotations

import argparse

import numpy as np

from gspo_dynamics.diagnose import _changepoint, _fall

LENGTHS = (31, 50, 100, 200, 400, 1000)
LEVELS = (0.01, 0.005, 0.002, 0.001, 0.0005, 0.0002)


def search_p(rng: np.random.Generator, n: int) -> float:
    """The search's uncorrected p on one white-noise log of n rows (1 where it finds no drawdown past Z_TREND)."""
    r, s = rng.normal(size=n), np.arange(1, n + 1)
    w = max(_fall.MIN_WINDOW, round(_fall.WINDOW_FRACTION * n))
    t = _fall._trough(s, r, {"early": float(np.mean(r[:w]))})
    return t["break_p_value"] if t is not None else 1.0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    saved = _changepoint.ALPHA, _fall.TROUGH_SEARCH
    _changepoint.ALPHA, _fall.TROUGH_SEARCH = 1.0, 1  # every drawdown past Z_TREND returned, its p as the bridge's
    try:
        for n in LENGTHS:
            ps = np.array([search_p(rng, n) for _ in range(args.reps)])
            print(n, " ".join(f"P(p<{a:g})={np.mean(ps < a):.4f}" for a in LEVELS), flush=True)
    finally:
        _changepoint.ALPHA, _fall.TROUGH_SEARCH = saved


if __name__ == "__main__":
    main()
