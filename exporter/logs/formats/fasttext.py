"""``fasttext``: fastText's training progress line (its ``-verbose 2`` default), redrawn with a
carriage return while it trains::

    Progress: 41.3% words/sec/thread: 1767038 lr: 0.058725 avg.loss: 0.831745 ETA: 0h11m 2s

(src/fasttext.cc, ``printInfo``: the share of the words to process over all epochs, the rate,
the learning rate, the loss averaged since the start, ``loss:`` before 0.9, and the time
left.) No step is printed; the share is the run's progress. ``train`` prints the line once
more with a share of 1 after its threads have joined: ``Progress: 100.0%`` is the end (a share
just under 1 prints as 100.0 too, in the last moments of the run). StarSpace, fastText's
sibling, prints another line (:mod:`.starspace`).
"""

from __future__ import annotations

import re

from ..lines import Format, LineReport, native
from .pairs import PRINTF_NUMBER

_LINE = re.compile(
    rf"^\s*Progress:\s+(?P<share>\d{{1,3}}(?:\.\d+)?)%\s+words/sec/thread:\s+(?P<rate>\d{{1,12}})"
    rf"\s+lr:\s+(?P<lr>{PRINTF_NUMBER})\s+(?:avg\.)?loss:\s+(?P<loss>{PRINTF_NUMBER})\s+(?:ETA|eta):"
)


def parse_fasttext(msg: str, now: float) -> LineReport | None:
    """The progress, loss, learning rate and rate a fastText progress line says, or None."""
    line = _LINE.match(msg)
    if line is None:
        return None
    share = float(line["share"]) / 100
    doc: dict[str, object] = {
        "loss": float(line["loss"]),
        "learning_rate": float(line["lr"]),
        "metrics": {"words_per_second_per_thread": float(line["rate"])},
    }
    if 0 <= share <= 1:
        doc["progress"] = share
        doc["final"] = share == 1
    return native(doc, now, "fasttext")


FORMAT = Format("fasttext", ("words/sec/thread",), parse_fasttext)
