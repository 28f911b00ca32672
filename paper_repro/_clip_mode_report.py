"""Versions 13's and 14's changes judged (paper_repro/pilot_forecast.py's docstring), both on a loss whose clip caps a
detached weight and keeps the gradient (CISPO, `Hyperparams.clip_mode` "cap"). Version 13 left its displacement
uncapped at the clip's band edge; version 14 caps it there again where the run's success is absorbing
(`theory.collapse.band_edge`, equation (10)). Per combination of such a loss, the regime as each version reads it
(result["version 12"], result["version 13"]; the current one, 14, is result["predicted"]) on the same measured cells:
accuracy, cells safe but unstable, false alarms, and whether both regime targets are met (accuracy >= ACCURACY_MIN, at
most SAFE_BUT_UNSTABLE_MAX safe but unstable).

The report of one protocol's rounds (CLIP_ROLES, ABSORB_ROLES, `_pilot_protocol.ROUNDS`), not library code: it stays
beside pilot_forecast.py, which would pass the ~400-line mark with it inline.
"""

from __future__ import annotations

from _pilot_protocol import ABSORB_ROLES, CLIP_ROLES, ROUNDS

from gspo_dynamics.experiments import ACCURACY_MIN, SAFE_BUT_UNSTABLE_MAX

VERDICTS = {12: "version 12", 13: "version 13", 14: "predicted"}  # where a result keeps each version's verdict
CHANGES = {13: CLIP_ROLES, 14: ABSORB_ROLES}  # the version whose change each round of these judged


def regime(result: dict, verdicts: dict) -> tuple[float, int, bool]:
    """(accuracy, cells safe but unstable, both regime targets met) of `verdicts` ((lr, T) -> unstable?) against
    the measured cells of `result`."""
    measured = {cell: bool(m[0]) for cell, m in result["measured"].items()}
    right = sum(bool(verdicts[cell]) == unstable for cell, unstable in measured.items())
    missed = sum(unstable and not verdicts[cell] for cell, unstable in measured.items())
    accuracy = right / len(measured)
    return accuracy, missed, accuracy >= ACCURACY_MIN and missed <= SAFE_BUT_UNSTABLE_MAX


def tally(results: dict, names, version: int) -> dict:
    """{version: (combinations meeting both regime targets, safe but unstable, false alarms, cells right), version - 1:
    ...} over `names`, each version's verdict from VERDICTS."""
    out = {}
    for v in (version, version - 1):
        met = missed = alarms = right = 0
        for name in names:
            result, verdicts = results[name], results[name][VERDICTS[v]]
            _, m, both = regime(result, verdicts)
            met += both
            missed += m
            alarms += sum(bool(verdicts[c]) and not bool(u[0]) for c, u in result["measured"].items())
            right += sum(bool(verdicts[c]) == bool(u[0]) for c, u in result["measured"].items())
        out[v] = (met, missed, alarms, right)
    return out


def _names(results: dict, version: int, keep) -> list[str]:
    """The combinations of such a loss (a result with the earlier version's verdict) whose role passes `keep`."""
    return [n for n in results if VERDICTS[version - 1] in results[n] and keep(n)]


TARGETS = {13: lambda new, old: new[1] < old[1],  # each change's own part of its target (`_passed`): fewer cells
           14: lambda new, old: new[3] > old[3]}  # safe but unstable (13), more cells right (14)


def _passed(t: dict, version: int) -> bool:
    """Each change's pre-registered target: both regime targets on more combinations than the earlier version's
    verdict, and its own part (TARGETS)."""
    new, old = t[version], t[version - 1]
    return new[0] > old[0] and TARGETS[version](new, old)


def change_claim(results: dict, roles: dict, held_out: str) -> tuple[str, bool] | None:
    """(measured text, passed) of the change judged on round `held_out` (CHANGES) by its pre-registered target
    (`_passed`); None without that round's combinations of such a loss in `results`."""
    version = next(v for v, rounds in CHANGES.items() if held_out in rounds)
    names = _names(results, version, lambda n: roles[n] == held_out)
    if not names:
        return None
    t = tally(results, names, version)
    new, old = t[version], t[version - 1]
    rows = "; ".join(f"{n}: {regime(results[n], results[n][VERDICTS[version]])[0]:.0%} / "
                     f"{regime(results[n], results[n][VERDICTS[version - 1]])[0]:.0%}" for n in names)
    return (f"{held_out}, {len(names)} combinations: both regime targets on {new[0]} (version {version - 1}'s verdict: "
            f"{old[0]}), safe but unstable {new[1]} ({old[1]}), false alarms {new[2]} ({old[2]}), cells right {new[3]} "
            f"({old[3]}) of {sum(len(results[n]['measured']) for n in names)}; accuracy, version {version} / {version - 1}: {rows}", _passed(t, version))


def change_reach(results: dict, roles: dict, version: int) -> str:
    """The same tally over the earlier rounds' combinations of such a loss (in sample: the change was found on them)
    and over its held-out rounds; "" without one."""
    first = ROUNDS.index(CHANGES[version][0])
    parts = []
    for label, keep in (("in sample", lambda n: ROUNDS.index(roles[n]) < first),
                        ("held out", lambda n: roles[n] in CHANGES[version])):
        names = _names(results, version, keep)
        if names:
            t = tally(results, names, version)
            new, old = t[version], t[version - 1]
            parts.append(f"{label} ({len(names)} combinations): both regime targets on {new[0]} against {old[0]}, "
                         f"safe but unstable {new[1]} against {old[1]}, false alarms {new[2]} against {old[2]}, cells "
                         f"right {new[3]} against {old[3]}")
    what = {13: "a clip that keeps the gradient, CISPO's: its displacement uncapped at the band edge",
            14: "CISPO's displacement capped at the band edge again where the run's success is absorbing, "
                "theory.collapse (10)"}[version]
    return (f"Version {version}'s change ({what}), against version {version - 1}'s verdict on the same cells: "
            + "; ".join(parts) + " (`change_reach`)." if parts else "")
