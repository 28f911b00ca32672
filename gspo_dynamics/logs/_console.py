"""Console output of any trainer (what a job prints to stdout) read into raw rows `(step, {key: value})`.

A line is a metric line in one of two forms, after any prefix (a timestamp, `[rank0]:`, `INFO:`, a logger name, a
Ray `(TaskRunner pid=7)`), with ANSI colours removed and tqdm's carriage-return fragments split into lines:

  dict      a printed Python or JSON dict holding a metric-like key: `{'loss': 0.1, 'reward': '0.5', 'kl': nan}`;
            values may be `nan`, `inf`, `-inf`, `tensor(0.3, device='cuda:0')`, `np.float64(0.2)` or strings
  key list  `key: value` / `key=value` pairs split by `|`, `,`, ` - `, `;` or spaces, with a step counter
            (`Step 12/200 | reward: 0.31`, `[step 5/100] reward=0.4`, `it 10 reward 0.3 loss 0.2`, verl's
            `step:N - key:value - ...`) or at least two numeric pairs, one of them a metric's
            (`2026-01-01 12:00:00 INFO step=3 mean_reward=0.5`)

A step counter is `step N`, `Step N/M`, `[step N/M]`, `global_step=N`, `iter N`, `it N`, `update N`, `Episode N`,
`Epoch e Step N`, or `Epoch:[e/E](N/M)` (step (e-1) M + N). A line holding only a counter gives its step to the metric
lines below it. A logged `nan`/`inf` is kept as a non-finite float; a `None`/`null` is a missing value. Anything else
(banners, warnings, `Total optimization steps = 1,000`, tables, config dumps) is not a metric line. Where a log has
both forms, the dicts are read where enough of them hold a reward to analyse, else the form with more lines holding a
reward, else the more frequent one (a TRL log's metric dicts, not the debug prints or the vLLM config line between
them). This module finds the metric lines (`scan_console`); `_console_rows` makes them rows.

Dicts without a step (transformers' Trainer prints none) take the step its progress bar shows at each, else are
numbered by the logging interval: from `Total optimization steps = N` only in a finished log (its summary dict
`train_runtime` printed), else from the `epoch` column and the banner's steps per epoch, else 1, 2, ... with a
warning (`_console_interval.py`). Eval dicts (`eval_*` keys) take the step of
the train row before them; one before any train row takes step 0 (an evaluation before training, or, in a piece of a
growing log, the last step of the piece before: `_follow._number_on`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gspo_dynamics.logs._algorithms import is_summary_row
from gspo_dynamics.logs._readers import STEP_KEYS, _flatten, _loads
from gspo_dynamics.logs._runlog import to_step

try:  # a dependency, but optional at run time (as in `_readers._loads`)
    import orjson as _orjson
except ImportError:  # pragma: no cover
    _orjson = None

_MAX_LINE = 1_000_000  # longer "lines" are binary junk, not log rows
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_RAY_PREFIX = re.compile(r"^\s*\([\w.:-]+ pid=\d+(?:, ip=[\d.]+)?\)\s*")
# A number as printed by Python, JSON, numpy or torch, non-finite spellings included.
_NUM = r"[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|(?:nan|NaN|NAN|inf|Inf|INF|Infinity|infinity)(?!\w))"
# tensor(0.3, device='cuda:0'), np.float64(0.2), float('nan'): the number inside.
_WRAPPER = re.compile(r"\b(?:(?:torch\.)?tensor|(?:np|numpy)\.(?:float|int)\d*|float|array)\(\s*(['\"]?)([^,()'\"]*)\1"
                      r"\s*(?:,[^()]*)?\)")
_DICT_START = re.compile(r"\{\s*['\"]")
_DICT_PAIR = re.compile(r"""(?:'([^'\n]{1,200})'|"([^"\n]{1,200})")\s*:\s*(?:'([^'\n]*)'|"([^"\n]*)"|"""
                        r"(" + _NUM + r"|None|null|True|False|true|false)(?=\s*[,}]))")
_KEY_WORD = re.compile(r"[A-Za-z_][\w./@\-]*")
# key:value / key=value: the separator attached to the key (`reward: 0.3`, not a banner's `Num Epochs = 1`), a number.
_VALUE = re.compile(r"[:=][ \t]*(" + _NUM + r")(?![\w.:/]|,\d)")
_NUMBER = re.compile(_NUM)
# key=[a, b, ...] / key: ['0.8', '0.1']: a list of numbers (per-completion rewards of a step), read as its mean
_LIST_PAIR = re.compile(r"([A-Za-z_][\w./@\-]*)[ \t]*[:=][ \t]*\[([^\[\]\n]{1,4000})\]")
_EQUALS_PAIR = re.compile(r"([A-Za-z_][\w./@\-]*)[ \t]+=[ \t]+(" + _NUM + r")(?![\w.:/]|,\d)")  # after a counter only
_LAST_SEPARATOR = re.compile(r".*(?:[|,;\[\]()]|\s-\s)")  # a key's words start after the last of these
_NOTHING = object()
_NUMBER_STARTS = frozenset("-+.0123456789nNiI")  # how a number written as a string begins ('9.8e-06', 'nan')
_MEMO_SIZE = 100_000
_MAX_KEY_WORDS = 4  # `Avg Response Len: 271.4`
# Step counters, matched in the lowercased line (the character before is checked apart: no lookbehind, for speed).
_COUNTER = re.compile(r"(global[_ ]step|step|iteration|iter|it|update|episode)[ \t]*[:=#]?[ \t]*\[?[ \t]*(\d+)"
                      r"(?:[ \t]*/[ \t]*\d+)?(?![\w.])")
_EPOCH_FRACTION = re.compile(r"(?i)epoch\W{0,3}\[?\s*(\d+)\s*/\s*\d+\s*\]?\s*[(\[]\s*(\d+)\s*/\s*(\d+)\s*[)\]]")
_COUNTER_RANK = {"global_step": 0, "global step": 0, "step": 1, "iteration": 2, "iter": 2, "it": 2, "update": 3,
                 "episode": 3}
_STEP_SET = frozenset(STEP_KEYS)
_METRIC_WORD = re.compile(r"(?i)reward|loss|kl|entrop|grad|learning_rate|\blr\b|score|acc|clip|length|return|advan"
                          r"|ratio|std|mean|eval|val")
_EVAL_KEY = re.compile(r"(?i)^(?:eval|val|test|validation)[_/\-]")
_LETTERS = re.compile(r"[A-Za-z]{2,}")
_BAR = re.compile(r"\s*\d{1,3}%\|[^|\n]*\|\s*(\d+)/(\d+)\s*\[")  # `  5%|▌    | 5/100 [26:14<8:17:55, ...]`
_VERL_HINT = re.compile(r"step:\d+ - \S+:")
# A line that may be a metric line, searched for past the first window: verl's, a printed dict's start, a counter.
_HINT = re.compile(r"step:\d+ - \S+:|\{\s*['\"][^'\"\n]{1,200}['\"]\s*:\s*[-+\d'\"nNi]"
                   r"|(?i:\bstep\b|\biter\b)\s*[:=]?\s*\[?\d")
DETECT_CHARS = 200_000  # how much of a log detection reads at once
_MAX_WINDOWS = 20  # windows read past the first before a log is said to hold no metric line



@dataclass
class _Scan:
    """The metric lines of a console text, in the file's order, and what the reading of their steps needs."""

    # (step or None, record, is an eval row, [bar before, bar after], run)
    dicts: list[tuple[int | None, dict, bool, list, int]] = field(default_factory=list)
    pairs: list[tuple[int | None, dict, bool]] = field(default_factory=list)  # (step or None, record, an eval row)
    finished: bool = False  # a summary dict (train_runtime) was printed
    run: int = 0  # runs begun before this line: transformers' banner or summary dict after metric dicts
    in_run: int = 0  # metric dicts since the run began
    verl: int = 0  # verl `step:N - key:value` lines
    python_dicts: int = 0  # dicts printed by Python (single quotes), not JSON
    memo: dict = field(default_factory=dict)  # keys -> `_kind_of`
    keys: dict = field(default_factory=dict)  # the text between two pairs -> the second's key
    bar: tuple[int, int] | None = None  # the last progress bar without a label: (n, total)
    awaiting: list = field(default_factory=list)  # the [before, after] bars of dicts printed since it


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


def _counter(line: str) -> tuple[int | None, str | None, int, int]:
    """(the line's step counter, its name as written, where it starts and ends) or (None, None, 0, 0); the
    highest-ranked of several (global step first). A counter too large for a step gives None."""
    low = line.lower()
    best = None
    if "step" in low or "it" in low or "update" in low or "episode" in low:
        for match in _COUNTER.finditer(low):
            at = match.start()
            if at and (low[at - 1].isalnum() or low[at - 1] in "_/."):
                continue
            name = match.group(1)
            rank = _COUNTER_RANK[name.replace("_", " ") if name.startswith("global") else name]
            if best is None or rank < best[0]:
                best = (rank, to_step(int(match.group(2))), line[at:match.end(1)], at, match.end())
    if best is not None:
        return best[1:]
    epoch = _EPOCH_FRACTION.search(line) if "poch" in low else None
    if epoch is None:
        return None, None, 0, 0
    e, n, per_epoch = (int(g) for g in epoch.groups())
    return to_step(max(e - 1, 0) * per_epoch + n), None, epoch.start(), epoch.end()


def _key_before(segment: str, set_apart: bool) -> str | None:
    """The key that ends `segment` (the text since the last pair, up to a `:` or `=`): the words after its last
    separator where one sets them apart (or the pair before), else its last word; None if it ends in a space."""
    if not segment or segment[-1].isspace():
        return None
    cut = _LAST_SEPARATOR.match(segment)
    words = segment[cut.end() if cut else 0:].split()
    if not words:
        return None
    if (set_apart or cut) and len(words) <= _MAX_KEY_WORDS and all(_KEY_WORD.fullmatch(w) for w in words):
        key = " ".join(words)
    else:
        key = words[-1] if _KEY_WORD.fullmatch(words[-1]) else None
    return None if key is None or key.endswith(".py") else key  # not a logger's file.py:line


def _pairs(line: str, memo: dict) -> dict:
    """The `key: value` / `key=value` pairs of a line, values as floats (the key after a pair memoised by the text
    before it: a log repeats it line after line); `key=[v1, v2, ...]`, a list of numbers, is their mean (a step's
    per-completion rewards)."""
    record, last = {}, 0
    for match in _VALUE.finditer(line):
        segment = line[last:match.start()]
        if not last:
            key = _key_before(segment, False)
        elif (key := memo.get(segment, _NOTHING)) is _NOTHING:
            key = _key_before(segment, True)
            if len(memo) < _MEMO_SIZE:
                memo[segment] = key
        if key is not None:
            record[key] = float(match.group(1))
            last = match.end()
    if "[" in line:
        for key, items in _LIST_PAIR.findall(line):
            values = [item.strip().strip("'\"") for item in items.split(",")]
            if key not in record and values and all(_NUMBER.fullmatch(v) for v in values):
                record[key] = sum(map(float, values)) / len(values)
    return record


def _spaced_pairs(rest: str) -> dict:
    """`reward 0.3 loss 0.2` or `reward = 0.3, kl = 0.01` after a counter (`it 10`, `step 5:`): the rest's pairs
    where it alternates keys and numbers (`=` between them aside), else {}."""
    if "=" in rest:
        equals = _EQUALS_PAIR.findall(rest)
        return {k: float(v) for k, v in equals} if equals else {}
    tokens = rest.replace(" - ", " ").replace("|", " ").replace(",", " ").split()
    keys, values = tokens[0::2], tokens[1::2]
    if not tokens or len(keys) != len(values):
        return {}
    if all(_KEY_WORD.fullmatch(k) for k in keys) and all(_NUMBER.fullmatch(v) for v in values):
        return {k: float(v) for k, v in zip(keys, values)}
    return {}


def _scan_line(line: str, scan: _Scan, current: int | None, step_key: str | None) -> int | None:
    """Add the line's metric rows to `scan`; the step that the lines below take (a counter-only line sets it)."""
    if "(" in line:
        line = _WRAPPER.sub(r"\2", _RAY_PREFIX.sub("", line))
    if "%|" in line and (bar := _BAR.match(line)) is not None:  # tqdm's bar (the trainer's: no label before it)
        scan.bar = (int(bar.group(1)), int(bar.group(2)))
        for bars in scan.awaiting:
            bars[1] = scan.bar
        scan.awaiting.clear()
        current = None  # a progress bar is newer news of the step than a counter line above it
    if scan.in_run and "***** Running training *****" in line:  # transformers starts another run
        scan.run, scan.in_run = scan.run + 1, 0
    brace = line.find("{")
    match = _DICT_START.search(line, brace) if brace >= 0 else None
    if match is not None:
        step = _counter(line[:match.start()])[0] if match.start() else None
        for record, python in _dicts(line, match.start()):
            metric, is_eval, summary = _kind_of(record, scan.memo)
            if summary:
                scan.finished = True
                scan.run, scan.in_run = scan.run + (scan.in_run > 0), 0
            elif metric:
                bars = [scan.bar, None]
                scan.dicts.append((step if step is not None else current, record, is_eval, bars, scan.run))
                scan.in_run += 1
                scan.awaiting.append(bars)
                scan.python_dicts += python
        return current if step is None else None  # a line with its own step ends a counter line's block
    has_pair = ":" in line or "=" in line
    step, counter_name, start, end = _counter(line)
    if step is None and not has_pair:
        return current
    record = _pairs(line, scan.keys) if has_pair else {}
    if not record and step is not None:
        record = _spaced_pairs(line[end:])
    if counter_name is not None and step_key is None:
        record.pop(counter_name, None)
    if not record:
        counter_only = step is not None and _LETTERS.search(line[:start] + " " + line[end:]) is None
        return step if counter_only else current
    metric, is_eval, _ = _kind_of(record, scan.memo)
    if step is None and current is None and (len(record) < 2 or not metric):
        return current
    scan.pairs.append((step if step is not None else current, record, is_eval))
    scan.verl += " - " in line and _VERL_HINT.search(line) is not None
    return current if step is None else None


def scan_console(text: str, step_key: str | None = None) -> _Scan:
    """Every metric line of `text`."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    scan, current = _Scan(), None
    for line in text.splitlines():  # "\r" too: tqdm's fragments
        if len(line) <= _MAX_LINE:
            current = _scan_line(line, scan, current, step_key)
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
