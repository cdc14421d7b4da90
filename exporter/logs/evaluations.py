"""Which evaluation's loss is the run's eval loss: the validation set's, over a test set's.

Many loops evaluate on one held-out set and call it the test set (the PyTorch tutorials'
``Test Error: ... Avg loss: 0.0629``, the MNIST example's ``Test set: Average loss``): that
loss is the run's eval loss. Others validate every epoch and test once after training
(BrainFormer's ``Val loss: 0.637, Acc: ...`` and then ``Test loss: 0.634, Acc: ...``): the
validation set is the one training watches, so once the log has shown a validation's loss, a
test set's loss is kept as the ``test_loss`` metric and is no longer the eval loss.

Once the run said its training is over, another Keras bar drawn after is an evaluation's or
a prediction's (``model.evaluate`` after fit's ``Epoch 2: early stopping``): its loss is not
the training loss.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .formats.vocabulary import TEST_LOSS
from .lines import LineReport
from .parse import bar_key


@dataclass
class Evaluations:
    """Whether one log has shown a validation's loss (one not marked as a test set's)."""

    validated: bool = False

    def take(self, line: LineReport) -> LineReport:
        """``line`` as the accumulator takes it: a test set's eval loss after a validation's
        becomes the ``test_loss`` metric; any other line is as it was."""
        r = line.report
        if r.eval_loss is None:
            return line
        if not line.test_set:
            self.validated = True
            return line
        if not self.validated:
            return line
        metrics = dict(r.metrics)
        metrics[TEST_LOSS] = r.eval_loss
        tested = replace(r, eval_loss=None, metrics=tuple(sorted(metrics.items())))
        return line._replace(report=tested)


def after_the_end(
    line: LineReport, training: tuple[tuple[str, int | None], object] | None
) -> LineReport:
    """``line`` as the accumulator takes it once the run said its training is over, where
    ``training`` is its training bar (key, track) if any: the loss on another Keras bar's
    frame is dropped (``model.evaluate``'s after ``fit``); a redraw of the training bar and
    any other line are as they were (Lightning redraws its bar after its stop message, and a
    new attempt starting over in the same log draws its own)."""
    bar = line.bar
    if bar is None or line.parser != "keras" or line.report.loss is None:
        return line
    if training is not None and bar_key(bar) == training[0]:
        return line
    return line._replace(report=replace(line.report, loss=None))
