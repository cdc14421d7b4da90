"""A bounded series of (time, value) points, stored in two flat arrays.

Why not a list or deque of tuples: a run keeps up to 512 rate samples, 256 pace points and
120 loss points, and as tuples those cost ~95 KB a run (98 MiB for 1,000 long runs, more
than the DaemonSet's whole memory limit at a few thousand). Two ``array`` columns hold the
same points in 16 bytes each; tuples are made only while something iterates.
"""

from __future__ import annotations

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
        """Add the newest point; the oldest goes once there are ``maxlen``."""
        self._t.append(t)
        self._v.append(v)
        if len(self._t) > self.maxlen:
            del self._t[0]
            del self._v[0]

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

    def columns(self) -> tuple[list[float], list[V]]:
        """Times and values as two lists (the state file stores them so)."""
        return self._t.tolist(), self._v.tolist()
