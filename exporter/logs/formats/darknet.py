"""``darknet``: Darknet's line per iteration (YOLO's own trainer, pjreddie's and AlexeyAB's).

     957: 0.660188, 0.689227 avg loss, 0.000839 rate, 3.315456 seconds, 61248 images

The iteration (batches done, from 1), the iteration's loss, the running average of the loss,
the learning rate, the iteration's seconds and the images seen so far (detector.c's
``train_detector``; AlexeyAB/darknet#1464 says which is which). The values have no names: the
line's shape is all there is, so only this shape is read. The region lines around it
(``v3 (mse loss, ...) Region 82 ..., loss = 316.45``) are one YOLO layer's part of the next
iteration, never the run's loss.
"""

from __future__ import annotations

import re

from ..lines import Format, LineReport, native
from .pairs import PRINTF_NUMBER, number

_NUM = PRINTF_NUMBER
_LINE = re.compile(
    rf"^\s*(?P<i>\d{{1,9}}): (?P<loss>{_NUM}), (?P<avg>{_NUM}) avg(?: loss)?, "
    rf"(?P<lr>{_NUM}) rate, (?P<seconds>{_NUM}) seconds, (?P<images>\d{{1,15}}) images\b"
)


def parse_darknet(msg: str, now: float) -> LineReport | None:
    m = _LINE.match(msg)
    if m is None:
        return None
    loss, avg, lr, images = (number(m[k]) for k in ("loss", "avg", "lr", "images"))
    if loss is None or avg is None or lr is None or images is None:
        return None
    doc: dict[str, object] = {
        "step": int(m["i"]),
        "loss": loss,
        "learning_rate": lr,
        "metrics": {"average_loss": avg, "images": images},
    }
    return native(doc, now, "darknet")


FORMAT = Format("darknet", (" rate, ",), parse_darknet)
