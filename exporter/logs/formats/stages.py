"""``stages``: a stage's header on a line of its own, whose report follows one value a line.

PyText's metric reporters print each stage's report as ``Stage.TRAIN``, ``Stage.EVAL`` or
``Stage.TEST`` (its ``Stage`` enum), then the epoch (``Epoch:10``), then ``loss: 1.219663``
and the stage's metrics, each on a line of its own (pytext/metric_reporters). The loss
line alone is any tool's training loss (:mod:`.lone`); under an evaluation's header it is the
evaluation's, under a test stage's no value the run watches. The header opens its block
(:mod:`exporter.logs.blocks`), which takes the lone values under it.
"""

from __future__ import annotations

import re

from ..lines import EMPTY, EVAL_BLOCK, TEST_BLOCK, TRAIN_BLOCK, Format, LineReport

_HEADER = re.compile(r"^\s*Stage\.(?P<stage>TRAIN|EVAL|TEST)\s*$")
_BLOCK = {"TRAIN": TRAIN_BLOCK, "EVAL": EVAL_BLOCK, "TEST": TEST_BLOCK}


def parse_stage(msg: str, now: float) -> LineReport | None:
    """The block a stage's header opens, or None."""
    header = _HEADER.match(msg)
    if header is None:
        return None
    return LineReport("stages", EMPTY, part=_BLOCK[header["stage"]])


FORMAT = Format("stages", ("Stage.",), parse_stage)
