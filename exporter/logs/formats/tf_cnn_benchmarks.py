"""``tf_cnn_benchmarks``: the row per interval of TensorFlow's CNN benchmarks
(tensorflow/benchmarks, the Kubeflow MPI Operator's and Horovod's standard example), and its
banner's length.

    Num batches: 100
    Step	Img/sec	total_loss
    10	images/sec: 118.2 +/- 5.0 (jitter = 10.6)	1.652

benchmark_cnn.py prints each row as ``'%i\\t%s\\t%.*f' % (step + 1, speed, loss)`` (the
accuracies, where asked for, in further columns): the steps done, the images per second and
the loss. Its banner's ``Num batches`` is the run's number of steps. The row's values have no
names on the row (the header names them), so only this exact shape is read; under the MPI
Operator every rank prints its own rows into the launcher's log, each with its own loss.
"""

from __future__ import annotations

import re

from ..lines import Format, LineReport, native
from .pairs import PRINTF_NUMBER, number

_NUM = PRINTF_NUMBER
_ROW = re.compile(
    rf"^\s*(?P<step>\d{{1,12}})\timages/sec: (?P<speed>{_NUM})"
    rf" \+/- {_NUM} \(jitter = {_NUM}\)\t(?P<loss>{_NUM})(?:\t|\s*$)"
)
# The banner's line, whole (log_fn('Num batches: %d' % ...)): a looser "Num batches" could
# be one epoch's count in another loop.
_BATCHES = re.compile(r"^Num batches: (?P<n>\d{1,15})\s*$")


def parse_tf_cnn_benchmarks(msg: str, now: float) -> LineReport | None:
    batches = _BATCHES.match(msg)
    if batches is not None:
        n = int(batches["n"])
        return native({"max_steps": n}, now, "tf_cnn_benchmarks") if n > 0 else None
    m = _ROW.match(msg)
    if m is None:
        return None
    speed, loss = number(m["speed"]), number(m["loss"])
    if speed is None or loss is None:
        return None
    doc: dict[str, object] = {
        "step": int(m["step"]),
        "loss": loss,
        "metrics": {"images_per_second": speed},
    }
    return native(doc, now, "tf_cnn_benchmarks")


# "(jitter = " holds "=", a hint the quick scan of every line looks for anyway. A row of the
# scaled form ("images/sec: 940.1" alone, no jitter) is rare enough to go unread.
FORMAT = Format("tf_cnn_benchmarks", ("(jitter = ", "Num batches: "), parse_tf_cnn_benchmarks)
