"""``metric-logger``: the end of an epoch's loop as MetricLogger prints it.

The torchvision references' ``MetricLogger.log_every`` (and DeiT's, MAE's, DINO's, BEiT's and
their many copies) prints ``{header} Total time: 0:41:26 (0.1971 s / it)`` once the loop over
the epoch's batches is over; Salesforce LAVIS' runner does the same for each inner epoch
(``Train: data epoch: [0]; inner epoch [0] Total time: ...``). Under a training header
(``Epoch: [7]``, 0-based: ``range(start_epoch, epochs)``) the line says that epoch is done, so
the run is at its end (:attr:`~exporter.logs.lines.LineReport.epoch_done`, ``e + 1``); an
evaluation's (``Test:``) says nothing of training. reid-strong-baseline's ignite trainer
says the same of its 1-based epoch: ``Epoch 50 done. Time per batch: 0.679[s] ...``.
"""

from __future__ import annotations

import re

from ...core.model import ProgressReport
from ..lines import Format, LineReport

_LOOP_END = re.compile(
    r"(?:^|\s)(?:Epoch: \[(?P<e>\d{1,9})(?:/\d{1,9})?\]|inner epoch \[(?P<inner>\d{1,9})\])"
    r" Total time: \d{1,6}:\d\d:\d\d \(\d{1,6}\.\d{4} s / it\)\s*$"
)


# reid-strong-baseline's ignite handler on EPOCH_COMPLETED (and its re-ID forks): "Epoch 50
# done. Time per batch: 0.679[s] Speed: 376.9[samples/s]", ignite's 1-based epoch as printed
# (the accumulator puts the step at its end only where that end is the epoch under way).
_IGNITE_DONE = re.compile(r"(?:^|\s)Epoch (?P<e>\d{1,9}) done\. Time per batch: ")


def parse_loop_end(msg: str, now: float) -> LineReport | None:
    """The epochs done once a training header's loop ended, or None."""
    if (ignite := _IGNITE_DONE.search(msg)) is not None:
        return LineReport("metric-logger", ProgressReport(), epoch_done=int(ignite["e"]))
    m = _LOOP_END.search(msg)
    if m is None:
        return None
    done = int(m["e"] if m["e"] is not None else m["inner"]) + 1
    return LineReport("metric-logger", ProgressReport(), epoch_done=done)


FORMAT = Format("metric-logger", (" Total time: ", " done. Time per batch: "), parse_loop_end)
