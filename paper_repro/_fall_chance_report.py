"""The forecast's fall chance judged on pilot_forecast.py's rounds (paper_repro/pilot_forecast.py;
`predict._fall_chance`): the protocol's rounds (`_pilot_protocol.ROUNDS`) and roles read into cells, each round's
margins as the version that judged it read them (`judged_by`), and the rows and paragraph the script records. The
scoring itself (rolling origin, the per-run Brier score (1), the baselines, reliability) is
`gspo_dynamics.experiments._fall_chance_score`; what stays here reads this protocol's rounds, so it stays beside it.
"""

from __future__ import annotations


import numpy as np
from _pilot_protocol import ABSORB_ROLES, CLIP_ROLES, COMBINATIONS, ROUNDS, VERSION_11_CHANCE

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.experiments import brier_score, fall_chance_baselines, reliability, rolling_origin
from gspo_dynamics.predict import FALL_CHANCE, fall_chance, fit_fall_chance

CALIBRATION_TOL = 0.05  # version 11: the held-out round's mean chance within this of the share of its seeds that fell


def judged_by(role: str) -> int:
    """The protocol version whose margins judged round `role`'s fall chance: 12 (versions 11 and 12 alike) before
    CLIP_ROLES, 13 before ABSORB_ROLES, else 14 (the current)."""
    rank = ROUNDS.index(role)
    return 12 if rank < ROUNDS.index(CLIP_ROLES[0]) else 13 if rank < ROUNDS.index(ABSORB_ROLES[0]) else 14


def _cells(results: dict, roles: dict, version: int = 14) -> list[tuple]:
    """(round index, task, lr factor, T, margin, falls, seeds) per cell of every result with margins, each margin as
    protocol `version` read it: a CISPO row keeps version 12's ("margin v12", its displacement capped) and version
    13's ("margin v13", uncapped), the others one margin for all."""
    key = {12: "margin v12", 13: "margin v13", 14: "margin"}[version]
    out = []
    for name, result in results.items():
        if result.get("margin") is None:
            continue
        margin = result.get(key) or result["margin"]
        lr_pilot = result["forecast"].config.setup.hparams.lr
        seeds = next(iter(result["curves"].values()))["reward"].shape[0]
        for (lr, T), m in result["measured"].items():
            out.append((ROUNDS.index(roles[name]), result["task"], round(lr / lr_pilot, 6), T, margin[(lr, T)], m[4], seeds))
    return out


def round_complete(names, held_out: str) -> bool:
    """Whether `names` hold every combination of round `held_out` and of the rounds before it (COMBINATIONS): a
    claim row scored on fewer would record a subset's score under the round's name."""
    rank = ROUNDS.index(held_out)
    return all(name in names for name, c in COMBINATIONS.items() if ROUNDS.index(c[4]) <= rank)


def fall_chance_claim(results: dict, roles: dict, held_out: str) -> tuple[str, bool] | None:
    """Version 11's held-out judgement of the chance (pilot_forecast.py's docstring): on the seeds of round
    `held_out`, the per-run Brier score (1) of VERSION_11_CHANCE (the (a, b) frozen before the round ran) against the
    baselines from every earlier round's cells, and its seed-weighted mean chance against the share that fell.
    (measured text, passed: below both and within CALIBRATION_TOL); None without that round or an earlier one. A
    round is scored on the margins of the version that judged it (`judged_by`)."""
    rank = ROUNDS.index(held_out)
    cells = _cells(results, roles, judged_by(held_out))
    train, test = [c for c in cells if c[0] < rank], [c for c in cells if c[0] == rank]
    if not train or not test:
        return None
    k, n = np.array([c[5] for c in test], dtype=float), np.array([c[6] for c in test], dtype=float)
    p = fall_chance([c[4] for c in test], VERSION_11_CHANCE)
    rate, lookup = fall_chance_baselines(train, test)
    model, by_rate, by_lookup = brier_score(p, k, n), brier_score(rate, k, n), brier_score(lookup, k, n)
    mean, share = float(np.average(p, weights=n)), float(k.sum() / n.sum())
    table = ", ".join(f"{lo:.1f}-{lo + 0.1:.1f}: {q:.2f} / {f:.2f} ({runs})" for lo, q, f, runs in reliability(p, k, n))
    passed = model < min(by_rate, by_lookup) and abs(mean - share) <= CALIBRATION_TOL
    return (f"{held_out}, {int(n.sum())} seeds of {len(test)} cells: per-run Brier score {model:.4f} (a, b = "
            f"{VERSION_11_CHANCE[0]:g}, {VERSION_11_CHANCE[1]:g}), the earlier rounds' fall rate {by_rate:.4f}, the lookup of the "
            f"task's earlier grids {by_lookup:.4f}; mean chance {mean:.3f} against {share:.3f} of the seeds fallen "
            f"(tolerance {CALIBRATION_TOL}); by tenth of the chance, forecast / fallen (seeds): {table}"), passed


def fall_chance_reach(results: dict, roles: dict) -> str:
    """The paragraph of RESULTS.md: rolling-origin Brier scores, reliability, and the fit on every round against the
    shipped FALL_CHANCE; "" where the results hold fewer than two rounds."""
    cells = _cells(results, roles)
    rows = rolling_origin(cells)
    if rows is None or not len(rows):
        return ""
    k, n = rows["k"], rows["n"]
    scores = {key: brier_score(rows[key], k, n) for key in ("model", "rate", "lookup")}
    table = ", ".join(f"{lo:.1f}-{lo + 0.1:.1f}: {p:.2f} / {q:.2f} ({runs})" for lo, p, q, runs in reliability(rows["model"], k, n))
    try:
        a, b = fit_fall_chance([c[4] for c in cells], [c[5] for c in cells], [c[6] for c in cells])
        refit = f" Fitted on all {len(cells)} cells: a = {a:.4f}, b = {b:.4f} (shipped: {FALL_CHANCE[0]:.4f}, {FALL_CHANCE[1]:.4f})."
    except ConfigError:
        refit = ""
    return (f"The chance a run falls (`predict._fall_chance`, `predict`'s fall chance: P = 1 / (1 + exp(-(a + b m))), m the "
            f"log of the largest ratio of a rule to its threshold), by rolling origin (the {int(n.sum())} seeds "
            f"of {len(k)} cells of the rounds after the first, each round's from (a, b) fitted on the rounds before it): per-run Brier score "
            f"{scores['model']:.4f}, against {scores['rate']:.4f} for the earlier rounds' fall rate and "
            f"{scores['lookup']:.4f} for a lookup of the task's earlier grids at the cell's lr factor and T. Forecast "
            f"chance / share of seeds that fell (seeds), by tenth of the chance: {table}.{refit} Only (a, b) is refitted "
            "round by round: the margin's parts (S, equations (8), (9)) were set on some of these rounds, so this is "
            "partly in sample; the held-out judgements are the rows pilot-forecast-fall-chance-<round>.")
