"""``allennlp-table``: AllenNLP's table of an epoch's metrics, one row per metric under a
``Training |  Validation`` header, logged after each epoch's validation::

    ... - allennlp.training.tensorboard_writer - loss                 |  -137.582  |  -145.318

The row named ``loss`` carries the epoch's training loss and its validation loss (``N/A``
where there was none). Its format strings are ``"%s |  %8.3f  |  %8.3f"`` and the
``%8s`` variants for ``N/A`` (allennlp/training/tensorboard_writer.py, as an AM parser's
log of AllenNLP 0.9 shows; 2.x moved the table to its console logger callback). The row is
read only behind one of those loggers' names: a bare ``loss | 1 | 2`` is any table's.
"""

from __future__ import annotations

import re

from ..lines import Format, LineReport, native

_LOSS_ROW = re.compile(
    r"\ballennlp\.training\.(?:tensorboard_writer|callbacks\.console_logger)\s+-\s+"
    r"loss\s+\|\s+(?P<train>-?\d+\.\d+|N/A)\s+\|\s+(?P<val>-?\d+\.\d+|N/A)\s*$"
)


def parse_allennlp_table(msg: str, now: float) -> LineReport | None:
    """Return the losses of the metrics table's ``loss`` row, or None for any other line."""
    m = _LOSS_ROW.search(msg)
    if m is None:
        return None
    doc: dict[str, object] = {}
    if m.group("train") != "N/A":
        doc["loss"] = float(m.group("train"))
    if m.group("val") != "N/A":
        doc["eval_loss"] = float(m.group("val"))
    return native(doc, now, "allennlp-table") if doc else None


FORMAT = Format("allennlp-table", ("allennlp.training.",), parse_allennlp_table)
