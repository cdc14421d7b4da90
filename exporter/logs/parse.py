"""Progress from log messages: each message split into its segments (a bar redrawn with
``\r``), each segment offered to the formats (:mod:`exporter.logs.formats`) that its hints
name, and a bar's older frames read for their clock. Pure: one message in, reports out.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import AnyStr

from .formats import FORMATS, HINTS
from .formats.jsonl import parse_jsonl
from .formats.pairs import plain_scalars
from .formats.progress import CONTINUED
from .formats.table import row_cells
from .formats.tqdm import cut_frame, parse_bar, read_bar
from .heads import split_head
from .lines import MAX_MESSAGE, NO_EXTRA, Bar, Extra, LineReport, without_colours
from .records import read_record

# The hints a line is scanned for: every format's, less those that hold a shorter one ("| loss"
# holds "oss"): a line with the longer has the shorter, and each alternative costs the scan
# of every line (52 hints scanned 30 % slower than these 41 on the CRI-O benchmark's lines).
SCANNED_HINTS = tuple(h for h in HINTS if not any(o != h and o in h for o in HINTS))
# The scan tests the whole pattern wherever a line has one of its first characters: a space
# or a frequent letter there (" rate, ", "heckpoint") sends it into most positions of every
# line. Each hint is scanned for as its part from a rarer character on ("kpoint"), which any
# line with the hint has: the scan finds a superset of the hinted lines, and the formats'
# own hints still decide which format is offered a line.
_FREQUENT = frozenset(" etaoinsrhldcu")
_MIN_PART = 3


def scan_part(hint: str) -> str:
    """The part of ``hint`` the quick scan looks for: from its first character after the
    first that is no space or frequent letter, where at least :data:`_MIN_PART` characters
    remain; else the hint without its leading spaces."""
    hint = hint.lstrip(" ") or hint
    for i, c in enumerate(hint[1:], 1):
        if c not in _FREQUENT and len(hint) - i >= _MIN_PART:
            return hint[i:] if hint[0] in _FREQUENT else hint
    return hint


# A colour's escape and a no-break space too: a coloured key ("\x1b[33mloss\x1b[0m: 0.5") or
# "loss:\u00a00.5" hides its hint until parse_message takes them off.
_PARTS = tuple(dict.fromkeys([*(scan_part(h) for h in SCANNED_HINTS), "\x1b[", "\u00a0"]))
SCAN_PARTS = tuple(p for p in _PARTS if not any(o != p and o in p for o in _PARTS))


def _trie(words: Sequence[AnyStr]) -> AnyStr:
    """One regular expression matching any of ``words``, as a trie: alternatives that share
    a first character share their test of it (``T(?:EP|ER|est:|rain:)``). Python's engine
    tries each alternative at each position, so on a log's lines this scans a third faster
    than the flat ``tep|TEP|ter|...`` (0.67 against 0.96 CPU-s over the 40 MB CRI-O
    benchmark's lines)."""
    empty = words[0][:0]
    if empty in words:
        return empty  # a shorter word ends here: enough
    groups: dict[AnyStr, list[AnyStr]] = {}
    for w in words:
        groups.setdefault(w[:1], []).append(w[1:])
    alternatives = [re.escape(c) + _trie(rest) for c, rest in sorted(groups.items())]
    if len(alternatives) == 1:
        return alternatives[0]
    if isinstance(empty, bytes):
        return b"(?:" + b"|".join(alternatives) + b")"
    return "(?:" + "|".join(alternatives) + ")"


ANY_HINT = re.compile(_trie(list(SCAN_PARTS)))

_DIGIT_BYTES = b"0123456789"
# On raw bytes (a line without any need not even be decoded; UTF-8's: "━" is three of
# them), each part with its digits taken out: a line that holds a part, with its digits taken
# out, holds the part so (the characters between stay next to each other).
_UNDIGITED_BYTES = re.compile(
    _trie(list(dict.fromkeys(h.encode().translate(None, _DIGIT_BYTES) for h in SCAN_PARTS)))
)
TEMPLATES_KEPT = 4096
_TEMPLATE_BYTES = 512


class QuickScan:
    """Whether a raw line may hold a hint, remembered per template: most of a log is a few
    loggers' lines that differ only in their numbers (times, counts, ids), so a line with
    its digits taken out has mostly been scanned before. The scan runs on that digitless
    template, for the parts with their digits taken out: it finds every line that holds a
    part (and a few more, which the formats then pass over), at a
    dictionary's lookup for a template seen before instead of the pattern's pass over every
    character (2.2 us on a 130-byte line). At most :data:`TEMPLATES_KEPT` templates of at most
    512 bytes are kept; then they are forgotten and learned again."""

    def __init__(self) -> None:
        self._seen: dict[bytes, bool] = {}

    def hinted(self, raw: bytes, start: int = 0) -> bool:
        """True if ``raw`` from ``start`` on may hold one of :data:`SCAN_PARTS`."""
        template = raw[start:].translate(None, _DIGIT_BYTES)
        known = self._seen.get(template)
        if known is not None:
            return known
        found = _UNDIGITED_BYTES.search(template) is not None
        if len(template) <= _TEMPLATE_BYTES:
            if len(self._seen) >= TEMPLATES_KEPT:
                self._seen.clear()
            self._seen[template] = found
        return found


def parse_line(msg: str, now: float, extra: Extra = NO_EXTRA) -> LineReport | None:
    """The first format that recognizes ``msg`` (one segment, no carriage return), or None
    for an unrelated line. ``extra``: formats users configured, before and after ours. Last,
    the lines only another line gives a meaning (``LineReport.part``): values with no
    counter, and a table's row of bare numbers; the accumulator keeps them only after that
    other line."""
    if not msg or len(msg) > MAX_MESSAGE:
        return None
    for f in extra.first:
        found = f.parse(msg, now)
        if found is not None:
            return found
    hinted = ANY_HINT.search(msg) is not None
    found = _builtin(msg, now) if hinted else None
    if found is None:
        for f in extra.after:
            found = f.parse(msg, now)
            if found is not None:
                return found
        if hinted and any(h in msg for h in CONTINUED.hints):
            return CONTINUED.parse(msg, now)
        return row_cells(msg)
    return found


def _builtin(msg: str, now: float) -> LineReport | None:
    """The first built-in format that recognizes ``msg``."""
    if "%|" in msg and "{" not in msg:  # a tqdm frame, the most frequent progress line
        found = parse_bar(msg, now)
        if found is not None:
            return found
    for _, hints, parser in FORMATS:
        # A loop, not any() over a generator: a line reaches this for every format ahead of
        # its own, and the generator cost a Trainer dict 3 µs of its 27 (CRI-O benchmark).
        for h in hints:
            if h in msg:
                found = parser(msg, now)
                if found is not None:
                    return found
                break
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


_RECORD_STARTS = frozenset("{tla")  # a JSON record's brace, logfmt's time=, ts=, level=, at=
_GENERAL = frozenset({"progress", "lone"})  # the formats that read any tool's lines (.formats)

# What a launcher puts before each line of its workers' output, never a tool's own text:
# torchrun's --tee/--redirects ("[rank0]:", "[default0]:"; a role and its ranks under TorchX,
# "[trainer0|0]:"), mpirun --tag-output ("[1,0]<stdout>:", the MPI Operator's and Horovod's
# launchers), Ray's worker prefix ("(RayTrainWorker pid=1234) ", "(pid=1234, ip=10.0.0.1) "),
# kubectl logs --prefix ("[pod/name/container] ") and --timestamps
# ("2024-05-01T10:00:00.123456789Z ", as docker logs -t writes it too), docker compose.
_LAUNCHER = re.compile(
    r"^(?:\[(?:rank|default|trainer|worker)\d{1,6}(?:\|\d{1,6})?\]:"
    # Lightning's rank_prefixed_message ("[rank: 0] "), DeepSpeed's log_dist ("[Rank 0] ")
    r"|\[[Rr]ank:? \d{1,6}\] "
    # Open MPI's --tag-output, and with its rank and host named as SageMaker's MPI launcher
    # runs it ("[1,mpirank:0,algo-1]<stdout>:")
    r"|\[\d{1,6},(?:mpirank:)?\d{1,6}(?:,[\w.-]{1,63})?\]<std(?:out|err)>:"
    r"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:\d\d) "
    # Ray colours its prefix when the driver's stdout is a terminal ("\x1b[36m(TaskRunner
    # pid=14640)\x1b[0m "), and a log captured from it keeps the colour codes.
    r"|(?:\x1b\[[0-9;]{0,8}m)?\((?:[A-Za-z_][\w.:-]{0,64} )?pid=\d{1,10}(?:, ip=[\d.:a-f]{3,45})?\)"
    r"(?:\x1b\[[0-9;]{0,8}m)? ?"
    r"|\[pod/[^\]\s/]{1,253}/[^\]\s/]{1,63}\] "
    # docker compose's service and its index, padded to the longest ("trainer-1  | ", v1's
    # "project_trainer_1  | "), coloured on a terminal
    r"|(?:\x1b\[[0-9;]{0,8}m)?[A-Za-z0-9][\w.-]{0,62}[-_]\d{1,4} {1,64}\|(?:\x1b\[[0-9;]{0,8}m)? ?)"
)
# A script's own date and time with no space before its words ("2019-11-09 15:34:13iters:6000,
# loss:0.2544", DeepLab-V1-PyTorch's log file): a space after it, as every reader expects.
_GLUED_STAMP = re.compile(r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?=[A-Za-z])")
# Full-width punctuation and space, as scripts written in Chinese print them ("loss：0.5234，
# lr：1e-4", a README's indent of ideographic spaces): the ASCII the readers know.
_FULL_WIDTH = str.maketrans(
    {"：": ":", "，": ",", "＝": "=", "（": "(", "）": ")", "｜": "|", "\u3000": " "}
    # and no-break spaces, as a page copied from a browser or a script's padding has them
    | {"\u00a0": " ", "\u202f": " "}
)
_FULL_WIDTH_CHARS = tuple(chr(c) for c in _FULL_WIDTH)
# Ray's log deduplication after the line: "... [repeated 3x across cluster]".
_RAY_REPEATED = re.compile(r"\s*\[repeated \d{1,9}x across cluster\]$")
# A label that may be a launcher's or the tool's own text: srun --label's task ("0: ",
# "12: "), pdsh's host ("worker-0: ", "10.0.0.1: ", DeepSpeed's multi-node launcher), a pod's
# name as `argo logs` and kubectl's multi-pod views print it (a Job's or ReplicaSet's pod ends
# in five of Kubernetes' random characters, "train-x7k2p: "; Argo's in a node id's digits,
# "wf-abc12-1234567890: "). Darknet starts its own lines with "957: ", so a line that says
# nothing without it is read with it.
_LABEL = re.compile(
    r"^\s{0,3}(?:\d{1,5}|\d{1,3}(?:\.\d{1,3}){3}"
    r"|[a-z][a-z0-9-]{0,62}-(?:\d{1,10}|[bcdfghjklmnpqrstvwxz2456789]{5})): "
)


# A bare tqdm frame, a bar with no description (Transformers' Trainer draws one): the
# commonest progress line, a log's every line where each frame is written as a line of its
# own. Nothing before its percentage may be a launcher's prefix, a label or a logger's head,
# and nothing in it is what the rest of parse_message changes (colours and other controls,
# full-width punctuation, numpy's scalars, a message glued after its "]", a dict): the bar's
# parser alone reads it as the whole way would (tests/test_logparse.py checks it does).
_BARE_FRAME = re.compile(
    r" {0,3}\d{1,3}%\|[ #0-9\u2588-\u258f]{0,200}\| [^\]\x00-\x1f(`{}\x7f-\U0010ffff]{1,300}\]"
)


def parse_message(msg: str, now: float, extra: Extra = NO_EXTRA) -> list[LineReport]:
    """Every report in one message, oldest first, after a launcher's prefix
    (:data:`_LAUNCHER`, :data:`_LABEL`) and a logger's head (:func:`_read_message`)."""
    msg = without_colours(msg)  # anywhere in the line; plain() drops the cursor moves later
    if msg.endswith((" ", "\t", "\r")):
        # A CRLF line end, or a frame's: nothing follows it; spaces a terminal's copy or a
        # script's padding left after the line's last word, which no format reads.
        msg = msg.rstrip(" \t\r")
    if extra is NO_EXTRA and _BARE_FRAME.fullmatch(msg) and (frame := parse_bar(msg, now)):
        return [frame]
    if not msg.isascii():
        if any(c in msg for c in _FULL_WIDTH_CHARS):
            # Looked for first: translate() costs 60 ms on a 1 MB line of bar frames (CRI
            # chunks joined), where each search is 1 ms.
            msg = msg.translate(_FULL_WIDTH)
        if "当前" in msg:
            # "current", before a key ("当前Batch：10/6035 | 当前损失值：10.113"): it names
            # nothing, the key after it does.
            msg = msg.replace("当前", "")
    msg = _without_launchers(plain_scalars(msg))  # np.float64(0.52): any format reads it
    label = _LABEL.match(msg)
    if label is not None:
        # srun's label before torchrun's own prefix ("0: [rank0]:step 10 ...").
        found = _read_message(_without_launchers(msg[label.end() :]), now, extra)
        if found or not msg.lstrip()[:1].isdigit():
            # A host's or a pod's name is never the tool's own text, and its words must not
            # be read ("train-step-1234567890: [1] Train-accuracy=0.7" is no step 1).
            return found
    return _read_message(msg, now, extra)


def _read_message(msg: str, now: float, extra: Extra) -> list[LineReport]:
    """The reports of ``msg`` read after its logger's head where it has one
    (:func:`.heads.split_head`), as if the message were printed bare: the shapes read from a
    line's start (a Keras header, a table's rows, a tool's end) read behind a head. Where the
    message alone gives none, the whole line, by a tool's own format only (one may know its
    logger's name: AllenNLP's table, fairseq's end); the general readers read no head.

    A structured logger's record (:func:`.records.read_record`: JSON, logfmt) is read the
    same way: its message, each of its lines as a line printed bare; where that gives
    nothing, the record's other fields (structlog's ``{"event": "train", "step": 10, ...}``
    keeps its values beside the message): JSON by the JSON reader alone, logfmt's pairs
    without the logger's own."""
    if msg[:1] in _RECORD_STARTS and (record := read_record(msg)) is not None:
        found = [r for part in record.message.splitlines() for r in parse_message(part, now, extra)]
        if found:
            return found
        if not record.is_json:
            return _parse_message(record.fields, now, extra) if record.fields else []
        # The record's other fields by the JSON reader, the named ones only: a logger's own
        # numbers (lineno, process, thread) are no custom metrics of the run.
        fields = parse_jsonl(msg, now)
        if fields is None:
            return []
        return [fields._replace(report=dataclasses.replace(fields.report, metrics=()))]
    if (split := split_head(msg)) is None:
        return _parse_message(msg, now, extra)
    found = _parse_message(_without_launchers(split[1]), now, extra)
    if found:
        return found
    return [r for r in _parse_message(msg, now, extra) if r.parser not in _GENERAL]


def _without_launchers(msg: str) -> str:
    """``msg`` without the launchers' prefixes before it (:data:`_LAUNCHER`): kubectl's
    time, then the pod's launcher's, at most three; and a space after the script's own time
    where it glued it to its words (:data:`_GLUED_STAMP`)."""
    for _ in range(3):
        launcher = _LAUNCHER.match(msg)
        if launcher is None:
            break
        msg = msg[launcher.end() :]
        if msg.endswith("across cluster]"):
            msg = _RAY_REPEATED.sub("", msg)
    if msg[:1].isdigit() and (glued := _GLUED_STAMP.match(msg)) is not None:
        msg = msg[: glued.end()] + " " + msg[glued.end() :]  # the script's own time, glued
    return msg


# The default head of Python's logging ("%(levelname)s:%(name)s:"), right after a number.
_GLUED_RECORD = re.compile(r"(?<=\d)(?:WARNING|INFO):[\w.]{1,64}:")
# A frame's bracket of times and rate (a postfix after it), where more follows with no
# carriage return between: the next frame (its description first: "...1.21it/s]   299/299
# 11.8G ... 640:  92%|"), or a line printed over the bar ("...1.74s/it]{'loss': ...}").
_GLUED_FRAMES = re.compile(
    r"(\[\d[\d:]*(?:<[\d:?]+)?, +[^\]\[\n]{1,200}?(?:it/s|s/it)[^\]\[\n]{0,200}\])(?=.)"
)


def _parse_message(msg: str, now: float, extra: Extra = NO_EXTRA) -> list[LineReport]:
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
    if "\r" not in msg and msg.count("it/s") + msg.count("s/it") > 1:
        # Frames run together where a copy lost their carriage returns (a log pasted or kept
        # by a tool that drops them: "...4.13it/s]100% 100/100 [..."): the newest is the last.
        msg = _GLUED_FRAMES.sub("\\1\r", msg)
    if ("WARNING:" in msg or "INFO:" in msg) and (glued := _GLUED_RECORD.search(msg)):
        # A logging record run into the line before it where a copy lost the newline
        # ("g_loss: 0.69223416WARNING:tensorflow:From ..."): two lines, the value kept whole.
        msg = msg[: glued.start()] + "\r" + msg[glued.start() :]
    if "\r" not in msg:
        found = _parse_segment(msg, now, extra)
        if found is None:
            return []
        beside = _beside(found, msg, now, extra)
        return [found] if beside is None else [found, beside]
    out: list[LineReport] = []
    frames: dict[tuple[str, int | None], list[tuple[float, int]]] = {}
    firsts: dict[tuple[str, int | None], str] = {}
    parsed = 0
    oldest: str | None = None  # the oldest bar frame passed over once every bar had its ticks
    full = False  # every bar found has its ticks (checked every 32 segments)
    # Bars whose newest frame printed no values (a new pass at 0): their frame before it is
    # read whole once, as a line of its own would be (Rasa's last "t_loss=4.11" before "0/100").
    wanting: set[tuple[str, int | None]] = set()
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
        if wanting and (said := _said_before(segment, wanting, now, extra)) is not None:
            out.append(said)
        if frames and _older_frame(segment, frames, firsts):
            continue
        if parsed == 1 and cut_frame(segment):
            continue  # a chunk's newest frame still being written: its older frames are whole
        found = _parse_segment(segment, now, extra)
        if found is None:
            continue
        if found.bar is not None:
            key = bar_key(found.bar)
            if key in frames:
                if found.bar.elapsed_seconds is not None:
                    frames[key].append((found.bar.elapsed_seconds, found.bar.n))
                continue
            frames[key] = []
            if found.report.loss is None and not found.report.metrics:
                wanting.add(key)
            if (beside := _beside(found, segment, now, extra)) is not None:
                out.append(beside)  # newest first: after the frame once reversed
        out.append(found)
    if oldest is not None:
        _older_frame(oldest, frames, firsts)
    out.reverse()
    return [_with_frames(r, frames, firsts) for r in out]


def _said_before(
    segment: str, wanting: set[tuple[str, int | None]], now: float, extra: Extra
) -> LineReport | None:
    """``segment`` read whole where it is the frame just before the newest of a bar in
    ``wanting`` and printed a loss or metrics; None otherwise. Each bar is looked at once."""
    if "%|" not in segment and "it [" not in segment:
        return None
    found = _parse_segment(segment, now, extra)
    if found is None or found.bar is None or (key := bar_key(found.bar)) not in wanting:
        return None
    wanting.discard(key)
    return found if found.report.loss is not None or found.report.metrics else None


def _beside(found: LineReport, segment: str, now: float, extra: Extra) -> LineReport | None:
    """What another logger printed after ``found``'s bar frame in ``segment``, on the same
    line (no newline between), read alone; None where ``found`` is no bar or nothing follows."""
    if found.bar is None or not (rest := after_bar(segment)):
        return None
    return _parse_segment(rest, now, extra)


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
    segment: str,
    frames: dict[tuple[str, int | None], list[tuple[float, int]]],
    firsts: dict[tuple[str, int | None], str] | None = None,
) -> bool:
    """Whether ``segment`` is an older frame of a bar already found newer in the message; if
    so its clock and count are added to ``frames``, and its description to ``firsts`` (the
    oldest wins: which epoch the line began in). Only those are read (not its postfix): a
    16 KiB chunk holds some 200 frames, and all but the newest are rate samples."""
    if "%|" not in segment and "it [" not in segment:
        return False
    found = read_bar(plain(segment))
    if found is None or found[0].elapsed_seconds is None:
        return False
    key = bar_key(found[0])
    older = frames.get(key)
    if older is None:
        return False
    older.append((found[0].elapsed_seconds, found[0].n))
    if firsts is not None:
        firsts[key] = found[0].prefix
    return True


# What another logger printed right after a bar's frame, on the same line (no newline between:
# "| 1999/24128 [1:52:09<20:27:23,  3.33s/it][2021-11-26 ...] [Rank 0] step=2000, ...").
_AFTER_BAR = re.compile(r"(?:it/s|s/it|\?it/s)[^\]\r]{0,512}\]\s{0,512}(?P<rest>\S.*)$")


def after_bar(segment: str) -> str:
    """The text another logger appended to a bar frame, or "" (a frame ends in its ``]``:
    the usual case costs no search). A bar without a total has no ``%|``: its rate ends it."""
    bar = segment.find("%|")
    if bar < 0:
        bar = max(segment.find("it/s]"), segment.find("s/it]"))
    end = segment.find("]", bar) if bar >= 0 else -1
    if end < 0 or not segment[end + 1 :].strip():
        return ""  # no bar, or nothing after the frame's own "]"
    m = _AFTER_BAR.search(segment)
    return m["rest"] if m is not None else ""


def _parse_segment(raw: str, now: float, extra: Extra = NO_EXTRA) -> LineReport | None:
    """One segment (no carriage return), terminal codes removed; a bar drawn with a cursor
    move up after it is marked nested."""
    text = plain(raw)
    found = parse_line(text, now, extra)
    if found is not None and found.bar is not None and _CURSOR_UP in raw:
        return found._replace(bar=found.bar._replace(nested=True))
    # A bar's frame with a logger's line glued after it (a total-less validation bar, then
    # Rich's "Epoch 499: v_loss ... loss ..."), read as one line: the line alone, never taken
    # for the bar's (an evaluation's) words.
    glued = found is not None and found.bar is None and ("it/s]" in text or "s/it]" in text)
    if glued and (rest := after_bar(text)):
        # The frame alone first (a caller reads what follows it, _beside): Trainer's bar with
        # its log dict on the same line ("83%|...| 5/6 [28:30<05:28, 328.42s/it] {'loss': ...").
        # Only one frame and no frame after it: frames run together, then a dict, still give
        # the dict alone.
        head = text[: len(text) - len(rest)]
        alone = head.count("%|") == 1 and not any(m in rest for m in ("%|", "it/s]", "s/it]"))
        frame = parse_line(head, now, extra) if alone else None
        return (
            frame if frame is not None and frame.bar is not None else parse_line(rest, now, extra)
        )
    return found


def _with_frames(
    found: LineReport,
    frames: dict[tuple[str, int | None], list[tuple[float, int]]],
    firsts: dict[tuple[str, int | None], str] | None = None,
) -> LineReport:
    """``found`` with its bar's older frames, one per tick of the bar's clock, oldest first,
    and the description of its oldest frame in the message."""
    if found.bar is None or not (older := frames.get(bar_key(found.bar))):
        return found
    if firsts and (first := firsts.get(bar_key(found.bar))) is not None:
        found = found._replace(first_prefix=first)
    ticks: list[tuple[float, int]] = []
    for elapsed, n in reversed(older):  # oldest first: keep the first frame of each second
        if not ticks or elapsed > ticks[-1][0]:
            ticks.append((elapsed, n))
    return found._replace(frames=tuple(ticks))


def newest_bar(text: str, now: float) -> LineReport | None:
    """The newest complete progress-bar frame in ``text``, a line still being written (no
    newline yet). Frames before its last carriage return are whole; the text after it is
    read too when it parses (a frame cut short, its end still to come, does not: the frames
    before it carry the clock and rate). The same bar's older frames come with it
    (``LineReport.frames``), and the description of its oldest (``first_prefix``): a line first
    read while Lightning's bar is in its second epoch began in its first, as when it is read
    whole (``parse_message``)."""
    if not any(hint in text for hint in _BAR_HINTS):
        return None
    segments = text.split("\r")
    newest: LineReport | None = None
    key: tuple[str, int | None] | None = None
    older: list[tuple[float, int]] = []
    firsts: dict[tuple[str, int | None], str] = {}
    for segment in reversed(segments[-MAX_SEGMENTS:]):
        if not segment.strip():
            continue
        if key is not None:
            _older_frame(segment, {key: older}, firsts)
            continue
        if cut_frame(segment):
            continue  # still being written: the frames before it are whole
        found = _parse_segment(segment, now)
        if found is None or found.bar is None:
            continue
        newest, key = found, bar_key(found.bar)
    if newest is None or key is None:
        return None
    return _with_frames(newest, {key: older}, firsts)
