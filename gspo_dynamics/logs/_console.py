"""Console output of any trainer (what a job prints to stdout) read into raw rows `(step, {key: value})`.

A line is a metric line in one of two forms, after any prefix (a timestamp, `[rank0]:`, `INFO:`, a logger name, a
Ray `(TaskRunner pid=7)`), with ANSI colours removed and tqdm's carriage-return fragments split into lines:

  dict      a printed Python or JSON dict holding a metric-like key: `{'loss': 0.1, 'reward': '0.5', 'kl': nan}`;
            values may be `nan`, `inf`, `-inf`, `tensor(0.3, device='cuda:0')`, `np.float64(0.2)` or strings
  key list  `key: value` / `key=value` pairs split by `|`, `,`, ` - `, `;` or spaces, with a step counter
            (`Step 12/200 | reward: 0.31`, `[step 5/100] reward=0.4`, `it 10 reward 0.3 loss 0.2`, verl's
            `step:N - key:value - ...`) or at least two numeric pairs, one of them a metric's
            (`2026-01-01 12:00:00 INFO step=3 mean_reward=0.5`)
  both      `key: value` pairs before the dicts of their line (`rl_loss: 0.01, token_entropy: 0.8, reward_data:
            {...}, metadata: {...}`): the pairs and every dict of mostly numbers are one row

A step counter is `step N`, `Step N/M`, `[step N/M]`, `global_step=N`, `iter N`, `it N`, `update N`, `Episode N`,
`Epoch e Step N`, or `Epoch:[e/E](N/M)` (step (e-1) M + N). A line holding only a counter (after a logger's prefix
ending in its level word, `... - INFO - `) gives its step to the metric lines below it. A header, a message ending in
`:` (`Iteration 3 metrics:`), opens a block: the `key: value` lines below it, one a line, are one row at the header's
step (else the current one), an evaluation row where the header names one (`Validation results (iteration 3):`,
its keys read as `eval/<key>`); the first other line ends it. The trainer's progress bar after the row on its line
(`{...}  5%|▌ | 5/100 [...]`) is the bar drawn after that row; a `key: value` row there without a counter takes the
bar's step. Lines are first made whole (`_console_lines`: a dict wrapped over lines joined, a box-drawn table made a
dict). A logged `nan`/`inf` is kept as a non-finite float; a `None`/`null` is a missing value. Anything else
(banners, warnings, `Total optimization steps = 1,000`, tables, config dumps) is not a metric line. Where a log has
both forms, the dicts are read where enough of them hold a reward to analyse, else the form with more lines holding a
reward, else the more frequent one (a TRL log's metric dicts, not the debug prints or the vLLM config line between
them). This module finds the metric lines (`scan_console`); `_console_rows` makes them rows.

Dicts without a step (transformers' Trainer prints none) take the step its progress bar shows at each, else are
numbered by the logging interval: from `Total optimization steps = N` only in a finished log (its summary dict
`train_runtime` printed), else from the `epoch` column and the banner's steps per epoch, else 1, 2, ... with a
warning (`_console_interval.py`), within each run where a message printed before each row counts them and starts
again (`_console_runs.py`: runs appended to one file). Eval dicts (`eval_*` keys) take the step of
the train row before them; one before any train row takes step 0 (an evaluation before training, or, in a piece of a
growing log, the last step of the piece before: `_follow._number_on`).
"""

from __future__ import annotations

import re
from collections import Counter, deque
from dataclasses import dataclass, field

from gspo_dynamics.logs._algorithms import is_summary_row
from gspo_dynamics.logs._console_entry import PrintedDict
from gspo_dynamics.logs._console_interval import TOTAL_STEPS
from gspo_dynamics.logs._console_lines import logical_lines
from gspo_dynamics.logs._console_pairs import NUM, bare_counter, counter, epoch_of, pairs, spaced_pairs
from gspo_dynamics.logs._console_runs import mark
from gspo_dynamics.logs._readers import STEP_KEYS, _flatten, _loads
from gspo_dynamics.logs._runlog import to_step

try:  # a dependency, but optional at run time (as in `_readers._loads`)
    import orjson as _orjson
except ImportError:  # pragma: no cover
    _orjson = None

_MAX_LINE = 1_000_000  # longer "lines" are binary junk, not log rows
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_RAY_PREFIX = re.compile(r"^\s*\([\w.:-]+ pid=\d+(?:, ip=[\d.]+)?\)\s*")
# tensor(0.3, device='cuda:0'), np.float64(0.2), float('nan'): the number inside.
_WRAPPER = re.compile(r"\b(?:(?:torch\.)?tensor|(?:np|numpy)\.(?:float|int)\d*|float|array)\(\s*(['\"]?)([^,()'\"]*)\1"
                      r"\s*(?:,[^()]*)?\)")
_DICT_START = re.compile(r"\{\s*['\"]")
_DICT_PAIR = re.compile(r"""(?:'([^'\n]{1,200})'|"([^"\n]{1,200})")\s*:\s*(?:'([^'\n]*)'|"([^"\n]*)"|"""
                        r"(" + NUM + r"|None|null|True|False|true|false)(?=\s*[,}]))")
_NUMBER_STARTS = frozenset("-+.0123456789nNiI")  # how a number written as a string begins ('9.8e-06', 'nan')
_STEP_SET = frozenset(STEP_KEYS)
_METRIC_WORD = re.compile(r"(?i)reward|loss|kl|entrop|grad|learning_rate|\blr\b|score|acc|clip|length|return|advan"
                          r"|ratio|std|mean|eval|val")
_EVAL_KEY = re.compile(r"(?i)^(?:eval|val|test|validation)[_/\-]")
_LETTERS = re.compile(r"[A-Za-z]{2,}")
_BAR = re.compile(r"\s*\d{1,3}%\|[^|\n]*\|\s*(\d+)/(\d+)\s*\[")  # `  5%|▌    | 5/100 [26:14<8:17:55, ...]`
_BAR_AFTER = re.compile(r"\s\d{1,3}%\|[^|\n]*\|\s*(\d+)/(\d+)\s*\[")  # the same bar after the text of its line
# A logger's prefix (timestamp, logger name, level): the message is what follows the level word.
_LOG_PREFIX = re.compile(r"^.{0,160}?\b(?:INFO|WARNING|WARN|DEBUG|ERROR|CRITICAL)\b(?::[\w.]*:)?[\s\-:|\]]*")
_EVAL_WORD = re.compile(r"(?i)\b(?:eval|evaluation|validation|valid|val|test)\b")
_MAX_HEADER = 120  # characters of a block's header message
_DIGIT = re.compile(r"\d")
_RECENT = 4  # lines before a printed dict read for a counter's message (`rollout batch 3 generated`, then a debug line)
_MAX_MESSAGE = 400  # characters of such a line (a longer one is text: a prompt, an answer)
_VERL_HINT = re.compile(r"step:\d+ - \S+:")
# A line that may be a metric line, searched for past the first window: verl's, a printed dict's start, a counter.
_HINT = re.compile(r"step:\d+ - \S+:|\{\s*['\"][^'\"\n]{1,200}['\"]\s*:\s*[-+\d'\"nNi]"
                   r"|(?i:\bstep\b|\biter\b)\s*[:=]?\s*\[?\d")
DETECT_CHARS = 200_000  # how much of a log detection reads at once
_MAX_WINDOWS = 20  # windows read past the first before a log is said to hold no metric line


@dataclass
class _Scan:
    """The metric lines of a console text, in the file's order, and what the reading of their steps needs."""

    dicts: list[PrintedDict] = field(default_factory=list)
    pairs: list[tuple[int | None, dict, bool]] = field(default_factory=list)  # (step or None, record, an eval row)
    finished: bool = False  # a summary dict (train_runtime) was printed
    run: int = 0  # runs begun before this line: transformers' banner or summary dict after metric dicts
    in_run: int = 0  # metric dicts since the run began
    verl: int = 0  # verl `step:N - key:value` lines
    python_dicts: int = 0  # dicts printed by Python (single quotes), not JSON
    memo: dict = field(default_factory=dict)  # keys -> `_kind_of`
    keys: dict = field(default_factory=dict)  # the text between two pairs -> the second's key
    bar: tuple[int, int] | None = None  # the last progress bar without a label: (n, total)
    bar_totals: Counter = field(default_factory=Counter)  # how often a bar without a label showed each total
    block: tuple[int | None, bool, dict] | None = None  # the block under a header line: (step, an eval block, record)
    awaiting: list = field(default_factory=list)  # the [before, after] bars of dicts printed since it
    marks: dict = field(default_factory=dict)  # messages with a number that may count the rows (`_console_runs`)
    recent: deque = field(default_factory=lambda: deque(maxlen=_RECENT))  # the last lines that are no metric line
    totals: dict = field(default_factory=dict)  # run -> its banner's total steps (`Total optimization steps = N`)
    bare: list = field(default_factory=list)  # indices into `pairs` whose step is a bare `[n/N]` (`bare_counter`)


def _number(token: str) -> object:
    if token in ("None", "null"):
        return None
    if token in ("True", "true", "False", "false"):
        return token in ("True", "true")
    return float(token)


def _dict_record(segment: str) -> dict | None:
    """The {key: value} of one printed dict (nested JSON flattened to a/b keys; a None value left out); None if it is
    not one."""
    if segment.count("{") > 1:  # nested: JSON (verl's file logger after a prefix: {"step": N, "data": {...}})
        obj = _loads(segment)
        if isinstance(obj, dict):
            if isinstance(obj.get("data"), dict):
                obj = {**{k: v for k, v in obj.items() if k != "data"}, **obj["data"]}
            return _flatten(obj)
    # The fast path: a Python dict of numbers and plain strings is JSON once its quotes are.
    obj = _json(segment if '"' in segment else segment.replace("'", '"'))
    if isinstance(obj, dict):
        return {k: v for k, v in obj.items() if v is not None} if None in obj.values() else obj
    record = {}
    for k1, k2, s1, s2, token in _DICT_PAIR.findall(segment):
        value = _number(token) if token else s1 or s2
        if value is not None:
            record[k1 or k2] = value
    return record or None


def _json(text: str):
    if _orjson is None:
        return _loads(text)
    try:
        return _orjson.loads(text)
    except _orjson.JSONDecodeError:
        return None


def _dicts(line: str, start: int):
    """The printed dicts of a line from `start` (a nested one spans to the line's last `}`)."""
    while True:
        end = line.find("}", start)
        if end < 0:
            return
        if line.find("{", start + 1, end) >= 0:
            end = line.rfind("}")
        record = _dict_record(line[start:end + 1])
        if record is not None:
            yield record, line[start + 1:start + 8].lstrip()[:1] == "'"
        match = _DICT_START.search(line, end + 1)
        if match is None:
            return
        start = match.start()


def _kind_of(record: dict, memo: dict) -> tuple[bool, bool, bool]:
    """(a metric row, an eval row, the summary row) for a row of these keys, decided by the first row of them (a log
    repeats its keys): a metric row has a metric's key and mostly numbers."""
    keys = tuple(record)
    kind = memo.get(keys)
    if kind is None:
        named = [k for k in keys if k not in ("epoch", "step")]
        kind = memo[keys] = (any(_METRIC_WORD.search(k) for k in keys) and _mostly_numbers(record),
                             bool(named) and all(_EVAL_KEY.match(k) for k in named), is_summary_row(keys))
    return kind


def _mostly_numbers(record: dict) -> bool:
    """More than half the values are numbers or written as numbers (a config dict printed among the metric dicts,
    `{'xla': False, 'backend': 'inductor', ...}`, is not)."""
    numbers = sum(1 for v in record.values() if (type(v) is float or type(v) is int)
                  or (type(v) is str and v[:1] in _NUMBER_STARTS))
    return 2 * numbers > len(record)


def _pairs_before(text: str, counter_name: str | None, scan: _Scan) -> dict:
    """The `key: value` pairs printed before a dict on its line (a loop's `rl_loss: x, token_entropy: y, reward_data:
    {...}`), its step counter left out; {} where there are none."""
    if ":" not in text and "=" not in text:
        return {}
    found = pairs(text, scan.keys)
    if counter_name is not None:
        found.pop(counter_name, None)
    return found


def _line_records(line: str, start: int, before: dict):
    """(record, printed by Python) of each dict of a line from `start`; where `key: value` pairs come before them
    (`rl_loss: 0.1, token_entropy: 0.8, reward_data: {...}, metadata: {...}`: a loop printing one step's readings,
    its batch's totals and more as named parts of one message), the pairs and every dict of mostly numbers are one
    record, a key printed twice read where it is first."""
    if not before:
        yield from _dicts(line, start)
        return
    record, python = dict(before), False
    for part, by_python in _dicts(line, start):
        if _mostly_numbers(part):
            record.update((key, value) for key, value in part.items() if key not in record)
            python = python or by_python
    yield record, python


def _scan_line(line: str, scan: _Scan, current: int | None, step_key: str | None) -> int | None:
    """Add the line's metric rows to `scan`; the step that the lines below take (a counter-only line sets it)."""
    if "(" in line:
        line = _WRAPPER.sub(r"\2", _RAY_PREFIX.sub("", line))
    if "%|" in line:
        if (bar := _BAR.match(line)) is not None:  # tqdm's bar (the trainer's: no label before it)
            _bar_seen(scan, bar)
            current = None  # a progress bar is newer news of the step than a counter line above it
            close = line.find("]", bar.end())
            if close >= 0 and line[close + 1:].strip():  # a row printed after the bar, on its line: the row's text
                line = line[close + 1:]
        elif (bar := _BAR_AFTER.search(line)) is not None:  # a bar after a metric row: drawn after the row
            return _before_bar(line[:bar.start()], bar, scan, current, step_key)
    if scan.in_run and "***** Running training *****" in line:  # transformers starts another run
        scan.run, scan.in_run = scan.run + 1, 0
    if "Total" in line and (total := TOTAL_STEPS.search(line)) is not None and total.group(1).strip(","):
        scan.totals[scan.run + (scan.in_run > 0)] = int(total.group(1).replace(",", ""))  # after rows: the next run's
    brace = line.find("{")
    match = _DICT_START.search(line, brace) if brace >= 0 else None
    if match is not None:
        _close_block(scan)
        step, name, _, _ = counter(line[:match.start()]) if match.start() else (None, None, 0, 0)
        before = _pairs_before(line[:match.start()], name, scan)
        for record, python in _line_records(line, match.start(), before):
            metric, is_eval, summary = _kind_of(record, scan.memo)
            if summary:
                scan.finished = True
                scan.run, scan.in_run = scan.run + (scan.in_run > 0), 0
            elif metric:
                if scan.recent:
                    _messages_before(scan)
                bars = [scan.bar, None]
                scan.dicts.append(PrintedDict(step if step is not None else current, record, is_eval, bars, scan.run))
                scan.in_run += 1
                scan.awaiting.append(bars)
                scan.python_dicts += python
        return current if step is None else None  # a line with its own step ends a counter line's block
    has_pair = ":" in line or "=" in line
    step, counter_name, start, end = counter(line)
    bare = step is None and current is None and "[" in line[:8]
    if bare:
        step, counter_name, start, end = bare_counter(line)
        bare = step is not None
    if scan.block is not None:
        if step is None and has_pair and len(item := pairs(line, scan.keys)) == 1:
            scan.block[2].update(item)  # one `key: value` a line: an item of the block
            return current
        _close_block(scan)
    if step is None and not has_pair:
        return current
    record = pairs(line, scan.keys) if has_pair else {}
    if not record and step is not None:
        record = spaced_pairs(line[end:])
    if counter_name is not None and step_key is None:
        record.pop(counter_name, None)
    if record and counter_name is not None and not any(k.lower() == "epoch" for k in record):
        if (epoch := epoch_of(line)) is not None:  # a counter that may restart each epoch (`_epochs`)
            record["epoch"] = epoch
    if not record:
        return _no_pairs(line, scan, current, step, start, end)
    metric, is_eval, _ = _kind_of(record, scan.memo)
    if step is None and current is None and (len(record) < 2 or not metric):
        return current
    if bare:
        scan.bare.append(len(scan.pairs))
    scan.pairs.append((step if step is not None else current, record, is_eval))
    scan.verl += " - " in line and _VERL_HINT.search(line) is not None
    return current if step is None else None


def _bar_seen(scan: _Scan, bar: re.Match) -> None:
    """A progress bar without a label: the step it shows is the step of the dicts printed since the one before."""
    scan.bar = (int(bar.group(1)), int(bar.group(2)))
    scan.bar_totals[scan.bar[1]] += 1
    for bars in scan.awaiting:
        bars[1] = scan.bar
    scan.awaiting.clear()


def _before_bar(text: str, bar: re.Match, scan: _Scan, current: int | None, step_key: str | None) -> int | None:
    """A line whose text ends in the trainer's progress bar (the row printed, the bar redrawn after it on the same
    line): the text's rows, then the bar; a `key: value` row without a counter of its own takes the bar's step. A
    bar after text that is no metric row is a labelled bar (`Map: 50%|...`), not the trainer's, and is left out."""
    printed, paired = len(scan.dicts), len(scan.pairs)
    current = _scan_line(text, scan, current, step_key)
    if len(scan.dicts) > printed:
        _bar_seen(scan, bar)
        return None
    if len(scan.pairs) > paired and counter(text)[0] is None:
        scan.pairs[-1] = (to_step(int(bar.group(1))), *scan.pairs[-1][1:])
        return None
    return current


def _no_pairs(line: str, scan: _Scan, current: int | None, step: int | None, start: int, end: int) -> int | None:
    """The step the lines below take after a line without pairs: a counter alone in the message (after a logger's
    prefix) gives its step; a header, a message ending in `:` (`Iteration 3 metrics:`), opens a block of the
    `key: value` lines below it, one a line, read as one row at the header's step, else at the current one (an
    evaluation row where the header names one: `Validation results (step 3):`)."""
    prefix = _LOG_PREFIX.match(line) if "INFO" in line or "WARN" in line or "DEBUG" in line or "ERROR" in line \
        else None
    cut = prefix.end() if prefix is not None and prefix.end() <= start else 0
    message = line[cut:].strip()
    if message.endswith(":") and len(message) <= _MAX_HEADER and _LETTERS.search(message):
        scan.block = (step if step is not None else current, _EVAL_WORD.search(message) is not None, {})
        return current
    counter_only = step is not None and _LETTERS.search(line[cut:start] + " " + line[end:]) is None
    return step if counter_only else current


def _close_block(scan: _Scan) -> None:
    """The open block as a row of the scan's pairs (one without a step only if it holds two metrics or more)."""
    if scan.block is None:
        return
    step, is_eval, record = scan.block
    scan.block = None
    if not record:
        return
    if is_eval:
        record = {key if _EVAL_KEY.match(key) else "eval/" + key: value for key, value in record.items()}
    metric, eval_keys, _ = _kind_of(record, scan.memo)
    if step is None and (len(record) < 2 or not metric):
        return
    scan.pairs.append((step, record, is_eval or eval_keys))


def _messages_before(scan: _Scan) -> None:
    """The last lines before a printed dict that are no metric lines, kept (`_console_runs.mark`) where their message,
    after a logger's prefix, may count the rows (a counter's message is printed right before its row: the lines
    further back, a prompt or an answer, are not read)."""
    for line in scan.recent:
        if _DIGIT.search(line) is not None:
            prefix = _LOG_PREFIX.match(line) if "INFO" in line or "DEBUG" in line else None
            mark(scan.marks, line[prefix.end() if prefix is not None else 0:].strip(), len(scan.dicts))
    scan.recent.clear()


def _bare_steps_kept(scan: _Scan) -> None:
    """Bare `[n/N]` counters that go back (a loop's index within each epoch, `Epoch 2/3` printed above) are no steps:
    their rows lose them (numbered by position, as before such counters were read)."""
    steps = [scan.pairs[i][0] for i in scan.bare]
    if any(b < a for a, b in zip(steps, steps[1:])):
        for i in scan.bare:
            scan.pairs[i] = (None, *scan.pairs[i][1:])
        scan.bare.clear()


def scan_console(text: str, step_key: str | None = None) -> _Scan:
    """Every metric line of `text`."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    scan, current = _Scan(), None
    for line in logical_lines(text.splitlines()):  # "\r" too: tqdm's fragments
        if len(line) <= _MAX_LINE:
            read = len(scan.dicts) + len(scan.pairs)
            current = _scan_line(line, scan, current, step_key)
            if read == len(scan.dicts) + len(scan.pairs) and scan.block is None and len(line) <= _MAX_MESSAGE:
                scan.recent.append(line)  # no metric line: a counter's message? (`_messages_before`)
    _close_block(scan)
    _bare_steps_kept(scan)
    return scan


def console_kind(text: str, window: int = DETECT_CHARS) -> str | None:
    """"verl_console", "hf_console" or "console" when the text holds metric lines (`read_log`'s detection), else
    None. The first `window` characters are read, then, where they hold none, the window from each line that looks
    like a metric line (`_HINT`; a long banner or a dump of generations before the first step), up to
    `_MAX_WINDOWS` of them."""
    scan, pos = scan_console(text[:window]), window
    for _ in range(_MAX_WINDOWS):
        if scan.dicts or scan.pairs or pos >= len(text):
            break
        hint = _HINT.search(text, pos)
        if hint is None:
            break
        start = text.rfind("\n", 0, hint.start()) + 1
        scan, pos = scan_console(text[start:start + window]), start + window
    if not scan.dicts and not scan.pairs:
        return None
    if len(scan.pairs) > len(scan.dicts):
        return "verl_console" if scan.verl * 2 > len(scan.pairs) else "console"
    return "hf_console" if scan.python_dicts * 2 > len(scan.dicts) else "console"
