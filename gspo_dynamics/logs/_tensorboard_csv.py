"""TensorBoard's CSV download of one scalar (its "Download data" link): the columns `Wall time`, `Step`, `Value`, the
scalar's tag only in the file's name, `run-<run>-tag-<tag>.csv` (a `/` in the tag written `_`). The value is read
under that tag (`train_reward` then reads as any log's `train_reward`, a reward by the name tables), said; a file
renamed without its tag keeps `Value`, which `--map reward=Value` reads."""

from __future__ import annotations

import re
from pathlib import Path

COLUMNS = frozenset({"Wall time", "Step", "Value"})
_NAME = re.compile(r"-tag-(.+)\.csv$", re.IGNORECASE)


def tag_of(source: str) -> str | None:
    """The tag a TensorBoard CSV's file name carries, or None."""
    match = _NAME.search(Path(source).name)
    return match.group(1) if match else None


def named_value(rows: list, keys: set[str], source: str, warnings: list[str]) -> list:
    """The rows with `Value` read under the file name's tag where the table is TensorBoard's (COLUMNS), said; else as
    they are."""
    tag = tag_of(source)
    if tag is None or not keys <= COLUMNS or "Value" not in keys:
        return rows
    warnings.append(f"a TensorBoard CSV of one scalar: its Value read as {tag!r}, the tag its file name carries")
    return [(step, {(tag if k == "Value" else k): v for k, v in record.items()}) for step, record in rows]
