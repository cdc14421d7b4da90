"""``model-garden``: TensorFlow Model Garden's trainers (tensorflow/models, tf-models-official).

Orbit's ``Controller`` (orbit/controller.py) logs, behind absl's prefix where it is used::

    train | step:    141 | training until step 188...
    train | step:      5 | steps/sec:    2.1 | output: {'train_accuracy': 1.0, 'train_loss': 5.33}
    eval | step:    188 | running 11 steps of evaluation...
    eval | step:    188 | eval time:   48.1 | output: {'validation_loss': 0.0163, ...}

Its ``output`` is ``pprint``'s: on the line when it fits, else the dict's entries on the lines
that follow, indented (``    {'learning_rate': 0.0099,``, ``     'training_loss': 0.0096}``).
Those lines do not say whose they are: the header that ends in ``output:`` opens a block
(``LineReport.part``), each entry is a part (the last closes the dict), and the accumulator
keeps entries only in an open block, an evaluation's loss its eval loss
(:mod:`exporter.logs.blocks`). ``training until step N`` is where this ``train()`` call stops, under
``train_and_evaluate`` the next evaluation, not the run's total: it gives the step only.

``keras_utils``' ``TimeHistory`` callback (official/utils/misc/keras_utils.py) logs ``TimeHistory:
15.58 seconds, 6572.89 examples/second between steps 1900 and 2000``: the later bound is the
global step, the rate the custom metric ``examples_per_second`` (where a number is printed).
"""

from __future__ import annotations

import re

from ...core.model import ProgressReport
from ..lines import ENTRY, EVAL_BLOCK, LAST_ENTRY, TRAIN_BLOCK, Format, LineReport, native
from .pairs import Pair, number, to_fields
from .trainer_dicts import literal_dict
from .vocabulary import evaluated

_PARSER = "model-garden"

# Behind absl's prefix ("I0324 07:55:20.597360 1403... controller.py:479] train | ...") or
# alone on its line.
_HEADER = re.compile(
    r"(?:^|\] )(?P<mode>train|eval) \| step:\s*(?P<step>\d{1,15}) \|(?P<rest>.{0,4000})$"
)
_OUTPUT = re.compile(r"\| output:\s*(?P<dict>\{.*\})?\s*$")
# pprint's entry lines under Orbit's four spaces: the first opens the dict, the last closes it.
_ENTRY = re.compile(
    r"^ {4,5}\{?'(?P<key>[A-Za-z_][\w./-]{0,127})': (?P<value>[^,{}\[\]()']{1,40}?)"
    r"(?P<close>\})?,?\s*$"
)
_TIME_HISTORY = re.compile(
    r"TimeHistory: \S{1,40} seconds, (?P<rate>\S{1,40}) examples/second "
    r"between steps \d{1,15} and (?P<step>\d{1,15})\s*$"
)
_KEPT = ("loss", "eval_loss", "learning_rate", "grad_norm")


def _values(pairs: list[Pair], evaluation: bool) -> dict[str, object]:
    """The report document the pairs of one output dict make: its losses, learning rate and
    gradient norm through the vocabulary, the rest custom metrics."""
    fields = to_fields(pairs, evaluation=evaluation)
    doc: dict[str, object] = {k: v for k, v in fields.values.items() if k in _KEPT}
    if fields.metrics:
        doc["metrics"] = (
            {evaluated(k): v for k, v in fields.metrics.items()} if evaluation else fields.metrics
        )
    return doc


def _dict_pairs(text: str) -> list[Pair]:
    value = literal_dict(text)
    if not isinstance(value, dict):
        return []
    return [
        Pair(k, float(v))
        for k, v in value.items()
        if isinstance(k, str) and isinstance(v, int | float) and not isinstance(v, bool)
    ]


def parse_model_garden(msg: str, now: float) -> LineReport | None:
    if (entry := _ENTRY.match(msg)) is not None:
        value = number(entry["value"].strip())
        if value is None:
            return None
        found = native(_values([Pair(entry["key"], value)], False), now, _PARSER)
        part = LAST_ENTRY if entry["close"] else ENTRY
        return None if found is None else found._replace(part=part)
    if (history := _TIME_HISTORY.search(msg)) is not None:
        rate = number(history["rate"])
        metrics = (("examples_per_second", rate),) if rate is not None else ()
        return LineReport(_PARSER, ProgressReport(step=int(history["step"]), metrics=metrics))
    header = _HEADER.search(msg)
    if header is None:
        return None
    evaluation = header["mode"] == "eval"
    doc: dict[str, object] = {"step": int(header["step"])}
    output = _OUTPUT.search(header["rest"])
    if output is not None and output["dict"] is not None:
        doc.update(_values(_dict_pairs(output["dict"]), evaluation))
    found = native(doc, now, _PARSER)
    if found is None or output is None or output["dict"] is not None:
        return found
    return found._replace(part=EVAL_BLOCK if evaluation else TRAIN_BLOCK)


FORMAT = Format(
    _PARSER,
    ("train | step:", "eval | step:", "TimeHistory: ", "    {'", "     '"),
    parse_model_garden,
)
