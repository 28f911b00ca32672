"""What the TRL callback makes of one `Diagnosis`: its flags, their log keys and messages, the postmortem of a
stopped run, and the W&B alert. No transformers import; `wandb` is imported only to send an alert.

A flag is a failure mode whose verdict reaches the alert level (`min_confidence`), or a finding (read straight
off the logged metrics, so at confidence 1 when present) that is not a note:

    flags(d, level) = [v in d.verdicts: v.mode not healthy, v.confidence >= level]
                    + [f in d.findings: f.severity != "note" (or f named in stop_on)]
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from gspo_dynamics._errors import ConfigError
from gspo_dynamics._plain import plain

LOGGER = logging.getLogger("gspo_dynamics")
PREFIX = "gspo_dynamics/"  # every key the callback adds to a log row starts with it
ALERT_KEY = PREFIX + "alert"  # 1.0 on the row where a new alert was raised
WARNING_KEY = PREFIX + "warning"  # the new alerts' text on that row (" | " between two)
STOP_KEY = PREFIX + "stop"  # 1.0 on the row where the callback stopped the run
POSTMORTEM_NAME = "gspo_dynamics_postmortem.json"  # written into args.output_dir when the callback stops a run
POSTMORTEM_SCHEMA = 1  # the postmortem's version (docs/callback.md)
HEALTHY_MODES = ("healthy_saturation", "still_rising")  # a run in these is not heading anywhere bad
FINDING_CONFIDENCE = 1.0  # a finding is read off the logged metrics: present or not
WANDB_TITLE_MAX = 63  # W&B refuses alert titles of 64 characters or more


@dataclass(frozen=True)
class Flag:
    """A failure mode or finding the callback reports at one diagnosis."""

    name: str  # a failure mode (diagnose.MODES) or a finding (diagnose.FINDINGS)
    kind: str  # "mode" or "finding"
    confidence: float  # the verdict's confidence; FINDING_CONFIDENCE for a finding
    record: Any  # the Verdict or the Finding

    @property
    def key(self) -> str:
        return PREFIX + self.name


def stoppable_names() -> tuple[str, ...]:
    """Every name `stop_on` accepts: the failure modes (diagnose's modes but the healthy ones), then the findings."""
    from gspo_dynamics.diagnose import FINDINGS, MODES

    return tuple(m for m in MODES if m not in HEALTHY_MODES) + FINDINGS


def check_stop_on(stop_on) -> tuple[str, ...]:
    """`stop_on` (None, one name or an iterable of names) as a tuple of names, each a failure mode or finding."""
    if stop_on is None:
        return ()
    try:
        names = (stop_on,) if isinstance(stop_on, str) else tuple(stop_on)
    except TypeError:
        raise ConfigError(f"stop_on must be a list of failure modes or findings, got {stop_on!r}") from None
    valid = stoppable_names()
    for name in names:
        if name not in valid:
            raise ConfigError(f"stop_on: {name!r} is not a failure mode or finding; "
                              f"expected some of {', '.join(valid)}")
    return names


def flags(diagnosis, level: float, named: tuple[str, ...] = ()) -> list[Flag]:
    """The failure modes at confidence >= level, then the findings that are not notes (or are `named`)."""
    from gspo_dynamics.diagnose import FINDING_NOTE as NOTE

    found = [Flag(v.mode, "mode", float(v.confidence), v) for v in diagnosis.verdicts
             if v.mode not in HEALTHY_MODES and v.confidence >= level]
    found += [Flag(f.name, "finding", FINDING_CONFIDENCE, f) for f in getattr(diagnosis, "findings", None) or []
              if f.severity != NOTE or f.name in named]
    return found


def message(step: int, flag: Flag) -> str:
    """One line: the step, what was found (with its confidence or severity), and its advice."""
    advice = getattr(flag.record, "advice", "") or ""
    if isinstance(advice, (list, tuple)):
        advice = "; ".join(map(str, advice))
    if flag.kind == "mode":
        text = f"gspo-dynamics: at step {step} the run looks like {flag.name} (confidence {flag.confidence:.2f})"
    else:
        text = f"gspo-dynamics: at step {step} {flag.record.summary} ({flag.name}, {flag.record.severity})"
    return f"{text}: {advice}" if advice else text


def postmortem(step: int, stopped: list[Flag], diagnosis, last_healthy_step: int | None,
               stop_on: tuple[str, ...], stop_confidence: float) -> dict:
    """The postmortem of a stopped run (docs/callback.md): what stopped it, with the evidence and advice as
    diagnose's JSON writes them, the one thing to do, and the last diagnosed step with no flag."""
    return plain({
        "schema": POSTMORTEM_SCHEMA,
        "step": step,
        "stopped_on": [_flag_json(f) for f in stopped],
        "action": diagnosis.action(),
        "headline": diagnosis.headline(),
        "last_healthy_step": last_healthy_step,
        "stop_on": list(stop_on),
        "stop_confidence": stop_confidence,
    })


def _flag_json(flag: Flag) -> dict:
    record = flag.record.to_json()
    item = {"name": flag.name, "kind": flag.kind, "confidence": flag.confidence}
    if flag.kind == "finding":
        item.update(severity=record["severity"], summary=record["summary"])
    return {**item, "evidence": record["evidence"], "advice": record["advice"]}


def reporters(args) -> list[str]:
    """The integrations `args.report_to` names, as a list ("none" and None: [])."""
    report_to = getattr(args, "report_to", None) or []
    report_to = [report_to] if isinstance(report_to, str) else list(report_to)
    return [r for r in report_to if r != "none"]


def reports_to_wandb(args) -> bool:
    """Whether the trainer's `args.report_to` names W&B ("wandb", or "all" before transformers expands it)."""
    return bool({"wandb", "all"} & set(reporters(args)))


def wandb_alert(args, title: str, text: str, level: str) -> bool:
    """`wandb.alert(title, text, level)` when W&B is in `args.report_to` and a run is active; wandb is imported
    only then. level: "INFO", "WARN" or "ERROR". True when sent; a failure is logged, never raised."""
    if not reports_to_wandb(args):
        return False
    try:
        import wandb
    except ImportError:
        return False
    if getattr(wandb, "run", None) is None:
        return False
    level = getattr(getattr(wandb, "AlertLevel", None), level, level)  # the enum where wandb has it
    try:
        wandb.alert(title=title[:WANDB_TITLE_MAX], text=text, level=level)
    except Exception as error:  # an alert must never stop the training it reports on
        LOGGER.warning(f"gspo-dynamics: the W&B alert failed ({type(error).__name__}: {error})")
        return False
    return True
