"""``tqdm``: ``16%|█▌        | 8/50 [00:02<00:10,  3.98it/s]`` (also ``s/it``, a postfix
``, loss=0.5``, and the total-less ``8it [00:02, 3.98it/s]``), tqdm ``std.py``
``format_meter``; named ``lightning`` when the postfix carries Lightning's ``v_num``.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..lines import EMPTY, Bar, Format, LineReport, native

_BAR = re.compile(
    r"(?P<prefix>[^|\r]*?):?\s*(?P<pct>\d+)%\|[^|]*\|\s*(?P<n>\d+)/(?P<total>\d+)\s*"
    r"\[(?P<elapsed>[\d:]+)<(?P<remaining>[\d:]+|\?)(?:,\s*(?P<rate>[\d.]+|\?)\s*(?P<unit>it/s|s/it))?"
    r"(?:,\s*(?P<postfix>[^\]]*))?\]"
)
_BAR_NO_TOTAL = re.compile(
    r"(?P<prefix>[^|\r]*?):?\s*(?P<n>\d+)it\s*\[(?P<elapsed>[\d:]+)(?:,\s*(?P<rate>[\d.]+)\s*(?P<unit>it/s|s/it))?"
    r"(?:,\s*(?P<postfix>[^\]]*))?\]"
)


@lru_cache(maxsize=1024)
def clock(text: str | None) -> float | None:
    if not text or text == "?":
        return None
    seconds = 0.0
    for part in text.split(":"):
        if not part.isdigit():
            return None
        seconds = seconds * 60 + int(part)
    return seconds


def _postfix(text: str | None) -> dict[str, float]:
    out: dict[str, float] = {}
    for item in (text or "").split(","):
        key, sep, value = item.partition("=")
        if not sep:
            continue
        try:
            number = float(value.strip())
        except ValueError:
            continue
        out[key.strip()] = number
    return out


def read_bar(msg: str) -> tuple[Bar, dict[str, float]] | None:
    frame = msg.rsplit("\r", 1)[-1] if "\r" in msg else msg
    if "%|" not in frame and "it [" not in frame:  # cheap: most lines are not bars
        return None
    m = _BAR.search(frame)
    total = None
    if m is not None:
        total = int(m["total"])
        remaining = clock(m["remaining"])
    else:
        m = _BAR_NO_TOTAL.search(frame)
        if m is None:
            return None
        remaining = None
    rate = None
    text, unit = m["rate"], m["unit"]
    if text is not None and text != "?":
        value = float(text)
        rate = value if unit == "it/s" else (1 / value if value else None)
    bar = Bar(int(m["n"]), total, rate, remaining, m["prefix"].strip(), clock(m["elapsed"]))
    postfix = m["postfix"]
    return bar, (_postfix(postfix) if postfix else {})


def parse_bar(msg: str, now: float) -> LineReport | None:
    """A tqdm bar; Lightning's when its postfix carries Lightning's logger version
    (``v_num``), which only Lightning prints: ``Epoch 3:`` alone is any script's description.
    Which epoch the bar is (and whether it names one at all) is the accumulator's to read."""
    found = read_bar(msg)
    if found is None:
        return None
    bar, postfix = found
    lightning = "v_num" in postfix
    doc: dict[str, object] = {}
    loss = postfix.pop("loss", None)
    if loss is None:
        loss = postfix.pop("train_loss", postfix.pop("train_loss_step", None))
    if loss is not None:
        doc["loss"] = loss
    if "val_loss" in postfix:
        doc["eval_loss"] = postfix.pop("val_loss")
    postfix.pop("v_num", None)  # Lightning's logger version, not a metric
    if postfix:
        doc["metrics"] = postfix
    name = "lightning" if lightning else "tqdm"
    if not doc:  # a bare frame (most are): nothing to validate
        return LineReport(name, EMPTY, bar)
    return native(doc, now, name, bar)


FORMAT = Format("bar", ("%|", "it ["), parse_bar)
