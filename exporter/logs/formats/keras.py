"""``keras``: ``Epoch 3/10`` and the progbar ``450/1000 [====>...] - ETA: 36s - loss: 0.1234``
(Keras 2), or its line of ``━`` (Keras 3, ``keras/src/utils/progbar.py``).
"""

from __future__ import annotations

import re

from ...core.model import ProgressReport
from ..lines import EMPTY, Bar, Format, LineReport, native

_KERAS_EPOCH = re.compile(r"^\s*Epoch (\d+)/(\d+)\s*$")
# Keras 2 draws [====>....]; Keras 3 a line of ━ (in colour, erased with backspaces: both
# are taken out of a message before it is parsed).
# With verbose=2, one line per epoch and no bar: "1875/1875 - 4s - loss: 0.2931" (Keras 2),
# "1875/1875 - 3s - 2ms/step - accuracy: 0.8734 - loss: 0.4410" (Keras 3).
_KERAS_BAR = re.compile(r"^\s*(\d+)/(\d+)\s+(?:\[[=>.]*\]|━+|(?=-\s+\d+m?s\b))\s*(?P<rest>.*)$")
# verbose=2 before Keras 2.3 printed no count: "0s - loss: 0.0396 - acc: 0.0021" (Keras 1),
# " - 5s - loss: 0.2931 - acc: 0.91" (Keras 2.0 to 2.2): the epoch's values, no step.
_KERAS_EPOCH_END = re.compile(r"^\s*(?:-\s+)?\d+s\s+(?=-\s+[A-Za-z_]\w*:\s)(?P<rest>.*)$")
# Keras 1 and 2's fit() on arrays, before its first epoch: "Train on 3523 samples, validate
# on 186 samples" (training_arrays.py; "Train for 1875 steps" on a dataset counts steps).
_TRAIN_ON = re.compile(r"^\s*Train on (\d+) samples\b")
_KERAS_METRIC = re.compile(r"(?:^|\s)-\s+([A-Za-z_][\w]*):\s+([-+\w.]+)")
# The time of one step of the bar's count, at an epoch's end: "- 5s 87us/step" (Keras 2),
# "- 3s - 2ms/step" (Keras 3). Its inverse is the bar's rate: Keras 2 counted samples in
# fit() on arrays ("60000/60000 ... 87us/step"), faster than any loop takes steps.
_PER_STEP = re.compile(r"\b(\d+(?:\.\d+)?)(us|µs|ms|s)/step\b")
# An epoch's last frame as Keras printed it before 2.1: its time and no time per step
# ("1213/1213 [====] - 0s - loss: 0.1760"; 2.1 on print "- 0s 12us/step - loss"). Its count
# may be samples or steps: Keras 1 counted samples in fit and fit_generator alike, Keras 2.0
# samples in fit on arrays (Rasa Core's KerasPolicy, every MNIST tutorial of the time) and
# steps in fit_generator only, and the line says neither. Such a bar never gives the step.
_UNITLESS_EPOCH_END = re.compile(r"^-\s+\d+s(?:\s+-\s|\s*$)")
_PER_SAMPLE = re.compile(r"\b\d+(?:\.\d+)?(?:us|µs|ms|s)/sample\b")
_SECONDS = {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0}


def _values(rest: str) -> dict[str, object]:
    """The ``- name: value`` pairs after a bar (or an epoch's time): the loss, the
    validation loss, and every other as a custom metric."""
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
    return doc


def parse_keras(msg: str, now: float) -> LineReport | None:
    frame = msg.rsplit("\r", 1)[-1] if "\r" in msg else msg
    if "Train on " in frame:
        samples = _TRAIN_ON.match(frame)
        return LineReport("keras", EMPTY, samples=int(samples[1])) if samples else None
    if "Epoch" not in frame and not (
        ("/" in frame and ("[=" in frame or "[." in frame or "[>" in frame or "━" in frame))
        or "s - " in frame
    ):
        return None
    m = _KERAS_EPOCH.match(frame)
    if m:
        current, total = int(m.group(1)), int(m.group(2))
        return LineReport(
            "keras", ProgressReport(max_epochs=float(total)), epoch_of=(current, total)
        )
    m = _KERAS_BAR.match(frame)
    if not m:
        end = _KERAS_EPOCH_END.match(frame)
        return native(_values(end["rest"]), now, "keras") if end else None
    n, total = int(m.group(1)), int(m.group(2))
    rest = m.group("rest")
    eta = re.search(r"ETA:\s*(?:(\d+):)?(\d+)(?::(\d+))?s?", rest)
    doc = _values(rest)
    remaining = None
    if eta:
        parts = [int(p) for p in eta.groups() if p is not None]
        remaining = float(sum(p * 60**i for i, p in enumerate(reversed(parts))))
    per_step = _PER_STEP.search(rest)
    seconds = float(per_step[1]) * _SECONDS[per_step[2]] if per_step else 0.0
    rate = 1.0 / seconds if seconds > 0 else None
    # TensorFlow 2.0 and 2.1 named the unit on arrays: "60000/60000 [====] - 5s 80us/sample".
    per_sample = per_step is None and _PER_SAMPLE.search(rest) is not None
    # A drawn bar's only: verbose=2 printed a count from Keras 2.3 on, when fit counted steps.
    drawn = "[" in frame[: m.start("rest")]
    bar = Bar(
        n=n,
        total=total,
        rate=rate,
        remaining_seconds=remaining,
        prefix="keras",
        not_steps=per_sample
        or (drawn and per_step is None and _UNITLESS_EPOCH_END.match(rest) is not None),
    )
    return native(doc, now, "keras", bar)


FORMAT = Format("keras", ("Epoch", "[=", "[.", "[>", "━", "s - ", "Train on "), parse_keras)
