"""File source: JSON status files written by training code (atomic rename), one run per file.

Standalone mode reads every ``*.json`` in ``--status-dir``. Files are opened relative to the
directory with ``O_NOFOLLOW | O_NONBLOCK`` and must be regular files under a size cap, so a
symlink to ``/etc/shadow``, a FIFO or a 1 GB file is refused, never followed or read whole.
A truncated or half-written file keeps the run's previous report and is counted as an error.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from ..core.model import KUBEFLOW_MAX_BODY_BYTES, ReportError, RunKey, RunMeta, run_name
from ..core.wire import parse_bytes
from ..plumbing.hostfs import read_regular_file
from ..plumbing.ingest import Ingestor

log = logging.getLogger(__name__)
NAME = "file"
SUFFIX = ".json"


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
        self._keys: dict[str, RunKey | None] = {}
        self._present = ingestor.presence()
        self._down = ""  # why the directory could not be read at the last poll (warned once)
        self.last_errors: dict[str, str] = {}

    def _key(self, filename: str) -> RunKey | None:
        # Cached: the label rule is a regex, and 10,000 files are listed every second.
        if filename not in self._keys:
            run = run_name(filename[: -len(SUFFIX)])
            self._keys[filename] = None if run is None else RunKey(self.namespace, run, run)
        return self._keys[filename]

    def poll(self) -> None:
        """One pass over the directory: parse changed files, retire vanished ones."""
        try:
            dir_fd = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            why = f"status directory {self.directory}: {exc.strerror or exc}"
            if why != self._down:  # once per problem, not once a poll
                self._down = why
                log.warning("%s; reading it once it is there", why)
            self.ingestor.source_up(NAME, False, why)
            return
        if self._down:
            log.warning("status directory %s: reading it now", self.directory)
            self._down = ""
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
                if key is None:  # nothing of the name is usable as a label
                    self.ingestor.drop(NAME, "invalid_name")
                    continue
                present.add(key)
                try:
                    self._poll_file(dir_fd, filename, key)
                except Exception:  # one file must never stop the pass over the others
                    log.exception("status file %r could not be read", filename)
                    self.ingestor.drop(NAME, "poll_error")
            self._present.seen(present)
            listed = set(names)
            for filename in [f for f in self._seen if f not in listed]:
                del self._seen[filename]
            for filename in [f for f in self._keys if f not in listed]:
                del self._keys[filename]
            for filename in [f for f in self.last_errors if f not in listed]:
                del self.last_errors[filename]  # errors of files that are gone
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
