"""``trax``: the lines Trax's ``training.Loop`` prints at each evaluation point::

    Step   2000: Ran 500 train steps in 5.35 secs
    Step   2000: train WeightedCategoryCrossEntropy |  0.38129005
    Step   2000: eval  WeightedCategoryCrossEntropy |  0.33760912
    Step   2000: eval      WeightedCategoryAccuracy |  0.85312500

(trax/supervised/training.py: ``_log_step`` writes ``'Step % 6d: %s'`` with the loop's step;
``_log_training_progress`` the steps run and, under ``train``, the train task's loss layer
by its name, averaged since the last point; ``run_evals`` each eval metric under ``eval``.)
The train line's value is the loss whatever its layer is called; an eval metric named as a
loss (``...Loss``, ``...CrossEntropy``) is the eval loss, any other an evaluation's metric.
The steps the loop runs (``run(n)``) are never printed.
"""

from __future__ import annotations

import re

from ..lines import Format, LineReport, native
from .pairs import PRINTF_NUMBER
from .vocabulary import evaluated, metric_name

_STEP = r"(?:^|\s)Step\s{1,12}(?P<step>\d{1,12}): "
_RAN = re.compile(_STEP + r"Ran \d{1,12} train steps in [\d.]{1,12} secs\s*$")
_SCALAR = re.compile(
    _STEP + rf"(?P<mode>train|eval)\s+(?P<name>[A-Za-z][\w/.\-]{{0,80}}) \|\s*"
    rf"(?P<value>{PRINTF_NUMBER})\s*$"
)
_LOSS_NAME = re.compile(r"(?i)loss|crossentropy")


def parse_trax(msg: str, now: float) -> LineReport | None:
    if (ran := _RAN.search(msg)) is not None:
        return native({"step": int(ran["step"])}, now, "trax")
    line = _SCALAR.search(msg)
    if line is None:
        return None
    step, value, name = int(line["step"]), float(line["value"]), line["name"]
    if line["mode"] == "train":
        return native({"step": step, "loss": value}, now, "trax")
    if _LOSS_NAME.search(name):
        return native({"step": step, "eval_loss": value}, now, "trax")
    metric = metric_name(name)
    if not metric:
        return None
    return native({"step": step, "metrics": {evaluated(metric): value}}, now, "trax")


FORMAT = Format("trax", (": Ran ", ": train ", ": eval "), parse_trax)
