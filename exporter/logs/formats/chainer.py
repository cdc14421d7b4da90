"""``chainer``: the status line of Chainer's ``ProgressBar`` trainer extension, printed every
``update_interval`` iterations below its two bars::

         total [##################################################] 100.00%
    this epoch [..................................................]  0.00%
          6000 iter, 20 epoch / 20 epochs

(chainer/training/extensions/progress_bar.py: ``'{0.iteration:10} iter, {0.epoch} epoch /
%s %ss'`` of the training length, which is the trainer's stop trigger's period and unit
unless the script passes another.) The iteration is the updater's, its optimizer steps; the
epoch the whole epochs done. With a length in iterations its period is the run's total.

The length reached is the run's end: ``Trainer.run`` checks its stop trigger after the
extensions of each iteration and leaves its loop there, and ``ProgressBar`` erases its lines
on close, so nothing else marks it. ChainerMN's examples print the same. The bars above it
say no more than this line, and their escape sequences are gone in a file, so they are not
read.
"""

from __future__ import annotations

import re

from ..lines import Format, LineReport, native

_STATUS = re.compile(
    r"^\s*(?P<i>\d{1,15}) iter, (?P<e>\d{1,9}) epoch / "
    r"(?P<n>\d{1,15}) (?P<unit>epoch|iteration)s\s*$"
)


def parse_chainer(msg: str, now: float) -> LineReport | None:
    """The step, epoch and training length a ProgressBar status line says, or None."""
    status = _STATUS.match(msg)
    if status is None:
        return None
    step, epoch, length = int(status["i"]), int(status["e"]), int(status["n"])
    doc: dict[str, object] = {"step": step, "epoch": epoch}
    if status["unit"] == "epoch":
        doc["max_epochs"] = length
        done = epoch >= length
    else:
        doc["max_steps"] = length
        done = step >= length
    if done and length > 0:
        doc["final"] = True
    return native(doc, now, "chainer")


FORMAT = Format("chainer", (" iter, ",), parse_chainer)
