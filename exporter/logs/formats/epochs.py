"""``epochs``: a line that is nothing but an epoch's header, as hand-written loops print it
before counting the epoch's batches: ``--- Epoch 2 ---``, ``Epoch 2``, ``Epoch: 2``,
``===== Epoch 2 of 10 =====``. (Keras' ``Epoch 2/10`` is the ``keras`` format's.)

It says nothing alone; the accumulator (:mod:`exporter.logs.epoch_counter`) reads the counts
printed under it as the epoch's once they start over.
"""

from __future__ import annotations

import re

from ...core.model import ProgressReport
from ..lines import Format, LineReport

_HEADER = re.compile(
    # A logger's level before it: bracketed ("[INFO] Epoch 1/30 started", SSL-ViT's log) or
    # ending its head ("INFO     colossalai - colossalai - INFO: [Epoch 5 / Train]:", the
    # legacy Colossal-AI Trainer's hook, whose values Rich's handler wraps onto the next line).
    r"^(?:\[(?:INFO|DEBUG|NOTICE)\]\s*|.{0,120}?\bINFO:\s+)?"
    r"[\s\-=*#>\[]*(?:Starting\s+)?(?:Epoch|epoch|EPOCH)(?::\s*|\s+)(?P<e>\d{1,6})"
    r"(?:\s*(?:/|\bof\b)\s*(?P<n>\d{1,6}))?(?:\s*/\s*Train\])?"
    r"(?:\s+(?:started|starts|begins|begin|start))?[\s\-=*#<:]*$"
)


def parse_epochs(msg: str, now: float) -> LineReport | None:
    m = _HEADER.match(msg)
    if m is None:
        return None
    epochs = int(m["n"]) if m["n"] else 0
    report = ProgressReport(max_epochs=float(epochs) if epochs else None)
    return LineReport("epochs", report, epoch_of=(int(m["e"]), epochs))


FORMAT = Format("epochs", ("Epoch", "epoch", "EPOCH"), parse_epochs)
