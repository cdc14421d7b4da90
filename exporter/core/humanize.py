"""Numbers for people: the one formatting of durations and losses that the status page,
``top``, ``kubectl progress`` and the state reasons share. Pure; imports nothing."""

from __future__ import annotations

import math

# At and beyond this many seconds (1000 days), a duration reads ">999d": an ETA of 2^62 steps
# at a step a second is 53 billion days, which says nothing more and would stretch every
# table it is in; infinity (a JSON 1e999 parses as one) cannot be made an int at all.
LONGEST_SHOWN = 1000 * 86400.0


def duration(seconds: float | None) -> str:
    """A short human duration: 45s, 1m16s, 2m, 12m, 3h05m, 2d04h, ">999d" from 1000 days on
    (and for infinity); "-" when unknown. Seconds are kept under ten minutes, where a
    minute is a large share (an ETA of 1m16s and its bound of 1m47s are not both "1m").
    The one format of the pages, ``top``, ``kubectl progress`` and the charts (whose
    script holds a copy, checked against this). Never longer than seven characters,
    never raises."""
    if seconds is None or math.isnan(seconds):
        return "-"
    if seconds >= LONGEST_SHOWN:
        return ">999d"
    s = int(max(0.0, seconds))
    if s < 60:
        return f"{s}s"
    if s < 600 and s % 60:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def format_loss(loss: float | None) -> str:
    """A loss for a table cell: four significant digits, NaN as NaN, none as a dash."""
    if loss is None:
        return "-"
    if math.isnan(loss):
        return "NaN"
    return f"{loss:.4g}"


def setting(seconds: float) -> str:
    """A duration as a setting is written (and parsed back): 30m, 2h, 10s, 1.5s."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"
