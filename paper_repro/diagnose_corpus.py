"""Claim: `diagnose` names the right primary failure mode on >= 90% of a labelled corpus.

The corpus (`gspo_dynamics.sim.corpus.generate_corpus`) holds, for each of the 8 modes, runs of
the softmax-bandit simulator whose configuration causes that mode (recipes and their physics in
`gspo_dynamics/sim/corpus/_modes.py`), written as TRL trainer_state.json files. Each log is read
back with `read_log` (format auto-detected) and diagnosed without hyperparameters (what a user
with only a log has); in the full run also with the generating hyperparameters.

Overfitting guard: the thresholds of `diagnose` were tuned while looking at the corpus generated
with base seed TUNING_SEED. The number recorded against the target is the accuracy on a HELD-OUT
corpus, generated with base seed HELDOUT_SEED (simulator seeds never used during tuning); the
tuning-set accuracy is reported beside it. Prints both confusion matrices, records the claim's row
and replaces the "## Diagnose: labelled simulator corpus" section of paper_repro/RESULTS.md.

    python paper_repro/diagnose_corpus.py [--quick]     # quick: 2 seeds per mode, no hparams; full: 5
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
TUNING_SEED = 0  # base simulator seed of the corpus the thresholds were tuned on
HELDOUT_SEED = 300_000  # base seed of the held-out corpus: runs seed + 1009 v never overlap the tuning ones
# (100_000 and 200_000 were earlier held-out sets; rules were fixed after looking at them (collapse ratio,
#  noise-dominated reading), so they are no longer unseen and a fresh base seed is the recorded one)
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


def evaluate(seeds: int, base_seed: int, with_hparams: bool) -> tuple[list, float]:
    """Generate the corpus with `base_seed` and diagnose every log (and with its hparams if asked).

    Returns ([(entry, format, primary, primary with hparams or None, verdict modes)], generation seconds).
    """
    results = []
    with tempfile.TemporaryDirectory(prefix="gspo_corpus_") as tmp:
        t0 = time.perf_counter()
        entries = generate_corpus(tmp, seeds=seeds, seed=base_seed)
        gen_s = time.perf_counter() - t0
        for entry in entries:
            log = read_log(entry.path)
            d = diagnose(log)
            d_hp = diagnose(log, entry.hparams).primary if with_hparams else None
            results.append((entry, log.format, d.primary, d_hp, [v.mode for v in d.verdicts]))
            print(f"[seed {base_seed}] {entry.mode:22s} run {entry.seed}: primary {d.primary:22s}"
                  + ("" if d_hp is None else f" (with hparams: {d_hp})")
                  + "  verdicts " + ", ".join(f"{v.mode} {v.confidence:.2f}" for v in d.verdicts))
    return results, gen_s


def per_mode_table(results: list) -> list[str]:
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
    return table


def score(results: list, with_hparams: bool = False) -> tuple[int, int]:
    col = 3 if with_hparams else 2
    return sum(r[0].mode == r[col] for r in results), len(results)


def main() -> None:
    args = parse_mode(__doc__.splitlines()[0])
    started = time.perf_counter()
    assert tuple(CORPUS_MODES) == tuple(MODES), "the corpus and diagnose must name the same modes"
    seeds = 2 if args.quick else 5
    hp = not args.quick
    tuning, gen_tuning = evaluate(seeds, TUNING_SEED, hp)
    held, gen_held = evaluate(seeds, HELDOUT_SEED, hp)
    n = len(held)
    correct, _ = score(held)
    accuracy = correct / n
    formats = collections.Counter(f for _, f, *_ in tuning + held)
    lines = {}
    for name, res in (("tuning", tuning), ("held-out", held)):
        c, m = score(res)
        text = f"{c}/{m} = {c / m:.0%} without hyperparameters"
        if hp:
            ch, _ = score(res, True)
            text += f", {ch}/{m} = {ch / m:.0%} with the generating hyperparameters"
        lines[name] = text
    print(f"\nformats read back: {dict(formats)}")
    print("held-out confusion matrix:\n" + "\n".join(confusion_lines([(e.mode, p) for e, _, p, _, _ in held])))
    print(f"tuning set (base seed {TUNING_SEED}): {lines['tuning']}")
    print(f"held-out (base seed {HELDOUT_SEED}): {lines['held-out']}")
    measured = f"held-out seeds: {lines['held-out']} (tuning seeds: {lines['tuning']})"
    cmd = "python paper_repro/diagnose_corpus.py" + (" --quick" if args.quick else "")
    record(Claim("diagnose-corpus", f"diagnose's primary verdict is the generating mode on >= {TARGET:.0%} "
                 f"of a simulator-labelled TRL corpus (8 modes x {seeds} seeds), on seeds not used in tuning"),
           predicted=f">= {TARGET:.0%}", measured=measured, passed=accuracy >= TARGET, quick=args.quick,
           started=started, command=cmd, write=not args.no_record)
    if not args.no_record:
        body = [SECTION, "",
                f"`{cmd}` ({'quick' if args.quick else 'full'}: {seeds} seeds per mode, {n} logs per corpus, all read "
                f"back as {', '.join(formats)}; generated in {gen_tuning:.1f} s + {gen_held:.1f} s). The thresholds were "
                f"tuned on the corpus of base seed {TUNING_SEED}; the number held against the {TARGET:.0%} target is the "
                f"held-out corpus of base seed {HELDOUT_SEED} (simulator seeds never seen during tuning).", "",
                f"- **held-out**: **{lines['held-out']}**",
                f"- tuning set: {lines['tuning']}", "",
                "Held-out confusion matrix (rows: the generating mode; columns: primary verdict without hyperparameters):", "",
                *confusion_lines([(e.mode, p) for e, _, p, _, _ in held]), "", "Held-out, per mode:", "",
                *per_mode_table(held), "",
                "Tuning set confusion matrix:", "", *confusion_lines([(e.mode, p) for e, _, p, _, _ in tuning])]
        if hp:
            body += ["", "Held-out with the generating hyperparameters:", "",
                     *confusion_lines([(e.mode, p) for e, _, _, p, _ in held])]
        replace_section(SECTION, "\n".join(body) + "\n")


if __name__ == "__main__":
    main()
