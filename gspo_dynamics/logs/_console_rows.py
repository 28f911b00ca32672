"""Console text as raw rows: the metric lines `_console.scan_console` found, as the rows of printed dicts (steps from
their own keys, a counter line, the progress bar or the logging interval: `_console_interval`) or of `key: value`
lines (steps from their counters), in the file's order; a few step-keyed records that are no training rows, echoed
among a trainer's stepless dicts, set aside (`_training_dicts`)."""

from __future__ import annotations

import re
from collections import Counter

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.logs._algorithms import untrained_rows
from gspo_dynamics.logs._console import _ANSI, _STEP_SET, _Scan, scan_console
from gspo_dynamics.logs._console_interval import fresh_starts, stepless_steps
from gspo_dynamics.logs._console_runs import counter_runs
from gspo_dynamics.logs._names import canonical_name
from gspo_dynamics.logs._readers import NUMBERED as _NUMBERED
from gspo_dynamics.logs._readers import RawLog, _finish, _split_step, cut_tail
from gspo_dynamics.logs._runlog import MIN_ANALYSIS_POINTS, Row


def read_console(text: str, step_key: str | None = None, what: str = "console output") -> RawLog:
    """Console output of any trainer (the module docstring's forms) as raw rows; ConfigError when it has no metric
    line. step_key: a column map's step column (a key of the printed rows), else the counters and step keys give the
    steps."""
    scan = scan_console(text, step_key)
    warnings: list[str] = []
    aside = _cut_last_line(text, scan, step_key, warnings)
    if scan.dicts and _prefer_dicts(scan):
        rows, interval, axis, starts = _dict_rows(scan, text, step_key, what, warnings)
    elif scan.pairs:
        rows, interval, starts = _pair_rows(scan.pairs, step_key, what, warnings), None, ()
        axis = f"column {step_key!r}" if step_key else "console step counter"
    else:
        raise ConfigError(f"no metric lines were found in the {what} (printed metric dicts, or key: value / key=value "
                          "lists with a step counter or two numbers)")
    if step_key is None and not _has_steps(scan.dicts if scan.dicts and _prefer_dicts(scan) else scan.pairs):
        raise ConfigError(_no_step_message(text, what))
    raw = RawLog(rows, warnings, interval, run_starts=starts, set_aside=aside)
    if not any(w.endswith(_NUMBERED) for w in warnings):
        raw.step_axis = axis  # how the steps were found, for the `log` line (rows numbered by position: said apart)
    return raw


def _cut_last_line(text: str, scan: _Scan, step_key: str | None, warnings: list[str]) -> tuple[str, ...]:
    """Where the text's last line, without a line end (`cut_tail`), is its last `key: value` row, that row was cut
    mid-write (`step 60: reward=0.` of `step 60: reward=0.149`): it leaves `scan.pairs`, said; () else (a printed
    dict cut short does not parse, so it is no row to leave out)."""
    if text.endswith(("\n", "\r")) or not scan.pairs:
        return ()
    last_line = text[max(text.rfind("\n"), text.rfind("\r")) + 1:]
    alone = scan_console(last_line, step_key).pairs
    if len(alone) != 1 or alone[0][1] != scan.pairs[-1][1]:
        return ()
    scan.pairs.pop()
    return cut_tail(text, warnings, "line")


def _has_steps(entries: list) -> bool:
    """Whether the metric lines (`_Scan.dicts` or `.pairs` entries: (step, record, is eval, ...)) hold a training
    step: a training row at a counter's step or with a reward by name, or a key that two training rows log (a trainer
    logs its keys at every step). A log whose training rows are each printed once with keys of their own (a config
    dump, a summary) and no reward logged none: its run stopped before its first step. Evaluation rows alone are not
    said to be such a log."""
    seen: set[str] = set()
    for step, record, is_eval, *_ in entries:
        if is_eval:
            continue
        if step is not None:  # a row at a counter's step
            return True
        if not seen.isdisjoint(record) or any(canonical_name(key) == "reward" for key in record):
            return True
        seen.update(record)
    return not seen  # evaluation rows alone (a piece of a growing log) are read as they are


# the line an uncaught exception ends with (`torch.OutOfMemoryError: CUDA out of memory. ...`), after any prefix
_ERROR_LINE = re.compile(r"^(?:\(\S+ pid=\d+[^)]*\)\s*)?"  # a Ray worker's prefix
                         r"((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)(?:\([^)]*\))?: .+)$", re.M)
_QUOTED = 160  # characters of an error line quoted
_ERROR_TAIL = 1_000_000  # characters at the end of the text searched for it


def _no_step_message(text: str, what: str) -> str:
    """The refusal of a log that logged no training step (`_has_steps`), quoting its last error line if it has one."""
    errors = _ERROR_LINE.findall(_ANSI.sub("", text[-_ERROR_TAIL:]))
    last = errors[-1].strip() if errors else ""
    stopped = (f"; the run stopped before its first step, its last error: "
               f"{last[:_QUOTED] + (' ...' if len(last) > _QUOTED else '')!r}") if last else ""
    return (f"the {what} holds no training step: each of its metric lines is printed once (a config dump, an initial "
            f"validation), none a step's readings{stopped}")


_STEPS_AHEAD = 0.1  # the share more steps the key: value lines may count than the dicts and the dicts still be the rows


def _prefer_dicts(scan: _Scan) -> bool:
    """Whether the printed dicts, not the key: value lines, are the log's rows: the dicts where enough of them hold a
    reward to analyse (a trainer's logged dicts among a script's debug prints of per-batch averages) and the key: value
    lines with a reward do not count more steps of their own (per-step lines beside per-epoch mean dicts; a tenth
    more, `_STEPS_AHEAD`, is a loop that printed its last step's sampled answers and stopped before its dict); also
    fewer such dicts where the key: value lines with a reward are printed twice or more a step on average (sampled
    trajectories' `reward=0.353` under the step's table: samples, not rows); else the kind with more lines holding a
    reward, else the kind with more lines."""
    def with_reward(records) -> int:
        return sum(any(canonical_name(key) == "reward" for key in record) for _, record, *_ in records)

    dicts, pairs = with_reward(scan.dicts), with_reward(scan.pairs)
    counted = {step for step, record, _ in scan.pairs
               if step is not None and any(canonical_name(key) == "reward" for key in record)}
    if len(counted) <= dicts * (1 + _STEPS_AHEAD):  # not per-epoch means beside per-step lines
        if dicts >= MIN_ANALYSIS_POINTS or (dicts >= 2 and counted and pairs >= 2 * len(counted)):
            return True
    return dicts > pairs if dicts != pairs else len(scan.dicts) >= len(scan.pairs)


def read_hf_console(text: str, step_key: str | None = None) -> RawLog:
    """Console output of transformers' Trainer (TRL, Unsloth): one printed dict per logging step, read by
    `read_console` (its interval rules number the rows)."""
    return read_console(text, step_key)


def read_verl_console(text: str, step_key: str | None = None) -> RawLog:
    """verl's console lines `step:N - key:value - key:value - ...`, read by `read_console` (other output ignored)."""
    return read_console(text, step_key, "verl console output")


def _dict_rows(scan: _Scan, text: str, step_key: str | None, what: str, warnings: list[str]
               ) -> tuple[list[Row], int | None, str, tuple[int, ...]]:
    """The rows of the printed dicts in the file's order, the logging interval when it was inferred (dicts without
    steps), how the steps were found, and the rows where a run of the file's markers begins afresh (`fresh_starts`).
    An eval dict without a step takes the train row's before it (0 before any)."""
    if step_key is None:
        _keep_dicts(scan, _training_dicts(_without_dumps(scan.dicts), what, warnings))
    fresh: set[int] = set()  # the entries where a run begins afresh
    entries, keyed = [], 0  # (an eval row, step, record), in the file's order; training rows with a step key
    for counted, record, is_eval, *_ in scan.dicts:
        # a step key of the dict's own (ms-swift's 'global_step/max_steps': '5/515' among them: `_split_step`)
        step, rest = _split_step(record, step_key) if step_key or not _STEP_SET.isdisjoint(record) else (None, record)
        keyed += step is not None and not is_eval
        entries.append((is_eval, counted if step is None and step_key is None else step, rest))
    train = [i for i, (is_eval, _, _) in enumerate(entries) if not is_eval]
    interval, axis = None, f"column {step_key!r}" if step_key else "the printed rows' steps"
    if step_key is None and not train:  # eval dicts alone (a piece of a growing log): numbered on from the one before
        warnings.append(f"the {what} has no step numbers; {_NUMBERED}")
    # no step key, and most rows without a counter's step (one met above a few rows is not their clock)
    elif step_key is None and not keyed and 2 * sum(entries[i][1] is None for i in train) > len(train):
        bar_total = scan.bar_totals.most_common(1)[0][0] if scan.bar_totals else None  # the trainer's: redrawn most
        counted = _counted_runs(scan, train)
        totals = scan.totals if counted[0].begun is None else {}  # the banners' runs (not a counter message's)
        steps, interval, axis = stepless_steps(text, counted, scan.finished, what, warnings, bar_total, totals)
        for i, step in zip(train, steps):
            entries[i] = (False, step, entries[i][2])
        fresh = {train[k] for k in fresh_starts([entry.run for entry in counted], steps)}
    else:  # a mapped step column missing from every row is an error; rows without a step are said
        _finish([entries[i][1:] for i in train], what, warnings, step_key)
    rows, last, starts = [], None, []
    for i, (is_eval, step, record) in enumerate(entries):
        if is_eval and step is None:
            step = 0 if last is None else last
        elif not is_eval:
            last = step if step is not None and step >= 0 else last
        if step is not None and step >= 0 and record:
            starts += [len(rows)] if i in fresh else []
            rows.append((step, record))
    return rows, interval, axis, tuple(starts)


def _keep_dicts(scan: _Scan, kept: list) -> None:
    """`scan.dicts` made `kept` (a part of them, in order), each counter message's count of the dicts before it
    (`_console_runs.mark`) less those left out before it."""
    ids = {id(entry) for entry in kept}
    left_out = [0]  # among the first i dicts
    for entry in scan.dicts:
        left_out.append(left_out[-1] + (id(entry) not in ids))
    if left_out[-1]:
        scan.marks = {template: printed if template is None else
                      [(rows - left_out[min(rows, len(scan.dicts))], numbers) for rows, numbers in printed]
                      for template, printed in scan.marks.items()}
        scan.dicts = kept


def _counted_runs(scan: _Scan, train: list[int]) -> list:
    """The training dicts of `scan`, each with its run: transformers' (its banner, its summary), else a message
    that counts the rows and starts again (`_console_runs`), which is then how `stepless_steps` says they began."""
    dicts = [scan.dicts[i] for i in train]
    if dicts[0].run != dicts[-1].run or (found := counter_runs(scan.marks, len(scan.dicts))) is None:
        return dicts
    runs, template = found
    begun = f"each begun where {template!r} starts again"
    return [entry._replace(run=runs[i], begun=begun) for i, entry in zip(train, dicts)]


def _training_dicts(dicts: list, what: str, warnings: list[str]) -> list:
    """`_Scan.dicts` less those that hold a step key but are not training rows: a minority of the train dicts (fewer
    than half: a step column is on most rows, as `_readers._step_column` reads it) carrying none of a training step's
    readings (`untrained_rows`) where the dicts without a step carry them. A callback's or an environment's records
    echoed among a trainer's stepless rows (`{'step': 0, 'agent_id': ..., 'reward': -0.67}` in a W&B error, beside
    TRL's `{'loss': ..., 'reward': ...}`) then neither set the step axis nor leave the training rows out."""
    train = [d for d in dicts if not d.is_eval]
    stepped = [d for d in train if not _STEP_SET.isdisjoint(d.record)]
    if not stepped or 2 * len(stepped) >= len(train):
        return dicts
    own, others = set().union(*(d.record for d in stepped)), set().union(*(d.record for d in train if d not in stepped))
    if not untrained_rows(own) or untrained_rows(others):
        return dicts
    shown = ", ".join(map(repr, sorted(own - _STEP_SET)[:4])) + (", ..." if len(own - _STEP_SET) > 4 else "")
    warnings.append(f"{len(stepped)} printed dict(s) with a step key but none of a training step's readings ({shown}: "
                    f"a callback's or an environment's records) were not read as training rows; the "
                    f"{len(train) - len(stepped)} training rows of the {what} were")
    return [d for d in dicts if d.is_eval or _STEP_SET.isdisjoint(d.record)]


def _without_dumps(entries: list) -> list:
    """The metric lines (`_Scan.dicts` or `.pairs` entries: (step, record, ...)) less a line without a step whose keys
    no other line has (a config dump: `{'lr': 1e-06, 'eps': 1e-08, 'weight_decay': 0.0}` before a loop's rows), where
    there are three lines or more."""
    if len(entries) < 3:
        return entries
    counts = Counter(key for _, record, *_ in entries for key in record)
    return [entry for entry in entries if entry[0] is not None or any(counts[key] > 1 for key in entry[1])]


def _pair_rows(pairs: list[tuple[int | None, dict, bool]], step_key: str | None, what: str, warnings: list[str]
               ) -> list[Row]:
    """The rows of the key: value lines; an eval line without a step takes the step of the line before it."""
    pairs = _without_dumps(pairs)
    records: list[tuple[int | None, dict]] = []
    previous = None
    for counted, record, is_eval in pairs:
        if step_key is not None:
            step, rest = _split_step(record, step_key)
        else:
            step, rest = (counted, record) if counted is not None or _STEP_SET.isdisjoint(record) else \
                _split_step(record, None)
            if step is None and is_eval:
                step = previous
        previous = step if step is not None else previous
        records.append((step, rest))
    return _finish(records, what, warnings, step_key)
