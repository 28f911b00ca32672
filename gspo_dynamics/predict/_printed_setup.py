"""A run's config read from its own console log, where no --config gives one: verl prints its resolved config when it
starts (`logs.printed_config`), so the log of a verl run holds the lr, G and T it ran with.

    setup, lines = setup_from_log("train.log")   # RunSetup or None; lines say where the config came from, or why not

Where the config leaves the run's length unset, verl's own `Total training steps: N` line gives it (said). The
printed config is the run's own record, not typed: its keys that verl 0.9.1's schema lacks (another release's)
are read past and counted, never refused as typos. A config the reader refuses (a critic's GAE, one response per
prompt), one that does not parse, or several different ones printed in one log are said in a note, and the answer
goes on without a config.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.logs import PRINTED_CONFIG_HEAD, printed_config
from gspo_dynamics.predict._configs import read_run_config
from gspo_dynamics.predict._run_setup import RunSetup

_TOTAL = re.compile(r"Total training steps: (\d+)")  # verl's trainer, once it has worked out the run's length


def printed_total(text: str) -> int | None:
    """The run's length verl printed (`Total training steps: N`: total_training_steps, else the epochs times the
    dataloader's batches), where every such line in `text` says the same N; None otherwise."""
    totals = {int(n) for n in _TOTAL.findall(text)}
    return totals.pop() if len(totals) == 1 else None


def setup_from_log(path: str | Path, *, overrides: list[str] | None = None,
                   run_steps: int | None = None) -> tuple[RunSetup | None, list[str]]:
    """(the RunSetup of the config the log printed, lines saying so: part of the answer) where it printed one the
    reader takes; (None, a line saying why not: a note) where it printed one the reader refuses; (None, []) where the
    log is no text file or prints none. `overrides` and `run_steps` as `read_run_config` takes them (predict's --set
    and --run-steps on the printed config)."""
    path = Path(path)
    try:
        if not path.is_file():
            return None, []
        with path.open("rb") as f:
            head = f.read(PRINTED_CONFIG_HEAD)
    except OSError:
        return None, []
    if b"\x00" in head[:4096]:  # binary (TensorBoard events): no printed text
        return None, []
    text = head.decode("utf-8", errors="replace")
    found = printed_config(text)
    if found is None:
        return None, []
    where = f"the {found.framework} config the log printed at line {found.line}"
    if found.config is None:
        return None, [f"{where} was not read: {found.why}; --config FILE gives the run's config"]
    total = printed_total(text) if run_steps is None else None  # the length verl worked out, where the config's unset
    lines = [f"read from {where} (--config FILE reads another)"]
    try:
        setup = read_run_config(found.config, overrides=overrides, allow_unknown=True, run_steps=run_steps)
        if setup.run_steps is None and total is not None:
            length = [f"trainer.total_training_steps={total}", *(overrides or ())]
            setup = read_run_config(found.config, overrides=length, allow_unknown=True)
            lines[0] += f"; trainer.total_training_steps {total} from its `Total training steps: {total}` line"
    except ConfigError as error:
        return None, [f"{where} was not read ({error}); --config FILE gives the run's config"]
    if setup.unknown:
        lines[0] += f"; {len(setup.unknown)} of its keys are not in verl 0.9.1's schema (the run's release): not read"
    return dataclasses.replace(setup, unknown=(), nearest=()), lines
