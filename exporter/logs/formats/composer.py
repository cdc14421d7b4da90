"""``composer``: MosaicML Composer's (and llm-foundry's) console logger, a block per logged
batch: a header and one indented line per metric, ``Train loss/train/total: 10.3750``
(composer/loggers/console_logger.py). The header says where the run is in its
``max_duration``: ``[batch=366/48000]:`` and ``[epoch=2][batch=3/5]:`` (read by the general
reader's counters), or, for a duration in tokens or samples, ``[token=2048000/8000000]:``,
the share of the run done (read here). Each metric line is read on its own through the
vocabulary: ``loss/train/total`` is the loss and an evaluation's
``metrics/eval/LanguageCrossEntropy`` its loss (the vocabulary's eval loss); the ``time/``
lines repeat the clock, taken when the batch began (``time/batch`` is one behind the header's
count), so they are not read; the rest are custom metrics.
"""

from __future__ import annotations

import re

from ..lines import Format, LineReport, native
from .pairs import Pair, number, to_fields

# Indented; or a Markdown list's item, as people quote the block (round 266: "- Train
# loss/train/total: 11.6525").
_LINE = re.compile(
    r"^(?:\s+|\s{0,3}[-*] )(?P<stage>Train|Eval) (?P<key>[\w/.@\-]{1,128}): (?P<value>\S{1,40})\s*$"
)
# What the block repeats of the clock.
_SKIP = re.compile(r"^time/")
# A duration in tokens or samples: its share done, no step.
_SHARE = re.compile(r"^\[(?:token|sample)=(?P<i>\d{1,18})/(?P<n>\d{1,18})\]:?\s*$")


def parse_composer(msg: str, now: float) -> LineReport | None:
    if (share := _SHARE.match(msg)) is not None:
        done, total = int(share["i"]), int(share["n"])
        return native({"progress": done / total}, now, "composer") if 0 < total >= done else None
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


FORMAT = Format("composer", (" Train ", " Eval ", "[token=", "[sample="), parse_composer)
