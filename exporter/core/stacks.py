"""Why a stalled run is stuck: each rank's stacks, and the cause read from them.

Stacks come from the process (the reporter's background thread posts every Python thread's
stack when the exporter asks, exporter/sources/stack_push.py) or from its log (``faulthandler``
dumps, tracebacks and PyTorch's NCCL watchdog lines, exporter/logs/stackdump.py). Either way
they become a :class:`RankStacks`, and :func:`diagnose` reads one cause from it with the
rules of :data:`RULES`, one table, first match wins: what a person on call would conclude
from the same stack. One place per side: the reporter captures them, exporter.core.wire parses
its body, this module diagnoses, exporter.views.stackviews says it for people.

Pure: no I/O, no clock; every string is bounded where it is parsed.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .model import clean_label

# The causes, in the order the rules try them. ``unknown``: stacks, but no rule matched
# (a ``time.sleep``, a lock, a loop in the training code itself: the frame says where).
CHECKPOINT = "checkpoint"
DATA = "data"
COLLECTIVE = "collective"
DEVICE = "device"
UNKNOWN = "unknown"
CAUSES: tuple[str, ...] = (CHECKPOINT, DATA, COLLECTIVE, DEVICE, UNKNOWN)
# Stalled time before any stacks explained it, in the goodput split (never a rank's cause).
UNEXPLAINED = "unexplained"
STALL_CAUSES: tuple[str, ...] = (*CAUSES, UNEXPLAINED)

# Where stacks came from.
FROM_REPORTER = "reporter"
FROM_FAULTHANDLER = "faulthandler"
FROM_TRACEBACK = "traceback"
FROM_WATCHDOG = "watchdog"
SOURCES: tuple[str, ...] = (FROM_REPORTER, FROM_FAULTHANDLER, FROM_TRACEBACK, FROM_WATCHDOG)

# Bounds on what one rank's stacks may hold, wherever they come from.
MAX_THREADS = 32
MAX_FRAMES = 64  # per thread, the innermost kept
MAX_TEXT = 256  # a file name, function or source line
MAX_RANK = 1 << 20
MAX_RANKS = 64  # per run: the newest stacks of this many ranks are kept
# All runs' stacks together, as estimated by stacks_bytes: beyond it the oldest held go
# first (14 runs x 256 ranks x 64 KiB bodies took the exporter from 30 to 313 MiB, #56 F3).
STACKS_BUDGET_BYTES = 32 * 1024 * 1024
MAX_LABEL = 120  # the frame label on training_stall_info
MAX_OP = 32


@dataclass(frozen=True, slots=True)
class Frame:
    """One frame: where, never what (no local values)."""

    file: str
    line: int
    function: str
    code: str = ""  # the source line, stripped, where the reporter could read it

    def where(self) -> str:
        """``train.py:41 in main``: the file's base name (a path says more about the image
        than the bug, and would make label values long)."""
        return (
            f"{posixpath.basename(self.file.replace(chr(92), '/'))}:{self.line} in {self.function}"
        )


@dataclass(frozen=True, slots=True)
class ThreadStack:
    """One thread's frames, outermost first (as a traceback prints them)."""

    name: str
    frames: tuple[Frame, ...]


@dataclass(frozen=True, slots=True)
class Collective:
    """The collective a rank is in, as PyTorch's watchdog names it."""

    op: str  # all_reduce, barrier, ... (lower case, leading underscores dropped); "" for none
    seq: int | None = None  # the process group's sequence number of the operation
    # The last collective this rank finished (PyTorch's Flight Recorder): a rank that blocks
    # the others finished one fewer than those waiting in the next.
    completed: int | None = None


@dataclass(frozen=True, slots=True)
class RankStacks:
    """What one rank of a run was doing at ``taken`` (Unix seconds)."""

    rank: str
    taken: float
    source: str
    threads: tuple[ThreadStack, ...] = ()
    collective: Collective | None = None


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """One rank's cause, and where it is: what ``training_stall_info`` carries."""

    rank: str
    cause: str
    op: str  # the collective, for cause collective ("" otherwise)
    seq: int | None
    frame: str  # the innermost frame of the training code itself (Frame.where), or ""
    code: str  # that frame's source line, if known
    call: str  # the innermost frame of all (where the thread actually waits), or ""
    source: str
    taken: float
    completed: int | None = None  # the last collective it finished (Flight Recorder), if known


# -- the rules ----------------------------------------------------------------------------


def stacks_bytes(stacks: RankStacks) -> int:
    """What ``stacks`` costs in memory, estimated from CPython's object sizes (a slotted
    frame and its three strings ~250 bytes plus their text): the unit of the stacks
    budget."""
    size = 200 + len(stacks.rank)
    for thread in stacks.threads:
        size += 120 + len(thread.name)
        for f in thread.frames:
            size += 250 + len(f.file) + len(f.function) + len(f.code)
    return size


@dataclass(frozen=True, slots=True)
class CauseRule:
    """A frame matches when its path contains one of ``paths`` or its function is one of
    ``functions``; with ``both``, it needs one of each."""

    cause: str
    why: str  # for docs/runbook.md and the tests
    paths: tuple[str, ...] = ()
    functions: frozenset[str] = frozenset()
    both: bool = False

    def matches(self, frame: Frame) -> bool:
        path = frame.file.replace("\\", "/")
        in_path = any(p in path for p in self.paths)
        named = frame.function in self.functions
        return (in_path and named) if self.both else (in_path or named)


# First rule that matches any frame of the training thread decides, in this order: a save
# that gathers state through a collective is a checkpoint, a DataLoader that waits on a
# worker is data whatever the collective after it would do.
RULES: tuple[CauseRule, ...] = (
    CauseRule(
        CHECKPOINT,
        "saving: torch.save, safetensors, torch.distributed.checkpoint, a framework's save",
        paths=("torch/serialization.py", "safetensors/", "torch/distributed/checkpoint/"),
        functions=frozenset(
            {
                "save_checkpoint",
                "_save_checkpoint",
                "save_state",
                "save_model",
                "_save",
                "save_pretrained",
            }
        ),
    ),
    CauseRule(
        DATA,
        "waiting for a batch: a DataLoader (and its workers), a datasets or webdataset reader",
        paths=("torch/utils/data/", "datasets/iterable_dataset.py", "webdataset/"),
    ),
    CauseRule(
        COLLECTIVE,
        "in a torch.distributed collective or barrier (or DeepSpeed's, or the watchdog's)",
        paths=("torch/distributed/distributed_c10d.py", "deepspeed/comm/"),
    ),
    CauseRule(
        DEVICE,
        "synchronising with the GPU: torch.cuda.synchronize, a stream or event wait",
        paths=("torch/cuda/",),
        functions=frozenset({"synchronize", "wait_stream", "wait_event"}),
        both=True,
    ),
)

# Frames from these places are libraries, not the training code the frame label names.
LIBRARY_PATHS: tuple[str, ...] = (
    "site-packages/",
    "dist-packages/",
    "/lib/python3",
    "<frozen ",
)


def _is_library(frame: Frame) -> bool:
    path = frame.file.replace("\\", "/")
    return any(p in path for p in LIBRARY_PATHS)


def training_thread(threads: Sequence[ThreadStack]) -> ThreadStack | None:
    """The thread that trains: ``MainThread`` where threads are named (the reporter),
    else the one that runs the script itself (its outermost frame is ``<module>``; a
    faulthandler dump names no thread), else the last (faulthandler lists the main thread
    last)."""
    if not threads:
        return None
    for t in threads:
        if t.name == "MainThread":
            return t
    for t in reversed(threads):
        if t.frames and t.frames[0].function == "<module>":
            return t
    return threads[-1]


def collective_op(function: str) -> str:
    """A collective's name as PyTorch's Python API spells it: ``all_reduce``."""
    return _label(function.lstrip("_").lower(), MAX_OP)


def _label(text: str, limit: int) -> str:
    # The frame, call and op are label values of training_stall_info: a stack is the
    # pod's to write, and a function or file name may hold NUL, ESC or CR.
    return clean_label(text, limit) or ""


def diagnose(stacks: RankStacks) -> Diagnosis:
    """One rank's cause and frame: the rules over its training thread, innermost frames
    first within each rule; a watchdog line with no stack is a collective by itself."""
    thread = training_thread(stacks.threads)
    frames = thread.frames if thread else ()
    cause, op, seq = UNKNOWN, "", None
    for rule in RULES:
        hit = next((f for f in reversed(frames) if rule.matches(f)), None)
        if hit is not None:
            cause = rule.cause
            if cause == COLLECTIVE:
                op = collective_op(hit.function)
            break
    recorded = stacks.collective
    if recorded is not None and recorded.op:
        if not frames:  # a watchdog line, or a recorder with no stack: the collective is all
            cause, op, seq = COLLECTIVE, _label(recorded.op, MAX_OP), recorded.seq
        elif cause == COLLECTIVE:  # the stack says which call; the recorder, which one
            op, seq = op or _label(recorded.op, MAX_OP), recorded.seq
    own = next((f for f in reversed(frames) if not _is_library(f)), None)
    return Diagnosis(
        rank=stacks.rank,
        cause=cause,
        op=op,
        seq=seq,
        frame=_label(own.where(), MAX_LABEL) if own else "",
        code=own.code if own else "",
        call=_label(frames[-1].where(), MAX_LABEL) if frames else "",
        source=stacks.source,
        taken=stacks.taken,
        completed=recorded.completed if recorded is not None else None,
    )


def job_cause(diagnoses: Iterable[Diagnosis]) -> str | None:
    """The cause of a whole stall: the rank that blocks the others (one not in a
    collective, a known cause before ``unknown``), else ``collective`` when every rank
    waits in one; None with no diagnosis."""
    causes = [d.cause for d in diagnoses]
    if not causes:
        return None
    for cause in (CHECKPOINT, DATA, DEVICE, UNKNOWN):
        if cause in causes:
            return cause
    return COLLECTIVE
