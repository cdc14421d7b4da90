"""Files read from the host, opened safely: never following a symlink out of place, never
reading a FIFO or an unbounded file. Every source that reads the host's files uses these."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable

from ..core.model import ReportError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def open_dir_chain(root: str, parts: Iterable[str]) -> int:
    """An fd of ``root/part/part...``, refusing symlinks at every step. Raises ReportError."""
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise ReportError("unreadable", f"{root}: {exc.strerror}") from None
    for part in parts:
        try:
            nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (40, 20):  # ELOOP (symlink), ENOTDIR (a file or a link)
                raise ReportError(
                    "symlink", f"{part}: not a plain directory, not followed"
                ) from None
            raise ReportError("unreadable", f"{part}: {exc.strerror}") from None
        os.close(fd)
        fd = nxt
    return fd


def read_regular_file(dir_fd: int, name: str, max_bytes: int) -> bytes:
    """Read ``name`` inside the open directory ``dir_fd`` safely.

    Raises ReportError: ``symlink`` (not followed), ``not_regular_file`` (FIFO, socket,
    directory...), ``oversize`` (more than ``max_bytes``), ``unreadable`` (any OS error).
    """
    try:
        fd = os.open(
            name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd
        )
    except OSError as exc:
        if exc.errno == 40:  # ELOOP: the final component is a symlink
            raise ReportError("symlink", f"{name}: is a symlink, not followed") from None
        raise ReportError("unreadable", f"{name}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ReportError("not_regular_file", f"{name}: not a regular file")
        if st.st_size > max_bytes:
            raise ReportError("oversize", f"{name}: {st.st_size} bytes exceeds {max_bytes}")
        chunks = []
        remaining = max_bytes + 1
        while remaining > 0:
            chunk = os.read(fd, remaining)
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        data = b"".join(chunks)
        if len(data) > max_bytes:
            raise ReportError("oversize", f"{name}: grew beyond {max_bytes} bytes")
        return data
    except OSError as exc:
        raise ReportError("unreadable", f"{name}: {exc.strerror}") from None
    finally:
        os.close(fd)
