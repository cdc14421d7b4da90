"""``table``: a training table of bare-number rows under a header of column names, as
scikit-learn's gradient boosting prints it with ``verbose=1`` (``  Iter       Train Loss
Estimated Time``, then ``   100           0.8599            0.00s``), skorch's ``PrintLog``
(``  epoch    train_loss    valid_loss     dur``), spaCy's ``train`` loop (``E    #
LOSS TOK2VEC  LOSS NER  ENTS_F ...``) and fastai's ``Learner`` as text (``epoch
train_loss  valid_loss  accuracy  time``); and the same drawn in ASCII frames, as Turi
Create's toolkits print their progress (``| Iteration | Training Loss | Elapsed Time
(seconds) |`` between ``+----+`` borders), or a CSV file's lines as a script appends them
(``step,loss,lr,tokens_per_sec``): the frame's bars or the commas are the columns' gaps.

A row alone names nothing, so the header is a line report of its own (its column names)
and each row one of its cells (``LineReport.part`` "row"); the accumulator pairs a row with
the last header, and :func:`read_row` says what the pair means. Pure: no state here.
"""

from __future__ import annotations

import re

from ...core.model import ProgressReport, ReportError
from ...core.wire import parse_native
from ..lines import EMPTY, MAX_COLUMNS, Format, LineReport
from .pairs import number, sole_loss
from .vocabulary import field_of, metric_name

# Columns are apart by a tab or two spaces; a name may hold one ("Train Loss", "LOSS NER").
_SPLIT = re.compile(r"\t+| {2,}")
_NAME = re.compile(r"[A-Za-z#][\w#()%/.\-]*(?: [A-Za-z(][\w()%/.\-]*){0,3}")
# The first column counts: the step (scikit-learn's boosting round "Iter", spaCy's "#")
# or the epoch. An epoch's index alone is no step, and 0- or 1-based is the tool's: the
# rows give values, no step.
_COUNTERS = {"iter": "step", "iteration": "step", "step": "step", "epoch": "epoch", "e": "epoch"}
# The second column, the step beside its epoch: spaCy's "#", Chainer's PrintReport's
# "iteration" (the updater's, its optimizer steps).
_STEP_COLUMNS = frozenset({"#", "step", "steps", "iter", "iteration"})
# A cell as the tables print it: a number (a unit of time or a percent sign after it), nan,
# inf, or a clock ("00:03", "1:02:03").
_CELL = (
    r"(?:[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?(?:ms|s|m|h|%)?"
    r"|[-+]?(?:nan|inf)|\d{1,3}:\d{2}(?::\d{2})?)"
)
ROW = re.compile(rf"^[ \t]*{_CELL}(?:[ \t]+{_CELL}){{1,{MAX_COLUMNS - 1}}}[ \t]*$")
# A superset of ROW for a log's raw bytes (a CRI line's prefix before the message): a line
# whose last word is a number (then a colour's end, or the place Rich's logging handler
# prints at the right: exporter.logs.heads). The quick scan looks at such lines only after a header.
ROW_BYTES = re.compile(
    rb"[ \t,]\d[\d.:]*(?:[eE][-+]?\d+)?(?:ms|s|m|h|%)?[ \t]*(?:\|[ \t]*)?(?:\x1b\[[0-9;]{0,8}m)?"
    rb"(?:\s{2,}[\w.-]{1,80}\.py:\d{1,6})?\r?\n?$"
)
_DATE_TIME = re.compile(r"\b\d{4}-\d\d-\d\d[ T](?P<clock>\d\d:\d\d:\d\d)(?:[.,]\d{1,9})?\b")
_TIMES = frozenset(
    {"time", "dur", "duration", "estimated_time", "remaining_time", "elapsed", "elapsed_time"}
    | {"timestamp", "eta_seconds"}
)


def _unframed(msg: str) -> str:
    """A row of an ASCII-framed table (``| 4 | 2.388 | 85.326 |``) or of a CSV file
    (``11509,2.4995,1.99e-04``: commas and no spaces) as the same row with its bars or commas
    as gaps; any other line as it is. A CSV row with an empty cell then has fewer cells than
    its header, and is no row."""
    text = msg.strip()
    if "," in text and "\t" not in text and (" " not in text or _DATE_TIME.search(text)):
        # A date and time in a cell (Lightning's CSV logger's created_at) is its clock: a
        # time, never a value; no other space.
        cells = [_DATE_TIME.sub(r"\g<clock>", cell) for cell in text.split(",")]
        if not any(" " in cell for cell in cells):
            return "  ".join(cells)
    if len(text) < 5 or text[0] != "|" or text[-1] != "|" or text.count("|") < 3:
        return msg
    return "  ".join(cell.strip() for cell in text[1:-1].split("|"))


def parse_header(msg: str, now: float) -> LineReport | None:
    """A table's header: column names only, the first a counter, one a loss; or None."""
    text = _unframed(msg).strip()
    if len(text) > 400:
        return None
    names = _SPLIT.split(text)
    if not 2 <= len(names) <= MAX_COLUMNS:
        return None
    if not counted(tuple(names)) and "\t" not in text and text == msg.strip():
        return None  # a header with no counter only as a file's table: tabs, commas or bars
    if not all(_NAME.fullmatch(n) for n in names):
        return None
    if not any("loss" in n.lower() for n in names):
        return None
    offsets = () if text != msg.strip() else _offsets(msg, names)
    return LineReport("table", EMPTY, columns=tuple(names), offsets=offsets)


def _offsets(msg: str, names: list[str]) -> tuple[int, ...]:
    """Where each of ``names`` starts in ``msg``, in order."""
    out: list[int] = []
    at = 0
    for name in names:
        at = msg.index(name, at)
        out.append(at)
        at += len(name)
    return tuple(out)


def row_cells(msg: str) -> LineReport | None:
    """A row of bare numbers (its cells), which only a header before it gives a meaning."""
    if msg.rstrip()[-1:] == "|" or (
        "," in msg and (" " not in msg.strip() or _DATE_TIME.search(msg))
    ):
        msg = _unframed(msg)
    if len(msg) > 400 or ROW.match(msg) is None:
        return None
    cells = [(m.start(), m.group()) for m in _CELLS.finditer(msg)]
    return LineReport(
        "table",
        EMPTY,
        columns=tuple(c for _, c in cells),
        part="row",
        offsets=tuple(o for o, _ in cells),
    )


_CELLS = re.compile(r"\S+")


def placed(
    columns: tuple[str, ...], starts: tuple[int, ...], cells: tuple[str, ...], at: tuple[int, ...]
) -> tuple[str, ...] | None:
    """A row with blank cells as a full row (its blanks empty), each cell under the column
    that starts where it does (one character off at most: a copy may lose one); None where a
    cell starts under none, or two under one. Chainer's PrintReport left-aligns each value at
    its column's start and pads a missing one with spaces."""
    if not starts or len(starts) != len(columns) or len(at) != len(cells):
        return None
    full = [""] * len(columns)
    for cell, where in zip(cells, at, strict=True):
        index = min(range(len(starts)), key=lambda i: abs(starts[i] - where))
        if abs(starts[index] - where) > 1 or full[index]:
            return None
        full[index] = cell
    return tuple(full)


def _counts(columns: tuple[str, ...]) -> str | None:
    """What a header's first column counts ("step" or "epoch"), or None where it names a
    value."""
    return _COUNTERS.get(columns[0].lower()) if columns else None


def counted(columns: tuple[str, ...]) -> bool:
    """Whether a header's first column counts (steps or epochs): its rows are in order. A
    script's file of one row an epoch may name values only (FADNet's ``train_loss\ttrain_EPE
    \tEPE``): its rows give values, no step."""
    return _counts(columns) is not None


def counter(cells: tuple[str, ...]) -> int | None:
    """The row's count in its first column (a whole number), or None."""
    value = number(cells[0])
    return int(value) if value is not None and value >= 0 and value == int(value) else None


def read_row(columns: tuple[str, ...], cells: tuple[str, ...]) -> ProgressReport | None:
    """What a row says under its header: the step where a column counts steps, the loss
    where one column is the training loss (several parts, as spaCy's components', are no
    loss), the eval loss, the other numbers as custom metrics. None where the row does not
    fit the header."""
    kind = _counts(columns)
    if len(cells) != len(columns) or not cells[0]:
        return None
    if kind is not None and counter(cells) is None:
        return None
    doc: dict[str, object] = {}
    metrics: dict[str, float] = {}
    for index, (name, cell) in enumerate(zip(columns, cells, strict=True)):
        if not cell or ":" in cell or cell[-1:] in ("s", "m", "h"):
            continue  # a time: how long, never a metric worth a series
        value = number(cell)
        if value is None:
            continue
        key = name.lower()
        if (index == 0 and kind == "step") or (index == 1 and key in _STEP_COLUMNS):
            doc["step"] = int(value) if value == int(value) else None
            continue
        if index == 0 and kind is not None:
            continue  # an epoch's index
        field = field_of(name)
        if field is not None and field[0] == "step" and kind is None:
            # A column of the run's step where no first column counts (a CSV logger's
            # "global_step" among the values).
            doc["step"] = int(value) if value == int(value) else None
            continue
        if field is not None and field[0] in ("loss", "eval_loss"):
            doc.setdefault(field[0], value)
        elif (metric := metric_name(name)) not in _TIMES:
            metrics[metric] = value
    if "loss" not in doc and (loss := sole_loss(metrics)) is not None:
        doc["loss"] = loss
    if doc.get("step") is None:
        doc.pop("step", None)
    if metrics:
        doc["metrics"] = metrics
    try:
        return parse_native(doc, 0.0).report
    except ReportError:
        return None


FORMAT = Format("table", ("oss", "OSS"), parse_header)
