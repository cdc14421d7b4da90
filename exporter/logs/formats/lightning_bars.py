"""``lightning``: what only Lightning prints. Its ``RichProgressBar`` (``Epoch 1/1 ━━━ 8/8
0:00:00 • 0:00:00 580.95it/s train_loss: 0.034``), its accelerator banner and the end of
fit (``Trainer.fit`` stopped: ``max_epochs=3`` reached). Its tqdm bar is read by
:mod:`.tqdm`.
"""

from __future__ import annotations

import re

from ...core.model import ProgressReport
from ..lines import Bar, Format, LineReport, native
from .pairs import PRINTF_NUMBER
from .tqdm import clock

# Lightning's RichProgressBar (used when `rich` is installed), as a real run prints it:
# "Epoch 1/1  ━━━━━━━━━━━━━━━━━━ 8/8 0:00:00 • 0:00:00 580.95it/s train_loss: 0.034"
# ("Epoch N/M" are 0-based: the epoch index and the last index). A run bounded by max_steps
# alone has max_epochs -1, and the bar prints "max_epochs - 1": "Epoch 1/-2", no last epoch.
_RICH = re.compile(
    r"^\s*Epoch (?P<epoch>\d+)/(?P<last>-?\d+)\s+\S*\s*(?P<n>\d+)/(?P<total>\d+)"
    r"\s+(?P<elapsed>[\d:]+)"
    # The remaining time is left out once the bar is done (a real capture: "0:00:00 •
    # 787.72it/s"); a rate must not be read as one.
    r"\s+•\s+(?:(?P<remaining>[\d:]+|-:--:--)(?=\s))?\s*(?:(?P<rate>[\d.]+)it/s)?\s*(?P<metrics>.*)$"
)

_METRIC = re.compile(rf"([A-Za-z_][\w/.-]*):\s*({PRINTF_NUMBER})(?!\w)")


def parse_rich_bar(msg: str, now: float) -> LineReport | None:
    if "Epoch" not in msg or "•" not in msg:
        return None
    m = _RICH.match(msg.rsplit("\r", 1)[-1])
    if not m:
        return None
    metrics = {}
    # Rich formats each value with ".3f": "0.034", "nan", "-inf".
    for key, value in _METRIC.findall(m["metrics"]):
        metrics[key] = float(value)
    last = int(m["last"])
    # The fractional epoch (epochs done) is the accumulator's: the bar's count of its epoch.
    doc: dict[str, object] = {"max_epochs": last + 1} if last >= 0 else {}
    loss = metrics.pop("train_loss", metrics.pop("loss", metrics.pop("train_loss_step", None)))
    if loss is not None:
        doc["loss"] = loss
    if "val_loss" in metrics:
        doc["eval_loss"] = metrics.pop("val_loss")
    metrics.pop("v_num", None)
    if metrics:
        doc["metrics"] = metrics
    bar = Bar(
        n=int(m["n"]),
        total=int(m["total"]),
        rate=float(m["rate"]) if m["rate"] else None,
        remaining_seconds=clock(m["remaining"]),
        prefix=f"Epoch {m['epoch']}",
    )
    found = native(doc, now, "lightning", bar)
    if found is None or last < 0:
        return found
    # "Epoch i/last" is 0-based: epoch i of last + 1.
    return found._replace(epoch_of=(int(m["epoch"]), last + 1))


# Lines only Lightning prints: its accelerator banner, and the end of fit with the number of
# epochs ("`Trainer.fit` stopped: `max_epochs=3` reached."), which finishes the run.
_LIGHTNING_BANNER = re.compile(r"^(?:GPU|TPU|HPU) available: (?:True|False)")
_LIGHTNING_STOPPED = re.compile(
    r"`Trainer\.fit` stopped: (?:`max_epochs=(\d+)` reached|`max_steps=(\d+)` reached)?"
)


def parse_lightning(msg: str, now: float) -> LineReport | None:
    if "available: " in msg and _LIGHTNING_BANNER.match(msg):
        return LineReport("lightning", ProgressReport(framework="lightning"))
    if "`Trainer.fit` stopped" not in msg:
        return None
    m = _LIGHTNING_STOPPED.search(msg)
    epochs = m.group(1) if m is not None else None
    # Stopped by max_steps: the global step is that (fit_loop.py stops once it is reached).
    steps = int(m.group(2)) if m is not None and m.group(2) else None
    report = ProgressReport(
        framework="lightning",
        final=True,
        max_epochs=float(epochs) if epochs else None,
        step=steps,
        max_steps=steps,
    )
    return LineReport("lightning", report)


RICH_BAR = Format("lightning-rich", ("•",), parse_rich_bar)
BANNER = Format("lightning-banner", ("available: ", "`Trainer.fit` stopped"), parse_lightning)
