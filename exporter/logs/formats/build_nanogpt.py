"""``build-nanogpt``: the log file build-nanogpt's train_gpt2.py writes beside its stdout.

Karpathy's build-nanogpt (and the GPT-2 reproductions copied from it) appends one line per
event to ``log/log.txt``: ``{step} train {loss:.6f}`` every step, ``{step} val
{val_loss:.4f}`` and ``{step} hella {acc_norm:.4f}`` every 250 (the step as printed, the
loop's index). The file is what users tail or ship; its lines name neither a loss nor a step.
"""

from __future__ import annotations

import re

from ...core.model import ProgressReport
from ..lines import Format, LineReport

# Its own precision: six decimals for the train loss, four for the others; any other line of
# a number, a word and a number (a table's row, a data split's size) is not one of these.
_LINE = re.compile(
    r"^(?P<step>\d{1,12}) (?:(?P<kind>train) (?P<v>-?\d{1,6}\.\d{6}|nan|inf)"
    r"|(?P<other>val|hella) (?P<w>-?\d{1,6}\.\d{4}|nan|inf))\s*$"
)


def parse_log_line(msg: str, now: float) -> LineReport | None:
    """The step and the value of one line of the log file, or None."""
    m = _LINE.match(msg)
    if m is None:
        return None
    step, value = int(m["step"]), float(m["v"] if m["kind"] else m["w"])
    if m["kind"] == "train":
        report = ProgressReport(step=step, loss=value)
    elif m["other"] == "val":
        report = ProgressReport(step=step, eval_loss=value)
    else:
        report = ProgressReport(step=step, metrics=(("hellaswag_accuracy", value),))
    return LineReport("build-nanogpt", report)


FORMAT = Format("build-nanogpt", (" train ", " val ", " hella "), parse_log_line)
