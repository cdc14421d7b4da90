"""``tqdm``: ``16%|█▌        | 8/50 [00:02<00:10,  3.98it/s]`` (also ``s/it``, a postfix
``, loss=0.5``, and the total-less ``8it [00:02, 3.98it/s]``), tqdm ``std.py``
``format_meter``; named ``lightning`` when the postfix carries Lightning's ``v_num``.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..lines import EMPTY, EPOCH_WORDS, MAX_COLUMNS, Bar, Format, LineReport, native
from .pairs import Pair, find_pairs, number, to_fields
from .progress import read_progress
from .vocabulary import field_of

_BAR = re.compile(
    r"(?P<prefix>[^|\r]*?):?\s*(?P<pct>\d+)%(?:\|[^|]*\||\s)\s*(?P<n>\d+)/(?P<total>\d+)\s*"
    r"\[(?P<elapsed>[\d:]+)<(?P<remaining>[\d:]+|\?)(?:,\s*(?P<rate>[\d.]+|\?)\s*(?P<unit>it/s|s/it|"
    r"(?P<items>[A-Za-z]{1,12})/s|s/(?P<per>[A-Za-z]{1,12})))?"
    r"(?:,\s*(?P<postfix>[^\]]*))?\]"
)
# tqdm's right part alone, the frame's start: "| 0/950 [00:00<?, ?it/s]" (a bar drawn with
# bar_format="{r_bar}", or a copy whose description, percentage and bar were wrapped away).
_R_BAR = re.compile(
    r"(?P<prefix>)\s*\|\s*(?P<n>\d+)/(?P<total>\d+)\s*\[(?P<elapsed>[\d:]+)<(?P<remaining>[\d:]+|\?)"
    r"(?:,\s*(?P<rate>[\d.]+|\?)\s*(?P<unit>it/s|s/it))?(?:,\s*(?P<postfix>[^\]]*))?\]"
)
# A frame's description, percentage, bar and count, where its end may be its own (below).
_FRAME_HEAD = (
    r"(?P<prefix>[^|\r]*?):?\s*\d{1,3}%\|[^|]{0,200}\|\s*(?P<n>\d{1,15})/(?P<total>\d{1,15})"
)
# YOLOv5 7.0's own format, '{l_bar}{bar:10}| {n_fmt}/{total_fmt} {elapsed}' (utils/general.py
# TQDM_BAR_FORMAT): no bracket, the elapsed time ends the frame ("640: 100%|##########|
# 1849/1849 13:15").
_BAR_NO_BRACKET = re.compile(_FRAME_HEAD + r"\s+(?P<elapsed>\d{1,6}:\d{2}(?::\d{2})?)\s*$")
# A bar's own unit other than tqdm's "it" (``tqdm(unit="examples")``): what it counts. These
# count the loop's steps; any other (examples, samples, B, tokens, files) counts items.
_STEP_UNITS = frozenset({"step", "steps", "batch", "batches", "ba", "iter", "iters"})
# tqdm writes "s/<unit>" below one per second; a bar in these units counts the epochs.
_EPOCH_UNITS = frozenset({"epoch", "epochs"})  # not "ep": RL loops count episodes so
_BAR_NO_TOTAL = re.compile(
    r"(?P<prefix>[^|\r]*?):?\s*(?P<n>\d+)it\s*\[(?P<elapsed>[\d:]+)(?:,\s*(?P<rate>[\d.]+)\s*(?P<unit>it/s|s/it))?"
    r"(?:,\s*(?P<postfix>[^\]]*))?\]"
)

# Ultralytics' own bar since 8.3.2xx (ultralytics/utils/tqdm.py, no tqdm): "{desc}:
# {percent:.0f}% {bar} {n}/{total} {rate} {elapsed}{<remaining}", its bar drawn with "━", "─"
# and "╸", its times "4.1s", "2:48" or "1:02:03" ("  640: 100% ━━━━━━━━━━━━ 409/409 2.4it/s
# 2:48"; mid-epoch " 5% ━─────────── 20/409 2.5it/s 8.0s<2:36").
_HEAVY_BAR = re.compile(
    r"(?P<prefix>[^\r]*?):\s(?P<pct>\d{1,3})% [━─╸]{1,60} (?P<n>\d{1,12})/(?P<total>\d{1,12}) "
    r"(?:(?P<rate>[\d.]{1,12})(?P<unit>it/s|s/it) )?(?P<elapsed>[\d:.]{1,12}s?)"
    r"(?:<(?P<remaining>[\d:.]{1,12}s?))?\s*$"
)


def _heavy_clock(text: str | None) -> float | None:
    """A time as Ultralytics' bar prints it: ``4.1s`` under a minute, else ``m:ss`` or
    ``h:mm:ss``."""
    if text and text.endswith("s"):
        try:
            return float(text[:-1])
        except ValueError:
            return None
    return clock(text)


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
    """The postfix's ``key=value`` numbers, as pairs.number reads them (Lightning pads a
    non-finite float to ``nan.0``, ``inf.0``, ``-inf.``: NaN and inf still)."""
    out: dict[str, float] = {}
    for item in (text or "").split(","):
        key, sep, value = item.partition("=")
        if not sep:
            continue
        found = number(value.strip())
        if found is not None:
            out[key.strip()] = found
    return out


def read_bar(msg: str) -> tuple[Bar, dict[str, float]] | None:
    frame = msg.rsplit("\r", 1)[-1] if "\r" in msg else msg
    if "%|" not in frame and "it [" not in frame and "it/s" not in frame and "s/it" not in frame:
        return None  # cheap: most lines are not bars
    m = _BAR.search(frame)
    if m is None and frame.lstrip()[:1] == "|":
        m = _R_BAR.match(frame)
    total = None
    if m is not None:
        total = int(m["total"])
        remaining = clock(m["remaining"])
    elif "━" in frame or "─" in frame:
        m = _HEAVY_BAR.search(frame)
        if m is None:
            return None
        rate = float(m["rate"]) if m["rate"] else None
        if rate is not None and m["unit"] == "s/it":
            rate = 1 / rate if rate else None
        heavy = Bar(int(m["n"]), int(m["total"]), rate, _heavy_clock(m["remaining"]),
                    m["prefix"].strip(), _heavy_clock(m["elapsed"]))  # fmt: skip
        return heavy, {}
    else:
        m = _BAR_NO_TOTAL.search(frame)
        if m is None and (bare := _BAR_NO_BRACKET.search(frame)) is not None:
            # No rate printed: the mean since the start, n over the elapsed time (at least n
            # a second within the first: a data set's scan of 118287 images at "00:00").
            n, elapsed = int(bare["n"]), clock(bare["elapsed"]) or 0.0
            mean = n / max(elapsed, 1.0) if n else None
            prefix = bare["prefix"].strip()
            return Bar(n, int(bare["total"]), mean, None, prefix, elapsed), {}
        if m is None:
            cut = _CUT_FRAME.search(frame)
            if cut is None:
                return None
            # Cut inside its bracket (a copy stopped short, " 82%|...| 80/97 [08:32<", or
            # after its rate, "[03:17<00:00,  4.22it/s"): the count is whole once its bracket
            # opened; nothing after it is.
            return Bar(int(cut["n"]), int(cut["total"]), None, None, cut["prefix"].strip()), {}
        remaining = None
    rate = None
    text, unit = m["rate"], m["unit"]
    if text is not None and text != "?":
        value = float(text)
        rate = value if not unit.startswith("s/") else (1 / value if value else None)
    prefix = m["prefix"].strip()
    if not prefix and frame[: m.start()].endswith("||"):
        prefix = frame[: m.start()].strip()  # AllenNLP's description ends with "||"
    elif prefix.endswith("]") and "[" not in prefix:
        # A description in brackets holding "|" of its own (trlx's "[losses/total_loss: 1.15
        # | losses/policy_loss: 1.15 | ...]: 100%|"): all of it, not its last part.
        before = frame[: m.start()]
        opening = before.rfind("[")
        if opening >= 0 and "]" not in before[opening:]:
            prefix = (before[opening:] + m["prefix"]).strip()
    bar = Bar(int(m["n"]), total, rate, remaining, prefix, clock(m["elapsed"]))
    unit_name = (m.groupdict().get("items") or m.groupdict().get("per") or "").lower()
    if unit_name in _EPOCH_UNITS:
        bar = bar._replace(epochs=True)  # "10/10 [05:49<00:00, 31.42s/epoch]": epochs done
    elif unit_name and unit_name not in _STEP_UNITS:
        bar = bar._replace(items=True)  # datasets' "Map: ... 7914.76 examples/s": no steps
    postfix = m["postfix"]
    return bar, (_postfix(postfix) if postfix else {})


# Ultralytics' training table: each epoch's row is the description of its bar, starting with
# the epoch and the GPU memory ("  70/1000   6.73G   1.081 ... 640: 100%|...| 16/16"). Its
# basing is the table header's to say (parse_row_header): Ultralytics 8 and later print the
# 1-based epoch of the epochs (ultralytics/engine/trainer.py: f"{epoch + 1}/{self.epochs}"),
# YOLOv5 the 0-based epoch of the last one (yolov5 train.py: f"{epoch}/{epochs - 1}").
_ULTRALYTICS_ROW = re.compile(r"^\s*(\d{1,9})/(\d{1,9})\s+\d+(?:\.\d+)?G\s")
# The header above each row: "Epoch GPU_mem box_loss cls_loss dfl_loss Instances Size"
# (Ultralytics 8+), "Epoch GPU_mem box_loss obj_loss cls_loss Instances Size" (YOLOv5 6-7),
# "Epoch gpu_mem box obj cls total targets img_size" (YOLOv5 before 6). Only YOLOv5 has an
# objectness column.
# A frame whose text stops inside its bracket (its clock, its rate): its count and total
# are whole.
_CUT_FRAME = re.compile(
    _FRAME_HEAD
    + r"\s*\[[\d:]{0,12}(?:<[\d:?]{0,12}(?:,\s{0,4}[\d.?]{0,12}(?:\s?[A-Za-z/]{0,8})?)?)?$"
)


def cut_frame(text: str) -> bool:
    """Whether ``text`` ends in a frame cut inside its bracket (see :data:`_CUT_FRAME`)."""
    return "%|" in text and not text.rstrip().endswith("]") and _CUT_FRAME.search(text) is not None


# A step in a bar's postfix as tqdm formats a float, to three significant digits
# ("global_step=3.1e+4": BioNeMo's bar past step 1000): rounded, no exact step.
_ROUNDED_STEP = re.compile(r"[\s,](?:global_step|step|num_updates)=\d(?:\.\d{1,2})?e\+?\d")
# torchtune's recipes: "{epoch}|{global_step}|Loss: {loss}" (1-based epoch), set after each
# step on a bar of the epoch's steps; before the global step (early 2024) the middle was the
# batch within the epoch, "{epoch}|{idx + 1}|Loss: ...", told apart by the bar's count.
_TORCHTUNE = re.compile(r"^\s*(?P<epoch>\d{1,6})\|(?P<n>\d{1,12})\|Loss: (?P<loss>[^:\s]{1,40}):\s")
_ROW_HEADER = re.compile(r"^\s*Epoch\s+(?:GPU_mem|gpu_mem)\s+(?P<columns>.{1,300})$")
# YOLOv6's header has no memory column: "Epoch  iou_loss  dfl_loss  cls_loss", with "lr"
# before the losses in later versions (yolov6/core/engine.py: its loss_info); its rows are
# the bar's description, '{epoch}/{max_epoch - 1}' (0-based of the last) and the mean losses.
_YOLOV6_HEADER = re.compile(
    r"^\s*Epoch\s+(?P<columns>(?:lr\s+)?iou_loss(?:\s+\w{1,16}_loss){1,4})\s*$"
)
_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_YOLOV6_ROW = re.compile(rf"^\s*(\d{{1,9}})/(\d{{1,9}})(?P<values>(?:\s+{_NUMBER}){{3,6}})\s*$")
_OBJECTNESS = re.compile(r"\bobj(?:_loss)?\b")


def parse_bar(msg: str, now: float) -> LineReport | None:
    """A tqdm bar; Lightning's when its postfix carries Lightning's logger version
    (``v_num``), which only Lightning prints: ``Epoch 3:`` alone is any script's description.
    Which epoch the bar is (and whether it names one at all) is the accumulator's to read,
    but for Ultralytics' table, whose row says it (``epoch_of``, 1-based)."""
    found = read_bar(msg)
    if found is None:
        return None
    bar, postfix = found
    row = _ULTRALYTICS_ROW.match(bar.prefix)
    if row is not None:
        epoch, epochs = int(row.group(1)), int(row.group(2))
        if 0 <= epoch <= epochs:  # YOLOv5's first row is "0/N"
            # One bar however the row's columns align (their widths follow the values).
            row_bar = bar._replace(prefix="ultralytics")
            values = tuple(bar.prefix[row.end() :].split()[:MAX_COLUMNS])
            return LineReport(
                "ultralytics", EMPTY, row_bar, epoch_of=(epoch, epochs), columns=values
            )
    v6 = _YOLOV6_ROW.match(bar.prefix)
    if v6 is not None and 0 <= int(v6.group(1)) <= int(v6.group(2)):
        # A row of numbers only under YOLOv6's own header (yolov6_row, the accumulator's).
        values = tuple(v6["values"].split())
        return LineReport(
            "yolov6", EMPTY, bar, epoch_of=(int(v6.group(1)), int(v6.group(2))), columns=values
        )
    # An empty version ("v_num=,": NeMo's loggers) is still Lightning's.
    tune = _TORCHTUNE.match(msg) if "|Loss: " in msg else None
    if tune is not None:
        return _torchtune(bar, tune, now)
    lightning = "v_num" in postfix or "v_num=" in msg
    postfix.pop("v_num", None)  # Lightning's logger version, not a metric
    if (
        lightning
        and "loss" in postfix
        and any(key != "loss" and (field_of(key) or ("",))[0] == "loss" for key in postfix)
    ):
        # Before 2.0, Lightning put its own running mean of the last 20 losses, rounded, in
        # every bar ("loss=3.1"); a loss the model logged itself (NeMo's
        # "reduced_train_loss=3.090") is the step's.
        postfix.pop("loss")
    doc: dict[str, object] = {}
    described = _described(bar.prefix, now)
    if described is not None:
        # The description is a progress line of its own (Yet-Another-EfficientDet's "Step:
        # 37529. Epoch: 1072/2000. Iteration: 10/35. ... Total loss: 0.18125"): its values,
        # its step the run's (the bar counts the epoch's batches); one bar however its
        # description's numbers change.
        doc.update(described[0])
        bar = bar._replace(prefix=described[1])
    # Lightning's per-step loss (logged with on_step and on_epoch) before the vocabulary.
    for key in ("train_loss_step", "loss_step"):
        if key in postfix and "loss" not in postfix and "train_loss" not in postfix:
            doc["loss"] = postfix.pop(key)
    fields = to_fields(Pair(k, v) for k, v in postfix.items())
    step = fields.values.pop("step", None)
    if _EVALUATION_ALONE.match(bar.prefix):
        fields.values.pop("loss", None)  # an evaluation's running loss: no training's, no result
    doc.update(fields.values)
    rounded = step is not None and _ROUNDED_STEP.search(msg) is not None
    if step is not None and step >= 0 and step == int(step) and not rounded:
        doc["step"] = int(step)  # a step printed in the postfix (fairseq's num_updates)
    if fields.metrics:
        doc["metrics"] = fields.metrics
    name = "lightning" if lightning else "tqdm"
    if not doc:  # a bare frame (most are): nothing to validate
        return LineReport(name, EMPTY, bar, moved_on=rounded)
    found_report = native(doc, now, name, bar)
    return found_report._replace(moved_on=True) if found_report and rounded else found_report


# A bar described as an evaluation and nothing else ("eval", "Validation DataLoader 0",
# "Evaluating"): the loss in its postfix is the evaluation's so far, not the training's.
_EVALUATION_ALONE = re.compile(r"(?i)^\s*(?:eval\w*|valid\w*|val|test\w*)\b[^=:]*$")
_DESCRIBED_FIELDS = ("step", "max_steps", "loss", "eval_loss", "learning_rate", "grad_norm")
_DESCRIBED_VALUES = _DESCRIBED_FIELDS[2:]
_DIGITS = re.compile(r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _values(text: str, keys: tuple[str, ...]) -> dict[str, object]:
    """The fields among ``keys`` that ``text``'s pairs name, with its custom metrics where
    it names any of them; empty where it names none (a description of values alone)."""
    fields = to_fields(find_pairs(text))
    said: dict[str, object] = {k: v for k, v in fields.values.items() if k in keys}
    if said and fields.metrics:
        said["metrics"] = fields.metrics
    return said


def _described(prefix: str, now: float) -> tuple[dict[str, object], str] | None:
    """What a bar's description says as a progress line (a step or a loss, and values), and
    the description with its numbers masked (the bar's name across frames), or None."""
    if len(prefix) < 8 or not any(h in prefix for h in ("tep", "TEP", "oss", "OSS")):
        return None
    if prefix.endswith(" ||"):
        # AllenNLP's metrics ("accuracy: 0.87, batch_loss: 0.32, loss: 0.40 ||",
        # allennlp/training/util.py): no counter, its values alone; whose phase they are is
        # the phase line's before the bar (exporter.logs.formats.stages).
        said = _values(prefix[:-3], _DESCRIBED_FIELDS)
        return (said, _DIGITS.sub("#", prefix)[:120]) if said else None
    found = read_progress(prefix, now)
    if found is None:
        # No counter, but values ("miniE 1 s 833 prog 20.00% : ppl 5.40 loss 1.687660 lr
        # 3.33e-04", RWKV-v4's trainer): the loss and its kin, never a count.
        said = _values(prefix.strip("[]"), _DESCRIBED_VALUES)
        return (said, _DIGITS.sub("#", prefix)[:120]) if "loss" in said else None
    r = found.report
    doc: dict[str, object] = {
        k: getattr(r, k) for k in _DESCRIBED_FIELDS if getattr(r, k) is not None
    }
    if "step" not in doc and "loss" not in doc:
        return None
    if r.metrics:
        doc["metrics"] = dict(r.metrics)
    # Its numbers masked but the epoch it names ("Train Epoch: 2 Loss: 4.504 ..."): the
    # epoch tells the bar's passes apart where each is drawn whole.
    epoch = EPOCH_WORDS.search(prefix)
    if epoch is None:
        return doc, _DIGITS.sub("#", prefix)[:120]
    head, tail = prefix[: epoch.start()], prefix[epoch.end() :]
    return doc, (_DIGITS.sub("#", head) + epoch.group(0) + _DIGITS.sub("#", tail))[:120]


def _torchtune(bar: Bar, m: re.Match[str], now: float) -> LineReport | None:
    """torchtune's bar: its description's step (the global one, or the epoch's batch where
    the epoch is past the first and the count fits in it) and loss; the bar counts one epoch,
    so it is labelled as that epoch's (its total is no run's)."""
    epoch, n = int(m["epoch"]), int(m["n"])
    step = n
    if epoch > 1 and bar.total and n <= bar.total:
        step = (epoch - 1) * bar.total + n  # the older recipes: the batch within the epoch
    doc: dict[str, object] = {"step": step}
    loss = number(m["loss"])
    if loss is not None:
        doc["loss"] = loss
    return native(doc, now, "tqdm", bar._replace(prefix=f"Epoch {epoch}"))


# A notebook's text of a bar has no bar ("Epoch 0:  90% 1531/1702 [12:41<01:25, 2.01it/s]"):
# its rate, then the bar's end or its postfix, is its hint.
FORMAT = Format("bar", ("%|", "it [", "it/s]", "it/s,", "s/it]", "s/it,", "% ━", "% ─"), parse_bar)


def parse_row_header(msg: str, now: float) -> LineReport | None:
    """The header of Ultralytics' and YOLOv5's training table, which says how the rows
    below it count their epochs: ``yolov5-header`` (0-based of the last) or
    ``yolo-header`` (1-based of all), and names the rows' columns."""
    m = _ROW_HEADER.match(msg)
    if m is None:
        v6 = _YOLOV6_HEADER.match(msg)
        columns = tuple(v6["columns"].split()) if v6 is not None else ()
        return None if v6 is None else LineReport("yolov6-header", EMPTY, columns=columns)
    yolov5 = _OBJECTNESS.search(m["columns"]) is not None
    columns = tuple(m["columns"].split()[:MAX_COLUMNS])
    return LineReport("yolov5-header" if yolov5 else "yolo-header", EMPTY, columns=columns)


def yolov6_row(line: LineReport, columns: tuple[str, ...]) -> LineReport:
    """A ``yolov6`` row as the accumulator takes it: the table's row (0-based of the last,
    read as Ultralytics' rows are, one bar across epochs) under YOLOv6's header, whose
    columns name ``iou_loss``; under no such header, any bar with numbers in its
    description, its epoch unknown."""
    if "iou_loss" in columns:
        return line._replace(
            parser="ultralytics", bar=line.bar and line.bar._replace(prefix="ultralytics")
        )
    return line._replace(parser="tqdm", epoch_of=None, columns=())


ROW_HEADER = Format("yolo-header", ("GPU_mem", "gpu_mem", "iou_loss"), parse_row_header)
