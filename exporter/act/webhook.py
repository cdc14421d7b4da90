"""Alertmanager's webhook notification (``webhook_configs``, payload version 4), parsed.

Only what acting needs is kept: each alert's status, labels and fingerprint. Anything
malformed is a :class:`WebhookError` with a short reason (counted, answered 400), never an
exception that reaches the server.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

MAX_BODY_BYTES = 1024 * 1024
MAX_ALERTS = 1000  # per notification; Alertmanager's max_alerts should be lower
MAX_LABEL_CHARS = 256


class WebhookError(ValueError):
    """A notification that cannot be used; ``reason`` is a short, bounded label value."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class Alert:
    """One alert of a notification."""

    name: str
    status: str  # "firing" or "resolved"
    fingerprint: str
    starts_at: str
    labels: tuple[tuple[str, str], ...]

    def label(self, name: str) -> str:
        """The label's value, or "" (Prometheus' own convention for a missing label)."""
        return dict(self.labels).get(name, "")


def _labels(raw: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(raw, dict):
        raise WebhookError("invalid_alert", "an alert's labels must be an object")
    out = []
    for key, value in raw.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise WebhookError("invalid_alert", "label names and values must be strings")
        if len(key) > MAX_LABEL_CHARS or len(value) > MAX_LABEL_CHARS:
            raise WebhookError("invalid_alert", "a label is longer than 256 characters")
        out.append((key, value))
    return tuple(sorted(out))


def _alert(raw: Any) -> Alert:
    if not isinstance(raw, dict):
        raise WebhookError("invalid_alert", "each alert must be an object")
    labels = _labels(raw.get("labels"))
    status = raw.get("status")
    if status not in ("firing", "resolved"):
        raise WebhookError("invalid_alert", "an alert's status must be firing or resolved")
    fingerprint = raw.get("fingerprint")
    starts_at = raw.get("startsAt", "")
    if not isinstance(fingerprint, str) or not fingerprint or len(fingerprint) > 64:
        raise WebhookError("invalid_alert", "an alert needs its fingerprint")
    if not isinstance(starts_at, str) or len(starts_at) > 64:
        raise WebhookError("invalid_alert", "startsAt must be an RFC 3339 string")
    name = dict(labels).get("alertname", "")
    return Alert(name, status, fingerprint, starts_at, labels)


def parse_notification(body: bytes) -> list[Alert]:
    """The alerts of one webhook notification, in the order Alertmanager sent them."""
    if len(body) > MAX_BODY_BYTES:
        raise WebhookError("oversize", f"the notification exceeds {MAX_BODY_BYTES} bytes")
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError) as err:
        raise WebhookError("invalid_json", f"not JSON: {err}") from None
    if not isinstance(doc, dict):
        raise WebhookError("invalid_notification", "the notification must be an object")
    if doc.get("version") != "4":
        raise WebhookError("unsupported_version", "only webhook payload version 4 is understood")
    alerts = doc.get("alerts")
    if not isinstance(alerts, list):
        raise WebhookError("invalid_notification", "alerts must be a list")
    if len(alerts) > MAX_ALERTS:
        raise WebhookError("too_many_alerts", f"more than {MAX_ALERTS} alerts in one notification")
    return [_alert(a) for a in alerts]
