"""Following one log file as it grows, is rotated, truncated or replaced.

A :class:`FileTail` holds an open descriptor and an offset. Each :meth:`FileTail.read` returns
the complete new lines (bounded per call). When the path names a new file (the kubelet renamed
``0.log`` to ``0.log.<time>`` and created a new ``0.log``), the old descriptor is drained first,
so nothing written just before the rotation is lost. A file that shrank was truncated: reading
starts again at 0. A symlink or anything but a regular file at the path is refused, never
followed. On first open only the last ``backfill`` bytes are read: progress is a latest-value
problem, so an exporter restart never re-reads whole files.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

from ..core.model import ReportError

CHUNK = 64 * 1024
MAX_LINE = 1024 * 1024
KEEP_FRAMES = 64 * 1024  # of a line over MAX_LINE, the newest frames kept


@dataclass
class FileTail:
    """Complete lines of one path, as they are appended."""

    path: str
    backfill: int = 1024 * 1024
    budget: int = 64 * 1024 * 1024  # bytes read per call at most: the rest waits for the next
    _fd: int | None = None
    _ino: int | None = None
    _offset: int = 0
    _buffer: bytes = b""
    _skip_partial: bool = False
    _keep: int | None = None
    _cut: bool = False
    dropped_long_lines: int = field(default=0)
    truncations: int = field(default=0)  # times the file was rewritten from its start

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _open(self) -> None:
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            raise ReportError("vanished", f"{self.path}: no such file") from None
        except OSError as exc:
            raise ReportError("unreadable", f"{self.path}: {exc.strerror}") from None
        if stat.S_ISLNK(st.st_mode):
            raise ReportError("symlink", f"{self.path}: is a symlink, not followed")
        if not stat.S_ISREG(st.st_mode):
            raise ReportError("not_regular_file", f"{self.path}: not a regular file")
        if self._fd is not None and st.st_ino == self._ino:
            return
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            reason = "symlink" if exc.errno == 40 else "unreadable"
            raise ReportError(reason, f"{self.path}: {exc.strerror}") from None
        st2 = os.fstat(fd)
        if not stat.S_ISREG(st2.st_mode):
            os.close(fd)
            raise ReportError("not_regular_file", f"{self.path}: not a regular file")
        first = self._ino is None
        self.close()
        self._fd, self._ino = fd, st2.st_ino
        if first and st2.st_size > self.backfill:
            self._offset = st2.st_size - self.backfill
            self._skip_partial = True  # the first line read is most likely cut
        else:
            self._offset = 0
        self._buffer = b""

    def _drain(self, fd: int, limit: int) -> bytes:
        """Read up to ``limit`` new bytes; in tail mode keep only the last ``self._keep`` of them
        (plus the carried partial line), so memory stays bounded however much was written."""
        chunks: list[bytes] = []
        kept, total = 0, 0
        while total < limit:
            chunk = os.pread(fd, min(CHUNK * 16, limit - total), self._offset)
            if not chunk:
                break
            total += len(chunk)
            self._offset += len(chunk)
            chunks.append(chunk)
            kept += len(chunk)
            if self._keep is not None and kept > 2 * self._keep:
                window = b"".join(chunks)[-self._keep :]
                chunks, kept = [window], len(window)
                self._cut = True
        return b"".join(chunks)

    def read(self, keep_bytes: int | None = None) -> list[bytes]:
        """New complete lines (without the newline). Raises ReportError on a path problem.

        With ``keep_bytes``, only the lines in the last ``keep_bytes`` of new data are
        returned: progress is a latest-value problem, and this bounds time and memory.
        """
        self._keep, self._cut = keep_bytes, False
        data = b""
        if self._fd is not None:
            try:
                st = os.lstat(self.path)
                replaced = st.st_ino != self._ino
            except FileNotFoundError:
                replaced = True
            if replaced:  # rotated: finish the old file before switching
                data += self._drain(self._fd, self.budget)
                self.close()
                self._offset = 0
        if self._fd is None or data == b"":
            self._open()
        assert self._fd is not None
        size = os.fstat(self._fd).st_size
        if size < self._offset:  # truncated in place: rewritten by a new process
            self._offset, self._buffer = 0, b""
            self.truncations += 1
        data += self._drain(self._fd, self.budget - len(data))
        return self._split(data)

    @property
    def at_end(self) -> bool:
        """Whether everything written so far has been read."""
        return self._fd is not None and self._offset >= os.fstat(self._fd).st_size

    @property
    def unterminated(self) -> bytes:
        """The text after the last newline: a line still being written (a progress bar
        redrawn with carriage returns), at most :data:`MAX_LINE` bytes of it, up to its last
        whole UTF-8 character. A poll that falls inside a character (``█`` is three bytes,
        a buffered ``stdout`` writes 8 KiB blocks) would decode it as a replacement; the
        next poll, with the character whole, would then no longer start with what this one
        read, and the line's older frames would be read again as a bar starting over."""
        return _whole_characters(self._buffer)

    def _split(self, data: bytes) -> list[bytes]:
        if self._cut:  # the window starts inside a line
            self._buffer = b""
            newline = data.find(b"\n")
            head = data if newline < 0 else data[:newline]
            # The line's start was cut, but its frames after a carriage return are whole.
            cr = head.find(b"\r")
            rest = b"" if newline < 0 else data[newline:]
            data = head[cr:] + rest if cr >= 0 else rest[1:]
            self._cut = False
        buffer = self._buffer + data
        lines = buffer.split(b"\n")
        pending = _trim(lines.pop())
        if pending is None:  # a line without end and without a frame to keep
            pending = b""
            self.dropped_long_lines += 1
        self._buffer = pending
        if self._skip_partial and lines:
            # The first line read is most likely cut; its frames after a \r are whole.
            first = lines.pop(0)
            cr = first.find(b"\r")
            if cr >= 0:
                lines.insert(0, first[cr:])
            self._skip_partial = False
        if not lines or max(map(len, lines)) <= MAX_LINE:
            return lines  # the usual read: no line to trim (checked at C speed)
        out = []
        for line in lines:
            trimmed = _trim(line)
            if trimmed is None:
                self.dropped_long_lines += 1
                continue
            out.append(trimmed)
        return out


def _trim(line: bytes) -> bytes | None:
    """``line`` if it is at most :data:`MAX_LINE` bytes; else its newest frames (from a
    carriage return within the last :data:`KEEP_FRAMES` bytes: a bar redrawn for an hour
    without a newline is read by its latest frames), or None if it has no such frame."""
    if len(line) <= MAX_LINE:
        return line
    cr = line.find(b"\r", len(line) - KEEP_FRAMES)
    return line[cr:] if cr >= 0 else None


def _whole_characters(data: bytes) -> bytes:
    """``data`` without a UTF-8 sequence cut at its end (its lead byte and the continuation
    bytes after it, fewer than the lead byte announces). Bytes that are not UTF-8 at all are
    left as they are: decoding replaces them the same way at every poll."""
    end = len(data)
    for back in range(1, min(4, end) + 1):
        byte = data[end - back]
        if byte & 0xC0 == 0x80:  # a continuation byte: look further back for its lead
            continue
        if 0xC0 <= byte < 0xF8:  # a lead byte: 110xxxxx needs 2 bytes, 1110xxxx 3, 11110xxx 4
            size = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return data[: end - back] if back < size else data
        return data  # ASCII: every character before it is whole
    return data
