"""``microwakeword``: microWakeWord's training loop (``microwakeword/train.py``), which trains
the wake-word models of ESPHome and Home Assistant::

    Validation Batch #1: Accuracy = 0.984; Recall = 0.603; ...; Loss = 0.0547; Mini-Batch #496
    Step #500: rate 0.001000, accuracy 98.40%, ..., precision 85.00%, cross entropy 0.054600
    Step 500 (nonstreaming): Validation accuracy = 98.10%, ..., loss = 0.06100, auc = 0.95000,

The first is printed after every ``train_on_batch`` with ``end="\\r"``: despite its words, it is
training's. ``Validation Batch #k`` counts the evaluation intervals begun (``step // interval
+ 1``) and ``Mini-Batch #n`` the step within the interval (``step % interval``); its ``Loss`` is
the batch's training loss. The interval is in the run's config, not in the line: no step. The
second (``logging.info`` every few steps) gives the step and the training loss, averaged over
the last five batches (``cross entropy``); the third, after each interval's evaluation, the
validation set's loss: the eval loss, though the general reader would see the ``loss`` of a
line that does not begin with the evaluation's name.
"""

from __future__ import annotations

import re

from ..lines import Format, LineReport, native
from .pairs import find_pairs, to_fields

_STATUS = re.compile(
    r"Validation Batch #\d{1,9}: Accuracy = (?P<accuracy>[\d.]+); Recall = (?P<recall>[\d.]+); "
    r"Precision = (?P<precision>[\d.]+); Loss = (?P<loss>[\d.]+(?:e[-+]?\d+)?|nan|inf); "
    r"Mini-Batch #\d{1,9}"
)
_STEP = re.compile(
    r"\bStep #(?P<step>\d{1,12}): rate (?P<lr>[\d.e+-]+), (?P<rest>.*?)"
    r",? cross entropy (?P<loss>[\d.]+(?:e[-+]?\d+)?|nan|inf)\s*$"
)
_VALIDATION = re.compile(r"\bStep (?P<step>\d{1,12}) \(nonstreaming\): Validation (?P<rest>.*)$")


def parse_microwakeword(msg: str, now: float) -> LineReport | None:
    """What microWakeWord's status, step or validation line says, or None."""
    doc: dict[str, object] = {}
    if "Validation Batch #" in msg:
        # The last of statuses run together where their "\r" was lost: the newest.
        last = next(reversed(list(_STATUS.finditer(msg))), None)
        if last is None:
            return None
        doc["loss"] = float(last["loss"])
        doc["metrics"] = {k: float(last[k]) for k in ("accuracy", "recall", "precision")}
    elif m := _STEP.search(msg):
        doc = {"step": int(m["step"]), "loss": float(m["loss"]), "learning_rate": float(m["lr"])}
        if metrics := to_fields(find_pairs(m["rest"])).metrics:
            doc["metrics"] = metrics
    elif m := _VALIDATION.search(msg):
        fields = to_fields(find_pairs(m["rest"]), evaluation=True)
        doc = {"step": int(m["step"]), **fields.values}
        if fields.metrics:
            doc["metrics"] = {f"eval_{k}": v for k, v in fields.metrics.items()}
    else:
        return None
    return native(doc, now, "microwakeword")


FORMAT = Format(
    "microwakeword", ("Validation Batch #", "Step #", "(nonstreaming)"), parse_microwakeword
)
