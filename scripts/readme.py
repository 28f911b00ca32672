"""Regenerate the output shown in README.md, or check that it holds (`tests/test_readme.py`).

Every ```console block of the README holds `$ command` lines, each followed by that command's output. This
script runs the commands in order, in the repository root with the virtual environment's `gspo-dynamics` first
on PATH, and writes each one's standard output under it: the README shows nothing copied by hand. The runs the
commands make go to out/ (removed first, so a rerun starts afresh). A command that reads a file absent here (the
real logs of other people's runs beside the checkout, ../shared/data/real_logs) keeps its output as it is, and
says so.

`--check` asks what holds on any CPU with the pinned torch, not the last digits of one machine's arithmetic. A
training run's floating-point sums differ between CPUs (another instruction set, another order of summing), and
GRPO's sampling turns the smallest difference into another draw of the same run; so the output of the README's
training run, and of every command that reads its log, is checked as a draw:
- every command exits 0;
- its lines carry the shown lines' labels (`verdict`, `change:`, `forecast:`, ...) in the same order, but for
  the OPTIONAL ones (`finding`: a draw may show more findings, or fewer; `lr margin`: a note the draw may not give);
- the answer lines (ANSWERS) say the shown words and keys, numbers aside: the verdict itself (its words before
  the evidence in brackets) and what to change;
- a line whose words are the shown ones has its numbers within a factor RUN_FACTOR of the shown ones, or
  RUN_ATOL apart (a reward, a share or a confidence near 0), an interval's edge also where its distance from the
  interval's value is (INTERVAL: the edge moves with the value); a line other than an answer may word its detail
  otherwise (which finding a draw shows, whether its interval is narrower than the reward's reach).
A command that reads only files that are the same on every machine (a config, a shipped or real log) is checked
line for line: the same words, numbers within EXACT_RTOL (the last printed digit's rounding).

`--draws SEED:THREADS,...` checks the README's run as other machines would draw it: the run again at another seed
or thread count (into out/readme-draw), and each command that reads it held to the README's output as above. The
showcase is chosen so that its verdicts hold on such draws (tests/test_readme.py, slow): a verdict that flips
between two machines is one too close to its threshold to show.

    python scripts/readme.py            rewrite README.md
    python scripts/readme.py --check    exit 1 naming each line that does not hold
    python scripts/readme.py --draws 1:1,0:2    the same for the run drawn at seed 1 and on 2 threads
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BLOCK = re.compile(r"^```console\n(.*?)^```$", re.S | re.M)
RUNS = ROOT / "out" / "quickstart"  # where the README's train command writes (removed before a rerun)
DRAW = "out/readme-draw"  # where --draws writes its runs
TIMEOUT_S = 300
NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
ANSWERS = ("verdict", "change", "do")  # the labels of the lines that answer: their words must be the shown ones
# labels of lines a draw may show more or fewer of: findings, and a safe verdict's `lr margin:` note (given where the
# draw's pilot identifies the linear model's bound, which the verdict does not rest on)
OPTIONAL = ("finding", "lr margin:")  # each the start of such a line
# a number from a training run's draw: within RUN_FACTOR of the shown one, or RUN_ATOL apart (rewards, shares and
# confidences live in [0, 1]). Set from the spread of five draws of the quick start's run (seeds 0-3 on one thread,
# seed 0 on two; 2026-12-02), not fitted to pass: the largest ratio between two lines of the same words was 1.8x (an
# end-reward forecast of 0.515 against 0.928); RUN_ATOL covers numbers near 0, where a ratio says little (a zero-std
# share of 0.05 against 0.17)
RUN_FACTOR = 2.0
RUN_ATOL = 0.15
EXACT_RTOL = 1e-3  # a number from files that are the same on every machine: as shown, to its rounding
# a forecast's "VALUE, 90% interval [LO, HI]": an edge is the value less or plus the band's half-width, so it moves
# with the value by as much as the value moves; it holds where it is near the shown edge, or where its distance from
# its value is near the shown one (the band's width holds; its place is the value's, checked on its own)
INTERVAL = re.compile(rf"({NUMBER.pattern}),? \d+% interval \[({NUMBER.pattern}), ({NUMBER.pattern})\]")


def shown(text: str) -> list[str]:
    """Every `$ command` of the README's console blocks with the output shown under it, in order."""
    return [chunk for block in BLOCK.findall(text) for chunk in _chunks(block) if chunk.startswith("$ ")]


def commands(text: str) -> list[str]:
    """Every `$ command` of the README's console blocks, in order."""
    return [chunk.partition("\n")[0][2:] for chunk in shown(text)]


def _chunks(body: str) -> list[str]:
    """A console block cut before each `$ command` line (a first piece without one: text before it)."""
    return re.split(r"^(?=\$ )", body, flags=re.M)


def _absent_input(command: str) -> str | None:
    """The first path the command names under ../ that is not there (a real log not beside this checkout)."""
    for word in shlex.split(command):
        if word.startswith("../") and not (ROOT / word).exists():
            return word
    return None


def _run(command: str, threads: int | None = None) -> str:
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    if threads is not None:
        env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    proc = subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT_S)
    if proc.returncode != 0:
        raise SystemExit(f"readme: `{command}` exited {proc.returncode}:\n{proc.stderr.strip()}")
    return proc.stdout.rstrip("\n")


def _block(body: str, skipped: list[str]) -> str:
    """The console block with each command's output regenerated."""
    out: list[str] = []
    for chunk in _chunks(body):
        if not chunk.startswith("$ "):  # text before the block's first command
            if chunk.strip():
                out.append(chunk.rstrip("\n"))
            continue
        command = chunk.partition("\n")[0]
        missing = _absent_input(command[2:])
        if missing is not None:
            skipped.append(f"{command[2:]} (no {missing})")
            out.append(chunk.rstrip("\n"))
            continue
        output = _run(command[2:])
        out.append(command + ("\n" + output if output else ""))
    return "\n".join(out) + "\n"


def reads_the_run(command: str) -> bool:
    """Whether `command` is the README's training run or reads its log (a path under out/ other than the TRL
    config it writes, grpo_config.json, which its flags fix on every machine)."""
    words = shlex.split(command)
    return words[1:2] == ["train"] or any(w.startswith("out/") and not w.endswith("grpo_config.json") for w in words)


def _label(line: str) -> str:
    """A line's label: its first word, without a trailing colon."""
    return (line.split() or [""])[0].rstrip(":")


def _labelled(text: str) -> list[tuple[str, str]]:
    """(label, line) of each line but the blank and the OPTIONAL ones."""
    return [(_label(line), line) for line in filter(str.strip, text.splitlines()) if not line.lstrip().startswith(OPTIONAL)]


def _words(label: str, line: str) -> str:
    """What of `line` must read as shown: its words, numbers aside; of a verdict, the verdict itself (the words
    before its evidence in brackets)."""
    skeleton = NUMBER.sub("#", line)
    return skeleton.partition(" (")[0] if label == "verdict" else skeleton


def _run_near(a: float, b: float) -> bool:
    """Whether two numbers of a run's draws agree: within RUN_FACTOR, or RUN_ATOL apart."""
    return abs(a - b) <= RUN_ATOL or (a * b > 0 and max(abs(a), abs(b)) <= RUN_FACTOR * min(abs(a), abs(b)))


def _widths(line: str) -> dict[int, float]:
    """{where an INTERVAL's edge starts in `line`: its distance from the interval's value}."""
    return {m.start(i): abs(float(m.group(i)) - float(m.group(1))) for m in INTERVAL.finditer(line) for i in (2, 3)}


def _numbers_hold(shown: str, printed: str, run: bool) -> bool:
    """Whether each number of `printed` is within the tolerance of the same-placed number of `shown` (the two
    lines' words are the same); a draw's interval edge also where its distance from its value is (INTERVAL)."""
    width_a, width_b = _widths(shown), _widths(printed)
    for ma, mb in zip(NUMBER.finditer(shown), NUMBER.finditer(printed)):
        a, b = float(ma.group()), float(mb.group())
        if run:
            near = _run_near(a, b) or (ma.start() in width_a and mb.start() in width_b
                                       and _run_near(width_a[ma.start()], width_b[mb.start()]))
        else:
            near = abs(a - b) <= EXACT_RTOL * max(abs(a), abs(b))
        if not near:
            return False
    return True


def disagreements(command: str, shown: str, printed: str) -> list[str]:
    """What in `printed` does not hold against the `shown` output of `command` (module docstring), one
    sentence each; empty where it holds."""
    run = reads_the_run(command)
    want, got = _labelled(shown), _labelled(printed)
    if [label for label, _ in want] != [label for label, _ in got]:
        return [f"the lines' labels are {[l for l, _ in got]}, the README shows {[l for l, _ in want]}"]
    problems = []
    for (label, a), (_, b) in zip(want, got):
        same_words = NUMBER.sub("#", a) == NUMBER.sub("#", b)
        if (label in ANSWERS and _words(label, a) != _words(label, b)) or (not same_words and not run):
            problems.append(f"{b!r} where the README shows {a!r}")
        elif same_words and not _numbers_hold(a, b, run):
            problems.append(f"{b!r}: its numbers are not within the tolerance of the README's {a!r}")
    return problems


def check(text: str) -> tuple[list[str], list[str]]:
    """(what does not hold, one sentence each; the commands skipped) of every command the README shows."""
    shutil.rmtree(RUNS, ignore_errors=True)
    problems: list[str] = []
    skipped: list[str] = []
    for chunk in shown(text):
        command, _, output = chunk.partition("\n")
        command = command[2:]
        missing = _absent_input(command)
        if missing is not None:
            skipped.append(f"{command} (no {missing})")
            continue
        problems += [f"`{command}`: {p}" for p in disagreements(command, output.rstrip("\n"), _run(command))]
    return problems, skipped


def check_draw(text: str, seed: int, threads: int) -> list[str]:
    """What does not hold of the README's output for its run drawn at `seed` on `threads` threads (into DRAW),
    one sentence each, for every command that reads the run."""
    shutil.rmtree(ROOT / DRAW, ignore_errors=True)
    problems: list[str] = []
    for chunk in shown(text):
        command, _, output = chunk.partition("\n")
        command = command[2:]
        if not reads_the_run(command) and "out/quickstart/" not in command:  # unchanged by a draw
            continue
        drawn = command.replace("out/quickstart", DRAW) + (f" --seed {seed}" if shlex.split(command)[1] == "train" else "")
        problems += [f"seed {seed}, {threads} thread(s): `{drawn}`: {p}"
                     for p in disagreements(command, output.rstrip("\n"), _run(drawn, threads))]
    return problems


def regenerate(text: str) -> tuple[str, list[str]]:
    """(the README with every command's output as the command prints it now, the commands skipped)."""
    shutil.rmtree(RUNS, ignore_errors=True)
    skipped: list[str] = []
    return BLOCK.sub(lambda m: "```console\n" + _block(m.group(1), skipped) + "```", text), skipped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="only check that what the README shows holds; exit 1 naming each line that does not")
    parser.add_argument("--draws", metavar="SEED:THREADS,...",
                        help="check the README's run drawn at these seeds and thread counts instead")
    args = parser.parse_args(argv)
    text = README.read_text(encoding="utf-8")
    if args.draws:
        draws = [tuple(map(int, item.split(":"))) for item in args.draws.split(",")]
        problems = [p for seed, threads in draws for p in check_draw(text, seed, threads)]
        print("\n".join(problems))
        return 1 if problems else 0
    if args.check:
        problems, skipped = check(text)
        for command in skipped:
            print(f"readme: not checked (its input is absent): `{command}`", file=sys.stderr)
        print("\n".join(problems))
        return 1 if problems else 0
    new, skipped = regenerate(text)
    for command in skipped:
        print(f"readme: kept the shown output of `{command}`", file=sys.stderr)
    README.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
