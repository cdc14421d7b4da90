"""``espnet``: ESPnet2's results after each epoch (``Reporter.log_message``, and FunASR's
trainer, which copies it)::

    1epoch results: [train] iter_time=6.271, loss_att=0.572, acc=0.875, loss=0.572,
    optim0_lr0=3.333e-09, train_time=10.827, time=10.9 seconds, total_count=1, [valid]
    loss_att=0.008, acc=1.000, loss=0.008, time=1.81 seconds, total_count=1

(one line). ``N`` is the 1-based epoch just done; each ``[key]`` section holds that key's
stats averaged over the epoch, read by the pairs and the vocabulary the general reader uses.
``[train]``'s ``total_count`` is the reporter's count of iterations over all epochs
(``SubReporter.get_total_count``): the run's step. Its ``loss`` is the training loss, its
other numbers custom metrics (not ``time``, the epoch's duration); ``[valid]``'s ``loss`` is
the eval loss. Other sections (a plot's, an attention's) are not read. The per-interval
lines (``17epoch:train:6376-6750batch: ...``) are the general reader's.
"""

from __future__ import annotations

import re

from ..lines import Format, LineReport, native
from .pairs import find_pairs, to_fields

_HEAD = re.compile(r"\b(?P<e>\d{1,9})epoch results: (?=\[)")
# A section: "[train] k=v, k=v, ..." up to the next ", [key] " or the end of the line.
_SECTION = re.compile(r"\[(?P<key>[a-z_]{1,32})\] (?P<body>.*?)(?=, \[[a-z_]{1,32}\] |$)")


def parse_espnet(msg: str, now: float) -> LineReport | None:
    """The step, epoch, loss and eval loss ESPnet2's epoch results say, or None."""
    head = _HEAD.search(msg)
    if head is None:
        return None
    bodies = {s["key"]: s["body"] for s in _SECTION.finditer(msg, head.end())}
    if "train" not in bodies:
        return None
    train = to_fields(find_pairs(bodies["train"]))
    doc: dict[str, object] = {"epoch": float(head["e"]), **train.values}
    count = train.metrics.pop("total_count", None)
    if count is not None and count.is_integer():
        doc["step"] = int(count)
    if "valid" in bodies:
        valid = to_fields(find_pairs(bodies["valid"]), evaluation=True)
        if "eval_loss" in valid.values:
            doc["eval_loss"] = valid.values["eval_loss"]
    train.metrics.pop("time", None)  # the epoch's duration
    if train.metrics:
        doc["metrics"] = train.metrics
    return native(doc, now, "espnet")


FORMAT = Format("espnet", ("epoch results: ",), parse_espnet)
