"""File source: JSON status files written by training code (atomic rename), one run per file.

Standalone mode reads every ``*.json`` in ``--status-dir``. Files are opened relative to the
directory with ``O_NOFOLLOW | O_NONBLOCK`` and must be regular files under a size cap, so a
symlink to ``/etc/shadow``, a FIFO or a 1 GB file is refused, never followed or read whole.
A truncated or half-written file keeps the run's previous report and is counted as an error.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from ..ingest import Ingestor
from ..model import KUBEFLOW_MAX_BODY_BYTES, ReportError, RunKey, RunMeta, parse_bytes

NAME = "file"
SUFFIX = ".json"


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


@dataclass(frozen=True)
class _Seen:
    """What identified the file's content last time: unchanged files are not re-parsed."""

    ino: int
    size: int
    mtime_ns: int


class StatusDirSource:
    """Standalone: every ``*.json`` in one directory is a run named after the file."""

    name = NAME

    def __init__(
        self,
        directory: str,
        namespace: str,
        ingestor: Ingestor,
        max_bytes: int = KUBEFLOW_MAX_BODY_BYTES,
        max_files: int = 10_000,
    ) -> None:
        self.directory = directory
        self.namespace = namespace
        self.ingestor = ingestor
        self.max_bytes = max_bytes
        self.max_files = max_files
        self._seen: dict[str, _Seen] = {}
        self._present = ingestor.presence()
        self.last_errors: dict[str, str] = {}

    def _key(self, filename: str) -> RunKey:
        run = filename[: -len(SUFFIX)][:63]
        return RunKey(self.namespace, run, run)

    def poll(self) -> None:
        """One pass over the directory: parse changed files, retire vanished ones."""
        try:
            dir_fd = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            self.ingestor.source_up(NAME, False)
            return
        try:
            names = sorted(
                n for n in os.listdir(dir_fd) if n.endswith(SUFFIX) and not n.startswith(".")
            )
            if len(names) > self.max_files:
                self.ingestor.drop(NAME, "file_cap")
                names = names[: self.max_files]
            present: set[RunKey] = set()
            for filename in names:
                key = self._key(filename)
                present.add(key)
                self._poll_file(dir_fd, filename, key)
            self._present.saw(present)
            listed = set(names)
            for filename in [f for f in self._seen if f not in listed]:
                del self._seen[filename]
            self.ingestor.source_up(NAME, True)
        finally:
            os.close(dir_fd)

    def _poll_file(self, dir_fd: int, filename: str, key: RunKey) -> None:
        try:
            st = os.stat(filename, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            return
        seen = _Seen(st.st_ino, st.st_size, st.st_mtime_ns)
        if self._seen.get(filename) == seen:
            return
        self._seen[filename] = seen
        try:
            body = read_regular_file(dir_fd, filename, self.max_bytes)
            parsed = parse_bytes(body, self.ingestor.clock(), self.max_bytes)
        except ReportError as err:
            # The previous report stays: the tracker is simply not touched.
            self.last_errors[filename] = err.message
            self.ingestor.reject(NAME, err)
            return
        self.last_errors.pop(filename, None)
        self.ingestor.accept(NAME, key, parsed, RunMeta(source=NAME))
