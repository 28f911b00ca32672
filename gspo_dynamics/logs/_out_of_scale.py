"""A reward value no reward function gives: a sentinel or an overflow written as a number (1e30 on a reward that
stays within [0, 1]). Read as data it becomes the run's story (a peak of 1e28, then a "fall"); it is read as what
it is, a value that is not a reading. A reward series' value x is out of scale where

    |x| > OUT_OF_SCALE * s,   s = max(|q_05|, |q_95|, q_95 - q_05)   over the series' finite values,

with q_05, q_95 its 5% and 95% quantiles (a scale that up to 5% of such values cannot move), given at least
MIN_VALUES finite values and s > 0 (a series of zeros with one 1 has no scale to be out of). Such a value is read as
the infinity of its sign and marked as logged non-finite (`RunLog.logged_non_finite`), so every command treats it as
it treats a logged inf, and a note names its steps and values. Only the reward series (`reward`, `reward/<fn>`): a
gradient norm or a KL that grows a million-fold is a reading of a diverging run, not a logging error.
"""

from __future__ import annotations

import dataclasses

import numpy as np

OUT_OF_SCALE = 1e6  # a million times the series' own scale: no reward function's range is that uneven (stated, fitted
# to no log)
MIN_VALUES = 20  # fewer finite values give no quantiles to measure a scale by
_LISTED = 3  # steps named in the note


def out_of_scale(values: np.ndarray) -> np.ndarray:
    """(n,) bool: the finite values of `values` (n,) beyond OUT_OF_SCALE times the series' scale (module
    docstring)."""
    finite = np.isfinite(values)
    if finite.sum() < MIN_VALUES:
        return np.zeros(values.shape, dtype=bool)
    lo, hi = np.quantile(values[finite], [0.05, 0.95])
    scale = max(abs(lo), abs(hi), hi - lo)
    if scale <= 0:
        return np.zeros(values.shape, dtype=bool)
    return finite & (np.abs(values) > OUT_OF_SCALE * scale)


def without_out_of_scale(built):
    """(built, warnings, set aside): `built` (`_rows.series_of`'s) with each reward series' out-of-scale values
    (`out_of_scale`) read as +-inf and marked logged non-finite, one warning per series that had any, and the values
    in a few words (`RunLog.set_aside`: the log's own line says them)."""
    series, logged, warnings, aside = dict(built.series), dict(built.logged), [], []
    for name, values in built.series.items():
        if not (name == "reward" or name.startswith("reward/")):
            continue
        far = out_of_scale(values)
        if not far.any():
            continue
        read = np.where(far, np.copysign(np.inf, values), values)
        mask = logged.get(name, np.zeros(values.shape, dtype=bool)) | far
        read.flags.writeable = mask.flags.writeable = False
        series[name], logged[name] = read, mask
        at = np.flatnonzero(far)
        listed = ", ".join(f"{values[i]:.3g} at step {int(built.steps[i])}" for i in at[:_LISTED])
        more = f" and {at.size - _LISTED} more" if at.size > _LISTED else ""
        warnings.append(f"{name} {listed}{more}: over {OUT_OF_SCALE:.0e} times the rest's scale, no reward function's "
                        "value but a logging error (a sentinel or an overflow): read as not a number")
        aside.append(f"{name} {values[at[0]]:.3g} at step {int(built.steps[at[0]])}"
                     + (f" and {at.size - 1} more" if at.size > 1 else "") + " read as not a number (out of scale)")
    if not warnings:
        return built, [], []
    return dataclasses.replace(built, series=series, logged=logged), warnings, aside
