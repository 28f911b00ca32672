"""One metric dict of a console text, as the console reader keeps it (`_console.scan_console` makes them; the steps'
rules of `_console_interval` and `_console_rows` read them)."""

from __future__ import annotations

from typing import NamedTuple


class PrintedDict(NamedTuple):
    """A metric dict a console text printed, with what the reading of its step needs."""

    step: int | None  # its own step, or the counter's before it, or None
    record: dict
    is_eval: bool
    bars: list  # [the progress bar before it, the one after it] (each (n, total) or None)
    run: int  # the runs begun before it: transformers' banner or summary dict
    begun: str | None = None  # how its runs begin, where a message counting the rows marks them (`_counted_runs`)
