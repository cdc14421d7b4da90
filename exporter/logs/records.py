"""A structured logger's JSON record around a message: the message it carries.

Why it exists: clusters that ship logs to Elasticsearch, Loki or Cloud Logging often have
scripts log JSON, one object per line (python-json-logger's ``{"asctime": ..., "levelname":
"INFO", "message": ...}``, structlog's ``{"event": ..., "level": "info", "timestamp": ...}``,
Google's ``{"severity": ..., "message": ...}``, ECS' ``{"@timestamp": ..., "log.level": ...,
"message": ...}``, zap-style ``{"level": ..., "ts": ..., "msg": ...}``, Ray's JSON logging).
The message is the line the script would have printed bare; read whole, the record hides
the shapes read from a line's start (a Keras header, a table's rows, a tool's end) and
Trainer's dicts in quotes. The same holds for logfmt (logrus' and Go's slog text handler,
Python's logfmter: ``time=... level=info msg="..."``). :func:`read_record` gives that
message and the record's other fields. Pure.
"""

from __future__ import annotations

import json
import re
from typing import NamedTuple

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
# logfmt: a logger's key first (logrus' and slog's time or level, logfmter's "at"), then
# key=value pairs, the message under "msg", quoted where it holds a space.
_LOGFMT_START = re.compile(r'(?:time|ts|t|level|lvl|at)=(?:"|[^\s"=]{1,64} )')
# A logfmt pair of the logger's own: its time, level, origin.
_LOGGER_PAIR = re.compile(
    r'(?:^| )(?:time|ts|t|level|lvl|at|caller|source|logger|module)=(?:"(?:[^"\\]|\\.)*"|\S*)'
)
_LOGFMT_MESSAGE = re.compile(r'(?:^| )msg=(?:"((?:[^"\\]|\\.){0,32768})"|([^\s"]{1,4096}))(?= |$)')


class Record(NamedTuple):
    """A log record's message, and its own fields as text a reader takes where the
    message says nothing (structlog's ``log.info("train", step=10, loss=1.25)``)."""

    message: str
    fields: str  # JSON: the whole object; logfmt: its pairs but the logger's own and msg
    is_json: bool


def read_record(line: str) -> Record | None:
    """Return ``line`` as a log record, or None where it is none.

    A JSON record must be a whole object with a string under a message key and one of a
    logger's own keys (level, time, origin) beside it; a logfmt record starts with a
    logger's key (``time=``, ``level=``) and holds ``msg=``. The message keeps its own line
    breaks (a logger's multi-line message: a table, a traceback)."""
    if len(line) > MAX_RECORD:
        return None
    if not (line.startswith('{"') and line.endswith("}")):
        return _logfmt_record(line) if _LOGFMT_START.match(line) else None
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
            return Record(message, line, is_json=True)
    return None


def _logfmt_record(line: str) -> Record | None:
    """The ``msg`` of a logfmt line, its quotes and escapes undone (Go's quoting: JSON's
    escapes; where one is not JSON's, the text as it stands with ``\\"`` undone), and the
    line's other pairs."""
    found = _LOGFMT_MESSAGE.search(line)
    if found is None:
        return None
    fields = _LOGGER_PAIR.sub("", line[: found.start()] + line[found.end() :]).strip()
    if found.group(2) is not None:
        return Record(found.group(2), fields, is_json=False)
    message = quoted = found.group(1)
    if "\\" in quoted:
        try:
            message = json.loads('"' + quoted + '"')
        except ValueError:
            message = quoted.replace('\\"', '"')
    return Record(message, fields, is_json=False)
