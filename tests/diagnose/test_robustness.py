"""diagnose never raises on odd but readable logs (hypothesis): NaN, inf, huge and tiny values,
constant series, missing series. Its JSON stays strict (no NaN/inf)."""

import json
import warnings

import numpy as np
from _examples import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gspo_dynamics.diagnose import MODES, diagnose
from gspo_dynamics.logs import RunLog

values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.floats(min_value=-1e6, max_value=1e6),
    st.sampled_from([0.0, 1.0, 0.5]),
)
NAMES = ("frac_zero_std", "reward_std", "entropy", "mean_length", "truncation_rate", "kl_ref", "eval/reward",
         "reward/a", "reward/b")


@settings(max_examples=examples(5, 15), deadline=None, suppress_health_check=[HealthCheck.too_slow])  # ~0.7 s an example
@given(n=st.integers(8, 40), data=st.data(), extra=st.lists(st.sampled_from(NAMES), unique=True, max_size=4))
def test_diagnose_survives_odd_values(n, data, extra):
    series = {name: np.array(data.draw(st.lists(values, min_size=n, max_size=n))) for name in ("reward", *extra)}
    log = RunLog(steps=np.arange(1, n + 1, dtype=np.int64), series=series, format="jsonl", source="<hypothesis>")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy may warn on inf arithmetic; no exception allowed
        d = diagnose(log)
    assert d.primary in MODES + ("too_short",)
    json.dumps(d.to_json(), allow_nan=False)
    assert d.report_lines()


def test_a_spread_of_absurd_size_does_not_divide_by_zero():
    # found by hypothesis: a reward_std mean of ~1e143 made the detectable change / spread 0.0, and
    # log(MEANINGFUL_CHANGE / 0) raised; with resolution 0 any change would have shown
    reward = [-1 / 3, 2.00001, -1.4e-253, 0.0, 0.0, -227601.06, 0.0, 2.369e16, 480060.68, 2.6657e11, -1.5e-150,
              -6.0e-68, 2.2e-313, 1e-08, 0.0, 3.4e-106, 0.5]
    spread = [-1.1e-269, -5e-324, 1.0, 0.5, 8.68e79, 1e-09, 5.56e16, np.inf, -5e-324, -105789.7, -1.65e16, 0.0,
              -7.01e143, -2.5e16, -1.9, 491937.2, 1.0]
    log = RunLog(steps=np.arange(1, 18, dtype=np.int64), series={"reward": np.array(reward), "reward_std": np.array(spread)},
                 format="jsonl", source="<regression>")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        d = diagnose(log)
    assert d.primary in MODES
    json.dumps(d.to_json(), allow_nan=False)
