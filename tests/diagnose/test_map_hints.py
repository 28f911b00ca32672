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


def test_a_reward_the_reader_picked_is_said_under_the_answer(tmp_path, capsys):
    """No column named as a reward (audit s38b R4: a supervised trainer's `train/acc_0` got a confident GRPO verdict,
    the pick said only in --json's warnings): the reward line says which column was read and the map that names
    another, and, with none of a GRPO run's own readings beside it, that the verdict holds only for an RL reward; a
    named or mapped reward gets no such line."""
    import json

    from gspo_dynamics.cli.main import main
    from gspo_dynamics.logs import read_log

    rng = np.random.default_rng(2)
    rows = [{"step": 20 * s, "train/acc_0": 0.5 + 0.3 * (1 - np.exp(-s / 8)) + 0.01 * rng.standard_normal(),
             "train/ploss_0": 1.0 / s, "loss": 1.0 / s} for s in range(1, N + 1)]
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert read_log(path).reward_guessed and not read_log(path, column_map={"reward": "train/acc_0"}).reward_guessed
    assert main(["diagnose", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    blank = out.index("")
    line = next(n for n in out[:blank] if n.startswith("reward     "))  # part of the answer, above the blank line
    assert line.startswith("reward     'train/acc_0' is read as the reward: no column is named as one (--map reward=")
    assert line.endswith("the verdict holds only if this is an RL run's reward")
    for extra in (["--map", "reward=train/acc_0"],):
        assert main(["diagnose", str(path), *extra]) == 0
        assert not any(n.startswith("reward     ") for n in capsys.readouterr().out.splitlines())
    with_kl = tmp_path / "with_kl.jsonl"  # a GRPO reading beside it: the pick is said, the doubt is not
    with_kl.write_text("".join(json.dumps({**r, "kl": 0.001 * i}) + "\n" for i, r in enumerate(rows)))
    assert main(["diagnose", str(with_kl)]) == 0
    line = next(n for n in capsys.readouterr().out.splitlines() if n.startswith("reward     "))
    assert line.endswith("(--map reward=COLUMN names another)")
    assert main(["diagnose", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["log"]["reward_guessed"] is True


def test_an_unread_zero_rate_column_is_offered_where_the_degeneracy_is_not_checked():
    """Audit s43u D6: ROLL's advantage/zero_rate (~0.71 on every row) is not read unmapped (a zero advantage need not be
    a zero-std group), and "not checked advantage degeneracy" did not name it: the --map that reads it is offered."""
    from gspo_dynamics.diagnose._diagnose import _map_hint

    why = "advantage degeneracy: the log has no zero-std fraction (frac_reward_zero_std, TRL >= 0.18)"
    assert _map_hint(why, ("actor/ratio_mean", "advantage/zero_rate")) == (
        " (the unread column 'advantage/zero_rate' may be it: --map frac_zero_std=advantage/zero_rate)")
    assert _map_hint(why, ("actor/ratio_mean", "critic/score/max")) == ""
