"""Log source: progress read from log files, with no change to the training code.

Standalone mode tails the files named by ``log_paths`` (globs): each file is one run named
after it (``train.log`` is run ``train``). Lines may be plain or in the kubelet's CRI format
(``<time> <stream> <P|F> <message>``; partial ``P`` chunks are joined per stream, bounded).
Each file's lines go through the pure parsers and one :class:`LogAccumulator`; the run gets a
report whenever its lines said something new. Reports that arrive by push, file or HTTP win:
while a run has had one of those recently, its log is not used.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..ingest import Ingestor
from ..logparse import parse_cri, parse_line
from ..logstate import LogAccumulator
from ..model import Parsed, ReportError
from ..tracker import RunKey, RunMeta
from .logtail import FileTail

NAME = "log"
MAX_PARTIAL = 1024 * 1024
MAX_FILES = 1000


@dataclass
class _Followed:
    tail: FileTail
    acc: LogAccumulator = field(default_factory=LogAccumulator)
    partial: dict[str, bytes] = field(default_factory=dict)
    seen_counts: int = 0


class LogSource:
    """Tails log files and turns what they print into reports."""

    name = NAME

    def __init__(
        self,
        patterns: Sequence[str],
        namespace: str,
        ingestor: Ingestor,
        key_of: Callable[[str], RunKey] | None = None,
        meta: RunMeta | None = None,
    ) -> None:
        self.patterns = list(patterns)
        self.namespace = namespace
        self.ingestor = ingestor
        self.key_of = key_of or self._key
        self.meta = meta or RunMeta(source=NAME)
        self._files: dict[str, _Followed] = {}

    def _key(self, path: str) -> RunKey:
        name = os.path.basename(path).split(".")[0][:63] or "log"
        return RunKey(self.namespace, name, name)

    def _paths(self) -> list[str]:
        found: list[str] = []
        for pattern in self.patterns:
            found += sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        return sorted(set(found))[:MAX_FILES]

    def poll(self) -> None:
        stats = self.ingestor.stats
        paths = self._paths()
        for path in paths:
            followed = self._files.get(path)
            if followed is None:
                followed = self._files[path] = _Followed(FileTail(path))
            try:
                lines = followed.tail.read()
            except ReportError as err:
                stats.drop(NAME, err.reason)
                followed.tail.close()
                del self._files[path]
                continue
            if followed.tail.dropped_long_lines:
                for _ in range(followed.tail.dropped_long_lines):
                    stats.drop(NAME, "line_too_long")
                followed.tail.dropped_long_lines = 0
            if self._feed(followed, lines):
                self._report(path, followed)
        for path in set(self._files) - set(paths):
            self._files.pop(path).tail.close()
        stats.set_up(NAME, True)

    def _feed(self, followed: _Followed, lines: list[bytes]) -> bool:
        now = self.ingestor.clock()
        matched = False
        for raw in lines:
            text = raw.decode("utf-8", "replace")
            cri = parse_cri(text)
            if cri is not None:
                joined = followed.partial.pop(cri.stream, b"") + cri.message.encode()
                if cri.partial:
                    if len(joined) <= MAX_PARTIAL:
                        followed.partial[cri.stream] = joined
                    else:
                        self.ingestor.stats.drop(NAME, "partial_too_long")
                    continue
                text = joined.decode("utf-8", "replace")
            found = parse_line(text, now)
            if found is not None:
                followed.acc.feed(found, now)
                self.ingestor.stats.match(found.parser)
                matched = True
        return matched

    def _report(self, path: str, followed: _Followed) -> None:
        key = self.key_of(path)
        now = self.ingestor.clock()
        if self.ingestor.tracker.structured_recently(key, now):
            self.ingestor.stats.drop(NAME, "structured_wins")
            return
        self.ingestor.accept(NAME, key, Parsed(followed.acc.report()), self.meta)
