"""Plain Python numbers for JSON: the base layer's one converter, shared by fit and diagnose."""

from __future__ import annotations

import math

import numpy as np


def plain(value):
    """`value` with numpy scalars as bool / int / float, non-finite floats as None, dict keys as
    str and tuples as lists, recursively (what `json.dumps(..., allow_nan=False)` accepts)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    return value
