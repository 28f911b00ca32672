"""How the diagnosis text writes its numbers and evidence: an evidence item as one line (`signal = value (threshold
...)`), a number (n/a where the JSON has null), and the `columns` line (which column each series came from)."""

from __future__ import annotations

import math


# The series a reader of the answer looks for first, and how the `columns` line names them.
_SHOWN_COLUMNS = (("reward", "reward"), ("entropy", "entropy"), ("mean_length", "length"), ("kl_ref", "kl"),
                  ("grad_norm", "grad norm"))


def _column_lines(s: dict, explain: bool) -> list[str]:
    """`columns` (which column became reward, entropy, length, kl, grad norm; how many were left unread) and, with
    `explain`, `unread` (which)."""
    found = {c["series"]: c["column"] for c in s["columns"]}
    shown = ", ".join(f"{label} {found[name]!r}" if name in found else f"{label} none" for name, label in _SHOWN_COLUMNS)
    unread = s.get("unread", [])
    more = f"; {len(unread)} column(s) unread{'' if explain else ' (--explain lists them)'}" if unread else ""
    lines = [f"columns    {shown}{more}"]
    if explain and unread:
        lines.append("unread     " + ", ".join(map(repr, unread)))
    return lines


def _fmt(value) -> str:
    """A number as the text prints it; a non-finite or absent one (null in the JSON) as n/a."""
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.4g}" if math.isfinite(value) else "n/a"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    return str(value)


def _evidence_text(e: dict) -> str:
    text = ("! " if e.get("caveat") and not e.get("holds", False) else "") + f"{e['signal']} = {_fmt(e['value'])}"
    if "threshold" in e:
        side = _side_text(e["side"]) + " " if "side" in e else ""
        text += f" (threshold {side}{_fmt(e['threshold'])}{'' if e.get('holds', True) else ': not met'})"
    extra = {k: v for k, v in e.items() if k not in ("signal", "value", "threshold", "steps", "side", "holds", "caveat")}
    if extra:
        text += "; " + ", ".join(f"{k} {_fmt(v)}" for k, v in extra.items())
    if e.get("steps"):
        text += f"  [steps {e['steps'][0]}-{e['steps'][1]}]"
    return text


def _side_text(side: str) -> str:
    """A side as the text prints it: "|<=" as "|x| <=" (the value's magnitude against the threshold)."""
    return f"|x| {side[1:]}" if side.startswith("|") else side
