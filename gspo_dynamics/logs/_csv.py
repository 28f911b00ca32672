"""A table with a header row (W&B's and other generic CSV exports): its rows, and the columns with no value on any
row (named where one was wanted)."""

from __future__ import annotations

import csv
import io

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.logs import _wandb_export
from gspo_dynamics.logs._columns import missing_column
from gspo_dynamics.logs._readers import RawLog, _step_rows, cut_tail


def read_csv(text: str, step_key: str | None = None) -> RawLog:
    """A table with a header row; the delimiter is the first of `,` tab `;` in the header."""
    warnings: list[str] = []
    lines = text.lstrip("\ufeff").splitlines()
    header = next((line for line in lines if line.strip()), "")
    delimiter = next((d for d in (",", "\t", ";") if d in header), None)
    if delimiter is None:
        raise ConfigError("the CSV has no header row with ',', tab or ';' separated column names")
    try:
        body = "\n".join(line for line in lines if line.strip())
        table = list(csv.reader(io.StringIO(body), delimiter=delimiter))
    except csv.Error as error:
        reason = " ".join(str(error).split())
        raise ConfigError(f"the CSV could not be parsed ({reason})") from None
    names = [name.strip() for name in table[0]]
    index = len(names) > 1 and not names[0]  # pandas' to_csv writes its row index first, its name empty
    if index:
        warnings.append("the first column, unnamed, is a table's row index (pandas' to_csv): not read")
        table = [cells[1:] for cells in table]
        names = names[1:]
    if step_key is not None and step_key not in names:
        raise missing_column("step", step_key, names, "CSV")
    if len(set(names)) != len(names):
        warnings.append("the CSV header repeats column names; the last of each was kept")
    aside = cut_tail(text.rstrip(" \t"), warnings) if len(table) > 2 else ()  # a row cut mid-write: left out
    if aside:
        table.pop()
    records, n_ragged = [], 0
    for cells in table[1:]:
        if len(cells) != len(names):
            n_ragged += 1
        records.append({name: cell for name, cell in zip(names, cells) if cell.strip() != ""})
    if n_ragged:
        warnings.append(f"{n_ragged} CSV row(s) had a different number of cells than the header")
    if not records:
        raise ConfigError("the CSV has a header but no data rows")
    export = _wandb_export.export_columns(names) if step_key is None else None
    if export is None:
        held = set().union(*map(set, records))  # before the step column leaves the records
        rows, axis, _ = _step_rows(records, "CSV", warnings, step_key, owned=True)
        return RawLog(rows, warnings, None, axis, empty_columns=tuple(n for n in names if n and n not in held),
                      set_aside=aside)
    rows, axis = _wandb_export.export_rows(records, export, lambda mine: _step_rows(mine, "CSV", warnings, None,
                                                                                     owned=True)[:2], warnings)
    return RawLog(rows, list(dict.fromkeys(warnings)), None, axis, run_names=list(export[1]), set_aside=aside)
