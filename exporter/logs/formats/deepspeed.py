"""``deepspeed``: ``step=100, skipped=0, lr=[0.0001], ...`` and ``steps: 100 loss: 2.3456 ...``
(DeepSpeed ``runtime/engine.py``).
"""

from __future__ import annotations

import re

from ..lines import Format, LineReport, native

_DS_STEP = re.compile(r"\bstep=(\d+),\s*skipped=\d+,\s*lr=\[([-+\d.eE]+)")
_DS_STEPS = re.compile(r"\bsteps:\s*(\d+)\s+loss:\s*([-+\d.eEnaif]+)")


def parse_deepspeed(msg: str, now: float) -> LineReport | None:
    if "step" not in msg:
        return None
    m = _DS_STEP.search(msg)
    if m:
        return native(
            {"step": int(m.group(1)), "learning_rate": float(m.group(2))}, now, "deepspeed"
        )
    m = _DS_STEPS.search(msg)
    if m:
        try:
            loss = float(m.group(2))
        except ValueError:
            return None
        return native({"step": int(m.group(1)), "loss": loss}, now, "deepspeed")
    return None


FORMAT = Format("deepspeed", ("step",), parse_deepspeed)
