"""What one log line said: a :class:`LineReport`, with a :class:`Bar` when the line was a
progress-bar frame. Shared by every format (:mod:`exporter.logs.formats`) and by what
combines lines (:mod:`exporter.logs.accumulate`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from ..core.model import ProgressReport, ReportError
from ..core.wire import parse_native

MAX_MESSAGE = 16 * 1024
MAX_COLUMNS = 16  # a training table's columns kept per line (LineReport.columns)
EMPTY = ProgressReport()  # longer messages are not progress lines; they are skipped unparsed


# Colours and text attributes (SGR), not cursor moves: tqdm's "\x1b[A" marks a nested bar.
_COLOUR = re.compile(r"\x1b\[[0-9;]{0,32}m")


def without_colours(text: str) -> str:
    """``text`` without its colours: what they colour is what a reader reads (a whole line,
    a key, a number, a logger's head's fields); cursor moves stay."""
    return _COLOUR.sub("", text) if "\x1b" in text else text


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
    items: bool = False  # its unit counts items, not steps ("examples/s": datasets' Map)
    epochs: bool = False  # its unit is the epoch ("31.42s/epoch"): its count is epochs done
    # Its count is no step, within passes that are the epochs: samples (TensorFlow 2.0's
    # "80us/sample"), or steps or samples and the line cannot tell (Keras before 2.1). It
    # gives the epoch's fraction, never the step.
    not_steps: bool = False


# The parts of a block a log prints over several lines (exporter.logs.blocks): a header that
# opens the train step's, an evaluation's or a test set's block, and the entries under it
# (the last one closes it). An entry names neither its step nor whose it is.
TRAIN_BLOCK = "block-train"
EVAL_BLOCK = "block-eval"
TEST_BLOCK = "block-test"
ENTRY = "block-entry"
LAST_ENTRY = "block-last-entry"
# An evaluation's or a prediction's block whose entries are counter lines of their own
# (PaddlePaddle hapi's "Eval begin..." and then "step 10/88 - loss: ..."): their counts are
# the evaluation's batches, never the run's steps; it stays open until another line is read.
EVAL_STEPS = "block-eval-steps"
PREDICT_STEPS = "block-predict-steps"


class LineReport(NamedTuple):
    """What one line said: the parser that matched, report fields, and a bar if it was one."""

    parser: str
    report: ProgressReport
    bar: Bar | None = None
    epoch_of: tuple[int, int] | None = None  # Keras "Epoch 3/10": (3, 10)
    # The same bar's older frames in this message, (elapsed seconds, n), oldest first: each
    # frame is stamped by the bar's own clock, so a chunk of frames is a run of rate samples.
    frames: tuple[tuple[float, int], ...] = ()
    # The description of the same bar's oldest frame in this message: the epoch a whole
    # line of a bar reused across epochs (Lightning's) began in.
    first_prefix: str | None = None
    # A training table's header: its column names after the epoch and the GPU memory
    # (YOLOv5's "box obj cls total targets img_size"); a row of it: its values, as printed.
    columns: tuple[str, ...] = ()
    # What the line is part of, where it says nothing alone: "continued", values with no
    # counter (exporter.logs.formats.progress.read_continued), the rest of the counted line
    # before it; "row", a table's row of bare numbers (its cells in ``columns``), read under
    # the table's header (exporter.logs.formats.table).
    part: str = ""
    # Keras 1 and 2's fit() on arrays: "Train on 3523 samples": its bars of that length
    # count samples, not steps (keras/engine/training_arrays.py).
    samples: int | None = None
    # A count within an epoch whose size this line does not print: (epochs done, the count);
    # the accumulator makes it the run's step where it learned the epoch's size.
    within: tuple[int, int] | None = None
    # Where each of ``columns`` starts in its line, for a table whose columns are aligned
    # (a row that leaves a cell blank is read by its cells' places: Chainer's PrintReport).
    offsets: tuple[int, ...] = ()
    # The size a loop's count printed beside it after the epoch's number ("Epoch = 1 | iter =
    # 25/2714"): the epoch's or the run's, unknown until the count starts over in a new epoch
    # (then the epoch's: a run's total does not start over).
    printed_size: int | None = None
    # The loop went on to a step this line does not say exactly (Count.moved_on): the step
    # read so far is stale, and so unknown until a line says it again.
    moved_on: bool = False
    # An epoch's summary, the epoch as printed ("----- Epoch[100/100], Train Loss: ..."): it
    # ended; where the step read so far is inside it, the run is at its end.
    epoch_done: int | None = None
    # The run goes on from a saved state (exporter.logs.formats.resume).
    resumed: bool = False
    # Its eval loss is a test set's (its key or its phase says test): the run's eval loss only
    # where the log shows no validation's (exporter.logs.evaluations).
    test_set: bool = False


def native(
    doc: dict[str, object], now: float, parser: str, bar: Bar | None = None
) -> LineReport | None:
    try:
        parsed = parse_native(doc, now)
    except ReportError:
        return None
    return LineReport(parser, parsed.report, bar)


class Format(NamedTuple):
    """One log format (:mod:`exporter.logs.formats`): its name, the texts one of which every
    line it reads contains (a line with none is not offered to it), and its parser (one
    message in, a :class:`LineReport` or None out)."""

    name: str
    hints: tuple[str, ...]
    parse: Callable[[str, float], LineReport | None]


class Extra(NamedTuple):
    """Formats users configured (:mod:`exporter.logs.formats.custom`) beside the built-in
    ones: ``first`` tried before them (a pod's ``log-format`` annotation names it), ``after``
    tried on what they left."""

    first: tuple[Format, ...] = ()
    after: tuple[Format, ...] = ()


NO_EXTRA = Extra()


# "epoch 3", "Epoch 3/10", "Epoch 3:", "ep 3", "[epoch 3]", OpenRLHF's "Episode [3/10]"
# (1-based, one pass over the prompts): a bar's pass, and how many.
EPOCH_WORDS = re.compile(r"(?i)\b(?:epoch|episode|ep)\s*[:#=\[]?\s*(\d+)(?:\s*/\s*(\d+))?")
