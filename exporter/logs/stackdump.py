"""Stacks that processes already print, read from their logs with no code change.

Three shapes, as CPython and PyTorch print them:

* ``faulthandler`` dumps (``faulthandler.dump_traceback_later`` as a watchdog, or
  ``faulthandler.register(signal.SIGUSR1)``): ``Thread 0x... (most recent call first):``
  then ``  File "x.py", line 41 in main`` lines, innermost first, one block per thread;
* Python tracebacks (``Traceback (most recent call last):``, outermost first, each frame
  followed by its source line): a rank that died and left the others waiting for it;
* PyTorch's NCCL watchdog line, ``[Rank 1] Watchdog caught collective operation timeout:
  WorkNCCL(SeqNum=808, OpType=ALLREDUCE, ...)``: the collective and its sequence number,
  with no stack.

Launchers that prefix each line with its rank (``torchrun --tee``: ``[rank1]:`` or
``[default1]:``) name the rank; otherwise it is the pod's. :class:`StackDumpReader` is fed
one log message at a time and returns what completed; pure apart from its own state.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from ..core.stacks import (
    FROM_FAULTHANDLER,
    FROM_TRACEBACK,
    FROM_WATCHDOG,
    MAX_FRAMES,
    MAX_TEXT,
    MAX_THREADS,
    Collective,
    Frame,
    RankStacks,
    ThreadStack,
)

_PREFIX = re.compile(r"^\[(?:rank|default)(\d{1,7})\]:")
_FH_THREAD = re.compile(
    r"^(?:Current thread|Thread) (0x[0-9a-fA-F]+)(?: \[(.{0,64}?)\])?"
    r" \(most recent call first\):\s*$"
)
_FH_FRAME = re.compile(r'^\s+File "(.{1,1024}?)", line (\d{1,9}) in (.{1,256})$')
_TB_START = "Traceback (most recent call last):"
_TB_FRAME = re.compile(r'^\s+File "(.{1,1024}?)", line (\d{1,9}), in (.{1,256})$')
_TB_MARKS = re.compile(r"^\s*[\^~\s]+$")  # Python 3.11+'s ^^^^ under the failing expression
_WATCHDOG = re.compile(
    r"\[(?:PG [^\]]{0,96}?)?Rank (\d{1,7})\] Watchdog caught collective operation timeout: "
    r"WorkNCCL\(SeqNum=(\d{1,12}), OpType=([A-Z_]{1,32})"
)
# c10d's OpType names (ProcessGroupNCCL's opTypeToString) as torch.distributed's API calls them.
OP_TYPES: dict[str, str] = {
    "BROADCAST": "broadcast",
    "ALLREDUCE": "all_reduce",
    "ALLREDUCE_COALESCED": "all_reduce_coalesced",
    "REDUCE": "reduce",
    "ALLGATHER": "all_gather",
    "_ALLGATHER_BASE": "all_gather_into_tensor",
    "ALLGATHER_COALESCED": "all_gather_coalesced",
    "GATHER": "gather",
    "SCATTER": "scatter",
    "REDUCE_SCATTER": "reduce_scatter",
    "_REDUCE_SCATTER_BASE": "reduce_scatter_tensor",
    "ALLTOALL_BASE": "all_to_all_single",
    "ALLTOALL": "all_to_all",
    "SEND": "send",
    "RECV": "recv",
    "RECVANYSOURCE": "recv",
    "BARRIER": "barrier",
    "COALESCED": "coalesced",
}
MAX_LINES = MAX_THREADS * (MAX_FRAMES + 2)  # one dump's lines; more is not a dump
_STARTS = ("Thread 0x", "Current thread 0x", _TB_START, "[rank", "[default")
_WATCHDOG_WORDS = "Watchdog caught collective operation timeout"


@dataclass
class _Dump:
    """A dump being read: its kind, threads so far, and the thread being read."""

    kind: str
    taken: float
    threads: list[ThreadStack] = field(default_factory=list)
    name: str = ""
    frames: list[Frame] = field(default_factory=list)
    lines: int = 0
    grew: bool = True  # got a line since the last end_of_batch

    def close_thread(self) -> None:
        if self.kind == FROM_FAULTHANDLER:
            self.frames.reverse()  # faulthandler prints the innermost first
        if self.frames and len(self.threads) < MAX_THREADS:
            self.threads.append(ThreadStack(self.name, tuple(self.frames[-MAX_FRAMES:])))
        self.frames = []

    def finish(self, rank: str) -> RankStacks | None:
        self.close_thread()
        if not self.threads:
            return None
        return RankStacks(
            rank=rank, taken=self.taken, source=self.kind, threads=tuple(self.threads)
        )


class StackDumpReader:
    """Reads one log's stack dumps; ``feed`` each message, ``end_of_batch`` after a poll."""

    def __init__(self, rank: str = "") -> None:
        self.rank = rank  # the pod's rank, for lines that do not name one
        self._open: dict[str, _Dump] = {}  # per rank prefix ("" for none)

    def feed(self, text: str, when: Callable[[], float]) -> list[RankStacks]:
        """The stacks completed by this message (a line written at ``when()``, Unix time:
        read only for the lines that start something)."""
        if not self._open and not text.startswith(_STARTS) and _WATCHDOG_WORDS not in text:
            return []  # most lines: nothing to do, and no regex over a 64 KiB bar line
        prefix = ""
        m = _PREFIX.match(text)
        if m:
            prefix, text = m.group(1), text[m.end() :]
        text = text.rstrip("\r\n")
        out: list[RankStacks] = []
        if _WATCHDOG_WORDS in text and (w := _WATCHDOG.search(text)) is not None:
            op = OP_TYPES.get(w.group(3), w.group(3).lstrip("_").lower())
            out.append(
                RankStacks(
                    rank=w.group(1),
                    taken=when(),
                    source=FROM_WATCHDOG,
                    collective=Collective(op=op, seq=int(w.group(2))),
                )
            )
            return out
        dump = self._open.get(prefix)
        header = _FH_THREAD.match(text)
        if text.startswith(_TB_START) or header is not None:
            kind = FROM_FAULTHANDLER if header else FROM_TRACEBACK
            if dump is not None and dump.kind == kind == FROM_FAULTHANDLER:
                dump.close_thread()  # the next thread of the same dump
            else:
                # A new dump (or a traceback chained to the one before: the last one wins).
                if dump is not None and dump.kind == FROM_FAULTHANDLER:
                    done = dump.finish(prefix or self.rank)
                    if done is not None:
                        out.append(done)
                dump = self._open[prefix] = _Dump(kind=kind, taken=when())
            dump.name = (header.group(2) or "") if header else "MainThread"
            dump.grew = True
            return out
        if dump is None:
            return out
        dump.lines += 1
        dump.grew = True
        frame = (_FH_FRAME if dump.kind == FROM_FAULTHANDLER else _TB_FRAME).match(text)
        if frame is not None:
            dump.frames.append(
                Frame(
                    file=frame.group(1)[:MAX_TEXT],
                    line=int(frame.group(2)),
                    function=frame.group(3).strip()[:MAX_TEXT],
                )
            )
        elif dump.kind == FROM_TRACEBACK and dump.frames and text.startswith("    "):
            if not _TB_MARKS.match(text) and not dump.frames[-1].code:
                last = dump.frames[-1]
                dump.frames[-1] = Frame(
                    last.file, last.line, last.function, text.strip()[:MAX_TEXT]
                )
        elif dump.kind == FROM_FAULTHANDLER and (
            not text.strip() or text.strip() in ("...", "<no Python frame>")
        ):
            pass  # a blank line between threads, or a truncated stack
        else:
            # The first line that is not part of the dump ends it (a traceback's exception).
            done = self._close(prefix)
            if done is not None:
                out.append(done)
            return out
        if dump.lines > MAX_LINES:
            done = self._close(prefix)
            if done is not None:
                out.append(done)
        return out

    def end_of_batch(self) -> list[RankStacks]:
        """Dumps that got no line in this batch are complete: faulthandler writes a dump at
        once, so one poll with nothing more means it ended (with no line after it, as a
        hung process leaves it)."""
        out = []
        for prefix, dump in list(self._open.items()):
            if dump.grew:
                dump.grew = False
                continue
            done = self._close(prefix)
            if done is not None:
                out.append(done)
        return out

    def _close(self, prefix: str) -> RankStacks | None:
        dump = self._open.pop(prefix)
        return dump.finish(prefix or self.rank)
