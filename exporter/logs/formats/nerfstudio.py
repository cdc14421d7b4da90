"""``nerfstudio``: the rows nerfstudio's ``LocalWriter`` prints while it trains (``ns-train``,
and the methods built on it: splatfacto, dn-splatter, sdfstudio...)::

    Step (% Done)       Train Iter (time)    ETA (time)           Train Rays / Sec
    -----------------------------------------------------------------------------------
    4310 (86.18%)       44.431 ms            30 s, 701.883 ms     14.51 M

(nerfstudio/utils/writer.py ``_print_stats``: ``f"{step} ({step / max_iter * 100:.02f}%)"``
padded to 20 characters, then each tracked statistic, a time as ``_format_time`` writes it.)
The row's step is the trainer's; its share is of the run's iterations, so it is the run's
progress (rounded: no whole total follows from it). No loss is printed. The header is
redrawn above the rows when the terminal is, or printed once: a row is read by its own
shape, the step and share then at least one time in ``_format_time``'s units.
"""

from __future__ import annotations

import re

from ..lines import Format, LineReport, native

_ROW = re.compile(
    r"^\s*(?P<step>\d{1,12}) \((?P<share>\d{1,3}\.\d{2})%\)\s{2,}"
    r"(?=.*?\b\d{1,9}(?:\.\d{1,6})? (?:ms|s|m|h|d)\b)"
)


def parse_nerfstudio(msg: str, now: float) -> LineReport | None:
    row = _ROW.match(msg)
    if row is None:
        return None
    share = float(row["share"]) / 100
    if not 0 <= share <= 1:
        return None
    return native({"step": int(row["step"]), "progress": share}, now, "nerfstudio")


FORMAT = Format("nerfstudio", ("%)  ",), parse_nerfstudio)
