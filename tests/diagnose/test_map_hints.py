"""A check diagnose could not make for want of a series names the unread column that may hold it, and the --map that
reads it (`diagnose._diagnose._map_hint`)."""

from __future__ import annotations

import numpy as np

from gspo_dynamics.diagnose import diagnose
from gspo_dynamics.logs import RunLog

N = 80


def test_a_check_not_made_names_the_unread_column_that_may_hold_its_series():
    """No completion length read, but an unread 'mean_tokens' column: the not-checked line says which --map reads it."""
    log = RunLog(steps=np.arange(1, N + 1, dtype=np.int64), series={"reward": np.linspace(0.2, 0.6, N) + 0.02 * np.random.default_rng(1).standard_normal(N)},
                 format="csv", source="<synthetic>", trainer=None, unread=("informative_groups", "mean_tokens"))
    line = next(n for n in diagnose(log).not_checked if n.startswith("reward hacking"))
    assert line.endswith("(the unread column 'mean_tokens' may be it: --map mean_length=mean_tokens)")
