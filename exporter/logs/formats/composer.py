"""``composer``: MosaicML Composer's (and llm-foundry's) console logger, a block per logged
batch: a ``[batch=366/48000]:`` header (read by the general reader) and one indented line
per metric, ``Train loss/train/total: 10.3750`` (composer/loggers/console_logger.py). Each
metric line is read on its own through the vocabulary: ``loss/train/total`` is the loss;
the rest are custom metrics.
"""

from __future__ import annotations

import re

from ..lines import Format, LineReport, native
from .pairs import Pair, number, to_fields

_LINE = re.compile(r"^\s+(?P<stage>Train|Eval) (?P<key>[\w/.@\-]{1,128}): (?P<value>\S{1,40})\s*$")
# What the block repeats of its header (time/batch is the header's count) or of the clock.
_SKIP = re.compile(r"^time/")


def parse_composer(msg: str, now: float) -> LineReport | None:
    m = _LINE.match(msg)
    if m is None or _SKIP.match(m["key"]):
        return None
    value = number(m["value"])
    if value is None:
        return None
    fields = to_fields([Pair(m["key"], value)], evaluation=m["stage"] == "Eval")
    doc: dict[str, object] = {
        k: v
        for k, v in fields.values.items()
        if k in ("loss", "eval_loss", "learning_rate", "grad_norm")
    }
    if fields.metrics:
        doc["metrics"] = fields.metrics
    if not doc:
        return None
    return native(doc, now, "composer")


FORMAT = Format("composer", (" Train ", " Eval "), parse_composer)
