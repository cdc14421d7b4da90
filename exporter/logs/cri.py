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

from .parse import parse_cri

MAX_PARTIAL = 1024 * 1024  # characters a line split into "P" chunks may reach
PARTIAL_TIMEOUT = 5.0  # seconds a partial line may wait for its final chunk
_FRACTION = re.compile(r"(\.\d{6})\d+")


@dataclass(frozen=True, slots=True)
class Message:
    """One logical log line, and its CRI time (Unix seconds) where it had one."""

    text: str
    time: float | None


def cri_time(text: str) -> float | None:
    """RFC 3339 with nanoseconds (as the kubelet writes it) to Unix seconds."""
    try:
        return datetime.fromisoformat(_FRACTION.sub(r"\1", text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


@dataclass
class CriJoiner:
    """Per-stream partial chunks of one log file, joined into messages."""

    max_chars: int = MAX_PARTIAL
    timeout: float = PARTIAL_TIMEOUT
    too_long: int = 0  # lines dropped for exceeding max_chars since last read
    _partial: dict[str, str] = field(default_factory=dict)
    _since: dict[str, float] = field(default_factory=dict)
    _time: dict[str, str] = field(default_factory=dict)

    def push(self, line: str, now: float) -> Message | None:
        """The message ``line`` completes, or None while a partial line waits (or was
        dropped as too long)."""
        cri = parse_cri(line)
        if cri is None:
            return Message(line.rstrip("\n"), None)
        joined = self._partial.pop(cri.stream, "") + cri.message
        if cri.partial:
            if len(joined) <= self.max_chars:
                self._partial[cri.stream] = joined
                self._since.setdefault(cri.stream, now)
                self._time[cri.stream] = cri.time
            else:
                self._since.pop(cri.stream, None)
                self._time.pop(cri.stream, None)
                self.too_long += 1
            return None
        self._since.pop(cri.stream, None)
        self._time.pop(cri.stream, None)
        return Message(joined, cri_time(cri.time))

    def stale(self, now: float) -> list[Message]:
        """Partial lines that waited ``timeout`` seconds for their final chunk, as they are."""
        return self._take([s for s, t in self._since.items() if now - t >= self.timeout])

    def pending(self) -> list[Message]:
        """Every partial line still waiting (the end of a file: nothing more will come)."""
        return self._take(list(self._partial))

    def held(self) -> list[int]:
        """The length of each partial line waiting for its final chunk (memory is bounded)."""
        return [len(text) for text in self._partial.values()]

    def clear(self) -> None:
        """Forget partial chunks (lines were skipped: they can no longer be joined)."""
        self._partial.clear()
        self._since.clear()
        self._time.clear()

    def _take(self, streams: list[str]) -> list[Message]:
        out = []
        for stream in streams:
            self._since.pop(stream, None)
            stamp = self._time.pop(stream, "")
            out.append(Message(self._partial.pop(stream, ""), cri_time(stamp) if stamp else None))
        return out
