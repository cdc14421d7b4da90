"""``stages``: a stage's header on a line of its own, whose report follows one value a line.

PyText's metric reporters print each stage's report as ``Stage.TRAIN``, ``Stage.EVAL`` or
``Stage.TEST`` (its ``Stage`` enum), then the epoch (``Epoch:10``), then ``loss: 1.219663``
and the stage's metrics, each on a line of its own (pytext/metric_reporters). The loss
line alone is any tool's training loss (:mod:`.lone`); under an evaluation's header it is the
evaluation's, under a test stage's no value the run watches. AllenNLP's trainer logs
``Training`` and ``Validating`` (``allennlp.training.trainer - Validating``) before each
phase's bar, whose description (``loss: 2.3851 ||``) names no phase. The header opens its block
(:mod:`exporter.logs.blocks`), which takes the lone values under it and tells the bars drawn
in it whose they are.
"""

from __future__ import annotations

import re

from ..lines import (
    EMPTY,
    EVAL_BLOCK,
    EVAL_STEPS,
    PREDICT_STEPS,
    TEST_BLOCK,
    TRAIN_BLOCK,
    Format,
    LineReport,
)

_HEADER = re.compile(r"^\s*Stage\.(?P<stage>TRAIN|EVAL|TEST)\s*$")
_BLOCK = {"TRAIN": TRAIN_BLOCK, "EVAL": EVAL_BLOCK, "TEST": TEST_BLOCK}
# AllenNLP's phase, alone after its logger's name.
_PHASE = re.compile(r"(?:^|\s-\s)(?P<phase>Training|Validating)\s*$")
_PHASE_BLOCK = {"Training": TRAIN_BLOCK, "Validating": EVAL_BLOCK}
# hapi's callbacks.ProgBarLogger: on_eval_begin / on_predict_begin, on_eval_end's count.
_HAPI = re.compile(r"^\s*(?P<phase>Eval|Predict) (?:begin\.\.\.|samples: \d{1,15})\s*$")
_HAPI_BLOCK = {"Eval": EVAL_STEPS, "Predict": PREDICT_STEPS}


def parse_stage(msg: str, now: float) -> LineReport | None:
    """The block a stage's header opens, or None."""
    header = _HEADER.match(msg)
    if header is not None:
        return LineReport("stages", EMPTY, part=_BLOCK[header["stage"]])
    hapi = _HAPI.match(msg)
    if hapi is not None:
        # Its end ("Eval samples: N") is a line of its own, read only to close the block.
        opened = _HAPI_BLOCK[hapi["phase"]] if msg.rstrip().endswith("...") else ""
        return LineReport("stages", EMPTY, part=opened)
    phase = _PHASE.search(msg)
    if phase is None:
        return None
    return LineReport("stages", EMPTY, part=_PHASE_BLOCK[phase["phase"]])


FORMAT = Format(
    "stages",
    ("Stage.", "Training", "Validating", "Eval begin", "Eval samples", "Predict "),
    parse_stage,
)
