"""Blocks a log prints over several lines: whose their entries are.

Some tools print one report over several lines, a header and then entries that name neither
the step nor whose they are: Orbit's output dict pretty-printed under its ``train | step:``
or ``eval | step:`` header (:mod:`exporter.logs.formats.model_garden`), NeuralClassifier's
``Validate performance at epoch 2 is ...`` and then ``Loss is: 0.185.``
(:mod:`exporter.logs.formats.neuralclassifier`), PyText's ``Stage.EVAL`` and then its epoch and
lone ``loss: 1.22`` (:mod:`exporter.logs.formats.stages`). A format marks the header as opening the
train step's, an evaluation's or a test set's block and each entry as one (``LineReport.part``,
:mod:`exporter.logs.lines`); this keeps, for one log, the block the last header opened, and
makes each entry the value it is in it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .formats.vocabulary import evaluated
from .lines import (
    ENTRY,
    EVAL_BLOCK,
    EVAL_STEPS,
    LAST_ENTRY,
    PREDICT_STEPS,
    TEST_BLOCK,
    TRAIN_BLOCK,
    LineReport,
)

_BLOCKS = (TRAIN_BLOCK, EVAL_BLOCK, TEST_BLOCK, EVAL_STEPS, PREDICT_STEPS)
_STEP_BLOCKS = {EVAL_STEPS: EVAL_BLOCK, PREDICT_STEPS: TEST_BLOCK}
_ENTRIES = (ENTRY, LAST_ENTRY)


def _epoch_header(line: LineReport) -> bool:
    """Whether ``line`` says nothing but an epoch's number (``Epoch:10``)."""
    return line.parser == "epochs" and line.report.step is None and line.report.loss is None


def in_block(line: LineReport, block: str) -> LineReport | None:
    """An entry read in its block: the train step's as it is; in an evaluation's its loss is
    the eval loss and its custom metrics the evaluation's; in a test set's nothing (the
    validation set is what training watches)."""
    if block == TRAIN_BLOCK:
        return line
    if block == TEST_BLOCK:
        return None
    r = line.report
    metrics = tuple((evaluated(k), v) for k, v in r.metrics)
    if r.loss is None:
        return line._replace(report=replace(r, metrics=metrics))
    return line._replace(report=replace(r, loss=None, eval_loss=r.loss, metrics=metrics))


def _counted_in(line: LineReport, block: str) -> LineReport | None:
    """A counter line in an evaluation's (or a prediction's) own block: its values are the
    block's, and its count, the evaluation's batch, is dropped with its total so that neither
    becomes the run's step."""
    r = line.report
    return in_block(line._replace(report=replace(r, step=None, max_steps=None)), block)


@dataclass
class Blocks:
    """The block the last header opened in one log, until its last entry or another line."""

    open: str | None = None

    def take(self, line: LineReport) -> LineReport | None:
        """``line`` as the log's accumulator takes it: an entry becomes its block's value
        (None, dropped, under no block: anyone's dict or sentence; or in a test set's); so do
        a lone value and a bar's frame in an open block (a stage's values one a line, a bar
        drawn in it); an epoch's header keeps the block open; a header opens its block; any
        other line closes it."""
        if line.part not in _ENTRIES:
            if self.open in _STEP_BLOCKS and line.parser == "progress":
                return _counted_in(line, _STEP_BLOCKS[self.open])
            if self.open is not None and line.parser == "lone":
                return in_block(line, self.open)  # a stage's value, one a line (PyText's)
            if self.open is not None and line.bar is not None:
                return in_block(line, self.open)  # a bar drawn in the stage: its values
            if self.open is not None and _epoch_header(line):
                return line  # the stage's epoch, before its values
            self.open = line.part if line.part in _BLOCKS else None
            return line
        block = self.open
        if block is None:
            return None
        self.open = block if line.part == ENTRY else None
        return in_block(line, block)
