"""Measure: `diagnose`'s primary verdict on the contextual generator family (a family it was not tuned on).

The family (`gspo_dynamics.sim.corpus_contextual.generate_contextual_corpus`) holds, for each of
the 8 modes, runs of a many-prompt contextual bandit trained with GRPO and Adam whose recipe
causes that mode (recipes and their physics in `gspo_dynamics/sim/corpus_contextual/_recipes.py`),
written as TRL trainer_state.json, W&B CSV exports or verl JSONL. Labels are fixed by the recipes;
`diagnose` was written and tuned before this family existed. Each log is read back with `read_log`
(format auto-detected) and diagnosed without hyperparameters, and with the generating ones.

Prints the per-run verdicts, the confusion matrices and the per-mode table. Records nothing:
paper_repro/RESULTS.md is left alone (a leave-one-family-out script is to use this family).

    python paper_repro/diagnose_contextual_corpus.py [--seeds 5] [--seed 0] [--quick]   # quick: 2 runs per mode
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # small arrays: threads only contend on a shared machine

import argparse  # noqa: E402
import collections  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

from diagnose_corpus import confusion_lines, per_mode_table, score  # noqa: E402

from gspo_dynamics.diagnose import MODES, diagnose  # noqa: E402
from gspo_dynamics.logs import read_log  # noqa: E402
from gspo_dynamics.sim.corpus_contextual import MODES as FAMILY_MODES  # noqa: E402
from gspo_dynamics.sim.corpus_contextual import generate_contextual_corpus  # noqa: E402


def evaluate(seeds: int, seed: int) -> tuple[list, float]:
    """Generate the family and diagnose every log, without and with its hyperparameters.

    Returns ([(entry, format, primary, primary with hparams, verdict modes)], generation seconds).
    """
    results = []
    with tempfile.TemporaryDirectory(prefix="gspo_contextual_") as tmp:
        t0 = time.perf_counter()
        entries = generate_contextual_corpus(tmp, seeds=seeds, seed=seed)
        gen_s = time.perf_counter() - t0
        for entry in entries:
            log = read_log(entry.path)
            d = diagnose(log)
            d_hp = diagnose(log, entry.hparams).primary
            results.append((entry, log.format, d.primary, d_hp, [v.mode for v in d.verdicts]))
            mark = "ok " if d.primary == entry.mode else "XX "
            print(f"{mark}{entry.mode:22s} run {entry.seed} ({entry.label['variant']}, {entry.label['format']}): "
                  f"primary {d.primary:22s} (with hparams: {d_hp})  verdicts "
                  + ", ".join(f"{v.mode} {v.confidence:.2f}" for v in d.verdicts))
    return results, gen_s


def variant_table(results: list) -> list[str]:
    """Accuracy per recipe variant (the physical cause), without hyperparameters."""
    rows = collections.defaultdict(list)
    for entry, _, primary, _, _ in results:
        rows[(entry.mode, entry.label["variant"])].append(primary)
    lines = ["| mode | variant | correct | primary instead |", "|---|---|---|---|"]
    for (mode, variant), primaries in rows.items():
        wrong = collections.Counter(p for p in primaries if p != mode)
        lines.append(f"| {mode} | {variant} | {sum(p == mode for p in primaries)}/{len(primaries)} | "
                     + (", ".join(f"{k} ({v})" for k, v in wrong.most_common()) or "-") + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="runs per mode (default 5)")
    parser.add_argument("--seed", type=int, default=0, help="base seed of the family (default 0)")
    parser.add_argument("--quick", action="store_true", help="2 runs per mode (the CI-sized run)")
    parser.add_argument("--no-record", action="store_true", help="accepted for the paper_repro harness; nothing is recorded")
    args = parser.parse_args()
    if args.quick:
        args.seeds = 2
    assert tuple(FAMILY_MODES) == tuple(MODES), "the family and diagnose must name the same modes"
    results, gen_s = evaluate(args.seeds, args.seed)
    n = len(results)
    c, _ = score(results)
    ch, _ = score(results, True)
    formats = collections.Counter(f for _, f, *_ in results)
    print(f"\ncontextual family, base seed {args.seed}: {n} logs ({args.seeds} per mode) generated in {gen_s:.1f} s; "
          f"formats read back: {dict(formats)}")
    print(f"primary verdict = label: {c}/{n} = {c / n:.0%} without hyperparameters, "
          f"{ch}/{n} = {ch / n:.0%} with the generating hyperparameters\n")
    print("confusion matrix without hyperparameters (rows: label; columns: primary verdict):\n")
    print("\n".join(confusion_lines([(e.mode, p) for e, _, p, _, _ in results])))
    print("\nwith the generating hyperparameters:\n")
    print("\n".join(confusion_lines([(e.mode, p) for e, _, _, p, _ in results])))
    print("\nper mode (without hyperparameters):\n")
    print("\n".join(per_mode_table(results)))
    print("\nper recipe variant (without hyperparameters):\n")
    print("\n".join(variant_table(results)))


if __name__ == "__main__":
    main()
