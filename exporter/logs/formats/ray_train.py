"""``ray-train``: Ray Train's progress lines and result tables (ray/tune/experimental/
output.py, the AIR output a TorchTrainer or any Train run prints by default)::

    Training finished iteration 2 at 2023-06-27 09:28:54. Total running time: 2min 4s
    ╭───────────────────────────────────────────────╮
    │ Training result                               │
    ├───────────────────────────────────────────────┤
    │ training_iteration                          2 │
    │ config/train_loop_config/lr             0.001 │
    │ loss                                  0.32971 │
    ╰───────────────────────────────────────────────╯
    Training saved a checkpoint for iteration 2 at: /tmp/ray_results/.../checkpoint_000001
    Training completed after 10 iterations at 2023-06-27 09:40:02. Total running time: 13min

``training_iteration`` counts the worker's ``ray.train.report()`` calls: the run's step as
Ray counts it (one report an epoch, in most loops). The table is what the loop reported:
its loss through the vocabulary, its other numbers custom metrics; ``config/`` rows are the
configuration and ``time_`` rows durations, neither read. ``Training completed after N
iterations`` is printed once the trial has ended well (``on_trial_complete``; an error prints
``errored``): the run's end. A Tune sweep prints the same for each of its trials (``Trial
<name> finished iteration``, ``│ Trial <name> result │``): several runs in one log, none of
them this log's one run, so nothing of them is read.
"""

from __future__ import annotations

import re

from ..lines import EMPTY, ENTRY, TEST_BLOCK, TRAIN_BLOCK, Format, LineReport, native
from .pairs import PRINTF_NUMBER
from .vocabulary import field_of, metric_name

_FINISHED = re.compile(r"^\s*Training finished iteration (?P<i>\d{1,12}) at ")
_COMPLETED = re.compile(r"^\s*Training completed after (?P<i>\d{1,12}) iterations at ")
_HEADER = re.compile(r"^\s*│ (?:(?P<train>Training result)|Trial \S{1,200} result)\s+│\s*$")
_ROW = re.compile(rf"^\s*│ (?P<key>[A-Za-z_][\w/.\-]{{0,128}})\s+(?P<value>{PRINTF_NUMBER}) │\s*$")
_SKIPPED = ("config/", "time_", "timestamp", "pid", "iterations_since_restore")


def _row(key: str, value: float, now: float) -> LineReport | None:
    """A result table's row: the step, a vocabulary field, or a custom metric."""
    if key.startswith(_SKIPPED):
        return None
    if key == "training_iteration":
        doc: dict[str, object] = {"step": int(value)} if value.is_integer() else {}
    elif (field := field_of(key)) is not None and field[0] in ("loss", "eval_loss"):
        doc = {field[0]: value}
    else:
        name = metric_name(key)
        doc = {"metrics": {name: value}} if name else {}
    found = native(doc, now, "ray-train") if doc else None
    return None if found is None else found._replace(part=ENTRY)


def parse_ray_train(msg: str, now: float) -> LineReport | None:
    """What a Ray Train progress line or result table row says, or None."""
    if (row := _ROW.match(msg)) is not None:
        return _row(row["key"], float(row["value"]), now)
    if (header := _HEADER.match(msg)) is not None:
        return LineReport("ray-train", EMPTY, part=TRAIN_BLOCK if header["train"] else TEST_BLOCK)
    if (finished := _FINISHED.match(msg)) is not None:
        return native({"step": int(finished["i"])}, now, "ray-train")
    if (completed := _COMPLETED.match(msg)) is not None:
        return native({"step": int(completed["i"]), "final": True}, now, "ray-train")
    return None


FORMAT = Format(
    "ray-train", ("│ ", "Training finished iteration", "Training completed after"), parse_ray_train
)
