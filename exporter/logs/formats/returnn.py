"""``returnn``: RETURNN's summary after each epoch (rwth-i6, the engines' ``train_epoch``)::

    epoch 1 score: 3.96068657248 elapsed: 3:19:03 dev: score 3.65861076902 error 0.99728335187
    epoch 12 score: 0.8412 error: 0.2551 elapsed: 1:02:11 dev: score 0.9120 error 0.2874 ...

``epoch N`` (1-based, ``pretrain epoch N`` while pretraining) is done; its ``score`` is the
training loss as RETURNN names it (the sum of the network's losses, as the learning-rate
control reads it), ``error`` the error rate; after the elapsed time, each evaluated data set's
``<name>: score <s> error <e>``: the ``dev`` set's score is the eval loss (``devtrain``, a
part of the training data evaluated again, is not). Where several losses are scored the
score prints as their names and values, which no single loss stands for: nothing is read.
No step is printed.
"""

from __future__ import annotations

import re

from ..lines import Format, LineReport, native
from .pairs import PRINTF_NUMBER

_LINE = re.compile(
    rf"^\s*(?:pretrain )?epoch (?P<e>\d{{1,9}}) score: (?P<score>{PRINTF_NUMBER})"
    rf"(?: error: (?P<error>{PRINTF_NUMBER}))? elapsed: [\d:]{{1,16}}(?P<rest>.*)$"
)
_DATASET = re.compile(
    rf"(?:^|\s)(?P<name>[\w-]{{1,64}}): score (?P<score>{PRINTF_NUMBER}) "
    rf"error (?P<error>{PRINTF_NUMBER})"
)


def parse_returnn(msg: str, now: float) -> LineReport | None:
    """The epoch, loss and eval loss a RETURNN epoch summary says, or None."""
    line = _LINE.match(msg)
    if line is None:
        return None
    doc: dict[str, object] = {"loss": float(line["score"]), "epoch": float(line["e"])}
    metrics: dict[str, float] = {}
    if line["error"] is not None:
        metrics["error"] = float(line["error"])
    for dataset in _DATASET.finditer(line["rest"]):
        name = dataset["name"].lower()
        if name == "dev":
            doc["eval_loss"] = float(dataset["score"])
        metrics[f"{name.replace('-', '_')}_error"] = float(dataset["error"])
    if metrics:
        doc["metrics"] = metrics
    return native(doc, now, "returnn")


FORMAT = Format("returnn", ("epoch ",), parse_returnn)
