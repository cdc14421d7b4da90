"""``mlperf``: MLPerf Training's compliance log, one ``:::MLLOG {...}`` line per event
(mlcommons/logging's ``mllog``, which every submission's code and NVIDIA's, AMD's and
Google's benchmark containers write; the results repositories keep such logs whole)::

    :::MLLOG {"namespace": "", "time_ms": 1715850093688, "event_type": "INTERVAL_END",
              "key": "run_stop", "value": 0.92, "metadata": {..., "status": "success"}}

The 2020 form has no ``event_type``; a launcher may put a rank before it (``0: :::MLLOG``).
What is read, by the event's key:

- ``run_stop`` with ``"status": "success"`` is the run's end: the benchmark reached its
  target and its loop is over. Any other status (``aborted``: the limit came first) is no
  end a parser may claim; the pod's exit says the rest.
- ``train_loss`` is the loss (the reference implementations' and AMD's Primus write it, its
  metadata's ``lr`` the learning rate).
- ``eval_accuracy`` is the benchmark's target metric under one name for all: an accuracy for
  BERT or ResNet, a log perplexity for the language models. It is kept as the custom metric
  ``eval_accuracy``, never an eval loss, since its name does not say which.
- ``tracked_stats``' ``throughput`` is kept as the custom metric ``throughput``.

No step is read: MLPerf counts progress in samples (``samples_count``, and ``epoch_num``
is a sample count for the language models), and the ``step`` some submissions put in the
metadata is that count too.
"""

from __future__ import annotations

import json
import math

from ...core.model import ProgressReport, as_float
from ..lines import Format, LineReport

_MARK = ":::MLLOG "
_MAX_LINE = 16_384


def _number(raw: object, finite: bool = True) -> float | None:
    """A JSON number as a float (finite unless ``finite`` is False: a loss may be NaN, which
    is divergence); None for anything else (a bool is no number)."""
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        return None
    value = as_float(raw)
    return value if not finite or math.isfinite(value) else None


def parse_mlperf(msg: str, now: float) -> LineReport | None:
    start = msg.find(_MARK)
    if start < 0 or len(msg) > _MAX_LINE:
        return None
    try:
        event = json.loads(msg[start + len(_MARK) :])
    except ValueError:
        return None
    if not isinstance(event, dict):
        return None
    key, value = event.get("key"), event.get("value")
    metadata = event.get("metadata")
    meta = metadata if isinstance(metadata, dict) else {}
    if key == "run_stop":
        if meta.get("status") != "success":
            return None
        return LineReport("mlperf", ProgressReport(final=True))
    if key == "train_loss" and (loss := _number(value, finite=False)) is not None:
        return LineReport(
            "mlperf", ProgressReport(loss=loss, learning_rate=_number(meta.get("lr")))
        )
    if key == "eval_accuracy" and (accuracy := _number(value)) is not None:
        return LineReport("mlperf", ProgressReport(metrics=(("eval_accuracy", accuracy),)))
    stats = value if key == "tracked_stats" and isinstance(value, dict) else {}
    if (throughput := _number(stats.get("throughput"))) is not None:
        return LineReport("mlperf", ProgressReport(metrics=(("throughput", throughput),)))
    return None


FORMAT = Format("mlperf", (_MARK,), parse_mlperf)
