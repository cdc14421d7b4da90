"""The one joiner of the kubelet's CRI log lines into messages, for the log source and
``inspect`` alike, so that ``inspect`` shows exactly what the source reads.

containerd writes ``<RFC3339Nano> <stdout|stderr> <P|F> <message>``, splitting a long line
into partial ``P`` chunks that end with an ``F`` chunk, per stream. Plain (non-CRI) lines pass
through as they are. Partial chunks are joined up to :data:`MAX_PARTIAL` characters (a longer
line is dropped and counted); a partial line whose final chunk has not come for
:data:`PARTIAL_TIMEOUT` seconds is read as it is (a progress bar redrawn without a newline is
the usual case), and so is every pending partial at the end of a file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import NamedTuple

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


MAX_PARTIAL = 1024 * 1024  # characters a line split into "P" chunks may reach
KEEP_FRAMES = 64 * 1024  # of a line over MAX_PARTIAL, the newest frames (after a "\r") kept
PARTIAL_TIMEOUT = 5.0  # seconds a partial line may wait for its final chunk
_FRACTION = re.compile(r"(\.\d{6})\d+")


class Message(NamedTuple):
    """One logical log line, and its CRI timestamp where it had one (RFC 3339, as written:
    converting it costs more than reading the line, so only :attr:`time` does, on demand)."""

    text: str
    stamp: str = ""

    @property
    def time(self) -> float | None:
        """The timestamp in Unix seconds, or None."""
        return cri_time(self.stamp) if self.stamp else None


@lru_cache(maxsize=64)
def _utc_second(text: str) -> float:
    return datetime.fromisoformat(text + "+00:00").timestamp()


def cri_time(text: str) -> float | None:
    """RFC 3339 with nanoseconds (as the kubelet writes it) to Unix seconds."""
    # The kubelet writes UTC ("...T18:20:54.123456789Z"): the second is converted once and
    # cached (a log has many lines a second), the fraction added.
    if len(text) > 20 and text[-1] == "Z" and text[19] == "." and text[20:-1].isdigit():
        try:
            return _utc_second(text[:19]) + float(text[19:-1])
        except ValueError:
            return None
    try:
        return datetime.fromisoformat(_FRACTION.sub(r"\1", text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


_STREAM_BYTES = {b"stdout ": "stdout", b"stderr ": "stderr"}


def cri_head(raw: bytes) -> tuple[int, str, bool]:
    """A CRI line's head read from its bytes: where its message starts, its stream and
    whether it is a partial ``P`` chunk; ``(0, "", False)`` for a line of another shape
    (:func:`parse_cri` then reads it). Readers look at most lines' heads only: a line with
    nothing to read is passed over undecoded."""
    space = raw.find(b" ", 0, 48)
    if space > 0 and 48 <= raw[0] <= 57 and raw[space + 9 : space + 10] == b" ":
        stream = _STREAM_BYTES.get(raw[space + 1 : space + 8])
        tag = raw[space + 8]
        if stream is not None and (tag == 70 or tag == 80):  # "F", "P"
            return space + 10, stream, tag == 80
    return 0, "", False


def cannot_be_partial(raw: bytes) -> bool:
    """Whether ``raw`` is surely not a partial ``P`` chunk: the tag comes right after the
    timestamp and stream, within the first 64 bytes."""
    return raw.find(b" P ", 0, 64) < 0


@dataclass
class CriJoiner:
    """Per-stream partial chunks of one log file, joined into messages."""

    max_chars: int = MAX_PARTIAL
    timeout: float = PARTIAL_TIMEOUT
    too_long: int = 0  # lines dropped for exceeding max_chars since last read
    # Each waiting stream's chunks, kept apart and joined once its line completes: CRI-O
    # writes a P line per bar frame, and joining as they come would copy the line once per
    # frame (quadratic in a bar of thousands of frames).
    _partial: dict[str, list[str]] = field(default_factory=dict)
    _size: dict[str, int] = field(default_factory=dict)
    _since: dict[str, float] = field(default_factory=dict)
    _time: dict[str, str] = field(default_factory=dict)

    def push(self, line: str, now: float) -> Message | None:
        """The message ``line`` completes, or None while a partial line waits (or was
        dropped as too long)."""
        cri = parse_cri(line)
        if cri is None:
            return Message(line.rstrip("\n"))
        return self._join(cri.time, cri.stream, cri.partial, cri.message, now)

    def push_raw(self, raw: bytes, now: float) -> Message | None:
        """:meth:`push` for a line as read (bytes): a CRI line's head is read from its
        bytes (:func:`cri_head`), only its message is decoded."""
        start, stream, partial = cri_head(raw)
        if not stream:
            return self.push(raw.decode("utf-8", "replace"), now)
        return self.push_head(raw, start, stream, partial, now)

    def push_head(
        self, raw: bytes, start: int, stream: str, partial: bool, now: float
    ) -> Message | None:
        """:meth:`push` for a CRI line as read whose head was read already (:func:`cri_head`
        gave ``start``, ``stream`` and ``partial``)."""
        stamp = raw[: start - 10].decode("utf-8", "replace")
        message = raw[start:].rstrip(b"\n").decode("utf-8", "replace")
        return self._join(stamp, stream, partial, message, now)

    def _join(
        self, stamp: str, stream: str, partial: bool, message: str, now: float
    ) -> Message | None:
        """One CRI line's part (:class:`CriLine`'s fields, passed apart: a CRI-O log has a
        line per bar frame) joined to its stream's waiting chunks."""
        if not partial and stream not in self._partial:  # the usual whole line
            return Message(message, stamp)
        chunks = self._partial.setdefault(stream, [])
        chunks.append(message)
        size = self._size.get(stream, 0) + len(message)
        if size > self.max_chars:
            # A bar redrawn without a newline for a long time: keep its newest frames.
            joined = "".join(chunks)
            cr = joined.find("\r", len(joined) - KEEP_FRAMES)
            if cr >= 0:
                joined = joined[cr:]
            chunks[:] = [joined]
            size = len(joined)
        self._size[stream] = size
        if partial:
            if size <= self.max_chars:
                self._since.setdefault(stream, now)
                self._time[stream] = stamp
            else:
                self._drop(stream)
                self.too_long += 1
            return None
        joined = "".join(self._partial.pop(stream))
        self._drop(stream)
        if len(joined) > self.max_chars:
            self.too_long += 1
            return None
        return Message(joined, stamp)

    def _drop(self, stream: str) -> None:
        self._partial.pop(stream, None)
        self._size.pop(stream, None)
        self._since.pop(stream, None)
        self._time.pop(stream, None)

    def stale(self, now: float) -> list[Message]:
        """Partial lines that waited ``timeout`` seconds for their final chunk, as they are."""
        return self._take([s for s, t in self._since.items() if now - t >= self.timeout])

    def pending(self) -> list[Message]:
        """Every partial line still waiting (the end of a file: nothing more will come)."""
        return self._take(list(self._partial))

    @property
    def idle(self) -> bool:
        """No partial line is waiting for its final chunk."""
        return not self._partial

    def waits_on_stream(self, stream: str) -> bool:
        """Whether ``stream`` has a partial line waiting for its final chunk."""
        return stream in self._partial

    def waits_on(self, raw: bytes) -> bool:
        """Whether ``raw`` (a CRI line as read) belongs to a stream with a partial line
        waiting for its final chunk: a line of another stream cannot complete it."""
        if not self._partial:
            return False
        parts = raw.split(b" ", 2)
        return len(parts) < 3 or parts[1].decode("ascii", "replace") in self._partial

    def peek(self) -> list[str]:
        """The partial lines waiting for their final chunk, left in place (the newest bar
        frame in one is read before the line ends)."""
        out = []
        for chunks in self._partial.values():
            if len(chunks) > 1:
                chunks[:] = ["".join(chunks)]  # joined once, then kept joined
            out.append(chunks[0] if chunks else "")
        return out

    def held(self) -> list[int]:
        """The length of each partial line waiting for its final chunk (memory is bounded)."""
        return list(self._size.values())

    def clear(self) -> None:
        """Forget partial chunks (lines were skipped: they can no longer be joined)."""
        self._partial.clear()
        self._size.clear()
        self._since.clear()
        self._time.clear()

    def _take(self, streams: list[str]) -> list[Message]:
        out = []
        for stream in streams:
            stamp = self._time.get(stream, "")
            text = "".join(self._partial.get(stream, ()))
            self._drop(stream)
            out.append(Message(text, stamp))
        return out
