"""``starspace``: Facebook Research's StarSpace (C++), whose trainer prints one progress line per
refresh of an epoch::

    Epoch: 100.0%  lr: 0.000027  loss: 0.048544  eta: <1min   tot: 0h24m13s  (100.0%)

(src/starspace.cpp: the epoch's share, the learning rate, the loss, the run's remaining time,
its elapsed time and, in parentheses, the run's share done.) The share in parentheses is the
run's progress, so its 100.0 % ends the run; the epoch's own ``Epoch: 100.0%`` ends only an
epoch. No step is printed.
"""

from __future__ import annotations

import re

from ..lines import Format, LineReport, native
from .pairs import PRINTF_NUMBER

_LINE = re.compile(
    rf"^\s*Epoch: {PRINTF_NUMBER}%\s+lr: (?P<lr>{PRINTF_NUMBER})\s+loss: (?P<loss>{PRINTF_NUMBER})"
    r"\s+eta: .{1,20}?\s+tot: \S{1,20}\s+\((?P<share>\d{1,3}(?:\.\d+)?)%\)\s*$"
)


def parse_starspace(msg: str, now: float) -> LineReport | None:
    line = _LINE.match(msg)
    if line is None:
        return None
    share = float(line["share"]) / 100
    doc: dict[str, object] = {"loss": float(line["loss"]), "learning_rate": float(line["lr"])}
    if 0 <= share <= 1:
        doc["progress"] = share
        doc["final"] = share == 1  # the run's own share done: its last epoch is over
    return native(doc, now, "starspace")


FORMAT = Format("starspace", ("Epoch: ",), parse_starspace)
