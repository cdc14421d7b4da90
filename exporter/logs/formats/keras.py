"""``keras``: ``Epoch 3/10`` and the progbar ``450/1000 [====>...] - ETA: 36s - loss: 0.1234``
(Keras 2), or its line of ``━`` (Keras 3, ``keras/src/utils/progbar.py``).
"""

from __future__ import annotations

import re

from ...model import ProgressReport
from ..lines import Bar, Format, LineReport, native

_KERAS_EPOCH = re.compile(r"^\s*Epoch (\d+)/(\d+)\s*$")
# Keras 2 draws [====>....]; Keras 3 a line of ━ (in colour, erased with backspaces: both
# are taken out of a message before it is parsed).
_KERAS_BAR = re.compile(r"^\s*(\d+)/(\d+)\s+(?:\[[=>.]*\]|━+)\s*(?P<rest>.*)$")
_KERAS_METRIC = re.compile(r"(?:^|\s)-\s+([A-Za-z_][\w]*):\s+([-+\w.]+)")
# Keras 3's mean time per step, to the millisecond or microsecond (a second or more per step
# is printed in whole seconds: too coarse to place a frame by).
_KERAS_PER_STEP = re.compile(r"(?:^|\s)(\d+)(ms|us)/step")


def keras_clock(n: int, rest: str) -> float | None:
    """Seconds from step 1 to the frame of step ``n`` of a Keras 3 bar whose text after the
    bar is ``rest``; None where the frame does not say.

    Why it is a clock: Keras 3 prints the mean time per step since its epoch's first step,
    (now - the time after step 1) / (n - 1) (``keras/src/utils/progbar.py``,
    ``_estimate_step_duration``, Keras 3.15), so (n - 1) times it is when the frame was
    drawn, to half a millisecond a step. Its bar reaches a container log 16 KiB (some 100
    frames) at a time, every 15 to 20 s; the clock places each frame of the chunk where it
    was drawn, as a tqdm bar's ``[00:37<01:40`` does, instead of all at the chunk's arrival."""
    if n == 1:
        return 0.0
    m = _KERAS_PER_STEP.search(rest)
    if m is None or n < 1:
        return None
    return (n - 1) * int(m[1]) / (1e3 if m[2] == "ms" else 1e6)


def read_keras_bar(frame: str) -> tuple[Bar, str] | None:
    """A Keras progbar frame (one segment, terminal codes removed): its bar (the clock set
    for Keras 3's, :func:`keras_clock`) and the text after it; None for anything else, and
    for a Keras 3 frame cut short before its time per step."""
    m = _KERAS_BAR.match(frame)
    if not m:
        return None
    n, total = int(m.group(1)), int(m.group(2))
    rest = m.group("rest")
    clock = None
    if "━" in frame:
        if n > 1 and "/step" not in rest:
            # Cut short where its 16 KiB chunk ended (the rest comes in the next): a frame
            # without its clock would stand for the chunk's newest and place none of them.
            return None
        clock = keras_clock(n, rest)
    return Bar(
        n=n, total=total, rate=None, remaining_seconds=None, prefix="keras", elapsed_seconds=clock
    ), rest


def parse_keras(msg: str, now: float) -> LineReport | None:
    frame = msg.rsplit("\r", 1)[-1] if "\r" in msg else msg
    if "Epoch" not in frame and not (
        "/" in frame and ("[=" in frame or "[." in frame or "[>" in frame or "━" in frame)
    ):
        return None
    m = _KERAS_EPOCH.match(frame)
    if m:
        current, total = int(m.group(1)), int(m.group(2))
        return LineReport(
            "keras", ProgressReport(max_epochs=float(total)), epoch_of=(current, total)
        )
    read = read_keras_bar(frame)
    if read is None:
        return None
    bar, rest = read
    eta = re.search(r"ETA:\s*(?:(\d+):)?(\d+)(?::(\d+))?s?", rest)
    values = {k: v for k, v in _KERAS_METRIC.findall(rest) if k != "ETA"}
    doc: dict[str, object] = {}
    for key, value in values.items():
        try:
            number = float(value)
        except ValueError:
            continue
        if key == "loss":
            doc["loss"] = number
        elif key == "val_loss":
            doc["eval_loss"] = number
        else:
            doc.setdefault("metrics", {})[key] = number  # type: ignore[index]
    remaining = None
    if eta:
        parts = [int(p) for p in eta.groups() if p is not None]
        remaining = float(sum(p * 60**i for i, p in enumerate(reversed(parts))))
    return native(doc, now, "keras", bar._replace(remaining_seconds=remaining))


FORMAT = Format("keras", ("Epoch", "[=", "[.", "[>", "━"), parse_keras)
