"""``neuralclassifier``: Tencent's NeuralClassifier (NeuralNLP-NeuralClassifier, train.py), which
evaluates the train, validation and test sets after each epoch and prints each as two lines::

    Validate performance at epoch 2 is precision: 0.41, recall: 0.38, fscore: 0.39, ...
    Loss is: 0.185401.

The first line opens the set's block (``LineReport.part``: the train set's, an evaluation's,
or the test set's), the ``Loss is:`` line under it is that set's loss: the train set's the
loss, the validation set's the eval loss, the test set's neither
(:mod:`exporter.logs.blocks`). The scores on the header line are the set's custom metrics
(an evaluation's named apart). The epoch's steps are never printed: no step.
"""

from __future__ import annotations

import re

from ..lines import EVAL_BLOCK, LAST_ENTRY, TEST_BLOCK, TRAIN_BLOCK, Format, LineReport, native
from .pairs import PRINTF_NUMBER, find_pairs
from .vocabulary import evaluated, metric_name

_HEADER = re.compile(
    r"^(?P<set>Train|Validate|test) performance at epoch \d{1,9} is (?P<scores>.{1,2000})$"
)
_LOSS = re.compile(rf"^Loss is: (?P<loss>{PRINTF_NUMBER})\.?\s*$")
_BLOCK = {"Train": TRAIN_BLOCK, "Validate": EVAL_BLOCK, "test": TEST_BLOCK}
# The counts beside the scores (right, predict, standard): sizes, not metrics.
_SCORES = frozenset({"precision", "recall", "fscore", "macro_fscore"})


def parse_neuralclassifier(msg: str, now: float) -> LineReport | None:
    if (loss := _LOSS.match(msg)) is not None:
        found = native({"loss": float(loss["loss"])}, now, "neuralclassifier")
        return None if found is None else found._replace(part=LAST_ENTRY)
    header = _HEADER.match(msg)
    if header is None:
        return None
    block = _BLOCK[header["set"]]
    scores = {
        name: p.value
        for p in find_pairs(header["scores"])
        if (name := metric_name(p.key)) in _SCORES
    }
    if block == EVAL_BLOCK:
        scores = {evaluated(k): v for k, v in scores.items()}
    metrics = scores if block != TEST_BLOCK else {}
    found = native({"metrics": metrics}, now, "neuralclassifier")
    return None if found is None else found._replace(part=block)


FORMAT = Format("neuralclassifier", (" performance at epoch ", "Loss is: "), parse_neuralclassifier)
