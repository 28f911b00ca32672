"""The --dump of paper_repro/pilot_forecast.py (per combination: the pilot's quantities and the grid's seed curves)
and what is read from it: the measured cells, ours' collapse part from the pilot's quantities, and the collapse
limit S fitted on a dump's cells (`fit_limit`, version 5's S from its development combinations). The dump's
format is the script's (end_reward_interval.py reads it too), so it stays beside the scripts; the scoring it
calls is gspo_dynamics.experiments' (`measured_cells`), the collapse rule `theory.collapse`."""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

import numpy as np

from gspo_dynamics.experiments import measured_cells
from gspo_dynamics.theory import collapse


def collapses(d: dict, lr: float, T: int, limit: float) -> bool:
    """Ours, the collapse part, from a combination's pilot quantities `d` (a dump entry) at the limit S
    (`theory.collapse.at_risk`: r lr / lr_pilot > OVERSHOOT_RISE, equation (6), or (1 - z) D(lr, T) > S H, (5) and
    (7), the limit at least the displacement the pilot survived, (8), where the entry holds one);
    `fit_limit` scans S with it, the forecast itself reads the shipped S through `predict.collapse_grid`."""
    if not d["drift_per_step"] or not d.get("entropy"):
        return False
    return bool(collapse.at_risk(d["drift_per_step"] / d["lr_pilot"], d["entropy"], d.get("entropy_rise"), d["lr_pilot"],
                                 [lr], [T], limit, d.get("clip"), d.get("signal_share", 1.0), d.get("survived"))[0, 0])


def relative_displacement(d: dict, lr: float, T: int) -> float:
    """(1 - z) D(lr, T) / H from a combination's pilot quantities (`theory.collapse` (2)-(5), (7))."""
    D = collapse.displacement(d["drift_per_step"] / d["lr_pilot"], lr, T, d.get("clip"))
    return d.get("signal_share", 1.0) * D / d["entropy"]


def pilot_entry(fc, lr_pilot: float) -> dict:
    """The pilot's quantities the collapse forecast uses (and a --dump keeps)."""
    hp = fc.config.setup.hparams
    return {"lr_pilot": lr_pilot, "drift_per_step": fc.drift_per_step, "entropy": fc.entropy, "entropy_rise": fc.entropy_rise,
            "signal_share": fc.signal_share, "survived": fc.survived, "pilot_signal_share": fc.pilot_signal_share,
            "held_success": fc.held, "group_size": hp.group_size,
            "clip": fc.band_edge,
            "stiffness": None if fc.implications.stiffness_per_step is None else fc.implications.stiffness_per_step.value}


def fit_limit(dump: dict) -> tuple[float, float]:
    """The relative collapse limit S that classifies the dumped cells best, (S, accuracy) (`collapses`);
    the middle of the best interval of S between the cells' relative displacements D / H."""
    cells = [(d, lr, T, m[0]) for d in dump.values() for (lr, T), m in dumped_cells(d).items()]
    spreads = sorted({relative_displacement(d, lr, T) for d, lr, T, _ in cells if d["drift_per_step"] and d.get("entropy")}
                     | {0.0})
    candidates = [(a + b) / 2 for a, b in zip(spreads, spreads[1:])] + [spreads[-1] * 2 + 1e-9]
    scored = [(sum(collapses(d, lr, T, S) == u for d, lr, T, u in cells) / len(cells), S) for S in candidates]
    best = max(acc for acc, _ in scored)
    ties = [S for acc, S in scored if acc == best]
    return ties[len(ties) // 2], best


def fit_weight(dump: dict, weights) -> list[tuple[float, float, float]]:
    """Per weight w of `theory.collapse` (9): (w, S, accuracy) of `fit_limit` on the dump with each entry's share
    of groups with signal recomputed at w from its pilot's share and held success rate where the pilot kept its
    reward (`survived` set: equation (8)'s premise, which (9) shares), else the pilot's share (without the floor
    of one group the forecast applies, which only a pilot with every group flat and a held rate at a bound
    reaches). Entries written before version 9 (no pilot share or held rate) are refused."""
    if not all("pilot_signal_share" in d and "held_success" in d for d in dump.values()):
        raise ValueError("the dump was written before protocol version 9 (no pilot share or held success rate)")
    out = []
    for w in weights:
        reweighted = {}
        for name, d in dump.items():
            share = d["pilot_signal_share"]
            if share is not None and d["survived"] is not None and d["held_success"] is not None:
                held = min(max(d["held_success"], 0.0), 1.0)
                share = collapse.run_signal_share(share, held, d["group_size"], w)
            reweighted[name] = {**d, "signal_share": share}
        out.append((float(w), *fit_limit(reweighted)))
    return out


def dumped_curves(entry: dict) -> dict:
    """A --dump entry's seed curves: (lr, T) -> {metric: array (seeds, steps)}."""
    return {(lr, T): {k: np.asarray(v) for k, v in c.items()} for lr, T, c in entry["curves"]}


def dumped_cells(entry: dict) -> dict:
    """The measured cells (`measured_cells`) of a --dump entry's seed curves."""
    curves = dumped_curves(entry)
    return measured_cells(curves, sorted({lr for lr, _ in curves}), sorted({T for _, T in curves}))


def read_dump(parser: argparse.ArgumentParser, path: str, known) -> dict:
    """A --dump file's combinations (JSON, or gzipped JSON: a name ending .gz), each one of `known`, or one line
    and exit 2 (missing, not JSON, unknown combination)."""
    try:
        raw = gzip.decompress(Path(path).read_bytes()) if path.endswith(".gz") else Path(path).read_bytes()
        dump = json.loads(raw)
    except (OSError, ValueError, EOFError) as err:
        parser.error(f"cannot read the dump {path}: {err}")
    unknown = set(dump) - set(known) if isinstance(dump, dict) else {"(not an object)"}
    if unknown:
        parser.error(f"the dump {path} holds unknown combinations {sorted(unknown)}")
    if not all(isinstance(d, dict) and "curves" in d for d in dump.values()):
        parser.error(f"the dump {path} has no seed curves (written before protocol version 4); run the grid again with --dump")
    return dump


def dump_entry(result: dict, lr_pilot: float, wall: float) -> dict:
    """One combination's --dump entry: its pilot's quantities (`pilot_entry`), the grid's wall time and seed curves."""
    return {**pilot_entry(result["forecast"], lr_pilot), "wall_s": wall,
            "curves": [[lr, T, {k: np.round(c[k], 4).tolist() for k in ("reward", "entropy") if k in c}]
                       for (lr, T), c in result["curves"].items()]}  # (seeds, steps) each: any measure, recomputed
