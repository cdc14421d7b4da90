"""``ends``: a trainer's own sentence that training stopped at its planned number of steps.

    [INFO] Reached max_steps (1635), stopping training.        LLaMA-Factory v1's trainer
    Reached max_steps (5000). Stopping training.               scripts of the same wording

The sentence names the steps it reached: the step and the total, and the end of the run (a
tool's own end marker, so it may finish the run). "Stopping training" must follow and end
the sentence: agents and RL episodes print "reached max_steps (N)" for an attempt or an
episode that gave up.
"""

from __future__ import annotations

import re

from ...core.model import ProgressReport
from ..lines import Format, LineReport

_MAX_STEPS_REACHED = re.compile(
    r"\bReached max_steps \((?P<n>\d{1,15})\)[.,]?\s+[Ss]topping training(?: early)?"
    r"\s*(?:\.|!|$)"
)


def parse_ends(msg: str, now: float) -> LineReport | None:
    m = _MAX_STEPS_REACHED.search(msg)
    if m is None or (n := int(m["n"])) <= 0:
        return None
    return LineReport("ends", ProgressReport(step=n, max_steps=n, final=True))


FORMAT = Format("ends", ("Reached max_steps (",), parse_ends)
