"""A structured logger's JSON record around a message: the message it carries.

Why it exists: clusters that ship logs to Elasticsearch, Loki or Cloud Logging often have
scripts log JSON, one object per line (python-json-logger's ``{"asctime": ..., "levelname":
"INFO", "message": ...}``, structlog's ``{"event": ..., "level": "info", "timestamp": ...}``,
Google's ``{"severity": ..., "message": ...}``, ECS' ``{"@timestamp": ..., "log.level": ...,
"message": ...}``, zap-style ``{"level": ..., "ts": ..., "msg": ...}``, Ray's JSON logging).
The message is the line the script would have printed bare; read whole, the record hides
the shapes read from a line's start (a Keras header, a table's rows, a tool's end) and
Trainer's dicts in quotes. :func:`record_message` gives that message. Pure.
"""

from __future__ import annotations

import json

# Where each library puts the message: python-json-logger, Google's, ECS' and Ray's
# "message"; zap's, logrus' and Kubernetes' "msg"; structlog's "event".
_MESSAGE_KEYS = ("message", "msg", "event")
# A key no metrics line has and every logger's record does: its level, time or origin.
# One of them beside the message makes the object a log record, not a script's own JSON
# that happens to hold a "message".
_RECORD_KEYS = frozenset(
    {
        "level",
        "levelname",
        "levelno",
        "severity",
        "log.level",
        "lvl",
        "asctime",
        "@timestamp",
        "timestamp",
        "time",
        "ts",
        "logger",
        "logger_name",
        "caller",
        "filename",
        "lineno",
        "funcName",
        "pathname",
    }
)
# A record larger than this is not looked into (the reader's line bound is larger; a record
# is one message and a few fields).
MAX_RECORD = 32 * 1024


def record_message(line: str) -> str | None:
    """Return the message of ``line`` where it is one JSON log record, else None.

    The line must be a whole JSON object with a string under a message key and one of a
    logger's own keys (level, time, origin) beside it. The message keeps its own line
    breaks (a logger's multi-line message: a table, a traceback)."""
    if len(line) > MAX_RECORD or not (line.startswith('{"') and line.endswith("}")):
        return None
    if '"message"' not in line and '"msg"' not in line and '"event"' not in line:
        return None  # the common case (a Trainer's or DETR's JSON line) costs no parse
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):  # RecursionError: arrays nested thousands deep
        return None
    if not isinstance(value, dict) or _RECORD_KEYS.isdisjoint(value):
        return None
    for key in _MESSAGE_KEYS:
        message = value.get(key)
        if isinstance(message, str):
            return message
    return None
