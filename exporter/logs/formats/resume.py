"""``resumed``: a line that says the run goes on from a saved state.

``Load checkpoint from file weights/checkpoint_epoch_33.pth`` (a CPS trainer's), ``Resuming
training from checkpoint``, ``Continuing training from checkpoint, will skip to saved
global_step``: the epochs before it are not in the log, so a bar that starts over each
epoch counts only the epochs since (:meth:`exporter.logs.bars.BarTrack.step_known`). Only a
resume, or a load of a checkpoint that names its epoch, step or iteration: loading a model's
weights (``Loading checkpoint shards``, a pretrained checkpoint) starts no run midway.
"""

from __future__ import annotations

import re

from ...core.model import ProgressReport
from ..lines import Format, LineReport

_RESUMED = re.compile(
    r"(?i)\b(?:resum(?:e|ed|ing)|continu(?:e|ed|ing) training)\b.{0,60}\b(?:checkpoint|ckpt)\b"
    r"|\b(?:load(?:ed|ing)?|restor(?:e|ed|ing))\s+(?:the\s+)?(?:checkpoint|ckpt)\b(?!\s+shards)"
    r".{0,120}?(?:epoch|step|iter(?:ation)?)[_\-=]?\d{1,9}\b"
)


def parse_resume(msg: str, now: float) -> LineReport | None:
    """A resume, or None."""
    if _RESUMED.search(msg) is None:
        return None
    return LineReport("resumed", ProgressReport(), resumed=True)


FORMAT = Format(
    "resumed", ("esum", "ontinu", "oad checkpoint", "oading checkpoint", "estor"), parse_resume
)
