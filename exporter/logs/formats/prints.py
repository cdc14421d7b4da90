"""``print``: what a hand-written loop prints, ``step 10/100 loss 0.53``."""

from __future__ import annotations

import re

from ..lines import Format, LineReport, native

# What a hand-written loop prints: ``step 10/100 loss 0.53``, ``Step: 10 of 100, loss=0.53``,
# ``epoch 2 step 10 | loss: 0.53``. A step with its total or with a loss (a step alone is
# too common a word: "saved a checkpoint at step 100").
_PRINT_STEP = re.compile(
    r"(?i)(?<![\w.])step[\s:=#]*(\d{1,15})(?:\s*(?:/|of)\s*(\d{1,15}))?(?![\w.])"
)
_PRINT_LOSS = re.compile(
    r"(?i)(?<![\w.])(?:train[_ ])?loss[\s:=]+"
    r"([-+]?(?:\d+\.?\d*(?:e[-+]?\d+)?|\.\d+|nan|inf))(?![\w.])"
)
_PRINT_EPOCH = re.compile(r"(?i)(?<![\w.])epoch[\s:=#]*(\d{1,9})\s*(?:/|of)\s*(\d{1,9})(?![\w.])")


def parse_print(msg: str, now: float) -> LineReport | None:
    if "tep" not in msg or len(msg) > 512:
        return None
    step = _PRINT_STEP.search(msg)
    if step is None:
        return None
    loss = _PRINT_LOSS.search(msg)
    if step.group(2) is None and loss is None:
        return None
    doc: dict[str, object] = {"step": int(step.group(1))}
    if step.group(2) is not None:
        doc["max_steps"] = int(step.group(2))
    if loss is not None:
        doc["loss"] = float(loss.group(1))
    epoch = _PRINT_EPOCH.search(msg)
    if epoch is not None:
        doc["max_epochs"] = int(epoch.group(2))
    return native(doc, now, "print")


FORMAT = Format("print", ("tep",), parse_print)
