"""The instability's falls of the reward (`_instability.instability_verdict` reads them): a collapse after a real peak
(`_collapse`), a sustained drop below the peak (`_trough`) or a dip of a few rows (`_dip.short_dip`), and a fall from
the start. Each names the step the reward's level broke at (`_changepoint`), and a fall the run did not climb back from
advises going back to a checkpoint before it (`fall_advice`).

The collapse, the trough and the dip read one fall at different windows. The collapse compares the peak window with
the late window's mean (a quarter of the rows), which a fall inside that window (one in the last 15% of the log) or
one still going on (a slow sag) counts only in part: 0.2 -> 0.7 over the first 85%, then 0.7 -> 0.3, has a late mean
of 0.58 and reads as a drop of 0.32 of the rise, at the threshold, though the reward ends at its start. The trough and
the dip find the deepest drawdown at every width down to MIN_WINDOW rows; the most confident reading is the one
reported (the data's items see one fall: their max counts, as the oscillation items').

The linear theory of the refresh interval bounds ringing, not a fall: a collapse is the nonlinear regime it does not
model (docs/theory.md), so a stable T caps the oscillation items only (`_instability._theory_line`), never these.
"""

from __future__ import annotations

import math

import numpy as np

from gspo_dynamics._keys import CLIP_HIGH_KEYS, LR_KEYS
from gspo_dynamics.diagnose._changepoint import ALPHA, change_point
from gspo_dynamics.diagnose._dip import short_dip
from gspo_dynamics.diagnose._trend_advice import MEANINGFUL_CHANGE
from gspo_dynamics.diagnose._trend_stats import MIN_WINDOW, WINDOW_FRACTION, Z_TREND, mean_se, window
from gspo_dynamics.diagnose._verdict import confidence, evidence

COLLAPSE_FRACTION = 0.3  # late mean below the peak by 30% of the rise (peak - early): a collapse
AT_PEAK_Z = 1.0  # a window within one standard error of the peak window's mean is still at the peak (`_last_at_peak`)
CLIFF_SHARE = 0.5  # a fall is a cliff at its break where most of it (at least half) happens across MIN_WINDOW rows
# either side of the break, and a hinge's knee is the fall's start where its fitted fall holds at least half of it
# (`_last_at_peak`): stated, fitted to no run
TROUGH_SEARCH = 10  # the CUSUM p of the rows `_trough`'s search chose is ~10x too small: on 20000 white-noise logs
# each of 31, 50, 100, 200, 400 and 1000 rows, the search's p falls below 0.001 on 0.7-1.5% of them (below 0.01 on
# 3.6-4.7%), so p < ALPHA / 10 is a false alarm at about ALPHA (tests/diagnose/test_trough.py simulates 2000
# logs of 100 rows; benchmarks/trough_search_null.py measures the rates)


def fall_evidence(steps, reward, trend: dict, spread: float | None) -> tuple[list, list, dict | None]:
    """The data's fall items and their confidences: the most confident of a collapse after a real peak (`_collapse`)
    and a fall below the peak (`_trough`, or a dip of a few rows, `_dip.short_dip`), and a fall from the start (the
    late mean below the early one by Z_TREND standard errors and by COLLAPSE_FRACTION of |early|).
    Returns (items, confidences, the reported fall where the run did not climb back from it, else None)."""
    keep = np.isfinite(reward)
    s, r = steps[keep].astype(float), reward[keep]
    ev, confs, fell = [], [], None
    reading = _fall_reading(s, r, trend, spread)
    if reading is not None:
        item, conf, fell = reading
        ev.append(item)
        confs.append(conf)
    if trend and trend["z"] <= -Z_TREND and -trend["diff"] > COLLAPSE_FRACTION * abs(trend["early"]):
        ev.append(evidence("reward fell from the start (Welch z, late - early)", trend["z"], trend["steps"],
                           threshold=-Z_TREND, side="<=", early=trend["early"], late=trend["late"]))
        confs.append(confidence(-trend["z"] - Z_TREND, 1.0))
    return ev, confs, fell


def fall_advice(fell: dict, hparams, rows: bool = False) -> str:
    """What to do about a fall the run did not climb back from: go back to a checkpoint from before it (by the step
    `_last_at_peak` names: the latest window still at the peak's level), with a lower learning rate (halved, where it
    is known) and, where the upper ratio clip is wider than the lower (clip-higher), that clip back to the lower one's
    width; a cliff after a held plateau first names what else changes a reward at once (the reward, a tool, the
    data). `rows`: the log's steps are its rows' numbers (it prints none): the checkpoint is named by its row, which
    is a step only times the logging interval."""
    lr = "" if hparams is None else f"; now {hparams.lr:g}, e.g. {hparams.lr / 2:g}"
    clip = ""
    if hparams is not None and hparams.clip_high > hparams.clip_low:
        clip = f", or the upper clip back to {hparams.clip_low:g} ({CLIP_HIGH_KEYS}; now {hparams.clip_high:g})"
    first, last = fell["end_steps"]
    fall = (f"the reward fell from its peak {fell['peak']:.3g} to {fell['end']:.3g} (the mean of steps {first:.0f}-"
            f"{last:.0f})")
    by = (f"its logged row {fell['step']:.0f} (the log prints no step numbers: the row's step is {fell['step']:.0f} "
          "x the logging interval)") if rows else f"step {fell['step']:.0f}"
    resume = (f"resume from a checkpoint saved by {by}, at its peak before the fall, with a lower "
              f"learning rate ({LR_KEYS}{lr}){clip}")
    if fell.get("cliff"):  # most of it at once, after a held plateau: an update's doing or not, the log cannot tell
        return (f"{fall}, most of it at once after step {fell['cliff']:.0f}, and did not climb back: a fall that "
                "sudden may come from outside the policy (the reward function, a tool or environment, the data), "
                "which the log cannot tell from an update, so check what changed there first; if nothing did, "
                f"{resume}")
    return f"{fall} and did not climb back: {resume}"


def _fall_reading(s, r, trend: dict, spread: float | None) -> tuple[dict, float, dict | None] | None:
    """The fall after a peak as (item, confidence, fall): of the readings of a fall the run did not climb back from (a
    collapse, a trough or a dip that ends low), the most confident; where there is none, a collapse, else the trough,
    else a dip (`_trough` first: a dip of a few rows is the reading of what its window averages away)."""
    collapse = _collapse_reading(s, r, trend, spread)
    trough_dict = _trough(s, r, trend, spread)
    dip_dict = short_dip(s, r, trend, spread)
    trough, dip = _trough_reading(s, r, trough_dict), _trough_reading(s, r, dip_dict)
    ended_low = [x for x in (collapse, trough, dip) if x is not None and x[2] is not None]
    if ended_low:
        return max(ended_low, key=lambda x: x[1])
    return collapse or (trough if trough_dict is not None else dip)


def _collapse_reading(s, r, trend: dict, spread: float | None) -> tuple[dict, float, dict] | None:
    """`_collapse` as (item, confidence, fall): the drop's size against COLLAPSE_FRACTION and how far the rise and the
    drop stand out of the noise, the weaker limiting; the step the level broke at from the peak on."""
    c = _collapse(s, r, trend, spread)
    if c is None or not c["drop"] > COLLAPSE_FRACTION:
        return None
    held, cliff = _last_at_peak(s, r, c["peak_step"], c["window_rows"], c["end_first_step"], trend["late"],
                                c["broke_at_step"] if math.isfinite(c["break_p_value"]) else None)  # NaN: no break
    item = evidence("late drop below the peak / rise to the peak", c["drop"], (s[0], s[-1]), threshold=COLLAPSE_FRACTION,
                    side=">", peak=c["peak"], late=trend["late"], weakest_z=c["z"], last_at_peak=held, **_break(c))
    conf = min(confidence(c["drop"] - COLLAPSE_FRACTION, 0.1), confidence(c["z"] - Z_TREND, 1.0))
    return item, conf, {"peak": c["peak"], "end": trend["late"], "end_steps": trend["late_steps"], "step": held,
                        "cliff": cliff}


def _trough_reading(s, r, trough: dict | None) -> tuple[dict, float, dict | None] | None:
    """A drawdown (`_trough`'s or `_dip.short_dip`'s dict) as (item, confidence, fall): the fall is None where the run
    climbed back, the rows after the trough standing above it by Z_TREND of their standard error (a trough that ends
    the log has none after it, whatever the late window's mean)."""
    if trough is None or not trough["drop"] > COLLAPSE_FRACTION:
        return None
    late = window(r, True)
    after = r[late][s[late] > trough["trough_step"]]
    back = after.size >= MIN_WINDOW and float(np.mean(after)) - trough["trough"] > Z_TREND * mean_se(after)[1]
    then = "then a recovery" if back else "not climbed back"
    held, cliff = _last_at_peak(s, r, trough["peak_step"], trough.get("window_rows", _width(r)),
                                trough["trough_first_step"], trough["trough"], trough["broke_at_step"])  # significant
    item = evidence(f"sustained drop below the peak, {then} / rise to the peak", trough["drop"],
                    (trough["peak_step"], trough["trough_step"]), threshold=COLLAPSE_FRACTION, side=">",
                    peak=trough["peak"], trough=trough["trough"], weakest_z=trough["z"],
                    **({} if back else {"last_at_peak": held}),  # a fall not climbed back: the step to resume from
                    broke_at_step=trough["broke_at_step"], break_p_value=trough["break_p_value"])
    conf = min(confidence(trough["drop"] - COLLAPSE_FRACTION, 0.1), confidence(trough["z"] - Z_TREND, 1.0),
               confidence(-math.log10(max(trough["break_p_value"], 1e-300)) - 2.0, 1.0))
    fell = None if back else {"peak": trough["peak"], "end": trough["trough"],
                              "end_steps": (trough["trough_first_step"], trough["trough_step"]), "step": held,
                              "cliff": cliff}
    return item, conf, fell


def _width(r: np.ndarray) -> int:
    """The running mean's window of `_collapse` and `_trough`: WINDOW_FRACTION of the rows, at least MIN_WINDOW."""
    return max(MIN_WINDOW, int(round(WINDOW_FRACTION * r.size)))


def _last_at_peak(s, r, peak_step: float, k: int, low_step: float, low: float,
                  broke_at: float | None = None) -> tuple[float, float | None]:
    """The step to go back to before a fall, and the break step where the fall is a cliff there (else None). `low`:
    the level the fall ended at; `broke_at`: the step the level broke at, significantly and downward (a trough's or a
    dip's, or a collapse's where `change_point` found one: its last step before the break), else None.

    The step: the knee of a hinge fitted from the peak window's first row to MIN_WINDOW rows past where the fall is
    half done (a MIN_WINDOW-row mean below (peak + low) / 2; else to the low window's first row, `low_step`),
    `_fall_start`: the last row at the level before it falls, whatever the fall's width. Where no knee holds at least
    CLIFF_SHARE of the fall (a fall that starts after the rows fitted), a cliff's break step; else the middle step of
    the latest k-row window, from the peak window's on and ending before the low window starts, whose mean is within
    AT_PEAK_Z standard errors (the peak window's) of the peak window's mean.

    A cliff: the MIN_WINDOW rows after the break stand below the MIN_WINDOW before it by at least CLIFF_SHARE of the
    whole fall (peak - low), and the k rows ending at the break (from the peak window's start on) are not below the
    peak window's mean by Z_TREND standard errors of the difference (the peak window is the highest of many, so its
    mean stands above the plateau's by about one of them): the reward held its peak up to it. A break inside a
    gradual fall is no cliff."""
    i = int(np.searchsorted(s, peak_step))
    run = np.convolve(r, np.ones(k) / k, mode="valid")  # (n - k + 1,) run[j] averages r[j:j + k]
    peak, se = float(run[i]), mean_se(r[i:i + k])[1]  # the peak window's mean as the windows below compute it
    cliff = False
    if broke_at is not None:
        j = int(np.searchsorted(s, broke_at, side="right"))  # rows before the break: r[:j]
        step_down = float(np.mean(r[max(i, j - MIN_WINDOW):j]) - np.mean(r[j:j + MIN_WINDOW])) if j < r.size else 0.0
        held, held_se = mean_se(r[max(i, j - k):j])
        cliff = step_down >= CLIFF_SHARE * (peak - low) and peak - held <= Z_TREND * math.hypot(se, held_se)
    end = int(np.searchsorted(s, low_step))  # the low window's first row
    # rows up to MIN_WINDOW past where the fall is half done (a MIN_WINDOW-row mean below the middle of peak and low):
    # the fall's first half, without the low level after it, which a hinge's one slope would reach back to meet
    trail = np.convolve(r, np.ones(MIN_WINDOW) / MIN_WINDOW, mode="valid")  # trail[j] averages r[j:j + MIN_WINDOW]
    half = np.flatnonzero(trail[i:] < (peak + low) / 2)
    stop = i + int(half[0]) + 2 * MIN_WINDOW - 1 if half.size else end
    knee = _fall_start(r, i, min(stop, r.size - 1), CLIFF_SHARE * (peak - low))
    at_cliff = float(broke_at) if cliff else None
    if knee is not None:
        return float(s[knee]), at_cliff
    if cliff:
        return float(broke_at), at_cliff
    level = peak - AT_PEAK_Z * (se if math.isfinite(se) else 0.0)
    at = [j for j in range(i, max(end - k + 1, i + 1)) if run[j] >= level]  # windows end before the low window
    return float(s[at[-1] + (k - 1) // 2]), None


def _fall_start(r: np.ndarray, i: int, stop: int, least: float) -> int | None:
    """The row the level starts to fall at, between rows i and `stop`: the knee tau of the continuous hinge

        r_j = c - b max(0, j - tau),   b > 0,

    fitted by least squares over the rows i .. stop (every tau from MIN_WINDOW rows in to MIN_WINDOW before the end;
    `hinge_fits`), kept where the fall it fits within those rows, b (stop - tau), is at least `least`; None where
    fewer than 3 MIN_WINDOW rows lie between, or no knee gives such a fall."""
    y = r[i:stop + 1]
    n = y.size
    if n < 3 * MIN_WINDOW or not np.isfinite(y).all():
        return None
    slope, sse = hinge_fits(y)
    taus = np.arange(n)
    falls = -slope * (n - 1 - taus)
    sse = np.where((slope < 0) & (taus >= MIN_WINDOW) & (taus < n - MIN_WINDOW), sse, np.inf)  # a knee starts a fall
    if not np.isfinite(sse).any():
        return None
    tau = int(np.argmin(sse))
    return i + tau if falls[tau] >= least else None


def hinge_fits(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(slope, residual sum of squares) of the least-squares line of y_j on x_j = max(0, j - tau), for every knee tau =
    0 .. n - 1, in O(n): with M = n - 1 - tau, sum x = M (M + 1) / 2, sum x^2 = M (M + 1) (2M + 1) / 6 and
    sum x y = S1(tau + 1) - tau S0(tau + 1), S0(k) = sum_{j >= k} y_j, S1(k) = sum_{j >= k} j y_j; centred,
    Sxx = sum x^2 - (sum x)^2 / n, Sxy = sum x y - sum x * mean(y), slope = Sxy / Sxx, SSE = Syy - Sxy^2 / Sxx
    (slope 0 and SSE = Syy where Sxx = 0: the last knee)."""
    n = y.size
    j = np.arange(n, dtype=float)
    s0 = np.concatenate((np.cumsum(y[::-1])[::-1], [0.0]))  # s0[k] = sum_{j >= k} y_j
    s1 = np.concatenate((np.cumsum((j * y)[::-1])[::-1], [0.0]))
    tau = np.arange(n, dtype=float)
    m = n - 1 - tau
    sx, sxx = m * (m + 1) / 2, m * (m + 1) * (2 * m + 1) / 6
    sxy = s1[1:] - tau * s0[1:]
    cxx, cxy = sxx - sx * sx / n, sxy - sx * float(np.mean(y))
    syy = float(np.sum((y - np.mean(y)) ** 2))
    slope = np.divide(cxy, cxx, out=np.zeros(n), where=cxx > 0)
    return slope, syy - slope * cxy


def _break(c: dict) -> dict:
    """The collapse's break step and, where the CUSUM test found the break, its p-value, as evidence fields."""
    p = c["break_p_value"]
    return {"broke_at_step": c["broke_at_step"], **({"break_p_value": p} if math.isfinite(p) else {})}


def _collapse(s: np.ndarray, r: np.ndarray, trend: dict, spread: float | None = None) -> dict | None:
    """Peak of the running mean (window = the late window's length), the late drop relative to the rise
    ("drop"), and the smaller of rise / se(early) and drop / se(late) ("z": how far both stand out of the noise);
    None where there is no significant rise or no significant drop.

    The rise to the peak must be significant (Z_TREND standard errors of the early mean) and, with the
    per-sample reward spread known, meaningful (MEANINGFUL_CHANGE x spread, as for a stall): a flat run
    logged with tiny noise has significant but negligible wiggles, which are not a rise and a collapse.
    The step named is where the rows from the peak window on break (`change_point`, CUSUM) where that break is
    significant and downward, else the peak window's last step (the reward was last at its peak there)."""
    w = max(MIN_WINDOW, int(round(WINDOW_FRACTION * r.size)))
    if r.size < 2 * w:
        return None
    a = float(np.max(np.abs(r))) or 1.0  # scaled: a cumulative sum of huge rewards would overflow
    c = np.concatenate(([0.0], np.cumsum(r / a)))
    run = a * (c[w:] - c[:-w]) / w  # running mean over w rows, O(n)
    i_peak = int(np.argmax(run))
    peak = float(run[i_peak])
    rise = peak - trend["early"]
    # a collapse needs a real rise first: a peak within Z_TREND standard errors of the early mean is
    # noise, and dividing the drop by such a rise would make any small drop look like a collapse
    _, se_e = mean_se(r[:w])
    if not rise > Z_TREND * max(se_e, 1e-12) or (spread is not None and not rise > MEANINGFUL_CHANGE * spread):
        return None
    # only a peak that is significant against the late window's noise counts
    _, se_l = mean_se(r[-w:])
    drop = peak - trend["late"]
    if not drop > Z_TREND * max(se_l, 1e-12):
        return None
    cp = change_point(s[i_peak:], r[i_peak:])
    broke = cp is not None and cp.significant and cp.after < cp.before
    return {"peak": peak, "drop": drop / rise, "z": min(rise / max(se_e, 1e-12), drop / max(se_l, 1e-12)),
            "peak_step": int(s[i_peak]), "window_rows": w, "end_first_step": int(s[-w]),
            "broke_at_step": int(cp.step if broke else s[i_peak + w - 1]),
            "break_p_value": cp.p_value if broke else math.nan}


def _trough(s: np.ndarray, r: np.ndarray, trend: dict, spread: float | None = None) -> dict | None:
    """A fall after a peak that the run may have climbed back from (the late mean recovered, so `_collapse` sees none):
    the deepest drawdown of the running mean (window w, as `_collapse`; the trough window after the peak's), its drop
    below the peak relative to the peak's height over the lower of the early mean and the trough, and how far the drop
    stands out of the noise (z against the peak and trough windows' standard errors, at least Z_TREND; with the
    per-sample spread known, at least MEANINGFUL_CHANGE of it).
    The fall must also be a level break of the rows from the peak window's start to the trough's end (`change_point`,
    CUSUM with its Brownian-bridge null), which names the step it broke at. Those rows are the ones the search chose
    for their drawdown, so the bridge's p is read times TROUGH_SEARCH (p_search = min(1, TROUGH_SEARCH p)) and the
    break counts at p_search < ALPHA."""
    w = max(MIN_WINDOW, int(round(WINDOW_FRACTION * r.size)))
    if r.size < 3 * w:
        return None
    a = float(np.max(np.abs(r))) or 1.0
    c = np.concatenate(([0.0], np.cumsum(r / a)))
    run = a * (c[w:] - c[:-w]) / w  # (n - w + 1,) running mean; run[i] averages r[i:i + w]
    if run.size <= w:
        return None
    # the deepest drawdown: for each trough window j, the highest window ending before it starts (j - w)
    best_before = np.maximum.accumulate(run[:-w])  # (n - 2w + 1,): best_before[j - w] = max run[:j - w + 1]
    i_trough = w + int(np.argmax(best_before - run[w:]))
    i_peak = int(np.argmax(run[:i_trough - w + 1]))
    peak, trough = float(run[i_peak]), float(run[i_trough])
    _, se_t = mean_se(r[i_trough:i_trough + w])
    _, se_p = mean_se(r[i_peak:i_peak + w])
    drop, level = peak - trough, peak - min(trend["early"], trough)
    se = max(math.hypot(se_t, se_p), 1e-12)
    if not level > 0 or not drop > Z_TREND * se or (spread is not None and not drop > MEANINGFUL_CHANGE * spread):
        return None
    cp = change_point(s[i_peak:i_trough + w], r[i_peak:i_trough + w])
    p_search = 1.0 if cp is None else min(1.0, TROUGH_SEARCH * cp.p_value)
    if cp is None or not p_search < ALPHA or not cp.after < cp.before:
        return None
    return {"peak": peak, "trough": trough, "drop": drop / level, "peak_step": int(s[i_peak]),
            "trough_first_step": int(s[i_trough]), "trough_step": int(s[min(i_trough + w, s.size) - 1]), "z": drop / se,
            "broke_at_step": cp.step, "break_p_value": p_search}
