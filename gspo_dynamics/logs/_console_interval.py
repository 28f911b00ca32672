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
are numbered 1, 2, ... within each run (a run begun by transformers' banner or ended by its summary dict).
"""

from __future__ import annotations

import math
import re
from collections import Counter

from gspo_dynamics.logs._readers import NUMBERED, ROW_NUMBERS
from gspo_dynamics.logs._runlog import to_float

_TOTAL_STEPS = re.compile(r"Total (?:optimization )?steps\s*=\s*([\d,]+)")
_NUM_EPOCHS = re.compile(r"Num Epochs\s*=\s*([\d,]+)")
_NUM_EXAMPLES = re.compile(r"Num examples\s*=\s*([\d,]+)")
_TOTAL_BATCH = re.compile(r"Total (?:train )?batch size[^=\n]*=\s*([\d,]+)")
_STEPS_PER_EPOCH = re.compile(r"(?i)steps[ _]per[ _]epoch\s*[:=]\s*([\d,]+)")
EPOCH_SLACK = 0.3  # steps: an epoch printed in full gives its step to float error; this allows a trainer's rounding


def stepless_steps(text: str, dicts: list[tuple], finished: bool, what: str, warnings: list[str],
                   bar_total: int | None = None) -> tuple[list[int], int | None, str]:
    """(steps, logging interval or None, how they were found) of train dicts printed without a step (`dicts`: the
    scan's entries, (step, record, is eval, [bar before, bar after], run)): the progress bar's steps, else the
    logging interval's (one run), else row numbers, restarting at each run; row numbers are said in a warning.
    bar_total: the total of the trainer's progress bar (its max_steps), where the log shows one."""
    by_bar = bar_steps([entry[3] for entry in dicts])
    if by_bar is not None:
        return by_bar, None, "the trainer's progress bar (its step at each printed row)"
    runs = [entry[4] for entry in dicts]
    if runs[0] == runs[-1]:
        interval, axis = logging_interval(text, [entry[1] for entry in dicts], finished, bar_total)
        if interval is not None:
            return [(k + 1) * interval for k in range(len(dicts))], interval, axis
        warnings.append(f"the {what} has no step numbers; {NUMBERED}")
        return list(range(1, len(dicts) + 1)), None, ""
    order, count = list(dict.fromkeys(runs)), Counter(runs)
    every = run_intervals(text, [count[run] for run in order], finished)
    if every is not None:  # one banner per run, each run's total over its own rows
        index = {run: i for i, run in enumerate(order)}
        seen: Counter = Counter()
        steps = []
        for run in runs:
            seen[run] += 1
            steps.append(seen[run] * every[index[run]])
        return steps, every[index[runs[-1]]], (f"logging_steps x row within each of {len(count)} runs (each run's "
                                               "banner's Total optimization steps over its rows)")
    steps, count = [], Counter()
    for run in runs:
        count[run] += 1
        steps.append(count[run])
    begun = dicts[0][5] if len(dicts[0]) > 5 else "each begun by transformers' banner or ended by its summary"
    warnings.append(f"the {what} has no step numbers; the rows of each of its {len(count)} runs ({begun}) were "
                    "numbered 1, 2, ...")
    return steps, None, f"{ROW_NUMBERS} within each of {len(count)} runs (no step found)"


def run_intervals(text: str, rows: list[int], finished: bool) -> list[int] | None:
    """The logging interval of each of several runs printed one after another (`rows`: each run's row count, in
    order), where the text holds one `Total optimization steps = N` banner per run, in the same order, and each
    finished run's N is its rows times a whole interval (the last run only where the log is finished, as
    `logging_interval` reads one run); None otherwise (audit s38b R7: an SFT cell then a GRPO cell of a notebook, each
    with its banner, were numbered 1, 2, ... and every step 10x too small)."""
    totals = [int(digits) for m in _TOTAL_STEPS.finditer(text) if (digits := m.group(1).replace(",", ""))]
    if len(totals) != len(rows) or not finished:
        return None
    every = [total // n if n else 0 for total, n in zip(totals, rows)]
    if any(k < 1 or total // k != n for k, total, n in zip(every, totals, rows)):
        return None
    return every


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
    total = _banner_int(_TOTAL_STEPS, text)
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
