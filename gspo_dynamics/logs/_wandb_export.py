"""W&B's chart export (a panel's "Export CSV"): one x-axis column (`Step`, or the metric chosen for the axis) and, for
each run shown, `<run name> - <metric>`, with `<run name> - <metric>__MIN` / `__MAX` where W&B bucketed the points
(the bucket's extremes beside its mean). The runs are told apart by their name prefix, in column order; each becomes
the rows of one run, the prefix taken off its keys, and the runs follow one another in the rows, so the file reads as
runs appended to one log (`_rows.run_starts`; `read_log(run=K)`, `--run K`). The band columns are not read.

A table is read so only where every column but one is `<prefix> - <name>` and W&B's marks are there: the axis named
`Step`, or band columns; a user's own table whose names hold " - " stays as it is.
"""

from __future__ import annotations

from gspo_dynamics._errors import ConfigError

AXIS = "Step"  # W&B's name for the default x axis (the run's own step)
BAND = ("__MIN", "__MAX")  # a bucketed point's extremes, beside its mean


def export_columns(names: list[str]) -> tuple[str, dict[str, dict[str, str]], bool] | None:
    """(the axis column, {run: {column: metric}} in column order, whether band columns were there), or None where
    `names` is not W&B's chart export."""
    plain = [name for name in names if " - " not in name]
    if len(plain) != 1 or len(names) < 2:
        return None
    runs: dict[str, dict[str, str]] = {}
    banded = False
    for name in names:
        if name == plain[0]:
            continue
        run, _, metric = name.rpartition(" - ")
        if not run.strip() or not metric.strip():
            return None
        if metric.endswith(BAND):
            banded = True
            runs.setdefault(run, {})
        else:
            runs.setdefault(run, {})[name] = metric
    if not (plain[0] == AXIS or banded) or any(not columns for columns in runs.values()):
        return None
    return plain[0], runs, banded


def runs_of(records: list[dict], axis: str, runs: dict[str, dict[str, str]]) -> list[list[dict]]:
    """Each run's records (its rows with a value of its own, its keys without the prefix, the axis kept), in order."""
    out = []
    for columns in runs.values():
        mine = []
        for record in records:
            values = {metric: record[column] for column, metric in columns.items() if column in record}
            if values:
                mine.append({axis: record[axis], **values} if axis in record else values)
        out.append(mine)
    return out


def export_rows(records: list[dict], export, step_rows, warnings: list[str]) -> tuple[list, str]:
    """(the rows of every run, one run after another; the step axis) of a chart export (`export_columns`' `export`),
    each run's records made rows by `step_rows(records) -> (rows, axis)` (the CSV reader's), the runs said first in
    `warnings`."""
    column, runs, banded = export
    pieces = [step_rows(mine) for mine in runs_of(records, column, runs)]
    warnings[:0] = said(runs, banded, [rows[0][0] if rows else None for rows, _ in pieces])
    return [row for rows, _ in pieces for row in rows], pieces[0][1]


def said(runs: dict[str, dict[str, str]], banded: bool, first_steps: list) -> list[str]:
    """The warning naming the runs (and the band columns left unread); a ConfigError where a later run starts past
    the first run's first step, so that the runs would not be told apart by their counter."""
    names = list(runs)
    later = [name for name, step in zip(names[1:], first_steps[1:]) if step is not None and first_steps[0] is not None
             and step > first_steps[0]]
    if later:
        raise ConfigError(f"this W&B chart export holds {len(names)} runs ({', '.join(names)}), and {later[0]} starts "
                          f"at step {first_steps[names.index(later[0])]}, past the first run's first step "
                          f"{first_steps[0]}: export the runs one at a time (a panel showing one run)")
    band = f"; W&B's {'/'.join(BAND)} band columns not read" if banded else ""
    if len(names) == 1:
        return [f"W&B's chart export of run {names[0]!r}: its columns read without the prefix{band}"]
    return [f"W&B's chart export of {len(names)} runs, in column order: {', '.join(map(repr, names))} (--run K reads "
            f"the K-th){band}"]
