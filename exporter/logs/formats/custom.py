"""Formats users add themselves, for the long tail of what the world prints: named regular
expressions in the config file (``log_formats``), whose named groups say what a line holds.

    log_formats:
      myloop:
        regex: 'ep (?P<epoch>\\d+) it (?P<step>\\d+)/(?P<total>\\d+) L=(?P<loss>\\S+)'

Every configured format is tried after the built-in ones on every log; a pod annotated
``training-progress.io/log-format: NAME`` has that format tried before them (docs/logs.md).
Each is checked once, at start: a pattern that does not compile, a group this reader does
not know, or none that it reads is an error that names the format and the group.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from ..lines import Format, LineReport, native
from .pairs import number

# The named groups a format may have, and the report field each fills.
GROUPS = {
    "step": "step",
    "total": "max_steps",
    "loss": "loss",
    "eval_loss": "eval_loss",
    "epoch": "epoch",
    "total_epochs": "max_epochs",
    "learning_rate": "learning_rate",
    "tokens_per_second": "tokens_per_second",
    "final": "final",
}
_INTEGERS = {"step", "total"}
MAX_FORMATS = 32
MAX_PATTERN = 2048
_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")


class FormatError(ValueError):
    """A configured format that cannot be used; the message names it and what is wrong."""


def _parser(name: str, pattern: re.Pattern[str]) -> Any:
    groups = [g for g in pattern.groupindex if g in GROUPS]

    def parse(msg: str, now: float) -> LineReport | None:
        m = pattern.search(msg)
        if m is None:
            return None
        doc: dict[str, object] = {}
        metrics: dict[str, float] = {}
        for group in groups:
            text = m.group(group)
            if text is None or text == "":
                continue
            if group == "final":
                doc["final"] = True
                continue
            value = number(text.strip().rstrip("%"))
            if value is None:
                return None  # the line is not what the format says it is: read nothing
            if group in _INTEGERS:
                if not math.isfinite(value) or value != int(value) or value < 0:
                    return None
                doc[GROUPS[group]] = int(value)
            elif group == "tokens_per_second":
                metrics["tokens_per_second"] = value
            else:
                doc[GROUPS[group]] = value
        if metrics:
            doc["metrics"] = metrics
        return native(doc, now, name) if doc else None

    return parse


def compile_formats(spec: Any, builtin: frozenset[str]) -> tuple[Format, ...]:
    """The formats ``spec`` (the config's ``log_formats``: name -> {regex: ...}) describes.
    Raises :class:`FormatError` naming the format and the problem."""
    if not isinstance(spec, Mapping):
        raise FormatError("log_formats must map format names to {regex: ...}")
    if len(spec) > MAX_FORMATS:
        raise FormatError(f"log_formats: at most {MAX_FORMATS} formats, not {len(spec)}")
    out: list[Format] = []
    for name, body in spec.items():
        name = str(name)
        where = f"log_formats: format {name!r}"
        if not _NAME.match(name):
            raise FormatError(f"{where}: a name is lower-case letters, digits, _ and -")
        if name in builtin:
            raise FormatError(f"{where}: {name!r} is a built-in format's name")
        regex = body.get("regex") if isinstance(body, Mapping) else body
        if not isinstance(regex, str) or not regex:
            raise FormatError(f"{where}: needs a regex")
        extra = set(body) - {"regex"} if isinstance(body, Mapping) else set()
        if extra:
            raise FormatError(f"{where}: unknown key {sorted(extra)[0]!r} (only regex)")
        if len(regex) > MAX_PATTERN:
            raise FormatError(f"{where}: the regex is longer than {MAX_PATTERN} characters")
        try:
            pattern = re.compile(regex)
        except re.error as err:
            raise FormatError(f"{where}: the regex does not compile: {err}") from None
        unknown = sorted(set(pattern.groupindex) - set(GROUPS))
        if unknown:
            raise FormatError(
                f"{where}: unknown group {unknown[0]!r} (the groups it may name: "
                f"{', '.join(GROUPS)})"
            )
        if not pattern.groupindex:
            raise FormatError(f"{where}: names none of the groups {', '.join(GROUPS)}")
        out.append(Format(name, (), _parser(name, pattern)))
    return tuple(out)
