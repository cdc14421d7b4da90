"""A bounded series of (time, value) points, stored in two flat arrays.

Why not a list or deque of tuples: a run keeps up to 512 rate samples, 256 pace points and
120 loss points, and as tuples those cost ~95 KB a run (98 MiB for 1,000 long runs, more
than the DaemonSet's whole memory limit at a few thousand). Two ``array`` columns hold the
same points in 16 bytes each; tuples are made only while something iterates.
"""

from __future__ import annotations

import math
import sys
from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import Generic, TypeVar, overload

V = TypeVar("V", int, float)


class Series(Sequence[tuple[float, V]], Generic[V]):
    """The newest ``maxlen`` points, oldest first. ``typecode`` is the value column's
    ``array`` type: ``"d"`` for floats, ``"q"`` for steps."""

    __slots__ = ("_t", "_v", "maxlen")

    def __init__(self, maxlen: int, typecode: str = "d", points: Iterable[tuple[float, V]] = ()):
        self.maxlen = maxlen
        self._t = array("d")
        self._v: array[V] = array(typecode)
        for t, v in points:
            self.append(t, v)

    def append(self, t: float, v: V) -> None:
        """Add the newest point; the oldest goes once there are ``maxlen``. A value the
        column cannot hold (a step of 2^63) raises and adds nothing: the two columns never
        get out of step."""
        self._v.append(v)
        try:
            self._t.append(t)
        except BaseException:
            self._v.pop()
            raise
        if len(self._t) > self.maxlen:
            del self._t[0]
            del self._v[0]

    def replace_last(self, t: float, v: V) -> None:
        """Make ``(t, v)`` the newest point in place of the newest one (there must be one);
        on a value the column cannot hold, nothing changes."""
        old = self._v[-1]
        self._v[-1] = v
        try:
            self._t[-1] = t
        except BaseException:
            self._v[-1] = old
            raise

    def clear(self) -> None:
        """Forget every point."""
        del self._t[:]
        del self._v[:]

    def reset(self, t: float, v: V) -> None:
        """Forget every point and start again from this one."""
        del self._t[:]
        del self._v[:]
        self.append(t, v)

    def __len__(self) -> int:
        return len(self._t)

    def __iter__(self) -> Iterator[tuple[float, V]]:
        return zip(self._t, self._v, strict=True)

    @overload
    def __getitem__(self, index: int) -> tuple[float, V]: ...

    @overload
    def __getitem__(self, index: slice) -> list[tuple[float, V]]: ...

    def __getitem__(self, index: int | slice) -> tuple[float, V] | list[tuple[float, V]]:
        if isinstance(index, slice):
            return list(zip(self._t[index], self._v[index], strict=True))
        return self._t[index], self._v[index]

    def to_bytes(self, last: int | None = None) -> tuple[bytes, bytes]:
        """The newest ``last`` (default all) times and values as little-endian bytes: the
        state file stores series so, at memcpy speed instead of one float repr per point."""
        start = 0 if last is None else max(0, len(self._t) - last)
        t, v = self._t[start:], self._v[start:]
        if sys.byteorder != "little":
            t.byteswap()
            v.byteswap()
        return t.tobytes(), v.tobytes()

    @classmethod
    def from_bytes(cls, maxlen: int, typecode: str, times: bytes, values: bytes) -> Series[V]:
        """The series :meth:`to_bytes` wrote (the newest ``maxlen`` points). Raises
        ValueError when the columns do not hold whole, equally many, finite points."""
        t, v = array("d"), array(typecode)
        t.frombytes(times)
        v.frombytes(values)  # ValueError unless a whole number of items
        if sys.byteorder != "little":
            t.byteswap()
            v.byteswap()
        if len(t) != len(v):
            raise ValueError("columns of different lengths")
        if not all(math.isfinite(x) for x in t) or (
            typecode == "d" and not all(math.isfinite(x) or math.isnan(x) for x in v)
        ):
            raise ValueError("a time that is not finite")
        out: Series[V] = cls(maxlen, typecode)
        out._t, out._v = t[-maxlen:], v[-maxlen:]  # type: ignore[assignment]
        return out


class Triples(Sequence[tuple[float, int, float]]):
    """The newest ``maxlen`` (time, step, value) triples, oldest first, in three flat
    arrays: the ETA band's record of forecasts (estimate.Forecast). As a deque of tuples,
    its 256 forecasts cost ~30 KiB a run (60 MB at 2,000 runs); as arrays, 6 KiB."""

    __slots__ = ("_s", "_t", "_v", "maxlen")

    def __init__(self, maxlen: int, items: Iterable[tuple[float, int, float]] = ()) -> None:
        self.maxlen = maxlen
        self._t = array("d")
        self._s = array("q")
        self._v = array("d")
        for item in items:
            self.append(item)

    def append(self, item: tuple[float, int, float]) -> None:
        """Add the newest triple; the oldest goes once there are ``maxlen``. A step the
        column cannot hold raises and adds nothing."""
        t, step, value = item
        self._s.append(step)
        self._t.append(t)
        self._v.append(value)
        if len(self._t) > self.maxlen:
            del self._t[0]
            del self._s[0]
            del self._v[0]

    def clear(self) -> None:
        """Forget every triple."""
        del self._t[:]
        del self._s[:]
        del self._v[:]

    def __len__(self) -> int:
        return len(self._t)

    def __iter__(self) -> Iterator[tuple[float, int, float]]:
        return zip(self._t, self._s, self._v, strict=True)

    @overload
    def __getitem__(self, index: int) -> tuple[float, int, float]: ...

    @overload
    def __getitem__(self, index: slice) -> list[tuple[float, int, float]]: ...

    def __getitem__(
        self, index: int | slice
    ) -> tuple[float, int, float] | list[tuple[float, int, float]]:
        if isinstance(index, slice):
            return list(zip(self._t[index], self._s[index], self._v[index], strict=True))
        return self._t[index], self._s[index], self._v[index]

    def to_bytes(self) -> tuple[bytes, bytes, bytes]:
        """The three columns as little-endian bytes (the state file's form)."""
        cols = (array("d", self._t), array("q", self._s), array("d", self._v))
        if sys.byteorder != "little":
            for col in cols:
                col.byteswap()
        return cols[0].tobytes(), cols[1].tobytes(), cols[2].tobytes()

    @classmethod
    def from_bytes(cls, maxlen: int, times: bytes, steps: bytes, values: bytes) -> Triples:
        """The triples :meth:`to_bytes` wrote (the newest ``maxlen``). Raises ValueError
        unless the columns hold whole, equally many items."""
        t, s, v = array("d"), array("q"), array("d")
        t.frombytes(times)  # ValueError unless a whole number of items
        s.frombytes(steps)
        v.frombytes(values)
        if sys.byteorder != "little":
            t.byteswap()
            s.byteswap()
            v.byteswap()
        if not len(t) == len(s) == len(v):
            raise ValueError("columns of different lengths")
        out = cls(maxlen)
        out._t, out._s, out._v = t[-maxlen:], s[-maxlen:], v[-maxlen:]
        return out
