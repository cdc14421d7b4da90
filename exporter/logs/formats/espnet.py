"""``espnet``: ESPnet2's results after each epoch (``Reporter.log_message``, and FunASR's
trainer, which copies it)::

    1epoch results: [train] iter_time=6.271, loss_att=0.572, acc=0.875, loss=0.572,
    optim0_lr0=3.333e-09, train_time=10.827, time=10.9 seconds, total_count=1, [valid]
    loss_att=0.008, acc=1.000, loss=0.008, time=1.81 seconds, total_count=1

(one line). ``N`` is the 1-based epoch just done; each ``[key]`` section holds that key's
stats averaged over the epoch. ``[train]``'s ``total_count`` is the reporter's count of
iterations over all epochs (``SubReporter.get_total_count``): the run's step. Its ``loss`` is
the training loss; ``[valid]``'s ``loss`` the eval loss. Other sections (a plot's, an
attention's) and values that are no numbers (``time=10.9 seconds``) are not read. The
per-interval lines (``17epoch:train:6376-6750batch: ...``) are the general reader's.
"""

from __future__ import annotations

import re

from ..lines import Format, LineReport, native
from .pairs import PRINTF_NUMBER

_HEAD = re.compile(r"\b(?P<e>\d{1,9})epoch results: (?=\[)")
# A section: "[train] k=v, k=v, ..." up to the next ", [key] " or the end of the line.
_SECTION = re.compile(r"\[(?P<key>[a-z_]{1,32})\] (?P<body>.*?)(?=, \[[a-z_]{1,32}\] |$)")
_PAIR = re.compile(rf"(?:^|, )(?P<k>[A-Za-z_][\w/.-]{{0,63}})=(?P<v>{PRINTF_NUMBER})(?=,|$)")


def _values(body: str) -> dict[str, float]:
    return {m["k"]: float(m["v"]) for m in _PAIR.finditer(body)}


def parse_espnet(msg: str, now: float) -> LineReport | None:
    """The step, epoch, loss and eval loss ESPnet2's epoch results say, or None."""
    head = _HEAD.search(msg)
    if head is None:
        return None
    sections = {s["key"]: _values(s["body"]) for s in _SECTION.finditer(msg, head.end())}
    train = sections.get("train")
    if not train:
        return None
    doc: dict[str, object] = {"epoch": float(head["e"])}
    count = train.pop("total_count", None)
    if count is not None and count.is_integer():
        doc["step"] = int(count)
    if "loss" in train:
        doc["loss"] = train.pop("loss")
    valid = sections.get("valid", {})
    if "loss" in valid:
        doc["eval_loss"] = valid["loss"]
    metrics = {k: v for k, v in train.items() if k != "time"}
    if metrics:
        doc["metrics"] = metrics
    return native(doc, now, "espnet")


FORMAT = Format("espnet", ("epoch results: ",), parse_espnet)
