"""The state file: every run saved atomically every few seconds and at SIGTERM, restored at
start, so a restart (a crash, an upgrade, an OOM kill) loses at most one interval.

Pushgateway's ``--persistence.file`` is the model. What a run keeps across a restart is
listed in docs/reliability.md#restarts; in short everything the tracker knows: step and
plan, GPUs, deadline and budget, threshold overrides, custom metrics, loss history, best
loss, rate samples, start time, GPU-seconds and state. GPU-seconds go on from the saved
accrual time, so the time the exporter was down is counted (the job held its GPUs).

The file is ours, but it sits on a hostPath: it is opened without following symlinks, read
up to a size cap, and validated run by run with the bounds live reports meet (a step past
2^53, negative GPU-seconds or a label value with a quote is a run that does not decode). A
run that does not decode is skipped and logged; a file that does not parse is set aside
(``.corrupt``, never over an earlier one) and the exporter starts empty. A file that exists
but cannot be read (permissions) stops the start with that error: starting empty would
overwrite the runs at the next save.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import errno
import heapq
import json
import logging
import math
import os
import re
import stat
import sys
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import MISSING, Field, asdict, fields
from typing import Any, BinaryIO

from ..core.estimate import FORECASTS_KEPT
from ..core.goodput import EXPORTED_CAUSES
from ..core.model import (
    GPUS,
    MAX_GPUS,
    MAX_STEP,
    METRIC_NAME_RE,
    Clock,
    RunKey,
    RunMeta,
    clean_label,
)
from ..core.run.state import HISTORY_POINTS, NON_NEGATIVE, PACE_POINTS, SAVED, RunState
from ..core.series import Series, Triples
from ..core.stacks import STALL_CAUSES
from ..core.stall import StallRecord
from ..core.timeline import Timeline
from ..core.tracker import Tracker
from ..plumbing.stats import ExporterStats

log = logging.getLogger(__name__)

VERSION = 1
MAX_FILE_BYTES = 512 * 1024 * 1024
MAX_LINE_BYTES = 4 * 1024 * 1024  # one run; a real one is ~20 KB
# Rate samples kept per run in the file: the estimator's short window needs far fewer, and
# the file is written every few seconds.
SAVED_SAMPLES = 128

_META_STRINGS = (
    "pod_uid",
    "job_kind",
    "framework",
    "source",
    "node",
    "rank",
    "container",
    "trial",
    "experiment",
)
_META_FLOATS = (
    "gpus",
    "deadline_timestamp",
    "gpu_seconds_budget",
    "gpu_start_timestamp",
    "gpu_end_timestamp",
)


class StateError(ValueError):
    """A state file, or one run in it, that cannot be used."""


class StateUnreadable(OSError):
    """The state file exists but cannot be read (permissions, I/O): not a corrupt file to
    set aside, a setup to fix. The message names the file and the error."""


def saved_fields(cls: type[RunState] = RunState) -> tuple[Field[Any], ...]:
    """The fields of ``cls`` the state file keeps: those declared ``saved``
    (exporter.core.run.state), with the bound each is held to when read back."""
    return tuple(f for f in fields(cls) if SAVED in f.metadata)


def _restored(doc: dict[str, Any], f: Field[Any]) -> Any:
    """The saved value of field ``f``, held to its declared bound (the one live reports
    meet: model.Bound); its default when the file predates it."""
    name, bound = f.name, f.metadata[SAVED]
    if name not in doc:
        if f.default is not MISSING:
            return f.default
        if f.default_factory is not MISSING:
            return f.default_factory()
        raise StateError(f"{name}: missing")
    value = doc[name]
    if value is None and f.default is None:
        return None
    if bound.kind == "names":
        if not isinstance(value, dict) or len(value) > 256:
            raise StateError(f"{name}: not a small object")
        if not all(isinstance(k, str) and METRIC_NAME_RE.match(k) for k in value):
            raise StateError(f"{name}: a name that is not a metric name")
        return {sys.intern(str(k)): float(_number(v, name)) for k, v in value.items()}
    if not bound.holds(value):
        raise StateError(f"{name}: not a {bound.kind} within its bounds")
    return value


_KEY_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,252}\Z")


def _label(value: Any, name: str, limit: int = 253) -> str:
    """A label value as discovery and the sources make them: printable ASCII, and no quote
    or backslash (no name, node, rank or container has one)."""
    if (
        not isinstance(value, str)
        or (value and clean_label(value, limit) != value)
        or '"' in value
        or "\\" in value
    ):
        raise StateError(f"{name}: not a label value")
    return value


def encode_run(key: RunKey, run: RunState) -> dict[str, Any]:
    """One run as JSON-ready values (copies: the tracker's lock is held while this runs)."""
    doc: dict[str, Any] = {"key": list(key), "meta": asdict(run.meta)}
    for f in saved_fields(type(run)):
        value = getattr(run, f.name)
        doc[f.name] = dict(value) if isinstance(value, dict) else value
    doc["wasted"] = dict(run.wasted)
    # The stall split's counters; the stall still waiting for its cause settles as it would
    # have (a restart ends what the exporter can tell of it).
    doc["stall_split"] = dict(run.stall.split)
    doc["stall_pending"] = run.stall.pending
    doc["state"] = run.state
    doc["samples"] = _b64(run.samples.to_bytes(SAVED_SAMPLES))
    doc["pace"] = _b64(run.pace.to_bytes())
    doc["history"] = _b64(run.history.to_bytes())
    doc["timeline"] = run.timeline.to_doc()
    # The ETA band's record (estimate.Forecast): a restart keeps what the run taught it.
    doc["forecasts"] = _b64(run.forecasts.to_bytes())
    doc["pace_forecasts"] = _b64(run.pace_forecasts.to_bytes())
    # The sizes it ran at and its pace at each: the scaling it showed outlives a restart.
    doc["sizes"] = [list(s) for s in run.sizes]
    return doc


def _sizes(raw: Any, kept: int) -> deque[tuple[float, float]]:
    """The saved (size, steps per second) of a run's earlier attempts (absent in files
    written before them: none): at most ``kept``, each a size within the GPU bound and a
    positive, finite pace."""
    if not isinstance(raw, list) or len(raw) > kept:
        raise StateError("sizes: not a short list")
    out: deque[tuple[float, float]] = deque(maxlen=kept)
    for item in raw:
        if not (isinstance(item, list) and len(item) == 2):
            raise StateError("sizes: not [size, steps per second]")
        size, pace = _number(item[0], "sizes"), _number(item[1], "sizes")
        if not (GPUS.holds(size) and size > 0 and math.isfinite(pace) and 0 < pace <= 1e9):
            raise StateError("sizes: a value out of range")
        out.append((float(size), float(pace)))
    return out


def _number(value: Any, name: str, optional: bool = False, integer: bool = False) -> Any:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise StateError(f"{name}: not a number")
    if integer and not isinstance(value, int):
        raise StateError(f"{name}: not an integer")
    return value


def _gpu_seconds(value: Any, name: str) -> float:
    """GPU-seconds of one cause: a finite, non-negative number."""
    if not NON_NEGATIVE.holds(value):
        raise StateError(f"{name}: not GPU-seconds")
    return float(value)


def _b64(columns: tuple[bytes, ...]) -> list[str]:
    return [base64.b64encode(c).decode("ascii") for c in columns]


def _series(value: Any, name: str, maxlen: int, typecode: str) -> Series[Any]:
    """A series saved as two base64 columns of little-endian numbers."""
    if not (isinstance(value, list) and len(value) == 2 and all(isinstance(c, str) for c in value)):
        raise StateError(f"{name}: not two base64 columns")
    try:
        times, values = (base64.b64decode(c, validate=True) for c in value)
        return Series.from_bytes(maxlen, typecode, times, values)
    except (ValueError, binascii.Error) as e:
        raise StateError(f"{name}: {e}") from None


def _meta(doc: Any) -> RunMeta:
    if not isinstance(doc, dict):
        raise StateError("meta: not an object")
    values: dict[str, Any] = {}
    for name in _META_STRINGS:
        values[name] = _label(doc.get(name, ""), f"meta.{name}")
    for name in _META_FLOATS:
        value = _number(doc.get(name), f"meta.{name}", optional=True)
        if value is not None and (not math.isfinite(value) or value < 0):
            raise StateError(f"meta.{name}: not a finite non-negative number")
        if name == "gpus" and value is not None and value > MAX_GPUS:
            raise StateError("meta.gpus: out of range")
        values[name] = value
    alive = doc.get("alive")
    if alive is not None and not isinstance(alive, bool):
        raise StateError("meta.alive: not a boolean")
    values["alive"] = alive
    values["pod_failed"] = bool(doc.get("pod_failed", False))
    overrides = doc.get("thresholds", [])
    if not isinstance(overrides, list):
        raise StateError("meta.thresholds: not a list")
    pairs = []
    for pair in overrides:
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)):
            raise StateError("meta.thresholds: not name/value pairs")
        pairs.append((pair[0], float(_number(pair[1], "meta.thresholds"))))
    values["thresholds"] = tuple(pairs)
    return RunMeta(**values)


def decode_run(
    doc: Any, max_samples: int = 512, cls: type[RunState] = RunState
) -> tuple[RunKey, RunState]:
    """The run :func:`encode_run` wrote, as a ``cls``. Raises :class:`StateError` naming the
    bad field."""
    if not isinstance(doc, dict):
        raise StateError("run: not an object")
    key = doc.get("key")
    if not (
        isinstance(key, list)
        and len(key) == 3
        and all(isinstance(k, str) and 0 < len(k) <= 253 for k in key)
    ):
        raise StateError("key: not three names")
    if not all(_KEY_PART.match(part) for part in key):
        raise StateError("key: not three run names")
    values: dict[str, Any] = {"meta": _meta(doc.get("meta"))}
    for f in saved_fields(cls):
        values[f.name] = _restored(doc, f)
    # Added after the first state files: absent in those, which still restore.
    wasted = doc.get("wasted", {})
    if not isinstance(wasted, dict) or not set(wasted) <= set(EXPORTED_CAUSES):
        raise StateError("wasted: not GPU-seconds by cause")
    values["wasted"] = {str(k): _gpu_seconds(v, "wasted") for k, v in wasted.items()}
    split = doc.get("stall_split", {})  # absent in state files written before it
    if not isinstance(split, dict) or not set(split) <= set(STALL_CAUSES):
        raise StateError("stall_split: not GPU-seconds by stall cause")
    stall = StallRecord(
        split={str(k): _gpu_seconds(v, "stall_split") for k, v in split.items()},
        pending=_gpu_seconds(doc.get("stall_pending", 0.0), "stall_pending"),
    )
    state = doc.get("state")
    if state is not None and not isinstance(state, str):
        raise StateError("state: not a string")
    values["state"] = state
    values["samples"] = _series(doc.get("samples"), "samples", max_samples, "q")
    if any(not 0 <= step <= MAX_STEP for _, step in values["samples"]):
        raise StateError("samples: a step out of range")
    values["pace"] = _series(doc.get("pace"), "pace", PACE_POINTS, "d")
    values["history"] = _series(doc.get("history"), "history", HISTORY_POINTS, "d")
    values["forecasts"] = _forecasts(doc.get("forecasts", []))
    # Absent in files written before the mean pace: the recent pace alone until it has one.
    values["pace_forecasts"] = _forecasts(doc.get("pace_forecasts", []), "pace_forecasts")
    if "timeline" in doc:  # absent in state files written before the charts
        try:
            values["timeline"] = Timeline.from_doc(doc["timeline"])
        except ValueError as e:
            raise StateError(f"timeline: {e}") from None
    run = cls(**values)
    run.sizes = _sizes(doc.get("sizes", []), run.sizes.maxlen or 8)
    run.stall = stall
    if run.metrics:
        run.metrics_view = tuple(sorted(run.metrics.items()))
    return RunKey(*key), run


def _forecasts(raw: Any, name: str = "forecasts") -> Triples:
    """The saved forecasts (or the pace's, ``name``; absent in older files: none): three
    base64 columns (time, step, seconds per step), or the list of triples files before
    them wrote. Each is checked: a finite time, a step in range, a positive finite number
    of seconds per step."""
    if isinstance(raw, list) and len(raw) == 3 and all(isinstance(c, str) for c in raw):
        try:
            columns = [base64.b64decode(c, validate=True) for c in raw]
            record = Triples.from_bytes(FORECASTS_KEPT, *columns)
        except (ValueError, binascii.Error) as e:
            raise StateError(f"{name}: {e}") from None
        items: list[Any] = [list(f) for f in record]
    elif isinstance(raw, list) and len(raw) <= FORECASTS_KEPT:
        items = raw
    else:
        raise StateError(f"{name}: not three base64 columns")
    out = Triples(FORECASTS_KEPT)
    for item in items:
        if not (isinstance(item, list) and len(item) == 3):
            raise StateError(f"{name}: not [time, step, seconds per step]")
        t = _number(item[0], name)
        step = _number(item[1], name, integer=True)
        spp = _number(item[2], name)
        if not (math.isfinite(t) and 0 <= step <= MAX_STEP and math.isfinite(spp) and spp > 0):
            raise StateError(f"{name}: a value out of range")
        out.append((float(t), int(step), float(spp)))
    return out


def _header(saved_at: float) -> bytes:
    return json.dumps({"version": VERSION, "saved_at": saved_at}).encode() + b"\n"


def encode_lines(runs: Iterable[dict[str, Any]], saved_at: float) -> Iterator[bytes]:
    """The file as lines: a header, then one run per line (JSON Lines), so that neither
    writing nor reading ever holds the whole file. NaN and infinities are kept (a diverged
    loss is NaN) as Python's JSON writes them: this file is read only by the exporter."""
    yield _header(saved_at)
    for run in runs:
        yield json.dumps(run, separators=(",", ":")).encode() + b"\n"


def encode_file(runs: Iterable[dict[str, Any]], saved_at: float) -> bytes:
    """The whole file as bytes (tests and benchmarks)."""
    return b"".join(encode_lines(runs, saved_at))


def decode_lines(
    lines: Iterable[bytes], max_samples: int = 512, skipped: list[str] | None = None
) -> Iterator[tuple[RunKey, RunState]]:
    """The runs of a state file, one line at a time. Raises :class:`StateError` when the
    header is not ours; a run that does not decode is left out and its reason appended to
    ``skipped``."""
    it = iter(lines)
    try:
        header = json.loads(next(it))
    except (StopIteration, ValueError, RecursionError):
        raise StateError("no state file header") from None
    if not isinstance(header, dict) or header.get("version") != VERSION:
        raise StateError(f"not a version {VERSION} state file")
    for line in it:
        if not line.strip():
            continue
        try:
            yield decode_run(json.loads(line), max_samples)
        except (StateError, TypeError, ValueError, OverflowError, RecursionError) as e:
            if skipped is not None:
                skipped.append(str(e))


def decode_file(data: bytes, max_samples: int = 512) -> tuple[list[tuple[RunKey, RunState]], int]:
    """The runs in a whole file and how many were skipped (tests and benchmarks)."""
    skipped: list[str] = []
    runs = list(decode_lines(data.splitlines(), max_samples, skipped))
    return runs, len(skipped)


def open_file(path: str) -> BinaryIO | None:
    """The state file opened for reading, or None when there is none. Never follows a
    symlink; refuses anything but a regular file of at most :data:`MAX_FILE_BYTES`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno == errno.ELOOP:  # a symlink where our file should be: not ours to read
            raise StateError(f"{path} is a symlink") from None
        raise StateUnreadable(e.errno, f"cannot read the state file {path}: {e.strerror}") from None
    f = os.fdopen(fd, "rb")
    st = os.fstat(f.fileno())
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES:
        f.close()
        raise StateError(f"{path} is not a regular file of at most {MAX_FILE_BYTES} bytes")
    return f


def read_file(path: str) -> bytes | None:
    """The whole state file (see :func:`open_file`), or None when there is none."""
    f = open_file(path)
    if f is None:
        return None
    with f:
        return f.read(MAX_FILE_BYTES + 1)


def _lines(f: BinaryIO, skipped: list[str]) -> Iterator[bytes]:
    """The file's lines, each at most :data:`MAX_LINE_BYTES`. A run's line past that is
    read through (never held whole), left out and its reason appended to ``skipped``, as a
    run that does not decode is: one hostile run costs that run, not the file. A header
    past it is no header of ours (:class:`StateError`)."""
    header = True
    while line := f.readline(MAX_LINE_BYTES + 1):
        if len(line) > MAX_LINE_BYTES:
            if header:
                raise StateError(f"a header line longer than {MAX_LINE_BYTES} bytes")
            while not line.endswith(b"\n") and (line := f.readline(MAX_LINE_BYTES + 1)):
                pass
            skipped.append(f"a run's line longer than {MAX_LINE_BYTES} bytes")
            continue
        header = False
        yield line


def write_atomically(path: str, chunks: Iterable[bytes]) -> int:
    """Replace ``path`` with ``chunks``: a reader (or a crash) sees the old file or the new
    one, never a mix. The temporary file is created fresh, never through a symlink.
    Returns the bytes written."""
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".{os.path.basename(path)}.tmp")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    size = 0
    try:
        with os.fdopen(fd, "wb", buffering=1 << 20) as f:
            for chunk in chunks:
                f.write(chunk)
                size += len(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dfd)  # the rename itself survives a power cut
    finally:
        os.close(dfd)
    return size


class StateKeeper:
    """Restores the tracker from ``path`` at start and saves it every ``interval`` seconds
    (when something changed) and once more at :meth:`stop`."""

    def __init__(
        self,
        path: str,
        tracker: Tracker,
        clock: Clock,
        interval: float,
        stats: ExporterStats | None = None,
    ) -> None:
        self.path = path
        self.stats = stats
        if stats is not None:
            stats.state_file_used()
        self.tracker = tracker
        self.clock = clock
        self.interval = interval
        self._saved_changes = -1
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()  # one save at a time (the loop and stop)
        self.last_error = ""
        self.last_bytes = 0
        self.saves = 0

    def restore(self) -> int:
        """Load the file into the tracker; returns how many runs were restored. Raises
        :class:`StateUnreadable` when the file exists but cannot be read.

        Only the ``max_runs`` most recent runs are held while the file is read (a heap by
        last report): a file of 30,000 runs costs the memory of the cap, not of the file.
        """
        skipped: list[str] = []
        cap = self.tracker.config.max_runs
        kept: list[tuple[float, int, RunKey, RunState]] = []  # a min-heap by last report
        read = 0
        try:
            f = open_file(self.path)
            if f is None:
                return 0
            with f:
                max_samples = self.tracker.config.estimator.max_samples
                for key, run in decode_lines(_lines(f, skipped), max_samples, skipped):
                    read += 1
                    item = (run.last_report, read, key, run)
                    if len(kept) < cap:
                        heapq.heappush(kept, item)
                    elif item > kept[0]:
                        heapq.heapreplace(kept, item)
        except StateError as e:
            self._set_aside(str(e))
            return 0
        except StateUnreadable:
            raise
        except OSError as e:
            raise StateUnreadable(
                e.errno, f"cannot read the state file {self.path}: {e.strerror or e}"
            ) from None
        added = self.tracker.restore((key, run) for _, _, key, run in kept)
        log.info(
            "restored %d runs from %s (%d skipped, %d over the run cap or known)",
            added,
            self.path,
            len(skipped),
            read - added,
        )
        for reason in skipped[:3]:
            log.warning("state file: skipped a run (%s)", reason)
        return added

    def _set_aside(self, reason: str) -> None:
        """Move an unusable file out of the way, to the first free ``.corrupt`` name: a
        second bad start must not overwrite the first one's evidence."""
        log.error("state file %s unusable (%s); starting with no runs", self.path, reason)
        with contextlib.suppress(OSError):
            if os.path.isfile(self.path) and not os.path.islink(self.path):
                for i in range(100):
                    target = self.path + (".corrupt" if i == 0 else f".corrupt.{i}")
                    if not os.path.lexists(target):
                        os.rename(self.path, target)
                        break

    def save(self, force: bool = False) -> bool:
        """Write the file if anything changed since the last write; True if written."""
        with self._lock:
            changes = self.tracker.changes
            if changes == self._saved_changes and not force:
                return False
            now = self.clock()
            try:
                self.last_bytes = write_atomically(
                    self.path, encode_lines(self.tracker.save(now, encode_run), now)
                )
            except OSError as e:
                if self.last_error != str(e):
                    log.error("cannot write the state file %s: %s", self.path, e)
                self.last_error = str(e)
                if self.stats is not None:
                    self.stats.state_saved(False, now)
                return False
            if self.stats is not None:
                self.stats.state_saved(True, now)
            self.last_error = ""
            self._saved_changes = changes
            self.saves += 1
            return True

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="state-file", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.save()
            except Exception:  # a bug here must not stop the saving for good
                log.exception("saving the state file failed")

    def stop(self) -> None:
        """Stop the loop and save one last time (SIGTERM comes here)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        self.save()


__all__ = [
    "StateError",
    "StateKeeper",
    "StateUnreadable",
    "decode_file",
    "decode_lines",
    "decode_run",
    "encode_file",
    "encode_lines",
    "encode_run",
    "open_file",
    "read_file",
    "write_atomically",
]
