"""Version 13's change judged (paper_repro/pilot_forecast.py's docstring): a loss whose clip caps a detached weight
and keeps the gradient (CISPO, `Hyperparams.clip_mode` "cap") has its displacement uncapped at the clip's band edge
(`theory.collapse.band_edge`). Per combination of such a loss, the regime as version 13 reads it (ours,
result["predicted"]) and as version 12 read it (the displacement capped, result["version 12"]), on the same
measured cells: accuracy, cells safe but unstable, and whether both regime targets are met (accuracy >=
ACCURACY_MIN, at most SAFE_BUT_UNSTABLE_MAX safe but unstable).
"""

from __future__ import annotations

from _pilot_protocol import CLIP_ROLES
from _pilot_scores import ACCURACY_MIN, SAFE_BUT_UNSTABLE_MAX
from _task_prior import ROUNDS


def regime(result: dict, verdicts: dict) -> tuple[float, int, bool]:
    """(accuracy, cells safe but unstable, both regime targets met) of `verdicts` ((lr, T) -> unstable?) against
    the measured cells of `result`."""
    measured = {cell: bool(m[0]) for cell, m in result["measured"].items()}
    right = sum(bool(verdicts[cell]) == unstable for cell, unstable in measured.items())
    missed = sum(unstable and not verdicts[cell] for cell, unstable in measured.items())
    accuracy = right / len(measured)
    return accuracy, missed, accuracy >= ACCURACY_MIN and missed <= SAFE_BUT_UNSTABLE_MAX


def tally(results: dict, names) -> dict:
    """{"13": (combinations meeting both regime targets, safe but unstable, false alarms), "12": ...} over `names`."""
    out = {}
    for label, key in (("13", "predicted"), ("12", "version 12")):
        met = missed = alarms = 0
        for name in names:
            result = results[name]
            _, m, both = regime(result, result[key])
            met += both
            missed += m
            alarms += sum(bool(result[key][c]) and not bool(v[0]) for c, v in result["measured"].items())
        out[label] = (met, missed, alarms)
    return out


def clip_mode_claim(results: dict, roles: dict, held_out: str) -> tuple[str, bool] | None:
    """(measured text, passed) of the change's pre-registered target on round `held_out`: both regime targets on more
    of its combinations than under version 12's verdict, and fewer cells safe but unstable; None without that round's
    combinations of such a loss in `results`."""
    names = [n for n in results if roles[n] == held_out and "version 12" in results[n]]
    if not names:
        return None
    t = tally(results, names)
    passed = t["13"][0] > t["12"][0] and t["13"][1] < t["12"][1]
    rows = "; ".join(f"{n}: {regime(results[n], results[n]['predicted'])[0]:.0%} / "
                     f"{regime(results[n], results[n]['version 12'])[0]:.0%}" for n in names)
    return (f"{held_out}, {len(names)} combinations: both regime targets on {t['13'][0]} (version 12's verdict: "
            f"{t['12'][0]}), safe but unstable {t['13'][1]} ({t['12'][1]}), false alarms {t['13'][2]} ({t['12'][2]}); "
            f"accuracy, version 13 / 12: {rows}", passed)


def clip_mode_reach(results: dict, roles: dict) -> str:
    """The same tally over the earlier rounds' combinations of such a loss (in sample: the change was found on
    them) and over CLIP_ROLES (held out); "" without one."""
    parts = []
    for label, keep in (("in sample", lambda role: ROUNDS.index(role) < ROUNDS.index(CLIP_ROLES[0])),
                        ("held out", lambda role: role in CLIP_ROLES)):
        names = [n for n in results if "version 12" in results[n] and keep(roles[n])]
        if names:
            t = tally(results, names)
            parts.append(f"{label} ({len(names)} combinations): both regime targets on {t['13'][0]} against {t['12'][0]}, "
                         f"safe but unstable {t['13'][1]} against {t['12'][1]}, false alarms {t['13'][2]} against {t['12'][2]}")
    return ("Version 13's change (a clip that keeps the gradient, CISPO's: its displacement uncapped at the band edge), "
            "against version 12's verdict on the same cells: " + "; ".join(parts) + " (`clip_mode_reach`)." if parts else "")
