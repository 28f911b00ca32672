"""Alerts where teams look: the live guard's alerts posted to webhooks, set in one config file (docs/watch.md).

    config = load_alert_config("alerts.toml")    # TOML, YAML or JSON (`_config_file`)
    notifier = Notifier(config.webhooks, run="grpo-lr1e-6")
    notifier.send("alert", step=120, verdict="dynamical_instability", kind="mode", confidence=0.97,
                  action="lower learning_rate to 5e-7", text="step 120: dynamical instability (0.97) — do ...")

A file:

    min_confidence = 0.9             # optional: the guard's settings (GuardSettings)
    hold_rows = 16
    run = "grpo-qwen-lr1e-6"         # optional: the run's name in every message (default: the log's / output_dir's)

    [[webhook]]
    url = "https://hooks.slack.com/services/T000/B000/XXXX"
    format = "slack"                 # "slack": {"text": ...} (Slack, Mattermost, Discord's /slack endpoint, ...)
                                     # "json": the versioned payload below
    events = ["alert", "stop", "summary"]   # optional, default all three
    names = ["dynamical_instability", "non_finite"]   # optional: only these alerts (default every alert)
    timeout = 3                      # optional, seconds (0 < timeout <= MAX_TIMEOUT)

The JSON payload (schema PAYLOAD_SCHEMA; a field's meaning changes only with a new number):
{"schema", "source": "gspo-dynamics", "event", "run", "step", "verdict", "kind", "confidence", "action", "text"}.

Nothing is sent unless a file names a webhook. A post is synchronous with its timeout (the training step waits at
most that long); a failed post is one warning on the `gspo_dynamics` logger and never an exception.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from dataclasses import dataclass
from urllib.parse import urlsplit

from gspo_dynamics._config_file import load_config_file
from gspo_dynamics._errors import ConfigError

LOGGER = logging.getLogger("gspo_dynamics")
PAYLOAD_SCHEMA = 1
EVENTS = ("alert", "stop", "summary")
FORMATS = ("slack", "json")
DEFAULT_TIMEOUT = 3.0  # seconds: a Slack webhook answers in well under a second; a hung one costs a step this much
MAX_TIMEOUT = 30.0  # the most a post may hold up training
TOP_KEYS = ("min_confidence", "hold_rows", "run", "webhook")
WEBHOOK_KEYS = ("url", "format", "events", "names", "timeout")


@dataclass(frozen=True, kw_only=True)
class Webhook:
    """One endpoint the alerts are posted to."""

    url: str  # http(s) URL
    format: str = "slack"  # "slack" ({"text": ...}) or "json" (the versioned payload)
    events: tuple[str, ...] = EVENTS  # which of "alert", "stop", "summary"
    names: tuple[str, ...] = ()  # only alerts about these modes / findings; () every one
    timeout: float = DEFAULT_TIMEOUT  # seconds

    def __post_init__(self) -> None:
        parts = urlsplit(self.url) if isinstance(self.url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigError(f"webhook url must be an http(s) URL, got {self.url!r}")
        if self.format not in FORMATS:
            raise ConfigError(f"webhook format must be one of {', '.join(FORMATS)}, got {self.format!r}")
        bad = [e for e in self.events if e not in EVENTS]
        if bad or not self.events:
            raise ConfigError(f"webhook events must be some of {', '.join(EVENTS)}, got {list(self.events)!r}")
        if isinstance(self.timeout, bool) or not isinstance(self.timeout, (int, float)) \
                or not 0 < self.timeout <= MAX_TIMEOUT:
            raise ConfigError(f"webhook timeout must be in (0, {MAX_TIMEOUT:g}] seconds, got {self.timeout!r}")

    def wants(self, event: str, name: str | None) -> bool:
        return event in self.events and (event != "alert" or not self.names or name in self.names)


@dataclass(frozen=True, kw_only=True)
class AlertConfig:
    """What one alert file sets: the guard's settings (as keyword arguments), the run's name, the webhooks."""

    guard: dict  # GuardSettings keywords given in the file
    run: str | None
    webhooks: tuple[Webhook, ...]


def load_alert_config(path) -> AlertConfig:
    """The alert file at `path` (module docstring); one ConfigError naming what is wrong."""
    data = load_config_file(path)
    if not isinstance(data, dict):
        raise ConfigError(f"the alert file {str(path)!r} must hold a table of keys, got {type(data).__name__}")
    _known(data, TOP_KEYS, f"the alert file {str(path)!r}")
    hooks = data.get("webhook", [])
    hooks = [hooks] if isinstance(hooks, dict) else hooks
    if not isinstance(hooks, list) or not all(isinstance(h, dict) for h in hooks):
        raise ConfigError(f"the alert file {str(path)!r}: webhook must be a table or a list of tables ([[webhook]])")
    webhooks = []
    for hook in hooks:
        _known(hook, WEBHOOK_KEYS, f"the alert file {str(path)!r}: a webhook")
        if "url" not in hook:
            raise ConfigError(f"the alert file {str(path)!r}: a webhook has no url")
        extra = {k: tuple(v) if isinstance(v, list) else v for k, v in hook.items() if k != "url"}
        webhooks.append(Webhook(url=hook["url"], **extra))
    run = data.get("run")
    if run is not None and not isinstance(run, str):
        raise ConfigError(f"the alert file {str(path)!r}: run must be a name (a string), got {run!r}")
    guard = {k: data[k] for k in ("min_confidence", "hold_rows") if k in data}
    return AlertConfig(guard=guard, run=run, webhooks=tuple(webhooks))


def _known(table: dict, keys: tuple[str, ...], where: str) -> None:
    unknown = sorted(set(table) - set(keys))
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r}; expected some of {', '.join(keys)}")


def payload(event: str, *, run: str | None, step: int | None, verdict: str | None, kind: str | None = None,
            confidence: float | None = None, action: str | None = None, text: str) -> dict:
    """The generic JSON payload (schema PAYLOAD_SCHEMA)."""
    return {"schema": PAYLOAD_SCHEMA, "source": "gspo-dynamics", "event": event, "run": run, "step": step,
            "verdict": verdict, "kind": kind, "confidence": confidence, "action": action, "text": text}


class Notifier:
    """Posts each event to the webhooks that want it; `sent` and `failed` count the posts."""

    def __init__(self, webhooks: tuple[Webhook, ...] = (), run: str | None = None) -> None:
        self.webhooks = tuple(webhooks)
        self.run = run
        self.sent = 0
        self.failed = 0

    def send(self, event: str, **fields) -> int:
        """Post `payload(event, run=self.run, **fields)` to every webhook that wants it; the number posted."""
        if event not in EVENTS:
            raise ValueError(f"unknown event {event!r}")
        body = payload(event, run=self.run, **fields)
        posted = 0
        for hook in self.webhooks:
            name = body["verdict"] if event == "alert" else None
            if hook.wants(event, name):
                posted += self._post(hook, body)
        return posted

    def _post(self, hook: Webhook, body: dict) -> int:
        if hook.format == "slack":
            prefix = f"gspo-dynamics [{self.run}]" if self.run else "gspo-dynamics"
            data = {"text": f"{prefix}: {body['text']}"}
        else:
            data = body
        request = urllib.request.Request(hook.url, data=json.dumps(data, allow_nan=False).encode("utf-8"),
                                         headers={"Content-Type": "application/json"}, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=hook.timeout) as response:
                response.read(1024)
        except (OSError, ValueError) as error:  # URLError, HTTPError, timeouts are OSErrors; never stop the run
            self.failed += 1
            LOGGER.warning(f"gspo-dynamics: the {body['event']} post to {urlsplit(hook.url).netloc} failed "
                           f"({_reason(error)}); training goes on")
            return 0
        self.sent += 1
        return 1


def _reason(error: Exception) -> str:
    if isinstance(error, urllib.error.HTTPError):
        return f"HTTP {error.code}"
    if isinstance(error, urllib.error.URLError):
        return str(error.reason)
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
