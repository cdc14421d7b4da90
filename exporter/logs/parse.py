"""Progress from log lines: pure parsers, one message in, partial report fields out.

Every framework already prints its progress; these parsers read it without a code change.
Each parser takes one message (a log line without its CRI prefix) and returns a
:class:`LineReport` or None. Nothing here keeps state: combining lines (which progress bar is
the training bar, Keras' per-epoch batches) is the log source's job.

Formats, with the library source each follows:
* ``kubeflow-marker``: ``[trainer.kubeflow.org/v1alpha1/trainjob/trainerStatus] {json}``
  (the Kubeflow KEP's log convention; also what our reporter prints to stdout);
* ``transformers``: ``Trainer`` log dicts, a Python repr whose values are strings in recent
  versions: ``{'loss': '6.903', 'grad_norm': '1.095', 'learning_rate': '4.6e-05', 'epoch': '0.1'}``;
  the final one carries ``train_runtime``;
* ``tqdm``: ``16%|█▌        | 8/50 [00:02<00:10,  3.98it/s]`` (also ``s/it``, a postfix
  ``, loss=0.5``, and the total-less ``8it [00:02, 3.98it/s]``);
* ``lightning``: its tqdm bar prefixed ``Epoch 3:`` with metrics in the postfix;
* ``keras``: ``Epoch 3/10`` and the progbar ``450/1000 [====>...] - ETA: 36s - loss: 0.1234``;
* ``deepspeed``: ``step=100, skipped=0, lr=[0.0001], ...`` and ``steps: 100 loss: 2.3456 ...``;
* ``katib``: lines of ``name=value`` pairs (Katib's StdOut metrics collector format);
* ``jsonl``: one JSON object per line carrying step or loss keys.
"""

from __future__ import annotations

import ast
import itertools
import json
import math
import re
from collections.abc import Callable
from functools import lru_cache
from typing import NamedTuple

from training_progress_reporter import KUBEFLOW_MARKER

from ..model import NATIVE_FIELDS, ProgressReport, ReportError, parse_kubeflow, parse_native

MAX_MESSAGE = 16 * 1024
EMPTY = ProgressReport()  # longer messages are not progress lines; they are skipped unparsed


class Bar(NamedTuple):
    """One progress-bar frame: ``n`` of ``total`` (None when the bar has no total). A named
    tuple: a log has millions of frames, and a frozen dataclass costs twice as much to make."""

    n: int
    total: int | None
    rate: float | None  # items per second
    remaining_seconds: float | None
    prefix: str  # text before the bar, e.g. "Epoch 3" or "Downloading"
    elapsed_seconds: float | None = None  # the bar's own clock, whole seconds
    # Drawn below another bar: tqdm moves the cursor back up (ESC [A) after an inner bar
    # (an evaluation loop inside training), never after the outermost one.
    nested: bool = False


class LineReport(NamedTuple):
    """What one line said: the parser that matched, report fields, and a bar if it was one."""

    parser: str
    report: ProgressReport
    bar: Bar | None = None
    epoch_of: tuple[int, int] | None = None  # Keras "Epoch 3/10": (3, 10)
    # The same bar's older frames in this message, (elapsed seconds, n), oldest first: each
    # frame is stamped by the bar's own clock, so a chunk of frames is a run of rate samples.
    frames: tuple[tuple[float, int], ...] = ()


def _native(
    doc: dict[str, object], now: float, parser: str, bar: Bar | None = None
) -> LineReport | None:
    try:
        parsed = parse_native(doc, now)
    except ReportError:
        return None
    return LineReport(parser, parsed.report, bar)


# -- kubeflow marker --------------------------------------------------------------------------


def parse_kubeflow_marker(msg: str, now: float) -> LineReport | None:
    i = msg.find(KUBEFLOW_MARKER)
    if i < 0:
        return None
    try:
        parsed = parse_kubeflow(json.loads(msg[i + len(KUBEFLOW_MARKER) :]), now)
    except (ValueError, ReportError):
        return None
    return LineReport("kubeflow-marker", parsed.report)


# -- transformers log dicts --------------------------------------------------------------------

_DICT = re.compile(r"^\s*(\{'[a-z_]+': .*\})\s*$")
_TRANSFORMERS_KEYS = {
    "loss",
    "grad_norm",
    "learning_rate",
    "epoch",
    "eval_loss",
    "train_runtime",
    "train_loss",
    "eval_runtime",
}


# The shape Trainer prints ({'loss': '6.9', 'epoch': 0.1}), read without ast: literal_eval
# costs 30 µs a line. Anything else falls back to literal_eval.
_FLAT_PAIR = r"'[A-Za-z_][\w./-]*': (?:'[^'\\]*'|[-+\w.]+)"
_FLAT_DICT = re.compile(rf"\{{{_FLAT_PAIR}(?:, {_FLAT_PAIR})*\}}")
_FLAT_ITEM = re.compile(r"'([A-Za-z_][\w./-]*)': (?:'([^'\\]*)'|([-+\w.]+))")


def _literal_dict(text: str) -> object:
    """The dict ``text`` writes, or None; never evaluates code."""
    if _FLAT_DICT.fullmatch(text):
        out: dict[str, object] = {}
        for key, quoted, bare in _FLAT_ITEM.findall(text):
            if quoted or not bare:
                out[key] = quoted
            elif bare in ("True", "False", "None"):
                out[key] = {"True": True, "False": False, "None": None}[bare]
            else:
                try:
                    out[key] = int(bare) if bare.lstrip("-+").isdigit() else float(bare)
                except ValueError:
                    return _slow_literal(text)
        return out
    return _slow_literal(text)


def _slow_literal(text: str) -> object:
    try:
        return ast.literal_eval(text)  # a literal only: never code
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


def parse_transformers(msg: str, now: float) -> LineReport | None:
    if "{'" not in msg:
        return None
    m = _DICT.match(msg)
    if not m:
        return None
    value = _literal_dict(m.group(1))
    if not isinstance(value, dict) or not _TRANSFORMERS_KEYS & set(value):
        return None
    known = {
        k: value[k]
        for k in ("loss", "grad_norm", "learning_rate", "eval_loss", "epoch")
        if k in value
    }
    rest = {k: v for k, v in value.items() if k not in known and isinstance(k, str)}
    doc: dict[str, object] = {**known, "metrics": rest}
    if "train_runtime" in value:  # the summary Trainer logs once training is over
        doc["final"] = True
    return _native(doc, now, "transformers")


# -- progress bars (tqdm, lightning) -----------------------------------------------------------

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
def _clock(text: str | None) -> float | None:
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


def _bar(msg: str) -> tuple[Bar, dict[str, float]] | None:
    frame = msg.rsplit("\r", 1)[-1] if "\r" in msg else msg
    if "%|" not in frame and "it [" not in frame:  # cheap: most lines are not bars
        return None
    m = _BAR.search(frame)
    total = None
    if m is not None:
        total = int(m["total"])
        remaining = _clock(m["remaining"])
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
    bar = Bar(int(m["n"]), total, rate, remaining, m["prefix"].strip(), _clock(m["elapsed"]))
    postfix = m["postfix"]
    return bar, (_postfix(postfix) if postfix else {})


def parse_bar(msg: str, now: float) -> LineReport | None:
    """A tqdm bar; Lightning's when its postfix carries Lightning's logger version
    (``v_num``), which only Lightning prints: ``Epoch 3:`` alone is any script's description.
    Which epoch the bar is (and whether it names one at all) is the accumulator's to read."""
    found = _bar(msg)
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
    return _native(doc, now, name, bar)


# Lightning's RichProgressBar (used when `rich` is installed), as a real run prints it:
# "Epoch 1/1  ━━━━━━━━━━━━━━━━━━ 8/8 0:00:00 • 0:00:00 580.95it/s train_loss: 0.034"
# ("Epoch N/M" are 0-based: the epoch index and the last index).
_RICH = re.compile(
    r"^\s*Epoch (?P<epoch>\d+)/(?P<last>\d+)\s+\S*\s*(?P<n>\d+)/(?P<total>\d+)"
    r"\s+(?P<elapsed>[\d:]+)"
    # The remaining time is left out once the bar is done (a real capture: "0:00:00 •
    # 787.72it/s"); a rate must not be read as one.
    r"\s+•\s+(?:(?P<remaining>[\d:]+|-:--:--)(?=\s))?\s*(?:(?P<rate>[\d.]+)it/s)?\s*(?P<metrics>.*)$"
)


def parse_rich_bar(msg: str, now: float) -> LineReport | None:
    if "Epoch" not in msg or "•" not in msg:
        return None
    m = _RICH.match(msg.rsplit("\r", 1)[-1])
    if not m:
        return None
    metrics = {}
    for key, value in re.findall(r"([A-Za-z_][\w/.-]*):\s*([-+\d.eE]+|nan|inf)", m["metrics"]):
        try:
            metrics[key] = float(value)
        except ValueError:
            continue
    # The fractional epoch (epochs done) is the accumulator's: the bar's count of its epoch.
    doc: dict[str, object] = {"max_epochs": int(m["last"]) + 1}
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
        remaining_seconds=_clock(m["remaining"]),
        prefix=f"Epoch {m['epoch']}",
    )
    found = _native(doc, now, "lightning", bar)
    # "Epoch i/last" is 0-based: epoch i of last + 1.
    return None if found is None else found._replace(epoch_of=(int(m["epoch"]), int(m["last"]) + 1))


# -- keras ----------------------------------------------------------------------------------

_KERAS_EPOCH = re.compile(r"^\s*Epoch (\d+)/(\d+)\s*$")
# Keras 2 draws [====>....]; Keras 3 a line of ━ (in colour, erased with backspaces: both
# are taken out of a message before it is parsed).
_KERAS_BAR = re.compile(r"^\s*(\d+)/(\d+)\s+(?:\[[=>.]*\]|━+)\s*(?P<rest>.*)$")
_KERAS_METRIC = re.compile(r"(?:^|\s)-\s+([A-Za-z_][\w]*):\s+([-+\w.]+)")


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
    m = _KERAS_BAR.match(frame)
    if not m:
        return None
    n, total = int(m.group(1)), int(m.group(2))
    rest = m.group("rest")
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
    bar = Bar(n=n, total=total, rate=None, remaining_seconds=remaining, prefix="keras")
    return _native(doc, now, "keras", bar)


# -- deepspeed ------------------------------------------------------------------------------

_DS_STEP = re.compile(r"\bstep=(\d+),\s*skipped=\d+,\s*lr=\[([-+\d.eE]+)")
_DS_STEPS = re.compile(r"\bsteps:\s*(\d+)\s+loss:\s*([-+\d.eEnaif]+)")


def parse_deepspeed(msg: str, now: float) -> LineReport | None:
    if "step" not in msg:
        return None
    m = _DS_STEP.search(msg)
    if m:
        return _native(
            {"step": int(m.group(1)), "learning_rate": float(m.group(2))}, now, "deepspeed"
        )
    m = _DS_STEPS.search(msg)
    if m:
        try:
            loss = float(m.group(2))
        except ValueError:
            return None
        return _native({"step": int(m.group(1)), "loss": loss}, now, "deepspeed")
    return None


# -- katib name=value --------------------------------------------------------------------------

_KV = re.compile(
    r"^([A-Za-z_][\w.\-/]*)=([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+|nan|inf))$", re.I
)
_KATIB_KEYS = {"loss", "step", "epoch", "accuracy", "val_loss", "eval_loss", "learning_rate", "lr"}


def parse_katib(msg: str, now: float) -> LineReport | None:
    if "=" not in msg:
        return None
    tokens = msg.replace(",", " ").split()
    if not tokens or len(tokens) > 64:
        return None
    pairs = {}
    for token in tokens:
        m = _KV.match(token)
        if not m:
            return None  # every token must be name=value: anything else is not a metrics line
        pairs[m.group(1)] = float(m.group(2))
    if not _KATIB_KEYS & {k.lower() for k in pairs}:
        return None
    doc: dict[str, object] = {}
    for key, value in pairs.items():
        low = key.lower()
        if low in ("loss", "step", "epoch", "learning_rate"):
            doc[low] = int(value) if low == "step" and math.isfinite(value) else value
        elif low == "lr":
            doc["learning_rate"] = value
        elif low in ("val_loss", "eval_loss"):
            doc["eval_loss"] = value
        else:
            doc.setdefault("metrics", {})[key] = value  # type: ignore[index]
    return _native(doc, now, "katib")


# -- lightning's own lines ------------------------------------------------------------------------

# Lines only Lightning prints: its accelerator banner, and the end of fit with the number of
# epochs ("`Trainer.fit` stopped: `max_epochs=3` reached."), which finishes the run.
_LIGHTNING_BANNER = re.compile(r"^(?:GPU|TPU|HPU) available: (?:True|False)")
_LIGHTNING_STOPPED = re.compile(r"`Trainer\.fit` stopped: (?:`max_epochs=(\d+)` reached)?")


def parse_lightning(msg: str, now: float) -> LineReport | None:
    if "available: " in msg and _LIGHTNING_BANNER.match(msg):
        return LineReport("lightning", ProgressReport(framework="lightning"))
    if "`Trainer.fit` stopped" not in msg:
        return None
    m = _LIGHTNING_STOPPED.search(msg)
    epochs = m.group(1) if m is not None else None
    report = ProgressReport(
        framework="lightning", final=True, max_epochs=float(epochs) if epochs else None
    )
    return LineReport("lightning", report)


# -- plain prints -------------------------------------------------------------------------------

# What a hand-written loop prints: ``step 10/100 loss 0.53``, ``Step: 10 of 100, loss=0.53``,
# ``epoch 2 step 10 | loss: 0.53``. A step with its total or with a loss (a step alone is
# too common a word: "saved a checkpoint at step 100").
_PRINT_STEP = re.compile(
    r"(?i)(?<![\w.])step[\s:=#]*(\d{1,15})(?:\s*(?:/|of)\s*(\d{1,15}))?(?![\w.])"
)
_PRINT_LOSS = re.compile(
    r"(?i)(?<![\w.])(?:train[_ ])?loss[\s:=]+"
    r"([-+]?(?:\d+\.?\d*(?:e[-+]?\d+)?|\.\d+|nan|inf))(?![\w.])"
)
_PRINT_EPOCH = re.compile(r"(?i)(?<![\w.])epoch[\s:=#]*(\d{1,9})\s*(?:/|of)\s*(\d{1,9})(?![\w.])")


def parse_print(msg: str, now: float) -> LineReport | None:
    if "tep" not in msg or len(msg) > 512:
        return None
    step = _PRINT_STEP.search(msg)
    if step is None:
        return None
    loss = _PRINT_LOSS.search(msg)
    if step.group(2) is None and loss is None:
        return None
    doc: dict[str, object] = {"step": int(step.group(1))}
    if step.group(2) is not None:
        doc["max_steps"] = int(step.group(2))
    if loss is not None:
        doc["loss"] = float(loss.group(1))
    epoch = _PRINT_EPOCH.search(msg)
    if epoch is not None:
        doc["max_epochs"] = int(epoch.group(2))
    return _native(doc, now, "print")


# -- json lines ---------------------------------------------------------------------------------

_JSON_KEYS = {"step", "global_step", "loss", "train_loss", "epoch", "max_steps", "total_steps"}


def parse_jsonl(msg: str, now: float) -> LineReport | None:
    text = msg.strip()
    if not (text.startswith("{") and text.endswith("}")):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, dict) or not _JSON_KEYS & set(value):
        return None
    doc = dict(value)
    if "global_step" in doc and "step" not in doc:
        doc["step"] = doc.pop("global_step")
    if "total_steps" in doc and "max_steps" not in doc:
        doc["max_steps"] = doc.pop("total_steps")
    if "train_loss" in doc and "loss" not in doc:
        doc["loss"] = doc.pop("train_loss")
    known = set(NATIVE_FIELDS)
    metrics = {
        k: v
        for k, v in doc.items()
        if k not in known and isinstance(v, int | float) and not isinstance(v, bool)
    }
    native = {k: v for k, v in doc.items() if k in known}
    return _native({**native, "metrics": metrics}, now, "jsonl")


# -- all of them --------------------------------------------------------------------------------

# In order: structured formats first (they are unambiguous), bars last.
PARSERS: tuple[tuple[str, Callable[[str, float], LineReport | None]], ...] = (
    ("kubeflow-marker", parse_kubeflow_marker),
    ("transformers", parse_transformers),
    ("jsonl", parse_jsonl),
    ("deepspeed", parse_deepspeed),
    ("keras", parse_keras),
    ("lightning-rich", parse_rich_bar),
    ("bar", parse_bar),
    ("katib", parse_katib),
    ("lightning-banner", parse_lightning),
    ("print", parse_print),
)


# Every parser needs one of these in a line; a line with none (most of a log) costs one scan.
HINTS = (
    KUBEFLOW_MARKER,
    "{",
    "%|",
    "it [",
    "Epoch",
    "step",
    "=",
    "/",
    "━",
    "available: ",
    "`Trainer",
)
_ANY_HINT = re.compile("|".join(re.escape(h) for h in HINTS))
# The same, on raw bytes: a line without any of them need not even be decoded.
HINT_BYTES = re.compile(b"|".join(re.escape(h.encode()) for h in HINTS))


def parse_line(msg: str, now: float) -> LineReport | None:
    """The first parser that recognizes ``msg`` (one segment, no carriage return), or None
    for an unrelated line."""
    if not msg or len(msg) > MAX_MESSAGE or not _ANY_HINT.search(msg):
        return None
    if "%|" in msg and "{" not in msg:  # a tqdm frame, the most frequent progress line
        found = parse_bar(msg, now)
        if found is not None:
            return found
    for _, parser in PARSERS:
        found = parser(msg, now)
        if found is not None:
            return found
    return None


# Terminal control sequences (colours, cursor moves such as tqdm's "\x1b[A" for nested bars).
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def plain(msg: str) -> str:
    """``msg`` without terminal colours, cursor moves and backspaces: Keras 3 colours its bar
    and erases each frame with backspaces before the next, tqdm moves the cursor between
    nested bars. Frames stay separated by their carriage returns."""
    if "\x1b" in msg:
        msg = _ANSI.sub("", msg)
    if "\b" in msg:
        msg = msg.replace("\b", "")
    return msg


# Text in a segment that may make it a progress-bar frame (tqdm, Lightning's Rich bar, Keras).
_BAR_HINTS = ("%|", "it [", "•", "[=", "[.", "[>", "━")
_CURSOR_UP = "\x1b[A"
# Segments of one message parsed, newest first: a 16 KiB chunk of tqdm frames holds about
# 200, each a rate sample stamped by the bar's own clock (the rest of a longer one is older).
MAX_SEGMENTS = 1024
# Older frames read per bar per message: this many ticks of the bar's clock (the log
# accumulator keeps no more per bar). Beyond them only the message's oldest frame is read
# (a bar that started over within the message shows there).
FRAME_TICKS = 64
_DIGITS = re.compile(r"\d+")


@lru_cache(maxsize=256)
def _prefix_key(prefix: str) -> str:
    return _DIGITS.sub("#", prefix)


def bar_key(bar: Bar) -> tuple[str, int | None]:
    """Which bar a frame belongs to: its prefix with digits removed (``Epoch 3`` and
    ``Epoch 4`` are one bar) and its total."""
    return _prefix_key(bar.prefix), bar.total


def parse_message(msg: str, now: float) -> list[LineReport]:
    """Every report in one message, oldest first.

    A message without a carriage return is one candidate. With them (a bar redrawn with
    ``\r``, then, after the last one, a Trainer dict or a JSON line printed over it), each
    segment is a candidate: every segment that is not a bar frame, and of the bar frames the
    newest of each bar (an older frame of the same bar says nothing the newest does not). At
    most :data:`MAX_SEGMENTS` segments are parsed, from the newest.
    """
    if "`Trainer.fit` stopped" in msg:
        # Lightning prints it right after its bar's last frame, on the same line.
        msg = msg.replace("`Trainer.fit` stopped", "\r`Trainer.fit` stopped")
    if "\r" not in msg:
        found = _parse_segment(msg, now)
        return [] if found is None else [found]
    out: list[LineReport] = []
    frames: dict[tuple[str, int | None], list[tuple[float, int]]] = {}
    parsed = 0
    oldest: str | None = None  # the oldest bar frame passed over once every bar had its ticks
    full = False  # every bar found has its ticks (checked every 32 segments)
    for segment in reversed(msg.split("\r")):
        if not segment.strip():
            continue
        if parsed >= MAX_SEGMENTS:
            break
        parsed += 1
        if frames and not full and parsed % 32 == 0:
            full = _enough(frames)
        if full and ("%|" in segment or "it [" in segment):
            oldest = segment
            continue
        if frames and _older_frame(segment, frames):
            continue
        found = _parse_segment(segment, now)
        if found is None:
            continue
        if found.bar is not None:
            key = bar_key(found.bar)
            if key in frames:
                if found.bar.elapsed_seconds is not None:
                    frames[key].append((found.bar.elapsed_seconds, found.bar.n))
                continue
            frames[key] = []
        out.append(found)
    if oldest is not None:
        _older_frame(oldest, frames)
    out.reverse()
    return [_with_frames(r, frames) for r in out]


def _enough(frames: dict[tuple[str, int | None], list[tuple[float, int]]]) -> bool:
    """Whether every bar found has :data:`FRAME_TICKS` ticks of its clock (newest first, so
    a tick is a change of the elapsed time)."""
    for older in frames.values():
        if len(older) < FRAME_TICKS:
            return False
        ticks = 1
        for (a, _), (b, _) in itertools.pairwise(older):
            ticks += a != b
            if ticks >= FRAME_TICKS:
                break
        if ticks < FRAME_TICKS:
            return False
    return True


def _older_frame(
    segment: str, frames: dict[tuple[str, int | None], list[tuple[float, int]]]
) -> bool:
    """Whether ``segment`` is an older frame of a bar already found newer in the message; if
    so its clock and count are added to ``frames``. Only those are read (not its postfix):
    a 16 KiB chunk holds some 200 frames, and all but the newest are rate samples."""
    if "%|" not in segment and "it [" not in segment:
        return False
    found = _bar(plain(segment))
    if found is None or found[0].elapsed_seconds is None:
        return False
    older = frames.get(bar_key(found[0]))
    if older is None:
        return False
    older.append((found[0].elapsed_seconds, found[0].n))
    return True


def _parse_segment(raw: str, now: float) -> LineReport | None:
    """One segment (no carriage return), terminal codes removed; a bar drawn with a cursor
    move up after it is marked nested."""
    found = parse_line(plain(raw), now)
    if found is not None and found.bar is not None and _CURSOR_UP in raw:
        return found._replace(bar=found.bar._replace(nested=True))
    return found


def _with_frames(
    found: LineReport, frames: dict[tuple[str, int | None], list[tuple[float, int]]]
) -> LineReport:
    """``found`` with its bar's older frames, one per tick of the bar's clock, oldest first."""
    if found.bar is None or not (older := frames.get(bar_key(found.bar))):
        return found
    ticks: list[tuple[float, int]] = []
    for elapsed, n in reversed(older):  # oldest first: keep the first frame of each second
        if not ticks or elapsed > ticks[-1][0]:
            ticks.append((elapsed, n))
    return found._replace(frames=tuple(ticks))


def newest_bar(text: str, now: float) -> LineReport | None:
    """The newest complete progress-bar frame in ``text``, a line still being written (no
    newline yet). Frames before its last carriage return are whole; the text after it is
    read too when it parses (a frame cut short lacks its closing bracket and does not). The
    same bar's older frames come with it (``LineReport.frames``)."""
    if not any(hint in text for hint in _BAR_HINTS):
        return None
    segments = text.split("\r")
    newest: LineReport | None = None
    key: tuple[str, int | None] | None = None
    older: list[tuple[float, int]] = []
    for segment in reversed(segments[-MAX_SEGMENTS:]):
        if not segment.strip():
            continue
        if key is not None:
            _older_frame(segment, {key: older})
            continue
        found = _parse_segment(segment, now)
        if found is None or found.bar is None:
            continue
        newest, key = found, bar_key(found.bar)
    if newest is None or key is None:
        return None
    return _with_frames(newest, {key: older})


# -- CRI log lines --------------------------------------------------------------------------------

_CRI = re.compile(
    r"^(?P<time>\S+) (?P<stream>stdout|stderr) (?P<tag>[PF])(?::\S*)? (?P<msg>.*)$", re.S
)


_STREAMS = frozenset({"stdout", "stderr"})
_TAGS = frozenset({"P", "F"})


class CriLine(NamedTuple):
    """One line of a container log file as the kubelet writes it."""

    time: str
    stream: str
    partial: bool  # "P": the runtime split a long line; the rest follows
    message: str


def parse_cri(line: str) -> CriLine | None:
    """``<RFC3339Nano> <stdout|stderr> <P|F> <message>``; None if the line is not CRI."""
    line = line.rstrip("\n")
    parts = line.split(" ", 3)  # the common shape, without a regex
    if len(parts) == 4 and parts[1] in _STREAMS and parts[2] in _TAGS and parts[0][:1].isdigit():
        return CriLine(parts[0], parts[1], parts[2] == "P", parts[3])
    m = _CRI.match(line)
    if not m:
        return None
    return CriLine(m["time"], m["stream"], m["tag"] == "P", m["msg"])
