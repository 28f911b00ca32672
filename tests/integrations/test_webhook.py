"""Webhook alerts against a local HTTP server (http.server in a thread): the Slack-compatible and the generic JSON
body, the filters, a failed post (an HTTP error, a refused connection, a hung server past its timeout) as one warning
and never an exception, and the alert file's errors as one sentence."""

from __future__ import annotations

import logging
import time

import pytest
from _http_server import Server

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.integrations._webhook import PAYLOAD_SCHEMA, Notifier, Webhook, load_alert_config


ALERT = dict(step=120, verdict="dynamical_instability", kind="mode", confidence=0.97, action="lower learning_rate",
             text="step 120: dynamical instability (confidence 0.97) — do lower learning_rate")


def test_slack_and_json_bodies_reach_the_server():
    with Server() as server:
        hooks = (Webhook(url=server.url + "/slack"), Webhook(url=server.url + "/json", format="json"))
        notifier = Notifier(hooks, run="lr1e-6")
        assert notifier.send("alert", **ALERT) == 2
    (p1, slack), (p2, generic) = server.posts
    assert (p1, p2) == ("/slack", "/json")
    assert slack == {"text": "gspo-dynamics [lr1e-6]: " + ALERT["text"]}
    assert generic == {"schema": PAYLOAD_SCHEMA, "source": "gspo-dynamics", "event": "alert", "run": "lr1e-6", **ALERT}
    assert notifier.sent == 2 and notifier.failed == 0


def test_events_and_names_filter_what_is_posted():
    with Server() as server:
        hooks = (Webhook(url=server.url + "/nan", names=("non_finite",)),
                 Webhook(url=server.url + "/end", events=("summary",), format="json"))
        notifier = Notifier(hooks)
        assert notifier.send("alert", **ALERT) == 0
        assert notifier.send("alert", **{**ALERT, "verdict": "non_finite", "kind": "finding"}) == 1
        assert notifier.send("summary", step=200, verdict="healthy_saturation", text="summary") == 2  # names: alerts only
    assert [p for p, _ in server.posts] == ["/nan", "/nan", "/end"]


@pytest.mark.parametrize("case", ["http_error", "refused", "timeout"])
def test_a_failed_post_is_one_warning_never_an_exception(case, caplog):
    with Server(status=500 if case == "http_error" else 200, delay=1.0 if case == "timeout" else 0.0) as server:
        url = server.url if case != "refused" else "http://127.0.0.1:9"
        notifier = Notifier((Webhook(url=url, timeout=0.2),))
        start = time.perf_counter()
        with caplog.at_level(logging.WARNING, logger="gspo_dynamics"):
            assert notifier.send("alert", **ALERT) == 0
        assert time.perf_counter() - start < 0.9  # the timeout bounds the wait
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "the alert post to" in lines[0] and lines[0].endswith("training goes on")
    assert notifier.failed == 1 and notifier.sent == 0


def test_the_alert_file_in_toml(tmp_path):
    path = tmp_path / "alerts.toml"
    path.write_text('min_confidence = 0.95\nrun = "sweep-3"\n[[webhook]]\nurl = "https://hooks.example/T/B"\n'
                    '[[webhook]]\nurl = "http://localhost:8080/a"\nformat = "json"\nevents = ["stop"]\ntimeout = 1\n')
    config = load_alert_config(path)
    assert config.guard == {"min_confidence": 0.95} and config.run == "sweep-3"
    assert [h.format for h in config.webhooks] == ["slack", "json"] and config.webhooks[1].events == ("stop",)


@pytest.mark.parametrize("text, needle", [
    ('[[webhook]]\nurl = "ftp://x"\n', "webhook url must be an http(s) URL"),
    ('[[webhook]]\nurl = "https://x"\nformat = "discord"\n', "webhook format must be one of slack, json"),
    ('[[webhook]]\nurl = "https://x"\ntimeout = 600\n', "webhook timeout must be in (0, 30]"),
    ('[[webhook]]\nurl = "https://x"\nevent = ["stop"]\n', "a webhook: unknown key 'event'"),
    ('[[webhook]]\nformat = "json"\n', "a webhook has no url"),
    ('webhooks = []\n', "unknown key 'webhooks'"),
])
def test_a_bad_alert_file_is_one_sentence(tmp_path, text, needle):
    path = tmp_path / "alerts.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=None) as error:
        load_alert_config(path)
    assert needle in str(error.value) and "\n" not in str(error.value)
