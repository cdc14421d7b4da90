"""``katib``: lines of ``name=value`` pairs, the format of Katib's StdOut metrics collector."""

from __future__ import annotations

import math
import re

from ..lines import Format, LineReport, native

_KV = re.compile(
    r"^([A-Za-z_][\w.\-/]*)=([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+|nan|inf))$", re.I
)
_KATIB_KEYS = {"loss", "step", "epoch", "accuracy", "val_loss", "eval_loss", "learning_rate", "lr"}
# A loop's own count under another name, the step where no "step" is said ("iter=200,loss=
# 15.337533,acc=0.2000", "global_step=100 loss=0.5").
_STEP_ALIASES = ("global_step", "iter", "iteration", "iters")


def parse_katib(msg: str, now: float) -> LineReport | None:
    if "=" not in msg:
        return None
    tokens = msg.replace(",", " ").split()
    if not tokens or len(tokens) > 64:
        return None
    pairs = {}
    for token in tokens:
        m = _KV.match(token)
        if not m:
            return None  # every token must be name=value: anything else is not a metrics line
        pairs[m.group(1)] = float(m.group(2))
    if not _KATIB_KEYS & {k.lower() for k in pairs}:
        return None
    doc: dict[str, object] = {}
    metrics: dict[str, float] = {}
    for key, value in pairs.items():
        low = key.lower()
        if low in ("loss", "step", "epoch", "learning_rate"):
            doc[low] = int(value) if low == "step" and math.isfinite(value) else value
        elif low == "lr":
            doc["learning_rate"] = value
        elif low in ("val_loss", "eval_loss"):
            doc["eval_loss"] = value
        else:
            metrics[key] = value
    if "step" not in doc:
        alias = next((k for k in metrics if k.lower() in _STEP_ALIASES), None)
        count = metrics[alias] if alias is not None else math.nan
        if alias is not None and math.isfinite(count) and count == int(count) and count >= 0:
            doc["step"] = int(metrics.pop(alias))
    if metrics:
        doc["metrics"] = metrics
    return native(doc, now, "katib")


FORMAT = Format("katib", ("=",), parse_katib)
