"""The text paper_repro/pilot_forecast.py writes: each row's measured column (`describe`), each combination's
confusion matrix and cell map (`cell_map`), and the section of paper_repro/RESULTS.md that holds them
(`write_section`). Report formatting for that one script, kept apart because the script (over 500 lines)
would pass the ~400-line mark with it inline."""

from __future__ import annotations

import collections

import numpy as np
from _pilot_protocol import COMBINATIONS, SECTION
from _results import replace_section

from gspo_dynamics.experiments import FORECASTERS, PILOT_T, PLATEAU_STEPS, misses


def number(x: float | None) -> str:
    return "not measured" if x is None else f"{x:.3g}"


def held_text(fc) -> str:
    """", held success rate p_h (p_h^G ...)" of the pilot's last rewards, and under CISPO's clip whether version 14 capped
    the displacement (`theory.collapse` (10)); "" without the pilot's rewards."""
    if fc.held is None:
        return ""
    hp = fc.config.setup.hparams
    text = f", held success rate {number(fc.held)} (p_h^G {number(min(max(fc.held, 0.0), 1.0) ** hp.group_size)})"
    if hp.clip_mode == "cap" and hp.correction != "none":
        text += ", D " + ("capped at the band edge" if fc.band_edge is not None else "uncapped")
    return text


def describe(result: dict) -> str:
    parts = []
    for who in FORECASTERS:
        r = result[who]
        parts.append(f"{who}: accuracy {r['accuracy']:.0%}, safe-but-unstable {r['safe_but_unstable']}, "
                     f"max stable T (pred/meas) " + " ".join(f"{p}/{m}" for p, m in r["max_t"]))
    unstable = sum(m[0] for m in result["measured"].values())
    timing = result["time_error"]
    timing = (f"time-to-plateau error (median) {timing[0]:.3g} steps on {timing[1]} cells" if timing
              else "time to plateau: no stable cell with a timed rise (or a dump without times)")
    fc = result["forecast"]
    start = f"{fc.pilot[1][:PILOT_T].mean():.2f}" if fc.pilot is not None else "unknown"
    version = ("12: shrunk toward the cell's objective and step; version 10's prior "
               f"{result['v10_plateau_error']:.3f}" if "v10_plateau_error" in result else "10")
    plateau = f"{result['plateau_error']:.3f}" + (
        f" (the task's prior from earlier rounds, version {version}, the pilot's curve at {result['prior_fallbacks']} stable "
        f"cells with no earlier stable cell at their T; the pilot's curve alone: {result['pilot_plateau_error']:.3f})"
        if "pilot_plateau_error" in result else "")
    return (f"{'; '.join(parts)}; measured unstable cells {unstable}/{len(result['measured'])}; plateau error "
            f"{plateau}; {timing}; pilot: drift {number(fc.drift_per_step)} per stale step, reward "
            f"{start} on its first sampler against {np.mean(result['initial']):.2f} for the grid's seeds; "
            f"{fc.lr_note}; missed: {', '.join(misses(result)) or 'none'}")


def cell_map(name: str, result: dict) -> list[str]:
    """One combination's part of SECTION: its confusion matrix (ours), then its grid, each cell the measured
    regime (S stable, U unstable) and ours' forecast (s, u), its fall and its final reward."""
    measured, predicted = result["measured"], result["predicted"]
    lrs, Ts = result["lrs"], sorted({T for _, T in measured})
    count = collections.Counter((measured[c][0], predicted[c]) for c in measured)
    task, objective, fields, lr_pilot, role = COMBINATIONS[name]
    fc = result["forecast"]
    lines = [f"### {name} ({role}; pilot at lr {lr_pilot:g}, T = {PILOT_T}: drift {number(fc.drift_per_step)} per stale "
             f"step, entropy {number(fc.entropy)}, the run's share of groups with signal {number(fc.signal_share)} (the pilot's "
             f"{number(fc.pilot_signal_share)}), overshoot "
             f"{'yes' if fc.overshoot else 'no'}{held_text(fc)})", "",
             "| measured \\ ours | stable | unstable |", "|---|---|---|",
             f"| stable | {count[(False, False)]} | {count[(False, True)]} |",
             f"| unstable | {count[(True, False)]} | {count[(True, True)]} |", "",
             "| lr \\ T | " + " | ".join(str(T) for T in Ts) + " |", "|---" * (len(Ts) + 1) + "|"]
    for lr in lrs:
        cells = [f"{'U' if measured[(lr, T)][0] else 'S'}{'u' if predicted[(lr, T)] else 's'} "
                 f"({measured[(lr, T)][4]}; {measured[(lr, T)][1]:.2f}, {measured[(lr, T)][2]:.2f})" for T in Ts]
        lines.append(f"| {lr:.3g} | " + " | ".join(cells) + " |")
    return lines + [""]


def write_section(parts: list[list[str]], reach: str) -> None:
    intro = [SECTION, "", "`python paper_repro/pilot_forecast.py` (its docstring: protocol versions 11 and 5, the others in "
             "pilot_forecast.md; the role says which version held the combination out, confirm-5 the ones version 5 never "
             "saw, confirm-7 to 10 the ones versions 6 to 9 ran from a shared start, confirm-8 run before version 7's model "
             "was chosen, confirm-9 with it frozen, confirm-10 with version 9's frozen, confirm-11 with version 10's (version "
             "9's model, the final reward from the task's earlier rounds), confirm-12 and 13 with version 11's (version 10's, "
             "and the chance a run falls judged held out); version 8's measure and version 9's "
             "model throughout). Each cell: the "
             "measured regime (S stable, U unstable) and ours' forecast (s, u), then the number of its 4 seeds that fell "
             "more than 0.1 below their running best, the largest seed's fall and the final reward (seed mean of the last "
             f"{PLATEAU_STEPS} steps). The rows score the time to plateau (`time_to_plateau`: the first step of the first "
             "8-step block of the seed mean within 5% of the rise) as the median error of the pilot fit's time scaled by "
             "lr and read at the sampler, on the stable cells.", "", reach, ""]
    replace_section(SECTION, "\n".join(intro + [line for part in parts for line in part]) + "\n")
