"""``torchtune``: its stdout metric logger, ``Step 1 | loss:2.3100 lr:0.0002
tokens_per_second_per_gpu:1234.5`` (the shape torchtune's recipes print each
``log_every_n_steps``: the step, then ``name:value`` pairs). The values go to their fields
(loss, learning rate, tokens per second per GPU, ...) or the run's custom metrics.
"""

from __future__ import annotations

import re

from ..lines import Format, LineReport, native

_LINE = re.compile(r"^Step (\d{1,15}) \| (.{1,1024})$")
_PAIR = re.compile(r"([A-Za-z_][\w/.-]{0,63}):([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+))(?!\S)")
_FIELDS = {"loss": "loss", "lr": "learning_rate", "grad_norm": "grad_norm"}


def parse_torchtune(msg: str, now: float) -> LineReport | None:
    m = _LINE.match(msg.strip())
    if m is None:
        return None
    doc: dict[str, object] = {"step": int(m.group(1))}
    metrics: dict[str, float] = {}
    for name, value in _PAIR.findall(m.group(2)):
        if name in _FIELDS:
            doc[_FIELDS[name]] = float(value)
        else:
            metrics[name.replace("/", "_").replace("-", "_").replace(".", "_")] = float(value)
    if len(doc) == 1 and not metrics:
        return None
    if metrics:
        doc["metrics"] = metrics
    return native(doc, now, "torchtune")


FORMAT = Format("torchtune", ("Step ",), parse_torchtune)
