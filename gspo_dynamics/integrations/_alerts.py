"""What the TRL callback writes besides the guard's alerts (`_guard`): its log keys, the names `stop_on` takes,
the postmortem of a stopped run, and the W&B alert. No transformers import; `wandb` is imported only to send an
alert."""

from __future__ import annotations

import logging
from gspo_dynamics._errors import ConfigError
from gspo_dynamics._plain import plain

LOGGER = logging.getLogger("gspo_dynamics")
PREFIX = "gspo_dynamics/"  # every key the callback adds to a log row starts with it
ALERT_KEY = PREFIX + "alert"  # 1.0 on the row where a new alert was raised (its text goes to the console, W&B, webhooks)
STOP_KEY = PREFIX + "stop"  # 1.0 on the row where the callback stopped the run
POSTMORTEM_NAME = "gspo_dynamics_postmortem.json"  # written into args.output_dir when the callback stops a run
POSTMORTEM_SCHEMA = 1  # the postmortem's version (docs/callback.md)
HEALTHY_MODES = ("healthy_saturation", "still_rising")  # a run in these is not heading anywhere bad
WANDB_TITLE_MAX = 63  # W&B refuses alert titles of 64 characters or more


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


def postmortem(step: int, stopped: list, diagnosis, last_healthy_step: int | None,
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


def _flag_json(flag) -> dict:
    """A flag (`_guard.Alert`: name, kind, confidence, record) as the postmortem writes it."""
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
