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
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from ..core.model import Parsed, ReportError, RunKey, RunMeta, run_name
from ..core.stacks import RankStacks
from ..plumbing.ingest import Ingestor
from .accumulate import LogAccumulator
from .cri import CriJoiner, parse_cri
from .lines import EMPTY, NO_EXTRA, Extra, Format
from .parse import newest_bar, parse_message
from .stackdump import StackDumpReader
from .tail import FileTail

log = logging.getLogger(__name__)

NAME = "log"
# Progress is a latest-value problem: of each batch of new lines, only the newest are parsed
# (enough for the accumulator's recent history of bars). A job printing megabytes between
# polls costs a read, not a parse of every line.
PARSE_TAIL = 100
# Stack dumps are read from more of the newest lines: a faulthandler dump of a dozen threads
# runs to a few hundred lines, and a hung process prints nothing after it.
STACK_TAIL = 400
KEEP_BYTES = 512 * 1024  # of each poll's new bytes, only the newest this many are kept
MAX_FILES = 1000
MAX_DUMPS = 64  # stack dumps delivered per log per poll (the newest)


@dataclass
class _Followed:
    tail: FileTail
    acc: LogAccumulator = field(default_factory=LogAccumulator)
    cri: CriJoiner = field(default_factory=CriJoiner)
    # The line still being written as last read: its pieces (P chunks, or the raw text).
    unterminated: tuple[str, ...] = ()
    truncations: int = 0  # the tail's count when the accumulator was started
    stacks: StackDumpReader = field(default_factory=StackDumpReader)
    dumps: list[RankStacks] = field(default_factory=list)  # read, not yet delivered


Targets = Callable[[], "dict[str, tuple[RunKey, RunMeta]]"]


def standalone_targets(patterns: Sequence[str], namespace: str) -> Targets:
    """Files matching ``patterns``, each a run named after the file (``train.log``: ``train``)."""

    def targets() -> dict[str, tuple[RunKey, RunMeta]]:
        found: list[str] = []
        for pattern in patterns:
            found += sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        out = {}
        for path in sorted(set(found))[:MAX_FILES]:
            # Only the extension goes: llama-3.1.log is run llama-3.1.
            name = run_name(os.path.splitext(os.path.basename(path))[0]) or "log"
            out[path] = (RunKey(namespace, name, name), RunMeta(source=NAME))
        return out

    return targets


class LogSource:
    """Tails log files and turns what they print into reports."""

    name = NAME

    def __init__(
        self,
        targets: Targets,
        ingestor: Ingestor,
        files_are_runs: bool = False,
        formats: tuple[Format, ...] = (),
    ) -> None:
        """``files_are_runs``: each file is the run (standalone), so a file that is gone
        makes its run gone; in Kubernetes mode the pod decides that, not its log file.
        ``formats``: the formats users configured (tried after the built-in ones, and first
        for a pod whose log-format annotation names one)."""
        self.targets = targets
        self.ingestor = ingestor
        self.formats = {f.name: f for f in formats}
        self._after = Extra(after=formats) if formats else NO_EXTRA
        self._unknown_format: set[str] = set()  # paths whose annotation names none (told once)
        self._present = ingestor.presence() if files_are_runs else None
        # Files named on the command line must be there: one that is not makes the source
        # down (with the reason on /readyz). A pod's log may come later; that is waiting.
        self._required = files_are_runs
        self._files: dict[str, _Followed] = {}
        self._keys: dict[str, tuple[RunKey, RunMeta]] = {}
        self._missing: dict[str, str] = {}  # path -> why it cannot be read (logged once)
        self._why: dict[str, str] = {}  # path -> that, in words

    def poll(self) -> None:
        self._keys = self.targets()
        paths = list(self._keys)
        for path in paths:
            followed = self._files.get(path)
            if followed is None:
                followed = self._files[path] = _Followed(FileTail(path))
            try:
                lines = followed.tail.read(keep_bytes=KEEP_BYTES)
            except ReportError as err:
                followed.tail.close()
                del self._files[path]
                if self._missing.get(path) != err.reason:
                    # Once per path and problem, not once a poll: a file that does not exist
                    # yet (the job has not started) is waited for.
                    self._missing[path] = err.reason
                    self._why[path] = err.message
                    self.ingestor.drop(NAME, err.reason)
                    log.warning("log %s: %s; reading it once it is there", path, err.message)
                continue
            if followed.tail.truncations != followed.truncations:
                # Rewritten from its start (``python train.py > train.log`` again): a new
                # process, so what the old one printed says nothing about it.
                followed.truncations = followed.tail.truncations
                now = self.ingestor.clock()
                followed.acc, followed.cri = LogAccumulator(start_time=now), CriJoiner()
                followed.unterminated = ()
            if self._missing.pop(path, None) is not None:
                self._why.pop(path, None)
                log.warning("log %s: reading it now", path)
            if followed.tail.dropped_long_lines:
                for _ in range(followed.tail.dropped_long_lines):
                    self.ingestor.drop(NAME, "line_too_long")
                followed.tail.dropped_long_lines = 0
            followed.stacks.rank = self._keys[path][1].rank
            if self._feed(followed, lines, self._extra(path)):
                self._report(path, followed)
            for dump in followed.dumps[-MAX_DUMPS:]:
                self.ingestor.stacks(NAME, self._keys[path][0], dump)
            followed.dumps.clear()
        for path in set(self._files) - set(paths):
            self._files.pop(path).tail.close()
        for path in set(self._missing) - set(paths):
            del self._missing[path]
            self._why.pop(path, None)
        if self._present is not None:
            self._present.seen(self._keys[p][0] for p in self._files)
        if self._required and self._why:
            first = min(self._why)
            more = f" (and {len(self._why) - 1} more)" if len(self._why) > 1 else ""
            self.ingestor.source_up(NAME, False, f"{self._why[first]}{more}")
        else:
            self.ingestor.source_up(NAME, True)

    def _extra(self, path: str) -> Extra:
        """The configured formats for ``path``'s log: the one its pod's annotation names
        first, then all of them after the built-in ones."""
        wanted = self._keys[path][1].log_format
        if not wanted:
            return self._after
        chosen = self.formats.get(wanted)
        if chosen is None:
            if path not in self._unknown_format:
                self._unknown_format.add(path)
                self.ingestor.drop(NAME, "unknown_log_format")
                log.warning("log %s: its log-format %r is not in log_formats", path, wanted)
            return self._after
        return Extra(first=(chosen,), after=self._after.after)

    def _feed(self, followed: _Followed, lines: list[bytes], extra: Extra = NO_EXTRA) -> bool:
        now = self.ingestor.clock()
        joiner = followed.cri
        messages = joiner.stale(now)
        if len(lines) > STACK_TAIL:
            joiner.clear()  # chunks before the tail cannot be joined any more
            lines = lines[-STACK_TAIL:]
        for raw in lines:
            message = joiner.push_raw(raw, now)
            if message is not None:
                messages.append(message)
        for message in messages:
            followed.dumps += followed.stacks.feed(
                message.text,
                lambda m=message: m.time or now,  # type: ignore[misc]
            )
        followed.dumps += followed.stacks.end_of_batch()
        messages = messages[-PARSE_TAIL:]
        for _ in range(joiner.too_long):
            self.ingestor.drop(NAME, "partial_too_long")
        joiner.too_long = 0
        matched = False
        # A line whose start was read while it was being written (see _unterminated): only
        # its frames since then are new. Read whole, its older frames would look like the
        # bar starting over (the next epoch's bar).
        seen = [piece for piece in followed.unterminated if piece]  # one per stream
        for message in messages:
            text = message.text
            for piece in seen:
                if text.startswith(piece):
                    text = text[max(0, text.rfind("\r", 0, len(piece))) :]
                    seen.remove(piece)
                    break
            for found in parse_message(text, now, extra):
                # A line's own time (its CRI timestamp) is read only for lines with values:
                # most are bar frames.
                at = message.time if found.report is not EMPTY else None
                if followed.acc.feed(found, now, at):
                    self.ingestor.matched(found.parser)
                    matched = True
        return self._unterminated(followed, now) or matched

    def _unterminated(self, followed: _Followed, now: float) -> bool:
        """Read the newest bar frame of a line still being written (tqdm draws frames with
        carriage returns and ends the line only when the bar closes): the step it shows is
        current now, not when the line ends. The line's final form is read when it ends."""
        pending = followed.cri.peek()
        raw = followed.tail.unterminated.decode("utf-8", "replace")
        # A CRI line caught half written is not a message yet: its P chunks are (peek).
        if not pending and raw and parse_cri(raw) is None:
            pending = [raw]
        before, followed.unterminated = followed.unterminated, tuple(pending)
        matched = False
        for i, part in enumerate(pending):
            start = 0
            if i < len(before) and part.startswith(before[i]):
                if len(part) == len(before[i]):
                    continue  # read at an earlier poll
                # Only the frames drawn since: the bar redraws a line that can hold 64 KiB.
                start = max(0, part.rfind("\r", 0, len(before[i])))
            found = newest_bar(part[start:], now)
            if found is not None:
                followed.acc.feed(found, now)
                matched = True
        return matched

    def _report(self, path: str, followed: _Followed) -> None:
        key, meta = self._keys[path]
        samples = followed.acc.take_samples()
        if self.ingestor.structured_recently(key):
            self.ingestor.drop(NAME, "structured_wins")
            return
        report = replace(followed.acc.report(), value_samples=samples)
        self.ingestor.accept(NAME, key, Parsed(report), meta)
