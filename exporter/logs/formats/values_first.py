"""``values-first``: a line of comma-separated values, each printed before its name, after the
step where there is one (tinygrad's training loops, examples/mlperf/model_train.py):

        10 4.40 s run, 11.8750 loss, 0.000000000005 LR, 1454.57 GB used, 394520.83 GFLOPS
    9.3798 loss, 0.000058412552 LR, 124.27 GB used, 5.09 s

A number before a word is prose anywhere else ("3 epochs left", "12 files, 3 folders"), so
only this shape is read: three parts or more, every one a value then its name, one of them
named ``loss``. A name that is a unit of time (``s``, ``s run``) is a duration, no metric.
"""

from __future__ import annotations

import re

from ..lines import Format, LineReport, native
from .pairs import PRINTF_NUMBER, Pair, number, to_fields

_PART = rf"{PRINTF_NUMBER} [A-Za-z][A-Za-z/ ]{{0,30}}?"
_LINE = re.compile(
    rf"^\s*(?:(?P<step>\d{{1,12}})\s+)?(?P<parts>{_PART}(?:,\s+{_PART}){{2,15}})\s*$"
)
_SPLIT = re.compile(rf"^(?P<value>{PRINTF_NUMBER}) (?P<name>.+)$")
_DURATIONS = frozenset({"s", "ms", "sec", "secs", "seconds"})


def parse_values_first(msg: str, now: float) -> LineReport | None:
    m = _LINE.match(msg)
    if m is None:
        return None
    pairs: list[Pair] = []
    for part in m["parts"].split(","):
        found = _SPLIT.match(part.strip())
        value = number(found["value"]) if found is not None else None
        if found is None or value is None:
            return None
        name = found["name"].strip()
        if name.split(" ", 1)[0] not in _DURATIONS:
            pairs.append(Pair(name, value))
    if not any(p.key == "loss" for p in pairs):
        return None
    fields = to_fields(pairs)
    doc: dict[str, object] = dict(fields.values)
    if m["step"] is not None:
        doc["step"] = int(m["step"])
    if fields.metrics:
        doc["metrics"] = fields.metrics
    return native(doc, now, "values-first")


FORMAT = Format("values-first", (" loss, ",), parse_values_first)
