"""A run's whole life in a bounded table: what the status page's charts draw without
Prometheus.

Why not the loss ``history`` beside it: that one keeps the newest 120 losses, minutes of a
fast run. A chart of a run's life needs its first hour as much as its last minute, in memory
that does not grow with the run. So a :class:`Timeline` keeps at most ``capacity`` rows a
run, at least ``interval`` seconds apart; when it is full it drops every other row (the
newest always stays) and doubles the interval. A run of any length is then drawn from 48 to
96 rows spread over its whole life, at ~7 KB a run (9 columns of 8 bytes, 96 rows).

Rare events are not left to that sampling: an evaluation's loss goes into its own thinned
table (:class:`Thinned`, every one kept until it is full), and every change of state into a
list of transitions, so a stall of two minutes in a day-long run still shows in the band.

Pure data structures: times come from the caller, nothing reads a clock.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import math
import sys
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# What each timeline row holds, in order: the charts' columns (exporter/views/charts.py).
COLUMNS: tuple[str, ...] = (
    "time",
    "attempt",
    "step",
    "loss",
    "progress",
    "eta_seconds",
    "eta_lower_seconds",
    "eta_upper_seconds",
    "steps_per_second",
    "typical_steps_per_second",
)
EVAL_COLUMNS: tuple[str, ...] = ("time", "step", "eval_loss")

TIMELINE_ROWS = 96
TIMELINE_INTERVAL = 5.0  # seconds between rows while the run is young
EVAL_ROWS = 64
TRANSITIONS = 48

NAN = math.nan


def _number(value: float | int | None) -> float:
    return NAN if value is None else float(value)


class Thinned:
    """Rows of floats, oldest first, at most ``capacity``. When full, every other row goes
    (the newest stays) and the minimum spacing between rows doubles, so the rows always span
    the table's whole life.

    The rows live in one flat array allocated whole at the first row and never resized:
    columns that grew row by row were reallocated ~10 times each, and among a tracker's
    other allocations that churn left ~30 KiB of RSS a run for ~8 KiB of data."""

    __slots__ = ("_data", "_n", "capacity", "interval", "next_at", "width")

    def __init__(self, width: int, capacity: int, interval: float = 0.0) -> None:
        self.width = width
        self.capacity = capacity
        self.interval = interval
        self.next_at = -math.inf
        self._data: array[float] | None = None  # (capacity + 1) rows once there is one
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def due(self, t: float) -> bool:
        """Whether a row at time ``t`` would be kept (the spacing has passed)."""
        return t >= self.next_at

    def add(self, row: Sequence[float]) -> None:
        """Append a row (its first value is its time); a row older than the newest is
        ignored (a caller with an older clock), so the times never go backwards."""
        w = self.width
        if len(row) != w:
            raise ValueError(f"a row of {len(row)} values, expected {w}")
        t = row[0]
        data = self._data
        if data is None:
            data = self._data = array("d", bytes(8 * w * (self.capacity + 1)))
        elif self._n and t < data[(self._n - 1) * w]:
            return
        data[self._n * w : (self._n + 1) * w] = array("d", row)
        self._n += 1
        self.next_at = t + self.interval
        if self._n > self.capacity:
            self._thin()

    def _thin(self) -> None:
        data, w, n = self._data, self.width, self._n
        assert data is not None
        # Keep rows n-1, n-3, ...: the newest always, every other one before it.
        kept = 0
        for src in range((n - 1) % 2, n, 2):
            data[kept * w : (kept + 1) * w] = data[src * w : (src + 1) * w]
            kept += 1
        self._n = kept
        self.interval = self.interval * 2 if self.interval else 0.0
        self.next_at = data[(kept - 1) * w] + self.interval

    def columns(self) -> tuple[list[float], ...]:
        """Every column as a list (a copy)."""
        data, w, n = self._data, self.width, self._n
        if data is None:
            return tuple([] for _ in range(w))
        return tuple(data[c : n * w : w].tolist() for c in range(w))

    def clear(self) -> None:
        """Forget every row; the spacing stays as it was."""
        self._n = 0
        self.next_at = -math.inf

    def nbytes(self) -> int:
        """What the rows' buffer takes (0 before the first row)."""
        return 0 if self._data is None else self._data.buffer_info()[1] * 8

    # -- the state file (exporter/daemon/persist.py) -------------------------------------------

    def to_bytes(self) -> tuple[bytes, ...]:
        """Each column as little-endian doubles."""
        out = []
        for col in self.columns():
            copy = array("d", col)
            if sys.byteorder != "little":
                copy.byteswap()
            out.append(copy.tobytes())
        return tuple(out)

    def load(self, columns: Sequence[bytes], interval: float) -> None:
        """Replace the rows with what :meth:`to_bytes` wrote. Raises ValueError unless
        every column holds the same number of whole doubles and the times are finite and
        in order; on error nothing changes."""
        if len(columns) != self.width:
            raise ValueError(f"{len(columns)} columns, expected {self.width}")
        loaded = []
        for data in columns:
            col = array("d")
            col.frombytes(data)
            if sys.byteorder != "little":
                col.byteswap()
            loaded.append(col[-self.capacity :])
        if len({len(c) for c in loaded}) > 1:
            raise ValueError("columns of different lengths")
        times = loaded[0]
        if not all(math.isfinite(t) for t in times) or any(
            b < a for a, b in itertools.pairwise(times)
        ):
            raise ValueError("times not finite or not in order")
        if not (math.isfinite(interval) and interval >= 0):
            raise ValueError("interval not finite")
        self.clear()
        self._data = None
        for row in zip(*loaded, strict=True):
            self.add(row)
        self.interval = interval
        self.next_at = times[-1] + interval if len(times) else -math.inf


@dataclass(frozen=True, slots=True)
class TimelineView:
    """A copy of a :class:`Timeline`, taken under the tracker's lock and read outside it:
    ``rows`` and ``evals`` by column (:data:`COLUMNS`, :data:`EVAL_COLUMNS`)."""

    rows: tuple[list[float], ...]
    evals: tuple[list[float], ...]
    states: tuple[tuple[float, str], ...]


class Timeline:
    """One run's life: sampled rows (:data:`COLUMNS`), evaluations and state changes."""

    __slots__ = ("evals", "rows", "states")

    def __init__(self) -> None:
        self.rows = Thinned(len(COLUMNS), TIMELINE_ROWS, TIMELINE_INTERVAL)
        self.evals = Thinned(len(EVAL_COLUMNS), EVAL_ROWS)
        # (time, state) at each change of state, the newest TRANSITIONS.
        self.states: list[tuple[float, str]] = []

    def due(self, t: float) -> bool:
        """Whether a sample at ``t`` would be kept: the caller computes one only then."""
        return self.rows.due(t)

    def sample(self, t: float, values: Mapping[str, float | int | None]) -> None:
        """Keep a row of ``values`` (by :data:`COLUMNS` name, missing ones NaN) if due."""
        if self.rows.due(t):
            self.rows.add([t, *(_number(values.get(c)) for c in COLUMNS[1:])])

    def evaluated(self, t: float, step: int | None, eval_loss: float) -> None:
        """An evaluation's loss: every one is kept until the table thins."""
        self.evals.add((t, _number(step), eval_loss))

    def state(self, t: float, state: str) -> None:
        """The run's state at ``t``: kept when it differs from the last one."""
        states = self.states
        if states and (states[-1][1] == state or t < states[-1][0]):
            return
        states.append((t, state))
        if len(states) > TRANSITIONS:
            del states[0]

    def nbytes(self) -> int:
        """What the timeline holds: its two tables' buffers and its changes of state (a
        tuple of a float and a short string, ~64 bytes each)."""
        return self.rows.nbytes() + self.evals.nbytes() + 64 * len(self.states)

    def view(self) -> TimelineView:
        """A copy to read outside the tracker's lock."""
        return TimelineView(self.rows.columns(), self.evals.columns(), tuple(self.states))

    # -- the state file (exporter/daemon/persist.py) -------------------------------------------

    def to_doc(self) -> dict[str, Any]:
        """JSON-ready: each table's columns as base64 little-endian doubles."""
        return {
            "rows": [base64.b64encode(c).decode("ascii") for c in self.rows.to_bytes()],
            "interval": self.rows.interval,
            "evals": [base64.b64encode(c).decode("ascii") for c in self.evals.to_bytes()],
            "states": [[t, state] for t, state in self.states],
        }

    @classmethod
    def from_doc(cls, doc: Any) -> Timeline:
        """The timeline :meth:`to_doc` wrote. Raises ValueError on anything else."""
        if not isinstance(doc, dict):
            raise ValueError("not an object")
        out = cls()
        try:
            out.rows.load(_columns(doc.get("rows")), _float(doc.get("interval")))
            out.evals.load(_columns(doc.get("evals")), 0.0)
        except binascii.Error as e:
            raise ValueError(str(e)) from None
        states = doc.get("states")
        if not isinstance(states, list) or len(states) > TRANSITIONS:
            raise ValueError("states: not a short list")
        for item in states:
            if not (
                isinstance(item, list)
                and len(item) == 2
                and isinstance(item[1], str)
                and 0 < len(item[1]) <= MAX_STATE_NAME
            ):
                raise ValueError("states: not [time, state]")
            t = _float(item[0])
            if out.states and t < out.states[-1][0]:
                raise ValueError("states: not in order")
            out.states.append((t, item[1]))
        return out


MAX_STATE_NAME = 32


def _float(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError("not a finite number")
    return float(value)


def _columns(value: Any) -> list[bytes]:
    if not (isinstance(value, list) and all(isinstance(c, str) for c in value)):
        raise ValueError("not base64 columns")
    return [base64.b64decode(c, validate=True) for c in value]
