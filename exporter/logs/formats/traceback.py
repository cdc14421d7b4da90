"""``traceback``: a Python traceback, the way a training process dies.

``Traceback (most recent call last):`` opens it (with or without a rank prefix such as
torchrun's ``[rank0]:``); its last line names the exception, ``torch.OutOfMemoryError: CUDA
out of memory. Tried to allocate ...``. The parser reads each of the two on its own; the
accumulator (:mod:`exporter.logs.accumulate`) holds a traceback open from its first line and
takes an exception line only while one is open, so a line that merely mentions an error is
never a crash. A traceback the log goes on after (the run kept training) is no failure.
"""

from __future__ import annotations

import re

from ...core.model import ProgressReport
from ..lines import EMPTY, Format, LineReport

MAX_FAILURE = 200  # characters of the exception line kept (its message can be a page)
# torchrun ("[rank0]: "), Ray ("(TaskRunner pid=87031) "), plain.
_PREFIX = r"(?:\[(?:rank|Rank|RANK)\s*\d+\]:\s*|\(\w+ pid=\d+(?:, ip=[\d.]+)?\)\s*)?"
_START = re.compile(_PREFIX + r"Traceback \(most recent call last\):\s*$")
# One space may lead it: the one after a launcher's prefix taken off before the parsers see
# the line ("[rank0]: RuntimeError: ..." reaches them as " RuntimeError: ..."); a traceback's
# code lines are indented by more.
_EXCEPTION = re.compile(
    r"^ ?" + _PREFIX + r"(?P<type>(?:[A-Za-z_]\w*\.){0,6}[A-Z]\w{0,80}"
    r"(?:Error|Exception|Exit|Interrupt|Failure|Fault))(?::\s*(?P<message>.*?))?\s*$"
)


def failure_text(kind: str, message: str | None) -> str:
    """``Type: message``, at most :data:`MAX_FAILURE` characters."""
    text = f"{kind}: {message}" if message else kind
    return text if len(text) <= MAX_FAILURE else text[: MAX_FAILURE - 1] + "…"


# What a launcher raises once a worker it ran died: torchrun's ChildFailedError (its summary
# box follows: "Root Cause (first observed failure)"), accelerate launch's and DeepSpeed's
# CalledProcessError over the command they ran. The worker's own exception is the cause.
_LAUNCHER_FAILURES = ("ChildFailedError", "CalledProcessError")


def cause(earlier: str | None, new: str) -> str:
    """The run's failure once a traceback ends in ``new``: ``earlier``, a worker's exception
    read before it and still standing, where ``new`` is only a launcher's word that a worker
    died; else ``new``."""
    kind = new.split(":", 1)[0]
    if earlier is not None and kind.endswith(_LAUNCHER_FAILURES):
        return earlier
    return new


def parse_traceback(msg: str, now: float) -> LineReport | None:
    if "Traceback" in msg and _START.search(msg) is not None:
        return LineReport("traceback", EMPTY)
    m = _EXCEPTION.match(msg)
    if m is None:
        return None
    return LineReport("exception", ProgressReport(failure=failure_text(m["type"], m["message"])))


FORMAT = Format(
    "traceback",
    (
        "Traceback (most recent call last)",
        "Error",
        "Exception",
        "Exit",
        "Interrupt",
        "Failure",
        "Fault",
    ),
    parse_traceback,
)
