"""A Jupyter notebook (.ipynb: Colab, Kaggle, the Unsloth GRPO notebooks) read as the log its cells printed.

The trainer's own table first: transformers' notebook callback (as TRL and Unsloth extend it) renders each logged
step as a row of an HTML table whose header is `Step`, `Training Loss` and the logged metrics, a logged name's `/`
written ` / ` (`rewards / correctness_reward_func`). The last such table of the notebook (its last training run) is
read, its names given back as the trainer logged them:

    Step -> step,   Training Loss -> loss,   Validation Loss -> eval_loss,   "a / b" -> "a/b"

with cells that are no number (`No log`) left out. A notebook without such a table is read as the text its cells
printed (stream and plain-text outputs, in cell order), by the console readers: a script's printed metric dicts or
`key: value` lines.
"""

from __future__ import annotations

import html
import json
import re

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.logs._console import console_kind
from gspo_dynamics.logs._console_rows import read_console, read_hf_console, read_verl_console
from gspo_dynamics.logs._readers import RawLog, _step_rows
from gspo_dynamics.logs._runlog import to_float

_TABLE = re.compile(r"<table.*?</table>", re.S | re.I)
_HEAD = re.compile(r"<th[^>]*>(.*?)</th>", re.S | re.I)
_ROW = re.compile(r"<tr[^>]*>(.*?)</tr>", re.S | re.I)
_CELL = re.compile(r"<td[^>]*>(.*?)</td>", re.S | re.I)
_TAG = re.compile(r"<[^>]+>")
_NAMES = {"Step": "step", "Training Loss": "loss", "Validation Loss": "eval_loss"}


def looks_like_notebook(stripped: str) -> bool:
    """Whether the text (its leading whitespace stripped) opens a Jupyter notebook's JSON: an object whose first key
    is `cells` or `nbformat` (the order nbformat writes), or that names `nbformat` near the start."""
    head = stripped[:4096]
    return stripped.startswith("{") and (re.match(r'\{\s*"(cells|nbformat)"', head) is not None or '"nbformat"' in head)


def notebook_parts(text: str | bytes) -> tuple[list[dict] | None, str]:
    """(the records of the notebook's last training table, or None where it has none; the text its cells printed)."""
    try:
        cells = json.loads(text).get("cells")
    except (json.JSONDecodeError, AttributeError):
        raise ConfigError("the log looks like a Jupyter notebook but is not valid notebook JSON") from None
    tables, printed = [], []
    for cell in cells if isinstance(cells, list) else []:
        for out in cell.get("outputs") or [] if isinstance(cell, dict) else []:
            data = out.get("data") or {}
            page = _joined(data.get("text/html"))
            tables += [t for t in _TABLE.findall(page) if "step" in t.lower()]
            printed.append(_joined(out.get("text")) or _joined(data.get("text/plain")))
    records = next((r for r in map(_table_records, reversed(tables)) if r), None)
    text = "\n".join(p for p in printed if p)  # outputs saved whole: the last line ends (no row cut mid-write)
    return records, text if not text or text.endswith("\n") else text + "\n"


def read_notebook(text: str | bytes, step_key: str | None = None) -> RawLog:
    """The rows of the notebook's last training table, else of the text its cells printed (module docstring)."""
    records, printed = notebook_parts(text)
    if records:
        warnings: list[str] = []
        rows, axis, _ = _step_rows(records, "notebook table", warnings, step_key, owned=True)
        return RawLog(rows, warnings, None, f"the notebook's training table, {axis}")
    kind = console_kind(printed) if printed.strip() else None
    if kind is None:
        what = ("its cells printed nothing" if not printed.strip() else "what its cells printed holds no metric "
                "rows read here (printed dicts of numbers, key: value lists with a step counter, a trainer's log lines)")
        raise ConfigError("the notebook holds no training table (a Step column under transformers' notebook "
                          f"callback) and {what}: run its training cell with its outputs saved, or give the run's log "
                          "(trainer_state.json, a TensorBoard folder)")
    raw = {"verl_console": read_verl_console, "hf_console": read_hf_console}.get(kind, read_console)(printed, step_key)
    raw.warnings.insert(0, "the notebook's printed outputs were read as console output (it holds no training table)")
    return raw


def _table_records(table: str) -> list[dict]:
    """The rows of one HTML table under its header, each {name: number} (cells that are no number left out); [] for
    a table with no `Step` column."""
    names = [_NAMES.get(n, n.replace(" / ", "/")) for n in (_text(h) for h in _HEAD.findall(table))]
    if "step" not in names or len(names) < 2:
        return []
    records = []
    for row in _ROW.findall(table):
        cells = [_text(c) for c in _CELL.findall(row)]
        if len(cells) == len(names):
            record = {n: v for n, c in zip(names, cells) if (v := to_float(c)) is not None}
            if "step" in record and len(record) > 1:
                records.append(record)
    return records


def _text(cell: str) -> str:
    return html.unescape(_TAG.sub("", cell)).strip()


def _joined(value) -> str:
    """A notebook's text field (a string, or a list of lines) as one string."""
    return "".join(value) if isinstance(value, list) else value if isinstance(value, str) else ""
