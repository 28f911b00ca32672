"""Claim: diagnose's primary verdict holds on a generator family it was not tuned on (>= 90% each),
and its confidence means what it says (among primaries at confidence >= 0.9, >= 90% right).

Four independently written, labelled generator families, each log labelled by the physical cause
its recipe sets up before diagnose sees it:
  simulator   the softmax-bandit corpus (`gspo_dynamics.sim.corpus`: 2 arms or K arms, SGD or Adam, TRL rows)
  trainer     the transformer trainer (`gspo_dynamics.train.corpus`: 100k model, real rollouts, CPU)
  contextual  the many-prompt contextual bandit (`gspo_dynamics.sim.corpus_contextual`: K arms, Adam,
              partial credit, proxy vs true reward, logging every N steps, other formats)
  trl         TRL's own GRPOTrainer (`paper_repro/trl_family.py`: a tiny Llama on our tasks, trl 1.16, CPU),
              read from the committed logs in paper_repro/data/trl_family/ (TRL need not be installed)

Protocol (leave one family out): diagnose's tunable threshold (TUNABLE: the ceiling gap of the
solved-task rule) is chosen on a fixed grid by its mean accuracy on the other families (among
settings they score equally, the middle one: `choose`), and the confidence calibration (Platt's map,
`diagnose._calibration`) is fitted on those families' primary verdicts; the left-out family is
then diagnosed with that choice, its confidences mapped by that fit, and its accuracy, confusion
matrix and reliability table are recorded. Every family takes its turn. Logs are diagnosed without
hyperparameters (what a user with only a log has). The fit on all families (the setting best
on all of them, and its calibration) is printed: it is what diagnose ships with.

    python paper_repro/diagnose_generalisation.py [--quick] [--no-record]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import collections  # noqa: E402
import contextlib  # noqa: E402
import itertools  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402
import trl_family  # noqa: E402
from _results import Claim, parse_mode, record, replace_section  # noqa: E402

from gspo_dynamics.diagnose import MODES, TOO_SHORT, diagnose  # noqa: E402
from gspo_dynamics.diagnose import _calibration, _context  # noqa: E402
from gspo_dynamics.logs import read_log  # noqa: E402

TARGET = 0.90  # primary-verdict accuracy on each left-out family
CALIBRATION_LEVEL, CALIBRATION_TARGET = 0.9, 0.9  # among confidence >= 0.9, at least 90% right
SECTION = "## Diagnose: leave one generator family out"
# the thresholds tuned on the other families, and the grid they are chosen from (fixed in advance)
# (the meaningful change of the stalled-vs-noise power calculation was tuned here up to the 540000 run; it is
# now Cohen's small effect d = 0.2, a convention fixed before any corpus: `_trend.MEANINGFUL_CHANGE`)
TUNABLE = {"ceiling_gap": (_context, "CEILING_GAP", (0.02, 0.05, 0.1))}
TIE_TOL = 1e-9  # accuracies closer than this are a tie (they are ratios of small integers)
BINS = ((0.5, 0.7), (0.7, 0.9), (0.9, 1.0001))  # reliability table of the primary's confidence
# base seeds of this claim's runs, fresh for each run after diagnose changed (changes were developed on
# contextual seeds 900_000 / 910_000 and trainer seed 80 only; those after the 540000 run on that run's
# logs and on base seeds 0 / 0 / 0 and 900000 / 80 / 910000; those after the 560000 run on the logs of every
# earlier run: contextual 700000-760000, simulator 540000-560000, trainer 120-130). Earlier runs, kept as history:
#   500_000 / 50 / 700_000 (before the changes they prompted): simulator 36/40, contextual 28/40,
#       trainer 17/21; calibration (uncalibrated) 46/60 at >= 0.9
#   510_000 / 60 / 710_000: simulator 38/40, contextual 37/40, trainer 11/21; calibration 17/20
#   520_000 / 70 / 720_000: simulator 36/40, contextual 36/40, trainer 15/21; calibration 51/56
#   530_000 / 90 / 730_000: simulator 37/40, contextual 30/40, trainer 12/21; calibration 26/34
#   540_000 / 110 / 740_000: simulator 38/40, contextual 36/40, trainer 15/21; calibration 33/38
#   550_000 / 120 / 750_000: simulator 36/40, contextual 35/40, trainer 21/21; calibration 50/54
#   560_000 / 130 / 760_000: simulator 38/40, contextual 33/40, trainer 20/21; calibration 40/45
#   570_000 / 140 / 770_000: simulator 37/40, contextual 37/40, trainer 20/21; calibration 49/51
#   580_000 / 150 / 780_000 (four families): simulator 32/40, contextual 34/40, trainer 18/21, trl 27/30; 51/53
SIM_SEED = 590_000
TRAINER_SEED = 160
CONTEXTUAL_SEED = 790_000
# the TRL family's run seeds read while diagnose changed for issue 38 (session 20: G from window means, a collapse's
# rise against the Bernoulli spread); seeds 2 and 3 were run after those changes, and are also scored on their own
TRL_SEEN_SEEDS = (0, 1)
HISTORY = ["580000 / 150 / 780000 (four families, after issue 38's evidence-first changes): simulator 32/40 (still "
           "rising read as healthy 4/5: the late climb was also required to be 0.2 per-sample reward stds, a test of "
           "the solved-task rule that the trend verdict does not need, since dropped there; oscillating instability "
           "read as noise 3/5: a swing about the size of the rows' noise, as in the shared Sunshine log labelled "
           "noise-dominated), contextual 34/40, trainer 18/21, trl 27/30 (its seeds 2-3, run after the changes, "
           "13/14); 51/53 right at confidence >= 0.9",
           "570000 / 140 / 770000 (three families): simulator 37/40, contextual 37/40, trainer 20/21; 49/51 right at "
           "confidence >= 0.9",
           "500000 / 50 / 700000, before the diagnose changes it prompted: simulator 36/40, contextual 28/40, "
           "trainer 17/21; 46/60 right at confidence >= 0.9 (uncalibrated)",
           "510000 / 60 / 710000: simulator 38/40, contextual 37/40, trainer 11/21 (stalled read as noise 3/3 and "
           "concentration at reward 0.93 read as a solved task 3/3 with the thresholds the other two families chose); "
           "17/20 right at confidence >= 0.9",
           "520000 / 70 / 720000: simulator 36/40, contextual 36/40, trainer 15/21 (stalled read as noise 3/3 with "
           "the meaningful change 0.1 the other two families chose; noise read as rising 3/3, and in the simulator "
           "2 healthy + 1 rising, by a whole-run slope test since dropped); 51/56 right at confidence >= 0.9",
           "530000 / 90 / 730000 (slope test dropped): simulator 37/40, contextual 30/40, trainer 12/21 (stalled as "
           "noise 3/3, concentration at reward 0.93 as solved 3/3 with the other families' thresholds, degeneracy "
           "without any reward signal as hacking by completion length 2/3, since ranked below it); 26/34 right at "
           "confidence >= 0.9",
           "540000 / 110 / 740000: simulator 38/40, contextual 36/40, trainer 15/21 (stalled as noise 3/3: the "
           "sibling families scored meaningful change 0.1 to 0.3 alike and the grid's first value was taken, since "
           "fixed at Cohen's d = 0.2 and ties taken at their middle; concentration at reward 0.92, still climbing, "
           "as a solved task 3/3 with ceiling gap 0.1, since the ceiling needs the rise to have stopped); 33/38 "
           "right at confidence >= 0.9",
           "550000 / 120 / 750000 (Cohen's d fixed, the ceiling needing a stopped rise, all-correct / all-wrong "
           "zero-std groups, ties at their middle): simulator 36/40, contextual 35/40 (3 of 5 noise-dominated runs "
           "with groups of G = 2 read as advantage degeneracy: at G = 2 at least half the groups are zero-std at any "
           "success rate, since judged beyond that floor 2^(1-G)), trainer 21/21; 50/54 right at confidence >= 0.9",
           "560000 / 130 / 760000 (G = 2's floor): simulator 38/40, contextual 33/40 (solved runs at reward 0.92-0.93, "
           "a ceiling partial credit caps below 1, read as concentration 2/5 with the ceiling gap 0.05 the sibling "
           "families left undecided, since capped by the distance below the ceiling on the gap's scale and a late "
           "creep under 10% of the rise not counting as a climb; a collapse with the reward falling read as "
           "concentration, since ranked below the instability; noisy drifts read as healthy or degeneracy 2/5, since "
           "saturation needs a late half that could have seen the climb go on), trainer 20/21 (concentration read "
           "as still rising at a tie 0.97 / 0.97); 40/45 right at confidence >= 0.9 (contextual 26/30)"]
SHORT = {"healthy_saturation": "healthy", "still_rising": "rising", "stalled": "stalled",
         "dynamical_instability": "instab", "advantage_degeneracy": "degen", "policy_concentration": "conc",
         "reward_hacking": "hack", "noise_dominated": "noise", TOO_SHORT: "short"}


@contextlib.contextmanager
def thresholds(setting: dict):
    """Set diagnose's tunable module constants for the duration (diagnose reads them at call time)."""
    saved = {name: getattr(module, attr) for name, (module, attr, _) in TUNABLE.items()}
    calibration, _calibration.CALIBRATION = _calibration.CALIBRATION, (1.0, 0.0)  # raw confidences
    try:
        for name, value in setting.items():
            module, attr, _ = TUNABLE[name]
            setattr(module, attr, value)
        yield
    finally:
        for name, value in saved.items():
            module, attr, _ = TUNABLE[name]
            setattr(module, attr, value)
        _calibration.CALIBRATION = calibration


def generate(tmp: str, quick: bool) -> dict[str, list[tuple[str, str]]]:
    """family -> [(label, log path)], each family generated into its own folder."""
    from gspo_dynamics.sim.corpus import generate_corpus
    from gspo_dynamics.sim.corpus_contextual import generate_contextual_corpus
    from gspo_dynamics.train.corpus import RECIPES, generate_trainer_corpus

    families = {}
    t0 = time.perf_counter()
    sim = generate_corpus(f"{tmp}/simulator", seeds=2 if quick else 5, seed=SIM_SEED)
    families["simulator"] = [(e.mode, str(e.path)) for e in sim]
    t1 = time.perf_counter()
    ctx = generate_contextual_corpus(f"{tmp}/contextual", seeds=2 if quick else 5, seed=CONTEXTUAL_SEED)
    families["contextual"] = [(e.mode, str(e.path)) for e in ctx]
    t2 = time.perf_counter()
    modes = [m for m in MODES if m in RECIPES]
    trainer = generate_trainer_corpus(f"{tmp}/trainer", modes=modes[:4] if quick else modes, seeds=1 if quick else 3,
                                      base_seed=TRAINER_SEED)
    families["trainer"] = [(e.mode, str(e.path)) for e in trainer]
    families["trl"] = [(label, str(path)) for label, path in trl_family.family()]  # committed: nothing to run
    print(f"generated: simulator {len(sim)} logs ({t1 - t0:.0f} s), contextual {len(ctx)} ({t2 - t1:.0f} s), "
          f"trainer {len(trainer)} ({time.perf_counter() - t2:.0f} s); read: trl {len(families['trl'])}")
    return families


def settings() -> list[dict]:
    names = list(TUNABLE)
    return [dict(zip(names, values)) for values in itertools.product(*(TUNABLE[n][2] for n in names))]


def choose(score: list[float]) -> int:
    """The grid index of the best score; among settings that tie (to TIE_TOL), the middle one (the lower
    of two middles), not the grid's edge: families that cannot tell the tied values apart give no reason
    for an extreme one, and the centre of the range they accept is the farthest from both its ends."""
    best = max(score)
    tied = [i for i, s in enumerate(score) if s >= best - TIE_TOL]
    return tied[(len(tied) - 1) // 2]


def diagnose_all(families, grid) -> dict:
    """(setting index, family) -> [(label, primary, confidence)]; each log is read once."""
    logs = {f: [(label, read_log(path)) for label, path in items] for f, items in families.items()}
    out = {}
    for i, setting in enumerate(grid):
        with thresholds(setting):
            for family, items in logs.items():
                results = []
                for label, log in items:
                    d = diagnose(log)
                    conf = d.verdicts[0].confidence if d.verdicts else 0.0
                    results.append((label, d.primary, conf))
                out[i, family] = results
    return out


def accuracy(results) -> float:
    return sum(label == primary for label, primary, _ in results) / max(len(results), 1)


def confusion_lines(results) -> list[str]:
    pairs = [(label, primary) for label, primary, _ in results]
    labels = [m for m in MODES if any(lab == m for lab, _ in pairs)]
    columns = list(MODES) + ([TOO_SHORT] if any(p == TOO_SHORT for _, p in pairs) else [])
    counts = collections.Counter(pairs)
    lines = ["| label \\ primary | " + " | ".join(SHORT[c] for c in columns) + " |", "|---|" + "---|" * len(columns)]
    lines += [f"| {m} | " + " | ".join(str(counts[(m, c)] or ".") for c in columns) + " |" for m in labels]
    return lines


def reliability(results) -> list[tuple[str, int, float]]:
    rows = []
    for lo, hi in BINS:
        inside = [label == primary for label, primary, conf in results if lo <= conf < hi]
        rows.append((f"[{lo:.1f}, {min(hi, 1.0):.1f}{']' if hi > 1 else ')'}", len(inside),
                     sum(inside) / len(inside) if inside else float("nan")))
    return rows


def _platt(results) -> tuple[float, float]:
    """Platt's (a, b) fitted to whether these primaries were right, from their raw confidences."""
    return _calibration.fit_platt([conf for _, _, conf in results], [label == primary for label, primary, _ in results])


def main() -> None:
    args = parse_mode(__doc__.splitlines()[0])
    started = time.perf_counter()
    torch.set_num_threads(1)
    grid = settings()
    with tempfile.TemporaryDirectory(prefix="gspo_lofo_") as tmp:
        families = generate(tmp, args.quick)
        t0 = time.perf_counter()
        table = diagnose_all(families, grid)
        print(f"diagnosed {sum(map(len, families.values()))} logs x {len(grid)} settings in {time.perf_counter() - t0:.0f} s")
    names = list(families)
    held_out = {}
    for left in names:
        others = [f for f in names if f != left]
        score = [sum(accuracy(table[i, f]) for f in others) / len(others) for i in range(len(grid))]
        best = choose(score)
        ab = _platt([r for f in others for r in table[best, f]])
        results = [(label, primary, _calibration.calibrate(conf, ab)) for label, primary, conf in table[best, left]]
        held_out[left] = (results, grid[best], score[best], ab)
        print(f"left out {left}: tuned on {' + '.join(others)} -> {grid[best]} (their accuracy {score[best]:.0%}), "
              f"calibration a = {ab[0]:.3f}, b = {ab[1]:.3f}; {left}: {accuracy(results):.0%} of {len(results)}")
        for line in confusion_lines(results):
            print("  " + line)
    overall = [sum(accuracy(table[i, f]) for f in names) / len(names) for i in range(len(grid))]
    best_all = choose(overall)
    ab_all = _platt([r for f in names for r in table[best_all, f]])
    print(f"fit on all {len(names)} families (what diagnose ships with): {grid[best_all]} ({overall[best_all]:.0%}), "
          f"CALIBRATION = ({ab_all[0]:.4f}, {ab_all[1]:.4f})")
    if "trl" in held_out:  # the TRL runs made after diagnose last changed, on their own
        fresh = [r for (_, path), r in zip(families["trl"], held_out["trl"][0])
                 if int(Path(path).parent.name.rsplit("-", 1)[1]) not in TRL_SEEN_SEEDS]
        n_fresh = sum(label == primary for label, primary, _ in fresh)
        record(Claim("diagnose-lofo-trl-fresh", f"diagnose's primary verdict is the generating mode on >= {TARGET:.0%} "
                     "of the TRL runs made after its last change (seeds not read while it changed), tuned on the "
                     "other families", source="ours"),
               predicted=f">= {TARGET:.0%}", measured=f"{n_fresh}/{len(fresh)} = {n_fresh / max(len(fresh), 1):.0%}",
               passed=bool(fresh) and n_fresh / len(fresh) >= TARGET, quick=args.quick, started=started,
               command="python paper_repro/diagnose_generalisation.py" + (" --quick" if args.quick else ""),
               write=not args.no_record)
    pooled = [r for results, *_ in held_out.values() for r in results]
    confident = [label == primary for label, primary, conf in pooled if conf >= CALIBRATION_LEVEL]
    calib = sum(confident) / len(confident) if confident else float("nan")
    cmd = "python paper_repro/diagnose_generalisation.py" + (" --quick" if args.quick else "")
    for left, (results, setting, score, _) in held_out.items():
        n_right = sum(label == primary for label, primary, _ in results)
        record(Claim(f"diagnose-lofo-{left}", f"diagnose's primary verdict is the generating mode on >= {TARGET:.0%} "
                     f"of the {left} family, with its thresholds tuned on the other families", source="ours"),
               predicted=f">= {TARGET:.0%}", measured=f"{n_right}/{len(results)} = {n_right / len(results):.0%} "
               f"(tuned: {', '.join(f'{k} {v:g}' for k, v in setting.items())}; {score:.0%} on the others)",
               passed=n_right / len(results) >= TARGET, quick=args.quick, started=started, command=cmd,
               write=not args.no_record)
    record(Claim("diagnose-calibration", f"among left-out primary verdicts given confidence >= {CALIBRATION_LEVEL}, "
                 f"at least {CALIBRATION_TARGET:.0%} are right", source="ours"),
           predicted=f">= {CALIBRATION_TARGET:.0%}", measured=f"{sum(confident)}/{len(confident)} = {calib:.0%} "
           f"(of {len(pooled)} left-out logs, {len(confident)} at confidence >= {CALIBRATION_LEVEL})",
           passed=calib >= CALIBRATION_TARGET, quick=args.quick, started=started, command=cmd, write=not args.no_record)
    if args.no_record:
        return
    body = [SECTION, "", f"`{cmd}`: {', '.join(f'{f} {len(v)} logs' for f, v in families.items())}; "
            f"grid {', '.join(f'{k} in {TUNABLE[k][2]}' for k in TUNABLE)}, chosen by the mean accuracy on the "
            "other families. Primary verdicts without hyperparameters.", ""]
    for left, (results, setting, score, ab) in held_out.items():
        body += [f"### Left out: {left} ({accuracy(results):.0%} of {len(results)}; tuned on the others: "
                 f"{', '.join(f'{k} {v:g}' for k, v in setting.items())}, {score:.0%} there; calibration fitted "
                 f"there: a = {ab[0]:.3f}, b = {ab[1]:.3f})", "",
                 *confusion_lines(results), "", "| confidence of the primary | logs | right |", "|---|---|---|"]
        body += [f"| {b} | {n} | {acc:.0%} |" if n else f"| {b} | 0 | - |" for b, n, acc in reliability(results)]
        body.append("")
    body += ["### Reliability, all left-out verdicts pooled", "", "| confidence of the primary | logs | right |", "|---|---|---|"]
    body += [f"| {b} | {n} | {acc:.0%} |" if n else f"| {b} | 0 | - |" for b, n, acc in reliability(pooled)]
    body += ["", "Earlier runs (base seeds simulator / trainer / contextual), each on seeds fresh for it:", "",
             *[f"- {h}" for h in HISTORY]]
    body += ["", f"Fit on all {len(names)} families (shipped as diagnose's defaults): "
             f"{', '.join(f'{k} {v:g}' for k, v in grid[best_all].items())} ({overall[best_all]:.0%} of all logs), "
             f"CALIBRATION = ({ab_all[0]:.4f}, {ab_all[1]:.4f})."]
    replace_section(SECTION, "\n".join(body) + "\n")


if __name__ == "__main__":
    main()
