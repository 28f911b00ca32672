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


def test_a_column_set_aside_as_a_placeholder_is_said_to_be_one_not_offered_to_map(tmp_path, capsys):
    """An entropy of exact zeros beside groups whose rewards differ is set aside (`logs._placeholders`): the check it
    would feed says the column holds only zeros, not "--map entropy=entropy" (mapped, it is set aside again: audit s37's
    advice that looped)."""
    import json

    from gspo_dynamics.cli.main import main

    rng = np.random.default_rng(0)
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps({"step": s, "reward": 0.3 + 0.002 * s + 0.02 * rng.standard_normal(),
                                        "frac_reward_zero_std": 0.3, "entropy": 0.0}) + "\n" for s in range(1, N + 1)))
    from gspo_dynamics.logs import read_log

    log = read_log(path)
    assert log.placeholders == ("entropy",) and "entropy" in log.unread and "entropy" not in log.series
    for extra in ([], ["--map", "entropy=entropy"]):
        assert main(["diagnose", str(path), "--explain", *extra]) == 0
        out = capsys.readouterr().out
        line = next(n for n in out.splitlines() if n.startswith("not checked  policy concentration"))
        assert line.endswith("(its column 'entropy' holds only zeros: a placeholder the trainer wrote, nothing measured)")
        assert "--map entropy=entropy)" not in out
