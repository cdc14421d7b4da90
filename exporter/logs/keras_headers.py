"""A Keras epoch header that heads none of the run's epochs: TensorFlow 2.1's validation
loop printing its own.

TensorFlow 2.1's ``fit`` validated through a loop of its own that printed an epoch header
too, right under the run's (tensorflow/tensorflow#35815)::

    Epoch 2/2
    Epoch 1/2
    1/1 [==============================] - 0s 1ms/step - loss: 0.0000e+00
    1/1 [==============================] - 0s 5ms/step - loss: 0.0000e+00 - val_loss: 0.0000e+00

A header that follows another with no other line between and names an epoch not after it
is such a nested loop's: the run's epoch is still the first header's. A header after any
other line is the run's (a second ``fit`` in one script starts at ``Epoch 1/N`` again after
its bars: a new run, as the accumulator sees it).

``fit`` prints a header before each epoch's bar whenever it prints a bar and runs more than
one epoch (``ProgbarLogger.on_epoch_begin``). A log that names an epoch after the first
(ModelCheckpoint's ``Epoch 1365: val_loss improved from ...``, EarlyStopping's) and shows no
header ran ``fit`` without its bar (``verbose=0``): a Keras bar in it is ``evaluate``'s or
``predict``'s, whose count is no step; and a bar of ``fit``'s own seen without its header
(a copy starting mid-epoch) counts within an epoch that is not the first: no step either.
Nor is either bar's loss the training's: ``evaluate``'s is the evaluation's, and the other
cannot be told from it.

Under a header ``fit`` draws one bar, the epoch's; another bar of another length before the
next header is ``evaluate``'s or ``predict``'s after ``fit`` stopped short of its epochs (an
early stop that printed nothing, a script's own banner between): no step, and its loss is
no training's (Keras 3's ``209/209 ... loss: 0.1440`` after ``Epoch 14/15``'s bar of 972).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .lines import LineReport
from .parse import bar_key


def headless_bar(line: LineReport, header: tuple[int, int] | None, epoch: object) -> LineReport:
    """``line`` as the accumulator takes it: a Keras bar where no ``header`` was seen and
    another line named an ``epoch`` after the first (see the module docstring) counts no step,
    and its loss is no training's (``evaluate``'s, or a copy's from mid-epoch that cannot
    say); any other line as it is."""
    bar = line.bar
    if bar is None or line.parser != "keras" or header is not None:
        return line
    if not (isinstance(epoch, int | float) and epoch > 1):
        return line
    return line._replace(bar=bar._replace(not_steps=True), report=replace(line.report, loss=None))


@dataclass
class KerasHeaders:
    """The epoch of the Keras header that was the last line taken, if it was one."""

    last: int | None = None
    headed: bool = False  # a run's header was taken
    opened: tuple[str, int | None] | None = None  # the bar drawn first under the newest header

    def nested(self, line: LineReport) -> bool:
        """Whether ``line`` is a header nested right under another's, to be passed over
        (see the module docstring); every line taken goes through here."""
        header = None
        if line.parser == "keras" and line.bar is None and line.epoch_of is not None:
            header = line.epoch_of[0]
        if header is not None and self.last is not None and header <= self.last:
            return True
        self.last = header
        if header is not None:
            self.headed, self.opened = True, None
        return False

    def evaluating(self, line: LineReport) -> LineReport:
        """``line`` as the accumulator takes it: a Keras bar other than the one drawn first
        under the newest header (see the module docstring) counts no step and gives no
        training loss; any other line as it is."""
        if line.parser != "keras" or line.bar is None or not self.headed:
            return line
        key = bar_key(line.bar)
        if self.opened is None or self.opened == key:
            self.opened = key
            return line
        return line._replace(
            bar=line.bar._replace(not_steps=True), report=replace(line.report, loss=None)
        )
