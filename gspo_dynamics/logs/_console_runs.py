"""The runs of a console log whose printed rows carry no step, told by a message that counts them.

A hand-written loop that prints no step often prints a message of its own before each step's row, with a number
that counts the steps: `rollout batch 7 generated, length: 256`. Where several runs are appended to one file, that
number starts again with each run; numbered by position, the runs' rows would read as one curve (a restart read as
a recovery, batches of 32 and of 256 samples mixed). A message is such a counter when

  - its template (the message after any logger prefix, each number made `#`) is printed at least MIN_MARKS times
    among the few lines right before the rows (`_console._RECENT`: a counter's message comes right before its row,
    maybe with a debug line between; a prompt or an answer further back is not read), and one of its numbers, c,
    goes from each printing to the next either up by one constant d > 0 or back to its first value c_0
    (`c_{k+1} = c_k + d` or `c_{k+1} = c_0`), returning to c_0 at least once after training rows;
  - it counts the training rows: at least SHARE of them are the first training row after a printing of it.

Each return to c_0 after a training row begins a run (a return before any row, a run that printed nothing, begins
none); the runs' rows are then numbered 1, 2, ... each (`_console_interval.stepless_steps`). transformers' own run
markers (its banner, its summary dict), where a log has them, are read instead.
"""

from __future__ import annotations

import re

MIN_MARKS = 3  # printings of a counter message: two of them rises, as `_counters` asks of a counter column
SHARE = 0.8  # of the training rows that follow a printing of the counter message
MAX_MARKS = 200_000  # messages kept per log: past them the log is read without this rule (no memory without bound)
_MAX_MESSAGE = 160  # characters: a longer line is text (a prompt, an answer), no loop's counter message
_DIGITS = re.compile(r"\d+")
_WORDS = re.compile(r"[A-Za-z]{2,}")


def mark(marks: dict, message: str, rows: int) -> None:
    """Keep a non-metric message with a number (`marks`: template -> [(training rows before it, its numbers)])."""
    if len(message) > _MAX_MESSAGE or _WORDS.search(message) is None or marks.get(None, 0) >= MAX_MARKS:
        return
    numbers = _DIGITS.findall(message)
    if not numbers or len(numbers) > 3:
        return
    marks.setdefault(_DIGITS.sub("#", message), []).append((rows, tuple(map(int, numbers))))
    marks[None] = marks.get(None, 0) + 1


def _starts(printed: list[tuple[int, tuple]], at: int) -> list[int] | None:
    """The training-row positions at which runs begin by the `at`-th number of a message's printings, or None where
    that number is no counter of the rows (the module docstring)."""
    values = [numbers[at] for _, numbers in printed]
    rises = {b - a for a, b in zip(values, values[1:]) if b != values[0]}
    if len(rises) != 1 or next(iter(rises)) <= 0:
        return None
    starts, seen = [], 0  # training rows before each printing; rows seen when the last run began
    for rows, numbers in printed:
        if numbers[at] == values[0] and rows > seen:
            starts.append(rows)
            seen = rows
    return starts


def counter_runs(marks: dict, n_rows: int) -> tuple[list[int], str] | None:
    """(the run of each of the `n_rows` training rows, the counter's template) where a message counts them and
    starts again (the module docstring), else None."""
    found = None
    for template, printed in marks.items():
        if template is None or len(printed) < MIN_MARKS or n_rows < MIN_MARKS:
            continue
        followed = len({rows for rows, _ in printed if rows < n_rows})  # rows that are the first after a printing
        if followed < SHARE * n_rows:
            continue
        for at in range(len(printed[0][1])):
            if any(len(numbers) <= at for _, numbers in printed):
                break
            starts = _starts(printed, at)
            if starts and (found is None or len(starts) > len(found[0])):
                found = (starts, template)
    if found is None:
        return None
    starts, template = found
    runs, run = [], 0
    for row in range(n_rows):
        while run < len(starts) and starts[run] <= row:
            run += 1
        runs.append(run)
    return runs, template
