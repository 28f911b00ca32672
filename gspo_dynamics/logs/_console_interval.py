"""The steps of a console log whose metric dicts carry none (transformers' Trainer prints none).

    steps, interval, how = stepless_steps(text, dicts, finished, what, warnings)   # the rules below, in order
    steps = bar_steps(bars)                                   # the progress bar's step at each row, or None
    every, how = logging_interval(text, records, finished)   # (5, "logging_steps 5 x row (...)") or (None, "")

transformers redraws its (unlabelled) progress bar right after printing a row, at the step logged: where the bars
around the rows rise under one total, they are the steps. Else the rows are numbered by the logging interval k, from
`Total optimization steps = N` over the rows only in a finished log (its summary dict printed: an unfinished one has
fewer rows than it will have; where no banner gives the total, the total of the trainer's progress bar, which counts
to max_steps), else from the `epoch` column: row i's epoch is k (i + 1) / (steps per epoch), the
steps per epoch from the banner (`Num Epochs` and the total, `Num examples` over the total batch size, or a `steps
per epoch` line), accepted only where every row agrees within the precision its epoch is printed to. Else rows
are numbered 1, 2, ... A file of several runs (each begun by transformers' banner or ended by its summary dict) has
each run's steps by its own bar, else its own banner's total over its rows, else its row numbers (`_by_run`); a run
that begins afresh there (`fresh_starts`) is said to the reader, which the steps alone may not show.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from gspo_dynamics.logs._console_entry import PrintedDict
from gspo_dynamics.logs._readers import NUMBERED, ROW_NUMBERS
from gspo_dynamics.logs._runlog import to_float

TOTAL_STEPS = re.compile(r"Total (?:optimization )?steps\s*=\s*([\d,]+)")
_NUM_EPOCHS = re.compile(r"Num Epochs\s*=\s*([\d,]+)")
_NUM_EXAMPLES = re.compile(r"Num examples\s*=\s*([\d,]+)")
_TOTAL_BATCH = re.compile(r"Total (?:train )?batch size[^=\n]*=\s*([\d,]+)")
_STEPS_PER_EPOCH = re.compile(r"(?i)steps[ _]per[ _]epoch\s*[:=]\s*([\d,]+)")
EPOCH_SLACK = 0.3  # steps: an epoch printed in full gives its step to float error; this allows a trainer's rounding


def stepless_steps(text: str, dicts: list[PrintedDict], finished: bool, what: str, warnings: list[str],
                   bar_total: int | None = None, run_totals: dict | None = None) -> tuple[list[int], int | None, str]:
    """(steps, logging interval or None, how they were found) of train dicts printed without a step (`dicts`: the
    scan's entries): the progress bar's steps, else the
    logging interval's (one run), else row numbers, restarting at each run; row numbers are said in a warning.
    bar_total: the total of the trainer's progress bar (its max_steps), where the log shows one; run_totals: each
    run's banner's `Total optimization steps` (run -> N), where runs printed one."""
    by_bar = bar_steps([entry.bars for entry in dicts])
    if by_bar is not None:
        return by_bar, None, "the trainer's progress bar (its step at each printed row)"
    runs = [entry.run for entry in dicts]
    if runs[0] == runs[-1]:
        interval, axis = logging_interval(text, [entry.record for entry in dicts], finished, bar_total)
        if interval is not None:
            return [(k + 1) * interval for k in range(len(dicts))], interval, axis
        warnings.append(f"the {what} has no step numbers; {NUMBERED}")
        return list(range(1, len(dicts) + 1)), None, ""
    return _by_run(dicts, runs, finished, what, warnings, run_totals or {})


def _by_run(dicts: list[PrintedDict], runs: list, finished: bool, what: str, warnings: list[str], totals: dict
            ) -> tuple[list[int], int | None, str]:
    """(steps, the last run's logging interval where its banner gave it, how) of several runs' rows, each run's steps
    by the first rule that holds for it: its own progress bar (`bar_steps` over its rows alone: an SFT stage printed
    its rows without a bar, the GRPO run after it with one), its banner's total over its rows (`totals`: run -> its
    `Total optimization steps`, a whole multiple of its rows; the last run only in a finished log, whose rows are all
    printed), else its rows numbered 1, 2, ... (said in a warning). Audit s38b R7: an SFT cell then a GRPO cell of a
    notebook were numbered 1, 2, ... and every step 10x too small; audit s40 #9 the same with one banner only."""
    order, rows, shown = list(dict.fromkeys(runs)), Counter(runs), {}
    for entry, run in zip(dicts, runs):
        shown.setdefault(run, []).append(entry.bars)
    by_bar = {run: bar_steps(shown[run]) for run in order}
    every = {}
    for run in order:
        total, n = totals.get(run), rows[run]
        k = total // n if total and by_bar[run] is None else 0
        every[run] = k if k >= 1 and total // k == n and (run != order[-1] or finished) else None
    seen: Counter = Counter()
    steps = []
    for run in runs:
        seen[run] += 1
        steps.append(by_bar[run][seen[run] - 1] if by_bar[run] is not None else seen[run] * (every[run] or 1))
    numbered = sum(by_bar[run] is None and every[run] is None for run in order)
    if numbered == len(order):
        begun = dicts[0].begun or "each begun by transformers' banner or ended by its summary"
        warnings.append(f"the {what} has no step numbers; the rows of each of its {len(order)} runs ({begun}) were "
                        "numbered 1, 2, ...")
        return steps, None, f"{ROW_NUMBERS} within each of {len(order)} runs (no step found)"
    if numbered:
        warnings.append(f"the {what} has no step numbers in {numbered} of its {len(order)} runs (neither a progress "
                        "bar at their rows nor a banner's total over them), whose rows were numbered 1, 2, ... "
                        "within their run")  # not the end of NUMBERED: the other runs' steps are their own
    ways = [way for way, used in (("its progress bar", any(by_bar.values())),
                                  ("its banner's Total optimization steps over its rows", any(every.values())),
                                  ("row numbers", numbered)) if used]
    return steps, every[order[-1]], f"{' or '.join(ways)}, within each of {len(order)} runs"


def fresh_starts(runs: list, steps: list[int]) -> list[int]:
    """The positions (in the rows' order) where a run of the file's markers begins afresh: its first step within its
    own logging interval (`_interval` of its steps: 5 of 5, 10, ...), not a resume at a checkpoint's step."""
    by_run: dict = {}
    for run, step in zip(runs, steps):
        by_run.setdefault(run, []).append(step)
    return [k for k in range(1, len(runs)) if runs[k] != runs[k - 1] and 0 < steps[k] <= _interval(by_run[runs[k]])]


def bar_steps(bars: list[list]) -> list[int] | None:
    """The steps that the trainer's progress bar shows at each row (transformers redraws it right after printing a
    row, at the step logged; the bar before the row where none follows), or None unless they rise under one total
    (a new run may start again at or below the first step). Where the bars after the rows share no logging interval
    (their steps' greatest common divisor 1, `_interval`) and the bars before them do (k > 1: transformers logs at
    the steps global_step % logging_steps == 0), the bars before: the bar after was the next step's (a reward function's
    prints between the row and the bar's redraw). Where only the bars before rise, they: a loop that draws its bar as
    an update ends and prints the update's row after it (nano-aha-moment's `KEY METRICS`)."""
    after = _rising([after or before for before, after in bars])
    before = _rising([before or after for before, after in bars])
    if after is not None and before is not None and _interval(after) == 1 and _interval(before) > 1:
        return before
    return after if after is not None else before


def _interval(steps: list[int]) -> int:
    """The greatest common divisor of the logged steps, a first step of 1 left out (transformers' logging_first_step
    logs step 1 before the interval's multiples)."""
    return math.gcd(*(steps[1:] if len(steps) > 1 and steps[0] == 1 else steps))


def _rising(shown: list) -> list[int] | None:
    """The steps of `shown` ((step, total) per row) where they rise under one total (a new run may start again at or
    below the first step), else None."""
    if not shown or None in shown or shown[0][0] < 1:
        return None
    first = shown[0][0]
    for (a, total_a), (b, total_b) in zip(shown, shown[1:]):
        if not (b > a and total_b == total_a or b < a and b <= first):
            return None
    return [n for n, _ in shown]


def _banner_int(pattern: re.Pattern, text: str) -> int | None:
    match = pattern.search(text)
    digits = match.group(1).replace(",", "") if match else ""
    return int(digits) if digits else None


def logging_interval(text: str, records: list[dict], finished: bool, bar_total: int | None = None
                     ) -> tuple[int | None, str]:
    """The logging interval of dicts printed without steps and how it was found: the total step count (the banner's
    `Total optimization steps`, else the total of the trainer's progress bar, `bar_total`) over the rows in a
    finished log, else the epoch column's increment times the banner's steps per epoch; (None, "") when neither
    holds."""
    n = len(records)
    total = _banner_int(TOTAL_STEPS, text)
    for steps, source in ((total, "steps"), (bar_total, "steps (its progress bar's total)")):
        if finished and steps:
            every = steps // n
            if every >= 1 and steps // every == n:
                return every, f"logging_steps {every} x row (the finished run's {steps} {source} over its {n} rows)"
    epochs = [record.get("epoch") for record in records]
    values = [to_float(e) for e in epochs]
    if n < 2 or any(v is None or not math.isfinite(v) for v in values) or values[-1] <= values[0]:
        return None, ""
    for per_epoch in _steps_per_epoch(text, total):
        every = _epoch_interval(epochs, values, per_epoch)
        if every is not None:
            return every, f"logging_steps {every} x row (the epoch column at {per_epoch} steps per epoch)"
    return None, ""


def _steps_per_epoch(text: str, total: int | None) -> list[int]:
    """Candidates for the optimizer steps in one epoch, from the banner: a `steps per epoch` line, the total over
    `Num Epochs`, `Num examples` over the total batch size (rounded down and up)."""
    candidates = []
    explicit, epochs = _banner_int(_STEPS_PER_EPOCH, text), _banner_int(_NUM_EPOCHS, text)
    examples, batch = _banner_int(_NUM_EXAMPLES, text), _banner_int(_TOTAL_BATCH, text)
    if explicit:
        candidates.append(explicit)
    if total and epochs and total % epochs == 0:
        candidates.append(total // epochs)
    if examples and batch:
        candidates += [examples // batch, -(-examples // batch)]
    return [c for c in dict.fromkeys(candidates) if c >= 1]


def _epoch_interval(epochs: list, values: list[float], per_epoch: int) -> int | None:
    """k when every row i's epoch is step k (i + 1) over `per_epoch`, within the epoch's printed precision."""
    n = len(values)
    every = round((values[-1] - values[0]) / (n - 1) * per_epoch)
    if every < 1:
        return None
    for i, (printed, value) in enumerate(zip(epochs, values)):
        slack = 0.5 * _last_digit(printed) * per_epoch + EPOCH_SLACK
        if abs(value * per_epoch - (i + 1) * every) > slack:
            return None
    return every


def _last_digit(value: object) -> float:
    """The unit of a printed number's last digit (0.107 -> 0.001): how far it may be from the value it rounds."""
    text = value.strip() if isinstance(value, str) else repr(float(value))
    mantissa, _, exponent = text.lower().partition("e")
    try:
        return 10.0 ** (int(exponent or 0) - len(mantissa.partition(".")[2]))
    except ValueError:
        return 1.0
