"""Claim: `diagnose` names the right primary failure mode on >= 90% of a labelled corpus.

The corpus (`gspo_dynamics.sim.corpus.generate_corpus`) holds, for each of the 8 modes, runs of
the softmax-bandit simulator whose configuration causes that mode (recipes and their physics in
`gspo_dynamics/sim/corpus/_modes.py`), written as TRL trainer_state.json files. Each log is read
back with `read_log` (format auto-detected) and diagnosed without hyperparameters (what a user
with only a log has); in the full run also with the generating hyperparameters. Prints the
confusion matrix, records the claim's row and replaces the "## Diagnose: labelled simulator
corpus" section of paper_repro/RESULTS.md with the per-mode table.

    python paper_repro/diagnose_corpus.py [--quick]     # quick: 2 seeds per mode, full: 5
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # small arrays: threads only contend on a shared machine

import collections  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

from _results import Claim, parse_mode, record, replace_section  # noqa: E402

from gspo_dynamics.diagnose import MODES, TOO_SHORT, diagnose  # noqa: E402
from gspo_dynamics.logs import read_log  # noqa: E402
from gspo_dynamics.sim.corpus import MODES as CORPUS_MODES  # noqa: E402
from gspo_dynamics.sim.corpus import generate_corpus  # noqa: E402

TARGET = 0.90  # the acceptance level for the primary verdict
SECTION = "## Diagnose: labelled simulator corpus"
SHORT = {"healthy_saturation": "healthy", "still_rising": "rising", "stalled": "stalled",
         "dynamical_instability": "instab", "advantage_degeneracy": "degen", "policy_concentration": "conc",
         "reward_hacking": "hack", "noise_dominated": "noise", TOO_SHORT: "short"}


def confusion_lines(pairs: list[tuple[str, str]]) -> list[str]:
    """A markdown confusion matrix: rows the label, columns the primary verdict."""
    columns = list(MODES) + ([TOO_SHORT] if any(p == TOO_SHORT for _, p in pairs) else [])
    counts = collections.Counter(pairs)
    lines = ["| label \\ primary | " + " | ".join(SHORT[c] for c in columns) + " |",
             "|---|" + "---|" * len(columns)]
    for mode in MODES:
        lines.append(f"| {mode} | " + " | ".join(str(counts[(mode, c)] or ".") for c in columns) + " |")
    return lines


def main() -> None:
    args = parse_mode(__doc__.splitlines()[0])
    started = time.perf_counter()
    assert tuple(CORPUS_MODES) == tuple(MODES), "the corpus and diagnose must name the same modes"
    seeds = 2 if args.quick else 5
    results = []  # (entry, format, primary, primary with hparams or None, verdict modes)
    with tempfile.TemporaryDirectory(prefix="gspo_corpus_") as tmp:
        t0 = time.perf_counter()
        entries = generate_corpus(tmp, seeds=seeds)
        gen_s = time.perf_counter() - t0
        for entry in entries:
            log = read_log(entry.path)
            d = diagnose(log)
            d_hp = None if args.quick else diagnose(log, entry.hparams).primary
            results.append((entry, log.format, d.primary, d_hp, [v.mode for v in d.verdicts]))
            print(f"{entry.mode:22s} seed {entry.seed}: primary {d.primary:22s}"
                  + ("" if d_hp is None else f" (with hparams: {d_hp})")
                  + "  verdicts " + ", ".join(f"{v.mode} {v.confidence:.2f}" for v in d.verdicts))
    n = len(results)
    correct = sum(e.mode == p for e, _, p, _, _ in results)
    accuracy = correct / n
    formats = collections.Counter(f for _, f, _, _, _ in results)
    matrix = confusion_lines([(e.mode, p) for e, _, p, _, _ in results])
    print(f"\ngenerated {n} logs in {gen_s:.1f} s; formats read back: {dict(formats)}")
    print("\n".join(matrix))

    table = ["| mode | logs | primary correct | also among the verdicts | primary instead | recipe |",
             "|---|---|---|---|---|---|"]
    for mode in MODES:
        rows = [r for r in results if r[0].mode == mode]
        ok = sum(p == mode for _, _, p, _, _ in rows)
        listed = sum(mode in modes for *_, modes in rows)
        wrong = collections.Counter(p for _, _, p, _, _ in rows if p != mode)
        notes = sorted({e.label["note"] for e, *_ in rows})
        table.append(f"| {mode} | {len(rows)} | {ok}/{len(rows)} | {listed}/{len(rows)} | "
                     + (", ".join(f"{k} ({v})" for k, v in wrong.most_common()) or "-")
                     + " | " + "; ".join(notes) + " |")
    hp_text = ""
    if not args.quick:
        correct_hp = sum(e.mode == p for e, _, _, p, _ in results)
        hp_text = f"; with the generating hyperparameters {correct_hp}/{n} ({correct_hp / n:.0%})"
    measured = f"{correct}/{n} = {accuracy:.0%} without hyperparameters{hp_text}"
    cmd = "python paper_repro/diagnose_corpus.py" + (" --quick" if args.quick else "")
    record(Claim("diagnose-corpus", f"diagnose's primary verdict is the generating mode on >= {TARGET:.0%} "
                 f"of a simulator-labelled TRL corpus (8 modes x {seeds} seeds)"),
           predicted=f">= {TARGET:.0%}", measured=measured, passed=accuracy >= TARGET, quick=args.quick,
           started=started, command=cmd, write=not args.no_record)
    if not args.no_record:
        body = [SECTION, "",
                f"`{cmd}` ({'quick' if args.quick else 'full'}: {seeds} seeds per mode, {n} logs, generated in "
                f"{gen_s:.1f} s, all read back as {', '.join(formats)}). Primary verdict without hyperparameters: "
                f"**{correct}/{n} = {accuracy:.0%}** (target {TARGET:.0%}){hp_text}.", "",
                "Confusion matrix (rows: the generating mode; columns: diagnose's primary verdict):", "",
                *matrix, "", "Per mode:", "", *table]
        replace_section(SECTION, "\n".join(body) + "\n")


if __name__ == "__main__":
    main()
