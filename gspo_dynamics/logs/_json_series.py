"""A JSON document of series, one list of points per metric: `{"train_reward": [{"step": 5, "value": 2.33}, ...],
"eval_reward": [...]}` (a loop's curves saved for plotting), or points as pairs `[[step, value], ...]`, or TensorBoard's
JSON download, triples `[[wall_time, step, value], ...]`. Read as rows, one per step, each metric a column under its
key; what is not a series (a note, a model name, annotations) is left out and said.
"""

from __future__ import annotations

import math
import re

from gspo_dynamics.logs._names import is_eval_key, reward_like

# an object whose first list (after keys of plain values) holds a point: a {"step"...} object or a list of numbers
SERIES_DOCUMENT = re.compile(r'\A\s*\{[^\[\]]{0,2000}?"[^"\n]{1,200}"\s*:\s*\[\s*(?:\{\s*"(?:step|global_step|_step|'
                             r'iteration|wall_time)"|\[\s*[-+\d.])')
POINT_STEPS = ("step", "global_step", "_step", "iteration")  # a point object's step, under one of these names
POINT_VALUES = ("value", "y", "mean")  # ... and its value
_EVAL_BLOCK = re.compile(r"(?i)(?:eval|evaluation|val|valid|validation|test)(?:[_-]?(?:metrics|curves|series))?")
POINT_TIMES = ("wall_time", "timestamp", "time")  # ... and, left out, when it was written


def _point(item: object) -> tuple[float, float] | None:
    """(step, value) of one point, or None where `item` is none."""
    if isinstance(item, dict):
        steps = [item[k] for k in POINT_STEPS if k in item]
        values = [item[k] for k in POINT_VALUES if k in item]
        extra = set(item) - set(POINT_STEPS) - set(POINT_VALUES) - set(POINT_TIMES)
        pair = (steps[0], values[0]) if len(steps) == 1 and len(values) == 1 and not extra else None
    elif isinstance(item, list) and len(item) in (2, 3):
        pair = tuple(item[-2:])  # [step, value] or TensorBoard's [wall_time, step, value]
    else:
        pair = None
    if pair is None or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in pair):
        return None
    return float(pair[0]), float(pair[1])


def _one_block_down(document: dict, warnings: list[str]) -> list[dict] | None:
    """The rows of the one object of series held under a key of `document` that is no evaluation's (`eval`, `val`,
    `test`, ...), of those with a reward-like series where there are several; None where there is none, or several
    (runs, or splits: which is the training run's is not the document's to say)."""
    blocks = [(key, rows) for key, inner in document.items()
              if isinstance(inner, dict) and not is_eval_key(f"{key}/") and not _EVAL_BLOCK.fullmatch(str(key))
              and (rows := series_rows(inner, [], 1)) is not None]
    if len(blocks) > 1:  # a block with no reward-like series (a metadata list of pairs) is no run's
        blocks = [(key, rows) for key, rows in blocks if reward_like({k for row in rows for k in row})]
    if len(blocks) != 1:
        return None
    (key, rows), = blocks
    series_rows(document[key], warnings, 1)  # its own warnings, said once it is the one read
    warnings.append(f"the series are those under {str(key)!r}; the document's other keys were left out")
    return rows


def series_rows(document: object, warnings: list[str], depth: int = 0) -> list[dict] | None:
    """The rows of a series document (module docstring), sorted by step, each {"step": s, <series key>: value}; None
    where no value of the object is a list of at least two points. A series whose steps are not whole numbers is no
    series. Series held one object down (`{"metadata": {...}, "metrics": {"reward": [...]}}`) are read there, said."""
    if not isinstance(document, dict):
        return None
    if depth == 0 and not any(isinstance(items, list) for items in document.values()):
        return _one_block_down(document, warnings)
    series, other = {}, []
    for key, items in document.items():
        points = [_point(item) for item in items] if isinstance(items, list) and len(items) >= 2 else None
        if points is not None and None not in points and all(s == math.floor(s) for s, _ in points):
            series[str(key)] = points
        else:
            other.append(str(key))
    if not series:
        return None
    if other:
        warnings.append(f"a document of series ({', '.join(map(repr, series))}): its other keys were left out "
                        f"({', '.join(map(repr, other[:8]))}{' and more' if len(other) > 8 else ''})")
    rows: dict[int, dict] = {}
    for key, points in series.items():
        for step, value in points:
            rows.setdefault(int(step), {"step": int(step)})[key] = value
    return [rows[step] for step in sorted(rows)]
