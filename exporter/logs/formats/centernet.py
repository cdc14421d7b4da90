"""``centernet``: the progress bar of CenterNet's trainer and the trackers built on it
(FairMOT, CenterTrack and their forks), ``progress.bar.Bar`` with the losses in its suffix::

    mot/default |####  | train: [1][15181/18030]|Tot: 5:50:23 |ETA: 1:05:53 |loss 0.7843 |...
    ctdet/coco_dla_1x |## | val: [125][2/6]|Tot: 0:00:00 |ETA: 0:00:01 |loss 116.4594 |...

(src/lib/trains/base_trainer.py: ``'{phase}: [{0}][{1}/{2}]|Tot: {total:} |ETA: {eta:} '``
with the 1-based epoch and the 0-based ``enumerate`` index of the batch, read as printed like
the other enumerate counters; then ``|{name} {avg:.4f}`` for each loss stat, the epoch's
running mean, the first the total: CenterNet's ``loss``, CenterTrack's ``tot``.) A ``val``
phase is an evaluation: its total is the eval loss and it gives no step. Where a frame
prints no phase and count (CenterTrack's ``ep70 |Tot: ...``) its stats are the train step's.
The ETA is the epoch's, not the run's, and is not read. Frames pasted without their carriage
returns run together on one line: the last is read.
"""

from __future__ import annotations

import re

from ..lines import Format, LineReport, native
from .pairs import PRINTF_NUMBER

_STAT = re.compile(rf"\|([A-Za-z_]\w{{0,40}}) ({PRINTF_NUMBER}) ")
_FRAME = re.compile(
    r"(?:(?P<phase>[A-Za-z]\w{0,19}): \[(?P<e>\d{1,6})\]\[(?P<i>\d{1,12})/(?P<n>\d{1,12})\])?"
    r"\|Tot: \d{1,6}:\d\d:\d\d \|ETA: \d{1,6}:\d\d:\d\d "
    rf"(?P<stats>(?:\|[A-Za-z_]\w{{0,40}} {PRINTF_NUMBER} )+)"
)


def parse_centernet(msg: str, now: float) -> LineReport | None:
    # Each stat is printed with a space after it ("|loss 0.7843 "); a log line's last may
    # have lost its own to the line's end.
    frames = list(_FRAME.finditer(msg + " "))
    if not frames:
        return None
    frame = frames[-1]
    stats = [(name, float(value)) for name, value in _STAT.findall(frame["stats"])]
    evaluation = frame["phase"] is not None and frame["phase"] != "train"
    (_, total), rest = stats[0], stats[1:]
    doc: dict[str, object] = {"eval_loss" if evaluation else "loss": total}
    if not evaluation:
        doc["metrics"] = dict(rest)
    if frame["phase"] == "train":
        e, i, n = int(frame["e"]), int(frame["i"]), int(frame["n"])
        if e >= 1 and n > 0 and i <= n:
            doc["step"], doc["epoch"] = (e - 1) * n + i, (e - 1) + i / n
    return native(doc, now, "centernet")


FORMAT = Format("centernet", ("|Tot: ",), parse_centernet)
